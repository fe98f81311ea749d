# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.worker.gpu.model_runner (Model Runner V2)."""
from _fake import hook, spin


class GPUModelRunner:
    def execute_model(self, scheduler_output):
        self.add_requests(scheduler_output)
        self.update_requests(scheduler_output)
        batch = self.prepare_inputs(scheduler_output)
        self.prepare_attn(batch)
        hook("comm")
        spin(60)

    def add_requests(self, scheduler_output):
        spin(5)

    def update_requests(self, scheduler_output):
        spin(5)

    def prepare_inputs(self, scheduler_output):
        spin(10)
        return {}

    def prepare_attn(self, input_batch):
        spin(5)

    def sample_tokens(self, grammar_output):
        return self.sample()

    def sample(self):
        spin(10)
