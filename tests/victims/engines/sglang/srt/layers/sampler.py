# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.layers.sampler: Sampler.forward (an nn.Module in SGLang)."""
from _fake import spin


class Sampler:
    def forward(self, logits_output, sampling_info):
        spin(10)
