# SPDX-License-Identifier: BSD-2-Clause
"""The Python agent (issue 14): exact timing of only the named functions.

Victims start with the agent in their environment (LD_PRELOAD, as `eval
"$(proftrace env)"` sets it) and no other change. On every CPython here
(pyenv 3.8-3.13, Debian's /usr/bin/python3.11 and /opt/python3.14 when
built) proftrace must count every activation of every named function —
calls made from Python to Python, recursion, decorated functions,
exceptions, generators, coroutines run by asyncio, threads started after
attach — and time each within the victim's own bracket; leave nothing in
the interpreter after detach (a second attach is exact again); take its
hooks out when proftrace is killed; and say so, leaving the program
untouched, when another tool holds what the agent needs.
"""
import json
import os
import signal
import subprocess
import tempfile
import time

from harness import CLOCK_SLACK_NS, PROFTRACE, ROOT, Proc, Skip, bucket, build_pyext, eq, \
    func, helper_segment, profile, victim, within, write_conf
import test_python as tp

AGENT = os.path.abspath(os.environ.get("PT_AGENT", os.path.join(ROOT, ".output",
                                                                   "libproftrace_agent.so")))
CASES = os.path.join(ROOT, "tests", "victims", "pyagent_cases.py")
STEPS = 40

CONF = """\
step   py:pyagent_cases.Engine.step
bucket engine.plain   py:pyagent_cases::plain
bucket engine.rec     py:pyagent_cases::recurse
bucket engine.deco    py:pyagent_cases::decorated py:pyagent_cases::closured
bucket engine.fail    py:pyagent_cases::fails
bucket engine.gen     py:pyagent_cases::produce
bucket engine.coro    py:pyagent_cases::decode
bucket engine.thread  py:pyagent_cases::threaded
bucket engine.sig     py:pyagent_cases::signature
"""

# every named function, bracketed by the victim's [inside, around] clocks
BRACKETED = ["plain", "recurse", "decorated", "closured", "fails", "produce", "threaded",
             "decode", "signature"]


def interpreters():
    """(label, python) of every interpreter the agent must serve."""
    out = []
    for minor in (8, 9, 10, 11, 12, 13):
        try:
            out.append(("3.%d" % minor, tp.pyenv_python(minor)))
        except Skip:
            pass
    if os.access("/usr/bin/python3.11", os.X_OK):
        out.append(("debian-3.11", "/usr/bin/python3.11"))
    return out


PY314 = "/opt/python3.14/bin/python3.14"
# what runs for 3.14 without one (unit tests, from its sources' facts)
PY314_UNIT = ("test_pylayout (3.14's layout row against its structs' dump), test_pep768 "
              "(3.14.7's _Py_DebugOffsets as a process holds them, and broken ones)")


def py314(untested):
    """CPython 3.14, or a skip that says what goes untested live without
    it (its source is too large to fetch here, so it cannot be built)."""
    if not os.access(PY314, os.X_OK):
        raise Skip("no CPython 3.14 at %s (cannot be built on this machine; build it into "
                   "/opt where it can: README.md, Quick start). Untested live: %s. Tested "
                   "without it: %s" % (PY314, untested, PY314_UNIT))
    return PY314


def agent_env(extra=None):
    """Started as after `eval "$(proftrace env)"`: the agent preloaded."""
    return tp.victim_env(extra, agent=True)


