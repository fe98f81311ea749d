# SPDX-License-Identifier: BSD-2-Clause
"""Drive proftrace against victim programs and compare with their ground truth.

A victim prints "ready <pid>" and waits for a line on stdin; proftrace is
started on that pid; once it prints "proftrace: attached" the victim is told
to go, runs a known number of steps, writes what it measured itself (JSON) and
exits; proftrace then stops by itself and writes summary.json.
"""
import json
import os
import select
import signal
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROFTRACE = os.path.abspath(os.environ.get("PT_PROFTRACE", os.path.join(ROOT, "proftrace")))
VICTIMS = os.path.abspath(os.environ.get("PT_VICTIMS", os.path.join(ROOT, ".output", "victims")))
AGENT = os.path.abspath(os.environ.get("PT_AGENT", os.path.join(ROOT, ".output",
                                                                   "libproftrace_agent.so")))


def with_agent(env):
    """env with the Python agent preloaded, as `eval "$(proftrace env)"`
    starts a server."""
    if not os.access(AGENT, os.R_OK):
        raise Skip("no agent at %s (make builds it)" % AGENT)
    env = dict(env)
    env["LD_PRELOAD"] = AGENT
    return env

# proftrace's interval for a call (BPF entry timestamp to BPF return
# timestamp) lies inside the call-site interval the victim measures around
# the call and contains the interval it measures inside the function: the
# clock reads are ordered on one CLOCK_MONOTONIC. CLOCK_SLACK_NS per call only
# absorbs the clock's cross-CPU consistency (TSC sync, ~100 ns); it is not an
# overhead allowance, so these checks hold on a loaded machine too.
CLOCK_SLACK_NS = 1000


class Skip(Exception):
    pass


class Proc:
    """A child process with line-oriented stdout/stderr reading and deadlines."""

    def __init__(self, argv, stdin=True, stdout=True, stderr=False, env=None):
        self.argv = argv
        self.p = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE if stderr else None,
            env=env,
        )
        self.lines = {"out": [], "err": []}
        self.buf = {}

    def _stream(self, which):
        return self.p.stdout if which == "out" else self.p.stderr

    def _readline(self, which, deadline):
        """One line, or None at EOF/deadline. Reads the fd directly: a
        buffered file would hide a second line from select()."""
        buf = self.buf.setdefault(which, b"")
        fd = self._stream(which).fileno()
        while b"\n" not in buf:
            r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                self.buf[which] = buf
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                self.buf[which] = b""
                return buf.decode(errors="replace") if buf else None
            buf += chunk
        line, _, rest = buf.partition(b"\n")
        self.buf[which] = rest
        return line.decode(errors="replace")

    def wait_line(self, prefix, which="out", timeout=20.0):
        """Read lines until one starts with prefix; return it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self._readline(which, deadline)
            if line is None:
                break
            self.lines[which].append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(
            "%s: no line starting with %r within %.0fs; got:\n  %s"
            % (os.path.basename(self.argv[0]), prefix, timeout, "\n  ".join(self.lines[which][-20:]))
        )

    def send(self, text):
        self.p.stdin.write(text.encode())
        self.p.stdin.flush()

    def rest(self, which):
        f = self._stream(which)
        data = (self.buf.pop(which, b"") + f.read()).decode(errors="replace")
        self.lines[which].extend(data.splitlines())
        return "\n".join(self.lines[which])

    def wait(self, timeout=60.0):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise AssertionError("%s did not exit within %.0fs" % (self.argv[0], timeout))

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def victim(name="victim_engine", *args, env=None):
    """Start a victim and wait for its "ready PID" line. name is a built
    victim's name, or a whole command (list) such as [python, script]."""
    cmd = list(name) if isinstance(name, (list, tuple)) else [os.path.join(VICTIMS, name)]
    v = Proc(cmd + [str(a) for a in args], env=env)
    line = v.wait_line("ready ")
    v.pid = int(line.split()[1])
    return v


