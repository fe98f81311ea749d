# SPDX-License-Identifier: BSD-2-Clause
"""make gpu-check's host side, without a GPU (issues 18 and 23).

The checks gpu_check.py applies to a real GPU run are applied here to a
run of the synthetic GPU victim (same summary.json, same join): they must
all pass on it, and fail when the truth says otherwise. The independent
join of trace.json with a victim's own bucket windows, the cost
arithmetic and the table are checked on made-up records; a section that
hangs is cut at its timeout with where its process was stuck; and `make
gpu-check` must skip with one clear line where there is no nvidia-smi.
"""
import os
import shutil
import subprocess
import sys
import time

from harness import ROOT, Skip, eq, profile
from test_gpu import CONF

sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import gpu_check  # noqa: E402

N = 60


def synth_expected():
    # victim_gpu_synth: per step attn_fwd 40 + 120 us, mlp_fwd 80 + 160 us, one copy
    return {"steps": N, "names": {"attn_fwd": 2 * N, "mlp_fwd": 2 * N},
            "ms": {"attn_fwd": N * 0.160, "mlp_fwd": N * 0.240}, "kernels": 4 * N,
            "copies": N, "launch_bucket": "engine.forward"}


def test_gpu_check_rows_on_synthetic_run():
    s, _, _ = profile(CONF, ["--steps", N], victim_name="victim_gpu_synth")
    rows = gpu_check.check_join(s, synth_expected(), "synth")
    bad = [(r.what, r.value, r.limit) for r in rows if not r.ok]
    eq(bad, [], "every check passes on an exact run")
    eq(len(rows) >= 14, True, "rows")
    # a truth that disagrees fails the right rows
    exp = synth_expected()
    exp["ms"]["mlp_fwd"] *= 1.05
    exp["names"]["attn_fwd"] += 1
    bad = {r.what for r in gpu_check.check_join(s, exp, "synth") if not r.ok}
    eq(bad, {"mlp_fwd GPU ms vs CUDA events", "attn_fwd launches"}, "failing rows")
    exp = synth_expected()
    exp["launch_bucket"] = "engine.schedule"
    bad = {r.what for r in gpu_check.check_join(s, exp, "synth") if not r.ok}
    eq(bad, {"work launched in engine.schedule"}, "a bucket that launched no kernels")
    # a run without a GPU stream says why
    rows = gpu_check.check_join({"gpu": {"source": "none", "why": "no shim"}}, exp, "x")
    eq([(r.what, r.ok) for r in rows], [("GPU stream", False), ("why", False)], "no stream")
    t = gpu_check.table(rows)
    assert "FAIL" in t and "no shim" in t, t


def fake_phases(us=(660, 680, 650), steps=40, slow=()):
    """A victim_torch truth of three phases (unattached, attached, detached)."""
    st = []
    for ph, u in enumerate(us):
        for i in range(steps):
            t = (ph * steps + i) * 10**7
            st.append({"host_start_ns": t, "phase": ph,
                       "host_end_ns": t + u * 1000 * (3 if ph == 1 and i in slow else 1)})
    return {"steps": st, "phase_rusage": [{"utime_us": u * steps, "stime_us": 0} for u in us]}


def test_gpu_check_expected_mixed_victim():
    t = {"memset": True, "steps": [{
        "kernels": [{"name": "ptv_spin", "gpu_ms": 1.0}, {"name": "ptv_spin_short",
                                                          "gpu_ms": 0.25},
                    {"name": "ptv_spin_drv", "gpu_ms": 0.5}],
        "graph": {"name": "ptv_spin_graph", "kernels": 4, "gpu_ms": 1.0},
        "memset_ms": 0.01, "copy_ms": 0.01}] * 3}
    exp = gpu_check.expected_from_truth(t)
    eq((exp["steps"], exp["kernels"], exp["memsets"], exp["copies"]), (3, 21, 3, 3), "counts")
    eq(exp["names"], {"ptv_spin": 3, "ptv_spin_short": 3, "ptv_spin_drv": 3,
                      "ptv_spin_graph": 12}, "kernels by name, a graph's each")
    eq(exp["buckets"], {"gpu.launch": {"work": 6, "ms": 3.75},
                        "gpu.driver": {"work": 3, "ms": 1.5},
                        "gpu.graph": {"work": 12, "ms": 3.0},
                        "gpu.memset": {"work": 3, "ms": 0.0}}, "work per bucket")