def check_cases(s, t, steps, what):
    """Every named function of pyagent_cases against the victim's truth."""
    py = s["meta"]["python"]
    eq(py["mechanism"], "agent", what + " mechanism")
    eq(py["timing"], "exact", what + " timing")
    eq(s["health"]["dropped_events"], 0, what + " dropped")
    eq(s["health"]["lost_calls"], 0, what + " lost calls")
    eq(s["stats"]["steps"], steps, what + " steps")
    within(s["stats"]["time_ms"], t["Engine.step"], steps, what + " step time")
    for name in BRACKETED:
        f = func(s, name)
        eq(f["calls"], t[name]["calls"], "%s %s calls" % (what, name))
        eq(f["timing"], "exact", "%s %s timing" % (what, name))
        within(f["total_ms"], t[name], f["calls"], "%s %s total" % (what, name))
    # recursion: every level an activation; generator: 3 yields + return
    eq(func(s, "recurse")["calls"], 4 * steps, what + " recursion depth")
    eq(func(s, "produce")["calls"], 4 * steps, what + " generator activations")
    eq(func(s, "fails")["calls"], steps, what + " exceptions end calls")
    eq(func(s, "threaded")["calls"], 2 * steps, what + " threads started after attach")
    # 3 of its 5 calls a step return; 2 are refused before its body runs
    eq(func(s, "signature")["calls"], 3 * steps, what + " signature calls")
    # a coroutine awaiting once: two activations, resumed by the event loop
    eq(func(s, "decode")["calls"], 2 * steps, what + " coroutine activations")
    # decorated functions are their own code objects, not the wrappers
    assert not [x for x in s["functions"] if x["symbol"] and "wrapper" in x["symbol"]], \
        what + ": a wrapper was matched"
    # buckets inside steps: exact calls (threads run outside steps)
    for name, fn in (("engine.plain", "plain"), ("engine.fail", "fails"),
                     ("engine.gen", "produce"), ("engine.coro", "decode")):
        eq(bucket(s, name)["calls"], func(s, fn)["calls"], what + " " + name)
    eq(bucket(s, "engine.rec")["calls"], steps, what + " engine.rec outermost calls")
    # 3.8-3.11: a trampoline for every one (decorated ones too, through
    # the decorator's cell or __wrapped__; the generator and the coroutine
    # resumed step by step), no frame evaluator
    a = py["agent"]
    # timed by the agent's own clock reads, every one taken
    eq((a["clocks"], a["clock_rejected"]), (True, 0), what + " agent clocks")
    if a["hooks"] != "sys.monitoring":
        eq(a["hooks"], "trampolines", what + " hooks")
        eq(a["evaluator_functions"], "", what + " functions on the frame evaluator")
        eq(a["trampolines"], a["hooked"], what + " functions with trampolines")
        eq(a["trampolines_lost"], 0, what + " trampolines lost")
    # a trampoline's frame is the agent's, never the program's
    assert "<proftrace>" not in json.dumps(s["top"] if "top" in s else []), what


def _cases(python, label):
    s, t, _ = profile(CONF, victim_args=["--steps", STEPS], victim_name=[python, CASES],
                      victim_env=agent_env())
    check_cases(s, t["phase1"], STEPS, label)
    return s


def test_agent_cases_every_interpreter():
    ran = []
    for label, python in interpreters():
        _cases(python, label)
        ran.append(label)
    assert ran, "no interpreter to test"
    print("  agent cases exact on: %s" % ", ".join(ran))


def test_agent_cases_py314():
    _cases(py314("the agent's sys.monitoring hooks on 3.14 (preloaded): every case of "
                 "pyagent_cases exact (steps, recursion, decorators, exceptions, "
                 "generators, coroutines, threads)"), "3.14")


def test_agent_pyengine_every_interpreter():
    """The engine of the other Python tests, with the agent: exact where
    the frame probe was exact only on 3.8-3.10 and 3.12+ with the perf
    trampoline; values (tokens=, arg:, ret, attributes) too."""
    conf = tp.CONF + "count tokens py:pyengine.Sampler.sample len(ret)\n"
    for label, python in interpreters():
        s, t, _ = profile(conf, victim_args=["--steps", tp.N, "--lazy"],
                          victim_name=[python, tp.VICTIM], victim_env=agent_env())
        py = s["meta"]["python"]
        eq(py["mechanism"], "agent", label + " mechanism")
        tf = t["functions"]
        eq(s["stats"]["steps"], tp.N, label + " steps")
        for sym in tp.EXACT:
            f = func(s, sym)
            eq(f["calls"], tf[sym]["calls"], "%s %s calls" % (label, sym))
            within(f["total_ms"], tf[sym], f["calls"], "%s %s total" % (label, sym))
        eq(func(s, "detokenize")["calls"], 4 * tp.N, label + " detokenize activations")


FORGE = os.path.join(ROOT, "tests", "victims", "pyforge.py")


