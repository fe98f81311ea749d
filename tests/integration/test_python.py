# SPDX-License-Identifier: BSD-2-Clause
"""py: probes through the frame probe (python_mode evalframe), and auto
without an agent, on every CPython on the machine (the agent, the default
way to exact timing, has tests/integration/test_agent.py).

tests/victims/pyengine.py runs the same engine under each interpreter and
records its own ground truth. Where the frame probe sees every call
(3.8-3.10; 3.12/3.13 with the perf trampoline), call counts must equal the
truth and every total must lie in the victim's [inside, around] bracket
(harness.within: the BPF interval of a call is nested between the two clock
reads of the victim, on the same CLOCK_MONOTONIC). Elsewhere (3.11, 3.12/3.13
without the trampoline) every py: row must say timing "c-entry-only", counts
may only be lower than the truth, and functions that are only ever called
from C code (map()) are still counted exactly. Without an agent,
python_mode auto times py: rows from samples and says how to get exact
timing.
"""
import glob
import os
import shutil
import subprocess
import time

import tempfile

from harness import PROFTRACE, ROOT, Skip, bucket, eq, func, profile, with_agent, within

PYENV = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
VICTIM = os.path.join(ROOT, "tests", "victims", "pyengine.py")
N = 120  # steps: ~0.95 ms each

CONF = """\
# pyengine: the engine loop in Python, one native libc call
step   py:pyengine.Engine.step
bucket engine.schedule py:pyengine.Scheduler.schedule
bucket engine.forward  py:pyengine.ModelRunner.forward
bucket model.layer     py:pyengine.ModelRunner.layer
bucket model.norm      py:pyengine.ModelRunner.layer_norm
bucket engine.sample   py:pyengine.Sampler.sample py:pyengine.Sampler.check
bucket engine.post     py:pyengine::postprocess py:pyengine::detokenize
bucket os.getppid      native:libc.so*:getppid
bucket engine.lazy     py:pyengine_lazy::lazy_work
bucket engine.idle     py:pyengine::engine_idle
"""

# symbol in summary.json -> truth key
EXACT = ["Engine.step", "Scheduler.schedule", "ModelRunner.forward", "ModelRunner.layer",
         "ModelRunner.layer_norm", "Sampler.sample", "Sampler.check", "postprocess", "detokenize", "engine_idle",
         "lazy_work"]


def pyenv_python(minor):
    hits = sorted(glob.glob(os.path.join(PYENV, "versions", "3.%d.*" % minor, "bin", "python3")))
    if not hits:
        raise Skip("no pyenv CPython 3.%d under %s" % (minor, PYENV))
    return hits[-1]


def victim_env(extra=None, agent=True):
    """Our environment without a PYTHONPERFSUPPORT or LD_PRELOAD of its own,
    plus extra; agent: with the Python agent preloaded, as a server started
    after `eval "$(proftrace env)"`."""
    env = dict(os.environ)
    env.pop("PYTHONPERFSUPPORT", None)
    env.pop("LD_PRELOAD", None)
    env.update(extra or {})
    return with_agent(env) if agent else env


def run(python, env_extra=None, steps=N, args=(), conf_extra="", agent=False):
    return profile(CONF + conf_extra, victim_args=["--steps", steps, "--lazy"] + list(args),
                   victim_name=[python, VICTIM], victim_env=victim_env(env_extra, agent))


