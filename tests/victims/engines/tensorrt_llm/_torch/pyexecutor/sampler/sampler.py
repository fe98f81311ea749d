# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm._torch.pyexecutor.sampler.sampler (2026 package layout)."""
from _fake import spin


class TorchSampler:
    def sample_async(self, scheduled_requests, model_outputs):
        spin(10)
        return {}

    def update_requests(self, state):
        spin(10)
