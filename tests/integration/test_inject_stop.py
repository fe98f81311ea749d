# SPDX-License-Identifier: BSD-2-Clause
"""--inject and job control (issue 27, part 2): a process stopped before or
during --inject is left stopped, nothing of ours resumes it, proftrace says
what happened in one line (exit 2), and `kill -CONT` lets it run on with
no stray signal.

Each moment of an injection gets its stop deterministically:
PT_TEST_INJECT_PAUSE=MOMENT:MS (tests only, user/attach/inject.c) pauses
proftrace there and says so on stderr; the test sends SIGSTOP on that
line. The moments, in order:

  before    stopped before proftrace starts
  start     pt_inject__dlopen entered, state not checked yet (a stop
            while BPF loads lands here: BPF is loaded before --inject)
  checked   state checked, no thread looked at yet
  looked    a thread found at a safe point, not seized yet
  seized    PTRACE_SEIZE done, PTRACE_INTERRUPT not yet
  held      the thread stopped by us, before the call
  inside    the thread inside dlopen (a constructor that sleeps 1 s:
            libinject_slow.so as the agent, PROFTRACE_LIBDIR)
  returned  dlopen returned, the thread not given back yet

Each on a Python of one thread (Debian's 3.11: a stop signal stays
pending while we hold its only thread) and on one of two threads (pyenv's
oldest, in pselect6: the errno call first; the other thread takes the
stop, a group stop our thread joins). The victim writes "ticks conts" to a
file each 5 ms (ticks: its loop; conts: SIGCONTs it got): stopped means
all threads in state T and ticks not moving; after our one SIGCONT, ticks
move, conts is 1, and it is not stopped again.

And SIGCONT with it: SIGSTOP then SIGCONT inside the call leaves it
running (before, the injector sent a SIGSTOP of its own after a group
stop, which stopped it again for good); a SIGCONT the borrowed thread held
from before a SIGSTOP is not sent again (that would end the stop).
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import PROFTRACE, ROOT, VICTIMS, Proc, Skip, eq
import test_agent as ta
import test_python as tp

TOOLS = os.path.abspath(os.environ.get("PT_TOOLS", os.path.join(ROOT, ".output",
                                                                 "tests-tools")))
PTINJECT = os.path.join(TOOLS, "ptinject")
SLOW_LIB = os.path.join(VICTIMS, "libinject_slow.so")
PAUSE_MS = 1500

VICTIM = r"""
import os, signal, sys, threading, time
path, nthreads = sys.argv[1], int(sys.argv[2])
conts = 0
def on_cont(sig, frame):
    global conts
    conts += 1
signal.signal(signal.SIGCONT, on_cont)
def other():
    while True:
        time.sleep(0.002)
for _ in range(nthreads - 1):
    threading.Thread(target=other, daemon=True).start()
print("ready %d" % os.getpid(), flush=True)
n = 0
while True:
    n += 1
    with open(path + ".tmp", "w") as f:
        f.write("%d %d\n" % (n, conts))
    os.replace(path + ".tmp", path)
    time.sleep(0.005)
"""
CONF = "step py:stopv::on_cont\n"


def pythons():
    """(label, python, threads): one thread on Debian's 3.11, two on
    pyenv's oldest."""
    out = []
    if os.access("/usr/bin/python3.11", os.X_OK):
        out.append(("debian-3.11, 1 thread", "/usr/bin/python3.11", 1))
    others = [p for label, p in ta.interpreters() if not label.startswith("debian")]
    if others:
        out.append(("pyenv %s, 2 threads" % others[0].split("/versions/")[1].split("/")[0],
                    others[0], 2))
    if not out:
        raise Skip("no CPython to test")
    return out


def states(pid):
    got = ""
    for t in sorted(os.listdir("/proc/%d/task" % pid)):
        with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
            got += f.read().rpartition(")")[2].split()[0]
    return got


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return None


def tracer_of_task(pid, tid):
    with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


def libc():
    import ctypes
    return ctypes.CDLL(None, use_errno=True)


def mapped(pid, name):
    with open("/proc/%d/maps" % pid) as f:
        return name in f.read()


