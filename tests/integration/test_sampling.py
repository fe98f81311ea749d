# SPDX-License-Identifier: BSD-2-Clause
"""Stack sampling against per-line ground truth, on every CPython on the machine.

tests/victims/pylines.py runs work(), whose lines take known, different
times (a 3 ms spin in its own frame, a 1 ms spin in a callee, a 2 ms spin
two calls down, a 2 ms sleep, a cheap line), and measures each line's wall
and CPU time itself (see its docstring). proftrace attaches with
`lines py:pylines::work` at the default 1000 Hz; the run is stopped with
SIGINT while the victim is still alive (--hold), so every code object can
still be read when the last records arrive.

Tolerances (each states what it is made of; none absorbs machine load:
the truth is what the victim measured on this machine, load included):

- SHARE_PP, 3 percentage points (the issue's aim at 1 kHz over 5 s): a
  line's sampled wall time is its on-CPU samples x 1 ms plus its off-CPU
  intervals, measured exactly from sched_switch; only how the N on-CPU
  samples split between lines is estimated. Counting them as a binomial
  draw (the worst case: cpu-clock samples are periodic in CPU time, which
  errs less), a line holding a fraction q of them is off by
  sqrt(N q (1-q)) samples, so its share of the function's W ms of wall
  time by at most 0.5 sqrt(N) / W <= 0.5 / sqrt(W) (N <= W: one sample per
  on-CPU ms). Here W is ~6000 ms (3.5 s of one worker, 2.5 s of the late
  one): sigma <= 0.65 pp and 3 pp is 4.6 sigma; at 1 kHz over 5 s of one
  thread, 0.7 pp and 4 sigma. The on-CPU and off-CPU parts of each line's
  share are held to the same 3 pp.
- TOTAL_REL, 2%: work()'s sampled wall (and on-CPU) time vs the victim's.
  The off-CPU part is exact and the number of samples in a stretch of CPU
  time is fixed to within one (periodic timer), so the error is one
  sample's quantization at each entry and exit of work(): about
  sqrt(2 x 500 calls / 6) ms, 0.2% of 6000 ms. The victim's own clock
  reads at work()'s first line are outside its truth but inside work()
  (<= 0.1% here, preemptions included). 2% is ~10 sigma of that, while a
  thread losing 200 ms (3%) still fails.
- THREAD_WALL: a thread's wall time vs the part of its life inside the
  attach window, 2% of the window + 20 ms. The window starts when
  proftrace starts its clock, a few ms before the sampler is attached;
  the thread's life is measured from its Python function's first to last
  statement (the OS thread lives slightly longer); on-CPU time is whole
  samples (at most one period off per thread).
- On a VM, the on/off split and on-CPU totals may be off by up to the
  time the hypervisor took from the VM's CPUs during the run (steal,
  /proc/stat): the victim's CPU clock does not run then, the sample timer
  does through a steal shorter than its period. That time is measured
  around each run and added, and said. Wall times hold steal: a sample
  the hypervisor held past its period counts the periods it missed, off
  the CPU (bpf/sampleclock.h); what they may still miss is a period per
  late sample (harness.late_ms), allowed.
"""
import glob
import json
import os
import re
import signal
import subprocess
import tempfile
import xml.etree.ElementTree as ET

from harness import (PROFTRACE, ROOT, Skip, eq, func, host_steal_ms, late_ms, proftrace,
                     proftrace_done,
                     read_run, stop, victim, with_agent, write_conf)

PYENV = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
VICTIM = os.path.join(ROOT, "tests", "victims", "pylines.py")
DEBIAN_PY = "/usr/bin/python3.11"
LINES_CONF = "lines py:pylines::work\n"
TAGS = ("spin3", "spin1", "helper", "sleep", "cheap")

SHARE_PP = 3.0          # per-line share of work()'s wall time, percentage points
TOTAL_REL = 0.02        # work()'s sampled wall time, relative
THREAD_WALL_REL = 0.02  # per-thread wall vs its life in the window: 2% of the window ...
THREAD_WALL_MS = 20.0   # ... + 20 ms

# Per-thread wall time minus the thread's life in the window (ms), for the log.
THREAD_DIFFS = {}


def pyenv_python(minor):
    hits = sorted(glob.glob(os.path.join(PYENV, "versions", "3.%d.*" % minor, "bin", "python3")))
    if not hits:
        raise Skip("no pyenv CPython 3.%d under %s" % (minor, PYENV))
    return hits[-1]


