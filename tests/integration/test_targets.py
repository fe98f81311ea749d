# SPDX-License-Identifier: BSD-2-Clause
"""The bundled configs in targets/: each parses, and each works on a real process.

The engine configs (vllm, vllm-worker, sglang, trtllm) are run against
fake engines (tests/victims/engines/): packages that reproduce the module
paths, classes, methods and processes the configs name, as read in the
engines' sources (see each config's header), calling each other as the
real loops do, started with the Python agent as a server is after
`eval "$(proftrace env)"`. Each fake function records its own calls, so
every config is proven against the fake's own truth, process by process:
exact step, call and bucket counts, and every time between the fake's own
measurements inside and around the calls. A config whose py:
probe no longer matches its fake, or a fake renamed without its config,
fails here. nccl.conf and the cuda.* buckets are checked against the real
libnccl / libcudart where installed.
"""
import fnmatch
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

from harness import (PROFTRACE, ROOT, Proc, Skip, bucket, eq, func, proftrace_done, profile,
                     read_run, run_proftrace, stop, victim, with_agent, within)

CUDART = os.environ.get("PT_CUDART", "/usr/local/cuda/lib64/libcudart.so.13")
N = 100
TARGETS = os.path.join(ROOT, "targets")
RUNNER = os.path.join(ROOT, "tests", "victims", "engines", "run_engines.py")
# bundled engine config -> the fake engine it runs on
ENGINES = {"vllm": "vllm", "vllm-worker": "vllm", "sglang": "sglang", "trtllm": "trtllm"}
ENGINE_STEPS = 40
# any CPython 3.8+ is exact with the agent; PT_ENGINE_PYTHON picks another
ENGINE_PYTHON = os.environ.get("PT_ENGINE_PYTHON", sys.executable)
SLACK_NS = 1000  # per call: the clock's cross-CPU consistency, as harness.CLOCK_SLACK_NS


def bundled():
    confs = sorted(glob.glob(os.path.join(TARGETS, "*.conf")))
    assert confs, "no bundled configs"
    return confs


def conf_probes(path):
    """{keyword: [probe text, ...]} of a targets file (step, bucket, lines, count)."""
    out = {"step": [], "bucket": [], "lines": [], "count": []}
    with open(path) as f:
        for line in f:
            toks = line.split("#", 1)[0].split()
            if toks and toks[0] in out:
                out[toks[0]] += [t for t in toks[1:] if t.startswith(("py:", "native:"))]
    return out


def conf_buckets(path):
    """[(bucket name, [probe, ...]), ...] in file order."""
    out = []
    with open(path) as f:
        for line in f:
            toks = line.split("#", 1)[0].split()
            if len(toks) > 2 and toks[0] == "bucket":
                out.append((toks[1], toks[2:]))
    return out


def conf_step(path):
    with open(path) as f:
        for line in f:
            toks = line.split("#", 1)[0].split()
            if toks and toks[0] == "step":
                mode = [t[5:] for t in toks[2:] if t.startswith("mode=")]
                return toks[1], (mode[0] if mode else "call")
    return None, None


def all_probes(path, kind):
    seen = []
    for probes in conf_probes(path).values():
        seen += [p for p in probes if p.startswith(kind) and p not in seen]
    return seen


def py_spec(probe):
    """py: probe -> (module, qualified-name glob), as docs/targets.md says."""
    spec = probe[len("py:"):]
    if "::" in spec:
        return tuple(spec.split("::", 1))
    parts = spec.split(".")
    return ".".join(parts[:-2]), ".".join(parts[-2:])


def py_matches(probe, row):
    """Does a functions[] row of summary.json come from this py: probe?
    The same rule as docs/targets.md: the file ends in the module path, the
    qualified name matches Class.method (or is the function of `::`)."""
    module, glob_ = py_spec(probe)
    rel = module.replace(".", "/")
    obj = row.get("object") or ""
    if not (obj.endswith("/" + rel + ".py") or obj.endswith("/" + rel + "/__init__.py")):
        return False
    return fnmatch.fnmatchcase(row["symbol"] or "", glob_)


