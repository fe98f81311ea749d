# SPDX-License-Identifier: BSD-2-Clause
"""--trace: trace.json (Chrome trace-event JSON for ui.perfetto.dev).

The file must be well-formed JSON, every slice on a track must nest in the
one around it (calls come from a call stack), and it must hold exactly what
summary.json counts: one slice per function call, one per counted step,
one per kernel, copy and launch call, and one arrow (s/f pair) from each
launch call to its GPU work. A small --trace-max-events cuts it and every
output says so.
"""
import collections
import json
import os

from harness import bucket, eq, profile
from test_gpu import CONF as GPU_CONF
from test_native import ENGINE_CONF
from test_python import CONF as PY_CONF, VICTIM as PY_VICTIM, pyenv_python, victim_env

N = 150
STEPS_TID = 1000000000
API_TID = 2000000000
GPU_PID = 1500000000


def load(s):
    with open(os.path.join(s["_out"], "trace.json")) as f:
        tr = json.load(f)
    assert isinstance(tr["traceEvents"], list), tr.keys()
    eq(tr["displayTimeUnit"], "ms", "displayTimeUnit")
    eq(tr["otherData"]["tool"], "proftrace", "otherData.tool")
    for e in tr["traceEvents"]:
        assert e["ph"] in ("X", "M", "s", "f", "i"), e
        assert isinstance(e["pid"], int), e
        if e["ph"] in ("X", "s", "f", "i"):
            assert isinstance(e["ts"], (int, float)), e
        if e["ph"] == "X":
            assert isinstance(e["name"], str) and e["dur"] >= 0, e
    return tr


def ns(us):
    """A ts or dur (us, 3 decimals) as integer ns."""
    return int(round(us * 1000))


def slices(tr, cat=None):
    return [e for e in tr["traceEvents"] if e["ph"] == "X" and (cat is None or e["cat"] == cat)]


