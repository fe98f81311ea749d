#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""make gpu-check: the CUPTI path on a real GPU, in one command (<= 5 min).

As root on a machine with an NVIDIA GPU, section by section, each with a
progress line and a timeout of its own (a section that does not finish
is reported with what it was doing and where its processes were stuck,
its processes are killed, and the next section runs):

  calls    host ns per CUDA call (tests/gpu/launch_bench): no shim, the
           shim dormant, the shim active (a reader attached), interleaved,
           3 rounds; launches, copies, syncs and calls the shim never
           records (cudaGetDevice, cudaEventQuery)
  start    victim_gpu under proftrace, the shim at start: runtime, driver
           (cuLaunchKernelEx) and CUDA-graph launches, a memset and a copy
           per step, each kind in a bucket of its own; every piece of work
           joined to its launch, step and bucket; GPU ms per name and per
           bucket against the victim's CUDA events
  inject   the same, the shim loaded into the running victim by
           proftrace --inject
  ring     the shim's ring read alone (gpuring_dump) on that victim: every
           kernel, copy and memset correlates to exactly one launch record
           on the victim's thread, inside its host call (check_truth.py)
  torch    a PyTorch decode loop (victim_torch.py: Python scheduler,
           8 bf16 Linear+ReLU, softmax/argmax and a copy to the host, one
           Triton kernel), started after `proftrace env`, attached with
           py: steps and buckets: kernels per step, joined share, GPU ms
           per bucket against an independent join of trace.json's records
           with the victim's own bucket windows; names demangled
  graph    the same with the forward pass replayed as a CUDA graph
  tinject  the same loop started without proftrace's environment, both
           helpers loaded by --inject
  cost     the loop's step time attached vs not (both started after
           `proftrace env`), 3 interleaved pairs of 600 steps: median and
           mean ratios, the tail (p99, steps over twice the median)

Then one table. Exits 1 when a check fails, 0 when all pass or when there
is no GPU (no nvidia-smi: skipped, said on one line). Sections without
torch (or Triton) say so and skip those checks.

Environment: PT_GPU_ONLY=calls,start,... picks sections; PT_GPU_CAPTURE=DIR
keeps the ring of a real run with its truth (victim_gpu and the PyTorch
loop, eager and graph) for tests/fixtures/gpu (docs/gpu.md); PT_PYTHON is
the Python that has torch (default: this one); limits: PT_GPU_TOL,
PT_GPU_MAX_LAUNCH_NS, PT_GPU_MAX_OTHER_NS, PT_GPU_MAX_RATIO,
PT_GPU_MAX_STALL_MS. The check functions are pure (check_join,
join_trace, call_rows_ab, phase_rows, table, run_sections) and tested
without a GPU:
tests/integration/test_gpu_check.py.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUTPUT = os.environ.get("PT_OUTPUT", ".output")

CONF = """\
step   native:exe:gpu_step
bucket gpu.launch native:exe:gpu_launch
bucket gpu.driver native:exe:gpu_launch_drv
bucket gpu.graph  native:exe:gpu_launch_graph
bucket gpu.memset native:exe:gpu_memset
bucket gpu.sync   native:exe:gpu_sync
"""

# victim_gpu per step: 8 runtime launches, 2 driver launches, one graph of
# 4 kernels, a memset, a copy
VICTIM_ARGS = ["--steps", "30", "--kernels", "8", "--driver", "2", "--graph-kernels", "4",
               "--memset", "--sleep-ms", "5", "--start-delay-ms", "0"]

LIMITS = {
    "tol": float(os.environ.get("PT_GPU_TOL", "0.03")),
    "launch_ns": float(os.environ.get("PT_GPU_MAX_LAUNCH_NS", "1000")),
    "other_ns": float(os.environ.get("PT_GPU_MAX_OTHER_NS", "20")),
    "ratio": float(os.environ.get("PT_GPU_MAX_RATIO", "1.03")),
    "stall_ms": float(os.environ.get("PT_GPU_MAX_STALL_MS", "5000")),
}

# Calls the shim records (a callback on each) and calls it must not touch.
RECORDED = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch",
            "cudaMemcpyAsync", "cudaStreamSynchronize")
NOT_RECORDED = ("cudaGetDevice", "cudaEventQuery")
# trace.json's row of a thread's CUDA calls: 2000000000 + tid (docs/summary.md)
TRACE_API_TID = 2000000000
# CUPTI callback ids of graph launches (runtime cudaGraphLaunch{,_ptsz},
# driver cuGraphLaunch{,_ptsz})
GRAPH_CBIDS = {("runtime", 311), ("runtime", 312), ("driver", 514), ("driver", 515)}


class Row:
    def __init__(self, section, what, value, limit, ok):
        self.section, self.what, self.value, self.limit, self.ok = (
            section, what, value, limit, ok)


def row(rows, section, what, value, limit, ok):
    rows.append(Row(section, what, str(value), str(limit), bool(ok)))
    return ok


# ---- pure checks (tested without a GPU) ----

def expected_from_truth(truth, launch_bucket="gpu.launch"):
    """What summary.json must show for a victim_gpu truth file: kernels
    by name (count, CUDA-event ms; a graph's kernels get the graph's span),
    copies, memsets, and per bucket the work it launched and its ms."""
    names, ms = {}, {}
    buckets = {}

    def add_b(b, n, m):
        w = buckets.setdefault(b, [0, 0.0])
        w[0] += n
        w[1] += m

    for s in truth["steps"]:
        for k in s.get("kernels", []):
            names[k["name"]] = names.get(k["name"], 0) + 1
            ms[k["name"]] = ms.get(k["name"], 0.0) + k["gpu_ms"]
            add_b("gpu.driver" if k["name"] == "ptv_spin_drv" else launch_bucket, 1,
                  k["gpu_ms"])
        g = s.get("graph")
        if g:
            names[g["name"]] = names.get(g["name"], 0) + g["kernels"]
            ms[g["name"]] = ms.get(g["name"], 0.0) + g["gpu_ms"]
            add_b("gpu.graph", g["kernels"], g["gpu_ms"])
        if "memset_ms" in s:  # its time is too short for events: counted only
            add_b("gpu.memset", 1, 0.0)
    n = len(truth["steps"])
    memsets = n if truth.get("memset") else 0
    kernels = sum(names.values())
    return {"steps": n, "names": names, "ms": ms, "kernels": kernels, "copies": n,
            "memsets": memsets, "launch_bucket": launch_bucket,
            "buckets": {b: {"work": v[0], "ms": v[1]} for b, v in buckets.items()}}


