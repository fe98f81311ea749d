# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.worker.gpu.model_runner (Model Runner V2): execute_model
prepares the batch and runs the model, sample_tokens samples and runs the
speculator's propose (the draft for the next step) and hands back an
AsyncOutput whose get_output waits for the GPU on the output thread."""
from _fake import hook, inside, spin, timed
from vllm.v1.worker.gpu.async_utils import AsyncOutput
from vllm.v1.worker.gpu.spec_decode.eagle.speculator import EagleSpeculator


class GPUModelRunner:
    def __init__(self):
        self.speculator = EagleSpeculator()

    @timed
    def execute_model(self, scheduler_output):
        with inside():
            self.add_requests(scheduler_output)
            self.update_requests(scheduler_output)
            batch = self.prepare_inputs(scheduler_output)
            self.prepare_attn(batch)
            hook("comm")
            spin(600)
            return None  # sampling follows in sample_tokens

    @timed
    def add_requests(self, scheduler_output):
        with inside():
            spin(200)

    @timed
    def update_requests(self, scheduler_output):
        with inside():
            spin(200)

    @timed
    def prepare_inputs(self, scheduler_output):
        with inside():
            spin(250)
            return {}

    @timed
    def prepare_attn(self, input_batch):
        with inside():
            spin(200)

    @timed
    def sample_tokens(self, grammar_output):
        with inside():
            self.sample()
            self.speculator.propose(None)
            return AsyncOutput()

    @timed
    def sample(self):
        with inside():
            spin(250)
