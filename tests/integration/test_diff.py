# SPDX-License-Identifier: BSD-2-Clause
"""`proftrace diff A B` on two real runs whose difference is known: the
overhead victim with 2 and then 20 short calls (20 us each) per step, so
steps and the ovh.tiny bucket grow by 18 x 20 us and nothing else does."""
import json
import os
import subprocess
import tempfile

from harness import PROFTRACE, eq, profile
import test_overhead as ovh


def summaries(truths=None):
    """The output folders of the two runs; truths (a list): the victims'
    own records are appended to it."""
    old = ovh.TINY
    try:
        ovh.TINY = 2
        a, ta = ovh.run_twice(ovh.CONF)
        ovh.TINY = 20
        b, tb = ovh.run_twice(ovh.CONF)
    finally:
        ovh.TINY = old
    if truths is not None:
        truths += [ta, tb]
    return a["_out"], b["_out"]


def self_ns(summary_path):
    """What a call's probes cost inside the call, as the run calibrated it
    (overhead.kinds' self_ns), for the kind of probe its calls hit."""
    with open(summary_path) as f:
        o = json.load(f)["overhead"]
    hit = [k for k, n in o["hits"].items() if n]
    return max(o["kinds"][k]["self_ns"] for k in hit) if hit else 0


def diff(*args):
    p = subprocess.run([PROFTRACE, "diff"] + list(args), capture_output=True, text=True,
                       timeout=30)
    return p.returncode, p.stdout, p.stderr


def test_diff_two_runs():
    truths = []
    a, b = summaries(truths)
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
    # a mean, which a busy machine adds to in either run (seen under a CPU
    # hog: 0.143 ms/step for 2 calls of 20 us): the victims' own clocks,
    # read inside each call, are the truth. proftrace's times hold them and
    # the probes' cost inside each call, which the runs' own calibration
    # measures (overhead.kinds, self_ns: 0.7 us a call on a quiet VM, 1.6
    # on one whose system calls cost 1 us; the change then came out 2.2
    # us a call above the truth's): the change is within 10% of the
    # truth's plus 1.5 times that cost for each of the 18 more calls
    per = [t["attached_tiny_ns"] / t["steps"] / 1e6 for t in truths]
    assert tiny["a"] >= per[0] * 0.999 and tiny["b"] >= per[1] * 0.999, (tiny, per)
    probe_ms = max(self_ns(os.path.join(x, "summary.json")) for x in (a, b)) / 1e6
    want_change = per[1] - per[0]
    assert -0.1 * want_change <= tiny["change"] - want_change <= \
        0.1 * want_change + 18 * 1.5 * probe_ms, (tiny, per, probe_ms)
    # beyond the noise exactly when the change exceeds it (on a quiet
    # machine it does: the noise of 200 steps is a few us)
    eq(tiny["beyond_noise"], abs(tiny["change"]) > tiny["noise"],
       "bucket.ovh.tiny beyond noise (%s)" % tiny)
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


def test_diff_gate_refuses_unfit_runs():
    """A CI gate cannot be passed by a run that counted nothing or lost
    records: the same victim profiled twice, once with a step probe on a
    function it never calls (0 steps, as a broken step probe gives), and
    once as it is with records lost (drops written into its summary):
    --fail-if exits 1 and says why, whatever the conditions say."""
    conf = "step native:exe:engine_step\nbucket engine.forward native:exe:engine_forward\n"
    good, truth, _ = profile(conf, ("--steps", 40))
    eq(good["stats"]["steps"], truth["steps"], "steps of the good run")
    # engine_jump runs only with --longjmp-every: a step probe that never fires
    empty, _, _ = profile(conf.replace("engine_step", "engine_jump"), ("--steps", 40))
    eq(empty["stats"]["steps"], 0, "steps of the run whose step never ran")
    a, b = good["_out"], empty["_out"]
    rc, _, err = diff(a, a, "--fail-if", "step.p50 > +5%")
    eq(rc, 0, "a good run against itself: " + err)
    rc, _, err = diff(a, b, "--fail-if", "step.p50 > +5%")
    eq(rc, 1, "B counted 0 steps")
    assert ("B (%s) cannot be gated on: counted 0 steps though it has a step probe "
            "(native:exe:engine_jump" % b) in err, err
    assert "--fail-if 'step.p50 > +5%' not checked: the figure has no value in B" in err, err
    rc, _, err = diff(b, a, "--fail-if", "bucket.engine.forward > +50%")
    eq(rc, 1, "A counted 0 steps")
    assert "A (%s) cannot be gated on: counted 0 steps" % b in err, err
    # without a gate the comparison is only shown
    rc, _, _ = diff(a, b)
    eq(rc, 0, "no --fail-if")
    # lost records: the same good run, as if its ring had overflowed
    with open(os.path.join(a, "summary.json")) as f:
        s = json.load(f)
    s["health"]["dropped_events"] = 7
    s["meta"]["sampling"] = {"lost_samples": 2}
    lossy = os.path.join(tempfile.mkdtemp(prefix="pt-it-"), "summary.json")
    with open(lossy, "w") as f:
        json.dump(s, f)
    rc, _, err = diff(a, lossy, "--fail-if", "step.p50 > +5%")
    eq(rc, 1, "B lost records")
    assert ("B (%s) cannot be gated on: 7 records dropped (ring buffer full: raise set "
            "ringbuf_mb); 2 stack samples lost" % lossy) in err, err


def test_merge_output_folder_and_write_errors():
    """proftrace merge -o: a folder gets merged.json; a write that fails
    says why (the system's reason), exit 1."""
    s, _, _ = profile("step native:exe:engine_step\n", ("--steps", 20))
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    p = subprocess.run([PROFTRACE, "merge", s["_out"], "-o", tmp + "/"], capture_output=True,
                       text=True, timeout=30)
    eq(p.returncode, 0, "merge -o DIR/: " + p.stderr)
    with open(os.path.join(tmp, "merged.json")) as f:
        eq(json.load(f)["stats"]["steps"], s["stats"]["steps"], "merged steps")
    p = subprocess.run([PROFTRACE, "merge", s["_out"], "-o", os.path.join(tmp, "no", "m.json")],
                       capture_output=True, text=True, timeout=30)
    eq(p.returncode, 1, "merge into a missing folder")
    assert "cannot write %s: No such file or directory" % os.path.join(tmp, "no", "m.json") \
        in p.stderr, p.stderr
    p = subprocess.run([PROFTRACE, "merge", s["_out"], "-o", "/dev/full"], capture_output=True,
                       text=True, timeout=30)
    eq(p.returncode, 1, "merge into a full device")
    assert "cannot write /dev/full: No space left on device" in p.stderr, p.stderr
