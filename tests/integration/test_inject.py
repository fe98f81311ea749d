# SPDX-License-Identifier: BSD-2-Clause
"""--inject (issue 14, the third way to load the agent): a Python process
started without the agent gets it at attach, through ptrace and its own
libc's dlopen (user/attach/inject.c).

- every interpreter here, started with no agent: `--inject`, then every
  case of pyagent_cases is exact, as with the agent preloaded;
- victims that hammer what an injected dlopen could deadlock on (malloc
  and free on 4 threads, dlopen and dlclose on 3, GIL hand-offs between
  Python threads) are injected into 100 times each through
  tests/tools/ptinject (a new copy of a small library each time, whose
  constructor logs its load in the victim): no injection hangs or fails,
  every thread keeps making progress, and the borrowed thread finds its
  xmm registers and errno as it left them (the C victim checks them
  around every wait and aborts otherwise); pause median/p99/max printed;
- a call that outlasts its timeout is handed back: the thread finishes it
  on its own and resumes its code;
- refusals (another tracer, a stopped process, a dead pid, a library the
  target's user cannot read): one line each, exit 2, the target running
  on and not traced;
- the agent stays loaded and dormant after proftrace exits, and a second
  attach finds it without injecting.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import PROFTRACE, ROOT, VICTIMS, Proc, Skip, eq, func, profile, victim, \
    within, write_conf
import test_agent as ta
import test_python as tp

TOOLS = os.path.abspath(os.environ.get("PT_TOOLS", os.path.join(ROOT, ".output",
                                                                 "tests-tools")))
PTINJECT = os.path.join(TOOLS, "ptinject")
PROBE_LIB = os.path.join(VICTIMS, "libinject_probe.so")
SLOW_LIB = os.path.join(VICTIMS, "libinject_slow.so")
GIL_VICTIM = os.path.join(ROOT, "tests", "victims", "pyinject_gil.py")
INJECTIONS = int(os.environ.get("PT_INJECTIONS", "100"))
STEPS = 20


def no_agent_env(extra=None):
    return tp.victim_env(extra, agent=False)


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return None


def state_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def agent_mapped(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libproftrace_agent" in f.read()


def test_inject_agent_every_interpreter():
    """Started without the agent, attached with --inject: exact."""
    ran = []
    for label, python in ta.interpreters():
        s, t, err = profile(ta.CONF, victim_args=["--steps", STEPS],
                            victim_name=[python, ta.CASES], victim_env=no_agent_env(),
                            extra=["--inject"])
        ta.check_cases(s, t["phase1"], STEPS, label + " injected")
        a = s["meta"]["python"]["agent"]
        eq(a["loaded_by"], "inject", label + " loaded_by")
        inj = a["inject"]
        assert inj and inj["pause_ms"] > 0 and inj["tid"] > 0, (label, inj)
        # the victim waits for its go line: its main thread reads a pipe
        eq(inj["syscall"], "read", label + " safe point")
        assert "no agent" not in err and "--inject" not in err, err
        ran.append("%s %.1f ms" % (label, inj["pause_ms"]))
    assert ran, "no interpreter to test"
    print("  injected and exact on: %s (pause of the borrowed thread)" % ", ".join(ran))


def _counts(v):
    v.p.send_signal(signal.SIGUSR1)
    return [int(x) for x in v.wait_line("counts ", timeout=20).split()[1:]]


def _stress(label, cmd, env):
    """INJECTIONS loads of fresh copies of the probe library into cmd's
    victim; returns the pauses (ms)."""
    if not os.access(PTINJECT, os.X_OK):
        raise Skip("no %s (make builds it)" % PTINJECT)
    tmp = tempfile.mkdtemp(prefix="pt-inj-")
    os.chmod(tmp, 0o755)
    log = os.path.join(tmp, "loads.log")
    libs = []
    for i in range(INJECTIONS):
        lib = os.path.join(tmp, "libprobe%03d.so" % i)
        shutil.copy(PROBE_LIB, lib)
        libs.append(lib)
    env = dict(env, PT_INJECT_LOG=log)
    v = victim(cmd, env=env)
    try:
        time.sleep(0.3)
        before = _counts(v)
        pauses, done = [], 0
        # in batches, so that progress is checked between them; each
        # injection has its own 2 s timeouts inside, the batch one outside
        for k in range(0, len(libs), 25):
            batch = libs[k:k + 25]
            p = subprocess.run([PTINJECT, str(v.pid)] + batch, capture_output=True,
                               timeout=60)
            rows = [json.loads(x) for x in p.stdout.decode().splitlines()]
            eq(len(rows), len(batch), label + " injections answered")
            for r in rows:
                eq(r["rc"], 0, "%s injection %d (%s)" % (label, done, r["err"]))
                assert r["handle"] and not r["handed_off"], r
                pauses.append(r["pause_ms"])
                done += 1
            # a deadlocked thread never moves again; a starved one (2 busy
            # cores) moves within a few seconds
            deadline = time.monotonic() + 5
            while True:
                now = _counts(v)
                eq(len(now), len(before), label + " threads")
                stuck = [i for i, (a, b) in enumerate(zip(before, now)) if b <= a]
                if not stuck or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert not stuck, "%s: threads %s made no progress after %d injections: %s -> %s" \
                % (label, stuck, done, before, now)
            before = now
            eq(tracer_of(v.pid), 0, label + " traced after injecting")
        v.p.send_signal(signal.SIGTERM)
        rc = v.wait(30)
        err = v.p.stderr.read().decode() if v.p.stderr else ""
        eq(rc, 0, "%s victim exit (its own checks) %s" % (label, err))
        with open(log) as f:
            loads = f.read().splitlines()
        eq(len(loads), INJECTIONS, label + " loads seen by the victim")
    finally:
        v.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    pauses.sort()
    med = pauses[len(pauses) // 2]
    p99 = pauses[min(len(pauses) - 1, int(len(pauses) * 0.99))]
    print("  %s: %d injections, 0 failed, 0 hung; pause median %.2f ms, p99 %.2f ms, "
          "max %.2f ms" % (label, done, med, p99, pauses[-1]))
    return pauses


def test_inject_stress_malloc():
    _stress("malloc/free x4", [os.path.join(VICTIMS, "victim_inject"), "malloc"], os.environ)


def test_inject_stress_dlopen():
    _stress("dlopen/dlclose x3", [os.path.join(VICTIMS, "victim_inject"), "dlopen",
                                  os.path.join(VICTIMS, "libvictim_dl.so")], os.environ)


def test_inject_stress_gil():
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else \
        ta.interpreters()[-1][1]
    _stress("python GIL hand-offs", [python, GIL_VICTIM], no_agent_env())


def test_inject_slow_call_handed_back():
    """A constructor that outlasts the call's timeout: the injector hands
    the call back (a signal frame of the thread's own state above it) and
    lets go; the constructor finishes later, the thread resumes its own
    code, its xmm registers intact (it aborts otherwise)."""
    tmp = tempfile.mkdtemp(prefix="pt-inj-")
    os.chmod(tmp, 0o755)
    log = os.path.join(tmp, "loads.log")
    v = victim([os.path.join(VICTIMS, "victim_inject"), "malloc"],
               env=dict(os.environ, PT_INJECT_LOG=log, PT_INJECT_SLOW_MS="1200"))
    try:
        p = subprocess.run([PTINJECT, "--call", "300", str(v.pid), SLOW_LIB],
                           capture_output=True, timeout=30)
        r = json.loads(p.stdout.decode().splitlines()[0])
        eq(r["rc"], -110, "timed out (-ETIMEDOUT): %s" % r["err"])
        assert r["handed_off"] and "resumes where it was" in r["err"], r
        eq(tracer_of(v.pid), 0, "traced after the hand-off")
        assert not os.path.exists(log), "the constructor cannot be done yet"
        time.sleep(1.5)
        with open(log) as f:
            eq(len(f.read().splitlines()), 1, "the slow constructor finished")
        a = _counts(v)
        time.sleep(0.3)
        b = _counts(v)
        assert b[0] > a[0], "the borrowed thread did not resume: %s -> %s" % (a, b)
        v.p.send_signal(signal.SIGTERM)
        eq(v.wait(30), 0, "victim exit (its own checks)")
    finally:
        v.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def _refused(pid, conf, tmp, env=None):
    p = subprocess.run([PROFTRACE, "-p", str(pid), "--targets", conf, "-o",
                        os.path.join(tmp, "o"), "-d", "1", "--inject"],
                       capture_output=True, timeout=60, env=env)
    err = p.stderr.decode()
    eq(p.returncode, 2, "proftrace exit:\n" + err)
    lines = [x for x in err.splitlines() if "--inject" in x or "no such process" in x]
    eq(len(lines), 1, "one line says why:\n" + err)
    return lines[0]


def test_inject_refusals():
    """Each refusal: one line, exit 2; the target runs on, not traced."""
    python = ta.interpreters()[-1][1]
    tmp = tempfile.mkdtemp(prefix="pt-inj-")
    os.chmod(tmp, 0o755)
    conf = write_conf(tmp, ta.CONF)
    said = []

    def running(v, what):
        assert v.p.poll() is None, what + ": the victim died"
        eq(tracer_of(v.pid), 0, what + ": traced afterwards")
        assert state_of(v.pid) in "SR", what + ": state " + state_of(v.pid)
        assert not agent_mapped(v.pid), what + ": the agent was loaded"

    # another tracer: a helper holds the main thread with PTRACE_SEIZE
    v = victim([python, ta.CASES], "--steps", 2, env=no_agent_env())
    helper = Proc(["/usr/bin/python3", "-c", """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, int(sys.argv[1]), None, None):
    sys.exit("seize: %d" % ctypes.get_errno())
