# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm.executor.worker: the worker process of one rank (an
MPI or Ray worker that trtllm-serve / the LLM API starts), which builds the
PyExecutor and runs its loop on a thread (GenerationExecutorWorker)."""
import os

import _fake
from tensorrt_llm._torch.pyexecutor.py_executor import PyExecutor
from tensorrt_llm._torch.pyexecutor.resource_manager.base import ResourceManager
from tensorrt_llm._torch.pyexecutor.sampler.sampler import TorchSampler


class GenerationExecutorWorker:
    def __init__(self, rank, iterations, parent, legacy):
        old_sampler, old_rm = legacy
        # both homes of TorchSampler and ResourceManager, as the config lists both
        self.engine = PyExecutor(rank, [TorchSampler(), old_sampler.TorchSampler()],
                                 [ResourceManager(), old_rm.ResourceManager()], iterations,
                                 lambda responses: parent.send({"out": responses}))


def worker_main(args, parent, legacy):
    worker = GenerationExecutorWorker(args.rank, args.steps, parent, legacy)
    parent.send({"ready": [os.getpid()]})
    parent.recv()  # go
    worker.engine.start_worker()
    worker.engine.worker_thread.join()
    parent.send({"truth": [_fake.truth("worker", args.rank)]})
