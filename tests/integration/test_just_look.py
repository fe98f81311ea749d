# SPDX-License-Identifier: BSD-2-Clause
"""`proftrace -p PID` with no targets file ("just look", as py-spy record
is used), against tests/victims/pylines.py's per-line ground truth.

pylines' work() has lines of known time: a 3 ms spin in its own frame, a
1 ms spin in spin() (a callee), a 2 ms spin in spin() two calls down
(helper -> inner -> spin), a 2 ms sleep and a cheap line; the victim
measures each itself (see its docstring). Without a targets file nothing
is probed: every thread is sampled at 1 kHz and the report ranks the
functions and lines by their own (self) time. What is checked:

- the files py-spy users expect (flame.svg, stacks.folded, profile.pb.gz)
  and lines.txt and report.md with the top functions and lines;
- summary.json's `top`: work()'s total time against the truth (2%, the
  reasoning of test_sampling.py's TOTAL_REL), and the self time of work()
  and spin() split as the truth says: spin()'s own time is the spin1 and
  helper lines' time, work()'s own time the rest of its lines (3
  percentage points of work()'s wall time, test_sampling.py's SHARE_PP);
  on a VM, on-CPU times also allow the steal measured around the run and
  wall times what late samples may miss of it (test_sampling.py says why);
- lines.txt's work() block: the per-line shares of test_sampling.py;
- -o x.svg / x.folded / --format pprof write that one file only, --rate
  sets the rate, and a process without CPython is refused (exit 2).
"""
import gzip
import json
import os
import signal
import tempfile
import xml.etree.ElementTree as ET

from harness import PROFTRACE, Proc, eq, host_steal_ms, late_ms, proftrace_done, stop, victim
import test_sampling as ts

SHARE_PP = ts.SHARE_PP
TOTAL_REL = ts.TOTAL_REL