def check_exact(s, t, steps):
    py = s["meta"]["python"]
    eq(py["timing"], "exact", "meta.python.timing")
    eq(py["mechanism"], "evalframe", "meta.python.mechanism")
    eq(s["stats"]["steps"], steps, "steps")
    eq(s["health"]["dropped_events"], 0, "dropped")
    eq(s["health"]["lost_calls"], 0, "lost calls")
    tf = t["functions"]
    for sym in EXACT:
        f = func(s, sym)
        eq(f["kind"], "python", sym + " kind")
        eq(f["timing"], "exact", sym + " timing")
        eq(f["calls"], tf[sym]["calls"], sym + " calls")
        within(f["total_ms"], tf[sym], f["calls"], sym + " total")
    # the decorated function is its own code object, not the wrapper
    assert not [f for f in s["functions"] if f["symbol"] == "timed.<locals>.wrapper"]
    eq(func(s, "postprocess")["line"] is not None, True, "postprocess line")
    # generator: one call per activation (creation on 3.11+ is not one)
    eq(func(s, "detokenize")["calls"], 4 * steps, "detokenize activations")
    # exceptions close the call: every check() counted, half of them raised
    eq(func(s, "Sampler.check")["calls"], steps, "check calls")
    # native and Python buckets in one step
    g = func(s, "getppid")
    eq(g["kind"], "native", "getppid kind")
    eq(g["calls"], steps, "getppid calls")
    for name, syms in (("engine.schedule", ["Scheduler.schedule"]),
                       ("engine.forward", ["ModelRunner.forward"]),
                       ("model.layer", ["ModelRunner.layer"])):
        b = bucket(s, name)
        eq(b["calls"], sum(tf[x]["calls"] for x in syms), name + " calls")
        within(b["total_ms"], tf[syms[0]], b["calls"], name + " total")
    b = bucket(s, "os.getppid")
    eq(b["calls"], steps, "os.getppid bucket calls")
    within(b["total_ms"], tf["getppid"], steps, "os.getppid bucket total")
    # engine_idle runs between steps: a function row, no bucket time
    eq(bucket(s, "engine.idle")["calls"], 0, "engine.idle inside steps")
    within(s["stats"]["time_ms"], tf["Engine.step"], steps, "step time")


def check_partial(s, t, steps, why):
    py = s["meta"]["python"]
    eq(py["timing"], "c-entry-only", "meta.python.timing")
    assert why in py["why"], py["why"]
    assert py["advice"], "no advice for the user"
    tf = t["functions"]
    for f in s["functions"]:
        if f.get("kind") != "python" or f["calls"] is None or f["symbol"] is None:
            continue
        eq(f["timing"], "c-entry-only", f["symbol"] + " timing")
        assert f["calls"] <= tf[f["symbol"]]["calls"], f
    # called only through map(), i.e. from C: seen exactly even here
    f = func(s, "ModelRunner.layer_norm")
    eq(f["calls"], tf["ModelRunner.layer_norm"]["calls"], "layer_norm calls (from C)")
    within(f["total_ms"], tf["ModelRunner.layer_norm"], f["calls"], "layer_norm total")
    eq(func(s, "getppid")["timing"], "exact", "native rows stay exact")
    eq(func(s, "getppid")["calls"], steps, "getppid calls")


def check_sampled(s, t, why):
    """python_mode auto where not every call is seen: py: rows carry
    sampled times and no counts; the victim's own totals bound them."""
    py = s["meta"]["python"]
    eq(py["timing"], "sampled", "meta.python.timing")
    eq(py["mechanism"], "sampled", "meta.python.mechanism")
    assert why in py["why"], py["why"]
    assert s["meta"]["sampling"], "sampling is on by default"
    tf = t["functions"]
    for f in s["functions"]:
        if f.get("kind") != "python" or f["symbol"] is None:
            continue
        eq(f["timing"], "sampled", f["symbol"] + " timing")
        eq(f["calls"], None, f["symbol"] + " calls (never a partial count)")
        assert f["sampled"] is not None, f
    # Engine.step holds ~all of the run's Python time: its sampled wall
    # time must match the victim's own total. At 1 kHz the ~115 ms run is
    # ~115 samples (binomial sd ~10%); 35% also allows the ~1 ms sampling
    # quantum at each end of the run and the GIL handoffs around it.
    got = func(s, "Engine.step")["sampled"]["wall_ms"]
    want = tf["Engine.step"]["total_ns"] / 1e6
    assert abs(got - want) <= 0.35 * want, "Engine.step sampled %.1f ms, truth %.1f ms" % (got, want)
    eq(func(s, "getppid")["timing"], "exact", "native rows stay exact")


EVALFRAME = "set python_mode evalframe\n"


def _exact(minor, env=None, conf_extra=""):
    s, t, _ = run(pyenv_python(minor), env, conf_extra=EVALFRAME + conf_extra)
    check_exact(s, t, N)
    return s


def test_py310_uprobe_pair_exact():
    """The frame probe as a uprobe/uretprobe pair (kernels before 6.13)."""
    s = _exact(10, conf_extra="set py_session off\n")
    eq(s["meta"]["python"]["probe"], "pair", "meta.python.probe")


