# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.model_executor.model_runner: ModelRunner.forward, sample."""
from _fake import hook, spin
from sglang.srt.layers.sampler import Sampler


class ModelRunner:
    def __init__(self):
        self.sampler = Sampler()

    def forward(self, forward_batch):
        hook("comm")
        spin(60)
        return None

    def sample(self, logits_output, forward_batch):
        return self.sampler.forward(logits_output, forward_batch)
