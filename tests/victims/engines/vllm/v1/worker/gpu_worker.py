# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.worker.gpu_worker: Worker.execute_model and
Worker.sample_tokens, the two RPCs an engine step makes of every worker
(vllm/v1/worker/gpu_worker.py). In the engine core process with one GPU
(UniProcExecutor), in a worker process per rank otherwise. Both model
runners run here, as targets/vllm.conf lists both."""
from _fake import inside, spin, timed
from vllm.v1.worker.gpu.model_runner import GPUModelRunner as RunnerV2
from vllm.v1.worker.gpu_model_runner import GPUModelRunner as RunnerV1


class Worker:
    def __init__(self, rank=0):
        self.rank = rank
        self.runners = (RunnerV2(), RunnerV1())

    @timed
    def execute_model(self, scheduler_output):
        with inside():
            for r in self.runners:
                r.execute_model(scheduler_output)
            return None

    @timed
    def sample_tokens(self, grammar_output):
        with inside():
            outs = [r.sample_tokens(grammar_output) for r in self.runners]
            spin(10)
            return outs[0]
