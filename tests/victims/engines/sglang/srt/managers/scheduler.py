# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.managers.scheduler: the Scheduler event loops.

event_loop_normal: recv -> process input -> get_next_batch_to_run ->
run_batch -> process_batch_result; event_loop_overlap processes the
result of the previous batch after launching the next, as SGLang does.
"""
from _fake import hook, spin
from sglang.srt.managers.scheduler_components.request_receiver import (
    SchedulerRequestReceiver,
)
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from sglang.srt.model_executor.model_runner import ModelRunner


class Scheduler:
    def __init__(self, batches):
        self.request_receiver = SchedulerRequestReceiver()
        self.model_runner = ModelRunner()
        self.remaining = batches

    def recv_requests(self):
        spin(5)
        return []

    def process_input_requests(self, recv_reqs):
        spin(10)

    def _recv(self):
        reqs = self.request_receiver.recv_requests() + self.recv_requests()
        self.process_input_requests(reqs)

    def get_next_batch_to_run(self):
        spin(30)
        self.remaining -= 1
        return {}

    def run_batch(self, batch):
        fb = ForwardBatch.init_new(batch, self.model_runner)
        logits = self.model_runner.forward(fb)
        return self.model_runner.sample(logits, fb)

    def process_batch_result(self, batch, result):
        hook("sync")
        spin(20)

    def event_loop_normal(self, batches):
        for _ in range(batches):
            self._recv()
            batch = self.get_next_batch_to_run()
            result = self.run_batch(batch)
            self.process_batch_result(batch, result)

    def event_loop_overlap(self, batches):
        last = None
        for _ in range(batches):
            self._recv()
            batch = self.get_next_batch_to_run()
            result = self.run_batch(batch)
            if last is not None:
                self.process_batch_result(*last)
            last = (batch, result)
        self.process_batch_result(*last)
