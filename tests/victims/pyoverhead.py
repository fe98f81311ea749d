# SPDX-License-Identifier: BSD-2-Clause
"""The probes' own cost on py: functions, seen from inside (the Python
counterpart of victim_overhead.c): steps of one longer phase and many
short named calls, run twice by the same process, first with nothing
attached, then attached; every step measures itself on the monotonic
clock.

Protocol: print "ready <pid>"; at a line on stdin run --steps steps
unattached and print "unattached done"; at the next line run them again
and write --truth FILE, then exit.
"""
import json
import os
import sys
import time

now = time.perf_counter_ns


def spin(ns):
    end = now() + ns
    while now() < end:
        pass


def tiny():
    spin(5000)


def phase():
    spin(300000)


def step(ntiny):
    for _ in range(ntiny):
        tiny()
    phase()


def run(n, ntiny):
    out = []
    for _ in range(n):
        t0 = now()
        step(ntiny)
        out.append(now() - t0)
    return out


def main():
    args = sys.argv[1:]
    truth, steps, ntiny = None, 200, 40
    while args:
        k = args.pop(0)
        if k == "--truth":
            truth = args.pop(0)
        elif k == "--steps":
            steps = int(args.pop(0))
        elif k == "--tiny":
            ntiny = int(args.pop(0))
        else:
            return 2
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        return 3
    un = run(steps, ntiny)
    print("unattached done", flush=True)
    if not sys.stdin.readline():
        return 3
    at = run(steps, ntiny)
    if truth:
        with open(truth, "w") as f:
            json.dump({"steps": steps, "tiny_per_step": ntiny, "unattached_step_ns": un,
                       "attached_step_ns_each": at}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