def key_matches(probe, key):
    """The same rule on a fake's truth key (module, qualified name)."""
    module, glob_ = py_spec(probe)
    if "::" in probe and "." in key[1]:
        return False
    return key[0] == module and fnmatch.fnmatchcase(key[1], glob_)


def find_lib(env, patterns):
    path = os.environ.get(env)
    if path:
        return path if os.path.exists(path) else None
    for pat in patterns:
        hits = sorted(glob.glob(pat))
        if hits:
            return hits[-1]
    return None


def nccl_lib():
    return find_lib("PT_NCCL", ["/usr/local/cuda*/lib*/libnccl.so.2",
                                "/usr/lib/x86_64-linux-gnu/libnccl.so.2"])


def engine_victim(engine, *args, env=None):
    """A fake engine, started as a server is: after `eval "$(proftrace env)"`.
    Its .pids are all its processes, this one first."""
    venv = dict(os.environ if env is None else env)
    venv.pop("PYTHONPERFSUPPORT", None)
    venv.pop("LD_PRELOAD", None)
    v = victim([ENGINE_PYTHON, RUNNER, engine], *args, env=with_agent(venv))
    v.pids = [int(x) for ln in v.lines["out"] if ln.startswith("pids ")
              for x in ln.split()[1:]]
    assert v.pids and v.pids[0] == v.pid, v.lines["out"]
    return v


def dry_run(pid, conf):
    rc, out, err = run_proftrace(["-p", str(pid), "--targets", conf, "--dry-run"])
    eq(rc, 0, "%s --dry-run (%s)" % (os.path.basename(conf), err.strip()))
    return out


def dry_run_lines(out, probe):
    return [ln for ln in out.splitlines() if ln.split(" ", 1)[0] == probe]


def engine_conf(name):
    with open(os.path.join(TARGETS, name + ".conf")) as f:
        return f.read()


def test_every_bundled_config_dry_runs():
    """Every targets/*.conf parses and resolves: the engine configs against
    a Python process running their fake engine (py: probes need an
    interpreter), demo.conf against the demo engine, the native ones
    against victim_engine."""
    for conf in bundled():
        name = os.path.basename(conf)[:-len(".conf")]
        if name in ENGINES:
            v = engine_victim(ENGINES[name])
        elif name == "demo":
            v = victim([sys.executable, os.path.join(ROOT, "tests", "victims", "demo_engine.py"),
                        "--hold"])
        else:
            v = victim("victim_engine")
        try:
            out = dry_run(v.pid, conf)
        finally:
            v.kill()
        # each py: probe listed: found at attach (no agent to ask), what
        # the agent would hook, or why it has nothing now
        said = ("found at attach, by code object", "(the agent hooks it at attach)",
                "matches nothing now: ")
        for p in all_probes(conf, "py:"):
            lines = dry_run_lines(out, p)
            assert lines and all(any(w in x for w in said) for x in lines), \
                "%s: %s not listed for the interpreter:\n%s" % (name, p, out)


def test_engine_configs_have_a_step_buckets_and_lines():
    for name in ENGINES:
        conf = os.path.join(TARGETS, name + ".conf")
        p = conf_probes(conf)
        eq(len(p["step"]), 1, name + " step probes")
        assert p["step"][0].startswith("py:"), p["step"]
        assert p["lines"], name + ": no lines line"
        names = [b for b, _ in conf_buckets(conf)]
        want = ["engine.forward", "engine.sample", "cuda.sync"]
        if name != "vllm-worker":  # the worker neither schedules nor updates
            want += ["engine.schedule", "engine.postproc"]
        for b in want:
            assert b in names, (name, b)
        with open(conf) as f:
            text = f.read()
        # the host is not blocked by cudaStreamWaitEvent (issue 19)
        assert "cudaStreamWaitEvent" not in text.split("\nstep", 1)[1], name
        # exact timing comes from the agent now: no header asks for 3.10 or the perf trampoline
        assert "PYTHONPERFSUPPORT" not in text and "3.10" not in text, name


# --- the fake engine's truth --------------------------------------------------