def debian_python():
    if not os.path.exists(DEBIAN_PY):
        raise Skip("no %s" % DEBIAN_PY)
    return DEBIAN_PY


def victim_env():
    """Our environment, without a PYTHONPERFSUPPORT that would change
    timing, with the Python agent preloaded (py: calls counted exactly on
    every version, as `eval "$(proftrace env)"` starts a server)."""
    env = dict(os.environ)
    env.pop("PYTHONPERFSUPPORT", None)
    return with_agent(env)


def run_lines(python, conf=LINES_CONF, seconds=3.5, args=("--late-thread",)):
    """Attach to pylines.py, let it run, stop proftrace with SIGINT while
    the victim still lives, then let the victim exit. Returns (summary with
    "_out", truth, proftrace stderr)."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    truth_path = os.path.join(tmp, "truth.json")
    conf_path = write_conf(tmp, conf)
    out = os.path.join(tmp, "out")
    v = victim([python, VICTIM], "--truth", truth_path, "--seconds", seconds, "--hold", *args,
               env=victim_env())
    pt = None
    steal0 = host_steal_ms()
    try:
        pt = proftrace(v.pid, conf_path, out)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        v.wait_line("done", timeout=seconds + 60)
        pt.p.send_signal(signal.SIGINT)
        err = proftrace_done(pt)
        v.send("exit\n")
        assert v.wait(30) == 0, "victim failed"
    finally:
        stop(v, pt)
    s, t = read_run(out, truth_path)
    s["_steal_ms"] = host_steal_ms() - steal0
    return s, t, err


def lines_elem(s):
    eq(len(s["lines"]), 1, "lines elements")
    return s["lines"][0]


def by_line(elem):
    return {x["line"]: x for x in elem["lines"]}


def thread(s, tid):
    rows = [x for x in s["meta"]["sampling"]["threads"] if x["tid"] == tid]
    assert len(rows) == 1, "thread %d: %d rows in meta.sampling.threads %r" % (
        tid, len(rows), [x["tid"] for x in s["meta"]["sampling"]["threads"]])
    return rows[0]


def expected_wall_ms(s, row):
    """The part of a thread's life (truth row) inside the attach window."""
    w0 = s["meta"]["start_unix_ns"]
    w1 = w0 + s["meta"]["duration_s"] * 1e9
    a = max(w0, row["start_unix_ns"])
    b = min(w1, row["end_unix_ns"] if row["end_unix_ns"] is not None else w1)
    return max(0.0, (b - a) / 1e6)


def check_thread_wall(s, t, name):
    row = t["per_thread"][name]
    th = thread(s, row["tid"])
    want = expected_wall_ms(s, row)
    # + what a late sample may miss of the hypervisor's steal (harness.late_ms)
    tol = THREAD_WALL_REL * s["meta"]["duration_s"] * 1000 + THREAD_WALL_MS + late_ms(s)
    THREAD_DIFFS.setdefault(name, []).append(th["wall_ms"] - want)
    sm = s["meta"]["sampling"]
    if abs(th["wall_ms"] - want) > tol:
        folded = os.path.join(s["_out"], "stacks.folded")
        with open(folded, encoding="utf-8") as f:
            rows = [ln.rstrip("\n") for ln in f if "(tid %d)" % row["tid"] in ln.split(";")[0]]
        raise AssertionError(
            "thread %s (tid %d): wall %.1f ms, its life in the window %.1f ms (tolerance %.1f "
            "ms; off-CPU intervals dropped as a thread without Python's %d, kept after a later "
            "look %d, switch-ins not traced %d; unreadable stacks %d, lost %d; see %s); its "
            "stacks:\n  %s" % (
                name, row["tid"], th["wall_ms"], want, tol, sm["off_cpu_not_python"],
                sm["off_cpu_found_late"], sm["off_cpu_switch_in_unseen"],
                sm["unreadable_stacks"], sm["lost_samples"], folded, "\n  ".join(rows)))
    return th


