# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm._torch.pyexecutor.py_executor: PyExecutor loops.

Each iteration starts with _prepare_and_schedule_batch (which fetches
new requests, then schedules), as in TensorRT-LLM; _executor_loop_overlap
finishes the previous batch after launching the next.
"""
from _fake import hook, spin
from tensorrt_llm._torch.pyexecutor.executor_request_queue import ExecutorRequestQueue


class PyExecutor:
    def __init__(self, samplers, resource_managers):
        self.samplers = samplers
        self.resource_managers = resource_managers
        self.executor_request_queue = ExecutorRequestQueue()

    def _fetch_and_activate_new_requests(self):
        return self.executor_request_queue.fetch_new_requests()

    def _schedule(self):
        spin(30)
        return {}

    def _prepare_and_schedule_batch(self):
        self._fetch_and_activate_new_requests()
        return self._schedule()

    def _forward_step(self, scheduled_batch):
        hook("comm")
        spin(60)
        return {}

    def _sample_async(self, scheduled_batch, batch_outputs):
        return [s.sample_async(scheduled_batch, batch_outputs) for s in self.samplers]

    def _update_request_states(self, scheduled_batch):
        spin(5)

    def _update_requests(self, sample_state):
        hook("sync")
        for s in self.samplers:
            s.update_requests(sample_state)

    def _handle_canceled_requests(self):
        spin(5)

    def _enqueue_responses(self, responses):
        spin(5)

    def _handle_responses(self):
        self._enqueue_responses([])
        return []

    def _launch(self):
        batch = self._prepare_and_schedule_batch()
        for rm in self.resource_managers:
            rm.prepare_resources(batch)
        out = self._forward_step(batch)
        state = self._sample_async(batch, out)
        self._update_request_states(batch)
        return batch, state

    def _finish(self, batch, state):
        self._update_requests(state)
        self._handle_canceled_requests()
        self._handle_responses()
        for rm in self.resource_managers:
            rm.update_resources(batch)

    def _executor_loop(self, iterations):
        for _ in range(iterations):
            self._finish(*self._launch())

    def _executor_loop_overlap(self, iterations):
        previous = None
        for _ in range(iterations):
            current = self._launch()
            if previous is not None:
                self._finish(*previous)
            previous = current
        self._finish(*previous)

    def _executor_loop_pp(self, iterations):
        self._executor_loop(iterations)
