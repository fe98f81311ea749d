# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.disaggregation.prefill: the loops of a prefill server in
prefill/decode disaggregation (SchedulerDisaggregationPrefillMixin)."""


class SchedulerDisaggregationPrefillMixin:
    def event_loop_normal_disagg_prefill(self, batches):
        for _ in range(batches):
            self._turn(overlap=False)
