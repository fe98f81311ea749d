# SPDX-License-Identifier: BSD-2-Clause
"""The bundled configs in targets/: each parses, and each works on a real process.

The engine configs (vllm, sglang, trtllm) are run against fake engines
(tests/victims/engines/): packages that reproduce only the module paths,
classes and methods the configs name, checked against the engines' sources
(see each config's header), calling each other as the real loops do. A
config whose py: probe no longer matches its fake module, or a fake module
renamed without its config, fails here. nccl.conf and the cuda.sync
buckets are checked against the real libnccl / libcudart where installed.
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys
import tempfile

from harness import (PROFTRACE, ROOT, Skip, bucket, eq, func, profile, run_proftrace, victim,
                     with_agent, within)

CUDART = os.environ.get("PT_CUDART", "/usr/local/cuda/lib64/libcudart.so.13")
N = 100
TARGETS = os.path.join(ROOT, "targets")
RUNNER = os.path.join(ROOT, "tests", "victims", "engines", "run_engines.py")
ENGINES = ("vllm", "sglang", "trtllm")
ENGINE_STEPS = 60
PYENV = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def bundled():
    confs = sorted(glob.glob(os.path.join(TARGETS, "*.conf")))
    assert confs, "no bundled configs"
    return confs


def conf_probes(path):
    """{keyword: [probe text, ...]} of a targets file (step, bucket, lines)."""
    out = {"step": [], "bucket": [], "lines": []}
    with open(path) as f:
        for line in f:
            toks = line.split("#", 1)[0].split()
            if toks and toks[0] in out:
                out[toks[0]] += [t for t in toks[1:] if t.startswith(("py:", "native:"))]
    return out


def all_probes(path, kind):
    seen = []
    for probes in conf_probes(path).values():
        seen += [p for p in probes if p.startswith(kind) and p not in seen]
    return seen


def py_matches(probe, row):
    """Does a functions[] row of summary.json come from this py: probe?
    The same rule as docs/targets.md: the file ends in the module path, the
    qualified name matches Class.method (or is the function of `::`)."""
    spec = probe[len("py:"):]
    if "::" in spec:
        module, glob_ = spec.split("::", 1)
    else:
        parts = spec.split(".")
        module, glob_ = ".".join(parts[:-2]), ".".join(parts[-2:])
    rel = module.replace(".", "/")
    obj = row.get("object") or ""
    if not (obj.endswith("/" + rel + ".py") or obj.endswith("/" + rel + "/__init__.py")):
        return False
    return fnmatch.fnmatchcase(row["symbol"] or "", glob_)


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


def exact_python():
    """A CPython whose py: steps and buckets are exact: 3.12+ with the perf
    trampoline, else 3.10 (docs/targets.md). (python, extra environment)."""
    for minor, env in ((12, {"PYTHONPERFSUPPORT": "1"}), (13, {"PYTHONPERFSUPPORT": "1"}),
                       (10, {})):
        hits = sorted(glob.glob(os.path.join(PYENV, "versions", "3.%d.*" % minor, "bin",
                                             "python3")))
        if hits:
            return hits[-1], env
    raise Skip("no pyenv CPython 3.12, 3.13 or 3.10 under %s (exact Python timing)" % PYENV)


def engine_victim(engine, python=None, *args, env=None):
    return victim([python or sys.executable, RUNNER, engine], *args, env=env)


def dry_run(pid, conf):
    rc, out, err = run_proftrace(["-p", str(pid), "--targets", conf, "--dry-run"])
    eq(rc, 0, "%s --dry-run (%s)" % (os.path.basename(conf), err.strip()))
    return out


def dry_run_lines(out, probe):
    return [ln for ln in out.splitlines() if ln.split(" ", 1)[0] == probe]


def test_every_bundled_config_dry_runs():
    """Every targets/*.conf parses and resolves: the engine configs against
    a Python process running their fake engine (py: probes need an
    interpreter), demo.conf against the demo engine, the native ones
    against victim_engine."""
    for conf in bundled():
        name = os.path.basename(conf)[:-len(".conf")]
        if name in ENGINES:
            v = engine_victim(name)
        elif name == "demo":
            v = victim([sys.executable, os.path.join(ROOT, "tests", "victims", "demo_engine.py"),
                        "--hold"])
        else:
            v = victim("victim_engine")
        try:
            out = dry_run(v.pid, conf)
        finally:
            v.kill()
        for p in all_probes(conf, "py:"):
            lines = dry_run_lines(out, p)
            assert lines and "matched by code object as it runs" in lines[0], \
                "%s: %s not listed for the interpreter:\n%s" % (name, p, out)


def test_engine_configs_have_a_step_buckets_and_lines():
    for name in ENGINES:
        conf = os.path.join(TARGETS, name + ".conf")
        p = conf_probes(conf)
        eq(len(p["step"]), 1, name + " step probes")
        assert p["step"][0].startswith("py:"), p["step"]
        assert p["lines"], name + ": no lines line"
        with open(conf) as f:
            text = f.read()
        for b in ("engine.schedule", "engine.forward", "engine.sample", "engine.postproc",
                  "cuda.sync"):
            assert re.search(r"^bucket\s+%s\s" % re.escape(b), text, re.M), (name, b)


def check_engine(name, s, t):
    conf = os.path.join(TARGETS, name + ".conf")
    eq(s["meta"]["python"]["timing"], "exact", name + " python timing")
    eq(s["stats"]["steps"], t["steps"], name + " steps")
    eq(s["health"]["dropped_events"], 0, name + " dropped")
    rows = [f for f in s["functions"] if f.get("kind") == "python"]
    for p in all_probes(conf, "py:"):
        hit = [f for f in rows if py_matches(p, f)]
        assert hit, "%s: %s matched no code of the fake engine; rows: %s" % (
            name, p, sorted((f["object"] or "", f["symbol"] or "") for f in rows if f["object"]))
        assert all(f["calls"] and f["calls"] > 0 for f in hit), (name, p, hit)
        assert all(f["timing"] == "exact" for f in hit), (name, p, hit)
    for b in s["buckets"]:
        if b["name"].startswith("engine."):
            assert b["calls"] > 0, "%s: bucket %s saw no call inside steps" % (name, b["name"])
    lines = {x["probe"] for x in s.get("lines", [])}
    for p in conf_probes(conf)["lines"]:
        assert p in lines, "%s: no per-line report for %s (got %s)" % (name, p, sorted(lines))


def run_engine(name, conf_text, nccl=None):
    python, env = exact_python()
    args = ["--steps", ENGINE_STEPS]
    if os.path.exists(CUDART):
        args += ["--cudart", CUDART]
    if nccl:
        args += ["--nccl", nccl]
    venv = dict(os.environ)
    venv.pop("PYTHONPERFSUPPORT", None)
    venv.update(env)
    # started as a server would be after `eval "$(proftrace env)"`
    return profile(conf_text, victim_args=args, victim_name=[python, RUNNER],
                   victim_first_args=[name], victim_env=with_agent(venv))


def engine_conf(name):
    with open(os.path.join(TARGETS, name + ".conf")) as f:
        return f.read()


def test_vllm_conf_on_fake_engine():
    s, t, _ = run_engine("vllm", engine_conf("vllm"))
    check_engine("vllm", s, t)
    # mode=call: each EngineCore.step / step_with_batch_queue call is a step
    eq(func(s, "EngineCore.step")["calls"] + func(s, "EngineCore.step_with_batch_queue")["calls"],
       t["loop_calls"], "step calls")
    if t["sync"]:
        eq(bucket(s, "cuda.sync")["calls"], t["sync"], "cuda.sync calls in steps")


def test_sglang_conf_on_fake_engine():
    s, t, _ = run_engine("sglang", engine_conf("sglang"))
    check_engine("sglang", s, t)
    eq(func(s, "Scheduler.run_batch")["calls"], t["loop_calls"], "run_batch calls")
    eq(s["stats"]["incomplete_steps"], 1, "the last iteration never closes")


def test_trtllm_conf_on_fake_engine():
    s, t, _ = run_engine("trtllm", engine_conf("trtllm"))
    check_engine("trtllm", s, t)
    eq(func(s, "PyExecutor._prepare_and_schedule_batch")["calls"], t["loop_calls"],
       "iterations")
    # both homes of TorchSampler / ResourceManager (module and package) ran
    for sym in ("TorchSampler.sample_async", "ResourceManager.prepare_resources"):
        eq(len([f for f in s["functions"] if f["symbol"] == sym and f["calls"]]), 2, sym)


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
    v = engine_victim("vllm", None, "--nccl", lib)
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
        s, t, _ = run_engine("vllm", engine_conf("vllm") + f.read(), nccl=lib)
    check_engine("vllm", s, t)
    eq(bucket(s, "comm.group")["calls"], 2 * t["comm"], "comm.group calls")
    for b in s["buckets"]:
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
        v = engine_victim(name)
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
    for name in ENGINES + ("nccl",):
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
