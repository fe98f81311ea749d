# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm._torch.pyexecutor.py_executor: the PyExecutor loops, on
a thread of the rank's worker process (start_worker -> _event_loop_wrapper).

As tensorrt_llm/_torch/pyexecutor/py_executor.py: every iteration starts
with _fetch_and_activate_new_requests (which waits for requests when the
executor is idle: _fetch_and_enqueue_requests), called by
_prepare_and_schedule_batch in _executor_loop and _executor_loop_overlap
and directly, before _schedule, in _executor_loop_pp; then the KV cache
and slots are allocated (ResourceManager.prepare_resources), the model
runs (_forward_step), sampling is launched (_sample_async), and the batch
is finished (_update_requests, responses, update_resources): with the
overlap scheduler, that of the previous batch, after launching this one.
The loops run one after the other here, so that each has code to match.
Rank 0 sends the responses to the proxy process.
"""
import threading

from _fake import hook, inside, spin, timed
from tensorrt_llm._torch.pyexecutor.executor_request_queue import ExecutorRequestQueue

IDLE_EVERY = 6  # every 6th iteration waits for requests


class PyExecutor:
    def __init__(self, rank, samplers, resource_managers, iterations, respond):
        self.rank = rank
        self.samplers = samplers
        self.resource_managers = resource_managers
        self.executor_request_queue = ExecutorRequestQueue()
        self.iterations = iterations
        self.respond = respond
        self.n = 0

    # -- the worker thread --
    def start_worker(self):
        self.worker_thread = threading.Thread(target=self._event_loop_wrapper,
                                              name="PyExecutor")
        self.worker_thread.start()

    def _event_loop_wrapper(self):
        n = self.iterations
        a = n // 3
        self._executor_loop(n - 2 * a)
        self._executor_loop_overlap(a)
        self._executor_loop_pp(a)

    # -- one iteration's parts --
    @timed
    def _fetch_and_enqueue_requests(self):
        with inside():
            self.n += 1
            if self.n % IDLE_EVERY == 0:
                spin(1500)  # idle: blocks until a request arrives
            self.executor_request_queue.fetch_new_requests()

    @timed
    def _fetch_and_activate_new_requests(self):
        with inside():
            self._fetch_and_enqueue_requests()
            spin(200)
            return []

    @timed
    def _schedule(self):
        with inside():
            spin(300)
            return {"iter": self.n}

    @timed
    def _prepare_and_schedule_batch(self):
        with inside():
            self._fetch_and_activate_new_requests()
            return self._schedule()

    @timed
    def _forward_step(self, scheduled_batch):
        with inside():
            hook("comm")
            spin(700)
            return {}

    @timed
    def _sample_async(self, scheduled_batch, batch_outputs):
        with inside():
            return [s.sample_async(scheduled_batch, batch_outputs) for s in self.samplers]

    @timed
    def _update_request_states(self, scheduled_batch):
        with inside():
            spin(200)

    @timed
    def _update_requests(self, sample_state):
        with inside():
            hook("sync")  # the sampler event of the batch
            for s in self.samplers:
                s.update_requests(sample_state)

    @timed
    def _handle_canceled_requests(self):
        with inside():
            spin(200)

    @timed
    def _enqueue_responses(self, responses):
        with inside():
            spin(200)
            if self.rank == 0:
                self.respond(responses)

    @timed
    def _handle_responses(self):
        with inside():
            self._enqueue_responses([self.n])
            return []

    def _launch(self, batch):
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

    # -- the loops --
    def _executor_loop(self, iterations):
        for _ in range(iterations):
            self._finish(*self._launch(self._prepare_and_schedule_batch()))

    def _executor_loop_overlap(self, iterations):
        previous = None
        for _ in range(iterations):
            current = self._launch(self._prepare_and_schedule_batch())
            if previous is not None:
                self._finish(*previous)
            previous = current
        self._finish(*previous)

    def _executor_loop_pp(self, iterations):
        for _ in range(iterations):
            self._fetch_and_activate_new_requests()
            batch = self._schedule()
            self._finish(*self._launch(batch))