def check_shares(s, t, label):
    """Each tagged line's share of work()'s wall time, and its on/off-CPU
    split, against the truth. Returns the largest share error (pp)."""
    el = lines_elem(s)
    rows = by_line(el)
    tw = t["work"]["wall_ns"] / 1e6
    fw = el["wall_ms"]
    assert fw > 0, el
    worst = 0.0
    table = []
    # time the hypervisor took is on-CPU to a sample, off-CPU to the
    # victim's clocks (harness.host_steal_ms): allowed in the split
    steal_pp = 100.0 * s.get("_steal_ms", 0) / fw
    for tag in TAGS:
        tl = t["lines"][tag]
        r = rows[tl["line"]]
        want = 100.0 * tl["wall_ns"] / 1e6 / tw
        got = 100.0 * r["wall_ms"] / fw
        assert abs(got - 100.0 * r["share"]) < 0.01, (r, fw)
        # the on/off split, as shares of the function's wall time (the
        # same binomial bound: the off-CPU part is exact)
        want_on = 100.0 * tl["cpu_ns"] / 1e6 / tw
        got_on = 100.0 * r["on_cpu_ms"] / fw
        want_off = 100.0 * (tl["wall_ns"] - tl["cpu_ns"]) / 1e6 / tw
        got_off = 100.0 * r["off_cpu_ms"] / fw
        table.append("  %-6s line %3d  share truth %5.1f%% proftrace %5.1f%%  "
                     "on-CPU %5.1f/%5.1f  off-CPU %5.1f/%5.1f" % (
                         tag, tl["line"], want, got, want_on, got_on, want_off, got_off))
        worst = max(worst, abs(got - want), abs(got_on - want_on), abs(got_off - want_off))
        assert abs(got - want) <= SHARE_PP, "%s: line %s (%d) share %.2f%%, truth %.2f%%\n%s" % (
            label, tag, tl["line"], got, want, "\n".join(table))
        assert abs(got_on - want_on) <= SHARE_PP + steal_pp, \
            "%s: line %s on-CPU %.2f%% of work(), truth %.2f%%\n%s" % (
                label, tag, got_on, want_on, "\n".join(table))
        assert abs(got_off - want_off) <= SHARE_PP + steal_pp, \
            "%s: line %s off-CPU %.2f%% of work(), truth %.2f%%\n%s" % (
                label, tag, got_off, want_off, "\n".join(table))
    # lines that are only clock reads and booking: next to nothing
    tagged = {t["lines"][tag]["line"] for tag in TAGS}
    rest = sum(r["wall_ms"] for ln, r in rows.items() if ln not in tagged)
    assert 100.0 * rest / fw <= SHARE_PP, "%s: untagged lines of work() have %.2f%%\n%s" % (
        label, 100.0 * rest / fw, "\n".join(table))
    # the sleep line is off the CPU, the spin lines are on it. A 2 ms sleep
    # costs tens of us of CPU (the victim measured ~1%); the spin lines
    # spend only waits for a CPU or the GIL off it, which the truth
    # above has too, so here only: mostly on it in the truth's proportion.
    sl = rows[t["lines"]["sleep"]["line"]]
    assert sl["off_cpu_ms"] >= 0.9 * sl["wall_ms"], "%s: sleep line %r" % (label, sl)
    for tag in ("spin3", "spin1", "helper"):
        r = rows[t["lines"][tag]["line"]]
        tl = t["lines"][tag]
        assert r["samples"] > 0 and r["on_cpu_ms"] > 0, "%s: %s line never on the CPU" % (label, tag)
        assert r["on_cpu_ms"] / r["wall_ms"] >= tl["cpu_ns"] / tl["wall_ns"] - 0.15, \
            "%s: %s line on-CPU %.0f%%, truth %.0f%%" % (
                label, tag, 100 * r["on_cpu_ms"] / r["wall_ms"], 100 * tl["cpu_ns"] / tl["wall_ns"])
    print("%s: work() %d calls, truth %.0f ms, sampled %.0f ms (%d samples); "
          "max share error %.2f pp\n%s" % (label, t["work"]["calls"], tw, fw, el["samples"], worst,
                                           "\n".join(table)))
    return worst


# a Python frame's label: "qualname (file.py:line)"; a native one's
# "symbol (module)" or "module+0xoff" (docs/targets.md)
PY_LABEL = re.compile(r" \([^()]*:[0-9]+\)$")


def innermost_python(frames):
    """The innermost Python frame of a stacks.folded line's frames; None:
    none."""
    return next((x for x in reversed(frames) if PY_LABEL.search(x)), None)


