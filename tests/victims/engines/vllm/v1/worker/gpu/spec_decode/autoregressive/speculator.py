# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.worker.gpu.spec_decode.autoregressive.speculator: the
draft model loop of Model Runner V2 (EAGLE, MTP, draft models subclass it
and keep its propose)."""
from _fake import inside, spin, timed


class AutoRegressiveSpeculator:
    @timed
    def propose(self, input_batch):
        with inside():
            spin(300)
