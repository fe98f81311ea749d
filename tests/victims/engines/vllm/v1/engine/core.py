# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.engine.core: only the names targets/vllm.conf probes.

EngineCoreProc.run_busy_loop turns like vLLM's: poll the input queue,
then one engine step, which is EngineCore.step or (batch queue)
EngineCore.step_with_batch_queue; here the two alternate.
"""
from _fake import hook, spin
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.worker.gpu.model_runner import GPUModelRunner as RunnerV2
from vllm.v1.worker.gpu_model_runner import GPUModelRunner as RunnerV1


class EngineCore:
    def __init__(self, steps):
        self.scheduler = Scheduler()
        self.runners = (RunnerV2(), RunnerV1())
        self.remaining = steps

    def _one(self):
        out = self.scheduler.schedule()
        for r in self.runners:
            r.execute_model(out)
            r.sample_tokens(None)
        hook("sync")
        return self.scheduler.update_from_output(out, None)

    def step(self):
        return self._one(), True

    def step_with_batch_queue(self):
        return self._one(), True


class EngineCoreProc(EngineCore):
    def run_busy_loop(self):
        while self.remaining > 0:
            self._process_input_queue()
            self._process_engine_step()

    def _process_input_queue(self):
        spin(20)

    def _process_engine_step(self):
        self.remaining -= 1
        if self.remaining % 2:
            return self.step()
        return self.step_with_batch_queue()


class DPEngineCoreProc(EngineCoreProc):
    def run_busy_loop(self):
        EngineCoreProc.run_busy_loop(self)