def check_stream(rows, section, g):
    """The rows every attached run has: a stream, no conflict, nothing lost."""
    if not row(rows, section, "GPU stream", g.get("source"), "cupti-shim",
               g.get("source") == "cupti-shim"):
        row(rows, section, "why", g.get("why"), "-", False)
        return False
    sh = g.get("shim", {})
    c = sh.get("conflict")
    row(rows, section, "CUPTI conflict", "none" if c is None else
        "%s: %s" % (c.get("call"), c.get("result")), "none", c is None)
    row(rows, section, "shim activations", sh.get("activations"), ">= 1",
        (sh.get("activations") or 0) >= 1)
    rec = g.get("records", {})
    lost = {k: rec.get(k, 0) for k in ("ring_dropped", "cupti_dropped", "lost", "invalid",
                                         "names_lost")}
    row(rows, section, "records dropped/lost/invalid",
        ", ".join("%s %s" % kv for kv in lost.items() if kv[1]) or "0", "0",
        not any(lost.values()))
    return True


def check_join(summary, exp, section, tol=None):
    """Rows for one attached victim_gpu run: counts, times, the join."""
    tol = LIMITS["tol"] if tol is None else tol
    rows = []
    g = summary.get("gpu", {})
    if not check_stream(rows, section, g):
        return rows
    steps = summary.get("stats", {}).get("steps")
    row(rows, section, "steps", steps, exp["steps"], steps == exp["steps"])
    top = {k["name"]: k for k in g.get("top_kernels", [])}
    for name, want in sorted(exp["names"].items()):
        got = top.get(name, {}).get("count", 0)
        row(rows, section, "%s launches" % name, got, want, got == want)
    for name, want in sorted(exp["ms"].items()):
        got = top.get(name, {}).get("total_ms", 0.0)
        rel = abs(got - want) / want if want else 1.0
        row(rows, section, "%s GPU ms vs CUDA events" % name,
            "%.3f vs %.3f (%.2f%%)" % (got, want, rel * 100), "<= %.1f%%" % (tol * 100),
            rel <= tol)
    row(rows, section, "kernels", g.get("kernels"), exp["kernels"],
        g.get("kernels") == exp["kernels"])
    if exp.get("memsets"):
        row(rows, section, "memsets", g.get("memsets"), exp["memsets"],
            g.get("memsets") == exp["memsets"])
    row(rows, section, "unmatched, outside steps",
        "%s, %s" % (g.get("unmatched"), g.get("outside_steps")), "0, 0",
        g.get("unmatched") == 0 and g.get("outside_steps") == 0)
    st = g.get("steps", {})
    row(rows, section, "steps with GPU work", st.get("steps_with_gpu"), exp["steps"],
        st.get("steps_with_gpu") == exp["steps"])
    work = exp["kernels"] + exp["copies"] + exp.get("memsets", 0)
    row(rows, section, "work joined to steps", st.get("work_launched"), work,
        st.get("work_launched") == work)
    b = {x["name"]: x for x in g.get("buckets", [])}
    want_b = exp.get("buckets") or {exp["launch_bucket"]: {"work": exp["kernels"]}}
    for name, w in sorted(want_b.items()):
        got = b.get(name, {})
        row(rows, section, "work launched in %s" % name, got.get("work_launched"), w["work"],
            got.get("work_launched") == w["work"])
        if w.get("ms"):
            rel = abs((got.get("gpu_ms") or 0) - w["ms"]) / w["ms"]
            row(rows, section, "%s GPU ms vs CUDA events" % name,
                "%.3f vs %.3f (%.2f%%)" % (got.get("gpu_ms") or 0, w["ms"], rel * 100),
                "<= %.1f%%" % (tol * 100), rel <= tol)
    ld = g.get("launch_delay", {})
    row(rows, section, "launch delays", ld.get("count"), exp["kernels"],
        ld.get("count") == exp["kernels"])
    return rows


def trace_records(trace):
    """(api by correlation id, work list) from a proftrace trace.json: the
    raw GPU records, on CLOCK_MONOTONIC ns."""
    t0 = trace["otherData"]["t0_mono_ns"]
    api, work = {}, []
    for e in trace["traceEvents"]:
        cat = e.get("cat")
        if e.get("ph") != "X" or cat not in ("cuda_api", "kernel", "memcpy", "memset"):
            continue
        ts = t0 + round(float(e["ts"]) * 1000)
        dur = round(float(e["dur"]) * 1000)
        corr = e.get("args", {}).get("correlation")
        if cat == "cuda_api":
            api.setdefault(corr, (ts, e["tid"] - TRACE_API_TID, e["args"].get("api"),
                                  e["args"].get("cbid")))
        else:
            work.append({"cat": cat, "name": e.get("name"), "ts": ts, "dur": dur,
                         "corr": corr})
    return api, work


def join_trace(trace, truth):
    """An independent join: each kernel, copy and memset of trace.json to
    its launch record (correlation id), that call's thread and time to the
    victim's own bucket windows (truth["calls"]: [bucket, start, end]) and
    steps. Returns per bucket {work, gpu_ns, cbids}, and the counts."""
    api, work = trace_records(trace)
    tid = truth["tid"]
    calls = sorted((s, e, b) for b, s, e in truth["calls"])
    steps = sorted((s["host_start_ns"], s["host_end_ns"]) for s in truth["steps"])
    out = {"buckets": {}, "unmatched": 0, "outside_steps": 0, "work": len(work),
           "kernels": 0, "per_step": [0] * len(steps)}
    import bisect
    starts = [c[0] for c in calls]
    sstarts = [s[0] for s in steps]
    for w in work:
        if w["cat"] == "kernel":
            out["kernels"] += 1
        a = api.get(w["corr"])
        if a is None:
            out["unmatched"] += 1
            continue
        ts, t, kind, cbid = a
        i = bisect.bisect_right(sstarts, ts) - 1
        if t != tid or i < 0 or ts >= steps[i][1]:
            out["outside_steps"] += 1
            continue
        out["per_step"][i] += 1
        j = bisect.bisect_right(starts, ts) - 1
        if j >= 0 and calls[j][0] <= ts < calls[j][1]:
            b = out["buckets"].setdefault(calls[j][2], {"work": 0, "gpu_ns": 0, "cbids": set()})
            b["work"] += 1
            b["gpu_ns"] += w["dur"]
            b["cbids"].add((kind, cbid))
    return out


