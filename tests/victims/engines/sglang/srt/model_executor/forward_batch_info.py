# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.model_executor.forward_batch_info: ForwardBatch.init_new."""
from _fake import spin


class ForwardBatch:
    @classmethod
    def init_new(cls, batch, model_runner):
        spin(10)
        return cls()