def test_agent_forged_clocks_rejected():
    """A target that calls the agent's probe sites itself with clock reads
    outside the hits around them (tests/victims/pyforge.py): BPF takes
    none of them (clock_rejected counts each) and times those calls by
    their hits, inside the victim's own bracket; the real calls stay
    exact."""
    python = tp.pyenv_python(12)
    s, t, _ = profile("step py:pyforge::named\n", victim_name=[python, FORGE],
                      victim_env=agent_env())
    a = s["meta"]["python"]["agent"]
    eq((a["clocks"], a["clock_rejected"]), (True, t["rejected"]), "clocks, rejected")
    f = func(s, "named")
    eq(f["calls"], t["calls"], "calls, forged ones too")
    eq(s["health"]["orphan_returns"], 0, "orphan returns")
    # every call inside what the victim saw around it: a real one's call
    # (its body and the agent's hooks; the body alone can be 1.3 us less
    # than our interval, the hooks' dispatch in it), or a forged one's two
    # ctypes calls
    top = max(t["real"]["around_max_ns"], t["forged"]["around_max_ns"])
    assert f["max_ms"] * 1e6 <= top + CLOCK_SLACK_NS, (f, t)


def _attach(pid, conf, out, *extra):
    pt = Proc([PROFTRACE, "-p", str(pid), "--targets", conf, "-o", out] + list(extra),
              stdin=False, stdout=True, stderr=True)
    pt.wait_line("proftrace: attached", "err", timeout=90)
    return pt


def test_agent_detach_leaves_nothing_and_reattach_is_exact():
    """Two runs on one process: after the first detaches, no hook is left
    (the victim looks itself); the second is exact again."""
    for label, python in interpreters()[-3:]:
        tmp = tempfile.mkdtemp(prefix="pt-it-")
        conf = write_conf(tmp, CONF)
        truth = os.path.join(tmp, "truth.json")
        v = victim([python, CASES], "--truth", truth, "--steps", STEPS, "--hold",
                   env=agent_env())
        try:
            pt = _attach(v.pid, conf, os.path.join(tmp, "out1"))
            v.send("go\n")
            v.wait_line("held", timeout=120)
            pt.p.send_signal(signal.SIGINT)
            eq(pt.wait(60), 0, label + " first proftrace exit")
            v.send("check\n")
            eq(v.wait_line("hooks "), "hooks 0", label + " hooks left after detach")
            pt = _attach(v.pid, conf, os.path.join(tmp, "out2"))
            v.send("go\n")
            eq(v.wait(120), 0, label + " victim")
            eq(pt.wait(60), 0, label + " second proftrace exit")
        finally:
            v.kill()
        with open(truth) as f:
            t = json.load(f)
        with open(os.path.join(tmp, "out2", "summary.json")) as f:
            s = json.load(f)
        # the second run saw only phase 2 (no threads there)
        for name in ("plain", "recurse", "decorated", "closured", "fails", "produce"):
            eq(func(s, name)["calls"], t["phase2"][name]["calls"], label + " re-attach " + name)
            within(func(s, name)["total_ms"], t["phase2"][name], func(s, name)["calls"],
                   label + " re-attach " + name)
        eq(s["stats"]["steps"], STEPS, label + " re-attach steps")


def test_tramp_semantics():
    """The trampoline maker alone (shim/agent/tramp.py, Python callbacks)
    on every interpreter: functions, generators (send, throw, close, yield
    from, PEP 479) and coroutines (await, exceptions, cancellation) give
    what they gave unwrapped, keep their signatures and inspect kinds, and
    each activation is bracketed once, from the same frame."""
    tramp = os.path.join(ROOT, "shim", "agent", "tramp.py")
    cases = os.path.join(ROOT, "tests", "victims", "pytramp_cases.py")
    ran = []
    for label, python in interpreters():
        p = subprocess.run([python, cases, tramp], capture_output=True, timeout=120)
        eq((p.returncode, p.stdout.decode().strip()), (0, "ok 16 42"),
           "%s: %s" % (label, p.stderr.decode()[-2000:]))
        ran.append(label)
    print("    tramp.py checked on: %s" % ", ".join(ran))