class ProcTruth:
    """One process of a fake engine: its recorded calls, each measured
    around the call ("a0", "a1") and inside it ("i0", "i1"; None for a
    call of a function that is not the fake's own: 0 as the lower bound)."""

    def __init__(self, t, go_ns):
        self.t = t
        self.pid = t["pid"]
        self.go_ns = go_ns
        # a call begun before the fake was told to go (a worker waiting for
        # its first RPC) began before proftrace attached: not seen, not counted
        self.calls = [{"key": (r[0], r[1]), "tid": r[2], "thread": r[3], "a0": r[4],
                       "a1": r[5], "i0": r[6], "i1": r[7], "parents": r[8]}
                      for r in t["calls"] if r[4] >= go_ns]
        for c in self.calls:
            c["lo"] = c["i1"] - c["i0"] if c["i0"] is not None else 0
            c["hi"] = c["a1"] - c["a0"]

    def keys(self, probe):
        return sorted({c["key"] for c in self.calls if key_matches(probe, c["key"])})

    def of(self, key):
        return [c for c in self.calls if c["key"] == key]

    def steps(self, probe, mode):
        """[(tid, start, end, lo, hi)] of the counted steps: outermost calls
        of the step function (mode=call), or from one outermost entry to the
        next on the same thread (mode=iteration; the last one never closes).
        proftrace's entry lies between the around and the inside start."""
        keys = set(self.keys(probe))
        names = {"%s:%s" % k for k in keys}
        outer = sorted((c for c in self.calls if c["key"] in keys and
                        not names.intersection(c["parents"])), key=lambda c: c["a0"])
        if mode == "call":
            return [(c["tid"], c["a0"], c["a1"], c["lo"], c["hi"]) for c in outer]
        out = []
        for tid in {c["tid"] for c in outer}:
            mine = [c for c in outer if c["tid"] == tid]
            out += [(tid, a["a0"], b["a0"], b["a0"] - a["i0"], b["i0"] - a["a0"])
                    for a, b in zip(mine, mine[1:])]
        return sorted(out, key=lambda s: s[1])

    def bucket(self, probes, steps):
        """(calls, lo ns, hi ns) of a bucket: outermost calls of its
        functions inside a counted step of their thread."""
        keys = {k for p in probes if p.startswith("py:") for k in self.keys(p)}
        names = {"%s:%s" % k for k in keys}
        n = lo = hi = 0
        for c in self.calls:
            if c["key"] not in keys or names.intersection(c["parents"]):
                continue
            if not any(tid == c["tid"] and a <= c["a0"] and c["a1"] <= b
                       for tid, a, b, _, _ in steps):
                continue
            n += 1
            lo += c["lo"]
            hi += c["hi"]
        return n, lo, hi

    def hooks(self, what, steps=None):
        """Hook calls of the process (each one native call), or those inside
        counted steps of their thread."""
        calls = [h for h in self.t["hooks"].get(what, []) if h[2] >= self.go_ns]
        if steps is None:
            return len(calls)
        return len([h for h in calls
                    if any(tid == h[0] and a <= h[2] <= b for tid, a, b, _, _ in steps)])


def near(got_ms, lo_ns, hi_ns, calls, what):
    """proftrace's time lies between the fake's inside and around sums, up
    to SLACK_NS per call."""
    assert got_ms is not None, "%s: no value" % what
    got = got_ms * 1e6
    lo, hi = lo_ns - calls * SLACK_NS, hi_ns + calls * SLACK_NS
    assert lo <= got <= hi, "%s: got %.3f ms, the fake's truth allows [%.3f, %.3f] ms" % (
        what, got_ms, lo / 1e6, hi / 1e6)


def section(s, pid):
    rows = [p for p in s.get("processes", [s]) if p["meta"]["pid"] == pid]
    assert len(rows) == 1, "want one section for pid %d, got %d" % (pid, len(rows))
    return rows[0]


def check_process(conf, sec, pt, what, steps_expected=None):
    """A process's section of summary.json against the process's truth:
    steps, every named function it ran, every bucket. A failure also shows
    what proftrace warned about during the run."""
    try:
        return _check_process(conf, sec, pt, what, steps_expected)
    except AssertionError as e:
        warnings = [ln for ln in LAST_ERR[0].splitlines() if "warning" in ln]
        raise AssertionError("%s\nproftrace's warnings:\n  %s" % (
            e, "\n  ".join(warnings) or "(none)")) from None


LAST_ERR = [""]  # proftrace's stderr of the last profile_engine run


