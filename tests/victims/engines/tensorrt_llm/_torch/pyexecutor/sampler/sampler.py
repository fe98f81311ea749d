# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm._torch.pyexecutor.sampler.sampler (2026 package layout)."""
from _fake import inside, spin, timed


class TorchSampler:
    @timed
    def sample_async(self, scheduled_requests, model_outputs):
        with inside():
            spin(250)
            return {}

    @timed
    def update_requests(self, state):
        with inside():
            spin(250)
