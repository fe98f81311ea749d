# SPDX-License-Identifier: BSD-2-Clause
"""A Python-heavy engine step for `make bench` (bench/run.py, section "agent").

Like an LLM server's scheduler building a batch: each step walks the
waiting and running requests through small methods and helper functions,
about 30,000 Python calls per step, none of them named by the bench's
targets file except Scheduler.schedule (the step) and, for the named-call
cost, Request.num_new_tokens (NAMED_PER_STEP calls per step).

usage: py_step_bench.py STEPS [ROUNDS]
Prints "ready <pid>", then ROUNDS times (1 by default): waits for a line on
stdin, runs STEPS steps, prints "step_ns <median ns of a step> <fastest>"
(measured by the program around each call); then exits. Rounds let a bench attach
and detach a tool between them in one process. CPython 3.8+.
"""
import os
import sys
import time

REQUESTS = 256
BLOCK = 16
NAMED_PER_STEP = REQUESTS


class Request:
    __slots__ = ("rid", "prompt", "done", "blocks")

    def __init__(self, rid):
        self.rid = rid
        self.prompt = 100 + rid % 37
        self.done = rid % 11
        self.blocks = []

    def num_new_tokens(self):
        return 1 if self.done else self.prompt

    def is_finished(self):
        return self.done > 500


def block_hash(prev, i):
    return (prev * 31 + i) & 0xFFFF


def can_allocate(free, need):
    return free >= need


def blocks_needed(tokens):
    return (tokens + BLOCK - 1) // BLOCK


class Scheduler:
    def __init__(self):
        self.reqs = [Request(i) for i in range(REQUESTS)]
        self.free = 1 << 30

    def admit(self, req):
        need = blocks_needed(req.num_new_tokens())
        if not can_allocate(self.free, need):
            return False
        h = 0
        for i in range(need % 8 + 100):
            h = block_hash(h, i)
        req.blocks.append(h)
        if len(req.blocks) > 4:
            req.blocks.pop(0)
        return True

    def schedule(self):
        batch = 0
        for r in self.reqs:
            if r.is_finished():
                continue
            if self.admit(r):
                batch += 1
                r.done += 1
        return batch


def main():
    steps = int(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    s = Scheduler()
    print("ready %d" % os.getpid(), flush=True)
    for _ in range(rounds):
        if not sys.stdin.readline():
            sys.exit(3)
        times = []
        for _ in range(steps):
            t0 = time.perf_counter_ns()
            s.schedule()
            times.append(time.perf_counter_ns() - t0)
        times.sort()
        print("step_ns %d %d" % (times[len(times) // 2], times[0]), flush=True)


if __name__ == "__main__":
    main()