def names(tr):
    """(pid, tid) -> thread name, pid -> process name."""
    th, pr = {}, {}
    for e in tr["traceEvents"]:
        if e["ph"] != "M":
            continue
        if e["name"] == "thread_name":
            th[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["name"] == "process_name":
            pr[e["pid"]] = e["args"]["name"]
    return th, pr


def check_nesting(tr):
    """Per track, each slice lies inside the open one around it (equal
    bounds allowed) or starts after it ends."""
    tracks = collections.defaultdict(list)
    for e in slices(tr):
        tracks[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
    for key, evs in tracks.items():
        evs.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for s, t, name in evs:
            while stack and stack[-1][1] <= s:
                stack.pop()
            if stack:
                assert t <= stack[-1][1], "%s: %s [%d, %d] overlaps %s [%d, %d]" % (
                    key, name, s, t, stack[-1][2], stack[-1][0], stack[-1][1])
            stack.append((s, t, name))
    return tracks


def check_common(s, tr, comm):
    """Names, time origin, meta.trace and counts against summary.json."""
    th, pr = names(tr)
    eq(pr.get(s["meta"]["pid"]), comm, "process name")
    tracks = check_nesting(tr)
    for pid, tid in tracks:
        assert (pid, tid) in th, "no thread_name for track %r" % ((pid, tid),)
        if pid in (s["meta"]["pid"],) and tid < STEPS_TID:
            assert th[(pid, tid)] and not th[(pid, tid)].startswith("thread "), th[(pid, tid)]
    dur_us = s["meta"]["duration_s"] * 1e6
    for e in slices(tr):
        assert -1e6 < e["ts"] < dur_us + 1e6, "ts not relative to the attach: %r" % e
    # one slice per completed call of each function
    got = collections.Counter((e["cat"], e["name"]) for e in slices(tr)
                              if e["cat"] in ("native", "python"))
    for f in s["functions"]:
        if f["symbol"] is None or f["calls"] is None:
            continue
        eq(got[(f["kind"], f["symbol"])], f["calls"], "slices of %s" % f["symbol"])
    eq(sum(got.values()), sum(f["calls"] or 0 for f in s["functions"]), "function slices")
    steps = slices(tr, "step")
    eq(len(steps), s["stats"]["steps"], "step slices")
    for e in steps:
        assert e["tid"] >= STEPS_TID and e["name"] == "step %d" % e["args"]["index"], e
        assert th[(e["pid"], e["tid"])].endswith(" steps"), th[(e["pid"], e["tid"])]
    # the steps' bucket_ns add up to each bucket's total
    for b in s["buckets"]:
        total = sum(e["args"]["bucket_ns"][b["name"]] for e in steps)
        eq(total, round(b["total_ms"] * 1e6), "bucket_ns of " + b["name"])
    mt = s["meta"]["trace"]
    eq((mt["file"], mt["events"], mt["dropped"], mt["truncated"]),
       ("trace.json", len(tr["traceEvents"]), 0, False), "meta.trace")
    eq(tr["otherData"]["truncated"], False, "otherData.truncated")
    with open(os.path.join(s["_out"], "report.md")) as f:
        md = f.read()
    assert "Trace: `trace.json`, %d events" % mt["events"] in md, md[:2000]
    return steps


def test_trace_native():
    s, t, err = profile(ENGINE_CONF, ["--steps", N], extra=["--trace"])
    assert "wrote %s" % os.path.join(s["_out"], "trace.json") in err, err
    tr = load(s)
    steps = check_common(s, tr, s["meta"]["comm"])
    eq(len(steps), N, "steps")
    # args: the buckets of each function
    for e in slices(tr, "native"):
        if e["name"] == "engine_forward":
            eq(e["args"]["buckets"], ["engine.forward"], "engine_forward buckets")
        elif e["name"] == "engine_step":
            assert "args" not in e, e
    # call mode: each step is its engine_step call, on the steps track
    calls = {(e["tid"], e["ts"], e["dur"]) for e in slices(tr, "native")
             if e["name"] == "engine_step"}
    for e in steps:
        assert (e["tid"] - STEPS_TID, e["ts"], e["dur"]) in calls, e
    # recursion nests on one track: engine_recurse x3 per step
    eq(sum(1 for e in slices(tr) if e["name"] == "engine_recurse"), 3 * N, "recursion")


def test_trace_iteration_threads():
    conf = ENGINE_CONF.replace("step   native:exe:engine_step",
                               "step   native:exe:loop_top mode=iteration")
    s, t, _ = profile(conf, ["--steps", N, "--threads", 2], extra=["--trace"])
    tr = load(s)
    steps = check_common(s, tr, s["meta"]["comm"])
    eq(len(steps), 2 * (N - 1), "iterations")
    # iterations of a thread follow each other end to start
    per = collections.defaultdict(list)
    for e in steps:
        per[e["tid"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    eq(len(per), 2, "a steps track per thread")
    for v in per.values():
        v.sort()
        for a, b in zip(v, v[1:]):
            eq(a[1], b[0], "iteration end = next start")


def test_trace_gpu_flows():
    s, t, _ = profile(GPU_CONF, ["--steps", N], victim_name="victim_gpu_synth",
                      extra=["--trace"])
    tr = load(s)
    check_common(s, tr, s["meta"]["comm"])
    g = s["gpu"]
    kern, copies, apis = slices(tr, "kernel"), slices(tr, "memcpy"), slices(tr, "cuda_api")
    eq((len(kern), len(copies), len(apis)), (g["kernels"], g["copies"], g["api_calls"]),
       "kernel, copy, API slices")
    eq(collections.Counter(e["name"] for e in kern), {"attn_fwd": 2 * N, "mlp_fwd": 2 * N},
       "kernel names")
    eq(collections.Counter(e["name"] for e in apis),
       {"cudaLaunchKernel": 4 * N, "cudaMemcpyAsync": N}, "API names")
    assert all(e["args"]["bytes"] == 1 << 20 and e["name"] == "memcpy HtoD" for e in copies)
    th, pr = names(tr)
    eq(pr.get(GPU_PID + 0), "GPU 0", "GPU process name")
    eq(th.get((GPU_PID + 0, 7)), "stream 7", "stream thread name")
    for e in apis:
        assert e["tid"] >= API_TID and th[(e["pid"], e["tid"])].endswith(" CUDA API"), e
    # flows: one s and one f per id, s at an API slice's start, f at a
    # kernel's or copy's start on its track
    fs = [e for e in tr["traceEvents"] if e["ph"] == "s"]
    ff = [e for e in tr["traceEvents"] if e["ph"] == "f"]
    eq(len(fs), 5 * N, "flows")
    sid = collections.Counter(e["id"] for e in fs)
    fid = collections.Counter(e["id"] for e in ff)
    eq(sid, fid, "s and f ids")
    assert max(sid.values()) == 1, "one flow per id"
    api_at = {(e["pid"], e["tid"], ns(e["ts"])): e for e in apis}
    work_at = {(e["pid"], e["tid"], ns(e["ts"])): e for e in kern + copies}
    for e in fs:
        a = api_at.get((e["pid"], e["tid"], ns(e["ts"])))
        assert a and a["args"]["correlation"] == e["id"], e
    for e in ff:
        eq(e.get("bp"), "e", "f binds to its enclosing slice")
        w = work_at.get((e["pid"], e["tid"], ns(e["ts"])))
        assert w and w["args"]["correlation"] == e["id"], e
    eq({e["cat"] for e in fs + ff}, {"cuda_flow"}, "flow cat")
    # the victim starts each kernel 10 us and each copy 5 us after its call
    s_ts = {e["id"]: ns(e["ts"]) for e in fs}
    delays = collections.Counter(ns(e["ts"]) - s_ts[e["id"]] for e in ff)
    eq(delays, {10000: 4 * N, 5000: N}, "launch to start")


def test_trace_truncated():
    s, t, _ = profile(ENGINE_CONF, ["--steps", N], extra=["--trace-max-events", "50"])
    tr = load(s)
    mt = s["meta"]["trace"]
    eq((mt["truncated"], mt["max_events"], mt["events"]),
       (True, 50, len(tr["traceEvents"])), "meta.trace")
    assert mt["dropped"] > 0, mt
    od = tr["otherData"]
    eq((od["truncated"], od["dropped"], od["max_events"]), (True, mt["dropped"], 50),
       "otherData")
    assert "--trace-max-events 50" in od["note"], od
    kept = [e for e in tr["traceEvents"] if e["ph"] in ("X", "s", "f")]
    assert 0 < len(kept) <= 50 + 50 // 8, len(kept)
    cut = [e for e in tr["traceEvents"] if e["ph"] == "i"]
    eq(len(cut), 1, "the cut marker")
    assert "cut at 50 events" in cut[0]["name"], cut
    # a time window: every kept event started before the cut, at the
    # window's end
    eq(cut[0]["ts"], od["window_end_us"], "the marker at the window's end")
    assert all(e["ts"] < od["window_end_us"] for e in kept), od
    check_nesting(tr)
    with open(os.path.join(s["_out"], "report.md")) as f:
        md = f.read()
    assert ("**Trace cut at --trace-max-events 50: %d later slices and arrows were left out "
            "of `trace.json` (%d events)" % (mt["dropped"], mt["events"])) in md, md[:2000]
    # the other outputs are whole
    eq(s["stats"]["steps"], N, "steps")
    eq(bucket(s, "engine.forward")["calls"], N, "forward calls")


def test_trace_python():
    python = pyenv_python(10)
    s, t, _ = profile(PY_CONF, victim_args=["--steps", 120, "--lazy"],
                      victim_name=[python, PY_VICTIM], victim_env=victim_env(),
                      extra=["--trace"])
    eq(s["meta"]["python"]["timing"], "exact", "timing")
    tr = load(s)
    check_common(s, tr, s["meta"]["comm"])
    py = collections.Counter(e["name"] for e in slices(tr, "python"))
    for q in ("Engine.step", "Scheduler.schedule", "ModelRunner.forward", "ModelRunner.layer",
              "Sampler.sample", "postprocess", "detokenize"):
        assert py[q] > 0, "no python slice named %s: %r" % (q, sorted(py))
    eq(py["Engine.step"], 120, "Engine.step slices")
    # native calls nest in Python ones on the same thread
    eq(sum(1 for e in slices(tr, "native") if e["name"] == "getppid"), 120, "getppid slices")
    for e in slices(tr, "python"):
        if e["name"] == "ModelRunner.forward":
            eq(e["args"]["buckets"], ["engine.forward"], "forward buckets")
