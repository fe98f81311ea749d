# SPDX-License-Identifier: BSD-2-Clause
"""`make bench`: what a probed call costs, and what proftrace's choices buy.

Every figure is measured in this invocation, against a baseline run in the
same invocation, and printed as a ratio. No assertions: speed lives here,
correctness in `make test`.
"""
import json
import os
import select
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
                          os.path.join(tmp, "out")], stderr=subprocess.PIPE)
    readline(t.stderr, "proftrace: attached")
    return t


def proftrace_calls(t, tmp, symbol):
    """After the target exited: calls proftrace counted for symbol."""
    t.wait(30)
    with open(os.path.join(tmp, "out", "summary.json")) as f:
        rows = [r for r in json.load(f)["functions"] if r["symbol"] == symbol]
    return rows[0]["calls"] if rows else 0


def one_run(fn, tool, conf_extra=""):
    """ns per call of fn with tool in None/'proftrace'/'bpftrace' attached."""
    n = CALLS[fn]
    exe = os.path.join(BENCH, "probe_bench")
    b = subprocess.Popen([exe, fn, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = int(readline(b.stdout, "ready").split()[1])
    t = None
    tmp = tempfile.mkdtemp(prefix="pt-bench-")
    try:
        if tool == "proftrace":
            t = start_proftrace(pid, "step native:exe:%s\n%s" % (fn, conf_extra), tmp)
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


def measure(fn, tool, conf_extra=""):
    runs = [one_run(fn, tool, conf_extra) for _ in range(REPEAT)]
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


def py_run(python, which, tool, env_extra=None, conf_extra=""):
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
            t = start_proftrace(pid, "bucket py.hot py:py_bench::hot\n" + conf_extra, tmp)
        b.stdin.write(b"go\n")
        b.stdin.flush()
        ns = float(readline(b.stdout, "ns_per_call", timeout=300).split()[1])
        b.wait(30)
        return ns, proftrace_calls(t, tmp, "hot") if tool == "proftrace" else None
    finally:
        for p in (b, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()


def py_measure(python, which, tool, env_extra=None, conf_extra=""):
    runs = [py_run(python, which, tool, env_extra, conf_extra) for _ in range(REPEAT)]
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


def table(title, head, rows):
    print("\n### " + title + "\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def main():
    if os.geteuid() != 0:
        print("bench: needs root (uprobes)")
        return 1
    have_bpftrace = subprocess.run(["which", "bpftrace"], capture_output=True).returncode == 0
    print("proftrace bench: median of %d runs each, ns per call of the probed function" % REPEAT)

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
    table("Design choices, each against its alternative in this run",
          ["choice", "chosen ns/call", "alternative ns/call", "alternative / chosen"],
          [["probe after a leading endbr64 (`prologue_skip on` vs `off`), pb_endbr_push",
            "%.0f" % on, "%.0f" % off, "%.1fx" % (off / on)],
           ["walk over a leading mov to the push (`prologue_skip on` vs `off`), pb_mov_push",
            "%.0f" % won, "%.0f" % woff, "%.1fx" % (woff / won)],
           ["drain the ring on a timer (no wakeup) vs wake the reader per record, pb_push",
            "%.0f" % nowake, "%.0f" % wake, "%.2fx" % (wake / nowake)]])

    python_tables()

    agg = subprocess.run([os.path.join(BENCH, "agg_bench")], capture_output=True, text=True)
    print("\n### Aggregator (synthetic stream, no BPF)\n")
    print(agg.stdout.strip() or agg.stderr.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