def _check_process(conf, sec, pt, what, steps_expected):
    step_probe, mode = conf_step(conf)
    steps = pt.steps(step_probe, mode)
    if steps_expected is not None:
        eq(len(steps), steps_expected, what + " truth steps")
    eq(sec["stats"]["steps"], len(steps), what + " steps")
    if steps:
        near(sec["stats"]["time_ms"], sum(st[3] for st in steps), sum(st[4] for st in steps),
             len(steps), what + " step time")
    rows = [f for f in sec["functions"] if f.get("kind") == "python"]
    for probe in all_probes(conf, "py:"):
        for key in pt.keys(probe):
            calls = pt.of(key)
            hit = [f for f in rows if py_matches(probe, f) and f["symbol"] == key[1]]
            assert len(hit) == 1, "%s: %s (%s) ran %d times in the fake, rows %s" % (
                what, probe, key, len(calls), hit)
            f = hit[0]
            eq(f["timing"], "exact", "%s %s timing" % (what, key[1]))
            eq(f["calls"], len(calls), "%s %s calls" % (what, key[1]))
            near(f["total_ms"], sum(c["lo"] for c in calls), sum(c["hi"] for c in calls),
                 len(calls), "%s %s total" % (what, key[1]))
    for name, probes in conf_buckets(conf):
        b = bucket(sec, name)
        if name == "cuda.sync":
            # the fake calls cudaStreamSynchronize once per hook("sync")
            eq(b["calls"], pt.hooks("sync", steps), what + " cuda.sync calls in steps")
            continue
        n, lo, hi = pt.bucket(probes, steps)
        eq(b["calls"], n, "%s bucket %s calls" % (what, name))
        if n:
            near(b["total_ms"], lo, hi, n, "%s bucket %s" % (what, name))
    return steps


def profile_engine(name, engine_args, targets, children=False, extra=()):
    """Start the fake engine, attach to the processes targets(pids) names
    (with --children if asked), wait for every process to be attached, go.
    Returns (summary, {pid: ProcTruth}, pids, proftrace stderr). Once more
    when an agent did not answer within proftrace's 3 s at attach (a loaded
    machine): its first calls are then not timed, by design, and said."""
    out = _profile_engine(name, engine_args, targets, children, extra)
    if "has not answered in 3 s" in out[3]:
        out = _profile_engine(name, engine_args, targets, children, extra)
    LAST_ERR[0] = out[3]
    return out


def _profile_engine(name, engine_args, targets, children, extra):
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = os.path.join(tmp, "targets.conf")
    with open(conf, "w") as f:
        f.write(engine_conf(name) if isinstance(name, str) else name[1])
    truth_path = os.path.join(tmp, "truth.json")
    out = os.path.join(tmp, "out")
    engine = ENGINES[name] if isinstance(name, str) else name[0]
    v = engine_victim(engine, "--truth", truth_path, *engine_args)
    pt = None
    try:
        pids = targets(v.pids)
        # --children: the named processes and those started after them (the
        # fakes list a process before its children)
        want = set(v.pids[v.pids.index(pids[0]):] if children else pids)
        argv = [PROFTRACE, "-p", ",".join(map(str, pids)), "--targets", conf, "-o", out]
        pt = Proc(argv + (["--children"] if children else []) + list(extra),
                  stdin=False, stdout=True, stderr=True)
        seen = set()
        while not want <= seen:
            line = pt.wait_line("proftrace: attached", "err", timeout=60)
            seen |= {int(m) for m in re.findall(r"to pid (\d+)", line)}
        v.send("go\n")
        assert v.wait(180) == 0, "victim failed"
        err = proftrace_done(pt)
    finally:
        stop(v, pt)
    s, t = read_run(out, truth_path)
    eq(s["health"]["dropped_events"], 0, "dropped events")
    eq(s["meta"]["python"]["timing"], "exact", "python timing")
    return s, {p["pid"]: ProcTruth(p, t["go_ns"]) for p in t["processes"]}, v.pids, err


def cuda_args():
    return ["--cudart", CUDART] if os.path.exists(CUDART) else []


def lines_of(sec):
    return {x["probe"]: x for x in sec.get("lines", [])}


