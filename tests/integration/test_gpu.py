# SPDX-License-Identifier: BSD-2-Clause
"""The GPU stream joined with the host one (issue 5), without a GPU.

victim_gpu_synth creates the CUPTI shim's segment itself and, while
proftrace is attached, writes through the shim's own writer the records
CUPTI would give for the work its host functions launch: per step one
30 us copy from engine_schedule and kernels of 40, 80, 120 and 160 us
from engine_forward, each starting 10 us after its launch call and
ending inside the step. Every figure that depends only on those records
is exact; idle time is the step's own time minus that.
Runs on a real GPU: tests/gpu/ (not part of make test).
"""
import os
import tempfile

from harness import (ROOT, Skip, bucket, eq, profile, proftrace_done, run_proftrace, victim,
                     with_agent)
from test_python import pyenv_python

CONF = """\
step   native:exe:gpu_step
bucket engine.schedule native:exe:engine_schedule
bucket engine.forward  native:exe:engine_forward
bucket cuda.sync       native:exe:engine_sync
bucket engine.sample   native:exe:engine_sample
"""
N = 150


def close(got, want, what, eps=1e-6):
    assert abs(got - want) <= eps, "%s: got %r, want %r" % (what, got, want)


def test_gpu_join_synthetic():
    s, t, err = profile(CONF, ["--steps", N], victim_name="victim_gpu_synth")
    check_synthetic(s, t, err, N)
    eq((s["gpu"]["folds"], s["gpu"]["records_late"], s["gpu"]["records_not_held"]), (0, 0, 0),
       "below the bound: no fold")


def test_gpu_join_folded():
    """The end-of-run join's memory bound (docs/gpu.md, "The memory
    bound"), made small with its test knobs: 10,000 records and a fold
    lag of 2 s on a run of 6,000 steps (about 90,000 records, 15,000 a
    second here), so that the join folds the old part into its totals many
    times while the process runs, with the lag shrunk as on a fast stream
    (to a sixth: records come within a poll, 20 ms). Every figure is still
    the victim's, to the ns."""
    n = 6000
    os.environ.update(PT_GPU_MAX_HELD="10000", PT_GPU_FOLD_LAG_MS="2000")
    try:
        s, t, err = profile(CONF, ["--steps", n], victim_name="victim_gpu_synth")
    finally:
        for k in ("PT_GPU_MAX_HELD", "PT_GPU_FOLD_LAG_MS"):
            os.environ.pop(k, None)
    g = s["gpu"]
    print("    folds %d, late %d, not held %d" % (g["folds"], g["records_late"],
                                                 g["records_not_held"]))
    assert g["folds"] >= 3, g["folds"]
    eq((g["records_late"], g["records_not_held"]), (0, 0), "late, not held")
    check_synthetic(s, t, err, n)


def check_synthetic(s, t, err, N):
    assert "GPU stream from the CUPTI shim" in err, err
    g = s["gpu"]
    eq(g["source"], "cupti-shim", "source")
    eq((g["kernels"], g["copies"], g["api_calls"]), (t["kernels"], t["copies"], t["api"]),
       "kernels, copies, launch calls")
    eq((g["kernels"], g["copies"]), (4 * N, N), "what the victim launched")
    eq((g["unmatched"], g["outside_steps"]), (0, 0), "unmatched, outside steps")
    for k in ("ring_dropped", "cupti_dropped", "lost", "invalid", "unknown_kinds"):
        eq(g["records"][k], 0, "records " + k)
    eq(g["copy_bytes"], N << 20, "copy bytes")
    busy = N * t["busy_ns_per_step"] / 1e6
    close(g["busy_ms"], busy, "busy ms")
    st = g["steps"]
    eq((st["steps"], st["steps_with_gpu"], st["work_launched"]), (N, N, 5 * N), "steps")
    close(st["busy_ms"], busy, "busy ms in steps")
    close(st["busy"]["mean_ms"], 0.43, "busy per step")
    close(st["idle_ms"], s["stats"]["time_ms"] - busy, "idle = step time - busy", 2e-6)
    close(st["host_bound_share"], st["idle_ms"] / s["stats"]["time_ms"], "host-bound", 2e-6)
    # every kernel starts 10 us after its launch call
    ld = g["launch_delay"]
    eq(ld["count"], 4 * N, "launch delays")
    close(ld["p50_ms"], 0.01, "launch delay p50")
    close(ld["max_ms"], 0.01, "launch delay max")
    gb = {b["name"]: b for b in g["buckets"]}
    eq(gb["engine.schedule"]["work_launched"], N, "copies launched in engine.schedule")
    close(gb["engine.schedule"]["gpu_ms"], N * 0.030, "engine.schedule GPU ms")
    eq(gb["engine.forward"]["work_launched"], 4 * N, "kernels launched in engine.forward")
    close(gb["engine.forward"]["gpu_ms"], N * 0.400, "engine.forward GPU ms")
    eq((gb["cuda.sync"]["work_launched"], gb["engine.sample"]["work_launched"]), (0, 0),
       "no work from sync or sample")
    top = [(k["name"], k["count"]) for k in g["top_kernels"]]
    eq(top, [("mlp_fwd", 2 * N), ("attn_fwd", 2 * N)], "top kernels")
    close(g["top_kernels"][0]["total_ms"], N * 0.240, "mlp_fwd total")
    eq(len(g["devices"]), 1, "devices")
    # the host side is untouched by the GPU stream
    eq(s["stats"]["steps"], N, "steps")
    eq(bucket(s, "engine.forward")["calls"], N, "forward calls")
    with open(os.path.join(s["_out"], "report.md")) as f:
        md = f.read()
    assert "## GPU" in md and "`mlp_fwd`" in md and "| engine.forward | %d |" % (4 * N) in md, md