def check_folded(s, t):
    out = s["_out"]
    sm = s["meta"]["sampling"]
    eq(sm["outputs"], {"folded": "stacks.folded", "svg": "flame.svg",
                       "svg_wall": "flame-wall.svg"}, "meta.sampling.outputs")
    total = 0
    n = 0
    sleep_off = 0
    helper_seen = False
    base = os.path.basename(VICTIM)
    sleep_frame = "work (%s:%d)" % (base, t["lines"]["sleep"]["line"])
    helper_frame = "work (%s:%d);helper (%s:" % (base, t["lines"]["helper"]["line"], base)
    with open(os.path.join(out, "stacks.folded")) as f:
        for raw in f:
            line = raw.rstrip("\n")
            frames, sep, w = line.rpartition(" ")
            assert sep and frames and w.isdigit(), "stacks.folded: bad line %r" % line
            total += int(w)
            n += 1
            fr = frames.split(";")
            if fr[-1] == "[off-cpu]" and innermost_python(fr) == sleep_frame:
                sleep_off += int(w)
            if helper_frame in frames:
                helper_seen = True
    assert n > 0, "stacks.folded is empty"
    # weights are µs, each line rounded: the sum is wall_ms within 1 µs a line
    assert abs(total - sm["wall_ms"] * 1000) <= n, \
        "stacks.folded: weights sum to %d us, meta.sampling.wall_ms %.3f ms (%d lines)" % (
            total, sm["wall_ms"], n)
    # the sleep line's off-CPU time is an [off-cpu] leaf under it (and
    # under the native frames time.sleep blocked in, native frames on)
    sl = by_line(lines_elem(s))[t["lines"]["sleep"]["line"]]
    assert sleep_off > 0, "no [off-cpu] leaf under %r" % sleep_frame
    assert abs(sleep_off - sl["off_cpu_ms"] * 1000) <= n, (sleep_off, sl)
    assert helper_seen, "no stack through %r" % helper_frame
    # flame.svg is on-CPU time (no [off-cpu] frame), flame-wall.svg all of it
    root = ET.parse(os.path.join(out, "flame.svg")).getroot()
    assert root.tag.endswith("svg"), root.tag
    with open(os.path.join(out, "flame.svg")) as f:
        assert "[off-cpu]" not in f.read(), "flame.svg has off-CPU frames"
    root = ET.parse(os.path.join(out, "flame-wall.svg")).getroot()
    assert root.tag.endswith("svg"), root.tag
    with open(os.path.join(out, "flame-wall.svg")) as f:
        assert "[off-cpu]" in f.read(), "flame-wall.svg has no off-CPU frame"


def check_lines_txt(s, t, exact_calls):
    el = lines_elem(s)
    with open(t["file"]) as f:
        src = f.read().split("\n")
    with open(os.path.join(s["_out"], "lines.txt")) as f:
        txt = f.read().split("\n")
    eq(txt[0], "Timer unit: 1e-06 s", "lines.txt first line")
    assert "Function: work at line %d" % t["first_line"] in txt, txt[:8]
    if exact_calls is not None:
        assert any(x.startswith("Calls: %d (exact)" % exact_calls) for x in txt), txt[:8]
    else:
        assert any(x.startswith("Calls: not counted") for x in txt), txt[:8]
    head = [k for k, x in enumerate(txt) if x.startswith("Line #")]
    eq(len(head), 1, "one table")
    col = txt[head[0]].index("Line Contents")
    pct = txt[head[0]].index("% Time")
    rows = {}
    for x in txt[head[0] + 2:]:
        if not x.strip():
            break
        rows[int(x[:6])] = x
    for ln in range(t["first_line"], t["last_line"] + 1):
        assert ln in rows, "lines.txt: no row for line %d" % ln
        eq(rows[ln][col:], src[ln - 1], "lines.txt text of line %d" % ln)
    for tag in ("spin3", "spin1", "helper", "sleep"):
        r = by_line(el)[t["lines"][tag]["line"]]
        got = float(rows[r["line"]][pct - 2:pct + 6])
        assert abs(got - 100 * r["share"]) <= 0.051, (rows[r["line"]], r)