def check_cudart(sec, pt, what):
    """Every hook("sync") of the process is one cudaStreamSynchronize call."""
    if not os.path.exists(CUDART):
        return
    rows = [f for f in sec["functions"] if f["symbol"] == "cudaStreamSynchronize"]
    n = pt.hooks("sync")
    if n:
        eq(sum(f["calls"] or 0 for f in rows), n, what + " cudaStreamSynchronize calls")


def test_vllm_conf_on_fake_engine():
    """One GPU: the API server and the engine core, where the model runs
    (UniProcExecutor). Every bucket fills in the engine core; the GPU wait
    is on the WorkerAsyncOutput thread, so cuda.sync stays 0 on the step
    thread and the step waits in engine.wait_output; tokens per step from
    the scheduler output; the API server's detokenizer in its own section."""
    conf = os.path.join(TARGETS, "vllm.conf")
    s, t, pids, _ = profile_engine("vllm", ["--steps", ENGINE_STEPS, "--tp", 1] + cuda_args(),
                                   lambda pids: pids[:1], children=True)
    api, core = pids
    eq(sorted(s["meta"]["pids"]), sorted(pids), "traced processes")
    check_process(conf, section(s, api), t[api], "API server", 0)
    steps = check_process(conf, section(s, core), t[core], "engine core", ENGINE_STEPS)
    sec = section(s, core)
    for b in ("engine.schedule", "engine.grammar", "engine.prepare", "engine.forward",
              "engine.sample", "engine.draft", "engine.wait_output", "engine.postproc"):
        eq(bucket(sec, b)["calls"] > 0, True, "engine core %s has calls" % b)
    eq(bucket(sec, "cuda.sync")["calls"], 0, "no GPU wait on the step thread")
    check_cudart(sec, t[core], "engine core")
    # the first calls after attach may come before proftrace has read the
    # function's code object (first_call) or the SchedulerOutput type's
    # layout (type_pending): those values are missing, never guessed
    missing = {k: v for k, v in sec["values"]["count_tokens"][0]["missing"].items() if v}
    first = sum(missing.values())
    assert set(missing) <= {"first_call", "type_pending"} and first <= 2, missing
    eq(sec["stats"]["tokens"], sum(t[core].t["tokens"][first:]), "tokens")
    eq(sec["stats"]["steps_with_tokens"], len(steps) - first, "steps with tokens")
    lines = lines_of(sec)
    for p in ("py:vllm.v1.engine.core.*EngineCoreProc.run_busy_loop",
              "py:vllm.v1.engine.core.EngineCoreProc._process_engine_step"):
        assert p in lines, "engine core: no per-line report for %s" % p
    assert "py:vllm.v1.engine.output_processor.OutputProcessor.process_outputs" in \
        lines_of(section(s, api)), "API server: no per-line report of the detokenizer"


def test_vllm_conf_engine_core_with_workers():
    """TP 2: the engine core schedules, waits for the workers' answer
    (FutureWrapper.result) and updates; the model buckets are empty there."""
    conf = os.path.join(TARGETS, "vllm.conf")
    s, t, pids, _ = profile_engine("vllm", ["--steps", ENGINE_STEPS, "--tp", 2] + cuda_args(),
                                   lambda pids: pids[1:2])
    core = pids[1]
    sec = section(s, core)
    check_process(conf, sec, t[core], "engine core", ENGINE_STEPS)
    eq(bucket(sec, "engine.forward")["calls"], 0, "no model in the engine core")
    eq(bucket(sec, "engine.wait_output")["calls"], 2 * ENGINE_STEPS,
       "one wait for execute_model and one for sample_tokens per step")