def test_py38_exact():
    _exact(8)


def test_py39_exact():
    _exact(9)


def test_py310_exact():
    s = _exact(10)
    # this machine's kernel (6.18) has uprobe sessions
    eq(s["meta"]["python"]["probe"], "session", "meta.python.probe")
    assert s["meta"]["python"]["version"].startswith("3.10."), s["meta"]["python"]


def test_py312_perf_trampoline_exact():
    s = _exact(12, {"PYTHONPERFSUPPORT": "1"})
    eq(s["meta"]["python"]["perf_trampoline"], True, "perf_trampoline")


def test_py313_perf_trampoline_exact():
    s = _exact(13, {"PYTHONPERFSUPPORT": "1"})
    eq(s["meta"]["python"]["perf_trampoline"], True, "perf_trampoline")


def test_py311_c_entry_only():
    s, t, err = run(pyenv_python(11), conf_extra=EVALFRAME)
    check_partial(s, t, N, "Python-to-Python")
    assert "c-entry-only" in err, err


def test_py311_auto_sampled():
    s, t, err = run(pyenv_python(11))
    check_sampled(s, t, "agent")
    assert "sampled times" in err and 'eval "$(proftrace env)"' in err, err


def test_py312_without_trampoline_c_entry_only():
    s, t, err = run(pyenv_python(12), conf_extra=EVALFRAME)
    check_partial(s, t, N, "Python-to-Python")
    eq(s["meta"]["python"]["perf_trampoline"], False, "perf_trampoline")
    assert 'eval "$(proftrace env)"' in s["meta"]["python"]["advice"]


def test_py313_without_trampoline_c_entry_only():
    s, t, _ = run(pyenv_python(13), conf_extra=EVALFRAME)
    check_partial(s, t, N, "Python-to-Python")


def test_py313_without_trampoline_auto_sampled():
    s, t, _ = run(pyenv_python(13))
    check_sampled(s, t, "agent")


def test_debian_py311_static_interpreter():
    py = "/usr/bin/python3.11"
    if not os.path.exists(py):
        raise Skip("no %s" % py)
    s, t, _ = run(py, conf_extra=EVALFRAME)
    eq(s["meta"]["python"]["path"], py, "interpreter found in the executable itself")
    check_partial(s, t, N, "Python-to-Python")


WILD_CONF = """\
step   py:pyengine.Engine.step
bucket engine.runner py:pyengine.ModelRunner.*
bucket engine.lazy   py:pyengine_lazy::* py:pyengine_lazy.*.*
"""