def check_sampling(s, t, label, exact):
    """Every check of one attach at the default rate; exact: the py: row
    and the lines element count calls exactly (the agent)."""
    sm = s["meta"]["sampling"]
    assert sm is not None, "meta.sampling is null"
    eq(sm["hz"], 1000, "hz (default)")
    eq(sm["period_ns"], 1000000, "period_ns")
    for k in ("lost_samples", "unknown_frames", "threads_failed", "truncated_stacks"):
        eq(sm[k], 0, "meta.sampling." + k)
    # a thread state that cannot be read at one switch (a page not there
    # at that moment: bpf/pysample.bpf.c) keeps its interval, stack
    # unknown; 0 in every run here, once in a while in CI
    assert sm["unreadable_stacks"] <= 2, sm
    eq(sm["samples"], sum(x["samples"] for x in sm["threads"]), "samples over threads")
    eq(sm["samples"], sm["python_samples"] + sm["no_python_frames"] + sm["not_python_thread"],
       "samples split")
    assert abs(sm["wall_ms"] - sm["on_cpu_ms"] - sm["off_cpu_ms"]) < 0.01, sm
    pt = t["per_thread"]
    # threads there at attach (the late thread inherits its sampler)
    assert sm["threads_sampled"] >= len([n for n in pt if n != "late"]), (sm["threads_sampled"], pt)

    # lines element and the py: row
    el = lines_elem(s)
    eq(el["probe"], "py:pylines::work", "lines probe")
    eq(el["file"], t["file"], "lines file")
    eq(el["function"], "work", "lines function")
    eq(el["first_line"], t["first_line"], "first_line")
    eq(el["last_line"], t["last_line"], "last_line")
    eq(el["source_error"], None, "source_error")
    eq([x["line"] for x in el["lines"]], list(range(t["first_line"], t["last_line"] + 1)),
       "one element per line")
    with open(t["file"]) as f:
        src = f.read().split("\n")
    for x in el["lines"]:
        eq(x["text"], src[x["line"] - 1], "text of line %d" % x["line"])
    f = func(s, "work")
    eq(f["kind"], "python", "work kind")
    sp = f["sampled"]
    assert sp is not None and sp["samples"] > 0, f
    for k in ("samples", "on_cpu_ms", "off_cpu_ms", "wall_ms"):
        assert abs(sp[k] - el[k]) < 0.01, (k, sp, el)
    tc = t["work"]["calls"]
    if exact:
        eq(f["timing"], "exact", "work timing")
        eq(f["calls"], tc, "work calls")
        eq(el["timing"], "exact", "lines timing")
        eq(el["calls"], tc, "lines calls")
        # entry to return contains the victim's first-to-last clock read
        assert f["total_ms"] * 1e6 >= t["work"]["wall_ns"] - tc * 1000, (f, t["work"])
        assert f["total_ms"] * 1e6 <= t["work"]["wall_ns"] * (1 + TOTAL_REL), (f, t["work"])
    else:
        eq(f["timing"], "sampled", "work timing")
        for k in ("calls", "total_ms", "mean_ms", "p50_ms", "max_ms"):
            eq(f[k], None, "work " + k)
        eq(el["timing"], "sampled", "lines timing")
        eq(el["calls"], None, "lines calls")

    check_shares(s, t, label)
    # what a sample cost: the walker's own run time per sample, from the
    # kernel's BPF stats of this run (not the bench's constant); a
    # 6-frame walk is 1-2 us (bench), a sample can never be free or cost
    # more than its 1 ms period
    ks = s["overhead"]["kinds"]["sample"]
    eq(ks["source"], "bpf-stats", "%s: sample cost measured in the run" % label)
    assert 100 <= ks["pair_ns"] <= 100000, (label, ks)
    eq(s["overhead"]["hits"]["sample"], sm["samples"], "sample hits")
    check_folded(s, t)
    check_lines_txt(s, t, tc if exact else None)
    assert os.path.exists(os.path.join(s["_out"], "report.md"))

    # threads: alive the whole window, created late, sleeping
    late = pt.get("late")
    if late:
        assert late["calls"] > 0, late
        th = thread(s, late["tid"])
        assert th["samples"] > 0 and th["off_cpu_ms"] > 0, ("late thread sampled", th)
    # Every thread of the victim runs Python. A thread not found in the
    # interpreter's thread list (its first instants, or a search that met
    # the list while another thread was being added) is looked up again
    # after 10 ms (RECHECK_NS in bpf/pysample.bpf.c): at most 10 samples at
    # 1 kHz per such miss; one miss is allowed.
    assert sm["not_python_thread"] <= 10, \
        "%s: %d samples without a Python thread state (late thread: %r); see %s" % (
            label, sm["not_python_thread"], late and thread(s, late["tid"]),
            os.path.join(s["_out"], "stacks.folded"))
    for name in pt:
        check_thread_wall(s, t, name)
    # time the hypervisor took while one of these ran is on-CPU to a
    # sample (harness.host_steal_ms): a loaded CI host charged 196 ms of
    # 3.5 s to the sleeper once; what was stolen, all CPUs, is allowed
    steal = s.get("_steal_ms", 0)
    main = thread(s, pt["main"]["tid"])
    assert main["on_cpu_ms"] <= 0.05 * main["wall_ms"] + steal, \
        ("main thread mostly idle", main, "host steal %.0f ms" % steal)
    sl = thread(s, pt["sleeper"]["tid"])
    # 100 wakeups a second of tens of µs each: well under 5% on the CPU
    assert sl["on_cpu_ms"] <= 0.05 * sl["wall_ms"] + steal, \
        ("sleeper ~all off the CPU", sl, "host steal %.0f ms" % steal)

    print("%s: thread wall - life in window (ms): %s; switch-ins not traced %d, intervals "
          "kept after a later look %d" % (label, ", ".join(
              "%s %+.1f" % (k, v[-1]) for k, v in sorted(THREAD_DIFFS.items()) if k in pt),
              sm["off_cpu_switch_in_unseen"], sm["off_cpu_found_late"]))

    # work()'s sampled time vs the truth
    # samples tick on through a steal shorter than their period, the
    # victim's CPU clock does not (harness.host_steal_ms): what was stolen
    # is allowed on the CPU; wall time holds it, less what late samples
    # may miss (harness.late_ms)
    tw = t["work"]["wall_ns"] / 1e6
    # proftrace's own figure: its window is inside ours (a tick is 10 ms)
    ps = s["meta"]["sampling"]["host_steal_ms"]
    assert ps is not None and 0 <= ps <= steal + 10, (ps, steal)
    assert abs(el["wall_ms"] - tw) <= TOTAL_REL * tw + late_ms(s), \
        "%s: work() sampled wall %.1f ms, truth %.1f ms (host steal %.0f ms, late %.0f ms)" % (
            label, el["wall_ms"], tw, steal, s["meta"]["sampling"]["late_ms"])
    tcpu = t["work"]["cpu_ns"] / 1e6
    assert abs(el["on_cpu_ms"] - tcpu) <= TOTAL_REL * tw + steal, \
        "%s: work() on-CPU %.1f ms, truth %.1f ms (host steal %.0f ms)" % (
            label, el["on_cpu_ms"], tcpu, steal)


