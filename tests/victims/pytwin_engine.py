# SPDX-License-Identifier: BSD-2-Clause
"""The engine of tests/victims/pytwin.py, loaded twice under two module
names (twin_named, twin_plain): one copy is named in the targets file, the
other is not, and steps of the two alternate, so the plain copy's own
clocks say what the named one takes without proftrace, at the same moment
(this VM's vCPUs change speed every few tens of ms; both copies see the
same speeds).

A decode step as an inference server runs it: a pure-Python scheduler,
a model forward (four layers, each a named call of its own), a sampler
and a detokenizer; about 1 ms a step at scale 1.

Every measured function reads the clock as its first statement and books
the interval with rec_in() as its last; each call site reads it just
before and after the call (rec_out()). Booking is an append to a list:
what falls between the function's last clock read and its return is
small and the same in both copies.
"""
import time

now = time.perf_counter_ns
# name -> ([inside ns], [around ns]); set by the loader per copy
REC = {}
SCALE = 1.0


def rec_in(name, t0):
    REC[name][0].append(now() - t0)


def rec_out(name, t0):
    REC[name][1].append(now() - t0)


def spin(us):
    end = now() + int(us * 1000 * SCALE)
    while now() < end:
        pass


class Request:
    __slots__ = ("rid", "prompt", "done", "prio")

    def __init__(self, rid):
        self.rid = rid
        self.prompt = 16 + rid % 48
        self.done = rid % 7
        self.prio = 0


def _priority(r, step):
    return (r.prompt - r.done) * 3 + (step - r.rid) % 11


def schedule(queue, step):
    """Pure Python: a priority per request (a small call each), sorted,
    the batch taken."""
    t0 = now()
    for _ in range(int(3 * SCALE) or 1):
        for r in queue:
            r.prio = _priority(r, step)
        batch = sorted(queue, key=lambda r: r.prio)[:32]
    rec_in("schedule", t0)
    return batch


def layer(x):
    t0 = now()
    spin(80)
    rec_in("layer", t0)
    return x + 1


def forward(batch):
    t0 = now()
    x = len(batch)
    for _ in range(4):
        t = now()
        x = layer(x)
        rec_out("layer", t)
    spin(100)
    rec_in("forward", t0)
    return x


def sample(x):
    t0 = now()
    spin(60)
    tokens = [(x * 31 + k) % 50000 for k in range(32)]
    rec_in("sample", t0)
    return tokens


def detok(tokens):
    t0 = now()
    spin(40)
    text = " ".join("t%d" % t for t in tokens)
    rec_in("detok", t0)
    return text


def step(queue, i):
    t0 = now()
    t = now()
    batch = schedule(queue, i)
    rec_out("schedule", t)
    t = now()
    x = forward(batch)
    rec_out("forward", t)
    t = now()
    tokens = sample(x)
    rec_out("sample", t)
    t = now()
    detok(tokens)
    rec_out("detok", t)
    rec_in("step", t0)


FUNCTIONS = ("step", "schedule", "forward", "layer", "sample", "detok")
