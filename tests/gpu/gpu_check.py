#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""make gpu-check: the CUPTI path on a real GPU, in one command.

Builds proftrace, the shim and tests/gpu/ (victim_gpu with nvcc,
gpuring_dump), then, as root on a machine with an NVIDIA GPU:

  1. start: victim_gpu started with CUDA_INJECTION64_PATH (the shim at
     start), proftrace attached (--gpu on --trace): kernel counts and
     per-name GPU time against the victim's CUDA-event truth, every launch
     joined to its step and bucket, nothing dropped, no CUPTI conflict;
  2. late: the same with the shim loaded into the running process after
     CUDA initialised (proftrace --inject when proftrace has it, else the
     victim dlopens it: PTV_LATE_SHIM), enabled late on attach;
  3. graph: tests/gpu/check_truth.py --graph (ring-level checks of CUDA
     graph launches);
  4. cost: host time per launch of tiny kernels with no shim, the shim
     dormant, and the shim active (gpuring_dump attached, no probes): the
     dormant cost against no shim and CUPTI's per-launch cost;
  5. the first-enable stall the shim measured.

Prints one table and exits 1 when a check fails, 0 when all pass or when
there is no GPU (no nvidia-smi: skipped, said on one line). Limits can be
changed through the environment (PT_GPU_TOL, PT_GPU_MAX_DORMANT_US,
PT_GPU_MAX_LAUNCH_US, PT_GPU_MAX_STALL_MS). The check functions are pure
(check_join, launch_costs, table) and tested without a GPU:
tests/integration/test_gpu_check.py.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUTPUT = os.environ.get("PT_OUTPUT", ".output")

CONF = """\
step   native:exe:gpu_step
bucket gpu.launch native:exe:gpu_launch
bucket gpu.sync   native:exe:gpu_sync
"""

LIMITS = {
    "tol": float(os.environ.get("PT_GPU_TOL", "0.03")),
    "dormant_us": float(os.environ.get("PT_GPU_MAX_DORMANT_US", "0.5")),
    "launch_us": float(os.environ.get("PT_GPU_MAX_LAUNCH_US", "20")),
    "stall_ms": float(os.environ.get("PT_GPU_MAX_STALL_MS", "5000")),
}


class Row:
    def __init__(self, section, what, value, limit, ok):
        self.section, self.what, self.value, self.limit, self.ok = (
            section, what, value, limit, ok)


def row(rows, section, what, value, limit, ok):
    rows.append(Row(section, what, str(value), str(limit), bool(ok)))
    return ok


# ---- pure checks (tested without a GPU) ----

def expected_from_truth(truth, launch_bucket="gpu.launch"):
    """What summary.json must show for a victim_gpu truth file."""
    names, ms = {}, {}
    for s in truth["steps"]:
        for k in s.get("kernels", []):
            names[k["name"]] = names.get(k["name"], 0) + 1
            ms[k["name"]] = ms.get(k["name"], 0.0) + k["gpu_ms"]
    n = len(truth["steps"])
    kernels = sum(names.values())
    return {"steps": n, "names": names, "ms": ms, "kernels": kernels,
            "copies": n, "launch_bucket": launch_bucket}


def check_join(summary, exp, section, tol=None):
    """Rows for one attached run: counts, times, the join, losses."""
    tol = LIMITS["tol"] if tol is None else tol
    rows = []
    g = summary.get("gpu", {})
    if not row(rows, section, "GPU stream", g.get("source"), "cupti-shim",
               g.get("source") == "cupti-shim"):
        row(rows, section, "why", g.get("why"), "-", False)
        return rows
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
    row(rows, section, "unmatched, outside steps",
        "%s, %s" % (g.get("unmatched"), g.get("outside_steps")), "0, 0",
        g.get("unmatched") == 0 and g.get("outside_steps") == 0)
    st = g.get("steps", {})
    row(rows, section, "steps with GPU work", st.get("steps_with_gpu"), exp["steps"],
        st.get("steps_with_gpu") == exp["steps"])
    work = exp["kernels"] + exp["copies"]
    row(rows, section, "work joined to steps", st.get("work_launched"), work,
        st.get("work_launched") == work)
    b = {x["name"]: x for x in g.get("buckets", [])}.get(exp["launch_bucket"], {})
    row(rows, section, "kernels launched in %s" % exp["launch_bucket"],
        b.get("work_launched"), exp["kernels"], b.get("work_launched") == exp["kernels"])
    ld = g.get("launch_delay", {})
    row(rows, section, "launch delays", ld.get("count"), exp["kernels"],
        ld.get("count") == exp["kernels"])
    return rows


