# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.disaggregation.decode: the loops of a decode server in
prefill/decode disaggregation (SchedulerDisaggregationDecodeMixin)."""


class SchedulerDisaggregationDecodeMixin:
    def event_loop_overlap_disagg_decode(self, batches):
        for _ in range(batches):
            self._turn(overlap=True)
        self._drain()
