# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.managers.scheduler_components.request_receiver:
SchedulerRequestReceiver.recv_requests (moved out of Scheduler in 2026)."""
from _fake import inside, spin, timed


class SchedulerRequestReceiver:
    @timed
    def recv_requests(self):
        with inside():
            spin(200)
            return []