def check_torch(summary, truth, trace, section):
    """Rows for an attached PyTorch loop run."""
    rows = []
    n = len(truth["steps"])
    steps = summary.get("stats", {}).get("steps")
    row(rows, section, "steps (victim's count)", steps, n, steps == n)
    g = summary.get("gpu", {})
    if not check_stream(rows, section, g):
        return rows
    k, c = g.get("kernels") or 0, g.get("copies") or 0
    row(rows, section, "kernels, copies per step", "%.2f, %.2f" % (k / n, c / n),
        "whole numbers", k % n == 0 and c % n == 0 and k > 0)
    row(rows, section, "unmatched, outside steps",
        "%s, %s" % (g.get("unmatched"), g.get("outside_steps")), "0, 0",
        g.get("unmatched") == 0 and g.get("outside_steps") == 0)
    st = g.get("steps", {})
    row(rows, section, "steps with GPU work", st.get("steps_with_gpu"), n,
        st.get("steps_with_gpu") == n)
    work = k + c + (g.get("memsets") or 0)
    row(rows, section, "work joined to a step", "%s of %s" % (st.get("work_launched"), work),
        "all", st.get("work_launched") == work)
    row(rows, section, "launch delays", (g.get("launch_delay") or {}).get("count"), k,
        (g.get("launch_delay") or {}).get("count") == k)
    mangled = [x["name"] for x in g.get("top_kernels", []) if x["name"].startswith("_Z")]
    row(rows, section, "kernel names demangled", "%d mangled" % len(mangled), "0",
        not mangled)
    ind = join_trace(trace, truth)
    od = trace.get("otherData", {})
    row(rows, section, "trace.json complete", "dropped %s" % od.get("dropped"), "0",
        not od.get("dropped") and not od.get("truncated"))
    row(rows, section, "work in trace.json = summary", ind["work"], work, ind["work"] == work)
    per = set(ind["per_step"])
    row(rows, section, "work per step (independent join)", sorted(per)[:3], "one value",
        len(per) == 1)
    b = {x["name"]: x for x in g.get("buckets", [])}
    for name in ("host.schedule", "model.forward", "model.sample", "model.post"):
        mine = ind["buckets"].get(name, {"work": 0, "gpu_ns": 0, "cbids": set()})
        got = b.get(name, {})
        if name == "model.post" and not truth.get("triton"):
            row(rows, section, "model.post (Triton)", "skipped: %s" % truth.get("triton_why"),
                "-", True)
            continue
        want_some = name != "host.schedule"
        row(rows, section, "%s work (independent join)" % name,
            "%s vs %s" % (got.get("work_launched"), mine["work"]),
            "equal, > 0" if want_some else "equal, 0",
            got.get("work_launched") == mine["work"] and (mine["work"] > 0) == want_some)
        gm = got.get("gpu_ms") or 0.0
        # gpu_ms is printed to the µs (3 decimals)
        row(rows, section, "%s GPU ms (independent join)" % name,
            "%.3f vs %.3f" % (gm, mine["gpu_ns"] / 1e6), "equal to 1 us",
            abs(gm - mine["gpu_ns"] / 1e6) <= 0.0011)
        if name == "model.post":
            drv = all(kind == "driver" for kind, _ in mine["cbids"])
            row(rows, section, "Triton launches are driver calls",
                sorted(mine["cbids"]), "driver", drv and mine["cbids"])
        if name == "model.forward" and truth.get("graph"):
            row(rows, section, "forward kernels from graph launches", sorted(mine["cbids"]),
                "cudaGraphLaunch", mine["cbids"] and mine["cbids"] <= GRAPH_CBIDS)
    return rows


def dist(v):
    v = sorted(v)
    if not v:
        return {}
    m = statistics.median(v)
    return {"n": len(v), "p50": m, "mean": statistics.fmean(v),
            "p90": v[int(0.9 * (len(v) - 1))], "p99": v[int(0.99 * (len(v) - 1))],
            "max": v[-1], "over_2x": sum(1 for x in v if x > 2 * m)}


def call_rows_ab(none, ab, section="calls"):
    """none: [ns_per_call] of processes without the shim; ab: [{dormant:
    {...}, active: {...}}] of launch_bench --ab processes. Per call: the
    median of none, dormant - none, and active - dormant per process (in
    one process, so placement does not count)."""
    rows = []
    for c in RECORDED + NOT_RECORDED:
        n = statistics.median(x[c] for x in none)
        d = statistics.median(x["dormant"][c] for x in ab)
        act = [x["active"][c] - x["dormant"][c] for x in ab]
        lim = LIMITS["launch_ns"] if c in RECORDED else max(LIMITS["other_ns"], 0.05 * n)
        row(rows, section, "%s ns: none, dormant-none, active-dormant" % c,
            "%.0f, %+.0f, %s" % (n, d - n, " ".join("%+.0f" % x for x in act)),
            "active <= %+.0f" % lim, statistics.median(act) <= lim)
    return rows


def table(rows):
    w = [max([len(h)] + [len(getattr(r, a)) for r in rows]) for h, a in
         (("section", "section"), ("check", "what"), ("value", "value"), ("limit", "limit"))]
    lines = ["%-*s  %-*s  %-*s  %-*s  %s" % (w[0], "section", w[1], "check", w[2], "value",
                                             w[3], "want", "result")]
    lines.append("-" * (sum(w) + 8 + 6))
    for r in rows:
        lines.append("%-*s  %-*s  %-*s  %-*s  %s" % (w[0], r.section, w[1], r.what, w[2],
                                                     r.value, w[3], r.limit,
                                                     "ok" if r.ok else "FAIL"))
    return "\n".join(lines)


# ---- sections, timeouts, and what a stuck process was doing ----

class Ctx:
    """What a section shares with the runner: its processes (killed when
    it overruns) and its last progress note."""

    def __init__(self, name):
        self.name = name
        self.procs = []
        self.note = "starting"
        self.lock = threading.Lock()

    def popen(self, *a, **kw):
        kw.setdefault("start_new_session", True)
        p = subprocess.Popen(*a, **kw)
        with self.lock:
            self.procs.append(p)
        return p

    def progress(self, note):
        self.note = note
        print("gpu-check:   %s: %s" % (self.name, note), flush=True)


def where_stuck(pid):
    """One line per thread of pid: name, kernel wait channel, the syscall
    it is in and the library its user PC is in (from /proc: no debugger
    on the GPU machine)."""
    maps = []
    try:
        with open("/proc/%d/maps" % pid) as f:
            for ln in f:
                p = ln.split()
                if len(p) >= 6:
                    lo, hi = (int(x, 16) for x in p[0].split("-"))
                    maps.append((lo, hi, os.path.basename(p[5])))
    except OSError:
        return ["pid %d: gone" % pid]
    out = []
    try:
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
    except OSError:
        return ["pid %d: gone" % pid]
    for t in tids[:32]:
        def rd(n):
            try:
                with open("/proc/%d/task/%d/%s" % (pid, t, n)) as f:
                    return f.read().strip()
            except OSError:
                return "?"
        sc = rd("syscall").split()
        where = "?"
        if len(sc) >= 2 and sc[0] not in ("running", "?"):
            pc = int(sc[-1], 16)
            where = next(("%s+0x%x" % (n, pc - lo) for lo, hi, n in maps if lo <= pc < hi),
                          hex(pc))
        out.append("  tid %d %-16s wchan %-20s syscall %-4s pc %s" % (
            t, rd("comm"), rd("wchan"), sc[0] if sc else "?", where))
    return out


