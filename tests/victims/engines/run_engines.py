# SPDX-License-Identifier: BSD-2-Clause
"""Run one fake LLM engine (vllm, sglang or trtllm) for tests/integration.

The packages next to this file reproduce only the module paths, classes and
methods that targets/vllm.conf, sglang.conf and trtllm.conf name (as checked
against the engines' sources, see the headers of those files), calling each
other the way the real engine loops do, so every py: probe of those configs
has code to match in a live interpreter. Standard library only; CPython 3.8+.

usage: run_engines.py ENGINE [--truth FILE] [--steps N] [--cudart LIB] [--nccl LIB]

Protocol, as the other victims: print "ready <pid>", wait for one line on
stdin, run the engine loop, write the truth file, exit 0 (3 on stdin EOF).
Truth: {"engine", "python", "loop_calls" (calls of the step function),
"steps" (complete steps proftrace must count), "sync", "comm" (hook calls)}.
"""
import argparse
import importlib.util
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _fake  # noqa: E402


def load_path(name, rel):
    """Import a file under its own path: the legacy single-module layouts
    live beside a package of the same name, which would shadow them."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # registered as an import would be (under a name of its own): a module
    # nobody registers is not one the Python agent can find
    sys.modules["legacy." + name] = mod
    return mod


def run_vllm(n):
    from vllm.v1.engine.core import DPEngineCoreProc

    DPEngineCoreProc(n).run_busy_loop()
    return n, n  # mode=call: every step call is a step


def run_sglang(n):
    from sglang.srt.managers.scheduler import Scheduler

    s = Scheduler(n)
    s.event_loop_normal(n // 2)
    s.event_loop_overlap(n - n // 2)
    return n, n - 1  # mode=iteration: the last one never closes


def run_trtllm(n):
    from tensorrt_llm._torch.pyexecutor.py_executor import PyExecutor
    from tensorrt_llm._torch.pyexecutor.resource_manager.base import ResourceManager
    from tensorrt_llm._torch.pyexecutor.sampler.sampler import TorchSampler

    old_sampler, old_rm = LEGACY["sampler"], LEGACY["resource_manager"]
    ex = PyExecutor([TorchSampler(), old_sampler.TorchSampler()],
                    [ResourceManager(), old_rm.ResourceManager()])
    a = n // 3
    ex._executor_loop(a)
    ex._executor_loop_overlap(a)
    ex._executor_loop_pp(n - 2 * a)
    return n, n - 1


ENGINES = {"vllm": run_vllm, "sglang": run_sglang, "trtllm": run_trtllm}

# Modules loaded by hand, outside the import system, are loaded before
# proftrace attaches: an agent finds them then (a later import is seen as
# it happens; a file exec'ed by hand is found at the agent's next walk).
LEGACY = {}


def load_legacy(engine):
    if engine == "trtllm":
        legacy = "legacy/tensorrt_llm/_torch/pyexecutor/"
        LEGACY["sampler"] = load_path("legacy_sampler", legacy + "sampler.py")
        LEGACY["resource_manager"] = load_path("legacy_resource_manager",
                                               legacy + "resource_manager.py")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine", choices=sorted(ENGINES))
    ap.add_argument("--truth")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--cudart")
    ap.add_argument("--nccl")
    args = ap.parse_args()
    _fake.load(args.cudart, args.nccl)
    load_legacy(args.engine)
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        return 3
    loop_calls, steps = ENGINES[args.engine](args.steps)
    if args.truth:
        with open(args.truth, "w") as f:
            json.dump({"engine": args.engine, "python": sys.version.split()[0],
                       "loop_calls": loop_calls, "steps": steps,
                       "sync": _fake.calls["sync"], "comm": _fake.calls["comm"]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