def _interp(python, label, exact):
    s, t, _ = run_lines(python)
    assert "late" in t["per_thread"], t["per_thread"]
    check_sampling(s, t, label, exact)
    return s, t


def test_sampling_py38():
    _interp(pyenv_python(8), "3.8", True)


def test_sampling_py39():
    _interp(pyenv_python(9), "3.9", True)


def test_sampling_py310():
    """auto with the agent: every call counted (exact), lines report the
    exact call count, sampling gives the per-line time."""
    s, t = _interp(pyenv_python(10), "3.10", True)
    eq(s["meta"]["python"]["timing"], "exact", "meta.python.timing")


def test_sampling_py311():
    _interp(pyenv_python(11), "3.11", True)


def test_sampling_py312():
    _interp(pyenv_python(12), "3.12", True)


def test_sampling_py313():
    _interp(pyenv_python(13), "3.13", True)


def test_sampling_debian_py311():
    s, _ = _interp(debian_python(), "debian-3.11", True)
    eq(s["meta"]["python"]["path"], DEBIAN_PY, "interpreter in the executable itself")


# --- python_mode ------------------------------------------------------------


def test_python_mode_sampled_py310():
    """sampled on 3.10 (where exact is possible): no frame probe, no counts."""
    s, t, _ = run_lines(pyenv_python(10), "set python_mode sampled\n" + LINES_CONF,
                        seconds=1.0, args=())
    f = func(s, "work")
    eq(f["timing"], "sampled", "work timing")
    eq(f["calls"], None, "work calls")
    assert f["sampled"]["samples"] > 0, f
    el = lines_elem(s)
    eq(el["timing"], "sampled", "lines timing")
    eq(el["calls"], None, "lines calls")
    with open(os.path.join(s["_out"], "lines.txt")) as fh:
        assert "\nCalls: not counted" in fh.read()