print("held", flush=True)
time.sleep(120)
""", str(v.pid)])
    try:
        helper.wait_line("held")
        line = _refused(v.pid, conf, tmp)
        assert "already traced by pid %d" % helper.p.pid in line, line
        said.append(line)
        helper.kill()
        time.sleep(0.1)
        running(v, "another tracer")
    finally:
        helper.kill()
        v.kill()

    # a stopped process
    v = victim([python, ta.CASES], "--steps", 2, env=no_agent_env())
    try:
        os.kill(v.pid, signal.SIGSTOP)
        time.sleep(0.1)
        line = _refused(v.pid, conf, tmp)
        assert "is stopped" in line, line
        said.append(line)
        eq(state_of(v.pid), "T", "still stopped, as it was")
        os.kill(v.pid, signal.SIGCONT)
        time.sleep(0.1)
        running(v, "stopped")
    finally:
        v.kill()

    # a dead pid
    v = victim([python, ta.CASES], "--steps", 2, env=no_agent_env())
    dead = v.pid
    v.kill()
    line = _refused(dead, conf, tmp)
    assert "no such process" in line, line
    said.append(line)

    # a library its user cannot read: the agent in a root-only folder, the
    # victim running as nobody
    libdir = tempfile.mkdtemp(prefix="pt-inj-lib-")
    os.chmod(libdir, 0o700)
    shutil.copy(ta.AGENT, libdir)
    env = no_agent_env()
    v = Proc(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python,
              ta.CASES, "--steps", "2"], env=env)
    v.pid = int(v.wait_line("ready ").split()[1])
    try:
        line = _refused(v.pid, conf, tmp, env=dict(os.environ, PROFTRACE_LIBDIR=libdir))
        assert "cannot be read by process %d's user (uid 65534)" % v.pid in line, line
        said.append(line)
        running(v, "unreadable library")
    finally:
        v.kill()
        shutil.rmtree(libdir, ignore_errors=True)
    for x in said:
        print("  refused: " + x)


def test_inject_agent_stays_dormant_and_is_found_again():
    """After the injecting proftrace exits, the agent stays, dormant (no
    hook left; its thread asleep); a second attach uses it as it is."""
    python = ta.interpreters()[-1][1]
    tmp = tempfile.mkdtemp(prefix="pt-inj-")
    conf = write_conf(tmp, ta.CONF)
    truth = os.path.join(tmp, "truth.json")
    v = victim([python, ta.CASES], "--truth", truth, "--steps", STEPS, "--hold",
               env=no_agent_env())
    try:
        pt = ta._attach(v.pid, conf, os.path.join(tmp, "out1"), "--inject")
        v.send("go\n")
        v.wait_line("held", timeout=120)
        pt.p.send_signal(signal.SIGINT)
        eq(pt.wait(60), 0, "first proftrace exit")
        assert agent_mapped(v.pid), "the agent left the process"
        eq(tracer_of(v.pid), 0, "traced after proftrace exited")
        v.send("check\n")
        eq(v.wait_line("hooks "), "hooks 0", "hooks left after detach")
        state, reason, _, _ = ta._segment_state(v.pid)
        eq(state, 0, "the agent is dormant")
        pt = ta._attach(v.pid, conf, os.path.join(tmp, "out2"), "--inject")
        v.send("go\n")
        eq(v.wait(120), 0, "victim")
        eq(pt.wait(60), 0, "second proftrace exit")
        err = pt.rest("err")
    finally:
        v.kill()
    with open(os.path.join(tmp, "out1", "summary.json")) as f:
        s1 = json.load(f)
    with open(os.path.join(tmp, "out2", "summary.json")) as f:
        s2 = json.load(f)
    with open(truth) as f:
        t = json.load(f)
    eq(s1["meta"]["python"]["agent"]["loaded_by"], "inject", "first run")
    a2 = s2["meta"]["python"]["agent"]
    eq(a2["loaded_by"], "earlier", "second run found it")
    eq(a2["inject"], None, "second run did not inject")
    assert "loaded (--inject)" not in err, err
    for name in ("plain", "recurse", "fails", "produce"):
        eq(func(s2, name)["calls"], t["phase2"][name]["calls"], "second run " + name)
        within(func(s2, name)["total_ms"], t["phase2"][name], func(s2, name)["calls"],
               "second run " + name)


def _ptinject(args, **kw):
    p = subprocess.run([PTINJECT] + [str(a) for a in args], capture_output=True, timeout=60,
                       **kw)
    rows = [json.loads(x) for x in p.stdout.decode().splitlines()]
    return p.returncode, rows


def test_inject_refusals_injector():
    """The injector's own refusals, where proftrace (root, one namespace)
    cannot show them: no permission to trace, a library outside the
    target's mount namespace. Each one line; the target untouched."""
    if not os.access(PTINJECT, os.X_OK):
        raise Skip("no %s (make builds it)" % PTINJECT)
    v = victim([os.path.join(VICTIMS, "victim_inject"), "malloc"])
    try:
        # not permitted: the injector as nobody, the victim root's
        rc, rows = _ptinject(["--wait", 200, v.pid, PROBE_LIB],
                             preexec_fn=lambda: (os.setgroups([]), os.setgid(65534),
                                                 os.setuid(65534)))
        eq(rc, 2, "exit as nobody")
        eq(rows[0]["rc"], -1, "-EPERM: %s" % rows[0]["err"])
        assert "ptrace is not permitted on process %d" % v.pid in rows[0]["err"], rows
        eq(tracer_of(v.pid), 0, "traced after EPERM")
    finally:
        v.kill()
    # another mount namespace: the library's folder is a tmpfs there
    if not shutil.which("unshare"):
        raise Skip("no unshare(1)")
    tmp = tempfile.mkdtemp(prefix="pt-inj-")
    os.chmod(tmp, 0o755)
    lib = os.path.join(tmp, "libprobe.so")
    shutil.copy(PROBE_LIB, lib)
    v = victim(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount -t tmpfs none %s && exec %s malloc" % (tmp, os.path.join(
                    VICTIMS, "victim_inject"))])
    try:
        rc, rows = _ptinject(["--wait", 200, v.pid, lib])
        eq(rc, 2, "exit, another mount namespace")
        eq(rows[0]["rc"], -18, "-EXDEV: %s" % rows[0]["err"])
        assert "not visible to process %d" % v.pid in rows[0]["err"], rows
        eq(tracer_of(v.pid), 0, "traced after EXDEV")
        assert v.p.poll() is None, "victim died"
    finally:
        v.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def test_inject_signals_held_and_delivered():
    """Signals sent to the borrowed thread while it runs the call are held
    and delivered once it is its own again: none lost."""
    tmp = tempfile.mkdtemp(prefix="pt-inj-")
    os.chmod(tmp, 0o755)
    log = os.path.join(tmp, "loads.log")
    v = victim([os.path.join(VICTIMS, "victim_inject"), "malloc"],
               env=dict(os.environ, PT_INJECT_LOG=log, PT_INJECT_SLOW_MS="600"))
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        p = subprocess.Popen([PTINJECT, "--call", "5000", str(v.pid), SLOW_LIB],
                             stdout=subprocess.PIPE)
        # inside the slow constructor (it says so), however loaded the machine
        deadline = time.monotonic() + 20
        while not os.path.exists(log + ".start") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert os.path.exists(log + ".start"), "the slow constructor never started"
        # to the main thread itself (tgkill), the one borrowed
        eq(libc.syscall(234, v.pid, v.pid, signal.SIGUSR1), 0, "tgkill")
        out, _ = p.communicate(timeout=30)
        r = json.loads(out.decode().splitlines()[0])
        eq(r["rc"], 0, "injection: %s" % r["err"])
        eq(r["tid"], v.pid, "the main thread borrowed")
        assert r["held"] >= 1, "the signal was not seen during the call: %s" % r
        # delivered after: the victim's handler asks its loop for a counts line
        v.wait_line("counts ", timeout=10)
        v.p.send_signal(signal.SIGTERM)
        eq(v.wait(30), 0, "victim exit (its own checks)")
    finally:
        v.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def test_inject_static_and_failing_dlopen():
    """A static program has no dlopen to call; a library dlopen refuses is
    reported with dlerror's text, the thread given back."""
    if not os.access(PTINJECT, os.X_OK):
        raise Skip("no %s (make builds it)" % PTINJECT)
    v = victim("victim_static")
    try:
        rc, rows = _ptinject(["--wait", 200, v.pid, PROBE_LIB])
        eq(rc, 2, "exit, static")
        eq(rows[0]["rc"], -8, "-ENOEXEC: %s" % rows[0]["err"])
        assert "static binary" in rows[0]["err"], rows
        eq(tracer_of(v.pid), 0, "traced after refusing")
    finally:
        v.kill()
    tmp = tempfile.mkdtemp(prefix="pt-inj-")
    os.chmod(tmp, 0o755)
    bad = os.path.join(tmp, "libnotelf.so")
    with open(bad, "w") as f:
        f.write("not an ELF file at all, but long enough to be read as a header....\n" * 4)
    v = victim([os.path.join(VICTIMS, "victim_inject"), "malloc"])
    try:
        rc, rows = _ptinject([v.pid, bad])
        eq(rc, 2, "exit, dlopen failed")
        eq(rows[0]["rc"], -79, "-ELIBACC: %s" % rows[0]["err"])
        assert "invalid ELF header" in rows[0]["err"], rows
        eq(tracer_of(v.pid), 0, "traced after a failed dlopen")
        a = _counts(v)
        time.sleep(0.2)
        assert _counts(v)[0] > a[0], "the borrowed thread did not resume"
        v.p.send_signal(signal.SIGTERM)
        eq(v.wait(30), 0, "victim exit (its own checks: xmm, errno)")
    finally:
        v.kill()
        shutil.rmtree(tmp, ignore_errors=True)