def _held_cases(python, conf_text, label):
    """pyagent_cases --hold under proftrace (conf_text): what the victim
    saw in itself while attached (its "attached: " line), then, detached,
    that no hook is left; (that line, summary.json with its stacks.folded
    text under "stacks", phase 1's truth)."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, conf_text)
    truth = os.path.join(tmp, "truth.json")
    out = os.path.join(tmp, "out")
    v = victim([python, CASES], "--truth", truth, "--steps", STEPS, "--hold", env=agent_env())
    try:
        pt = _attach(v.pid, conf, out)
        v.send("go\n")
        attached = v.wait_line("attached: ", timeout=120)
        v.wait_line("held", timeout=60)
        pt.p.send_signal(signal.SIGINT)
        eq(pt.wait(60), 0, label + " proftrace exit")
        v.send("check\n")
        eq(v.wait_line("hooks "), "hooks 0", label + " hooks left after detach")
        v.send("go\n")
        eq(v.wait(120), 0, label + " victim")
    finally:
        v.kill()
    with open(truth) as f:
        t = json.load(f)["phase1"]
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    with open(os.path.join(out, "stacks.folded")) as f:
        s["stacks"] = f.read()
    return attached, s, t


def test_agent_trampolines_leave_every_other_call_alone():
    """3.8-3.11: every named function (methods, decorated ones, recursion,
    exceptions, threads, a generator, a coroutine) gets a trampoline, no
    frame evaluator is installed while attached (the victim looks itself,
    so no other call pays anything), every call is exact, and detaching
    puts every function's own code back."""
    ran = []
    for label, python in interpreters():
        if label in ("3.12", "3.13"):
            continue
        # the named functions, and importlib's import hook (a py:
        # probe's "a.b.c" may name a module a.b.c still to come)
        attached, s, t = _held_cases(python, CONF, label)
        eq(attached, "attached: evaluator 0 trampolines Engine.step _find_and_load closured "
           "decode decorated fails plain produce recurse signature threaded",
           label + " while attached")
        a = s["meta"]["python"]["agent"]
        eq(a["hooks"], "trampolines", label + " hooks")
        eq(a["evaluator"], False, label + " evaluator")
        eq(a["evaluator_functions"], "", label + " evaluator functions")
        eq(a["trampolines"], 10, label + " trampolines")
        eq(s["stats"]["steps"], STEPS, label + " steps")
        for name in ("plain", "recurse", "decorated", "closured", "fails", "threaded",
                     "signature", "produce", "decode"):
            f = func(s, name)
            eq(f["calls"], t[name]["calls"], "%s %s calls" % (label, name))
            within(f["total_ms"], t[name], f["calls"], "%s %s total" % (label, name))
        assert "<proftrace>" not in s["stacks"], label + ": a trampoline frame in stacks"
        ran.append(label)
    print("    trampolines on: %s" % ", ".join(ran))


def test_agent_py_trampolines_off():
    """`set py_trampolines off`: the frame evaluator for every named
    function, as before (the victim sees it installed and no trampoline),
    still exact, and nothing left after detach."""
    label, python = [x for x in interpreters() if x[0] in ("3.11", "debian-3.11")][0]
    attached, s, t = _held_cases(python, "set py_trampolines off\n" + CONF, label)
    eq(attached, "attached: evaluator 1 trampolines ", label + " while attached")
    a = s["meta"]["python"]["agent"]
    eq(a["hooks"], "frame evaluator", label + " hooks")
    eq(a["trampolines"], 0, label + " trampolines")
    eq(len(a["evaluator_functions"].split(", ")), 10, label + " evaluator functions")
    for name in ("plain", "recurse", "decorated", "closured", "fails", "threaded"):
        f = func(s, name)
        eq(f["calls"], t[name]["calls"], "%s %s calls" % (label, name))


