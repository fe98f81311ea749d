# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm._torch.pyexecutor.executor_request_queue."""
from _fake import spin


class ExecutorRequestQueue:
    def fetch_new_requests(self):
        spin(10)
        return []
