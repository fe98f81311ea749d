# SPDX-License-Identifier: BSD-2-Clause
"""`make bench`: what a probed call costs, and what proftrace's choices buy.

Every figure is measured in this invocation, against a baseline run in the
same invocation, and printed as a ratio. No assertions: speed lives here,
correctness in `make test`.

Environment: PT_BENCH_ONLY=probes,python,agent,sampling,native,machine,agg,shim,inject,memory,
cxx,attach runs only those sections; PT_BENCH_REPEAT runs per median (3); PT_BENCH_SAMPLE_S seconds of
work per sampling run (3); PT_BENCH_SAMPLE_PY interpreters for the sampling
tables by minor version ("11,10": Debian's 3.11, pyenv's 3.10, the newest
CPython Debian's austin can read; 12 and 13 from pyenv).
"""
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BENCH = os.path.abspath(os.environ.get("PT_BENCH", os.path.join(ROOT, ".output", "bench")))
PROFTRACE = os.path.join(ROOT, "proftrace")
REPEAT = int(os.environ.get("PT_BENCH_REPEAT", "3"))

# calls per run: single-stepped probes cost ~40 us, keep their runs short
CALLS = {"pb_push": 200_000, "pb_endbr_push": 200_000, "pb_mov_push": 200_000,
         "pb_sub": 50_000}
FIRST_INSN = {"pb_push": "push %rbp", "pb_endbr_push": "endbr64; push %rbp",
              "pb_mov_push": "mov %rdi,%rax; push %rbp", "pb_sub": "sub $8,%rsp"}


def readline(f, prefix, timeout=30):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        r, _, _ = select.select([f], [], [], deadline - time.monotonic())
        if not r:
            break
        line = f.readline().decode(errors="replace")
        if not line:
            break
        seen.append(line.rstrip())
        if line.startswith(prefix):
            return line.strip()
    raise RuntimeError("no %r line; saw: %s" % (prefix, seen[-5:]))


def start_proftrace(pid, conf_text, tmp):
    """proftrace on pid with this targets file, once it says it attached."""
    conf = os.path.join(tmp, "bench.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    t = subprocess.Popen([PROFTRACE, "-q", "-p", str(pid), "--targets", conf, "-o",
                          os.path.join(tmp, "out")], stderr=subprocess.PIPE, bufsize=0)
    # unbuffered: a warning and the attached line can come in one read, and
    # readline() must not leave the second in a buffer select() cannot see
    readline(t.stderr, "proftrace: attached")
    return t


def proftrace_calls(t, tmp, symbol):
    """After the target exited: calls proftrace counted for symbol."""
    t.wait(30)
    with open(os.path.join(tmp, "out", "summary.json")) as f:
        rows = [r for r in json.load(f)["functions"] if r["symbol"] == symbol]
    return rows[0]["calls"] if rows else 0


