# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.worker.gpu.async_utils: AsyncOutput.get_output runs on the
executor's output thread ("WorkerAsyncOutput") and waits there for the GPU
(an event synchronize: hook("sync")), so that with async scheduling the
step thread does not; it waits for this thread's result instead."""
from _fake import hook, spin


class AsyncOutput:
    def get_output(self):
        spin(500)  # the GPU still running the step
        hook("sync")
        return {"sampled": 1}
