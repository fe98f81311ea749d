# SPDX-License-Identifier: BSD-2-Clause
"""Twin engines for the corrected times (tests/integration/test_overhead.py):
pytwin_engine.py loaded twice, as modules twin_named and twin_plain (each
from a copy of the source in a folder of its own, removed once imported),
their steps alternating. The targets file names twin_named's functions only, so
twin_plain's own clocks are the truth for twin_named's corrected times,
taken at the same moments: no unattached run to compare with, no speed
change of the machine between the two.

Runs unchanged on CPython 3.8 to 3.14, standard library only.

Protocol: print "ready <pid>"; at a line on stdin run --steps steps of
each twin, alternating; write --truth FILE; print "done"; exit.

Truth JSON: {"python", "pid", "steps", "twins": {"twin_named"|"twin_plain":
{function: {"calls", "inside": {"total_ns", "p50_ns", "min_ns"},
"around": {...}}}}}, per function of pytwin_engine.FUNCTIONS:
  inside  from the function's first statement to its last clock read
  around  at the call site, just before and after the call expression
          (step: around each call from the loop here)
The time from entry to return of a call lies between the two.
"""
import argparse
import importlib
import json
import os
import sys
import tempfile


def load(name, src, folder):
    """src as module name, from a file of its own (name.py in folder): a
    py: probe names a module, and proftrace finds its code objects by the
    module's file, so the two copies need two files."""
    path = os.path.join(folder, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    mod = importlib.import_module(name)
    mod.REC = {f: ([], []) for f in mod.FUNCTIONS}
    return mod


def stats(v):
    v = sorted(v)
    if not v:
        return {"total_ns": 0, "p50_ns": 0, "min_ns": 0}
    return {"total_ns": sum(v), "p50_ns": v[len(v) // 2], "min_ns": v[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytwin_engine.py")
    with open(path) as f:
        src = f.read()
    sys.dont_write_bytecode = True
    folder = tempfile.mkdtemp(prefix="pytwin-")
    sys.path.insert(0, folder)
    try:
        twins = [load("twin_named", src, folder), load("twin_plain", src, folder)]
    finally:
        for name in ("twin_named", "twin_plain"):
            try:
                os.unlink(os.path.join(folder, name + ".py"))
            except OSError:
                pass
        os.rmdir(folder)
    queues = []
    for m in twins:
        m.SCALE = a.scale
        queues.append([m.Request(k) for k in range(64)])
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        return 3
    now = twins[0].now
    for i in range(a.steps):
        # which goes first alternates too: neither always follows the other
        order = (0, 1) if i % 2 else (1, 0)
        for k in order:
            m = twins[k]
            t = now()
            m.step(queues[k], i)
            m.REC["step"][1].append(now() - t)
    out = {}
    for m in twins:
        out[m.__name__] = {f: {"calls": len(m.REC[f][0]), "inside": stats(m.REC[f][0]),
                               "around": stats(m.REC[f][1])} for f in m.FUNCTIONS}
    with open(a.truth, "w") as f:
        json.dump({"python": sys.version.split()[0], "pid": os.getpid(), "steps": a.steps,
                   "twins": out}, f, indent=1)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
