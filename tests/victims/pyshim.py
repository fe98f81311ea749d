# SPDX-License-Identifier: BSD-2-Clause
"""The real CUPTI shim in a process without a GPU (tests/integration/test_gpu.py).

No CUDA driver calls InitializeInjection here, so this calls it as the
driver would; the shim creates its segment and stays dormant. When
proftrace attaches, the shim's CUPTI calls fail (no driver): it must
record the failure for proftrace to report, and the process must run on.

usage: pyshim.py LIBPROFTRACE_CUPTI [--steps N] [--truth FILE] [--late LIBCUDART]
[--no-cuda]; prints "ready PID", waits for a line on stdin.

--late: as proftrace --inject loads it into a running server: libcudart is
loaded first, then the shim is only dlopen'ed (nobody calls
InitializeInjection); its constructor must start it. --no-cuda: the same
without libcudart (the constructor must not start it).
"""
import argparse
import ctypes
import json
import os
import sys
import time


def step():
    time.sleep(0.005)


def has_segment():
    """The shim's segment is a memfd it keeps open (shim/memseg.h), not a
    name in the file system: look where proftrace looks, our open files."""
    want = "/memfd:proftrace-gpu (deleted)"
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) == want:
                return True
        except OSError:
            pass  # the listing's own fd, closed by now
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shim")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--truth")
    ap.add_argument("--late", help="libcudart to load before the shim")
    ap.add_argument("--no-cuda", action="store_true")
    ap.add_argument("--cuda-only", help="load this libcudart and not the shim: "
                    "proftrace --inject loads it")
    ap.add_argument("--expect-no-start", action="store_true",
                    help="with --late: exit non-zero if the shim started")
    a = ap.parse_args()
    if a.cuda_only:
        ctypes.CDLL(a.cuda_only, mode=ctypes.RTLD_GLOBAL)
        rc = 0
    elif a.late or a.no_cuda:
        if a.late:
            ctypes.CDLL(a.late, mode=ctypes.RTLD_GLOBAL)
        ctypes.CDLL(a.shim)
        rc = 0
        # the constructor starts it on a thread of its own
        deadline = time.monotonic() + 5
        while a.late and not a.expect_no_start and not has_segment() and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        if a.expect_no_start:
            time.sleep(0.3)
    else:
        rc = ctypes.CDLL(a.shim).InitializeInjection()
    print("ready %d" % os.getpid(), flush=True)
    sys.stdin.readline()
    for _ in range(a.steps):
        step()
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump({"steps": a.steps, "init": rc}, f)
    if (a.no_cuda or a.expect_no_start) and has_segment():
        sys.exit("the shim's constructor started it")


if __name__ == "__main__":
    main()
