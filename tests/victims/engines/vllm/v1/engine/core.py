# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.engine.core, the engine core process ("VLLM::EngineCore").

As vllm/v1/engine/core.py: EngineCoreProc.run_busy_loop polls the input
queue (_process_input_queue, where an idle engine blocks), then runs
_process_engine_step: the step function (EngineCore.step, or
step_with_batch_queue with a batch queue; here the two alternate) and
post_step. A step schedules, has the executor run the model
(execute_model, then sample_tokens), waits for the result on a Future
(the model runs here with one GPU, in worker processes with tensor
parallelism), and updates the scheduler from it. Each step's outputs go to
the API server process, which detokenizes them.
"""
import os
from concurrent.futures import Future

import _fake
from _fake import around, inside, spin, timed
from vllm.v1.core.sched.scheduler import TOKENS, Scheduler


def _result(future):
    """future.result(), recorded around the call when it is the standard
    library's (a FutureWrapper records itself)."""
    with around("concurrent.futures._base", "Future.result",
                type(future).result is Future.result):
        return future.result()


class EngineCore:
    def __init__(self, executor):
        self.scheduler = Scheduler()
        self.model_executor = executor

    def _one(self):
        scheduler_output = self.scheduler.schedule(False)
        future = self.model_executor.execute_model(scheduler_output, non_block=True)
        grammar_output = self.scheduler.get_grammar_bitmask(scheduler_output)
        model_output = _result(future)
        if model_output is None:
            future = self.model_executor.sample_tokens(grammar_output, non_block=True)
            model_output = _result(future)
        outputs = self.scheduler.update_from_output(scheduler_output, model_output)
        return outputs, scheduler_output.total_num_scheduled_tokens > 0

    @timed
    def step(self):
        with inside():
            return self._one()

    @timed
    def step_with_batch_queue(self):
        with inside():
            return self._one()

    @timed
    def post_step(self, model_executed):
        with inside():
            spin(200)


class EngineCoreProc(EngineCore):
    def __init__(self, executor, parent, steps):
        super().__init__(executor)
        self.parent = parent
        self.remaining = steps

    def run_busy_loop(self):
        while self.remaining > 0:
            self._process_input_queue()
            self._process_engine_step()

    def _process_input_queue(self):
        spin(200)

    @timed
    def _process_engine_step(self):
        with inside():
            self.remaining -= 1
            step_fn = self.step if self.remaining % 2 else self.step_with_batch_queue
            outputs, model_executed = step_fn()
            self.parent.send({"out": outputs})
            self.post_step(model_executed)
            return model_executed


def engine_core_main(args, parent):
    child_args = ["vllm", "--steps", str(args.steps)] + args.libs
    if args.tp > 1:
        from vllm.v1.executor.multiproc_executor import MultiprocExecutor
        executor = MultiprocExecutor(args.tp, child_args)
    else:
        from vllm.v1.executor.uniproc_executor import UniProcExecutor
        executor = UniProcExecutor()
    core = EngineCoreProc(executor, parent, args.steps)
    parent.send({"ready": [os.getpid()] + executor.pids})
    parent.recv()  # go
    core.run_busy_loop()
    workers = executor.shutdown()
    parent.send({"truth": [_fake.truth("core", extra={"tokens": TOKENS})] + workers})