def run_sections(sections, rows, log=print):
    """sections: [(name, timeout_s, fn(ctx, rows))]. Each runs in a thread;
    one that overruns gets a FAIL row saying what it was doing, the threads
    of its live processes are described, its processes are killed."""
    for i, (name, timeout, fn) in enumerate(sections):
        ctx = Ctx(name)
        t0 = time.monotonic()
        log("gpu-check: [%d/%d] %s (timeout %d s)" % (i + 1, len(sections), name, timeout))
        mine = []
        err = []

        def body():
            try:
                fn(ctx, mine)
            except Exception as e:  # one section failing must not hide the others
                err.append(e)

        th = threading.Thread(target=body, daemon=True)
        th.start()
        th.join(timeout)
        if th.is_alive():
            row(mine, name, "finished", "stuck after %d s: %s" % (timeout, ctx.note[:70]),
                "< %d s" % timeout, False)
            for p in ctx.procs:
                if p.poll() is None:
                    log("gpu-check: %s: stuck: %s (pid %d), its threads:" %
                        (name, " ".join(map(str, p.args))[:100], p.pid))
                    for ln in where_stuck(p.pid):
                        log(ln)
            for p in ctx.procs:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
            th.join(10)
        if err:
            row(mine, name, "run", repr(err[0])[:90], "-", False)
            # the row is cut to the table's width: the whole of it here
            log("gpu-check: %s: %s" % (name, err[0]))
        bad = sum(1 for r in mine if not r.ok)
        log("gpu-check: [%d/%d] %s: %d checks, %s in %.0f s" % (
            i + 1, len(sections), name, len(mine), "%d failed" % bad if bad else "all ok",
            time.monotonic() - t0))
        rows.extend(mine)


# ---- on the GPU machine ----

def path(*p):
    return os.path.join(ROOT, *p)


class Env:
    """Paths and the environment `proftrace env` prints."""

    def __init__(self, proftrace, shim, agent, tmp):
        self.proftrace, self.shim, self.agent, self.tmp = proftrace, shim, agent, tmp
        self.victim = path(OUTPUT, "gpu", "victim_gpu")
        self.bench = path(OUTPUT, "gpu", "launch_bench")
        self.dump = path(OUTPUT, "gpu", "gpuring_dump")
        self.python = os.environ.get("PT_PYTHON") or sys.executable
        self.capture = os.environ.get("PT_GPU_CAPTURE")
        self.torch = None  # None: not tried yet; "" works; else why not

    def base_env(self):
        return {k: v for k, v in os.environ.items()
                if k not in ("CUDA_INJECTION64_PATH", "PTV_LATE_SHIM", "LD_PRELOAD")}

    def pt_env(self):
        """The environment a server gets from eval "$(proftrace env)"."""
        e = self.base_env()
        e["CUDA_INJECTION64_PATH"] = self.shim
        if self.agent:
            e["LD_PRELOAD"] = self.agent
        return e


def shim_state(pid):
    """The state word (offset 192, shim/ptgpu.h) of the shim's segment in
    pid, -1: none. The segment is a memfd the shim keeps open, found as
    proftrace finds it (/proc/PID/fd); a forked child does not keep its
    parent's (the shim closes it there), so there is one at most."""
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return -1
    for fd in fds:
        path = "/proc/%d/fd/%s" % (pid, fd)
        try:
            if os.readlink(path) != "/memfd:proftrace-gpu (deleted)":
                continue
            with open(path, "rb") as f:
                f.seek(192)
                return int.from_bytes(f.read(4), "little")
        except OSError:
            continue
    return -1


def wait_line(ctx, stream, prefix, timeout, keep):
    """Read lines until one starts with prefix (kept in keep); a reader
    thread, so a silent process cannot block us past timeout."""
    found = []
    done = threading.Event()

    def rd():
        for ln in stream:
            keep.append(ln)
            if ln.startswith(prefix) and not found:
                found.append(ln)
                done.set()
        done.set()

    threading.Thread(target=rd, daemon=True).start()
    done.wait(timeout)
    return found[0] if found else None


def wait_active(pid, timeout=10.0):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if shim_state(pid) == 1:
            return True
        time.sleep(0.02)
    return False