def _script_run(python, script, conf_text, on_go=None):
    """A victim script (it prints "ready <pid>", runs at a line on stdin,
    exits 0) with the agent preloaded, under proftrace with conf_text
    until it exits; on_go(v) runs once it was told to go. summary.json."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, conf_text)
    out = os.path.join(tmp, "out")
    v = victim([python, script], env=agent_env())
    try:
        pt = _attach(v.pid, conf, out)
        v.send("go\n")
        if on_go:
            on_go(v)
        eq(v.wait(60), 0, "victim " + script)
        eq(pt.wait(60), 0, "proftrace on " + script)
    finally:
        v.kill()
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def test_agent_generator_arguments():
    """A value read from a generator's and a coroutine's argument at each
    activation (count tokens ... arg:n) is exact on every interpreter, with
    trampolines (3.8-3.11: the driver hands over the original's own frame)
    and with the frame evaluator: 1,800 tokens, 400 and 200 activations."""
    conf_text = ("step py:pygenargs.step\nbucket g.gen py:pygenargs.gen\n"
                 "bucket g.co py:pygenargs.co\ncount tokens py:pygenargs.gen arg:n\n"
                 "count tokens py:pygenargs.co arg:n\n")
    script = os.path.join(ROOT, "tests", "victims", "pygenargs.py")
    for label, python in interpreters():
        for extra in ("", "set py_trampolines off\n"):
            s = _script_run(python, script, extra + conf_text)
            what = "%s %s" % (label, extra.strip() or "trampolines")
            eq((bucket(s, "g.gen")["calls"], bucket(s, "g.co")["calls"], s["stats"]["tokens"]),
               (400, 200, 1800), what)


REPLACED_VICTIM = r"""
import os, sys, time
def named():
    return 1
def other():
    return 2
def step():
    return named()
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
for _ in range(50):
    step()
time.sleep(0.5)  # the agent looks every 0.2 s
named.__code__ = other.__code__  # the program's own swap (a JIT's dispatcher, say)
for _ in range(50):
    step()
time.sleep(0.5)
print("named", named(), flush=True)
"""


def test_agent_code_replaced_by_the_program():
    """3.8-3.11: the program sets a named function's __code__ itself
    while attached: its later calls are not timed, and the report says
    so (agent.trampolines_lost, problem); the program's code stays."""
    label, python = [x for x in interpreters() if x[0] in ("3.11", "debian-3.11")][0]
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    script = os.path.join(tmp, "pyreplaced.py")
    with open(script, "w") as f:
        f.write(REPLACED_VICTIM)
    s = _script_run(python, script,
                    "step py:pyreplaced.step\nbucket r.named py:pyreplaced.named\n",
                    lambda v: eq(v.wait_line("named "), "named 2",
                                 label + " the program's code kept"))
    a = s["meta"]["python"]["agent"]
    eq(s["stats"]["steps"], 100, label + " steps")
    eq(bucket(s, "r.named")["calls"], 50, label + " calls timed before the swap")
    eq(a["trampolines_lost"], 1, label + " trampolines lost")
    assert "__code__" in (a["problem"] or ""), a


GETITEM_VICTIM = r"""
import os, sys
class Seq:
    def __getitem__(self, i):
        return i * 2
def step(s):
    return sum(s[i] for i in range(10))
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
s = Seq()
for _ in range(100):
    step(s)
"""


def test_agent_getitem_debian_311():
    """Debian 12's 3.11.2 runs a Python __getitem__ called as obj[i]
    without the frame evaluator (CPython fixed that in 3.11.4): with
    `py_trampolines off` those calls are missed, with trampolines every
    one is timed (the specialised call runs the function's __code__)."""
    if not os.access("/usr/bin/python3.11", os.X_OK):
        raise Skip("no /usr/bin/python3.11 (Debian's 3.11.2): nothing to check")
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    script = os.path.join(tmp, "pygetitem.py")
    with open(script, "w") as f:
        f.write(GETITEM_VICTIM)
    got = []
    for extra in ("", "set py_trampolines off\n"):
        s = _script_run("/usr/bin/python3.11", script, extra + "step py:pygetitem.step\n"
                        "bucket seq.get py:pygetitem.Seq.__getitem__\n")
        eq(s["stats"]["steps"], 100, "steps " + extra)
        got.append(bucket(s, "seq.get")["calls"])
    eq(got[0], 1000, "obj[i] calls of a named __getitem__ with trampolines")
    assert got[1] < 1000, "the frame evaluator saw them all: %r (CPython fixed?)" % got


def test_agent_proftrace_killed_hooks_removed():
    """proftrace SIGKILLed mid-run: the kernel drops its probes, the agent
    sees the heartbeat stop and takes its hooks out; the program runs on."""
    for label, python in interpreters()[-2:]:
        tmp = tempfile.mkdtemp(prefix="pt-it-")
        conf = write_conf(tmp, CONF)
        v = victim([python, CASES], "--truth", os.path.join(tmp, "t.json"), "--steps", STEPS,
                   "--hold", env=agent_env())
        try:
            pt = _attach(v.pid, conf, os.path.join(tmp, "out"))
            v.send("go\n")
            v.wait_line("held", timeout=120)
            pt.p.send_signal(signal.SIGKILL)
            pt.wait(30)
            time.sleep(1.6)  # PTAG_HEARTBEAT_TIMEOUT_NS + a tick
            v.send("check\n")
            eq(v.wait_line("hooks "), "hooks 0", label + " hooks left after SIGKILL")
            v.send("go\n")
            eq(v.wait(120), 0, label + " victim runs on")
        finally:
            v.kill()


def _segment_state(pid):
    """state, dormant reason and conflict from the agent's segment."""
    import struct
    with open(helper_segment(pid), "rb") as f:
        b = f.read(512)
    state, reason, mech, conflict = struct.unpack_from("<4I", b, 64)
    text = b[192:320].split(b"\0")[0].decode()
    return state, reason, conflict, text


def _switches(pid, tid):
    with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
        return [x for x in f.read().splitlines() if "ctxt_switches" in x]


def test_agent_dormant_costs_nothing():
    """Loaded and never attached: nothing in the interpreter, one thread
    asleep on a futex that used no CPU at all."""
    python = interpreters()[-1][1]
    v = victim([python, CASES], "--steps", 5, "--hold", env=agent_env())
    try:
        time.sleep(1.0)
        tasks = os.listdir("/proc/%d/task" % v.pid)
        eq(len(tasks), 2, "threads: the program's and the agent's")
        agent_tid = [t for t in tasks if int(t) != v.pid][0]
        with open("/proc/%d/task/%s/comm" % (v.pid, agent_tid)) as f:
            eq(f.read().strip(), "proftrace-py", "agent thread name")
        with open("/proc/%d/task/%s/stat" % (v.pid, agent_tid)) as f:
            st = f.read().rsplit(")", 1)[1].split()
        eq(st[0], "S", "agent thread asleep")
        eq(int(st[11]) + int(st[12]), 0, "agent thread CPU ticks (utime + stime)")
        with open("/proc/%d/task/%s/wchan" % (v.pid, agent_tid)) as f:
            assert "futex" in f.read(), "agent thread is not waiting on its futex"
        # and it never wakes while dormant (no timeout on that wait): an
        # agent left alone for minutes costs what it cost in these seconds
        switches = _switches(v.pid, agent_tid)
        time.sleep(3.0)
        eq(_switches(v.pid, agent_tid), switches, "agent thread wake-ups while dormant")
        eq(_segment_state(v.pid)[:2], (0, 0), "dormant, never attached")
        v.send("go\n")
        v.wait_line("held", timeout=60)
        v.send("check\n")
        eq(v.wait_line("hooks "), "hooks 0", "hooks of a dormant agent")
        v.send("go\n")
        eq(v.wait(60), 0, "victim")
    finally:
        v.kill()


CONFLICT_VICTIM = r"""
import os, sys
sys.path.insert(0, %r)
import pyagent_cases as pc
# take both sys.monitoring tool ids the agent may use, as another tool would
sys.monitoring.use_tool_id(3, "other-profiler")
sys.monitoring.use_tool_id(4, "other-coverage")
sys.argv = ["pyagent_cases", "--steps", "10"]
pc.main()
print("tools", sys.monitoring.get_tool(3), sys.monitoring.get_tool(4), flush=True)
"""


def _run_beside_other_tool(python, tmp, script_text, prefix, want, conf_text=CONF):
    """The victim script_text (another tool already installed in it) with
    the agent preloaded, attached: the program's own line starting with
    prefix must be want (its tool still works). (summary, stderr)."""
    script = os.path.join(tmp, "victim.py")
    with open(script, "w") as f:
        f.write(script_text)
    conf = write_conf(tmp, conf_text)
    out = os.path.join(tmp, "out")
    v = victim([python, script], env=agent_env())
    try:
        pt = _attach(v.pid, conf, out)
        v.send("go\n")
        eq(v.wait_line(prefix), want, "the program's own tool")
        eq(v.wait(60), 0, "victim")
        eq(pt.wait(60), 0, "proftrace")
        err = pt.rest("err")
    finally:
        v.kill()
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f), err


