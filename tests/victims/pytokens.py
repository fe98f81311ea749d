# SPDX-License-Identifier: BSD-2-Clause
"""A Python decode loop that passes known token counts, KV lengths and
batch sizes to its step (tests/integration/test_tokens.py):

    step py:pytokens.Engine.step tokens=arg:num_tokens kv_len=arg:kv_lens batch=len(arg:reqs)
    count tokens py:pytokens.Sampler.sample len(ret)

It records the truth itself and writes it as JSON at exit: per step the
values, the step's own duration, and the per-bin populations for the
reductions the tests use.

--objects: the same numbers travel as attributes of objects, as vLLM's
SchedulerOutput carries them: Engine.step_obj(out, step) with `out` an
instance dict (SchedulerOutput, and on odd steps its subclass
ChunkedOutput: two types), and Sampler.sample_obj returning a __slots__
object (SamplerOutput.accepted):

    step py:pytokens.Engine.step_obj tokens=arg:out.num_scheduled_tokens \
         kv_len=arg:out.kv_lens batch=len(arg:out.reqs)
    count tokens py:pytokens.Sampler.sample_obj len(ret.accepted)

--via-c calls the step through map(), from C: Python 3.11 runs
Python-to-Python calls inside the caller's frame evaluator, so only calls
from C are seen there.

usage: pytokens.py [--steps N] [--truth FILE]; prints "ready PID", waits
for a line on stdin.
"""
import argparse
import json
import os
import sys
import time

BINS = [0, 512, 1024, 2048, 4096, 8192, 16384]


class SchedulerOutput:
    def __init__(self, reqs, num_tokens, kv_lens):
        self.reqs = reqs
        self.num_scheduled_tokens = num_tokens
        self.kv_lens = kv_lens

    @property
    def total(self):  # computed: proftrace cannot read it, and says so
        return self.num_scheduled_tokens


class ChunkedOutput(SchedulerOutput):
    def __init__(self, reqs, num_tokens, kv_lens):
        super().__init__(reqs, num_tokens, kv_lens)
        self.chunked = True


class SamplerOutput:
    __slots__ = ("accepted", "logprobs")

    def __init__(self, accepted):
        self.accepted = accepted


class Sampler:
    def sample(self, reqs, step):
        # accepted tokens: one per request, a draft token for some
        return [r for r in reqs] + [0] * (step % 3)

    def sample_obj(self, out, step):
        return SamplerOutput(self.sample(out.reqs, step))


class Engine:
    def __init__(self):
        self.sampler = Sampler()

    def step(self, num_tokens, kv_lens, reqs, step):
        end = time.perf_counter() + 0.0002 + sum(kv_lens) * 2e-9
        while time.perf_counter() < end:
            pass
        return self.sampler.sample(reqs, step)

    def step_obj(self, out, step):
        end = time.perf_counter() + 0.0002 + sum(out.kv_lens) * 2e-9
        while time.perf_counter() < end:
            pass
        return self.sampler.sample_obj(out, step)


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
    ap.add_argument("--objects", action="store_true")
    # call the step from C (map): 3.11 sees only such calls of a function
    ap.add_argument("--via-c", action="store_true")
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
        if a.objects:
            out = (ChunkedOutput if i % 2 else SchedulerOutput)(reqs, tokens, kv_lens)
            if a.via_c:
                accepted = next(map(eng.step_obj, (out,), (i,))).accepted
            else:
                accepted = eng.step_obj(out, i).accepted
        else:
            accepted = eng.step(tokens, kv_lens, reqs, i)
        dt = time.perf_counter() - t0
        if i < a.warmup:
            # the first calls of a code object or of an object's type
            # miss their values until proftrace answers BPF (a round trip
            # through its loop): the warmup steps, which the config does
            # not count, give it the time, the last one more for a
            # machine whose other jobs keep proftrace waiting for a CPU
            # (two CI runs at once: 4 of 140 steps missed their values)
            time.sleep(0.3 if i == a.warmup - 1 else 0.005)
        steps.append({"tokens": tokens, "accepted": len(accepted), "batch": batch, "s": dt,
                      "kv_mean": sum(kv_lens) / len(kv_lens), "kv_max": max(kv_lens),
                      "kv_p90": pct(kv_lens, 0.9)})
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump({"steps": steps, "bins": BINS}, f)


if __name__ == "__main__":
    main()
