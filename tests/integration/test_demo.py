# SPDX-License-Identifier: BSD-2-Clause
"""`make demo`: the demo engine (tests/victims/demo_engine.py) with the
bundled targets/demo.conf, against the engine's own timing, and
scripts/demo.sh end to end.

The engine times every phase itself: its @timed wrapper reads
time.perf_counter (CLOCK_MONOTONIC, the clock of proftrace's BPF
timestamps) just before and just after calling the phase method, so
proftrace's interval for that call (frame entry to frame return) lies inside
the engine's. Per call, the engine's interval is longer by what runs
between its clock reads and the frame: the call through fn(*args,
**kwargs), frame setup and teardown, its thread-CPU clock reads, the
agent's hook and probe sites at entry and return (with native frames on a
kernel before 6.18, the sys_exit tracepoint on their system calls), a
sampling interrupt that
lands there: measured 4-23 us per call on the 2-vCPU test VM, whose speed
changes by a third between runs (the most in forward and sample). So a
bucket total must lie in [truth - calls x GAP_NS - off, truth + calls x
CLOCK_SLACK_NS]. GAP_NS (30 us) is that work; it is 1.5% of a forward call
(~2 ms) and 5-20% of the schedule, prepare and sample calls, but more than
a postproc call (~15 us), so that bucket's check is mainly its exact call
count. off: the time the engine's thread was not running inside its
intervals (its own figure: wall less thread CPU time, per call), any of
which may fall between a clock read and the frame's entry or return. On a
loaded machine that is the shortfall: a CI run with the sanitizer build
found postproc 31 ms short over 1,190 calls of 224 us (15 us on a quiet
machine), beyond the one 10 ms preemption allowed then.
"""
import glob
import json
import os
import re
import subprocess
import tempfile

from harness import CLOCK_SLACK_NS, PROFTRACE, ROOT, Skip, bucket, eq, func, profile, \
    with_agent

ENGINE = os.path.join(ROOT, "tests", "victims", "demo_engine.py")
CONF = os.path.join(ROOT, "targets", "demo.conf")
PYTHON = "/usr/bin/python3"  # what `make demo` runs (Debian 12: 3.11)
PYENV = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
N = 600  # steps, ~2.5 ms each
GAP_NS = 30000

BUCKETS = {  # bucket -> the engine's phase
    "engine.schedule": "schedule",
    "engine.prepare": "prepare",
    "engine.forward": "forward",
    "engine.sample": "sample",
    "engine.postproc": "postproc",
}


def conf_text():
    with open(CONF) as f:
        return f.read()