def test_vllm_worker_conf_on_fake_workers():
    """TP 2, --children on the engine core: every worker has its own steps
    (Worker.execute_model, iteration) and bucket breakdown, with its rank;
    the engine core has none with this file."""
    conf = os.path.join(TARGETS, "vllm-worker.conf")
    s, t, pids, _ = profile_engine("vllm-worker",
                                   ["--steps", ENGINE_STEPS, "--tp", 2] + cuda_args(),
                                   lambda pids: pids[1:2], children=True)
    core, workers = pids[1], pids[2:]
    eq(len(workers), 2, "worker processes")
    check_process(conf, section(s, core), t[core], "engine core", 0)
    for r, w in enumerate(workers):
        sec = section(s, w)
        eq(sec["meta"]["rank"], r, "worker rank")
        check_process(conf, sec, t[w], "rank %d" % r, ENGINE_STEPS - 1)
        for b in ("engine.wait_rpc", "engine.prepare", "engine.forward", "engine.sample",
                  "engine.draft"):
            eq(bucket(sec, b)["calls"] > 0, True, "rank %d %s has calls" % (r, b))
        eq(bucket(sec, "cuda.sync")["calls"], 0, "rank %d: the GPU wait is off the step thread" % r)
        check_cudart(sec, t[w], "rank %d" % r)
        assert "py:vllm.v1.executor.multiproc_executor.WorkerProc.worker_busy_loop" in \
            lines_of(sec), "rank %d: no per-line report of the RPC loop" % r
    eq(s["skew"]["processes"], 2, "skew across the two ranks")


def test_sglang_conf_on_fake_engine():
    """TP 2, --children on the server process: each scheduler process (one
    per rank, it runs the model) has its steps and every bucket, engine.idle
    included; every event loop has its per-line report; the detokenizer
    process's decoding is timed in its own section."""
    conf = os.path.join(TARGETS, "sglang.conf")
    s, t, pids, _ = profile_engine("sglang", ["--steps", ENGINE_STEPS, "--tp", 2] + cuda_args(),
                                   lambda pids: pids[:1], children=True)
    server, ranks, detok = pids[0], pids[1:3], pids[3]
    eq(sorted(s["meta"]["pids"]), sorted(pids), "traced processes")
    check_process(conf, section(s, server), t[server], "server", 0)
    loops = [p for p in conf_probes(conf)["lines"] if "event_loop" in p]
    for r, pid in enumerate(ranks):
        sec = section(s, pid)
        check_process(conf, sec, t[pid], "scheduler TP%d" % r, ENGINE_STEPS - 1)
        eq(sec["stats"]["incomplete_steps"], 1, "the last iteration never closes")
        for name, _ in conf_buckets(conf):
            if name != "cuda.sync" or os.path.exists(CUDART):
                eq(bucket(sec, name)["calls"] > 0, True, "TP%d %s has calls" % (r, name))
        check_cudart(sec, t[pid], "TP%d" % r)
        for p in loops:
            assert p in lines_of(sec), "TP%d: no per-line report for %s" % (r, p)
    sec = section(s, detok)
    check_process(conf, sec, t[detok], "detokenizer", 0)
    assert "py:sglang.srt.managers.detokenizer_manager.DetokenizerManager." \
        "handle_batch_token_id_out" in lines_of(sec), "detokenizer: no per-line report"


def test_trtllm_conf_on_fake_engine():
    """TP 2, --children on the trtllm-serve process: each rank's worker runs
    the PyExecutor loops on a thread of its own; one step per iteration of
    all three loops (the pp loop never calls _prepare_and_schedule_batch);
    both homes of TorchSampler and ResourceManager run; detokenization is
    timed in the serve process."""
    conf = os.path.join(TARGETS, "trtllm.conf")
    s, t, pids, _ = profile_engine("trtllm", ["--steps", ENGINE_STEPS, "--tp", 2] + cuda_args(),
                                   lambda pids: pids[:1], children=True)
    serve, ranks = pids[0], pids[1:]
    eq(sorted(s["meta"]["pids"]), sorted(pids), "traced processes")
    sec = section(s, serve)
    check_process(conf, sec, t[serve], "serve", 0)
    assert "py:tensorrt_llm.executor.result.DetokenizedGenerationResultBase._handle_response" \
        in lines_of(sec), "serve: no per-line report of the detokenization"
    for r, pid in enumerate(ranks):
        sec = section(s, pid)
        eq(sec["meta"]["rank"], r, "worker rank")
        check_process(conf, sec, t[pid], "rank %d" % r, ENGINE_STEPS - 1)
        for name, _ in conf_buckets(conf):
            if name != "cuda.sync" or os.path.exists(CUDART):
                eq(bucket(sec, name)["calls"] > 0, True, "rank %d %s has calls" % (r, name))
        check_cudart(sec, t[pid], "rank %d" % r)
        for sym in ("TorchSampler.sample_async", "ResourceManager.prepare_resources"):
            eq(len([f for f in sec["functions"] if f["symbol"] == sym and f["calls"]]), 2,
               "rank %d: both homes of %s ran" % (r, sym))
        assert "py:tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._executor_loop*" in \
            lines_of(sec), "rank %d: no per-line report of the loops" % r


