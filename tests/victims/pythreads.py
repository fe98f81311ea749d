# SPDX-License-Identifier: BSD-2-Clause
"""Thread churn in Python (bench/memory.py): RATE short threads a second,
each running a little Python, for SECONDS; the main thread's step() makes
them, ten at a time. proftrace samples every one of them.

Protocol: print "ready <pid>"; at a line on stdin run, then exit.
Usage: pythreads.py RATE SECONDS
"""
import os
import sys
import threading
import time


def work():
    s = 0
    for i in range(2000):
        s += i
    return s


def step():
    ts = [threading.Thread(target=work) for _ in range(10)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def main():
    rate, seconds = float(sys.argv[1]), float(sys.argv[2])
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        return 3
    t0 = time.monotonic()
    made = 0
    while time.monotonic() - t0 < seconds:
        step()
        made += 10
        # keep to the rate: sleep while ahead of it
        ahead = made / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    return 0


if __name__ == "__main__":
    sys.exit(main())
