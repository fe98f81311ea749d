# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.executor.uniproc_executor: one GPU, the worker in the
engine core process. With async scheduling the model runner's output is
fetched on the "WorkerAsyncOutput" thread, so the engine step waits on a
concurrent.futures Future (vllm/v1/executor/uniproc_executor.py)."""
from concurrent.futures import Future, ThreadPoolExecutor

from vllm.v1.worker.gpu_worker import Worker


class UniProcExecutor:
    pids = []

    def __init__(self):
        self.worker = Worker(0)
        self.async_output_thread = ThreadPoolExecutor(max_workers=1,
                                                      thread_name_prefix="WorkerAsyncOutput")

    def execute_model(self, scheduler_output, non_block=False):
        f = Future()
        f.set_result(self.worker.execute_model(scheduler_output))
        return f

    def sample_tokens(self, grammar_output, non_block=False):
        out = self.worker.sample_tokens(grammar_output)
        return self.async_output_thread.submit(out.get_output)

    def shutdown(self):
        self.async_output_thread.shutdown()
        return []