ASYNCIO_VICTIM = r"""
import asyncio, os, signal
n = 0
def tick():
    global n
    n += 1
    loop.call_later(0.02, tick)
loop = asyncio.new_event_loop()
loop.add_signal_handler(signal.SIGUSR1, lambda: print("ticks %d" % n, flush=True))
print("ready %d" % os.getpid(), flush=True)
loop.call_later(0.02, tick)
loop.run_forever()
"""


def test_inject_epoll_only_when_asked():
    """An asyncio server idles in epoll_wait, whose interruption hands
    EINTR to the program: refused (saying so) unless --inject-epoll, and
    then loaded, the event loop running on (Python retries the wait)."""
    python = ta.interpreters()[-1][1]
    tmp = tempfile.mkdtemp(prefix="pt-inj-")
    script = os.path.join(tmp, "aio.py")
    with open(script, "w") as f:
        f.write(ASYNCIO_VICTIM)
    conf = write_conf(tmp, "step py:aio::tick\n")
    v = victim([python, script], env=no_agent_env())
    try:
        p = subprocess.run([PROFTRACE, "-p", str(v.pid), "--targets", conf, "-o",
                            os.path.join(tmp, "o1"), "-d", "0.5", "--inject", "--inject-wait",
                            "300"], capture_output=True, timeout=60)
        err = p.stderr.decode()
        eq(p.returncode, 2, "without --inject-epoll:\n" + err)
        assert "%d in epoll_wait" % v.pid in err and "--inject-epoll" in err, err
        eq(tracer_of(v.pid), 0, "traced after refusing")
        assert not agent_mapped(v.pid), "loaded without --inject-epoll"
        p = subprocess.run([PROFTRACE, "-p", str(v.pid), "--targets", conf, "-o",
                            os.path.join(tmp, "o2"), "-d", "1", "--inject-epoll"],
                           capture_output=True, timeout=60)
        err = p.stderr.decode()
        eq(p.returncode, 0, "with --inject-epoll:\n" + err)
        v.p.send_signal(signal.SIGUSR1)
        a = int(v.wait_line("ticks ").split()[1])
        time.sleep(0.2)
        v.p.send_signal(signal.SIGUSR1)
        assert int(v.wait_line("ticks ").split()[1]) > a, "the event loop stopped"
    finally:
        v.kill()
    with open(os.path.join(tmp, "o2", "summary.json")) as f:
        s = json.load(f)
    a = s["meta"]["python"]["agent"]
    eq(a["loaded_by"], "inject", "loaded_by")
    eq(a["inject"]["syscall"], "epoll_wait", "the safe point taken")
    eq(s["meta"]["python"]["timing"], "exact", "timing")
    assert s["stats"]["steps"] >= 10, s["stats"]