def test_agent_conflict_reported_program_untouched():
    """Another tool holds the sys.monitoring ids the agent uses: proftrace
    says so (stderr, meta.python.agent.problem), rows are sampled, and the
    program's tools are left as they were."""
    try:
        python = tp.pyenv_python(12)
    except Skip:
        python = py314("a sys.monitoring tool-id conflict (no 3.12 either)")
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    s, err = _run_beside_other_tool(
        python, tmp, CONFLICT_VICTIM % os.path.join(ROOT, "tests", "victims"), "tools ",
        "tools other-profiler other-coverage")
    assert "tool ids 3 and 4 are taken" in err and "3=other-profiler" in err, err
    py = s["meta"]["python"]
    assert "taken" in (py["agent"]["problem"] or ""), py
    eq(py["agent"]["loaded_by"], "environment", "preloaded at start")
    eq(py["agent"]["inject"], None, "not injected")
    eq(py["timing"], "sampled", "timing without the agent's hooks")
    eq(s["stats"]["steps"], 0, "no steps without exact calls")


DAEMON_VICTIM = r"""
import os, sys
sys.path.insert(0, %r)
import pyagent_cases as pc
# as a daemon starts (python-daemon, a double fork's tidy-up): every fd it
# did not open is closed, the agent's segment's among them
os.closerange(3, 1 << 16)
sys.argv = ["pyagent_cases", "--steps", "20"]
pc.main()
"""


