# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.sample.sampler: Sampler.forward (an nn.Module in vLLM)."""
from _fake import spin


class Sampler:
    def forward(self, logits, sampling_metadata):
        spin(10)
