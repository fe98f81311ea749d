# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.worker.gpu_model_runner (the V1 model runner): execute_model
(_update_states, _prepare_inputs, the model), sample_tokens (Sampler.forward,
then propose_draft_token_ids for speculative decoding)."""
from _fake import inside, spin, timed
from vllm.v1.sample.sampler import Sampler
from vllm.v1.worker.gpu.async_utils import AsyncOutput


class GPUModelRunner:
    def __init__(self):
        self.sampler = Sampler()

    @timed
    def execute_model(self, scheduler_output):
        with inside():
            self._update_states(scheduler_output)
            self._prepare_inputs(scheduler_output)
            spin(600)
            return None

    @timed
    def _update_states(self, scheduler_output):
        with inside():
            spin(200)

    @timed
    def _prepare_inputs(self, scheduler_output):
        with inside():
            spin(250)

    @timed
    def sample_tokens(self, grammar_output):
        with inside():
            self.sampler.forward(None, None)
            self.propose_draft_token_ids(None)
            return AsyncOutput()

    @timed
    def propose_draft_token_ids(self, scheduler_output):
        with inside():
            spin(300)
