# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.managers.scheduler_pp_mixin: SchedulerPPMixin.event_loop_pp,
the pipeline-parallel loop (a turn per micro-batch; run_batch as usual)."""


class SchedulerPPMixin:
    def event_loop_pp(self, batches):
        for _ in range(batches):
            self._turn(overlap=False)
