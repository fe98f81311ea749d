# SPDX-License-Identifier: BSD-2-Clause
"""Run one fake LLM engine (vllm, sglang or trtllm) for tests/integration.

The packages next to this file reproduce the module paths, classes,
methods and processes of the engines that targets/vllm.conf,
vllm-worker.conf, sglang.conf and trtllm.conf name (as read in the engines'
sources, see the headers of those files), calling each other the way the
real engine loops do, in the processes the real engines use:

  vllm    API server (this process: OutputProcessor.process_outputs, the
          detokenizer) -> engine core (EngineCoreProc.run_busy_loop; the
          model runs here with --tp 1) -> with --tp N, N worker processes
          (WorkerProc.worker_busy_loop -> Worker.execute_model ...)
  sglang  launcher (this process) -> one scheduler process per TP rank
          (Scheduler.event_loop_*, which also runs the model) and the
          detokenizer process (DetokenizerManager.event_loop)
  trtllm  proxy (this process: the LLM API, where results are detokenized)
          -> one worker process per rank, whose PyExecutor loop runs on a
          thread of its own

Every function a config names records its own calls (_fake.timed); each
process writes them, and this process gathers them into the truth file.
Standard library only; CPython 3.8+.

usage: run_engines.py ENGINE [--truth FILE] [--steps N] [--tp N]
                      [--cudart LIB] [--nccl LIB]

Protocol, as the other victims: print "pids PID..." (every process of the
engine, this one first), then "ready <pid>"; wait for one line on stdin,
run, write the truth file, exit 0 (3 on stdin EOF). Truth:
{"engine", "steps", "tp", "go_ns" (CLOCK_MONOTONIC when told to go: a call
begun before, such as a worker already waiting for its first RPC, began
before proftrace attached), "processes": [{"pid", "role", "rank",
"python", "calls", "hooks", ...}]}.
"""
import argparse
import importlib.util
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _fake  # noqa: E402


def load_path(name, rel):
    """Import a file under its own path: the legacy single-module layouts
    live beside a package of the same name, which would shadow them. The
    module keeps its real dotted name (the truth is recorded under it) and
    is registered under a name of its own (a module nobody registers is not
    one the Python agent can find)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules["legacy." + name] = mod
    return mod


def child_args(args):
    out = [args.engine, "--steps", str(args.steps), "--tp", str(args.tp)]
    return out + args.libs


# --- vllm --------------------------------------------------------------------

def vllm_main(args):
    from vllm.v1.engine.output_processor import OutputProcessor

    core = _fake.Child("core", child_args(args))
    processor = OutputProcessor()

    def run():
        core.send({"go": 1})
        while True:
            msg = core.recv()
            if "truth" in msg:
                break
            processor.process_outputs(msg["out"])
        core.p.wait()
        return msg["truth"]
    return core.pids, run


def vllm_role(args, parent):
    if args.role == "core":
        from vllm.v1.engine.core import engine_core_main
        engine_core_main(args, parent)
    elif args.role == "worker":
        from vllm.v1.executor.multiproc_executor import worker_main
        worker_main(args, parent)


# --- sglang ------------------------------------------------------------------

def sglang_main(args):
    scheds = [_fake.Child("scheduler", child_args(args) + ["--rank", str(r)])
              for r in range(args.tp)]
    detok = _fake.Child("detokenizer", child_args(args))

    def run():
        for c in scheds:
            c.send({"go": 1})
        while True:  # rank 0's results, on to the detokenizer
            msg = scheds[0].recv()
            if "truth" in msg:
                break
            detok.send(msg)
        truths = msg["truth"]
        scheds[0].p.wait()
        detok.send({"stop": 1})
        truths += detok.wait()
        for c in scheds[1:]:
            truths += c.wait()
        return truths
    return [p for c in scheds + [detok] for p in c.pids], run


def sglang_role(args, parent):
    if args.role == "scheduler":
        from sglang.srt.managers.scheduler import run_scheduler_process
        run_scheduler_process(args, parent)
    elif args.role == "detokenizer":
        from sglang.srt.managers.detokenizer_manager import run_detokenizer_process
        run_detokenizer_process(args, parent)


# --- trtllm ------------------------------------------------------------------

def trtllm_main(args):
    from tensorrt_llm.executor.result import DetokenizedGenerationResultBase

    workers = [_fake.Child("worker", child_args(args) + ["--rank", str(r)],
                           env={"RANK": str(r), "LOCAL_RANK": str(r)})
               for r in range(args.tp)]
    result = DetokenizedGenerationResultBase()

    def run():
        for c in workers:
            c.send({"go": 1})
        while True:  # rank 0's responses, detokenized here
            msg = workers[0].recv()
            if "truth" in msg:
                break
            result._handle_response(msg["out"])
        truths = msg["truth"]
        workers[0].p.wait()
        for c in workers[1:]:
            truths += c.wait()
        return truths
    return [p for c in workers for p in c.pids], run


def trtllm_role(args, parent):
    # the single-module layouts of sampler and resource_manager, under
    # their own dotted names, beside the packages that replaced them
    legacy = "legacy/tensorrt_llm/_torch/pyexecutor/"
    old_sampler = load_path("tensorrt_llm._torch.pyexecutor.sampler", legacy + "sampler.py")
    old_rm = load_path("tensorrt_llm._torch.pyexecutor.resource_manager",
                       legacy + "resource_manager.py")
    from tensorrt_llm.executor.worker import worker_main
    worker_main(args, parent, (old_sampler, old_rm))


ENGINES = {"vllm": (vllm_main, vllm_role), "sglang": (sglang_main, sglang_role),
           "trtllm": (trtllm_main, trtllm_role)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine", choices=sorted(ENGINES))
    ap.add_argument("--truth")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--cudart")
    ap.add_argument("--nccl")
    ap.add_argument("--role")
    ap.add_argument("--rank", type=int, default=0)
    args = ap.parse_args()
    args.libs = []
    for opt in ("cudart", "nccl"):
        if getattr(args, opt):
            args.libs += ["--" + opt, getattr(args, opt)]
    _fake.load(args.cudart, args.nccl)
    start, role = ENGINES[args.engine]
    if args.role:
        role(args, _fake.Parent())
        return 0
    pids, run = start(args)
    print("pids %s" % " ".join(str(p) for p in [os.getpid()] + pids), flush=True)
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        return 3
    go_ns = time.monotonic_ns()  # calls begun before (blocked, waiting) were not seen
    children = run()
    if args.truth:
        with open(args.truth, "w") as f:
            json.dump({"engine": args.engine, "steps": args.steps, "tp": args.tp, "go_ns": go_ns,
                       "processes": [_fake.truth("main")] + children}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
