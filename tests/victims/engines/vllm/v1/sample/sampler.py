# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.sample.sampler: Sampler.forward (an nn.Module in vLLM)."""
from _fake import inside, spin, timed


class Sampler:
    @timed
    def forward(self, logits, sampling_metadata):
        with inside():
            spin(250)
