# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.managers.scheduler: the scheduler process of one
tensor-parallel rank ("sglang::scheduler_TP<n>"), which also runs the model.

Each turn of an event loop, as python/sglang/srt/managers/scheduler.py:
receive requests (request_receiver.recv_requests; Scheduler.recv_requests
before May 2026), process_input_requests, get_next_batch_to_run; with a
batch run_batch (TpModelWorker.forward_batch_generation) and
process_batch_result (with the overlap scheduler, that of the previous
batch, after launching this one; it waits for the GPU copy:
hook("sync")); without one on_idle (idle housekeeping and the sleep until
the next request). Rank 0 sends each result to the detokenizer process.
The loops run one after the other here, so that each has code to match:
event_loop_normal, event_loop_overlap, the pipeline-parallel and the
disaggregated prefill and decode loops of the mixins.
"""
import os

import _fake
from _fake import hook, inside, spin, timed
from sglang.srt.disaggregation.decode import SchedulerDisaggregationDecodeMixin
from sglang.srt.disaggregation.prefill import SchedulerDisaggregationPrefillMixin
from sglang.srt.managers.scheduler_components.request_receiver import (
    SchedulerRequestReceiver,
)
from sglang.srt.managers.scheduler_pp_mixin import SchedulerPPMixin
from sglang.srt.managers.tp_worker import TpModelWorker

IDLE_EVERY = 6  # every 6th turn finds no batch


class Scheduler(SchedulerDisaggregationDecodeMixin, SchedulerDisaggregationPrefillMixin,
                SchedulerPPMixin):
    def __init__(self, rank, parent):
        self.rank = rank
        self.parent = parent
        self.request_receiver = SchedulerRequestReceiver()
        self.model_worker = TpModelWorker()
        self.turns = 0
        self.last = None

    @timed
    def recv_requests(self):
        with inside():
            spin(200)
            return []

    @timed
    def process_input_requests(self, recv_reqs):
        with inside():
            spin(200)

    @timed
    def get_next_batch_to_run(self):
        with inside():
            spin(300)
            self.turns += 1
            return None if self.turns % IDLE_EVERY == 0 else {"turn": self.turns}

    @timed
    def run_batch(self, batch):
        with inside():
            return self.model_worker.forward_batch_generation(batch)

    @timed
    def process_batch_result(self, batch, result):
        with inside():
            hook("sync")
            spin(250)
            if self.rank == 0:
                self.parent.send({"out": batch["turn"]})

    @timed
    def on_idle(self):
        with inside():
            spin(1500)

    def _turn(self, overlap):
        """One turn with a batch (idle turns first, as they come)."""
        while True:
            recv_reqs = self.request_receiver.recv_requests() + self.recv_requests()
            self.process_input_requests(recv_reqs)
            batch = self.get_next_batch_to_run()
            if batch is not None:
                break
            self._drain()
            self.on_idle()
        result = self.run_batch(batch)
        if not overlap:
            self.process_batch_result(batch, result)
            return
        self._drain()
        self.last = (batch, result)

    def _drain(self):
        if self.last is not None:
            self.process_batch_result(*self.last)
            self.last = None

    def event_loop_normal(self, batches):
        for _ in range(batches):
            self._turn(overlap=False)

    def event_loop_overlap(self, batches):
        for _ in range(batches):
            self._turn(overlap=True)
        self._drain()


def run_scheduler_process(args, parent):
    scheduler = Scheduler(args.rank, parent)
    parent.send({"ready": [os.getpid()]})
    parent.recv()  # go
    each = args.steps // 5
    scheduler.event_loop_normal(args.steps - 4 * each)
    scheduler.event_loop_overlap(each)
    scheduler.event_loop_pp(each)
    scheduler.event_loop_normal_disagg_prefill(each)
    scheduler.event_loop_overlap_disagg_decode(each)
    parent.send({"truth": [_fake.truth("scheduler", args.rank)]})
