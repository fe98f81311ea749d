#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Is a `make demo` report what the README promises? Steps counted, at
least three buckets of targets/demo.conf with calls, and Python timed
exactly (by the agent, not from samples). One line either way; exit 1
with what is missing and the usual reason. Used by scripts/demo.sh (so
`make demo` fails when the demo shows nothing) and by CI on a clean clone.

usage: check-demo.py SUMMARY.JSON
"""
import json
import sys


def problems(s):
    """What the demo's summary lacks (empty: nothing)."""
    out = []
    steps = (s.get("stats") or {}).get("steps") or 0
    if steps <= 0:
        out.append("no step was counted")
    buckets = [b for b in s.get("buckets") or []
               if b.get("name") != "step.other" and (b.get("calls") or 0) > 0]
    if len(buckets) < 3:
        out.append("%d bucket%s with calls (want at least 3)" %
                   (len(buckets), "" if len(buckets) == 1 else "s"))
    py = (s.get("meta") or {}).get("python") or {}
    if py.get("timing") != "exact":
        why = py.get("why") or py.get("advice") or "no Python agent in the engine"
        out.append("Python timing is %r, not exact (%s)" % (py.get("timing"), why))
    return out


def main(argv):
    if len(argv) != 2:
        print("usage: check-demo.py SUMMARY.JSON", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        print("demo: check: cannot read %s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    bad = problems(s)
    if bad:
        print("demo: check FAILED: %s; `make` builds libproftrace_agent.so beside proftrace, "
              "which `proftrace env` gives the engine" % "; ".join(bad), file=sys.stderr)
        return 1
    steps = s["stats"]["steps"]
    nb = sum(1 for b in s["buckets"] if b.get("name") != "step.other" and b.get("calls"))
    print("demo: check: %d steps, %d buckets with calls, Python timing exact" % (steps, nb))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