def test_python_mode_evalframe_py311():
    """evalframe on 3.11: the frame probe, c-entry-only, with counts. The
    victim calls work() from C (functools.partial), so all calls are seen;
    per-line time is still sampled."""
    s, t, _ = run_lines(pyenv_python(11), "set python_mode evalframe\n" + LINES_CONF,
                        seconds=1.0, args=())
    f = func(s, "work")
    eq(f["timing"], "c-entry-only", "work timing")
    eq(f["calls"], t["work"]["calls"], "work calls (all made from C)")
    assert f["total_ms"] * 1e6 >= t["work"]["wall_ns"] - f["calls"] * 1000, (f, t["work"])
    assert f["sampled"] is not None and f["sampled"]["samples"] > 0, f
    el = lines_elem(s)
    eq(el["timing"], "sampled", "lines timing (c-entry-only counts are not exact)")
    eq(el["calls"], None, "lines calls")


# --- errors and sampling off ----------------------------------------------


BAD = [
    ("set python_mode usdt\n" + LINES_CONF, "usdt"),
    ("set sample_hz 0\n" + LINES_CONF, "sample_hz 0"),
    ("set python_mode sampled\nstep py:pylines::work\n", "python_mode sampled"),
    ("lines native:libc.so*:getppid\n", "lines takes py: probes"),
]


