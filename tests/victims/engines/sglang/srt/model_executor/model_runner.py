# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.model_executor.model_runner: ModelRunner.forward (the
model; a tensor-parallel all-reduce in it: hook("comm")) and
ModelRunner.sample (calls the Sampler module)."""
from _fake import hook, inside, spin, timed
from sglang.srt.layers.sampler import Sampler


class ModelRunner:
    def __init__(self):
        self.sampler = Sampler()

    @timed
    def forward(self, forward_batch):
        with inside():
            hook("comm")
            spin(700)
            return None

    @timed
    def sample(self, logits_output, forward_batch):
        with inside():
            return self.sampler.forward(logits_output, forward_batch)