def test_agent_found_after_the_program_closed_its_fd():
    """A program that closes every fd it did not open takes the agent's
    segment's fd with it; the mapping keeps the memfd, and proftrace finds
    it there (/proc/PID/map_files): steps exact, on pyenv's 3.8 and the
    last interpreter of the list (Debian's 3.11, with USDT)."""
    for label, python in (interpreters()[0], interpreters()[-1]):
        tmp = tempfile.mkdtemp(prefix="pt-it-")
        script = os.path.join(tmp, "victim.py")
        with open(script, "w") as f:
            f.write(DAEMON_VICTIM % os.path.join(ROOT, "tests", "victims"))
        conf = write_conf(tmp, CONF)
        out = os.path.join(tmp, "out")
        v = victim([python, script], env=agent_env())
        try:
            # ready: it has closed them
            assert not helper_segment(v.pid), "the agent's fd is still open"
            pt = _attach(v.pid, conf, out, "-v")
            v.send("go\n")
            eq(v.wait(60), 0, label + " victim")
            eq(pt.wait(60), 0, label + " proftrace")
            err = pt.rest("err")
        finally:
            v.kill()
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        eq(s["meta"]["python"]["timing"], "exact", label + " timing (stderr:\n%s)" % err)
        eq(s["stats"]["steps"], 20, label + " steps")
        print("  %s: fd closed; 20 of 20 steps through the agent" % label)


OTHER_EVAL_VICTIM = r"""
import os, sys
sys.path.insert(0, %r)
sys.path.insert(0, %r)
import other_eval
other_eval.install()   # another tool's frame evaluator, in before proftrace
import pyagent_cases as pc
sys.argv = ["pyagent_cases", "--steps", "10"]
pc.main()
print("evaluator", other_eval.installed(), other_eval.frames() > 0, flush=True)
"""


def test_agent_other_frame_evaluator_left_alone():
    """3.8-3.11: another PEP 523 frame evaluator (a JIT's, a debugger's) is
    installed. Trampolines need none: every named call is exact beside it.
    With `set py_trampolines off` the agent installs nothing, proftrace
    names the other one (its symbol and file) and rows are sampled. Both
    times the program keeps its evaluator, which saw every frame."""
    python = tp.pyenv_python(10)
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    build_pyext(python, "other_eval", tmp)
    script = OTHER_EVAL_VICTIM % (tmp, os.path.join(ROOT, "tests", "victims"))
    s, err = _run_beside_other_tool(python, tmp, script, "evaluator ", "evaluator True True")
    py = s["meta"]["python"]
    eq((py["timing"], py["agent"]["hooks"], py["agent"]["problem"]),
       ("exact", "trampolines", None), "beside another evaluator")
    eq(s["stats"]["steps"], 10, "steps beside another evaluator")
    for name, calls in (("plain", 10), ("produce", 40), ("decode", 20), ("signature", 30)):
        eq(func(s, name)["calls"], calls, name + " beside another evaluator")
    s, err = _run_beside_other_tool(python, tmp, script, "evaluator ", "evaluator True True",
                                    "set py_trampolines off\n" + CONF)
    assert "another frame evaluator (PEP 523) is installed: other_eval in " in err, err
    assert "other_eval.so" in err, err
    py = s["meta"]["python"]
    assert "frame evaluator" in (py["agent"]["problem"] or ""), py
    eq(py["timing"], "sampled", "timing without the agent's hooks")