def warmup_steps(text):
    m = re.search(r"^\s*set\s+warmup_steps\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def run_engine(python, steps=N):
    """The whole engine run inside the attach window (--hold)."""
    if not os.path.exists(python):
        raise Skip("no %s" % python)
    text = conf_text()
    # started as `make demo` starts it: after eval "$(proftrace env)"
    s, t, err = profile(text, victim_args=["--steps", steps], victim_name=[python, ENGINE],
                        victim_first_args=["--hold"], victim_env=with_agent(os.environ))
    return s, t, err, warmup_steps(text)


def phase_calls(t, phase, first):
    """Calls of a phase in steps first.. (the engine's logic: schedule every
    step; the model phases only when the batch is not empty; postproc is two
    methods)."""
    batch = t["per_step"]["batch"][first:]
    if phase in ("schedule", "step"):
        return len(batch)
    busy = sum(1 for b in batch if b)
    return 2 * busy if phase == "postproc" else busy


def near(got_ms, want_ns, off_ns, calls, what):
    """proftrace's total inside the engine's, short of it by at most GAP_NS
    per call and the time the engine was not running (module docstring)."""
    assert got_ms is not None, "%s: no value" % what
    got = got_ms * 1e6
    lo, hi = want_ns - calls * GAP_NS - off_ns, want_ns + calls * CLOCK_SLACK_NS
    assert lo <= got <= hi, ("%s: got %.3f ms, want %.3f ms (allowed %.3f..%.3f, %d calls, "
                             "%.3f ms of it not running)" % (
                                 what, got_ms, want_ns / 1e6, lo / 1e6, hi / 1e6, calls,
                                 off_ns / 1e6))


def check_steps_and_buckets(s, t, warm):
    st = s["stats"]
    eq(t["steps"], N, "engine steps")
    eq(st["steps"] + warm, t["steps"], "counted steps + warmup")
    eq(s["health"]["dropped_events"], 0, "dropped")
    ps = t["per_step"]
    near(st["time_ms"], sum(ps["step_s"][warm:]) * 1e9, sum(ps["step_off_s"][warm:]) * 1e9,
         st["steps"], "step time")
    covered = 0.0
    for name, phase in BUCKETS.items():
        b = bucket(s, name)
        calls = phase_calls(t, phase, warm)
        eq(b["calls"], calls, name + " calls")
        near(b["total_ms"], sum(ps[phase + "_s"][warm:]) * 1e9,
             sum(ps[phase + "_off_s"][warm:]) * 1e9, calls, name + " total")
        covered += b["total_ms"]
    # what a real engine looks like: the phases are nearly all of the step,
    # the model forward most of it
    assert covered >= 0.9 * st["time_ms"], "buckets cover %.1f of %.1f ms" % (
        covered, st["time_ms"])
    assert bucket(s, "engine.forward")["total_ms"] >= 0.5 * st["time_ms"], "forward share"


def check_outputs(out):
    for name in ("summary.json", "report.md", "lines.txt", "flame.svg", "stacks.folded"):
        path = os.path.join(out, name)
        assert os.path.getsize(path) > 0, "%s is empty" % path
    with open(os.path.join(out, "report.md")) as f:
        report = f.read()
    for name in BUCKETS:
        assert "| %s |" % name in report, "%s not in report.md" % name
    with open(os.path.join(out, "lines.txt")) as f:
        lines = f.read()
    for fn in ("Engine.step", "ModelRunner.forward"):
        assert "Function: %s at line" % fn in lines, "%s not in lines.txt" % fn
    # the engine has exited when lines.txt is written: its source was read before
    assert "source unavailable" not in lines, lines[:2000]
    with open(os.path.join(out, "flame.svg")) as f:
        assert "Engine.step" in f.read(), "Engine.step not in flame.svg"


def test_demo_engine_against_truth():
    """targets/demo.conf on the demo engine under Debian's python3 (3.11),
    started with the agent: every step and phase call counted, each
    bucket's total against the engine's own."""
    s, t, _, warm = run_engine(PYTHON)
    check_steps_and_buckets(s, t, warm)
    check_outputs(s["_out"])
    # py: functions found by code object count as attached (not 0 of 7)
    h = s["health"]
    eq((h["probes_attached"], h["unattached"]), (h["probes_requested"], []), "probes attached")


def test_demo_engine_exact_py310():
    """On 3.10 too, with the agent: the function rows count every call
    (warmup steps included), with the engine's totals."""
    hits = sorted(glob.glob(os.path.join(PYENV, "versions", "3.10.*", "bin", "python3")))
    if not hits:
        raise Skip("no pyenv CPython 3.10 under %s" % PYENV)
    s, t, _, warm = run_engine(hits[-1])
    eq(s["meta"]["python"]["timing"], "exact", "meta.python.timing")
    check_steps_and_buckets(s, t, warm)
    tp = t["phases"]
    for sym, phase in (("Engine.step", "step"), ("Scheduler.schedule", "schedule"),
                       ("ModelRunner.prepare_inputs", "prepare"),
                       ("ModelRunner.forward", "forward"), ("Sampler.sample", "sample")):
        f = func(s, sym)
        eq(f["timing"], "exact", sym + " timing")
        eq(f["calls"], tp[phase]["calls"], sym + " calls")
        near(f["total_ms"], tp[phase]["total_s"] * 1e9, tp[phase]["off_s"] * 1e9, f["calls"],
             sym + " total")
    post = [func(s, x) for x in ("Scheduler.update_from_output", "Detokenizer.detokenize")]
    eq(sum(f["calls"] for f in post), tp["postproc"]["calls"], "postproc calls")
    near(sum(f["total_ms"] for f in post), tp["postproc"]["total_s"] * 1e9,
         tp["postproc"]["off_s"] * 1e9, tp["postproc"]["calls"], "postproc total")


def test_demo_script():
    """scripts/demo.sh (what `make demo` runs after building): attaches,
    prints report.md and the full path of every output, stops the engine."""
    if not os.path.exists(PROFTRACE):
        raise Skip("no %s: build it first (make)" % PROFTRACE)
    if not os.path.exists(PYTHON):
        raise Skip("no %s" % PYTHON)
    out = os.path.join(tempfile.mkdtemp(prefix="pt-it-"), "demo")
    env = dict(os.environ, PT_DEMO_SECONDS="2", PT_DEMO_OUT=out, PT_PROFTRACE=PROFTRACE)
    p = subprocess.run([os.path.join(ROOT, "scripts", "demo.sh")], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=90)
    text = p.stdout.decode(errors="replace")
    eq(p.returncode, 0, "demo.sh exit status (output:\n%s)" % text)
    m = re.search(r"^demo: engine running as pid (\d+)", text, re.M)
    assert m, "no engine pid line:\n" + text
    assert "# proftrace report: python3 (pid %s)" % m.group(1) in text, text
    assert "## Buckets" in text and "| engine.forward |" in text, text
    listed = [ln.strip() for ln in text[text.index("demo: outputs:"):].splitlines()[1:]
              if ln.startswith("  /")]
    assert re.search(r"^demo: check: \d+ steps, 5 buckets with calls, Python timing exact$",
                     text, re.M), text
    want = sorted(os.path.join(os.path.realpath(out), n) for n in
                  ("flame-wall.svg", "flame.svg", "lines.txt", "profile.pb.gz", "report.md",
                   "stacks.folded", "summary.json"))
    eq(sorted(listed), want, "listed outputs")
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    assert s["stats"]["steps"] > 100, s["stats"]
    assert not os.path.exists("/proc/%s" % m.group(1)), "engine still running"
