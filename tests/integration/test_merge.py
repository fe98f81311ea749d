# SPDX-License-Identifier: BSD-2-Clause
"""proftrace merge: two runs standing for two hosts of one job (RANK 0 and
1 in their environments) merged into one document: processes by rank,
pooled steps and buckets against the victims' own truth, skew across hosts."""
import json
import os
import socket
import subprocess
import tempfile

from harness import PROFTRACE, bracket, eq, profile

CONF = """\
step   native:exe:engine_step
bucket engine.forward native:exe:engine_forward
bucket engine.sample  native:exe:engine_sample
"""


def run(rank, steps):
    env = dict(os.environ, RANK=str(rank), LOCAL_RANK="0")
    return profile(CONF, ("--steps", steps), victim_env=env)


def test_merge_two_hosts():
    a, ta, _ = run(1, 120)
    b, tb, _ = run(0, 80)
    for s in (a, b):
        eq(s["meta"]["host"], socket.gethostname(), "meta.host")
    eq(a["meta"]["rank"], 1, "meta.rank of a single process run")
    out = os.path.join(tempfile.mkdtemp(prefix="pt-it-"), "merged.json")
    p = subprocess.run([PROFTRACE, "merge", "node-a=" + a["_out"],
                        "node-b=" + os.path.join(b["_out"], "summary.json"), "-o", out],
                       capture_output=True, text=True, timeout=30)
    eq(p.returncode, 0, "merge: " + p.stderr)
    with open(out) as f:
        m = json.load(f)
    eq(m["merged"]["hosts"], 2, "hosts")
    eq(m["merged"]["processes"], 2, "processes")
    # ranks across hosts, in rank order
    eq([(x["rank"], x["host"]) for x in m["processes"]], [(0, "node-b"), (1, "node-a")], "ranks")
    eq(m["processes"][1]["pid"], a["meta"]["pid"], "pid")
    # pooled: every step of both, bucket time of both, against the victims
    eq(m["stats"]["steps"], ta["steps"] + tb["steps"], "steps")
    n = ta["steps"] + tb["steps"]
    bracket(m["stats"]["time_ms"],
            ta["functions"]["engine_step"]["total_ns"] + tb["functions"]["engine_step"]["total_ns"],
            ta["functions"]["engine_step"]["outer_ns"] + tb["functions"]["engine_step"]["outer_ns"],
            n, "pooled step time")
    want_mean = (a["stats"]["mean_ms"] * a["stats"]["steps"] +
                 b["stats"]["mean_ms"] * b["stats"]["steps"]) / n
    assert abs(m["stats"]["mean_ms"] - want_mean) < 1e-5, (m["stats"], want_mean)
    fwd = [x for x in m["buckets"] if x["name"] == "engine.forward"][0]
    bracket(fwd["total_ms"],
            ta["functions"]["engine_forward"]["total_ns"] + tb["functions"]["engine_forward"]["total_ns"],
            ta["functions"]["engine_forward"]["outer_ns"] + tb["functions"]["engine_forward"]["outer_ns"],
            n, "pooled engine.forward")
    assert abs(fwd["avg_ms_per_step"] - fwd["total_ms"] / n) < 1e-5, fwd
    # skew across hosts: by each process's median, no time alignment
    sk = m["skew"]
    p50 = {x["host"]: x["p50_ms"] for x in m["processes"]}
    slow = max(p50, key=p50.get)
    eq(sk["slowest"]["host"], slow, "slowest host")
    assert abs(sk["spread_ms"] - (max(p50.values()) - min(p50.values()))) < 1e-5, sk
    assert "none by time" in sk["alignment"]
    eq(sorted(h["host"] for h in sk["per_host"]), ["node-a", "node-b"], "per host")
    # stdout, default host names, and a bad input
    p = subprocess.run([PROFTRACE, "merge", a["_out"], b["_out"]], capture_output=True, text=True,
                       timeout=30)
    eq(p.returncode, 0, "merge to stdout")
    eq(json.loads(p.stdout)["merged"]["hosts"], 1, "same machine: one host")
    p = subprocess.run([PROFTRACE, "merge", a["_out"], "/nonexistent"], capture_output=True,
                       text=True, timeout=30)
    eq(p.returncode, 2, "missing input")