def test_agent_missing_says_how():
    """No agent in the process: one line says how to get exact timing;
    python_mode agent makes it an error (exit 2)."""
    python = interpreters()[-1][1]
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, CONF)
    v = victim([python, CASES], "--steps", 3, env=tp.victim_env(agent=False))
    try:
        rc = subprocess.run([PROFTRACE, "-p", str(v.pid), "--targets", conf, "-o",
                             os.path.join(tmp, "o"), "-d", "0.5"], capture_output=True,
                            timeout=60)
        err = rc.stderr.decode()
        eq(rc.returncode, 0, "auto without an agent")
        assert 'eval "$(proftrace env)"' in err and "--inject" in err, err
        conf2 = write_conf(tmp, CONF + "set python_mode agent\n")
        rc = subprocess.run([PROFTRACE, "-p", str(v.pid), "--targets", conf2, "-o",
                             os.path.join(tmp, "o2"), "-d", "0.5"], capture_output=True,
                            timeout=60)
        eq(rc.returncode, 2, "python_mode agent without an agent")
        assert "python_mode agent" in rc.stderr.decode(), rc.stderr.decode()
    finally:
        v.kill()


def test_proftrace_env():
    """`proftrace env` prints the exports a server is started with."""
    p = subprocess.run([PROFTRACE, "env"], capture_output=True, timeout=10)
    eq(p.returncode, 0, "proftrace env")
    out = p.stdout.decode()
    line = [x for x in out.splitlines() if x.startswith("export LD_PRELOAD=")]
    eq(len(line), 1, "one LD_PRELOAD line")
    path = line[0].split("=", 1)[1].split("$")[0]
    assert os.path.isabs(path) and path.endswith("libproftrace_agent.so"), path
    assert os.path.samefile(path, AGENT), (path, AGENT)
    # eval'ed by a shell: it keeps an LD_PRELOAD already there
    sh = subprocess.run(["bash", "-c", 'LD_PRELOAD=/x.so; eval "$(%s env)"; echo "$LD_PRELOAD"'
                         % PROFTRACE], capture_output=True, timeout=10)
    eq(sh.stdout.decode().strip(), path + ":/x.so", "LD_PRELOAD kept")


def test_agent_pep768_py314():
    """3.14 started with nothing at all: proftrace loads the agent itself
    through the interpreter's remote debugging interface (PEP 768) while
    the server's loop polls, and every case is exact."""
    python = py314("proftrace loading the agent into a live 3.14 through PEP 768 "
                   "(sys.remote_exec: the debugger-support offsets read from the process, "
                   "the request written, the script run at a safe point, then removed) "
                   "and every case exact through it")
    s, t, err = profile(CONF, victim_args=["--steps", STEPS, "--poll"],
                        victim_name=[python, CASES], victim_env=tp.victim_env(agent=False))
    check_cases(s, t["phase1"], STEPS, "3.14 via PEP 768")
    eq(s["meta"]["python"]["agent"]["loaded_by"], "pep768", "how the agent was loaded")
    assert not [d for d in os.listdir("/tmp") if d.startswith("proftrace-pep768-")], \
        "the PEP 768 script was left behind"


def test_agent_pep768_disabled_says_so():
    """PYTHON_DISABLE_REMOTE_DEBUG=1: proftrace says remote debugging is
    off there and how else to get exact timing; rows are sampled."""
    python = py314("PYTHON_DISABLE_REMOTE_DEBUG=1 on a live 3.14: the refusal read from "
                   "the process and said, with how else to get exact timing")
    s, _, err = profile(CONF, victim_args=["--steps", 5, "--poll"],
                        victim_name=[python, CASES],
                        victim_env=tp.victim_env({"PYTHON_DISABLE_REMOTE_DEBUG": "1"},
                                                 agent=False))
    assert "remote debugging is disabled" in err and "proftrace env" in err, err
    eq(s["meta"]["python"]["timing"], "sampled", "timing without the agent")
