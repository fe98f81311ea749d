# SPDX-License-Identifier: BSD-2-Clause
"""A Python victim for the injector: GIL hand-offs on every thread while
it is injected into again and again (tests/integration/test_inject.py).

3 threads pass a token round a ring (a Condition each: GIL and lock
hand-offs at every step) and check it went up by exactly one; a 4th
computes without sleeping (the GIL is taken from it by the switch
interval). The main thread sleeps 1 ms at a time (a libc wait: where the
injector finds its safe point) and checks its own state across it.
SIGUSR1: prints "counts MAIN T0 T1 T2 T3"; SIGTERM: prints them and
exits 0 (1 when an invariant broke). Prints "ready PID" first.
"""
import os
import signal
import sys
import threading
import time

N = 3
counts = [0] * (N + 2)
token = [0]
turn = [0]
cond = threading.Condition()
stop = threading.Event()
broken = []
flags = {"counts": False}


def ring(i):
    while not stop.is_set():
        with cond:
            while turn[0] != i and not stop.is_set():
                cond.wait(0.05)
            if stop.is_set():
                break
            before = token[0]
            token[0] += 1
            if token[0] != before + 1:
                broken.append("token")
            turn[0] = (i + 1) % N
            cond.notify_all()
        counts[1 + i] += 1


def compute():
    x = 0
    while not stop.is_set():
        for k in range(1000):
            x = (x * 31 + k) % 1000003
        counts[N + 1] += 1


def on_signal(sig, frame):
    if sig == signal.SIGUSR1:
        flags["counts"] = True
    else:
        stop.set()


def main():
    signal.signal(signal.SIGUSR1, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    ts = [threading.Thread(target=ring, args=(i,)) for i in range(N)]
    ts.append(threading.Thread(target=compute))
    for t in ts:
        t.start()
    print("ready %d" % os.getpid(), flush=True)
    mark = object()
    while not stop.is_set():
        local = (mark, 12345, "state")
        time.sleep(0.001)
        if local != (mark, 12345, "state"):
            broken.append("main")
        counts[0] += 1
        if flags["counts"]:
            flags["counts"] = False
            print("counts " + " ".join(str(c) for c in counts), flush=True)
    for t in ts:
        t.join()
    print("counts " + " ".join(str(c) for c in counts), flush=True)
    if broken:
        print("broken " + " ".join(broken), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