class Victim:
    def __init__(self, python, threads, env=None):
        self.tmp = tempfile.mkdtemp(prefix="pt-stop-")
        os.chmod(self.tmp, 0o755)
        script = os.path.join(self.tmp, "stopv.py")
        with open(script, "w") as f:
            f.write(VICTIM)
        self.counts = os.path.join(self.tmp, "counts")
        self.proc = Proc([python, script, self.counts, str(threads)],
                         env=tp.victim_env(env, agent=False))
        self.pid = int(self.proc.wait_line("ready ").split()[1])
        self.threads = threads
        deadline = time.monotonic() + 10
        while len(states(self.pid)) < threads and time.monotonic() < deadline:
            time.sleep(0.01)
        self.ticks()  # running

    def read(self):
        with open(self.counts) as f:
            return [int(x) for x in f.read().split()]

    def ticks(self, timeout=10.0):
        """Its loop moves: the new (ticks, conts)."""
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.counts):
            assert time.monotonic() < deadline, "the victim never ticked"
            time.sleep(0.01)
        a = self.read()
        while True:
            time.sleep(0.05)
            b = self.read()
            if b[0] > a[0]:
                return b
            assert time.monotonic() < deadline, "the victim's loop does not move: %s" % b

    def stop(self):
        os.kill(self.pid, signal.SIGSTOP)

    def assert_stopped(self, what):
        """All its threads in state T, its loop still."""
        deadline = time.monotonic() + 2
        while set(states(self.pid)) != {"T"} and time.monotonic() < deadline:
            time.sleep(0.01)
        eq(set(states(self.pid)), {"T"}, what + ": every thread stopped (%s)" % states(self.pid))
        a = self.read()
        time.sleep(0.3)
        eq(self.read(), a, what + ": its loop did not move")
        eq(states(self.pid).count("T"), len(states(self.pid)), what + ": still stopped")
        eq(tracer_of(self.pid), 0, what + ": traced afterwards")

    def assert_runs_after_cont(self, what):
        """One SIGCONT: its loop moves, it got that one SIGCONT and no
        other stop."""
        os.kill(self.pid, signal.SIGCONT)
        ticks, conts = self.ticks()
        time.sleep(0.3)
        ticks2, conts2 = self.ticks()
        assert ticks2 > ticks, what
        eq(conts2, 1, what + ": SIGCONTs the victim got")
        assert "T" not in states(self.pid), what + ": stopped again: " + states(self.pid)
        assert self.proc.p.poll() is None, what + ": the victim died"

    def kill(self):
        self.proc.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _proftrace(v, env, extra=()):
    conf = os.path.join(v.tmp, "t.conf")
    with open(conf, "w") as f:
        f.write(CONF)
    return Proc([PROFTRACE, "-p", str(v.pid), "--targets", conf, "-o",
                 os.path.join(v.tmp, "out"), "-d", "1", "--inject"] + list(extra),
                stdin=False, stdout=False, stderr=True, env=env)


def _said(pt, what):
    """proftrace's exit 2 and its one line (the test pause's aside)."""
    rc = pt.wait(60)
    err = pt.rest("err")
    lines = [x for x in err.splitlines() if x and "proftrace: test: pausing" not in x]
    eq(rc, 2, what + ": exit\n" + err)
    eq(len(lines), 1, what + ": one line\n" + err)
    return lines[0]