def test_nccl_conf_pending_without_libnccl():
    """libnccl not loaded (yet): not an error, every probe is pending, to be
    attached when the library is dlopen'ed."""
    v = victim("victim_engine")
    try:
        out = dry_run(v.pid, os.path.join(TARGETS, "nccl.conf"))
    finally:
        v.kill()
    for p in all_probes(os.path.join(TARGETS, "nccl.conf"), "native:"):
        lines = dry_run_lines(out, p)
        assert lines and "pending" in lines[0], "%s not pending:\n%s" % (p, out)


def test_nccl_conf_resolves_in_libnccl():
    """Against a real libnccl every probe resolves (a mapped library without
    one of the symbols would be an error), also composed with an engine."""
    lib = nccl_lib()
    if not lib:
        raise Skip("no libnccl.so.2 (set PT_NCCL)")
    v = engine_victim("vllm", "--nccl", lib)
    try:
        out = dry_run(v.pid, os.path.join(TARGETS, "nccl.conf"))
    finally:
        v.kill()
    for p in all_probes(os.path.join(TARGETS, "nccl.conf"), "native:"):
        lines = dry_run_lines(out, p)
        sym = p.rsplit(":", 1)[1]
        assert lines and sym in lines[0] and "libnccl" in lines[0] and "pending" not in lines[0], \
            "%s not resolved in %s:\n%s" % (p, lib, out)


def test_vllm_and_nccl_composed():
    """cat vllm.conf nccl.conf: the fake engine's ncclGroupStart/End calls in
    every step land in comm.group, no other collective is seen."""
    lib = nccl_lib()
    if not lib:
        raise Skip("no libnccl.so.2 (set PT_NCCL)")
    with open(os.path.join(TARGETS, "nccl.conf")) as f:
        text = engine_conf("vllm") + f.read()
    s, t, pids, _ = profile_engine(("vllm", text), ["--steps", ENGINE_STEPS, "--nccl", lib],
                                   lambda pids: pids[1:2])
    core = pids[1]
    sec = section(s, core)
    eq(sec["stats"]["steps"], ENGINE_STEPS, "steps")
    steps = t[core].steps(*conf_step(os.path.join(TARGETS, "vllm.conf")))
    eq(bucket(sec, "comm.group")["calls"], 2 * t[core].hooks("comm", steps),
       "comm.group calls")
    for b in sec["buckets"]:
        if b["name"].startswith("comm.") and b["name"] != "comm.group":
            eq(b["calls"], 0, b["name"] + " calls")


def test_engine_configs_compose_with_cuda_and_nccl():
    """The recipes in the headers parse: engine + nccl.conf, and engine +
    cuda.conf without its cuda.sync line (the engine has that bucket)."""
    with open(os.path.join(TARGETS, "cuda.conf")) as f:
        cuda = "".join(ln for ln in f if not ln.startswith("bucket cuda.sync"))
    with open(os.path.join(TARGETS, "nccl.conf")) as f:
        nccl = f.read()
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    for name in ENGINES:
        v = engine_victim(ENGINES[name])
        try:
            for extra, tag in ((nccl, "nccl"), (cuda, "cuda")):
                path = os.path.join(tmp, "%s+%s.conf" % (name, tag))
                with open(path, "w") as f:
                    f.write(engine_conf(name) + extra)
                dry_run(v.pid, path)
        finally:
            v.kill()


