# SPDX-License-Identifier: BSD-2-Clause
"""A call-heavy Python loop for `make bench` (bench/run.py drives it).

usage: py_bench.py hot|cold|hot_obj CALLS [--line-profiler]
Prints "ready <pid>", waits for a line on stdin, calls hot() or cold()
CALLS times from a Python loop and prints "ns_per_call <ns>" (loop and call
included). The bench configures py:py_bench::hot, so `hot` measures a
probed call and `cold` an unconfigured Python call paying only the filter.
hot_obj(o, n) takes an object whose attribute `n` the values bench reads
(count tokens ... arg:o.n against arg:n).
--line-profiler: profile hot and cold in process with line_profiler, the
in-process tool inference engineers compare against.
Runs on CPython 3.8 to 3.13.
"""
import os
import sys
import time


def hot(x):
    return x + 1


def cold(x):
    return x + 2


class Req:
    def __init__(self, n):
        self.n = n
        self.prompt = None


def hot_obj(o, n):
    return o.n + n


def loop(fn, n):
    for i in range(n):
        fn(i)


def main():
    which, n = sys.argv[1], int(sys.argv[2])
    fn = hot if which == "hot" else cold
    run = loop
    if which == "hot_obj":
        req = Req(7)

        def fn(i):
            return hot_obj(req, i)
    if "--line-profiler" in sys.argv:
        import line_profiler

        lp = line_profiler.LineProfiler()
        fn = lp(fn)
        run = loop
    print("ready %d" % os.getpid(), flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter_ns()
    run(fn, n)
    t1 = time.perf_counter_ns()
    print("ns_per_call %.1f" % ((t1 - t0) / n), flush=True)


if __name__ == "__main__":
    main()