def attached_run(ctx, env, cmd, venv, conf_text, out, inject=False, gpu="on", ready=None,
                 check_rc=True):
    """Start cmd (it prints its pid line, then waits for a line on stdin),
    attach proftrace, say go once attached and the shim is active, wait.
    Returns (summary, victim stdout lines, proftrace stderr lines) or
    raises with what went wrong."""
    conf = os.path.join(env.tmp, os.path.basename(out) + ".conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    ctx.progress("starting %s" % os.path.basename(cmd[0] if cmd[0] != env.python else cmd[1]))
    v = ctx.popen(cmd, env=venv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True)
    vout, verr = [], []
    first = wait_line(ctx, v.stdout, ready or "victim_", 180, vout)
    threading.Thread(target=lambda: verr.extend(v.stderr), daemon=True).start()
    if not first:
        v.kill()
        raise RuntimeError("victim did not start: %s" % "".join(verr)[-300:])
    pid = int(first.split("pid")[1].split()[0])
    args = [env.proftrace, "-p", str(pid), "--targets", conf, "--gpu", gpu, "--trace",
            "-o", out] + (["--inject"] if inject else [])
    ctx.progress("attaching proftrace to %d%s" % (pid, " (--inject)" if inject else ""))
    t0 = time.monotonic()
    pt = ctx.popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    perr = []
    att = wait_line(ctx, pt.stderr, "proftrace: attached", 120, perr)
    if not att:
        v.kill()
        raise RuntimeError("proftrace did not attach: %s" % "".join(perr)[-300:])
    attach_s = time.monotonic() - t0
    if gpu == "on" and not wait_active(pid):
        ctx.progress("the shim is not active 10 s after attach (state %d)" % shim_state(pid))
    time.sleep(0.3)
    ctx.progress("attached in %.1f s; go" % attach_s)
    v.stdin.write("go\n")
    v.stdin.flush()
    rc_v = v.wait()
    ctx.progress("victim exited %d; waiting for proftrace" % rc_v)
    rc = pt.wait()
    if rc_v or (rc and check_rc):
        raise RuntimeError("exit codes victim %d, proftrace %d: %s %s" % (
            rc_v, rc, "".join(verr)[-200:], "".join(perr)[-300:]))
    try:
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
    except OSError:
        if check_rc:
            raise
        s = {}
    return s, attach_s, vout, perr


def bench(ctx, env, e, args):
    b = ctx.popen([env.bench, "--batch", "100", "--batches", "31"] + args, env=e,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    b.stdout.readline()
    res = json.loads(b.stdout.read() or "{}")
    b.wait()
    if "ns_per_call" not in res:
        raise RuntimeError("launch_bench %s: exit %s: %s %s" % (
            " ".join(args), b.returncode, res, b.stderr.read()[-200:]))
    return res


def sec_calls(env):
    """Host ns per call: no shim (separate processes), and the shim dormant
    and active in one process (launch_bench --ab), 3 processes; then the
    parts of an activation (bench knobs), one process each."""
    def fn(ctx, rows):
        none, ab = [], []
        for rnd in range(3):
            ctx.progress("round %d: no shim" % (rnd + 1))
            none.append(bench(ctx, env, env.base_env(), ["--label", "none"])["ns_per_call"])
            ctx.progress("round %d: the shim dormant and active, in one process" % (rnd + 1))
            r = bench(ctx, env, dict(env.base_env(), CUDA_INJECTION64_PATH=env.shim),
                      ["--label", "ab", "--ab", "5"])
            row(rows, "calls", "process %d: records read" % (rnd + 1), r["records"], "> 0",
                r["records"] > 0)
            ab.append(r["ns_per_call"])
        rows.extend(call_rows_ab(none, ab))
        parts = {}
        for label, kinds, cbs in BENCH_PARTS:
            ctx.progress("part: %s" % label)
            e = dict(env.base_env(), CUDA_INJECTION64_PATH=env.shim, PTG_BENCH_KINDS=kinds,
                     PTG_BENCH_CALLBACKS=cbs)
            parts[label] = bench(ctx, env, e, ["--label", label, "--ab", "3"])["ns_per_call"]
            d = parts[label]
            row(rows, "calls", "part: %s" % label, ", ".join(
                "%s %+.0f" % (short_call(c), d["active"][c] - d["dormant"][c])
                for c in RECORDED + NOT_RECORDED), "-", True)
        with open(os.path.join(env.tmp, "calls.json"), "w") as f:
            json.dump({"none": none, "ab": ab, "parts": parts}, f, indent=1)
    return fn


def short_call(c):
    return c.replace("cuda", "").replace("Launch", "L")[:12]


# (label, PTG_BENCH_KINDS, PTG_BENCH_CALLBACKS): the parts of an activation
BENCH_PARTS = [
    ("subscriber only", "none", "none"),
    ("kernel activity", "kernel", "none"),
    ("3 kinds", "kernel,memcpy,memset", "none"),
    ("callbacks only", "none", "on"),
]


def victim_cmd(env, truth, extra=()):
    return [env.victim, "--truth", truth, "--wait-stdin"] + VICTIM_ARGS + list(extra)


def sec_victim(env, name, inject):
    def fn(ctx, rows):
        truth = os.path.join(env.tmp, name + ".truth.json")
        venv = env.base_env() if inject else dict(env.base_env(),
                                                  CUDA_INJECTION64_PATH=env.shim)
        s, attach_s, _, _ = attached_run(ctx, env, victim_cmd(env, truth), venv, CONF,
                                         os.path.join(env.tmp, name), inject=inject)
        row(rows, name, "shim loaded", "proftrace --inject" if inject else
            "CUDA_INJECTION64_PATH", "-", True)
        row(rows, name, "attach time", "%.1f s" % attach_s, "-", True)
        with open(truth) as f:
            t = json.load(f)
        rows.extend(check_join(s, expected_from_truth(t), name))
        # the buckets against an independent join of trace.json's records
        # with the victim's own call windows, to the ns
        with open(os.path.join(env.tmp, name, "trace.json")) as f:
            tr = json.load(f)
        fn_bucket = {"gpu_launch": "gpu.launch", "gpu_launch_drv": "gpu.driver",
                     "gpu_launch_graph": "gpu.graph", "gpu_memset": "gpu.memset",
                     "gpu_sync": "gpu.sync"}
        t["calls"] = [[fn_bucket[c[0]], c[1], c[2]] for st in t["steps"] for c in st["calls"]]
        ind = join_trace(tr, t)
        b = {x["name"]: x for x in s["gpu"].get("buckets", [])}
        for bn in sorted(set(fn_bucket.values())):
            mine = ind["buckets"].get(bn, {"work": 0, "gpu_ns": 0})
            got = b.get(bn, {})
            row(rows, name, "%s work, GPU ms (independent join)" % bn,
                "%s, %.3f vs %s, %.3f" % (got.get("work_launched"), got.get("gpu_ms") or 0,
                                          mine["work"], mine["gpu_ns"] / 1e6),
                "equal (1 us)", got.get("work_launched") == mine["work"] and
                abs((got.get("gpu_ms") or 0) - mine["gpu_ns"] / 1e6) <= 0.0011)
        env.stall_ms = max(getattr(env, "stall_ms", 0.0),
                           s["gpu"].get("shim", {}).get("enable_stall_ms") or 0)
    return fn


def sec_ring(env):
    def fn(ctx, rows):
        keep = env.capture or os.path.join(env.tmp, "ring")
        ctx.progress("victim_gpu with gpuring_dump")
        p = ctx.popen([env.python, path("tests", "gpu", "check_truth.py"), "--shim", env.shim,
                       "--victim", env.victim, "--dump", env.dump, "--keep", keep,
                       "--name", "victim_gpu", "--"] + VICTIM_ARGS,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate()
        print(out[-4000:], flush=True)
        fails = [ln[5:] for ln in out.splitlines() if ln.startswith("FAIL ")]
        row(rows, "ring", "check_truth.py", "%d failed" % len(fails) if fails else
            "all passed" if p.returncode == 0 else "exit %d: %s" % (
                p.returncode, (err.strip().splitlines() or [""])[-1][:60]),
            "all passed", p.returncode == 0)
        for f in fails:
            row(rows, "ring", f[:70], "FAIL", "-", False)
    return fn


def torch_ok(env, ctx):
    if env.torch is None:
        ctx.progress("is torch there? (%s)" % env.python)
        p = subprocess.run([env.python, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=120)
        env.torch = "" if p.stdout.strip() == "True" else (
            (p.stderr.strip().splitlines() or ["no CUDA device for torch"])[-1][:80])
    return env.torch == ""


def torch_cmd(env, truth, steps, extra=()):
    return [env.python, path("tests", "gpu", "victim_torch.py"), "--truth", truth,
            "--steps", str(steps), "--wait-stdin"] + list(extra)


def torch_conf():
    sys.path.insert(0, path("tests", "gpu"))
    import victim_torch
    return victim_torch.CONF


def sec_torch(env, name, extra=(), inject=False):
    def fn(ctx, rows):
        if not torch_ok(env, ctx):
            row(rows, name, "PyTorch section", "skipped: %s" % env.torch, "-", True)
            return
        truth = os.path.join(env.tmp, name + ".truth.json")
        out = os.path.join(env.tmp, name)
        s, attach_s, vout, perr = attached_run(
            ctx, env, torch_cmd(env, truth, 300, extra),
            env.base_env() if inject else env.pt_env(), torch_conf(), out, inject=inject)
        row(rows, name, "victim", (vout[0].strip()[14:] if vout else "?")[:70], "-", True)
        row(rows, name, "attach time", "%.1f s" % attach_s, "-", True)
        with open(truth) as f:
            t = json.load(f)
        with open(os.path.join(out, "trace.json")) as f:
            tr = json.load(f)
        rows.extend(check_torch(s, t, tr, name))
        g = s.get("gpu", {})
        kinfo = ", ".join("%s x%d" % (k["name"][:40], k["count"] // len(t["steps"]))
                          for k in g.get("top_kernels", [])[:4])
        row(rows, name, "top kernels per step", kinfo[:100], "-", True)
        env.stall_ms = max(getattr(env, "stall_ms", 0.0),
                           g.get("shim", {}).get("enable_stall_ms") or 0)
    return fn


# native frames (docs/targets.md, "Native frames"): the torch victim's
# stacks down into libtorch, cuBLAS and libcuda, on the CPU and off it
NATIVE_CONF = "set sample_hz 1000\nset native_frames on\n"
CUDA_LIBS = ("libcuda.so", "libcudart.so", "libcublas")


def read_folded(out):
    """[(frames, weight us)] of out/stacks.folded."""
    rows = []
    with open(os.path.join(out, "stacks.folded"), encoding="utf-8", errors="replace") as f:
        for ln in f:
            frames, _, w = ln.rstrip("\n").rpartition(" ")
            if frames and w.isdigit():
                rows.append((frames.split(";"), int(w)))
    return rows


def native_parts(label):
    """(symbol or None, module) of a native frame's label "sym (module)" or
    "module+0xOFF"; None for a Python frame "qualname (file.py:LINE)" or a
    pseudo frame."""
    if label.startswith("["):
        return None
    if label.endswith(")") and " (" in label:
        i = label.rfind(" (")
        mod = label[i + 2:-1]
        if ":" in mod and mod.rsplit(":", 1)[1].isdigit():
            return None  # a Python frame
        return label[:i], mod
    if "+0x" in label:
        return None, label.split("+0x")[0]
    return None


def sec_native(env):
    """Where the forward's host time goes, natively: Linear.forward ->
    ... -> cuLaunchKernel (libcuda) on the CPU; the sampled step's sync
    (Engine.sample's .item()) in libcuda, on the CPU (CUDA spins by default)
    or off it."""
    name = "native"

    def fn(ctx, rows):
        if not torch_ok(env, ctx):
            row(rows, name, "PyTorch section", "skipped: %s" % env.torch, "-", True)
            return
        truth = os.path.join(env.tmp, name + ".truth.json")
        out = os.path.join(env.tmp, name)
        s, _, _, _ = attached_run(ctx, env, torch_cmd(env, truth, 300), env.pt_env(),
                                  torch_conf() + NATIVE_CONF, out)
        nf = s.get("meta", {}).get("sampling", {}).get("native_frames") or {}
        row(rows, name, "stacks whole/partial/mismatch/missing",
            "%s/%s/%s/%s of %s (%s off-CPU)" % (
                nf.get("whole"), nf.get("partial"), nf.get("mismatched"), nf.get("missing"),
                nf.get("stacks"), nf.get("offcpu_stacks")), "-", bool(nf.get("stacks")))
        row(rows, name, "unwind per stack, copy", "%s us, %s B" % (
            nf.get("unwind_us_mean"), nf.get("stack_bytes_mean")), "-", True)
        st = read_folded(out)

        def below(frames, prefix):
            for i, x in enumerate(frames):
                if x.startswith(prefix):
                    return frames[i + 1:]
            return None

        def launches(rest):
            return any((native_parts(x) or (None, ""))[1].startswith("libcuda.so") and
                       ((native_parts(x) or ("", ""))[0] or "").startswith("cuLaunch")
                       for x in rest)

        fwd = [(f, w, below(f, "Linear.forward (")) for f, w in st]
        fwd = [(f, w, r) for f, w, r in fwd if r is not None and f[-1] != "[off-cpu]"]
        fwd_ms = sum(w for _, w, _ in fwd) / 1e3
        hit = [(f, w) for f, w, r in fwd if launches(r)]
        row(rows, name, "Linear.forward ... cuLaunch* (libcuda)", "%.1f of %.1f ms on-CPU" % (
            sum(w for _, w in hit) / 1e3, fwd_ms), "> 0", bool(hit))
        # what the forward's stacks end in, for the record
        leaves = {}
        for f, w, r in fwd:
            leaves[f[-1]] = leaves.get(f[-1], 0) + w
        top = sorted(leaves.items(), key=lambda kv: -kv[1])[:5]
        print("gpu-check: native: Linear.forward's on-CPU leaves: %s" % "; ".join(
            "%s %.1f ms" % (k[:80], v / 1e3) for k, v in top), flush=True)
        if hit:
            f, w = max(hit, key=lambda fw: fw[1])
            print("gpu-check: native: the heaviest launch stack (%.1f ms): %s" % (
                w / 1e3, ";".join(x[:60] for x in f)), flush=True)
        smp = [(f, w) for f, w in st if below(f, "Engine.sample (") is not None]
        cuda = [(f, w) for f, w in smp if any(
            (native_parts(x) or (None, ""))[1].startswith(CUDA_LIBS) for x in f)]
        on = sum(w for f, w in cuda if f[-1] != "[off-cpu]") / 1e3
        off = sum(w for f, w in cuda if f[-1] == "[off-cpu]") / 1e3
        row(rows, name, "Engine.sample in CUDA libraries (sync)",
            "%.1f ms on-CPU, %.1f off (of %.1f)" % (on, off, sum(w for _, w in smp) / 1e3),
            "> 0", on + off > 0)
        if cuda:
            f, w = max(cuda, key=lambda fw: fw[1])
            print("gpu-check: native: the heaviest sync stack (%.1f ms): %s" % (
                w / 1e3, ";".join(x[:60] for x in f)), flush=True)
    return fn


class Lines:
    """A child's stdout lines, read on a thread, waited for by prefix."""

    def __init__(self, stream):
        self.lines, self.pos = [], 0
        self.cv = threading.Condition()
        self.eof = False
        threading.Thread(target=self._rd, args=(stream,), daemon=True).start()

    def _rd(self, stream):
        for ln in stream:
            with self.cv:
                self.lines.append(ln)
                self.cv.notify_all()
        with self.cv:
            self.eof = True
            self.cv.notify_all()

    def wait(self, prefix, timeout):
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                while self.pos < len(self.lines):
                    ln = self.lines[self.pos]
                    self.pos += 1
                    if ln.startswith(prefix):
                        return ln
                left = end - time.monotonic()
                if self.eof or left <= 0:
                    return None
                self.cv.wait(left)


def sysload():
    """Every process's CPU time and the machine's CPU counters, now."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        x = st[st.rindex(")") + 2:].split()
        procs[int(d)] = (st[st.index("(") + 1:st.rindex(")")], int(x[11]) + int(x[12]))
    with open("/proc/stat") as f:
        cpu = [int(v) for v in f.readline().split()[1:]]
    return time.monotonic(), procs, cpu


def load_between(a, b, skip=()):
    """The 3 processes that used most CPU between two sysload()s (other
    than skip), the machine's busy CPUs and its steal share."""
    dt = max(b[0] - a[0], 1e-3)
    hz = os.sysconf("SC_CLK_TCK")
    use = sorted(((b[1][p][1] - a[1][p][1]) / hz / dt, b[1][p][0], p)
                 for p in b[1] if p in a[1] and p not in skip)[::-1][:3]
    tot = sum(b[2]) - sum(a[2])
    idle = (b[2][3] - a[2][3]) + (b[2][4] - a[2][4])
    return {"top": [[round(u, 2), n, p] for u, n, p in use if u > 0.01],
            "steal": round((b[2][7] - a[2][7]) / tot, 4) if tot else 0.0,
            "busy_cpus": round((tot - idle) / hz / dt, 2)}


def phased_run(ctx, env, name, extra, conf_text, gpu="on"):
    """One victim_torch process, three phases of 600 steps: unattached,
    attached (proftrace with conf_text), detached again (SIGINT). Returns
    the truth, the load during each phase and proftrace's summary."""
    conf = os.path.join(env.tmp, name + ".conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    truth = os.path.join(env.tmp, name + ".truth.json")
    ctx.progress("%s: starting victim_torch" % name)
    v = ctx.popen(torch_cmd(env, truth, 600, list(extra) + ["--phases", "3"]),
                  env=env.pt_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True)
    out = Lines(v.stdout)
    verr = []
    threading.Thread(target=lambda: verr.extend(v.stderr), daemon=True).start()
    first = out.wait("victim_torch: pid", 180)
    if not first:
        raise RuntimeError("victim_torch did not start: %s" % "".join(verr)[-300:])
    pid = int(first.split()[2])
    load = []

    def go():
        v.stdin.write("go\n")
        v.stdin.flush()

    def phase(k, done):
        a = sysload()
        go()
        if not out.wait(done, 120):
            raise RuntimeError("phase %d did not end: %s" % (k, "".join(verr)[-300:]))
        load.append(load_between(a, sysload(), skip=(pid,)))

    ctx.progress("%s: phase 1, unattached" % name)
    phase(0, "victim_torch: phase 0 done")
    ctx.progress("%s: attaching" % name)
    pt = ctx.popen([env.proftrace, "-p", str(pid), "--targets", conf, "--gpu", gpu, "-o",
                    os.path.join(env.tmp, name)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, text=True)
    perr = Lines(pt.stderr)
    if not perr.wait("proftrace: attached", 120):
        raise RuntimeError("proftrace did not attach: %s" % "".join(perr.lines)[-300:])
    if gpu == "on" and not wait_active(pid):
        ctx.progress("the shim is not active 10 s after attach")
    time.sleep(0.3)
    ctx.progress("%s: phase 2, attached" % name)
    phase(1, "victim_torch: phase 1 done")
    pt.send_signal(signal.SIGINT)
    if pt.wait(60):
        raise RuntimeError("proftrace exit %d: %s" % (pt.returncode,
                                                      "".join(perr.lines)[-300:]))
    t = time.monotonic() + 5
    while shim_state(pid) == 1 and time.monotonic() < t:
        time.sleep(0.02)
    time.sleep(0.3)
    ctx.progress("%s: phase 3, detached" % name)
    a = sysload()
    go()
    if v.wait(120):
        raise RuntimeError("victim_torch: %s" % "".join(verr)[-300:])
    load.append(load_between(a, sysload(), skip=(pid,)))
    with open(truth) as f:
        tr = json.load(f)
    try:
        with open(os.path.join(env.tmp, name, "summary.json")) as f:
            summ = json.load(f)
    except OSError:
        summ = {}
    return tr, load, summ


def phase_dists(tr):
    """Per phase, the steps of the probed engine (not its twin)."""
    return [dist([s["host_end_ns"] - s["host_start_ns"] for s in tr["steps"]
                  if s["phase"] == k and not s.get("twin")]) for k in range(3)]


def twin_ratios(tr):
    """Per phase, the steps of the probed engine over those of its twin
    (victim_torch --twin): (p50 ratio, mean ratio)."""
    out = []
    for k in range(3):
        a = [s["host_end_ns"] - s["host_start_ns"] for s in tr["steps"]
             if s["phase"] == k and not s.get("twin")]
        b = [s["host_end_ns"] - s["host_start_ns"] for s in tr["steps"]
             if s["phase"] == k and s.get("twin")]
        out.append((statistics.median(a) / statistics.median(b),
                    statistics.fmean(a) / statistics.fmean(b)) if a and b else (0.0, 0.0))
    return out


def phase_rows(rows, section, label, tr, load):
    """A process's three phases: step p50/mean, attached over the mean of
    the two unattached ones; its own CPU and the machine's meanwhile."""
    d = phase_dists(tr)
    r50 = d[1]["p50"] / ((d[0]["p50"] + d[2]["p50"]) / 2)
    rmean = d[1]["mean"] / ((d[0]["mean"] + d[2]["mean"]) / 2)
    ru = tr.get("phase_rusage") or [{}] * 3
    n = max(1, len(tr["steps"]) // 3)
    row(rows, section, "%s: step us (un, at, un)" % label,
        "p50 %.0f %.0f %.0f; mean %.0f %.0f %.0f; p99 %.0f %.0f %.0f" % tuple(
            [x["p50"] / 1e3 for x in d] + [x["mean"] / 1e3 for x in d] +
            [x["p99"] / 1e3 for x in d]), "-", True)
    row(rows, section, "%s: main thread user, sys us/step" % label,
        ", ".join("%.0f %.0f" % (r.get("utime_us", 0) / n, r.get("stime_us", 0) / n)
                  for r in ru), "-", True)
    if any("twin" in st for st in tr["steps"]):
        tw = twin_ratios(tr)
        row(rows, section, "%s: probed engine / its unprobed twin (un, at, un)" % label,
            "p50 %s; mean %s" % (" ".join("%.3f" % x[0] for x in tw),
                                 " ".join("%.3f" % x[1] for x in tw)), "-", True)
    row(rows, section, "%s: others' CPU, steal" % label,
        "; ".join("%s st %.1f%%" % (",".join("%s %.2f" % (nm[:12], u) for u, nm, _ in x["top"][:2]),
                                    x["steal"] * 100) for x in load)[:160], "-", True)
    return r50, rmean


def sec_cost(env):
    """The loop's step time attached vs not, in the same process (phases:
    unattached, attached, detached), 3 processes."""
    def fn(ctx, rows):
        if not torch_ok(env, ctx):
            row(rows, "cost", "PyTorch section", "skipped: %s" % env.torch, "-", True)
            return
        r50, rmean, keep, tw = [], [], [], []
        for i in range(3):
            tr, load, summ = phased_run(ctx, env, "cost-%d" % i, ("--twin", "10"),
                                        torch_conf())
            a, b = phase_rows(rows, "cost", "process %d" % (i + 1), tr, load)
            tw.append(twin_ratios(tr)[1])
            r50.append(a)
            rmean.append(b)
            keep.append({"load": load,
                         "agent": (summ.get("meta", {}).get("python") or {}).get("agent"),
                         "steps_us": [round((s["host_end_ns"] - s["host_start_ns"]) / 1e3, 1)
                                      for s in tr["steps"]]})
        lim = LIMITS["ratio"]
        row(rows, "cost", "attached / unattached, median step", ", ".join(
            "%.3f" % x for x in r50), "<= %.2f" % lim, max(r50) <= lim)
        row(rows, "cost", "attached / unattached, mean step", ", ".join(
            "%.3f" % x for x in rmean), "<= %.2f" % lim, max(rmean) <= lim)
        row(rows, "cost", "probed / unprobed twin (attached), median step", ", ".join(
            "%.3f" % x[0] for x in tw), "<= %.2f" % lim, max(x[0] for x in tw) <= lim)
        row(rows, "cost", "probed / unprobed twin (attached), mean step", ", ".join(
            "%.3f" % x[1] for x in tw), "<= %.2f" % lim, max(x[1] for x in tw) <= lim)
        with open(os.path.join(env.tmp, "cost.json"), "w") as f:
            json.dump(keep, f)
    return fn


def sec_why(env):
    """Where an attached loop's cost comes from, each in one process of
    three phases: the interpreter alone (--pure) with the py: probes, the
    torch loop with the py: probes only (no GPU stream, no sampling), and
    with no py: probe at all."""
    def fn(ctx, rows):
        if not torch_ok(env, ctx):
            row(rows, "why", "PyTorch section", "skipped: %s" % env.torch, "-", True)
            return
        conf_py = torch_conf() + "set sample_hz 0\n"
        conf_native = "step native:libc.so*:getppid\nset sample_hz 0\n"
        res = {}
        for label, extra, conf in (("pure, py: probes", ["--pure", "--twin", "10"], conf_py),
                                   ("torch, py: probes", ["--twin", "10"], conf_py),
                                   ("torch, no py: probe", [], conf_native)):
            name = "why-" + label.replace(" ", "").replace(",", "-").replace(":", "")
            tr, load, summ = phased_run(ctx, env, name, extra, conf, gpu="off")
            a, b = phase_rows(rows, "why", label, tr, load)
            res[label] = {"ratio_p50": a, "ratio_mean": b, "load": load,
                          "agent": (summ.get("meta", {}).get("python") or {}).get("agent")}
        with open(os.path.join(env.tmp, "why.json"), "w") as f:
            json.dump(res, f, indent=1)
    return fn


def sec_capture(env):
    """The ring of the PyTorch loop, eager and graph, with its truth."""
    def fn(ctx, rows):
        if not env.capture:
            return
        if not torch_ok(env, ctx):
            row(rows, "capture", "PyTorch rings", "skipped: %s" % env.torch, "-", True)
            return
        for name, extra in (("torch", ()), ("torch_graph", ("--graph",))):
            truth = os.path.join(env.capture, name + ".truth.json")
            recs = os.path.join(env.capture, name + ".records.jsonl")
            ctx.progress("%s: victim_torch with gpuring_dump" % name)
            v = ctx.popen(torch_cmd(env, truth, 40, extra), env=dict(
                env.base_env(), CUDA_INJECTION64_PATH=env.shim), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            first = wait_line(ctx, v.stdout, "victim_torch: pid", 180, [])
            if not first:
                raise RuntimeError("victim_torch did not start")
            pid = int(first.split()[2])
            d = ctx.popen([env.dump, "-o", recs, str(pid)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
            wait_active(pid)
            time.sleep(0.2)
            v.stdin.write("go\n")
            v.stdin.flush()
            v.wait()
            info = json.loads(d.communicate()[0] or "{}").get("info", {})
            n = sum(1 for _ in open(recs))
            row(rows, "capture", "%s ring" % name, "%d records, %s dropped" % (
                n, info.get("ring_dropped")), "> 0, 0", n > 0 and not info.get("ring_dropped"))
    return fn


def main():
    rows = []
    if not shutil.which("nvidia-smi"):
        print("gpu-check: skipped: no nvidia-smi (no NVIDIA driver on this machine); run it "
              "where the device tool lends a GPU")
        return 0
    if os.geteuid() != 0:
        print("gpu-check: FAIL: run as root (proftrace needs BPF and uprobes): sudo make "
              "gpu-check", file=sys.stderr)
        return 1
    t_start = time.monotonic()
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True, timeout=60)
    print("gpu-check: %s" % smi.stdout.strip(), flush=True)
    make = os.environ.get("PT_MAKE", "make").split()
    b = subprocess.run(make + ["-j%d" % (os.cpu_count() or 2), "all", "gpu-tools"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    if b.returncode:
        print(b.stdout[-3000:] + b.stderr[-3000:], file=sys.stderr)
        print("gpu-check: FAIL: the build failed (make all gpu-tools; CUDA_HOME, NVCC_ARCH "
              "for a GPU other than sm_90)", file=sys.stderr)
        return 1
    proftrace = path(os.environ.get("PT_PROFTRACE") or "proftrace")
    shim = path(os.environ.get("PT_SHIM") or os.path.join(OUTPUT, "libproftrace_cupti.so"))
    agent = path(OUTPUT, "libproftrace_agent.so")
    for what, p in (("proftrace", proftrace), ("the shim", shim)):
        if not os.path.exists(p):
            print("gpu-check: FAIL: no %s at %s (make all; CUDA_HOME with CUPTI?)" % (what, p),
                  file=sys.stderr)
            return 1
    tmp = tempfile.mkdtemp(prefix="pt-gpu-check-")
    env = Env(proftrace, shim, agent if os.path.exists(agent) else None, tmp)
    if env.capture:
        os.makedirs(env.capture, exist_ok=True)
    sections = [
        ("calls", 90, sec_calls(env)),
        ("start", 60, sec_victim(env, "start", False)),
        ("inject", 60, sec_victim(env, "inject", True)),
        ("ring", 60, sec_ring(env)),
        ("torch", 90, sec_torch(env, "torch")),
        ("graph", 90, sec_torch(env, "graph", ("--graph",))),
        ("tinject", 90, sec_torch(env, "tinject", inject=True)),
        ("native", 90, sec_native(env)),
        ("cost", 150, sec_cost(env)),
        ("capture", 90, sec_capture(env)),
        ("why", 120, sec_why(env)),
    ]
    only = os.environ.get("PT_GPU_ONLY")
    if only:
        sections = [s for s in sections if s[0] in only.split(",")]
    run_sections(sections, rows, log=lambda m: print(m, flush=True))
    stall = getattr(env, "stall_ms", 0.0)
    row(rows, "stall", "first enable (CUPTI on)", "%.1f ms" % stall,
        "<= %.0f ms" % LIMITS["stall_ms"], stall <= LIMITS["stall_ms"])
    took = time.monotonic() - t_start
    row(rows, "total", "wall time", "%.0f s" % took, "<= 300 s", took <= 300)
    print(table(rows))
    bad = [r for r in rows if not r.ok]
    print("\ngpu-check: %s (outputs in %s)" % ("%d failed" % len(bad) if bad else "all passed",
                                              tmp))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
