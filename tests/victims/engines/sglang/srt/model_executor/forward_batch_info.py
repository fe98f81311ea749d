# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.model_executor.forward_batch_info: ForwardBatch.init_new
(the scheduler's batch turned into the model's tensors), a classmethod."""
from _fake import inside, spin, timed


class ForwardBatch:
    @classmethod
    @timed
    def init_new(cls, batch, model_runner):
        with inside():
            spin(250)
            return cls()
