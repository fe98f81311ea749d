#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Run victim_gpu under the CUPTI shim, read the ring with gpuring_dump
(proftrace's reader, nothing else of proftrace) and compare every record
with the victim's truth: the ring-level half of make gpu-check.

    check_truth.py --shim SO --victim BIN --dump BIN [--keep DIR --name N] -- VICTIM ARGS

--keep DIR keeps the records (N.records.jsonl) and the truth (N.truth.json)
for tests/fixtures/gpu. Needs a GPU. Exit status 0 when every check passes.
"""
import argparse
import bisect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_check import expected_from_truth, shim_state  # noqa: E402

KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, KIND_API, KIND_SYNC = 1, 2, 3, 4, 5
MEMCPY_DTOH = 2
# the host function each kind of work must be launched from; its launch
# record is the driver call (a runtime launch makes one, with its
# correlation id): what it is (enum ptgpu_api_what)
LAUNCHED_IN = {"ptv_spin": "gpu_launch", "ptv_spin_short": "gpu_launch",
               "ptv_spin_drv": "gpu_launch_drv", "ptv_spin_graph": "gpu_launch_graph"}
WHAT_LAUNCH, WHAT_COPY, WHAT_SET, WHAT_WAIT = 1, 2, 3, 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True, help="libproftrace_cupti.so")
    ap.add_argument("--victim", required=True, help="victim_gpu binary")
    ap.add_argument("--dump", required=True, help="gpuring_dump binary")
    ap.add_argument("--keep", help="keep records and truth in this folder")
    ap.add_argument("--name", default="victim_gpu")
    ap.add_argument("--tolerance", type=float, default=0.03,
                    help="relative error allowed on per-name GPU time")
    ap.add_argument("victim_args", nargs="*")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="ptgpu-")
    truth_path = os.path.join(tmp, "truth.json")
    recs_path = os.path.join(tmp, "records.jsonl")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD",)}
    env["CUDA_INJECTION64_PATH"] = os.path.abspath(a.shim)
    cmd = [a.victim, "--truth", truth_path, "--wait-stdin"] + a.victim_args
    victim = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    first = victim.stdout.readline()
    print(first.strip(), flush=True)
    pid = int(first.split()[2])
    dump = subprocess.Popen([a.dump, "-o", recs_path, str(pid)], stdout=subprocess.PIPE,
                            text=True)
    t = time.monotonic() + 10
    while shim_state(pid) != 1 and time.monotonic() < t:
        time.sleep(0.02)
    print("shim state %d, go" % shim_state(pid), flush=True)
    victim.stdin.write("go\n")
    victim.stdin.flush()
    victim.wait(timeout=120)
    out = dump.communicate(timeout=60)[0]
    if victim.returncode or dump.returncode:
        sys.exit(f"victim exit {victim.returncode}, dump exit {dump.returncode}")
    summary = json.loads(out)
    with open(truth_path) as f:
        truth = json.load(f)
    with open(recs_path) as f:
        recs = [json.loads(line) for line in f]
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        shutil.copy(recs_path, os.path.join(a.keep, a.name + ".records.jsonl"))
        shutil.copy(truth_path, os.path.join(a.keep, a.name + ".truth.json"))
    info = summary["info"]
    print(json.dumps(info))
    sys.exit(1 if check(info, truth, recs, a.tolerance) else 0)


def check(info, truth, recs, tol):
    bad = []

    def ok(cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            bad.append(what)

    ok(info["activations"] >= 1, f"shim activated ({info['activations']}), "
       f"first enable stall {info['enable_stall_max_ns'] / 1e6:.1f} ms")
    ok(info["conflict_call"] == "none", f"no CUPTI conflict ({info['conflict_call']})")
    for k in ("ring_dropped", "cupti_dropped", "skipped", "lost", "bad_records"):
        ok(info[k] == 0, f"{k} == 0 ({info[k]})")

    exp = expected_from_truth(truth)
    steps = truth["steps"]
    n = len(steps)
    kernels = [r for r in recs if r["kind"] == KIND_KERNEL]
    count = {}
    for r in kernels:
        count[r["name"]] = count.get(r["name"], 0) + 1
    for name, want in sorted(exp["names"].items()):
        ok(count.get(name, 0) == want, f"{name} x{count.get(name, 0)} (want {want})")
    for name, want in sorted(exp["ms"].items()):
        got = sum(r["end_ns"] - r["start_ns"] for r in kernels if r["name"] == name) / 1e6
        rel = abs(got - want) / want if want else 1
        ok(rel <= tol, f"{name} GPU time {got:.3f} ms vs events {want:.3f} ms "
           f"({rel * 100:.2f}%)")
    copies = [r for r in recs if r["kind"] == KIND_MEMCPY]
    ok(len(copies) == n and all(r["bytes"] == 8 and r["copy_kind"] == MEMCPY_DTOH
                                for r in copies), f"DtoH copies {len(copies)} of 8 bytes "
       f"(want {n})")
    sets = [r for r in recs if r["kind"] == KIND_MEMSET]
    ok(len(sets) == exp["memsets"], f"memsets {len(sets)} (want {exp['memsets']})")
    ok(all(r["graph_id"] for r in kernels if r["name"] == "ptv_spin_graph") and
       not any(r["graph_id"] for r in kernels if r["name"] != "ptv_spin_graph"),
       "graph kernels, and only they, carry a graph id")

    # Same clock: every piece of work inside its step's host window.
    starts = [s["host_start_ns"] for s in steps]
    work = kernels + copies + sets
    outside = 0
    for r in work:
        i = bisect.bisect_right(starts, r["start_ns"]) - 1
        if i < 0 or r["end_ns"] > steps[i]["host_end_ns"]:
            outside += 1
    ok(not outside, f"work inside its step's CLOCK_MONOTONIC window ({outside} outside)")

    # The join, record by record: one launch record per piece of work, on
    # the victim's thread, inside the host call that launched it.
    api = {}
    for r in recs:
        if r["kind"] == KIND_API:
            api.setdefault(r["corr"], []).append(r)
    calls = sorted((c[1], c[2], c[0]) for s in steps for c in s["calls"])
    cstarts = [c[0] for c in calls]
    nomatch, dup, wrongcall, wrongtid, wrongdom = 0, 0, 0, 0, 0
    for r in work:
        v = api.get(r["corr"], [])
        if not v:
            nomatch += 1
            continue
        dup += len(v) > 1
        a = v[0]
        wrongtid += a["tid"] != truth["tid"]
        j = bisect.bisect_right(cstarts, a["start_ns"]) - 1
        fn = calls[j][2] if j >= 0 and a["end_ns"] <= calls[j][1] else None
        if r["kind"] == KIND_KERNEL:
            want_fn, what = LAUNCHED_IN.get(r["name"]), WHAT_LAUNCH
        elif r["kind"] == KIND_MEMSET:
            want_fn, what = "gpu_memset", WHAT_SET
        else:
            want_fn, what = None, WHAT_COPY  # the copy is in gpu_step itself
        wrongdom += not a["driver"] or a.get("what") != what
        wrongcall += want_fn is not None and fn != want_fn
    ok(not nomatch, f"every kernel, copy and memset has its launch record ({nomatch} without)")
    ok(not dup, f"one launch record per piece of work ({dup} with more)")
    ok(not wrongtid, f"launch records carry the victim's OS thread id ({wrongtid} other)")
    ok(not wrongcall, f"each launch record inside the host call that launched it "
       f"({wrongcall} not)")
    ok(not wrongdom, f"launch records are driver calls, saying launch, copy or set "
       f"({wrongdom} not)")
    per_step = truth["kernels_per_step"] + truth.get("driver_per_step", 0) + \
        (1 if truth.get("graph_kernels") else 0) + (1 if truth.get("memset") else 0) + 2
    napi = sum(len(v) for v in api.values())
    by = {}
    for v in api.values():
        for r in v:
            k = ("driver" if r["driver"] else "runtime", r["cbid"])
            by[k] = by.get(k, 0) + 1
    ok(napi == n * per_step, f"API records {napi} = {per_step} per step (launches, memset, "
       f"copy, event sync): {sorted(by.items())}")
    waits = sum(1 for v in api.values() for r in v if r.get("what") == WHAT_WAIT)
    ok(waits == n, f"wait records {waits} = 1 per step (cudaEventSynchronize)")
    print(f"\n{len(bad)} failed" if bad else "\nall passed")
    return bad


if __name__ == "__main__":
    main()