def test_gpu_check_costs_and_table():
    load = [{"top": [[0.02, "proftrace", 9]], "steal": 0.001, "busy_cpus": 1.1}] * 3
    rows = []
    r50, rmean = gpu_check.phase_rows(rows, "cost", "p", fake_phases(), load)
    eq((round(r50, 4), round(rmean, 4)), (1.0382, 1.0382), "attached over the unattached mean")
    r50, rmean = gpu_check.phase_rows(rows, "cost", "p", fake_phases((660, 660, 660),
                                                                     slow=(5, 6)), load)
    eq((r50, round(rmean, 3)), (1.0, 1.1), "two slow steps in 40 move the mean 10%")
    eq(rows[3].value, "p50 660 660 660; mean 660 726 660; p99 660 1980 660", "the tail said")
    eq(rows[4].value, "660 0, 660 0, 660 0", "user and system time per step")
    assert rows[5].value.startswith("proftrace 0.02 st 0.1%"), rows[5].value
    calls = gpu_check.RECORDED + gpu_check.NOT_RECORDED
    none = [{c: 2000.0 for c in calls}] * 3
    ab = [{"dormant": {c: 2010.0 for c in calls},
           "active": {c: 2010.0 + (600 if c in gpu_check.RECORDED else 5) for c in calls}}
          for _ in range(3)]
    rows = gpu_check.call_rows_ab(none, ab)
    eq([x.ok for x in rows], [True] * 8, "600 ns per recorded call, 5 ns on the others")
    assert rows[0].value == "2000, +10, +600 +600 +600", rows[0].value
    ab[0]["active"]["cudaGetDevice"] = ab[1]["active"]["cudaGetDevice"] = 2200.0
    ab[1]["active"]["cudaLaunchKernel"] = ab[2]["active"]["cudaLaunchKernel"] = 3200.0
    bad = {x.what for x in gpu_check.call_rows_ab(none, ab) if not x.ok}
    eq(bad, {"cudaGetDevice ns: none, dormant-none, active-dormant",
             "cudaLaunchKernel ns: none, dormant-none, active-dormant"},
       "over the limits in most processes")
    rows = []
    gpu_check.row(rows, "cost", "dormant", "+0.1 us", "<= 0.5 us", True)
    gpu_check.row(rows, "cost", "active", "+25 us", "<= 20 us", False)
    lines = gpu_check.table(rows).splitlines()
    eq(len(lines), 4, "header, rule, two rows")
    assert lines[2].endswith("ok") and lines[3].endswith("FAIL"), lines


def fake_torch_run(steps=4):
    """A trace.json, summary.json and truth of a PyTorch loop: per step 2
    forward kernels (a graph launch), 1 sample kernel and a copy, 1 Triton
    kernel (a driver launch); one launch record each; tid 7."""
    t0 = 10**9
    ev, calls, st = [], [], []
    corr = 0
    for i in range(steps):
        base = t0 + i * 10**6
        st.append({"host_start_ns": base, "host_end_ns": base + 900000})
        for b, s, e in (("host.schedule", 1000, 50000), ("model.forward", 60000, 300000),
                        ("model.sample", 310000, 600000), ("model.post", 610000, 800000)):
            calls.append([b, base + s, base + e])
        for b, at, work, api in (("model.forward", 70000, [("gemm", 30000), ("relu", 10000)],
                                  ("runtime", 311)),
                                 ("model.sample", 320000, [("softmax", 20000),
                                                           ("memcpy", 3000)],
                                  ("runtime", 211)),
                                 ("model.post", 620000, [("add_one", 5000)], ("driver", 308))):
            for name, dur in work:
                corr += 1
                ev.append({"ph": "X", "cat": "cuda_api", "tid": 2000000007,
                           "ts": (base + at - t0) / 1000,
                           "dur": 3.0, "name": "launch",
                           "args": {"correlation": corr, "api": api[0], "cbid": api[1]}})
                ev.append({"ph": "X", "cat": "memcpy" if name == "memcpy" else "kernel",
                           "tid": 100, "ts": (base + at + 20000 - t0) / 1000, "dur": dur / 1000,
                           "name": name, "args": {"correlation": corr}})
    trace = {"traceEvents": ev, "otherData": {"t0_mono_ns": t0, "dropped": 0,
                                              "truncated": False}}
    truth = {"tid": 7, "steps": st, "calls": calls, "graph": True, "triton": True}
    n = steps
    summary = {"stats": {"steps": n}, "gpu": {
        "source": "cupti-shim", "shim": {"activations": 1, "conflict": None},
        "records": {}, "kernels": 4 * n, "copies": n, "memsets": 0, "unmatched": 0,
        "outside_steps": 0, "steps": {"steps_with_gpu": n, "work_launched": 5 * n},
        "launch_delay": {"count": 4 * n},
        "top_kernels": [{"name": "at::native::relu_kernel<float>", "count": n}],
        "buckets": [{"name": "host.schedule", "work_launched": 0, "gpu_ms": 0.0},
                    {"name": "model.forward", "work_launched": 2 * n, "gpu_ms": 0.04 * n},
                    {"name": "model.sample", "work_launched": 2 * n, "gpu_ms": 0.023 * n},
                    {"name": "model.post", "work_launched": n, "gpu_ms": 0.005 * n}]}}
    return summary, truth, trace


