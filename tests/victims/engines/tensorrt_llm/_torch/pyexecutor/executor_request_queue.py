# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm._torch.pyexecutor.executor_request_queue:
ExecutorRequestQueue.fetch_new_requests."""
from _fake import inside, spin, timed


class ExecutorRequestQueue:
    @timed
    def fetch_new_requests(self):
        with inside():
            spin(200)
            return []