def test_gpu_auto_and_off_without_shim():
    conf = "step native:exe:engine_step\n"
    s, _, _ = profile(conf, ["--steps", 20])
    eq(s["gpu"]["source"], "none", "auto without a shim")
    assert "CUDA_INJECTION64_PATH" in s["gpu"]["why"], s["gpu"]
    s, _, _ = profile(conf, ["--steps", 20], extra=["--gpu", "off"])
    eq((s["gpu"]["source"], s["gpu"]["why"]), ("none", "--gpu off"), "--gpu off")


def test_gpu_on_without_shim_is_an_error():
    v = victim("victim_engine")
    conf = os.path.join(tempfile.mkdtemp(prefix="pt-it-"), "t.conf")
    with open(conf, "w") as f:
        f.write("step native:exe:engine_step\n")
    try:
        rc, out, err = run_proftrace(["-p", str(v.pid), "--targets", conf, "--gpu", "on",
                                      "-d", "1"])
        eq(rc, 2, "exit code")
        lines = err.strip().splitlines()
        eq(len(lines), 1, "one line: %r" % err)
        assert "no CUPTI shim" in lines[0] and "CUDA_INJECTION64_PATH" in lines[0], err
        rc, _, err = run_proftrace(["-p", str(v.pid), "--targets", conf, "--gpu", "maybe"])
        eq(rc, 2, "bad --gpu value")
        assert "bad --gpu 'maybe'" in err, err
    finally:
        v.kill()


def test_real_shim_without_driver_reports_the_conflict():
    """The real libproftrace_cupti.so: attach wakes it, its CUPTI calls fail
    (no driver here), proftrace reports which call and why, and the
    process runs on to its last step."""
    shim = os.environ.get("PT_SHIM") or os.path.join(ROOT, ".output", "libproftrace_cupti.so")
    if not os.path.exists(shim):
        raise Skip("no CUPTI shim at %s: it is built only when CUDA is found (CUDA_HOME)"
                   % shim)
    s, t, err = profile("step py:pyshim::step\n", ["--steps", 60],
                        victim_name=[pyenv_python(10), os.path.join(ROOT, "tests", "victims",
                                                                    "pyshim.py"), shim],
                        extra=["--gpu", "on"], victim_env=with_agent(os.environ))
    eq(t["init"], 1, "InitializeInjection")
    eq(s["stats"]["steps"], 60, "steps: the process ran on")
    g = s["gpu"]
    eq(g["source"], "cupti-shim", "source")
    c = g["shim"]["conflict"]
    assert c and c["call"].startswith("cupti") and c["result"] == "CUPTI_ERROR_UNKNOWN", g["shim"]
    eq((g["shim"]["active"], g["kernels"]), (False, 0), "never active, no records")
    assert "CUPTI could not be enabled" in err, err
    with open(os.path.join(s["_out"], "report.md")) as f:
        md = f.read()
    assert "**CUPTI conflict:**" in md
    # the shim's control thread and the agent's: proftrace's own, apart
    # from the stacks and the thread tables, in Health (issue 24, part 5)
    own = s["meta"]["sampling"]["proftrace_threads"]["threads"]
    eq(sorted(x["name"] for x in own), ["proftrace-cupti", "proftrace-py"], "own threads")
    assert not [x for x in s["meta"]["sampling"]["threads"] if x["name"].startswith("proftrace")]
    with open(os.path.join(s["_out"], "stacks.folded")) as f:
        assert "proftrace-" not in f.read()
    assert "`proftrace-cupti` (tid %d)" % [x["tid"] for x in own
                                            if x["name"] == "proftrace-cupti"][0] in md, md


