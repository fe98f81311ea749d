# SPDX-License-Identifier: BSD-2-Clause
"""A pure-Python CPU-bound workload for the sampling tables of `make bench`
(bench/run.py drives it).

usage: py_sample_bench.py ITERATIONS [--depth D] [--hold]
Prints "ready <pid>", waits for a line on stdin (a sampler takes about a
second to load: the timed work starts only once it is attached), runs a
fixed amount of work (ITERATIONS calls of step(), each making 9 more small
calls: 3 x mid(), 6 x leaf()), then prints one line "elapsed_ns <ns> cpu_ns <ns> frames <n>": its
perf_counter time, its process CPU time (time spent in a sampler's
interrupt while this process runs counts, other processes' load does not)
and the Python stack depth at leaf() (the frames a sample of this workload
walks). --depth D
runs the work D recursive calls deeper (a deeper stack, same work).
--hold: wait for a second line on stdin before exiting, so that a tool
attached to this process stays attached while the bench reads its state.
Standard library only; runs on CPython 3.8 to 3.13.
"""
import os
import sys
import time

FRAMES = [0]


def leaf(x):
    return (x * 3 + 1) & 0xFFFF


def mid(x):
    return leaf(x) ^ leaf(x + 1)


def step(i):
    return mid(i) + mid(i >> 1) + mid(i >> 2)


def work(n):
    acc = 0
    for i in range(n):
        acc += step(i)
    return acc


def depth_here():
    """Frames on the stack of leaf() called from work(): this frame counts
    as leaf's."""
    f, n = sys._getframe(), 0
    while f:
        n += 1
        f = f.f_back
    return n + 2  # step and mid between work and leaf


def descend(d, n):
    if d > 0:
        return descend(d - 1, n)
    FRAMES[0] = depth_here() + 1  # + work
    return work(n)


def main():
    n = int(sys.argv[1])
    depth = int(sys.argv[sys.argv.index("--depth") + 1]) if "--depth" in sys.argv else 0
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        sys.exit(3)
    c0, t0 = time.process_time_ns(), time.perf_counter_ns()
    descend(depth, n)
    t1, c1 = time.perf_counter_ns(), time.process_time_ns()
    print("elapsed_ns %d cpu_ns %d frames %d" % (t1 - t0, c1 - c0, FRAMES[0]), flush=True)
    if "--hold" in sys.argv:
        sys.stdin.readline()


if __name__ == "__main__":
    main()