def step_ns(truth, skip=10):
    """Median host time per step (after warm-up steps)."""
    t = [s["host_end_ns"] - s["host_start_ns"] for s in truth["steps"][skip:]]
    return statistics.median(t) if t else float("nan")


def launch_costs(none, dormant, active, kernels):
    """Per-launch host µs: (dormant - none, active - dormant), from lists of
    truth files per configuration (the lowest median of each)."""
    m = {k: min(step_ns(t) for t in v) for k, v in
         (("none", none), ("dormant", dormant), ("active", active))}
    return ((m["dormant"] - m["none"]) / kernels / 1000.0,
            (m["active"] - m["dormant"]) / kernels / 1000.0, m)


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


# ---- on the GPU machine ----

def sh(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, **kw)


def path(*p):
    return os.path.join(ROOT, *p)


def start_victim(env_extra, args, tmp, name):
    truth = os.path.join(tmp, name + ".truth.json")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_INJECTION64_PATH", "PTV_LATE_SHIM")}
    env.update(env_extra)
    v = subprocess.Popen([path(OUTPUT, "gpu", "victim_gpu"), "--truth", truth] + args,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = v.stdout.readline()
    if not first.startswith("victim_gpu: pid"):
        v.wait(30)
        raise RuntimeError("victim_gpu did not start: %r %s" % (first, v.stderr.read()))
    return v, int(first.split()[2]), truth


def has_inject(proftrace):
    p = sh([proftrace, "--help"], capture_output=True, text=True)
    return "--inject" in p.stdout


def attached_run(rows, section, proftrace, shim, tmp, late):
    conf = os.path.join(tmp, "gpu.conf")
    with open(conf, "w") as f:
        f.write(CONF)
    out = os.path.join(tmp, section)
    args = ["--steps", "30", "--kernels", "8", "--sleep-ms", "20", "--start-delay-ms", "5000"]
    inject = late and has_inject(proftrace)
    env = {} if inject else ({"PTV_LATE_SHIM": shim} if late else
                             {"CUDA_INJECTION64_PATH": shim})
    v, pid, truth = start_victim(env, args, tmp, section)
    pt_args = [proftrace, "-p", str(pid), "--targets", conf, "--gpu", "on", "--trace",
               "-o", out, "-q"] + (["--inject"] if inject else [])
    t0 = time.monotonic()
    pt = subprocess.Popen(pt_args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = []
    for line in pt.stderr:
        err.append(line)
        if line.startswith("proftrace: attached"):
            break
    attach_s = time.monotonic() - t0
    row(rows, section, "shim loaded", "proftrace --inject" if inject else
        ("dlopen after CUDA init (PTV_LATE_SHIM)" if late else "CUDA_INJECTION64_PATH"),
        "-", True)
    row(rows, section, "attached before step 0", "%.1f s" % attach_s, "< 5 s", attach_s < 5)
    rc_v = v.wait(300)
    rest = pt.stderr.read()
    rc = pt.wait(120)
    if rc or rc_v:
        row(rows, section, "exit codes (victim, proftrace)", "%d, %d" % (rc_v, rc), "0, 0",
            False)
        print("".join(err) + rest, file=sys.stderr)
        return None
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    with open(truth) as f:
        t = json.load(f)
    rows.extend(check_join(s, expected_from_truth(t), section))
    return s


def cost_runs(rows, shim, dump, tmp):
    args = ["--steps", "300", "--kernels", "64", "--cycles", "1000", "--sleep-ms", "0"]
    res = {"none": [], "dormant": [], "active": []}
    stall_ns = 0
    for rnd in range(2):
        for cfg in ("none", "dormant", "active"):
            env = {} if cfg == "none" else {"CUDA_INJECTION64_PATH": shim}
            a = args + ["--start-delay-ms", "3000" if cfg == "active" else "0"]
            v, pid, truth = start_victim(env, a, tmp, "cost-%s-%d" % (cfg, rnd))
            d = None
            if cfg == "active":
                d = subprocess.Popen([dump, str(pid)], stdout=subprocess.PIPE, text=True)
            if v.wait(300):
                raise RuntimeError("victim_gpu failed: %s" % v.stderr.read())
            if d:
                info = json.loads(d.communicate(timeout=60)[0])["info"]
                stall_ns = max(stall_ns, info.get("enable_stall_max_ns", 0))
            with open(truth) as f:
                res[cfg].append(json.load(f))
    dormant, active, m = launch_costs(res["none"], res["dormant"], res["active"], 64)
    row(rows, "cost", "host per launch, no shim", "%.2f us" % (m["none"] / 64e3), "-", True)
    row(rows, "cost", "dormant shim vs none, per launch", "%+.3f us" % dormant,
        "<= %.2f us" % LIMITS["dormant_us"], dormant <= LIMITS["dormant_us"])
    row(rows, "cost", "CUPTI tracing on, per launch", "%+.3f us" % active,
        "<= %.1f us" % LIMITS["launch_us"], active <= LIMITS["launch_us"])
    return stall_ns


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
    smi = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
             capture_output=True, text=True)
    print("gpu-check: %s" % smi.stdout.strip())
    make = os.environ.get("PT_MAKE", "make").split()
    b = sh(make + ["-j%d" % (os.cpu_count() or 2), "all", "gpu-tools"], capture_output=True,
           text=True)
    if b.returncode:
        print(b.stdout[-3000:] + b.stderr[-3000:], file=sys.stderr)
        print("gpu-check: FAIL: the build failed (make all gpu-tools; CUDA_HOME, NVCC_ARCH "
              "for a GPU other than sm_90)", file=sys.stderr)
        return 1
    proftrace = path(os.environ.get("PT_PROFTRACE") or "proftrace")
    shim = path(os.environ.get("PT_SHIM") or os.path.join(OUTPUT, "libproftrace_cupti.so"))
    dump = path(OUTPUT, "gpu", "gpuring_dump")
    if not os.path.exists(shim):
        print("gpu-check: FAIL: no shim at %s (CUDA_HOME with CUPTI?)" % shim, file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="pt-gpu-check-")
    stall_ms = 0.0
    for section, late in (("start", False), ("late", True)):
        try:
            s = attached_run(rows, section, proftrace, shim, tmp, late)
            if s:
                stall_ms = max(stall_ms, s["gpu"]["shim"].get("enable_stall_ms") or 0)
        except Exception as e:  # one section failing must not hide the others
            row(rows, section, "run", repr(e)[:80], "-", False)
    g = sh([sys.executable, path("tests", "gpu", "check_truth.py"), "--shim", shim,
            "--victim", path(OUTPUT, "gpu", "victim_gpu"), "--dump", dump, "--graph"],
           capture_output=True, text=True, timeout=300)
    fails = [ln[5:] for ln in g.stdout.splitlines() if ln.startswith("FAIL ")]
    last = (g.stderr.strip().splitlines() or [""])[-1]
    row(rows, "graph", "check_truth.py --graph", "%d failed" % len(fails) if fails else
        "all passed" if g.returncode == 0 else "exit %d: %s" % (g.returncode, last[:60]),
        "all passed", g.returncode == 0)
    for f in fails:
        row(rows, "graph", f[:60], "FAIL", "-", False)
    try:
        stall_ms = max(stall_ms, cost_runs(rows, shim, dump, tmp) / 1e6)
    except Exception as e:
        row(rows, "cost", "runs", repr(e)[:80], "-", False)
    row(rows, "stall", "first enable (CUPTI activity on)", "%.1f ms" % stall_ms,
        "<= %.0f ms" % LIMITS["stall_ms"], stall_ms <= LIMITS["stall_ms"])
    took = time.monotonic() - t_start
    row(rows, "total", "wall time", "%.0f s" % took, "< 600 s", took < 600)
    print(table(rows))
    bad = [r for r in rows if not r.ok]
    print("\ngpu-check: %s (outputs in %s)" % ("%d failed" % len(bad) if bad else "all passed",
                                              tmp))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