def look(python, extra=(), seconds=3.0):
    """pylines under python, proftrace -p PID with extra arguments and no
    targets file, stopped with SIGINT while the victim still lives.
    Returns (output folder or file, truth, proftrace stderr); the truth's
    "_steal_ms" is the host's steal around the run."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    truth_path = os.path.join(tmp, "truth.json")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # as a server that was started without anything
    v = victim([python, ts.VICTIM], "--truth", truth_path, "--seconds", seconds, "--hold",
               env=env)
    pt = None
    steal0 = host_steal_ms()
    try:
        argv = [PROFTRACE, "-p", str(v.pid)] + [
            a.replace("@TMP", tmp) for a in extra]
        if "-o" not in extra:
            argv += ["-o", os.path.join(tmp, "out")]
        pt = Proc(argv, stdin=False, stdout=True, stderr=True)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        v.wait_line("done", timeout=seconds + 60)
        pt.p.send_signal(signal.SIGINT)
        err = proftrace_done(pt)
        v.send("exit\n")
        assert v.wait(30) == 0, "victim failed"
    finally:
        stop(v, pt)
    with open(truth_path) as f:
        t = json.load(f)
    t["_steal_ms"] = host_steal_ms() - steal0
    return tmp, t, err


def top_fn(s, name, t):
    rows = [x for x in s["top"]["functions"] if x["function"] == name and x["file"] == t["file"]]
    assert len(rows) == 1, "top.functions: %d rows for %s: %r" % (
        len(rows), name, [x["function"] for x in s["top"]["functions"]])
    return rows[0]


def top_line(s, name, line):
    rows = [x for x in s["top"]["lines"] if x["function"] == name and x["line"] == line]
    assert len(rows) == 1, "top.lines: %d rows for %s:%d" % (len(rows), name, line)
    return rows[0]


def check_look(python, label):
    # Python frames only (--no-native): the truth is per Python
    # function and line, whose self time includes the C it calls
    # (time.thread_time's clock_gettime); with native frames that time is
    # the C functions' own (test_mixed_stacks)
    tmp, t, err = look(python, ("--no-native",))
    out = os.path.join(tmp, "out")
    for name in ("summary.json", "report.md", "lines.txt", "stacks.folded", "flame.svg",
                 "profile.pb.gz"):
        assert os.path.exists(os.path.join(out, name)), "%s: no %s (stderr:\n%s)" % (
            label, name, err)
    assert not os.path.exists(os.path.join(out, "trace.json"))
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    s["_out"] = out
    m = s["meta"]
    eq(m["mode"], "sampling", "meta.mode")
    eq(m["targets_file"], None, "meta.targets_file")
    eq(m["step_probe"], None, "meta.step_probe")
    eq(s["functions"], [], "functions (nothing probed)")
    eq(s["health"]["probes_requested"], 0, "probes requested")
    eq(m["sampling"]["hz"], 1000, "default rate")
    eq(m["sampling"]["lost_samples"], 0, "lost samples")

    # work(): its total as the victim measured it
    w = top_fn(s, "work", t)
    eq(w["first_line"], t["first_line"], "work first line")
    tw = t["work"]["wall_ns"] / 1e6
    steal = t["_steal_ms"]
    vm = " (host steal %.0f ms, late samples %d, %.0f ms)" % (
        steal, m["sampling"]["late_samples"], m["sampling"]["late_ms"])
    assert abs(w["total"]["wall_ms"] - tw) <= TOTAL_REL * tw + late_ms(s), \
        "%s: work() total wall %.1f ms, truth %.1f ms%s" % (label, w["total"]["wall_ms"], tw, vm)
    tcpu = t["work"]["cpu_ns"] / 1e6
    assert abs(w["total"]["on_cpu_ms"] - tcpu) <= TOTAL_REL * tw + steal, \
        "%s: work() total on-CPU %.1f ms, truth %.1f ms%s" % (
            label, w["total"]["on_cpu_ms"], tcpu, vm)
    # self time: spin() holds the spin1 and helper lines' CPU time, work()
    # the rest of its own (its in-frame loop, the sleep, the cheap line).
    # On-CPU time: a thread preempted in one of the victim's cpu() reads
    # (system calls, where a loaded machine's scheduler likes to switch)
    # waits with work() innermost, off the CPU, but inside the spin lines'
    # wall time of the truth.
    lt = t["lines"]
    sp = top_fn(s, "spin", t)
    want_spin = (lt["spin1"]["cpu_ns"] + lt["helper"]["cpu_ns"]) / 1e6
    assert abs(sp["self"]["on_cpu_ms"] - want_spin) <= SHARE_PP / 100 * tw + steal, \
        "%s: spin() self on-CPU %.1f ms, truth %.1f ms (work %.1f ms)%s" % (
            label, sp["self"]["on_cpu_ms"], want_spin, tw, vm)
    # spin() calls no Python function: all its time is its own
    eq(sp["self"], sp["total"], "spin() self and total")
    want_work = tcpu - want_spin
    assert abs(w["self"]["on_cpu_ms"] - want_work) <= SHARE_PP / 100 * tw + steal, \
        "%s: work() self on-CPU %.1f ms, truth %.1f ms%s" % (
            label, w["self"]["on_cpu_ms"], want_work, vm)
    # per line: the in-frame loop's CPU time and the sleep are work()'s own
    r = top_line(s, "work", lt["spin3"]["line"])
    assert abs(r["self"]["on_cpu_ms"] - lt["spin3"]["cpu_ns"] / 1e6) <= \
        SHARE_PP / 100 * tw + steal, "%s: work() spin3 line self on-CPU %.1f ms, truth %.1f ms%s" % (
            label, r["self"]["on_cpu_ms"], lt["spin3"]["cpu_ns"] / 1e6, vm)
    r = top_line(s, "work", lt["sleep"]["line"])
    assert abs(r["self"]["wall_ms"] - lt["sleep"]["wall_ns"] / 1e6) <= SHARE_PP / 100 * tw, \
        "%s: work() sleep line self %.1f ms, truth %.1f ms" % (
            label, r["self"]["wall_ms"], lt["sleep"]["wall_ns"] / 1e6)
    r = top_line(s, "work", lt["sleep"]["line"])
    assert r["self"]["off_cpu_ms"] >= 0.9 * r["self"]["wall_ms"], ("sleep off the CPU", r)
    # the spin1 line's CPU time is spin()'s own: work() at that line has
    # (next to) none
    sl = [x for x in s["top"]["lines"]
          if x["function"] == "work" and x["line"] == lt["spin1"]["line"]]
    assert not sl or sl[0]["self"]["on_cpu_ms"] <= SHARE_PP / 100 * tw, (label, sl)
    # ranked by self on-CPU time
    cpu = [x["self"]["on_cpu_ms"] for x in s["top"]["functions"]]
    assert cpu == sorted(cpu, reverse=True), cpu
    assert abs(sum(x["self"]["on_cpu_ms"] for x in s["top"]["functions"]) -
               m["sampling"]["on_cpu_ms"]) <= 0.05 * m["sampling"]["on_cpu_ms"], \
        "self on-CPU times of the listed functions add up to (nearly) all sampled"

    # lines.txt: work()'s block with the per-line shares of a `lines` run
    els = [x for x in s["lines"] if x["function"] == "work" and x["file"] == t["file"]]
    eq(len(els), 1, "work() among the top functions' lines")
    eq(els[0]["probe"], None, "no probe: a top function")
    eq(els[0]["timing"], "sampled", "timing")
    one = dict(s, lines=els, _steal_ms=steal)
    ts.check_shares(one, t, label)
    with open(os.path.join(out, "lines.txt")) as f:
        txt = f.read()
    assert "Function: work at line %d" % t["first_line"] in txt, txt[:600]
    assert "Calls: not counted (no targets file names this function" in txt, txt[:600]
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    assert "targets none (stacks sampled only)" in md, md[:600]
    assert "## Top functions (sampled)" in md and "## Top lines (sampled)" in md, md
    assert "| `work` (`pylines.py`:%d) |" % t["first_line"] in md, md
    assert "## Steps" not in md and "## Functions" not in md, md
    with open(os.path.join(out, "stacks.folded")) as f:
        rows = f.read().splitlines()
    total = sum(int(r.rpartition(" ")[2]) for r in rows)
    assert abs(total - m["sampling"]["wall_ms"] * 1000) <= len(rows), (total, m["sampling"])
    root = ET.parse(os.path.join(out, "flame.svg")).getroot()
    assert root.tag.endswith("svg"), root.tag
    with gzip.open(os.path.join(out, "profile.pb.gz")) as f:
        assert len(f.read()) > 100


def test_just_look_debian_py311():
    check_look(ts.debian_python(), "debian-3.11")


def test_just_look_py312():
    check_look(ts.pyenv_python(12), "3.12")


def test_just_look_one_file():
    """-o x.svg writes that one file (and nothing else there), at --rate;
    -o x.folded the folded stacks; --format pprof any name."""
    py = ts.debian_python()
    tmp, _, err = look(py, ("-o", "@TMP/flame/x.svg", "--rate", "200"), seconds=1.0)
    eq(sorted(os.listdir(os.path.join(tmp, "flame"))), ["x.svg"], "files written")
    assert "proftrace: wrote %s" % os.path.join(tmp, "flame", "x.svg") in err, err
    root = ET.parse(os.path.join(tmp, "flame", "x.svg")).getroot()
    assert root.tag.endswith("svg"), root.tag
    with open(os.path.join(tmp, "flame", "x.svg")) as f:
        assert "sampled at 200 Hz" in f.read()
    tmp, _, _ = look(py, ("-o", "@TMP/f/x.folded"), seconds=1.0)
    eq(os.listdir(os.path.join(tmp, "f")), ["x.folded"], "files written")
    with open(os.path.join(tmp, "f", "x.folded")) as f:
        rows = f.read().splitlines()
    assert rows and all(r.rpartition(" ")[2].isdigit() for r in rows), rows[:3]
    assert any(";work (pylines.py:" in r for r in rows), rows[:3]
    tmp, _, _ = look(py, ("--format", "pprof", "-o", "@TMP/p/profile.out"), seconds=1.0)
    eq(os.listdir(os.path.join(tmp, "p")), ["profile.out"], "files written")
    with gzip.open(os.path.join(tmp, "p", "profile.out")) as f:
        assert len(f.read()) > 100


def test_just_look_no_python():
    """A process without CPython has nothing to sample: exit 2, and why."""
    v = victim("victim_engine")
    try:
        p = Proc([PROFTRACE, "-p", str(v.pid), "-d", "1"], stdin=False, stderr=True)
        rc = p.wait(60)
        err = p.rest("err")
    finally:
        stop(v)
    eq(rc, 2, "exit code")
    assert "runs no CPython: without a targets file there is nothing to sample" in err, err
