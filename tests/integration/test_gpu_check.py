# SPDX-License-Identifier: BSD-2-Clause
"""make gpu-check's host side, without a GPU (issue 18, part 4).

The checks gpu_check.py applies to a real GPU run are applied here to a
run of the synthetic GPU victim (same summary.json, same join): they must
all pass on it, and fail when the truth says otherwise. The per-launch
cost arithmetic and the table are checked on made-up truth files, and
`make gpu-check` must skip with one clear line where there is no
nvidia-smi.
"""
import os
import shutil
import subprocess
import sys

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
    eq(bad, {"kernels launched in engine.schedule"}, "a bucket that launched no kernels")
    # a run without a GPU stream says why
    rows = gpu_check.check_join({"gpu": {"source": "none", "why": "no shim"}}, exp, "x")
    eq([(r.what, r.ok) for r in rows], [("GPU stream", False), ("why", False)], "no stream")
    t = gpu_check.table(rows)
    assert "FAIL" in t and "no shim" in t, t


def fake_truth(per_step_ns, steps=40):
    return {"steps": [{"host_start_ns": i * 10**7, "host_end_ns": i * 10**7 + per_step_ns}
                      for i in range(steps)]}


def test_gpu_check_costs_and_table():
    exp = gpu_check.expected_from_truth({"steps": [
        {"kernels": [{"name": "ptv_spin", "gpu_ms": 1.0}, {"name": "ptv_spin_short",
                                                           "gpu_ms": 0.25}]}] * 3})
    eq((exp["steps"], exp["kernels"], exp["names"], exp["ms"]),
       (3, 6, {"ptv_spin": 3, "ptv_spin_short": 3}, {"ptv_spin": 3.0, "ptv_spin_short": 0.75}),
       "expected from a victim_gpu truth")
    # 64 launches a step: 128 us bare, +6.4 us dormant, +320 us active
    d, a, m = gpu_check.launch_costs([fake_truth(128000), fake_truth(130000)],
                                     [fake_truth(134400)], [fake_truth(454400)], 64)
    assert abs(d - 0.1) < 1e-9 and abs(a - 5.0) < 1e-9, (d, a)
    eq(m["none"], 128000, "the lowest median per configuration")
    rows = []
    gpu_check.row(rows, "cost", "dormant", "+0.1 us", "<= 0.5 us", True)
    gpu_check.row(rows, "cost", "active", "+25 us", "<= 20 us", False)
    lines = gpu_check.table(rows).splitlines()
    eq(len(lines), 4, "header, rule, two rows")
    assert lines[2].endswith("ok") and lines[3].endswith("FAIL"), lines


def test_gpu_check_skips_without_nvidia_smi():
    if shutil.which("nvidia-smi"):
        raise Skip("this machine has nvidia-smi: make gpu-check runs for real")
    p = subprocess.run(["make", "-s", "--no-print-directory", "gpu-check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, "skipped is not a failure: " + p.stderr)
    out = p.stdout.strip().splitlines()
    eq(len(out), 1, "one line: %r" % p.stdout)
    assert out[0].startswith("gpu-check: skipped: no nvidia-smi"), out
