# SPDX-License-Identifier: BSD-2-Clause
"""`proftrace diff A B` on two real runs whose difference is known: the
overhead victim with 2 and then 20 short calls (20 us each) per step, so
steps and the ovh.tiny bucket grow by 18 x 20 us and nothing else does."""
import json
import os
import subprocess

from harness import PROFTRACE, eq
import test_overhead as ovh


def summaries():
    old = ovh.TINY
    try:
        ovh.TINY = 2
        a, _ = ovh.run_twice(ovh.CONF)
        ovh.TINY = 20
        b, _ = ovh.run_twice(ovh.CONF)
    finally:
        ovh.TINY = old
    return a["_out"], b["_out"]


def diff(*args):
    p = subprocess.run([PROFTRACE, "diff"] + list(args), capture_output=True, text=True,
                       timeout=30)
    return p.returncode, p.stdout, p.stderr


def test_diff_two_runs():
    a, b = summaries()
    rc, out, err = diff(a, os.path.join(b, "summary.json"), "--json")
    eq(rc, 0, "exit code: " + err)
    d = json.loads(out)
    rows = {r["id"]: r for r in d["rows"]}
    # 18 more calls of 20 us per step; the raw times also carry their
    # probes' cost, the corrected ones not
    want = 18 * 0.020  # ms per step
    # (the fastest step: what a shared machine's load leaves alone; the
    # correction is an estimate, the raw change is ~35% above)
    fast = rows["step.corrected_min"]
    assert abs(fast["change"] - want) < 0.15 * want, fast
    assert rows["step.p50"]["change"] > 0.9 * want, rows["step.p50"]
    # one run a side: the threshold comes from the step distribution
    eq(rows["step.p50"]["noise_from"], "steps", "noise of step.p50")
    eq(d["noise"], "steps", "noise")
    tiny = rows["bucket.ovh.tiny"]
    # (a mean: a busy machine only adds to it)
    assert tiny["change"] > 0.9 * want, tiny
    eq(tiny["beyond_noise"], True, "bucket.ovh.tiny beyond noise")
    eq(rows["function.ovh_tiny.calls"]["a"], 2 * 200, "calls in A")
    eq(rows["function.ovh_tiny.calls"]["b"], 20 * 200, "calls in B")
    # every bucket and function of either side has a row
    for name in ("bucket.ovh.phase", "bucket.step.other", "function.ovh_step",
                 "function.ovh_phase", "step.mean", "step.p99", "step.steps_per_s"):
        assert name in rows, name
    # Markdown: the same figures, tables per section
    rc, md, _ = diff(a, b)
    eq(rc, 0, "markdown exit code")
    assert "## Steps" in md and "## Buckets" in md and "## Functions" in md, md
    assert "| `step.p50` | ms |" in md and "**yes**" in md, md
    # CI gates: exit 1 when a condition holds, 0 when none does
    rc, _, err = diff(a, b, "--fail-if", "step.p50 > +20%")
    eq(rc, 1, "step.p50 grew by more than 20%")
    assert "--fail-if 'step.p50 > +20%' holds" in err, err
    rc, _, _ = diff(a, b, "--fail-if", "step.p50 < -5%", "--fail-if", "step.steps > +1%")
    eq(rc, 0, "neither condition holds")
    rc, _, _ = diff(a, b, "--fail-if", "bucket.ovh.tiny > 0.2 significant")
    eq(rc, 1, "absolute change beyond noise")
    # the same run against itself: no change, nothing beyond noise
    rc, out, _ = diff(a, a, "--json")
    for r in json.loads(out)["rows"]:
        assert r["change"] in (0, None) and r["beyond_noise"] in (False, None), r
    # bad input: exit 2 and what to do
    rc, _, err = diff(a, b, "--fail-if", "step.p50 >> 5")
    eq(rc, 2, "unreadable condition")
    rc, _, err = diff(a, b, "--fail-if", "step.nope > 5%")
    eq(rc, 2, "unknown figure")
    assert "no figure 'step.nope'" in err, err
    rc, _, err = diff(a, "/nonexistent")
    eq(rc, 2, "missing file")
    assert "cannot read" in err, err
