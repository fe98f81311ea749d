# SPDX-License-Identifier: BSD-2-Clause
"""A target that forges the Python agent's clock reads
(tests/integration/test_agent.py, docs/summary.md#overhead): besides
calling its named function, it calls the agent's probe sites itself
(pt_agent_enter, pt_agent_exit, through ctypes: they are the preloaded
agent's exported symbols) for that function's code object, with clock
reads that do not lie between the probe hits around them. proftrace must
take none of them (meta.python.agent.clock_rejected counts each) and time
those forged calls by their hits, inside the victim's own bracket.

Forged calls, after the real ones (BPF takes a body's start between the
call's enter hit and the thread's next hit, an end between the last hit
inside the call and its exit hit):
  1. the start far in the future, the end at 1 ns: both rejected
  2. a call with a nested one: the outer's start read right after its
     enter returned (taken, handed over by the nested enter), the nested
     call's end one ns before its own start (rejected), the outer's end
     read before the nested call began (rejected)
  3. the start 0 (rejected), the end read right before the exit (taken)
So 4 forged calls, 5 reads rejected.

Runs unchanged on CPython 3.8 to 3.14, standard library only.

Protocol: print "ready <pid>", wait for a line, run, write --truth FILE
({"python", "calls", "real": {"calls", "inside_max_ns", "around_max_ns"}, "forged":
{"calls", "around_max_ns"}, "rejected"}), exit 0.
"""
import argparse
import ctypes
import json
import os
import sys
import time

now = time.perf_counter_ns
mono = time.monotonic_ns  # CLOCK_MONOTONIC, the clock BPF and the agent read


def named():
    t0 = now()
    end = t0 + 200000
    while now() < end:
        pass
    return now() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--calls", type=int, default=50)
    a = ap.parse_args()
    lib = ctypes.CDLL(None)
    enter, leave = lib.pt_agent_enter, lib.pt_agent_exit
    u64 = ctypes.c_uint64
    enter.argtypes = [u64, u64, u64]
    leave.argtypes = [u64, u64, u64, u64, u64]
    enter.restype = leave.restype = None
    code = id(named.__code__)
    key = object()  # a frame identity no real activation has
    frame = id(key)
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        return 3
    inside, around = [], []
    for _ in range(a.calls):
        t0 = now()
        inside.append(named())
        around.append(now() - t0)
    forged = []
    for k in range(3):
        t0 = now()
        enter(code, frame, 0)
        body = mono()
        end = mono()
        if k == 0:
            leave(code, frame, 0, 1, 1 << 62)
        elif k == 1:
            enter(code, frame + 8, body)
            leave(code, frame + 8, 0, body - 1, mono())
            leave(code, frame, 0, end, 0)
        else:
            leave(code, frame, 0, end, 0)
        forged.append(now() - t0)
    with open(a.truth, "w") as f:
        json.dump({"python": sys.version.split()[0], "calls": a.calls + 4,
                   "real": {"calls": a.calls, "inside_max_ns": max(inside),
                            "around_max_ns": max(around)},
                   "forged": {"calls": 4, "around_max_ns": max(forged)},
                   "rejected": 5}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
