# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.managers.scheduler_components.request_receiver."""
from _fake import spin


class SchedulerRequestReceiver:
    def recv_requests(self):
        spin(5)
        return []