def _moment(moment, loaded):
    """A stop at moment (PT_TEST_INJECT_PAUSE): left stopped, said."""
    said = []
    for label, python, threads in pythons():
        what = "%s, %s" % (moment, label)
        v = Victim(python, threads)
        pt = None
        try:
            env = dict(os.environ)
            if moment == "before":
                v.stop()
                v.assert_stopped(what + " (before proftrace)")
            else:
                env["PT_TEST_INJECT_PAUSE"] = "%s:%d" % (moment, PAUSE_MS)
            t0 = time.monotonic()
            pt = _proftrace(v, env)
            if moment != "before":
                pt.wait_line("proftrace: test: pausing %d ms at %s" % (PAUSE_MS, moment), "err",
                             timeout=90)
                v.stop()
            line = _said(pt, what)
            took = time.monotonic() - t0
            if moment in ("before", "start"):
                assert "process %d is stopped (state T): continue it first" % v.pid in line, line
            else:
                assert "process %d was stopped (" % v.pid in line, line
                assert "it is left stopped; continue it (kill -CONT %d)" % v.pid in line, line
                assert ("the library is loaded" if loaded else "nothing was loaded") in line, line
            v.assert_stopped(what)
            eq(mapped(v.pid, "libproftrace_agent"), loaded, what + ": the agent mapped")
            v.assert_runs_after_cont(what)
            said.append("%s: %.1f s: %s" % (what, took, line))
            if loaded:
                # dormant: a later attach finds it
                pt = _proftrace(v, dict(os.environ))
                rc = pt.wait(60)
                err = pt.rest("err")
                eq(rc, 0, what + ": attach again\n" + err)
                with open(os.path.join(v.tmp, "out", "summary.json")) as f:
                    a = json.load(f)["meta"]["python"]["agent"]
                eq(a["loaded_by"], "earlier", what + ": the second attach found the agent")
        finally:
            if pt:
                pt.kill()
            v.kill()
    for x in said:
        print("  " + x)


def test_inject_stopped_before():
    _moment("before", False)


def test_inject_stop_at_start():
    _moment("start", False)


def test_inject_stop_after_check():
    _moment("checked", False)


def test_inject_stop_thread_looked_at():
    _moment("looked", False)


def test_inject_stop_thread_seized():
    _moment("seized", False)


def test_inject_stop_thread_held():
    _moment("held", False)


def test_inject_stop_call_returned():
    _moment("returned", True)


def test_inject_stop_inside_dlopen():
    """The stop comes while the borrowed thread is inside dlopen (a
    constructor sleeping 1 s, loaded as if it were the agent): the other
    threads stop at once, ours finishes the call (its sleep goes on) and is
    let go into the stop."""
    libdir = tempfile.mkdtemp(prefix="pt-stop-lib-")
    os.chmod(libdir, 0o755)
    shutil.copy(SLOW_LIB, os.path.join(libdir, "libproftrace_agent.so"))
    said = []
    try:
        for label, python, threads in pythons():
            what = "inside, " + label
            log = os.path.join(libdir, "loads-%d.log" % threads)
            v = Victim(python, threads, env={"PT_INJECT_LOG": log, "PT_INJECT_SLOW_MS": "1000"})
            pt = None
            try:
                t0 = time.monotonic()
                pt = _proftrace(v, dict(os.environ, PROFTRACE_LIBDIR=libdir))
                deadline = time.monotonic() + 90
                while not os.path.exists(log + ".start"):
                    assert time.monotonic() < deadline, "the constructor never ran"
                    assert pt.p.poll() is None, "proftrace exited: " + pt.rest("err")
                    time.sleep(0.005)
                v.stop()
                if threads > 1:
                    # the others stop at once, not after the call
                    time.sleep(0.2)
                    assert pt.p.poll() is None, "the call is over already"
                    eq(states(v.pid).count("T"), threads - 1,
                       what + ": stopped while the call runs (%s)" % states(v.pid))
                line = _said(pt, what)
                took = time.monotonic() - t0
                assert "process %d was stopped (SIGSTOP) while --inject held its thread" % \
                    v.pid in line, line
                assert "the library is loaded, and it is left stopped" in line, line
                # the borrowed thread finished the call, then went into the stop
                assert os.path.exists(log), "the constructor did not finish"
                v.assert_stopped(what)
                v.assert_runs_after_cont(what)
                said.append("%s: %.1f s: %s" % (what, took, line))
            finally:
                if pt:
                    pt.kill()
                v.kill()
    finally:
        shutil.rmtree(libdir, ignore_errors=True)
    for x in said:
        print("  " + x)


