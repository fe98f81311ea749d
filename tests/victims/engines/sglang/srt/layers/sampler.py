# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.layers.sampler: Sampler.forward (an nn.Module in SGLang)."""
from _fake import inside, spin, timed


class Sampler:
    @timed
    def forward(self, logits_output, sampling_info):
        with inside():
            spin(250)
