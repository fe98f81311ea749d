# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.worker.gpu_model_runner (the V1 model runner)."""
from _fake import spin
from vllm.v1.sample.sampler import Sampler


class GPUModelRunner:
    def __init__(self):
        self.sampler = Sampler()

    def execute_model(self, scheduler_output):
        self._update_states(scheduler_output)
        self._prepare_inputs(scheduler_output)
        spin(60)

    def _update_states(self, scheduler_output):
        spin(5)

    def _prepare_inputs(self, scheduler_output):
        spin(10)

    def sample_tokens(self, grammar_output):
        return self.sampler.forward(None, None)
