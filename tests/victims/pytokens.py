# SPDX-License-Identifier: BSD-2-Clause
"""A Python decode loop that passes known token counts, KV lengths and
batch sizes to its step (tests/integration/test_tokens.py):

    step py:pytokens.Engine.step tokens=arg:num_tokens kv_len=arg:kv_lens batch=len(arg:reqs)
    count tokens py:pytokens.Sampler.sample len(ret)

It records the truth itself and writes it as JSON at exit: per step the
values, the step's own duration, and the per-bin populations for the
reductions the tests use.

usage: pytokens.py [--steps N] [--truth FILE]; prints "ready PID", waits
for a line on stdin.
"""
import argparse
import json
import os
import sys
import time

BINS = [0, 512, 1024, 2048, 4096, 8192, 16384]


class Sampler:
    def sample(self, reqs, step):
        # accepted tokens: one per request, a draft token for some
        return [r for r in reqs] + [0] * (step % 3)


class Engine:
    def __init__(self):
        self.sampler = Sampler()

    def step(self, num_tokens, kv_lens, reqs, step):
        end = time.perf_counter() + 0.0002 + sum(kv_lens) * 2e-9
        while time.perf_counter() < end:
            pass
        return self.sampler.sample(reqs, step)


def pct(xs, q):
    s = sorted(xs)
    k = max(1, -(-int(q * len(s) * 1000000) // 1000000))  # nearest rank
    return s[min(k, len(s)) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--truth")
    # the first steps pause after themselves, so proftrace has resolved
    # the code objects (their first calls' values are missing) before the
    # counted steps start: the config skips them with set warmup_steps
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    eng = Engine()
    print("ready %d" % os.getpid(), flush=True)
    sys.stdin.readline()
    steps = []
    for i in range(a.steps):
        batch = 1 + i % 48
        kv_lens = [(i * 797 + j * 131) % 20000 for j in range(batch)]
        reqs = list(range(batch))
        tokens = batch
        t0 = time.perf_counter()
        accepted = eng.step(tokens, kv_lens, reqs, i)
        dt = time.perf_counter() - t0
        if i < a.warmup:
            time.sleep(0.005)
        steps.append({"tokens": tokens, "accepted": len(accepted), "batch": batch, "s": dt,
                      "kv_mean": sum(kv_lens) / len(kv_lens), "kv_max": max(kv_lens),
                      "kv_p90": pct(kv_lens, 0.9)})
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump({"steps": steps, "bins": BINS}, f)


if __name__ == "__main__":
    main()