def test_gpu_check_torch_join():
    s, truth, trace = fake_torch_run()
    j = gpu_check.join_trace(trace, truth)
    eq((j["work"], j["kernels"], j["unmatched"], j["outside_steps"], j["per_step"]),
       (20, 16, 0, 0, [5, 5, 5, 5]), "the independent join")
    eq(j["buckets"]["model.forward"]["gpu_ns"], 4 * 40000, "forward GPU ns")
    eq(j["buckets"]["model.forward"]["cbids"], {("runtime", 311)}, "graph launches")
    rows = gpu_check.check_torch(s, truth, trace, "t")
    eq([(x.what, x.value) for x in rows if not x.ok], [], "an exact run passes")
    # proftrace putting a sample kernel in forward: both buckets fail
    s["gpu"]["buckets"][1]["gpu_ms"] += 0.02
    s["gpu"]["buckets"][2]["work_launched"] -= 1
    s["gpu"]["top_kernels"].append({"name": "_ZN2at6native4softmaxEv", "count": 4})
    bad = {x.what for x in gpu_check.check_torch(s, truth, trace, "t") if not x.ok}
    eq(bad, {"model.forward GPU ms (independent join)", "model.sample work (independent join)",
             "kernel names demangled"}, "failing rows")
    # a launch record lost, on another thread
    del trace["traceEvents"][0]
    trace["traceEvents"][1]["tid"] = 2000000008
    j = gpu_check.join_trace(trace, truth)
    eq((j["unmatched"], j["outside_steps"]), (1, 1), "unmatched and outside a step")


def test_gpu_check_section_timeout():
    """A section stuck on a process: cut at its timeout, the process's
    threads described, the process killed, the next section run."""
    rows, log = [], []
    pids = []

    def stuck(ctx, rows):
        p = ctx.popen(["sleep", "600"])
        pids.append(p.pid)
        ctx.progress("waiting for sleep")
        p.wait()

    def fine(ctx, rows):
        gpu_check.row(rows, "fine", "ran", "yes", "yes", True)

    t0 = time.monotonic()
    gpu_check.run_sections([("stuck", 2, stuck), ("fine", 10, fine)], rows, log=log.append)
    took = time.monotonic() - t0
    assert took < 8, took
    eq([(r.section, r.what, r.ok) for r in rows], [("stuck", "finished", False),
                                                    ("fine", "ran", True)], "rows")
    assert rows[0].value == "stuck after 2 s: waiting for sleep", rows[0].value
    text = "\n".join(log)
    assert "stuck: sleep 600" in text and "wchan" in text and "syscall" in text, text
    assert "[2/2] fine: 1 checks, all ok" in text, text
    for _ in range(100):
        if not os.path.exists("/proc/%d" % pids[0]):
            break
        with open("/proc/%d/stat" % pids[0]) as f:
            if f.read().split(") ")[1][0] == "Z":
                break
        time.sleep(0.05)
    else:
        raise AssertionError("the stuck process was not killed")


def test_gpu_check_skips_without_nvidia_smi():
    if shutil.which("nvidia-smi"):
        raise Skip("this machine has nvidia-smi: make gpu-check runs for real")
    p = subprocess.run(["make", "-s", "--no-print-directory", "gpu-check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, "skipped is not a failure: " + p.stderr)
    out = p.stdout.strip().splitlines()
    eq(len(out), 1, "one line: %r" % p.stdout)
    assert out[0].startswith("gpu-check: skipped: no nvidia-smi"), out
