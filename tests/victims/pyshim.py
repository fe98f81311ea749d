# SPDX-License-Identifier: BSD-2-Clause
"""The real CUPTI shim in a process without a GPU (tests/integration/test_gpu.py).

No CUDA driver calls InitializeInjection here, so this calls it as the
driver would; the shim creates its segment and stays dormant. When
proftrace attaches, the shim's CUPTI calls fail (no driver): it must
record the failure for proftrace to report, and the process must run on.

usage: pyshim.py LIBPROFTRACE_CUPTI [--steps N] [--truth FILE]; prints
"ready PID", waits for a line on stdin.
"""
import argparse
import ctypes
import json
import os
import sys
import time


def step():
    time.sleep(0.005)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shim")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--truth")
    a = ap.parse_args()
    rc = ctypes.CDLL(a.shim).InitializeInjection()
    print("ready %d" % os.getpid(), flush=True)
    sys.stdin.readline()
    for _ in range(a.steps):
        step()
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump({"steps": a.steps, "init": rc}, f)


if __name__ == "__main__":
    main()
