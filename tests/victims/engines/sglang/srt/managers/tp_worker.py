# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.managers.tp_worker: TpModelWorker.forward_batch_generation,
which Scheduler.run_batch calls: ForwardBatch.init_new, ModelRunner.forward,
ModelRunner.sample (python/sglang/srt/managers/tp_worker.py)."""
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from sglang.srt.model_executor.model_runner import ModelRunner


class TpModelWorker:
    def __init__(self):
        self.model_runner = ModelRunner()

    def forward_batch_generation(self, batch):
        forward_batch = ForwardBatch.init_new(batch, self.model_runner)
        logits_output = self.model_runner.forward(forward_batch)
        return self.model_runner.sample(logits_output, forward_batch)