def write_conf(tmp, text):
    path = os.path.join(tmp, "targets.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


def proftrace(pid, conf, out, *extra):
    argv = [PROFTRACE, "-p", str(pid), "--targets", conf, "-o", out] + list(extra)
    return Proc(argv, stdin=False, stdout=True, stderr=True)


def proftrace_done(pt, timeout=60):
    """proftrace's exit once the run ended: its stderr (exit 0 asserted)."""
    rc = pt.wait(timeout)
    err = pt.rest("err")
    assert rc == 0, "proftrace exit %d:\n%s" % (rc, err)
    return err


def stop(*procs):
    """Kill what is still running (a test's finally)."""
    for p in procs:
        if p:
            p.kill()


def read_run(out, truth_path=None):
    """summary.json of output folder out (its "_out" set), and with
    truth_path, (summary, the victim's own truth)."""
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    s["_out"] = out
    if truth_path is None:
        return s
    with open(truth_path) as f:
        return s, json.load(f)


def run_proftrace(argv, timeout=30):
    """Run proftrace to completion; return (rc, stdout, stderr)."""
    p = subprocess.run([PROFTRACE] + argv, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def profile(conf_text, victim_args=(), victim_name="victim_engine", extra=(), on_attached=None,
            victim_first_args=(), victim_env=None):
    """The whole protocol; returns (summary, truth, proftrace stderr)."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    truth_path = os.path.join(tmp, "truth.json")
    conf = write_conf(tmp, conf_text)
    out = os.path.join(tmp, "out")
    v = victim(victim_name, *victim_first_args, "--truth", truth_path, *victim_args,
               env=victim_env)
    pt = None
    try:
        pt = proftrace(v.pid, conf, out, *extra)
        # the BPF verifier takes seconds on a loaded machine: a bound, not a goal
        pt.wait_line("proftrace: attached", "err", timeout=90)
        if on_attached:
            on_attached(v, pt)
        v.send("go\n")
        assert v.wait(120) == 0, "victim failed"
        err = proftrace_done(pt)
    finally:
        stop(v, pt)
    summary, truth = read_run(out, truth_path)
    return summary, truth, err


def func(summary, symbol):
    rows = [f for f in summary["functions"] if f["symbol"] == symbol]
    assert len(rows) == 1, "want one row for %s, got %d" % (symbol, len(rows))
    return rows[0]


def bucket(summary, name):
    rows = [b for b in summary["buckets"] if b["name"] == name]
    assert len(rows) == 1, "want one bucket %s, got %d" % (name, len(rows))
    return rows[0]


def eq(got, want, what):
    assert got == want, "%s: got %r, want %r" % (what, got, want)


def bracket(got_ms, lower_ns, upper_ns, calls, what):
    """lower <= got <= upper, up to the clock slack per call."""
    assert got_ms is not None, "%s: no value" % what
    slack = calls * CLOCK_SLACK_NS
    got = got_ms * 1e6
    assert lower_ns - slack <= got <= upper_ns + slack, \
        "%s: got %.3f ms, outside the ground truth [%.3f, %.3f] ms" % (
            what, got_ms, lower_ns / 1e6, upper_ns / 1e6)


def within(got_ms, truth, calls, what):
    """A total against a victim truth entry {total_ns (inside), outer_ns (around)}."""
    bracket(got_ms, truth["total_ns"], truth["outer_ns"], calls, what)


def rank(values, q):
    """Nearest-rank quantile, as proftrace defines it."""
    v = sorted(values)
    k = max(1, -(-int(round(q * len(v) * 1e9)) // int(1e9)))
    return v[min(k, len(v)) - 1]


def bpf_progs():
    """Names of loaded BPF programs (bpftool), to check nothing is left."""
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, timeout=20)
    if p.returncode != 0:
        raise Skip("bpftool prog show failed: %s" % p.stderr.decode().strip())
    return [x.get("name", "") for x in json.loads(p.stdout or b"[]")]


def helper_segment(pid, name="proftrace-py"):
    """/proc/PID/fd/N of the helper's segment in pid, a memfd named name
    (shim/memseg.h: no file in /dev/shm), or None."""
    want = "/memfd:%s (deleted)" % name
    d = "/proc/%d/fd" % pid
    try:
        fds = os.listdir(d)
    except OSError:
        return None
    for fd in sorted(fds, key=int):
        try:
            if os.readlink(os.path.join(d, fd)) == want:
                return os.path.join(d, fd)
        except OSError:
            continue
    return None


def host_steal_ms():
    """Time the hypervisor took from this VM's CPUs (all of them), from
    /proc/stat, in ms. A thread's CPU time leaves it out (the scheduler's
    task clock does not run during steal) but a 1 kHz sample timer keeps
    ticking through a steal shorter than its period: over a window,
    sampled on-CPU time may exceed a thread's own CPU time by up to what
    was stolen meanwhile. Sampled wall time holds it (late_ms)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    hz = os.sysconf("SC_CLK_TCK")
    return int(fields[8]) * 1000.0 / hz if len(fields) > 8 else 0.0


def late_ms(s):
    """What sampled wall time may miss of a run's steal: a steal that
    delayed a thread's first sample after a switch in is counted from a
    whole period left (bpf/sampleclock.h), half a period off at most; one
    period for each late sample is the bound used."""
    sp = s["meta"]["sampling"]
    return sp["late_samples"] * sp["period_ns"] / 1e6


def python_include(python):
    """The C headers' folder of interpreter python (sysconfig's include)."""
    p = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                       capture_output=True, timeout=30)
    inc = p.stdout.decode().strip()
    if p.returncode != 0 or not os.path.exists(os.path.join(inc, "Python.h")):
        raise Skip("no Python.h for %s (%s)" % (python, inc or p.stderr.decode().strip()))
    return inc


def build_pyext(python, name, outdir, cflags=("-O1",)):
    """tests/victims/pyext/NAME.c built against python's headers into
    OUTDIR/NAME.so (importable as NAME with OUTDIR on sys.path); its path."""
    so = os.path.join(outdir, name + ".so")
    cc = subprocess.run(["gcc", "-shared", "-fPIC"] + list(cflags) +
                        ["-I", python_include(python), "-o", so,
                         os.path.join(ROOT, "tests", "victims", "pyext", name + ".c")],
                        capture_output=True, timeout=60)
    eq(cc.returncode, 0, "building %s for %s: %s" % (name, python, cc.stderr.decode()))
    return so


# As a distribution builds an extension: -O2, no frame pointers (the
# unwinder needs .eh_frame, kept by default), not stripped (.symtab names
# ptnative's static functions).
PTNATIVE_CFLAGS = ("-O2", "-fomit-frame-pointer")


def build_ptnative(python, outdir):
    """tests/victims/pyext/ptnative.c for python: OUTDIR/ptnative.so."""
    return build_pyext(python, "ptnative", outdir, PTNATIVE_CFLAGS)