def test_config_errors():
    """Exit code 2 and one line on stderr naming the problem."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    for text, word in BAD:
        conf = write_conf(tmp, text)
        p = subprocess.run([PROFTRACE, "-p", str(os.getpid()), "--targets", conf, "--dry-run"],
                           capture_output=True, timeout=30)
        err = p.stderr.decode(errors="replace")
        eq(p.returncode, 2, "exit code for %r (stderr %r)" % (text, err))
        lines = err.strip().splitlines()
        eq(len(lines), 1, "stderr lines for %r: %r" % (text, err))
        assert word in lines[0], "%r not in %r" % (word, lines[0])


def test_sample_hz_0():
    """Sampling off: meta.sampling null, no sampled outputs."""
    s, t, _ = run_lines(pyenv_python(10), "set sample_hz 0\nstep py:pylines::work\n",
                        seconds=1.0, args=("--no-sleeper",))
    eq(s["meta"]["sampling"], None, "meta.sampling")
    eq(s["lines"], [], "lines")
    for name in ("stacks.folded", "flame.svg", "flame-wall.svg", "lines.txt"):
        assert not os.path.exists(os.path.join(s["_out"], name)), name
    f = func(s, "work")
    eq(f.get("sampled"), None, "functions[].sampled")
    eq(f["timing"], "exact", "timing")
    eq(f["calls"], t["work"]["calls"], "calls")
    eq(s["stats"]["steps"], t["work"]["calls"], "steps")


# --- threads: created late, blocked throughout -------------------------------


def test_thread_blocked_whole_window():
    """A thread that blocks from before attach until after the stop never
    passes through sched_switch while sampled: its whole window is still
    off-CPU wall time ("a line that blocks must get its wall time")."""
    s, t, _ = run_lines(pyenv_python(12), LINES_CONF, seconds=1.0, args=("--blocker",))
    th = check_thread_wall(s, t, "blocker")
    eq(th["samples"], 0, "blocker samples")
    check_thread_wall(s, t, "sleeper")


# --- line_profiler ----------------------------------------------------------

LP_WRAPPER = r'''
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import line_profiler
import pylines
pylines.wall_only()
lp = line_profiler.LineProfiler()
lp.add_function(pylines.work)
# line_profiler traces the thread that enables it: work() runs here, in
# the loop the victim's worker threads run
end = pylines.now() + int(float(sys.argv[2]) * 1e9)
lp.enable_by_count()
calls = 0
while pylines.now() < end:
    pylines.call_work()
    calls += 1
lp.disable_by_count()
st = lp.get_stats()
rows = []
for (fn, first, name), timings in st.timings.items():
    if name == "work":
        rows = [[ln, hits, t * st.unit * 1e3] for ln, hits, t in timings]  # ms
print(json.dumps({"rows": rows, "calls": calls}))
'''


def test_line_profiler_debian_py311():
    """The same workload in process under line_profiler and, separately,
    under proftrace: proftrace's top 3 lines by time are the victim's own
    (3 ms spin, 2 ms helper, 2 ms sleep; the next, a 1 ms spin, is far
    behind), and line_profiler's the same set when it ranks right. Both
    with --wall-only: no CPU clock reads, which on a busy machine draw
    preemptions onto the line after a spin and blur the ranking (see
    pylines.py)."""
    py = debian_python()
    p = subprocess.run([py, "-c", "import line_profiler"], capture_output=True)
    if p.returncode != 0:
        raise Skip("%s has no line_profiler (python3-line-profiler)" % py)
    s, t, _ = run_lines(py, seconds=2.5, args=("--no-sleeper", "--wall-only"))
    want = {t["lines"][k]["line"] for k in ("spin3", "helper", "sleep")}
    # line_profiler's own timer overhead lands on the line after a spin
    # when the machine is busy (seen: spin1 at 28% instead of 12%): give
    # it up to three runs to rank the lines as the victim's truth does
    for _ in range(3):
        p = subprocess.run([py, "-c", LP_WRAPPER, os.path.dirname(VICTIM), "2.5"],
                           capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr.decode()
        lp = json.loads(p.stdout.decode().strip().splitlines()[-1])
        lp_ms = {ln: ms for ln, _, ms in lp["rows"]}
        assert lp_ms, "line_profiler saw no line of work()"
        lp_total = sum(lp_ms.values())
        if set(sorted(lp_ms, key=lp_ms.get, reverse=True)[:3]) == want:
            break
    el = lines_elem(s)
    pt = {x["line"]: 100.0 * x["share"] for x in el["lines"] if x["wall_ms"] > 0}
    lpp = {ln: 100.0 * ms / lp_total for ln, ms in lp_ms.items()}
    tagname = {v["line"]: k for k, v in t["lines"].items()}
    top_pt = sorted(pt, key=pt.get, reverse=True)[:3]
    top_lp = sorted(lpp, key=lpp.get, reverse=True)[:3]
    # the victim's own clock, this run: a spin preempted by another job
    # runs on to its deadline, so under load a 1 ms spin can outlast the
    # 2 ms helper (make test-loaded: spin1 31% of work())
    tw = sum(v["wall_ns"] for v in t["lines"].values())
    truth = {v["line"]: 100.0 * v["wall_ns"] / tw for v in t["lines"].values()}
    top_truth = sorted(truth, key=truth.get, reverse=True)
    print("line_profiler vs proftrace, %s, work() (%s):" % (py, t["file"]))
    print("  %5s  %-7s %8s %12s %16s" % ("line", "tag", "truth %", "proftrace %",
                                         "line_profiler %"))
    for ln in sorted(set(pt) | set(lpp)):
        print("  %5d  %-7s %8.1f %12.1f %16.1f" % (ln, tagname.get(ln, ""), truth.get(ln, 0.0),
                                                  pt.get(ln, 0.0), lpp.get(ln, 0.0)))
    # the truth is the victim's own clock: proftrace must rank as it does
    # where the truth separates its 3rd line from its 4th by more than a
    # share's sampling error (SHARE_PP); line_profiler is a second process
    # that a loaded machine can still mislead after three runs, and is
    # then said so
    gap = truth[top_truth[2]] - truth[top_truth[3]]
    if gap > SHARE_PP:
        eq(set(top_pt), set(top_truth[:3]), "top 3 lines, as the victim's clock ranks them")
    else:
        assert set(top_pt) <= set(top_truth[:4]), (top_pt, top_truth)
        print("  the victim's own 3rd and 4th lines are %.1f pp apart: proftrace's top 3 "
              "are among its top 4" % gap)
    # line_profiler ran in processes of its own: its ranking is compared
    # with proftrace's only when both runs ranked as designed (under load a
    # preempted spin reorders one run and not the other)
    if set(top_lp) == want and set(top_truth[:3]) == want:
        eq(set(top_pt), set(top_lp), "top 3 lines (proftrace, line_profiler)")
    else:
        print("  the runs did not both rank as designed (a loaded machine's preemptions "
              "lengthen spins): proftrace matched its run's truth; line_profiler's top 3: %s"
              % sorted(tagname.get(x, x) for x in top_lp))