def one_run(fn, tool, conf_extra="", step_extra=""):
    """ns per call of fn with tool in None/'proftrace'/'bpftrace' attached."""
    n = CALLS[fn]
    exe = os.path.join(BENCH, "probe_bench")
    b = subprocess.Popen([exe, fn, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = int(readline(b.stdout, "ready").split()[1])
    t = None
    tmp = tempfile.mkdtemp(prefix="pt-bench-")
    try:
        if tool == "proftrace":
            t = start_proftrace(pid, "step native:exe:%s%s\n%s" % (fn, step_extra, conf_extra),
                                tmp)
        elif tool == "bpftrace":
            # the equivalent of proftrace's work: time each call, keep a histogram
            script = ("uprobe:%s:%s { @s[tid] = nsecs; } "
                      "uretprobe:%s:%s /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }"
                      % (exe, fn, exe, fn))
            t = subprocess.Popen(["bpftrace", "-p", str(pid), "-e", script],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            readline(t.stdout, "Attaching")
            time.sleep(1.0)  # the line comes before the probes are in place
        b.stdin.write(b"go\n")
        b.stdin.flush()
        ns = float(readline(b.stdout, "ns_per_call", timeout=120).split()[1])
        b.wait(30)
        calls = None
        if tool == "proftrace":
            calls = proftrace_calls(t, tmp, fn)
        elif tool == "bpftrace":
            t.send_signal(signal.SIGINT)
            t.wait(30)
        return ns, calls
    finally:
        for p in (b, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()


def measure(fn, tool, conf_extra="", step_extra=""):
    runs = [one_run(fn, tool, conf_extra, step_extra) for _ in range(REPEAT)]
    calls = runs[-1][1]
    if calls is not None and calls != CALLS[fn]:
        print("  warning: proftrace counted %d calls of %s, expected %d" % (calls, fn, CALLS[fn]))
    return statistics.median(r[0] for r in runs)


PY_CALLS = 300_000
PY_BENCH = os.path.join(ROOT, "bench", "py_bench.py")


def pyenv(minor):
    import glob
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    hits = sorted(glob.glob(os.path.join(root, "versions", "3.%d.*" % minor, "bin", "python3")))
    return hits[-1] if hits else None


def py_run(python, which, tool, env_extra=None, conf_extra="", probe="hot"):
    """ns per call of hot()/cold() in a Python loop, with tool attached.
    Returns (ns, calls proftrace counted for hot or None)."""
    env = dict(os.environ)
    env.pop("PYTHONPERFSUPPORT", None)
    env.update(env_extra or {})
    argv = [python, PY_BENCH, which, str(PY_CALLS)]
    if tool == "line_profiler":
        argv.append("--line-profiler")
    b = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    t = None
    tmp = tempfile.mkdtemp(prefix="pt-bench-")
    try:
        pid = int(readline(b.stdout, "ready").split()[1])
        if tool == "proftrace":
            t = start_proftrace(pid, "bucket py.hot py:py_bench::%s\n" % probe +
                                "set python_mode evalframe\n" + conf_extra, tmp)
        b.stdin.write(b"go\n")
        b.stdin.flush()
        ns = float(readline(b.stdout, "ns_per_call", timeout=300).split()[1])
        b.wait(30)
        return ns, proftrace_calls(t, tmp, probe) if tool == "proftrace" else None
    finally:
        for p in (b, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()


def py_measure(python, which, tool, env_extra=None, conf_extra="", probe="hot"):
    runs = [py_run(python, which, tool, env_extra, conf_extra, probe) for _ in range(REPEAT)]
    return statistics.median(r[0] for r in runs), runs[-1][1]


def python_tables():
    """Per-call cost of the py: mechanism, and slowdown vs line_profiler."""
    cases = []
    for label, python, env, timing in (
            ("3.10 (pyenv)", pyenv(10), None, "exact"),
            ("3.12 (pyenv) -X perf", pyenv(12), {"PYTHONPERFSUPPORT": "1"}, "exact"),
            ("3.13 (pyenv) -X perf", pyenv(13), {"PYTHONPERFSUPPORT": "1"}, "exact"),
            ("3.11 (Debian)", "/usr/bin/python3.11", None, "c-entry-only")):
        if python and os.path.exists(python):
            cases.append((label, python, env, timing))
    rows = []
    for label, python, env, timing in cases:
        base, _ = py_measure(python, "hot", None, env)
        hot, calls = py_measure(python, "hot", "proftrace", env)
        cbase, _ = py_measure(python, "cold", None, env)
        cold, _ = py_measure(python, "cold", "proftrace", env)
        rows.append([label, timing, "%.0f" % base, "%.0f" % hot, "%.0f" % (hot - base),
                     "%d/%d" % (calls or 0, PY_CALLS), "%.0f" % (cold - cbase),
                     "%.2fx" % (hot / base)])
    table("Python: a call-heavy loop (hot() called %d times from Python), ns per call"
          % PY_CALLS,
          ["interpreter", "py: timing", "no tool", "proftrace (hot probed)",
           "overhead per probed call", "calls counted", "overhead per unprobed call",
           "slowdown"], rows)

    p310 = pyenv(10)
    if p310:
        base, _ = py_measure(p310, "cold", None)
        ses, _ = py_measure(p310, "cold", "proftrace")
        pair, _ = py_measure(p310, "cold", "proftrace", None, "set py_session off\n")
        table("Python design choice: frame probe as one uprobe session (kernel 6.13+) vs a "
              "uprobe/uretprobe pair, 3.10, overhead per unprobed Python call",
              ["choice", "session ns/call", "pair ns/call", "pair / session"],
              [["skip the return probe of frames that are not configured",
                "%.0f" % (ses - base), "%.0f" % (pair - base),
                "%.2fx" % ((pair - base) / max(1.0, ses - base))]])

    # values read at each call: an int argument vs an attribute of an
    # object argument (the per-type location lookup and the dict probe)
    rows = []
    for label, python, env in (("3.10 (pyenv)", pyenv(10), None),
                               ("3.12 (pyenv) -X perf", pyenv(12), {"PYTHONPERFSUPPORT": "1"}),
                               ("3.13 (pyenv) -X perf", pyenv(13), {"PYTHONPERFSUPPORT": "1"})):
        if not python:
            continue
        step = "step py:py_bench::hot_obj"
        none, _ = py_measure(python, "hot_obj", "proftrace", env, step + "\n", "hot_obj")
        arg, _ = py_measure(python, "hot_obj", "proftrace", env, step + " tokens=arg:n\n",
                            "hot_obj")
        attr, _ = py_measure(python, "hot_obj", "proftrace", env, step + " tokens=arg:o.n\n",
                             "hot_obj")
        rows.append([label, "%.0f" % none, "%.0f" % arg, "%.0f" % attr,
                     "%.0f" % (arg - none), "%.0f" % (attr - none)])
    table("Python values: a probed step call with no value, `tokens=arg:n` (an int "
          "argument) and `tokens=arg:o.n` (an instance attribute), ns per call",
          ["interpreter", "no value", "arg:n", "arg:o.n", "arg:n cost", "arg:o.n cost"], rows)

    deb = "/usr/bin/python3.11"
    have_lp = subprocess.run([deb, "-c", "import line_profiler"],
                             capture_output=True).returncode == 0 if os.path.exists(deb) else False
    if not have_lp:
        print("\n(line_profiler comparison skipped: no python3-line-profiler for %s)" % deb)
        return
    base, _ = py_measure(deb, "hot", None)
    pt, _ = py_measure(deb, "hot", "proftrace")
    lp, _ = py_measure(deb, "hot", "line_profiler")
    rows = [["Debian 3.11, same process image", "%.0f" % base, "%.0f" % pt, "%.0f" % lp,
             "%.2fx" % (pt / base), "%.2fx" % (lp / base)]]
    table("Python: slowdown of the same loop, proftrace vs line_profiler (in process) on hot()",
          ["interpreter", "no tool ns/call", "proftrace ns/call", "line_profiler ns/call",
           "proftrace slowdown", "line_profiler slowdown"], rows)
    if p310:
        print("\nOn Debian 3.11 proftrace sees only calls from C (timing c-entry-only), so "
              "its cost there is the filter; the exact-timing cost is the 3.10 / -X perf "
              "rows of the table above. line_profiler is only packaged for Debian's 3.11.")


# ---- the Python agent: what a Python-heavy step pays, per interpreter ----

STEP_BENCH = os.path.join(ROOT, "bench", "py_step_bench.py")
STEP_STEPS = int(os.environ.get("PT_BENCH_STEPS", "60"))
AGENT = os.path.abspath(os.environ.get("PT_AGENT", os.path.join(ROOT, ".output",
                                                                  "libproftrace_agent.so")))
STEP_CONF = "step py:py_step_bench.Scheduler.schedule\n"
NAMED_CONF = STEP_CONF + "bucket engine.tokens py:py_step_bench.Request.num_new_tokens\n"
NAMED_PER_STEP = 256  # Request.num_new_tokens calls per step


def step_run(python, preload, conf, env_extra=None):
    """Median ns of a py_step_bench step (the program's own clock), with
    the agent preloaded or not, and proftrace attached with conf or not."""
    env = dict(os.environ)
    env.pop("PYTHONPERFSUPPORT", None)
    env.pop("LD_PRELOAD", None)
    env.update(env_extra or {})
    if preload:
        env["LD_PRELOAD"] = AGENT
    # the program on one CPU, proftrace on another: on a small VM a step's
    # time is bimodal with the CPU it lands on, which drowned the ratios
    cpus = sorted(os.sched_getaffinity(0))
    pin = (lambda: os.sched_setaffinity(0, {cpus[-1]})) if len(cpus) > 1 else None
    b = subprocess.Popen([python, STEP_BENCH, str(STEP_STEPS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env, preexec_fn=pin)
    t = None
    tmp = tempfile.mkdtemp(prefix="pt-bench-")
    try:
        pid = int(readline(b.stdout, "ready").split()[1])
        if conf:
            t = start_proftrace(pid, conf, tmp)
            if pin:
                os.sched_setaffinity(t.pid, set(cpus[:-1]))
        b.stdin.write(b"go\n")
        b.stdin.flush()
        ns = float(readline(b.stdout, "step_ns", timeout=600).split()[1])
        b.wait(30)
        return ns
    finally:
        for p in (b, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()


PAIRS = int(os.environ.get("PT_BENCH_PAIRS", "9"))


def step_pairs(python, conf):
    """attached / dormant in one process: PAIRS rounds of py_step_bench
    with the agent dormant, each followed by one with proftrace attached
    (conf) then detached. One process, so its code placement and the CPU
    it is pinned to are the same in every round; a round's fastest step
    against the fastest of the round just before it (this VM's vCPUs run
    at two speeds that change every few tens of ms: a round's median
    depends on how long it ran at each, its fastest step does not; the
    agent's cost is in every step). The ratios, sorted, and the fastest
    attached step of all rounds against the fastest dormant one: a round
    (60 steps, ~0.1 s) can sit wholly in the slow speed, 1.7x the fast one
    (2026-11-28: rounds of one process from 0.98x to 1.74x with sampling
    off), but nine rounds of each see the fast one."""
    env = dict(os.environ)
    env.pop("PYTHONPERFSUPPORT", None)
    env["LD_PRELOAD"] = AGENT
    cpus = sorted(os.sched_getaffinity(0))
    pin = (lambda: os.sched_setaffinity(0, {cpus[-1]})) if len(cpus) > 1 else None
    b = subprocess.Popen([python, STEP_BENCH, str(STEP_STEPS), str(2 * PAIRS)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                         preexec_fn=pin)
    tmp = tempfile.mkdtemp(prefix="pt-bench-")
    ratios, t, fastest = [], None, [1e300, 1e300]

    def round_ns():
        b.stdin.write(b"go\n")
        b.stdin.flush()
        return float(readline(b.stdout, "step_ns", timeout=600).split()[2])
    try:
        pid = int(readline(b.stdout, "ready").split()[1])
        for _ in range(PAIRS):
            dormant = round_ns()
            t = start_proftrace(pid, conf, tmp)
            if pin:
                os.sched_setaffinity(t.pid, set(cpus[:-1]))
            attached = round_ns()
            ratios.append(attached / dormant)
            fastest = [min(fastest[0], attached), min(fastest[1], dormant)]
            t.send_signal(signal.SIGINT)
            t.wait(60)
            t = None
        b.wait(30)
        return sorted(ratios), fastest[0] / fastest[1]
    finally:
        for p in (b, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()


def step_measure(*args, **kw):
    return statistics.median(step_run(*args, **kw) for _ in range(REPEAT))


def agent_pythons():
    out = [("3.%d" % m, pyenv(m)) for m in (8, 9, 10, 11, 12, 13)]
    out.append(("Debian 3.11", "/usr/bin/python3.11"))
    out.append(("3.14", "/opt/python3.14/bin/python3.14"))
    return [(l, p) for l, p in out if p and os.path.exists(p)]


def agent_tables():
    """Issue 14: a named function costs a little, every other call
    nothing measurable; dormant costs nothing."""
    if not os.path.exists(AGENT):
        print("\n(agent tables skipped: %s not built)" % AGENT)
        return
    rows, cost = [], []
    evalframe = STEP_CONF + "set python_mode evalframe\n"
    perf = {"PYTHONPERFSUPPORT": "1"}
    for label, py in agent_pythons():
        # (preload, conf, env) per column; the runs of one interpreter are
        # interleaved round by round, so a machine whose load drifts
        # weighs on every column alike
        cols = {"base": (False, None, None), "dormant": (True, None, None),
                "agent": (True, STEP_CONF, None), "named": (True, NAMED_CONF, None),
                "frame": (False, evalframe, None)}
        if label in ("3.12", "3.13", "3.14"):
            cols["tramp"] = (False, None, perf)
            cols["tframe"] = (False, evalframe, perf)
        else:
            # 3.8-3.11: the agent as before trampolines, to compare
            cols["evaluator"] = (True, STEP_CONF + "set py_trampolines off\n", None)
        got = {k: [] for k in cols}
        for _ in range(REPEAT):
            for k, (pre, conf, env) in cols.items():
                got[k].append(step_run(py, pre, conf, env))
        m = {k: statistics.median(v) for k, v in got.items()}
        base = m["base"]

        def pairs(k):
            # attached against dormant, round by round (each pair ran
            # back to back): median and spread
            r = sorted(a / d for a, d in zip(got[k], got["dormant"]))
            return "%.3fx (%.3f-%.3f)" % (statistics.median(r), r[0], r[-1])
        row = [label, "%.2f" % (base / 1e6), "%.3fx" % (m["dormant"] / base),
               "%.3fx" % (m["agent"] / base), pairs("agent"),
               pairs("evaluator") if "evaluator" in got else "-",
               "%.2fx" % (m["frame"] / base)]
        if "tramp" in m:
            row += ["%.2fx" % (m["tramp"] / base), "%.2fx" % (m["tframe"] / base)]
        else:
            row += ["-", "-"]
        rows.append(row)
        cost.append([label, "%.2f" % ((m["named"] - m["agent"]) / NAMED_PER_STEP / 1e3)])
    table("Python agent: a scheduler-like step of ~27,000 small Python calls (py_step_bench),"
          " median step time of %d steps, ratio to no tool (same invocation); only the "
          "step function is named" % STEP_STEPS,
          ["interpreter", "no tool ms/step", "agent loaded, dormant", "proftrace + agent",
           "attached / dormant, per pair: median (min-max)",
           "3.8-3.11, py_trampolines off: attached / dormant",
           "frame probe (python_mode evalframe)", "perf trampoline alone",
           "perf trampoline + frame probe"], rows)
    # the tax itself, in one process per interpreter (issue 26: <= 1.05x)
    pairs = []
    for label, py in agent_pythons():
        row = [label]
        for conf in (STEP_CONF, STEP_CONF + "set py_trampolines off\n"):
            if conf != STEP_CONF and label in ("3.12", "3.13", "3.14"):
                row.append("-")
                continue
            r, best = step_pairs(py, conf)
            row.append("%.3fx (%.3f-%.3f), fastest %.3fx" % (statistics.median(r), r[0], r[-1],
                                                             best))
        pairs.append(row)
    table("Python agent: attached / dormant in one process, %d pairs of %d-step rounds (a "
          "round attached against the dormant one just before it): median (min-max), and the "
          "fastest attached step of all rounds against the fastest dormant one; only the "
          "step function is named" % (PAIRS, STEP_STEPS),
          ["interpreter", "agent (3.8-3.11: trampolines)",
           "py_trampolines off (3.8-3.11: frame evaluator)"], pairs)
    table("Python agent: cost of one named call (Request.num_new_tokens also named, %d calls a"
          " step), us per call" % NAMED_PER_STEP, ["interpreter", "us per named call"], cost)
    print("\nThe agent hooks the named code objects only: sys.monitoring local events on "
          "3.12+, trampolines on 3.8-3.11 (the named function's __code__ wraps a copy of it "
          "in calls to the agent); calls of other functions are untouched. The frame probe "
          "column (python_mode evalframe) traps every call. "
          "Sampling (1 kHz) is on in the proftrace columns, as by default.")


# ---- stack sampling: target slowdown vs Austin, and the BPF walker's cost ----

SAMPLE_BENCH = os.path.join(ROOT, "bench", "py_sample_bench.py")
SAMPLE_S = float(os.environ.get("PT_BENCH_SAMPLE_S", "3"))  # seconds of work per run
SAMPLE_DEEP = 40  # extra recursive frames of the deep walker case
AUSTIN = "/usr/bin/austin"


def sample_pythons():
    """(label, python) to sample: PT_BENCH_SAMPLE_PY picks by minor ("11,10,12")."""
    known = {"11": ("3.11 (Debian)", "/usr/bin/python3.11")}
    for minor in (10, 12, 13):
        known[str(minor)] = ("3.%d (pyenv)" % minor, pyenv(minor))
    want = os.environ.get("PT_BENCH_SAMPLE_PY", "11,10").split(",")
    return [known[m] for m in want if m in known and known[m][1] and
            os.path.exists(known[m][1])]


def sample_conf(hz, native=True):
    # python_mode sampled: samples only, no frame probe (3.10 and -X perf
    # would otherwise also probe every call); `lines` is there because a
    # targets file needs something to profile; native frames are the
    # default, `off` is the py-spy-like Python-only row
    return "lines py:py_sample_bench::step\nset python_mode sampled\nset sample_hz %d\n%s" % (
        hz, "" if native else "set native_frames off\n")


def sample_calibrate(python):
    """Iterations of the workload that take about SAMPLE_S seconds here, now."""
    n = 200_000
    r = subprocess.run([python, SAMPLE_BENCH, str(n)], input=b"go\n", capture_output=True)
    ns = [int(l.split()[1]) for l in r.stdout.decode().splitlines()
          if l.startswith("elapsed_ns")]
    if not ns:
        raise RuntimeError("%s %s failed: %s" % (python, SAMPLE_BENCH, r.stderr.decode()[-300:]))
    return max(n, int(n * SAMPLE_S * 1e9 / ns[0]) // 10_000 * 10_000)


def folded_frames(path):
    """Mean Python frames per on-CPU sample in a stacks.folded (weighted by
    sample time; the thread root, [pseudo frames] and native frames are not
    Python frames: a Python frame's label ends "(file:line)")."""
    frames = weight = 0
    with open(path) as f:
        for line in f:
            stack, _, w = line.rstrip("\n").rpartition(" ")
            parts = stack.split(";")[1:]
            if not parts or parts[-1] == "[off-cpu]":
                continue
            n = sum(1 for p in parts if re.search(r" \([^()]*:[0-9]+\)$", p))
            frames += n * float(w)
            weight += float(w)
    return frames / weight if weight else float("nan")


def bpf_prog_ids(pid):
    """ids of the BPF programs process pid holds (fdinfo prog_id lines)."""
    ids = set()
    d = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def bpf_prog_stats(pid, names=("pt_sample", "pt_switch")):
    """{name: (run_cnt, run_time_ns)} of proftrace pid's programs, from
    `bpftool -j prog show` (run_* are there while bpf_stats_enabled is 1).
    Other proftrace runs (concurrent tests) load programs of the same names:
    only the ids pid holds count."""
    deadline = time.monotonic() + 10
    while True:
        ids = bpf_prog_ids(pid)
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
        progs = json.loads(out.stdout or "[]")
        got = {p["name"]: (p.get("run_cnt", 0), p.get("run_time_ns", 0))
               for p in progs if p["id"] in ids and p.get("name") in names}
        if len(got) == len(names) or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def cpu_ticks_ns(pid):
    """utime + stime of pid so far, ns (clock-tick resolution)."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rpartition(")")[2].split()
    return (int(st[11]) + int(st[12])) * 1e9 / os.sysconf("SC_CLK_TCK")


class BpfStats:
    """kernel.bpf_stats_enabled = 1 for the with-block, then the old value."""

    PATH = "/proc/sys/kernel/bpf_stats_enabled"

    def __enter__(self):
        with open(self.PATH) as f:
            self.old = f.read().strip()
        with open(self.PATH, "w") as f:
            f.write("1")
        return self

    def __exit__(self, *exc):
        with open(self.PATH, "w") as f:
            f.write(self.old)


def sample_run(python, n, tool, hz, depth=0, stats=False):
    """One run of the workload with tool (None, 'proftrace', 'proftrace-py':
    native frames off, 'austin') at hz.
    Returns a dict: elapsed_ns, cpu_ns, frames (victim's stack depth), and
    per tool what it recorded (samples, intervals, folded_frames, bpf)."""
    argv = [python, SAMPLE_BENCH, str(n), "--hold"]
    if depth:
        argv += ["--depth", str(depth)]
    b = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    t = None
    tmp = tempfile.mkdtemp(prefix="pt-bench-")
    res = {}
    try:
        pid = int(readline(b.stdout, "ready").split()[1])
        if tool in ("proftrace", "proftrace-py"):
            t = start_proftrace(pid, sample_conf(hz, tool == "proftrace"), tmp)
        elif tool == "austin":
            # default mode: wall time, idle samples included, like proftrace's
            # on-CPU samples + off-CPU intervals
            aout = os.path.join(tmp, "austin.out")
            t = subprocess.Popen([AUSTIN, "-i", str(1_000_000 // hz), "-p", str(pid),
                                  "-o", aout], stderr=subprocess.PIPE)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and t.poll() is None and \
                    not (os.path.exists(aout) and os.path.getsize(aout)):
                time.sleep(0.05)  # first samples written: it is attached
            if t.poll() is not None:  # could not attach (e.g. unknown CPython)
                return {"samples": 0}
        before = bpf_prog_stats(t.pid) if stats else None
        tool0 = cpu_ticks_ns(t.pid) if t else 0
        b.stdin.write(b"go\n")
        b.stdin.flush()
        done = readline(b.stdout, "elapsed_ns", timeout=300).split()
        res["tool_cpu_ns"] = cpu_ticks_ns(t.pid) - tool0 if t else 0
        res.update((k, int(v)) for k, v in zip(done[::2], done[1::2]))
        if stats:
            after = bpf_prog_stats(t.pid)
            res["bpf"] = {k: (after[k][0] - before[k][0], after[k][1] - before[k][1])
                          for k in after if k in before}
        b.stdin.write(b"bye\n")
        b.stdin.flush()
        b.wait(30)
        if tool in ("proftrace", "proftrace-py"):
            t.wait(60)
            with open(os.path.join(tmp, "out", "summary.json")) as f:
                smp = json.load(f)["meta"]["sampling"]
            res["samples"] = smp["samples"]
            res["intervals"] = smp["off_cpu_intervals"]
            res["lost"] = smp["lost_samples"]
            res["folded_frames"] = folded_frames(os.path.join(tmp, "out", "stacks.folded"))
        elif tool == "austin":
            t.wait(30)
            with open(aout, errors="replace") as f:
                res["samples"] = sum(1 for l in f if ";work (" in l)
        return res
    finally:
        for p in (b, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def sampling_tables():
    """Target slowdown under stack sampling (proftrace vs Austin), and what
    one sample costs the BPF walker."""
    pythons = sample_pythons()
    load0 = os.getloadavg()[0]
    have_austin = os.path.exists(AUSTIN)
    aver = subprocess.run([AUSTIN, "-V"], capture_output=True, text=True).stdout.strip() \
        if have_austin else "not installed"
    configs = [("no tool", None, 0), ("proftrace 100 Hz", "proftrace", 100),
               ("proftrace 1000 Hz", "proftrace", 1000),
               ("proftrace 1000 Hz, --no-native", "proftrace-py", 1000)]
    if have_austin:
        configs += [("Austin 100 Hz", "austin", 100), ("Austin 1000 Hz", "austin", 1000)]
    rows = []
    notes = []
    iters = {}
    for label, python in pythons:
        n = iters[python] = sample_calibrate(python)
        runs = {c[0]: [] for c in configs}
        skip = set()
        # interleaved: round r runs every configuration once, so a burst of
        # load from elsewhere lands on all of them alike
        for _ in range(REPEAT):
            for name, tool, hz in configs:
                if name in skip:
                    continue
                r = sample_run(python, n, tool, hz)
                if tool == "austin" and not r["samples"]:
                    skip.update(c[0] for c in configs if c[1] == "austin")
                    notes.append("Austin rows left out for %s: %s recorded no stack of "
                                 "the workload there (it predates this CPython)." % (label, aver))
                    continue
                runs[name].append(r)
        base = runs["no tool"]
        be = statistics.median(r["elapsed_ns"] for r in base)
        bc = statistics.median(r["cpu_ns"] for r in base)
        for name, tool, hz in configs:
            rs = runs[name]
            if not rs:
                continue
            e = statistics.median(r["elapsed_ns"] for r in rs)
            c = statistics.median(r["cpu_ns"] for r in rs)
            if tool in ("proftrace", "proftrace-py"):
                rec = "%d on-CPU + %d off-CPU intervals" % (
                    statistics.median(r["samples"] for r in rs),
                    statistics.median(r["intervals"] for r in rs))
                lost = sum(r["lost"] for r in rs)
                if lost:
                    rec += ", %d lost" % lost
            elif tool == "austin":
                rec = "%d" % statistics.median(r["samples"] for r in rs)
            else:
                rec = ""
            tc = statistics.median(r["tool_cpu_ns"] for r in rs)
            rows.append([label if name == "no tool" else "", name, "%.3f" % (e / 1e9),
                         "%.3fx" % (e / be), "%.3f" % (c / 1e9), "%.3fx" % (c / bc),
                         "%.2f" % (tc / 1e9) if tool else "", rec])
    table("Stack sampling: slowdown of a CPU-bound Python loop (about %.0f s of work, "
          "median of %d, interleaved)" % (SAMPLE_S, REPEAT),
          ["interpreter", "sampler", "elapsed s", "elapsed / no tool", "CPU s",
           "CPU / no tool", "sampler's own CPU s", "samples of the workload"], rows)
    print("\nThe victim (bench/py_sample_bench.py: step() -> 3 x mid() -> 2 x leaf(), a "
          "fixed number of iterations calibrated to about %.0f s) starts its timed work "
          "once the sampler is attached (after proftrace printed \"attached\", after "
          "Austin wrote its first samples). elapsed: the victim's own perf_counter; "
          "CPU: its process CPU time over the same work (time in the sampling "
          "interrupt counts as the victim's, other processes' load does not). sampler's own CPU: "
          "utime + stime of the proftrace or austin process over the same work (10 ms "
          "ticks; BPF programs run in the victim, not here). proftrace: `python_mode "
          "sampled` (samples only, no frame probe), per-thread cpu-clock BPF walker + "
          "sched_switch, native frames on (the default: each sample copies the "
          "thread's registers and top 16 KiB of stack, unwound in proftrace) or off "
          "(--no-native: the Python frames only). Austin (%s): `-i <us> -p PID -o FILE`, its default wall-time "
          "mode (idle samples included; proftrace is wall time too: on-CPU samples + "
          "off-CPU intervals), reading the process from outside with "
          "process_vm_readv. Austin's samples count those in work(); proftrace's "
          "on-CPU samples count only time on the CPU." % (SAMPLE_S, aver))
    for note in notes:
        print("\n" + note)
    print("\nLoad average (1 min) of this machine before / after these runs: %.1f / %.1f "
          "on %d CPUs: other work there shows in elapsed more than in CPU."
          % (load0, os.getloadavg()[0], os.cpu_count()))

    # The walker's cost, from the kernel's own run-time stats of the programs.
    hz = 1000
    rows = []
    with BpfStats():
        for label, python in pythons[:2]:
            n = iters[python] // 2
            for depth, tool in ((0, "proftrace"), (0, "proftrace-py"),
                                (SAMPLE_DEEP, "proftrace"), (SAMPLE_DEEP, "proftrace-py")):
                r = sample_run(python, n, tool, hz, depth, stats=True)
                cnt, ns = r["bpf"].get("pt_sample", (0, 0))
                scnt, sns = r["bpf"].get("pt_switch", (0, 0))
                per = ns / cnt if cnt else float("nan")
                rows.append([label, "on" if tool == "proftrace" else "off (--no-native)",
                             "%d" % r["frames"], "%.1f" % r["folded_frames"],
                             "%d" % cnt, "%.0f" % per, "%.0f" % (1e9 / per),
                             "%.2f%%" % (100.0 * ns / r["cpu_ns"]),
                             "%d / %d" % (scnt, r["intervals"]),
                             "%.0f" % (sns / scnt if scnt else float("nan"))])
    table("Stack sampling: cost of the BPF walker (`pt_sample`), %d Hz, kernel bpf_stats "
          "over the timed work" % hz,
          ["interpreter", "native frames", "stack depth (frames)",
           "Python frames per sample (stacks.folded)",
           "samples", "ns per sample", "samples/s one CPU sustains", "walker CPU / victim CPU",
           "pt_switch runs: all tasks / victim's off-CPU intervals (whole run)", "ns per pt_switch run"],
          rows)
    print("\nns per sample: pt_sample's run_time_ns / run_cnt (`bpftool -j prog show` with "
          "kernel.bpf_stats_enabled=1, restored after), diffed between just before and just "
          "after the timed work, for the program ids this proftrace holds (its "
          "/proc/PID/fdinfo). It is the program alone: the perf interrupt around it is "
          "not counted, and bpf_stats itself adds two clock reads per run. samples/s one CPU "
          "sustains = 1e9 / ns per sample. pt_switch runs on every context switch of the "
          "machine and returns at once for other processes; it walks the stack when the "
          "victim is switched out (off-CPU intervals), so its mean mixes both. "
          "Deep rows: the same work %d recursive calls deeper." % SAMPLE_DEEP)



# ---- mixed native/Python stacks: `set native_frames` on vs off ----

MIXED = os.path.join(ROOT, "tests", "victims", "pymixed.py")
MIXED_STEPS = 100  # pymixed's default step: 4 ms Python + 8 + 6 ms in ptnative
# and off the CPU in ptnative: a 3 ms block and five of 0.1 ms, and 4 ms on
# ptnative's worker thread (no Python) while it waits: ~2.6 s
MIXED_BLOCKS = ("--block-ms", "3", "--short-blocks", "5", "--short-us", "100", "--pool-ms", "4")


def mixed_conf(native):
    # as sample_conf: samples only (`lines` because a targets file needs
    # something to profile), at 1 kHz, native frames on or off ("" leaves
    # the line out: Python frames only, for a proftrace without the key)
    conf = "lines py:pymixed::step\nset python_mode sampled\nset sample_hz 1000\n"
    return conf + ("set native_frames %s\n" % native if native else "")


def attach_error(msg):
    """proftrace's error line out of start_proftrace's RuntimeError."""
    i = msg.find("error: ")
    msg = msg[i + 7:] if i >= 0 else msg
    return msg.split(" (hint")[0].split("\\n")[0].strip()[:120]


def mixed_run(python, so, native):
    """pymixed's steps with no tool (native None) or proftrace at 1 kHz with
    native_frames native. Returns {elapsed_ns, cpu_ns (the victim's, from
    its truth), tool_cpu_ns, samples, leaf_ms (on-CPU ms through ptn_leaf)},
    or {"error": why} when proftrace did not attach."""
    tmp = tempfile.mkdtemp(prefix="pt-bench-")
    truth = os.path.join(tmp, "truth.json")
    b = subprocess.Popen([python, MIXED, "--ext", so, "--steps", str(MIXED_STEPS), *MIXED_BLOCKS,
                          "--truth", truth, "--hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         bufsize=0)
    t = None
    res = {}
    try:
        pid = int(readline(b.stdout, "ready").split()[1])
        if native is not None:
            try:
                t = start_proftrace(pid, mixed_conf(native), tmp)
            except RuntimeError as e:  # e.g. a proftrace without native_frames
                return {"error": str(e)}
        tool0 = cpu_ticks_ns(t.pid) if t else 0
        b.stdin.write(b"go\n")
        b.stdin.flush()
        readline(b.stdout, "done", timeout=300)
        res["tool_cpu_ns"] = cpu_ticks_ns(t.pid) - tool0 if t else 0
        with open(truth) as f:
            tr = json.load(f)
        res["elapsed_ns"], res["cpu_ns"] = tr["wall_ns"], tr["cpu_ns"]
        b.stdin.write(b"exit\n")
        b.stdin.flush()
        b.wait(30)
        if t:
            t.wait(60)
            out = os.path.join(tmp, "out")
            with open(os.path.join(out, "summary.json")) as f:
                res["samples"] = json.load(f)["meta"]["sampling"]["samples"]
            leaf = block = 0
            with open(os.path.join(out, "stacks.folded"), errors="replace") as f:
                for ln in f:
                    frames, _, w = ln.rstrip("\n").rpartition(" ")
                    off = frames.endswith(";[off-cpu]")
                    if ";ptn_leaf (" in frames and not off:
                        leaf += int(w)
                    if ";ptn_block_inner (" in frames and off:
                        block += int(w)
            res["leaf_ms"] = leaf / 1000.0
            res["block_ms"] = block / 1000.0
        return res
    finally:
        for p in (b, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def native_frames_table():
    """1 kHz sampling with native frames unwound (`set native_frames on`)
    vs Python frames only (off) vs no tool, on a workload whose stacks
    hold native frames (tests/victims/pymixed.py with ptnative)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    from harness import build_ptnative
    configs = [("no tool", None), ("proftrace 1000 Hz, native_frames off", "off"),
               ("proftrace 1000 Hz, native_frames on", "on")]
    rows = []
    notes = []
    for label, python in sample_pythons()[:1]:
        tmp = tempfile.mkdtemp(prefix="pt-bench-ext-")
        try:
            so = build_ptnative(python, tmp)
        except Exception as e:  # harness.Skip (no headers) or a failed build
            notes.append("%s: ptnative not built: %s" % (label, e))
            continue
        runs = {c[0]: [] for c in configs}
        errors = {}
        conf_of = {}
        # interleaved, as the sampling table: load lands on every row alike
        for _ in range(REPEAT):
            for name, native in configs:
                if name in errors:
                    continue
                r = mixed_run(python, so, conf_of.get(name, native))
                if "error" in r and native == "off" and "native_frames" in r["error"]:
                    # a proftrace without the key: off is what it always does
                    conf_of[name] = ""
                    notes.append("native_frames off: this proftrace does not know the key "
                                 "(%s); the off row ran without the line, Python frames "
                                 "only." % attach_error(r["error"]))
                    r = mixed_run(python, so, "")
                if "error" in r:
                    errors[name] = attach_error(r["error"])
                    continue
                runs[name].append(r)
        shutil.rmtree(tmp, ignore_errors=True)
        base = runs["no tool"]
        if not base:
            notes.append("%s: the workload did not run" % label)
            continue
        be = statistics.median(r["elapsed_ns"] for r in base)
        bc = statistics.median(r["cpu_ns"] for r in base)
        for name, native in configs:
            rs = runs[name]
            first = label if name == "no tool" else ""
            if name in errors:
                rows.append([first, name, "did not attach: " + errors[name].replace("|", "/"),
                             "", "", "", "", ""])
                continue
            e = statistics.median(r["elapsed_ns"] for r in rs)
            c = statistics.median(r["cpu_ns"] for r in rs)
            rec = ""
            if native is not None:
                rec = "%d samples, %.0f ms through ptn_leaf, %.0f ms off the CPU through " \
                      "ptn_block_inner" % (statistics.median(r["samples"] for r in rs),
                                           statistics.median(r["leaf_ms"] for r in rs),
                                           statistics.median(r["block_ms"] for r in rs))
            tc = statistics.median(r["tool_cpu_ns"] for r in rs)
            rows.append([first, name, "%.3f" % (e / 1e9), "%.3fx" % (e / be), "%.3f" % (c / 1e9),
                         "%.3fx" % (c / bc), "%.2f" % (tc / 1e9) if native is not None else "", rec])
    table("Stack sampling with native frames: slowdown of Python calling a C extension "
          "(pymixed, %d steps, median of %d, interleaved)" % (MIXED_STEPS, REPEAT),
          ["interpreter", "sampler", "elapsed s", "elapsed / no tool", "CPU s",
           "CPU / no tool", "sampler's own CPU s", "recorded"], rows)
    print("\nThe victim (tests/victims/pymixed.py, ptnative built -O2 -fomit-frame-pointer: "
          "no frame pointers, .eh_frame) runs steps of 4 ms of Python, 8 ms in "
          "ptnative.spin and 6 ms in a Python callback called from C that spins again, "
          "then off the CPU in ptnative.block (nanosleep, the GIL released) once for 3 ms "
          "and five times for 0.1 ms, and for a 4 ms job on ptnative's worker thread (no "
          "Python: its stacks native only, one sample in 10); elapsed and CPU are its own clocks (perf_counter, its thread's CPU time) from go "
          "to its last step. proftrace: `python_mode sampled`, 1 kHz, `set native_frames` "
          "on or off; on unwinds each sample's native frames too (ptn_leaf's time is "
          "through ptn_leaf, 0 when off) and each interval off the CPU of a period or "
          "longer, and shorter ones while the thread's credit lasts (the copy taken where "
          "the thread leaves its system call, in its own time). A proftrace that does not know native_frames "
          "says so in its row.")
    for note in notes:
        print("\n" + note)


def table(title, head, rows):
    print("\n### " + title + "\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def probe_tables():
    """Probed native calls: proftrace vs bpftrace, and its design choices."""
    have_bpftrace = subprocess.run(["which", "bpftrace"], capture_output=True).returncode == 0
    rows = []
    base = {}
    for fn in CALLS:
        base[fn] = measure(fn, None)
        pt = measure(fn, "proftrace")
        bt = measure(fn, "bpftrace") if have_bpftrace else float("nan")
        rows.append(["`%s` (%s)" % (fn, FIRST_INSN[fn]), "%.0f" % base[fn], "%.0f" % pt,
                     "%.0f" % bt, "%.0f" % (pt - base[fn]), "%.0f" % (bt - base[fn]),
                     "%.2f" % (pt / bt)])
    table("Probed call: no probe vs proftrace vs bpftrace (entry+return, time per call)",
          ["function (first instruction)", "no probe ns", "proftrace ns", "bpftrace ns",
           "proftrace overhead ns", "bpftrace overhead ns", "proftrace / bpftrace"], rows)

    on = measure("pb_endbr_push", "proftrace")
    off = measure("pb_endbr_push", "proftrace", "set prologue_skip off\n")
    won = measure("pb_mov_push", "proftrace")
    woff = measure("pb_mov_push", "proftrace", "set prologue_skip off\n")
    nowake = measure("pb_push", "proftrace")
    wake = measure("pb_push", "proftrace", "set ringbuf_wakeup on\n")
    # tokens=/kv_len=/batch= on the step line: two value records per call
    # (arguments at entry, the return value at exit) on top of the pair
    vals = measure("pb_push", "proftrace", "", step_extra=" tokens=arg0 kv_len=arg1 batch=ret")
    table("Design choices, each against its alternative in this run",
          ["choice", "chosen ns/call", "alternative ns/call", "alternative / chosen"],
          [["probe after a leading endbr64 (`prologue_skip on` vs `off`), pb_endbr_push",
            "%.0f" % on, "%.0f" % off, "%.1fx" % (off / on)],
           ["walk over a leading mov to the push (`prologue_skip on` vs `off`), pb_mov_push",
            "%.0f" % won, "%.0f" % woff, "%.1fx" % (woff / won)],
           ["drain the ring on a timer (no wakeup) vs wake the reader per record, pb_push",
            "%.0f" % nowake, "%.0f" % wake, "%.2fx" % (wake / nowake)],
           ["no values vs `tokens=arg0 kv_len=arg1 batch=ret` read at each call, pb_push",
            "%.0f" % nowake, "%.0f" % vals, "%.2fx" % (vals / nowake)]])


# rows of the shim table: (shim_bench key, label, records of that kind per launch)
SHIM_ROWS = (
    ("buffer_done_ns_per_record", "buffer-completed path, ring drained, per record", 2),
    ("buffer_done_cold_ns_per_record",
     "buffer-completed path, 128 MiB of buffers (read from DRAM), per record", 2),
    ("buffer_done_full_ns_per_record", "buffer-completed path, ring full (every record "
     "dropped), per record", 2),
    ("cupti_next_record_ns", "part: libcupti's cuptiActivityGetNextRecord, per record", 2),
    ("convert_ns_per_record", "part: ptg_convert__activity (interns kernel names), per record", 2),
    ("ring_write_ns", "part: ptg_ring__write, per record", 2),
    ("intern_hit_ns", "part: ptg_ring__intern of a name already there, per kernel", 1),
)
SHIM_TARGET_NS = 1000.0  # issue 5: well under 1 us of host time per launch


def shim_table():
    """The CUPTI shim's own CPU time per GPU record (no GPU needed)."""
    exe = os.path.join(BENCH, "shim_bench")
    head = "\n### CUPTI shim: host CPU per GPU record (synthetic CUPTI buffers, no GPU)\n"
    if not os.path.exists(exe):
        print(head + "\nskipped: %s not built (no CUDA/CUPTI here; set CUDA_HOME)" % exe)
        return
    out = subprocess.run([exe, str(max(REPEAT, 7))], capture_output=True, text=True)
    if out.returncode:
        print(head + "\nshim_bench failed: " + (out.stderr.strip() or "exit %d" % out.returncode))
        return
    v = {k: float(x) for k, x in (l.split() for l in out.stdout.splitlines() if l.strip())}
    rows = []
    for key, label, per in SHIM_ROWS:
        ns = v[key]
        rows.append([label, "%.1f" % ns, "%.1f" % (ns * per), "%.3f" % (ns * per / SHIM_TARGET_NS)])
    table("CUPTI shim: host CPU per GPU record and per launch (1 launch = 1 API record + "
          "1 kernel record), synthetic CUPTI buffers, no GPU, median of %d" % v["repetitions"],
          ["measurement", "ns", "ns per launch", "per launch / 1 us target"], rows)
    print("\nshim_bench links the objects of libproftrace_cupti.so and the real libcupti: "
          "ptg_shim__buffer_done (what CUPTI's worker thread runs for each completed buffer) "
          "over buffers of %d bytes laid out as CUPTI fills them: %d launches each, a "
          "CUpti_ActivityAPI (cudaLaunchKernel) and a CUpti_ActivityKernel10 per launch, %d "
          "distinct kernel names of %d bytes on average cycling as in a decode step. The ring "
          "has the shim's default %d slots and is drained between buffers by setting tail = "
          "head in the same thread (a reader on another core would add the slots' cache-line "
          "transfers). Ring full: the drop path, records converted then counted in "
          "ring_dropped. CUPTI's own cost of recording an activity (needs a GPU) is not in "
          "these figures. A kernel name seen before at the same address costs one "
          "comparison of its bytes (the shim caches ids by address); a new one is hashed "
          "once."
          % (v["buffer_bytes"], v["launches_per_buffer"], v["distinct_names"],
             v["name_len_avg"], 1 << 15))


INJECT_N = int(os.environ.get("PT_BENCH_INJECT_N", "50"))


def inject_run(label, cmd, env):
    """INJECT_N loads of fresh copies of a small library into cmd's
    victim with tests/tools/ptinject; a row of pause and call figures."""
    tools = os.environ.get("PT_TOOLS", os.path.join(ROOT, ".output", "tests-tools"))
    victims = os.environ.get("PT_VICTIMS", os.path.join(ROOT, ".output", "victims"))
    tmp = tempfile.mkdtemp(prefix="pt-bench-inj-")
    os.chmod(tmp, 0o755)
    libs = []
    for i in range(INJECT_N):
        libs.append(os.path.join(tmp, "lib%03d.so" % i))
        shutil.copy(os.path.join(victims, "libinject_probe.so"), libs[-1])
    v = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        pid = int(readline(v.stdout, "ready").split()[1])
        time.sleep(0.3)
        out = subprocess.run([os.path.join(tools, "ptinject"), str(pid)] + libs,
                             capture_output=True, timeout=300)
        rows = [json.loads(x) for x in out.stdout.decode().splitlines()]
    finally:
        v.kill()
        v.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    ok = [r for r in rows if r["rc"] == 0]
    pause = sorted(r["pause_ms"] for r in ok) or [float("nan")]
    call = sorted(r["call_ms"] for r in ok) or [float("nan")]
    p99 = pause[min(len(pause) - 1, int(len(pause) * 0.99))]
    return [label, "%d/%d" % (len(ok), len(rows)), "%.2f" % pause[len(pause) // 2],
            "%.2f" % p99, "%.2f" % pause[-1], "%.2f" % call[len(call) // 2],
            ", ".join(sorted(set(r["syscall"] for r in ok)))]


def inject_table():
    """--inject: how long the borrowed thread is held (attach/inject.c)."""
    victims = os.environ.get("PT_VICTIMS", os.path.join(ROOT, ".output", "victims"))
    vi = os.path.join(victims, "victim_inject")
    env = {k: x for k, x in os.environ.items() if k != "LD_PRELOAD"}
    rows = [
        inject_run("C: 4 threads in malloc/free", [vi, "malloc"], env),
        inject_run("C: 3 threads in dlopen/dlclose", [vi, "dlopen",
                                                      os.path.join(victims, "libvictim_dl.so")],
                   env),
        inject_run("Python 3.11 (Debian): 3 threads handing off a token, 1 computing",
                   ["/usr/bin/python3", os.path.join(ROOT, "tests", "victims",
                                                     "pyinject_gil.py")], env),
    ]
    table("--inject: the borrowed thread's pause per injection (%d injections of a fresh "
          "library each, ptinject)" % INJECT_N,
          ["victim", "ok", "pause median ms", "p99 ms", "max ms", "dlopen median ms",
           "safe point"], rows)
    print("\npause: from PTRACE_INTERRUPT of the borrowed thread to its release (its "
          "other threads run on); dlopen: the call alone (a real load: the library is new "
          "each time). On a 2-vCPU machine the victims' busy threads compete with it for "
          "a CPU: the thread and the injector run at nice -20 while it is held.")


CXX_CONFS = (
    ("one function", "step native:libtorch_cpu.so*:at::_ops::linear::call\n"),
    ("a glob, every overload", "step native:libtorch_cpu.so*:at::native::*softmax*\n"),
    ("a glob over every library", "step native:*:c10::impl::*\n"),
    ("a typo: closest names (demangles every symbol)",
     "step native:libtorch_cpu.so*:at::_ops::linaer::call\n"),
)


def cxx_table():
    """--dry-run over libtorch_cpu by C++ names (python3-torch, if installed)."""
    py = "/usr/bin/python3"
    head = "\n### C++ names: --dry-run over libtorch_cpu\n"
    p = subprocess.run([py, "-c", "import torch"], capture_output=True)
    if p.returncode:
        print(head + "\nskipped: no torch for %s (Debian: apt install python3-torch)" % py)
        return
    v = subprocess.Popen([py, "-c", "import torch, os, sys\nprint('ready', os.getpid(), "
                          "flush=True)\nsys.stdin.readline()"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    pid = int(v.stdout.readline().split()[1])
    lib = [l.split()[-1] for l in open("/proc/%d/maps" % pid) if "libtorch_cpu.so" in l][0]
    nsyms = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                           text=True).stdout.count("\n")
    rows = []
    tmp = tempfile.mkdtemp(prefix="pt-bench-")
    try:
        for label, conf in CXX_CONFS:
            path = os.path.join(tmp, "t.conf")
            with open(path, "w") as f:
                f.write(conf)
            times = []
            for _ in range(REPEAT):
                t0 = time.monotonic()
                r = subprocess.run([PROFTRACE, "-p", str(pid), "--targets", path, "--dry-run"],
                                   capture_output=True, text=True)
                times.append(time.monotonic() - t0)
            n = max(0, r.stdout.count("\n") - 1)
            rows.append(["%s: `%s`" % (label, conf.split()[-1]), "%d" % n,
                         "%.2f" % statistics.median(times)])
    finally:
        v.kill()
        v.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    table("C++ names: `--dry-run` over libtorch_cpu (%s, %d exported symbols), median of %d"
          % (os.path.basename(lib), nsyms, REPEAT),
          ["probe", "functions", "seconds (target: < 2)"], rows)


def machine_run(mode):
    """syscall_bench's ns a getppid() while proftrace (mode: None, no tool;
    "task_work", "sys_exit" (PT_NO_TASK_WORK=1), "no-native") samples a
    Python process that sleeps 1 ms at a time (off-CPU intervals that get
    native stacks); the process timed is not traced."""
    tmp = tempfile.mkdtemp(prefix="pt-bench-machine-")
    script = os.path.join(tmp, "idle.py")
    with open(script, "w") as f:
        f.write("import sys, time\n\ndef work():\n    time.sleep(0.001)\n\n"
                "print('ready', flush=True)\nwhile True:\n    work()\n")
    v = subprocess.Popen(["/usr/bin/python3", script], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    t = None
    try:
        readline(v.stdout, "ready")
        if mode:
            env = dict(os.environ)
            env.pop("PT_NO_TASK_WORK", None)
            if mode == "sys_exit":
                env["PT_NO_TASK_WORK"] = "1"
            conf = os.path.join(tmp, "t.conf")
            with open(conf, "w") as f:
                f.write("lines py:idle::work\nset sample_hz 1000\nset native_frames %s\n"
                        % ("off" if mode == "no-native" else "on"))
            t = subprocess.Popen([PROFTRACE, "-p", str(v.pid), "--targets", conf, "-o",
                                  os.path.join(tmp, "out")], stderr=subprocess.PIPE, env=env,
                                 bufsize=0)
            readline(t.stderr, "proftrace: attached", timeout=90)
            time.sleep(0.5)
        p = subprocess.run([os.path.join(BENCH, "syscall_bench")], capture_output=True, text=True,
                           timeout=120)
        ns = float(p.stdout.split()[1])
        via = None
        if t:
            t.send_signal(signal.SIGINT)
            t.stderr.read()
            t.wait(60)
            with open(os.path.join(tmp, "out", "summary.json")) as f:
                nf = json.load(f)["meta"]["sampling"]["native_frames"]
            via = nf and nf["offcpu_via"]
        return ns, via
    finally:
        if t and t.poll() is None:
            t.kill()
            t.wait()
        v.kill()
        v.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def machine_table():
    """What proftrace attached to one process costs the others: a getppid()
    in a process it does not trace, interleaved runs of each mode."""
    modes = (None, "task_work", "sys_exit", "no-native")
    got = {m: [] for m in modes}
    vias = {m: set() for m in modes}
    for _ in range(REPEAT):
        for m in modes:
            ns, via = machine_run(m)
            got[m].append(ns)
            vias[m].add(via)
    base = statistics.median(got[None])
    names = {None: "no tool", "task_work": "proftrace 1 kHz, native frames (task work)",
             "sys_exit": "proftrace 1 kHz, native frames (PT_NO_TASK_WORK=1)",
             "no-native": "proftrace 1 kHz, --no-native"}
    rows = []
    for m in modes:
        med = statistics.median(got[m])
        how = ", ".join(sorted(str(x) for x in vias[m] if x)) or "-"
        rows.append((names[m], how, "%.0f" % med, "%.2fx" % (med / base),
                     " ".join("%.0f" % x for x in got[m])))
    table("The rest of the machine: getppid() in a process proftrace does not trace, while it "
          "samples a Python process (Debian 3.11, 1 ms sleeps)",
          ("while", "native stacks off the CPU via", "ns a call (best of 7 x 300k)",
           "vs no tool", "runs"), rows)


def attach_run(python, conf):
    """The demo engine started as `make demo` starts it, proftrace attached
    with conf: (wall s to "attached", proftrace's CPU s by then, its CPU s
    for 2 s attached after that)."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = os.path.join(ROOT, ".output", "libproftrace_agent.so")
    eng = subprocess.Popen([python, os.path.join(ROOT, "tests", "victims", "demo_engine.py")],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env)
    tmp = tempfile.mkdtemp(prefix="pt-bench-attach-")
    try:
        pid = int(readline(eng.stdout, "ready").split()[1])
        t0 = time.monotonic()
        t = subprocess.Popen([PROFTRACE, "-p", str(pid), "--targets", conf, "-d", "2", "-o",
                              os.path.join(tmp, "out")], stderr=subprocess.PIPE, bufsize=0)
        readline(t.stderr, "proftrace: attached")
        wall = time.monotonic() - t0
        cpu = cpu_ticks_ns(t.pid) / 1e9
        t.stderr.read()
        t.wait(60)
        with open(os.path.join(tmp, "out", "summary.json")) as f:
            o = json.load(f)["overhead"]
        return wall, cpu, o.get("steady_cpu_ms", float("nan")) / 1e3
    finally:
        eng.kill()
        eng.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def attach_table():
    """Attach: wall time and proftrace CPU to attach targets/demo.conf to the
    demo engine, and what each BPF program costs to load (the verifier)."""
    conf = os.path.join(ROOT, "targets", "demo.conf")
    runs = [attach_run("/usr/bin/python3", conf) for _ in range(REPEAT)]
    med = [statistics.median(r[i] for r in runs) for i in range(3)]
    table("Attach: targets/demo.conf on the demo engine (Debian 3.11, the agent)",
          ("what", "median", "runs"),
          [("wall to \"attached\" (s)", "%.3f" % med[0], " ".join("%.3f" % r[0] for r in runs)),
           ("proftrace CPU by then (s)", "%.3f" % med[1], " ".join("%.3f" % r[1] for r in runs)),
           ("proftrace CPU, 2 s attached (s)", "%.3f" % med[2],
            " ".join("%.3f" % r[2] for r in runs))])
    rows = []
    for flag, label in (([], "with value readers"), (["--no-vals"], "without")):
        p = subprocess.run([os.path.join(BENCH, "bpf_load_bench")] + flag, capture_output=True,
                           text=True)
        for ln in p.stdout.splitlines():
            name, us, insns = ln.split()
            rows.append((name, label, "%.1f" % (int(us) / 1e3), insns))
        if p.returncode:
            rows.append(("(failed)", label, p.stderr.strip()[:60], ""))
    table("BPF program loads (the verifier's own figures)",
          ("program", "values", "verify ms", "insns processed"), rows)


SECTIONS = ("probes", "python", "agent", "sampling", "native", "machine", "agg", "shim", "inject",
            "memory", "cxx", "attach")


def main():
    if os.geteuid() != 0:
        print("bench: needs root (uprobes)")
        return 1
    only = [x for x in os.environ.get("PT_BENCH_ONLY", "").split(",") if x]
    bad = [x for x in only if x not in SECTIONS]
    if bad:
        print("bench: PT_BENCH_ONLY: unknown section %s (known: %s)"
              % (", ".join(bad), ",".join(SECTIONS)))
        return 2
    want = set(only or SECTIONS)
    print("proftrace bench: median of %d runs each" % REPEAT)
    if "probes" in want:
        probe_tables()
    if "python" in want:
        python_tables()
    if "agent" in want:
        agent_tables()
    if "sampling" in want:
        sampling_tables()
    if "native" in want:
        native_frames_table()
    if "machine" in want:
        machine_table()
    if "agg" in want:
        agg = subprocess.run([os.path.join(BENCH, "agg_bench")], capture_output=True, text=True)
        print("\n### Aggregator (synthetic stream, no BPF)\n")
        print(agg.stdout.strip() or agg.stderr.strip())
        # the GPU join and its fold at the default bound (docs/gpu.md)
        gj = subprocess.run([os.path.join(BENCH, "gpujoin_bench")], capture_output=True,
                            text=True)
        print("\n### GPU join at its memory bound (synthetic records, no GPU)\n")
        print(gj.stdout.strip() or gj.stderr.strip())
    if "shim" in want:
        shim_table()
    if "inject" in want:
        inject_table()
    if "memory" in want:
        import memory  # bench/memory.py: RSS over a long run
        memory.memory_tables()
    if "cxx" in want:
        cxx_table()
    if "attach" in want:
        attach_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