def list_targets(env=None):
    p = subprocess.run([PROFTRACE, "--list-targets"], capture_output=True, timeout=30,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def test_list_targets():
    rc, out, err = list_targets()
    eq(rc, 0, "--list-targets (%s)" % err.strip())
    rows = [ln.split(None, 1) for ln in out.splitlines()]
    names = [os.path.basename(c)[:-len(".conf")] for c in bundled()]
    eq([r[0] for r in rows], sorted(names), "listed names")
    for r in rows:
        assert len(r) == 2 and r[1].strip() and r[1] != "(no description)", \
            "no description for %s" % r[0]
    for name in list(ENGINES) + ["nccl"]:
        desc = dict(rows)[name]
        with open(os.path.join(TARGETS, name + ".conf")) as f:
            first = f.readline()
        eq(first, "# %s.conf: %s\n" % (name, desc), name + " first line")
    # PROFTRACE_TARGETS_DIR overrides; a missing directory is an error
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    with open(os.path.join(tmp, "mine.conf"), "w") as f:
        f.write("# mine.conf: my engine\nstep native:exe:main\n")
    rc, out, _ = list_targets({"PROFTRACE_TARGETS_DIR": tmp})
    eq((rc, out), (0, "mine  my engine\n"), "listing of PROFTRACE_TARGETS_DIR")
    rc, out, err = list_targets({"PROFTRACE_TARGETS_DIR": os.path.join(tmp, "nope")})
    eq(rc, 1, "missing directory")
    assert "PROFTRACE_TARGETS_DIR" in err and not out, err


def test_targets_by_name():
    """--targets vllm is targets/vllm.conf, unless a file named vllm exists."""
    v = engine_victim("vllm")
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    try:
        rc, out, err = run_proftrace(["-p", str(v.pid), "--targets", "vllm", "--dry-run"])
        eq(rc, 0, "--targets vllm (%s)" % err.strip())
        for p in all_probes(os.path.join(TARGETS, "vllm.conf"), "py:"):
            assert dry_run_lines(out, p), "%s missing:\n%s" % (p, out)
        rc, out2, _ = run_proftrace(["-p", str(v.pid), "--targets", "vllm.conf", "--dry-run"])
        eq((rc, out2), (0, out), "--targets vllm.conf")
        # a file of that name in the working directory wins
        with open(os.path.join(tmp, "vllm"), "w") as f:
            f.write("step py:mine::main_loop\n")
        p = subprocess.run([PROFTRACE, "-p", str(v.pid), "--targets", "vllm", "--dry-run"],
                           capture_output=True, timeout=30, cwd=tmp)
        eq(p.returncode, 0, "local file vllm")
        assert "py:mine::main_loop" in p.stdout.decode(), p.stdout.decode()
        # no such file and no such bundled config: the loader's message
        rc, _, err = run_proftrace(["-p", str(v.pid), "--targets", "nosuchengine", "--dry-run"])
        eq(rc, 2, "--targets nosuchengine")
        assert "nosuchengine: cannot read targets file" in err, err
    finally:
        v.kill()


def test_cuda_fallback_counts():
    """targets/cuda.conf on the real libcudart: exact launch/copy/sync counts."""
    if not os.path.exists(CUDART):
        raise Skip("no CUDA runtime at %s (set PT_CUDART)" % CUDART)
    with open(os.path.join(ROOT, "targets", "cuda.conf")) as f:
        conf = "step native:exe:cuda_step\n" + f.read()
    s, t, _ = profile(conf, ["--steps", N], victim_name="victim_cuda",
                      victim_first_args=[CUDART])
    eq(s["stats"]["steps"], N, "steps")
    eq(t["launches"], 8 * N, "truth launches")
    eq(func(s, "cudaLaunchKernel")["calls"], 8 * N, "cudaLaunchKernel calls")
    eq(func(s, "cudaMemcpyAsync")["calls"], 2 * N, "cudaMemcpyAsync calls")
    eq(func(s, "cudaStreamSynchronize")["calls"], N, "cudaStreamSynchronize calls")
    eq(bucket(s, "cuda.launch")["calls"], 8 * N, "cuda.launch calls")
    eq(bucket(s, "cuda.copy")["calls"], 2 * N, "cuda.copy calls")
    eq(bucket(s, "cuda.sync")["calls"], N, "cuda.sync calls")
    within(s["stats"]["time_ms"], t["functions"]["cuda_step"], N, "step time")
    eq(s["health"]["dropped_events"], 0, "dropped")
    for f in s["functions"]:
        if f["symbol"] and f["symbol"].startswith("cuda"):
            eq(f["attached"], True, f["symbol"] + " attached")
