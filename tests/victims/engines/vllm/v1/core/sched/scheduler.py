# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.core.sched.scheduler: Scheduler.schedule, update_from_output."""
from _fake import spin


class Scheduler:
    def schedule(self):
        spin(40)
        return {}

    def update_from_output(self, scheduler_output, model_runner_output):
        spin(20)
        return {}