def test_gpu_two_processes():
    """Each process its own GPU stream (its own shim segment, correlation
    ids that collide across them): each section exact, and the merged
    top level says where the GPU figures are."""
    import json
    from harness import PROFTRACE, Proc, write_conf
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, CONF)
    out = os.path.join(tmp, "out")
    steps = (60, 90)
    vs = [victim("victim_gpu_synth", "--truth", os.path.join(tmp, "t%d" % i), "--steps", n)
          for i, n in enumerate(steps)]
    pt = None
    try:
        pt = Proc([PROFTRACE, "-p", ",".join(str(v.pid) for v in vs), "--targets", conf,
                   "-o", out, "--trace"], stdin=False, stdout=True, stderr=True)
        for _ in vs:
            pt.wait_line("proftrace: attached", "err", timeout=90)
        for v in vs:
            v.send("go\n")
        for v in vs:
            assert v.wait(60) == 0, "victim failed"
        err = proftrace_done(pt)
    finally:
        for v in vs:
            v.kill()
        if pt:
            pt.kill()
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    assert "processes[].gpu" in s["gpu"]["why"], s["gpu"]
    for v, n, i in zip(vs, steps, range(2)):
        p = [x for x in s["processes"] if x["meta"]["pid"] == v.pid][0]
        with open(os.path.join(tmp, "t%d" % i)) as f:
            t = json.load(f)
        g = p["gpu"]
        eq((g["kernels"], g["copies"], g["api_calls"]), (4 * n, n, t["api"]), "pid %d" % v.pid)
        eq((g["unmatched"], g["outside_steps"]), (0, 0), "unmatched, outside steps")
        close(g["steps"]["busy_ms"], n * t["busy_ns_per_step"] / 1e6, "busy ms")
        eq(g["launch_delay"]["count"], 4 * n, "launch delays")
        close(g["launch_delay"]["max_ms"], 0.01, "launch delay max")
    # trace.json: one GPU process per (process, device), each flow within
    # its own process
    with open(os.path.join(out, "trace.json")) as f:
        tr = json.load(f)["traceEvents"]
    gpu_names = sorted(e["args"]["name"] for e in tr if e["ph"] == "M" and
                       e["name"] == "process_name" and e["args"]["name"].startswith("GPU"))
    eq(gpu_names, sorted("GPU 0 (pid %d)" % v.pid for v in vs), "GPU tracks")
    starts = [e for e in tr if e["ph"] == "s"]
    eq(len(starts), 5 * sum(steps), "one arrow per launch")
    eq(len({e["id"] for e in starts}), len(starts), "arrow ids unique across processes")


def test_gpu_on_with_children():
    """--gpu on --children: the launcher (a shell) has no shim, its child
    has: traced, the child's GPU exact; with no shim anywhere, one error."""
    import json
    import subprocess
    from harness import PROFTRACE, Proc, VICTIMS, write_conf
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, CONF)
    out = os.path.join(tmp, "out")
    n = 50
    synth = os.path.join(VICTIMS, "victim_gpu_synth")
    sh = Proc(["/bin/sh", "-c", "%s --truth %s/t --steps %d; true" % (synth, tmp, n)])
    pt = None
    try:
        child = int(sh.wait_line("ready ").split()[1])
        pt = Proc([PROFTRACE, "-p", str(sh.p.pid), "--children", "--gpu", "on",
                   "--targets", conf, "-o", out], stdin=False, stdout=True, stderr=True)
        for _ in range(2):
            pt.wait_line("proftrace: attached", "err", timeout=90)
        sh.send("go\n")
        assert sh.wait(60) == 0, "victim failed"
        err = proftrace_done(pt)
    finally:
        sh.kill()
        if pt:
            pt.kill()
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    p = [x for x in s["processes"] if x["meta"]["pid"] == child][0]
    eq((p["gpu"]["kernels"], p["gpu"]["copies"]), (4 * n, n), "the child's GPU work")
    eq(s["gpu"]["kernels"], 4 * n, "the only GPU stream is the top level's too")
    sleeper = subprocess.Popen(["/bin/sh", "-c", "sleep 30; true"])
    # a probe on a library not loaded: pending, not an error of its own
    pending = write_conf(tmp, "bucket cuda.launch native:libcudart.so*:cudaLaunchKernel\n")
    try:
        rc, _, err = run_proftrace(["-p", str(sleeper.pid), "--children", "--gpu", "on",
                                    "--targets", pending, "-d", "1"])
        eq(rc, 2, "no shim anywhere: " + err)
        assert "no CUPTI shim in pid %d or its descendants" % sleeper.pid in err, err
    finally:
        sleeper.kill()
        sleeper.wait()