def test_wildcards_lazy_import_threads():
    """Class wildcards, a module imported after attach, three threads, with
    the agent (on 3.11, where nothing else is exact)."""
    python = pyenv_python(11)
    steps, threads = 60, 3
    s, t, _ = profile(WILD_CONF, victim_args=["--steps", steps, "--threads", threads, "--lazy"],
                      victim_name=[python, VICTIM], victim_env=victim_env())
    tf = t["functions"]
    total = steps * threads
    eq(s["stats"]["steps"], total, "steps over all threads")
    for sym in ("ModelRunner.forward", "ModelRunner.layer", "ModelRunner.layer_norm",
                "lazy_work", "LazyHelper.help"):
        f = func(s, sym)
        eq(f["calls"], tf[sym]["calls"], sym + " calls")
        within(f["total_ms"], tf[sym], f["calls"], sym + " total")
    # lazy_work is module-level, LazyHelper.help a method: each matched once
    eq(tf["lazy_work"]["calls"], (steps - steps // 2) * threads, "truth lazy calls")
    b = bucket(s, "engine.lazy")
    eq(b["calls"], tf["lazy_work"]["calls"], "lazy bucket: outermost calls only")
    # the module-level wildcard does not pick up methods or nested code
    names = {f["symbol"] for f in s["functions"] if f["probe"] == "py:pyengine_lazy::*"}
    assert names == {"lazy_work"}, names


def dry_run_against(argv, conf, *extra):
    """proftrace --dry-run (and extra arguments) on a process running argv:
    (exit code, stderr)."""
    p = subprocess.Popen(argv)
    try:
        # attach only once the exec is done and the program is mapped
        want = os.path.realpath(shutil.which(argv[0]) or argv[0])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if os.path.realpath("/proc/%d/exe" % p.pid) == want and \
                        want in open("/proc/%d/maps" % p.pid).read():
                    break
            except OSError:
                pass
            time.sleep(0.01)
        time.sleep(0.2)  # the dynamic loader maps libraries right after exec
        r = subprocess.run([PROFTRACE, "-p", str(p.pid), "--targets", conf, "--dry-run"]
                           + list(extra), capture_output=True, timeout=30)
    finally:
        p.kill()
        p.wait()
    return r.returncode, r.stderr.decode()


def test_unsupported_and_missing_interpreter():
    """Clear one-line errors, exit code 2."""
    old = sorted(glob.glob(os.path.join(PYENV, "versions", "3.7.*", "bin", "python3")))
    conf = os.path.join(tempfile.mkdtemp(prefix="pt-it-"), "py-only.conf")
    with open(conf, "w") as f:
        f.write("step py:pyengine.Engine.step\n")
    if old:
        rc, err = dry_run_against([old[-1], "-c", "import time; time.sleep(10)"], conf)
        eq(rc, 2, "exit code for Python 3.7")
        assert "not supported" in err and "3.8" in err and "3.14" in err, err
        eq(len(err.strip().splitlines()), 1, "one line")
    rc, err = dry_run_against(["sleep", "10"], conf)
    eq(rc, 2, "exit code without Python")
    assert "no CPython interpreter" in err, err
    assert "remove the py: probes" in err, err


def test_native_only_no_py_hint():
    """A targets file with native: probes only, on a process without
    Python: sampling has no Python stacks (said with -v), and no hint to
    remove py: probes that are not there (issue 23)."""
    conf = os.path.join(tempfile.mkdtemp(prefix="pt-it-"), "native-only.conf")
    with open(conf, "w") as f:
        f.write("step native:libc.so*:clock_nanosleep\n")
    rc, err = dry_run_against(["sleep", "10"], conf, "-v")
    eq(rc, 0, "native probes on a process without Python: " + err)
    assert "no Python stacks" in err, err
    assert "py:" not in err, err


CHURN_CONF = """\
step   py:pyengine.Engine.step
bucket engine.churn py:churn::churn_target
"""


def _churn(minor, env=None):
    # code made by exec() outside any module: the frame probe's case (the
    # agent finds code objects in modules)
    s, t, _ = profile(EVALFRAME + CHURN_CONF, victim_args=["--steps", 200, "--churn"],
                      victim_name=[pyenv_python(minor), VICTIM],
                      victim_env=victim_env(env, agent=False))
    tf = t["functions"]
    rows = [f for f in s["functions"] if f["symbol"] == "churn_target"]
    assert rows, "churn_target not found"
    # one row even though each call ran a new code object
    eq(len(rows), 1, "churn_target rows")
    f = rows[0]
    want = tf["churn_target"]["calls"]
    # A code object freed and replaced before proftrace read it (this victim
    # drops each one at once; under load or ASan it happens) is never
    # guessed: its calls are counted as unresolved, whichever function ran.
    # Each churn makes two: its function's and the <module> code exec runs.
    lost = s["health"]["py_calls_unresolved"]
    fresh = 2 * (want + tf["churn_other"]["calls"])
    assert f["calls"] <= want <= f["calls"] + lost, (f["calls"], want, lost)
    assert lost <= fresh - f["calls"], (lost, fresh, f["calls"])
    if lost == 0:
        within(f["total_ms"], tf["churn_target"], f["calls"], "churn_target total")
    else:
        assert f["total_ms"] * 1e6 <= tf["churn_target"]["outer_ns"], f
    assert not [x for x in s["functions"] if x["symbol"] == "churn_other"]
    return s


def test_code_address_reuse_py310():
    """Fresh code objects every step, addresses reused (in a plain loop like
    the victim's, 15 of ~130 addresses on 3.10 held both functions in turn,
    46 of ~150 on 3.13): counts stay exact.
    On 3.10 churn.py cannot be read (it exists only in memory), so the
    qualname is the bare name and '::' still matches."""
    s = _churn(10)
    assert s["meta"]["python"]["qualname_from_co_name"] > 0, s["meta"]["python"]


def test_code_address_reuse_py313_perf():
    _churn(13, {"PYTHONPERFSUPPORT": "1"})
