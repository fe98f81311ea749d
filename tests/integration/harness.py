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

# Per call, proftrace's interval (BPF entry timestamp to BPF return timestamp)
# contains the victim's own interval plus the probe's exit path on entry and
# the uretprobe trampoline on return: ~1-3 us measured on this VM kind
# (bench/run.py), with scheduling noise on 2 vCPUs. 20 us per call bounds it
# with margin; steps are milliseconds long, so this is still a tight check.
PER_CALL_TOL_NS = 20_000


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

    def _stream(self, which):
        return self.p.stdout if which == "out" else self.p.stderr

    def wait_line(self, prefix, which="out", timeout=20.0):
        """Read lines until one starts with prefix; return it."""
        f = self._stream(which)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([f], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                break
            line = f.readline()
            if not line:
                break
            line = line.decode(errors="replace").rstrip("\n")
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
        data = f.read().decode(errors="replace")
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


def victim(name="victim_engine", *args):
    v = Proc([os.path.join(VICTIMS, name)] + [str(a) for a in args])
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


def run_proftrace(argv, timeout=30):
    """Run proftrace to completion; return (rc, stdout, stderr)."""
    p = subprocess.run([PROFTRACE] + argv, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def profile(conf_text, victim_args=(), victim_name="victim_engine", extra=(), on_attached=None):
    """The whole protocol; returns (summary, truth, proftrace stderr)."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    truth_path = os.path.join(tmp, "truth.json")
    conf = write_conf(tmp, conf_text)
    out = os.path.join(tmp, "out")
    v = victim(victim_name, "--truth", truth_path, *victim_args)
    pt = None
    try:
        pt = proftrace(v.pid, conf, out, *extra)
        pt.wait_line("proftrace: attached", "err")
        if on_attached:
            on_attached(v, pt)
        v.send("go\n")
        assert v.wait(120) == 0, "victim failed"
        rc = pt.wait(60)
        err = pt.rest("err")
        assert rc == 0, "proftrace exit %d:\n%s" % (rc, err)
    finally:
        v.kill()
        if pt:
            pt.kill()
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    with open(truth_path) as f:
        truth = json.load(f)
    summary["_out"] = out
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


def close_ms(got_ms, truth_ns, calls, what, per_call_ns=PER_CALL_TOL_NS):
    """proftrace's total vs the victim's own total: within per-call overhead."""
    tol = calls * per_call_ns / 1e6
    want = truth_ns / 1e6
    assert got_ms is not None, "%s: no value" % what
    assert abs(got_ms - want) <= tol, "%s: got %.3f ms, truth %.3f ms, tolerance %.3f ms" % (
        what, got_ms, want, tol)


def bpf_progs():
    """Names of loaded BPF programs (bpftool), to check nothing is left."""
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, timeout=20)
    if p.returncode != 0:
        raise Skip("bpftool prog show failed: %s" % p.stderr.decode().strip())
    return [x.get("name", "") for x in json.loads(p.stdout or b"[]")]
