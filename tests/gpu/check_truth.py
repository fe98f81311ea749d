#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Run victim_gpu under the CUPTI shim, read the ring with gpuring_dump and
compare what came out of the ring with the victim's CUDA-event truth.

Needs a GPU. See README.md. Exit status 0 when every check passes."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CBID_CUDA_LAUNCH_KERNEL = 211  # CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
CBID_CUDA_GRAPH_LAUNCH = 311  # CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000
KIND_KERNEL, KIND_MEMCPY, KIND_API, KIND_SYNC = 1, 2, 4, 5
SYNC_EVENT_SYNCHRONIZE = 1
MEMCPY_DTOH = 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True, help="libproftrace_cupti.so")
    ap.add_argument("--victim", required=True, help="victim_gpu binary")
    ap.add_argument("--dump", required=True, help="gpuring_dump binary")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--kernels", type=int, default=8)
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--tolerance", type=float, default=0.03,
                    help="relative error allowed on per-name GPU time")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="ptgpu-")
    truth_path = os.path.join(tmp, "truth.json")
    recs_path = os.path.join(tmp, "records.jsonl")
    env = dict(os.environ, CUDA_INJECTION64_PATH=os.path.abspath(a.shim))
    cmd = [a.victim, "--steps", str(a.steps), "--kernels", str(a.kernels),
           "--start-delay-ms", "3000", "--truth", truth_path]
    if a.graph:
        cmd.append("--graph")
    victim = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    first = victim.stdout.readline()
    print(first.strip())
    pid = int(first.split()[2])
    dump = subprocess.run([a.dump, "-o", recs_path, str(pid)], stdout=subprocess.PIPE,
                          text=True, timeout=600, check=False)
    victim.wait(timeout=600)
    if victim.returncode or dump.returncode:
        sys.exit(f"victim exit {victim.returncode}, dump exit {dump.returncode}")
    summary = json.loads(dump.stdout)
    truth = json.load(open(truth_path))
    recs = [json.loads(line) for line in open(recs_path)]
    info = summary["info"]
    print(json.dumps(summary, indent=2))

    bad = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            bad.append(what)

    check(info["activations"] >= 1, f"shim activated ({info['activations']}), "
          f"first enable stall {info['enable_stall_max_ns'] / 1e6:.1f} ms")
    check(info["conflict_call"] == "none", f"no CUPTI conflict ({info['conflict_call']})")
    for k in ("ring_dropped", "cupti_dropped", "skipped", "lost", "bad_records"):
        check(info[k] == 0, f"{k} == 0 ({info[k]})")

    kernels = [r for r in recs if r["kind"] == KIND_KERNEL]
    n_long = a.steps * ((a.kernels + 1) // 2)
    n_short = a.steps * (a.kernels // 2)
    count = {}
    for r in kernels:
        count[r["name"]] = count.get(r["name"], 0) + 1
    check(count.get("ptv_spin", 0) == n_long, f"ptv_spin x{count.get('ptv_spin')} (want {n_long})")
    check(count.get("ptv_spin_short", 0) == n_short,
          f"ptv_spin_short x{count.get('ptv_spin_short')} (want {n_short})")

    # Same clock: every kernel inside its step's host window.
    steps = truth["steps"]
    slack = 50_000
    outside = [r for r in kernels
               if not any(s["host_start_ns"] - slack <= r["start_ns"] and
                          r["end_ns"] <= s["host_end_ns"] + slack for s in steps)]
    check(not outside, f"kernels inside their step's CLOCK_MONOTONIC window "
          f"({len(outside)} outside)")

    if not a.graph:
        for name in ("ptv_spin", "ptv_spin_short"):
            want = sum(k["gpu_ms"] for s in steps for k in s["kernels"] if k["name"] == name)
            got = sum(r["end_ns"] - r["start_ns"] for r in kernels if r["name"] == name) / 1e6
            rel = abs(got - want) / want if want else 1
            check(rel <= a.tolerance, f"{name} GPU time {got:.3f} ms vs events "
                  f"{want:.3f} ms ({rel * 100:.2f}%)")

    api = [r for r in recs if r["kind"] == KIND_API and not r["driver"]]
    cbid = CBID_CUDA_GRAPH_LAUNCH if a.graph else CBID_CUDA_LAUNCH_KERNEL
    launches = [r for r in api if r["cbid"] == cbid]
    want = a.steps if a.graph else a.steps * a.kernels
    check(len(launches) == want, f"runtime launch API records {len(launches)} (want {want})")
    check(all(r["tid"] == pid for r in launches), "launch API records carry the OS TID")
    corr = {r["corr"] for r in launches}
    check(all(r["corr"] in corr for r in kernels), "every kernel correlates to a launch")
    if a.graph:
        check(all(r["graph_id"] for r in kernels), "graph kernels carry a graph id")

    syncs = [r for r in recs if r["kind"] == KIND_SYNC and r["sync_type"] == SYNC_EVENT_SYNCHRONIZE]
    check(len(syncs) >= a.steps, f"event-synchronize records {len(syncs)} (>= {a.steps})")
    copies = [r for r in recs if r["kind"] == KIND_MEMCPY and r["copy_kind"] == MEMCPY_DTOH]
    check(len(copies) == a.steps and all(r["bytes"] == 8 for r in copies),
          f"DtoH copies {len(copies)} of 8 bytes (want {a.steps})")

    print(f"\n{len(bad)} failed" if bad else "\nall passed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