def test_inject_stop_and_cont_inside_dlopen():
    """SIGSTOP then SIGCONT while the thread is inside dlopen: the program
    runs on once it is given back (no stop of ours after its SIGCONT), the
    library loaded, the SIGCONT delivered once."""
    if not os.access(PTINJECT, os.X_OK):
        raise Skip("no %s (make builds it)" % PTINJECT)
    for label, python, threads in pythons():
        what = "stop and cont, " + label
        tmp = tempfile.mkdtemp(prefix="pt-stop-lib-")
        os.chmod(tmp, 0o755)
        log = os.path.join(tmp, "loads.log")
        lib = os.path.join(tmp, "libslow.so")
        shutil.copy(SLOW_LIB, lib)
        v = Victim(python, threads, env={"PT_INJECT_LOG": log, "PT_INJECT_SLOW_MS": "600"})
        try:
            p = subprocess.Popen([PTINJECT, str(v.pid), lib], stdout=subprocess.PIPE)
            deadline = time.monotonic() + 30
            while not os.path.exists(log + ".start"):
                assert time.monotonic() < deadline, "the constructor never ran"
                time.sleep(0.005)
            v.stop()
            time.sleep(0.1)
            os.kill(v.pid, signal.SIGCONT)
            out, _ = p.communicate(timeout=30)
            r = json.loads(out.decode().splitlines()[0])
            eq(r["rc"], 0, what + ": %s" % r["err"])
            assert r["handle"] and not r["stopped"], r
            ticks, conts = v.ticks()
            time.sleep(0.3)
            assert "T" not in states(v.pid), what + ": stopped: " + states(v.pid)
            eq(v.ticks()[1], 1, what + ": SIGCONTs the victim got")
            eq(tracer_of(v.pid), 0, what + ": traced afterwards")
            assert os.path.exists(log), "the constructor did not finish"
        finally:
            v.kill()
            shutil.rmtree(tmp, ignore_errors=True)


def test_inject_cont_held_then_stop():
    """A SIGCONT that came during the call (held: the thread is inside
    dlopen), then SIGSTOP: the stop is kept. The held SIGCONT did its
    continuing when it was sent; it goes to the thread with the detach
    (its handler runs), never sent again, which would end the stop."""
    if not os.access(PTINJECT, os.X_OK):
        raise Skip("no %s (make builds it)" % PTINJECT)
    for label, python, threads in pythons():
        what = "cont held, then stop, " + label
        tmp = tempfile.mkdtemp(prefix="pt-stop-lib-")
        os.chmod(tmp, 0o755)
        log = os.path.join(tmp, "loads.log")
        lib = os.path.join(tmp, "libslow.so")
        shutil.copy(SLOW_LIB, lib)
        v = Victim(python, threads, env={"PT_INJECT_LOG": log, "PT_INJECT_SLOW_MS": "600"})
        try:
            p = subprocess.Popen([PTINJECT, str(v.pid), lib], stdout=subprocess.PIPE)
            deadline = time.monotonic() + 30
            while not os.path.exists(log + ".start"):
                assert time.monotonic() < deadline, "the constructor never ran"
                time.sleep(0.005)
            # to the borrowed thread itself, which holds it
            held = [int(t) for t in os.listdir("/proc/%d/task" % v.pid)
                    if tracer_of_task(v.pid, t)]
            eq(len(held), 1, what + ": threads traced")
            eq(libc().syscall(234, v.pid, held[0], signal.SIGCONT), 0, "tgkill")
            time.sleep(0.1)
            v.stop()
            out, _ = p.communicate(timeout=30)
            r = json.loads(out.decode().splitlines()[0])
            eq(r["rc"], -11, what + ": -EAGAIN: %s" % r["err"])
            eq(r["tid"], held[0], what + ": the thread borrowed")
            assert r["handle"] and r["stopped"] and r["held"] >= 1, r
            assert "the library is loaded, and it is left stopped" in r["err"], r
            v.assert_stopped(what)
            os.kill(v.pid, signal.SIGCONT)
            v.ticks()
            time.sleep(0.3)
            assert "T" not in states(v.pid), what + ": stopped again: " + states(v.pid)
            # the held one and ours (Python runs its handler once for both
            # when they come before its loop looks)
            assert v.ticks()[1] in (1, 2), what + ": SIGCONTs the victim got"
        finally:
            v.kill()
            shutil.rmtree(tmp, ignore_errors=True)
