# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.core.sched.scheduler: what EngineCore.step calls on the
scheduler (vllm/v1/engine/core.py): schedule, get_grammar_bitmask,
update_from_output."""
from _fake import inside, spin, timed
from vllm.v1.core.sched.output import SchedulerOutput

TOKENS = []  # scheduled tokens per schedule() call, for the truth file


class Scheduler:
    def __init__(self):
        self.n = 0

    def has_requests(self):
        return True

    @timed
    def schedule(self, throttle_prefills=False):
        with inside():
            self.n += 1
            spin(300)
            tokens = 8 + (self.n * 7) % 23  # a mix of prefill chunks and decodes
            TOKENS.append(tokens)
            return SchedulerOutput(step=self.n, total_num_scheduled_tokens=tokens)

    @timed
    def get_grammar_bitmask(self, scheduler_output):
        with inside():
            spin(200)
            return None

    @timed
    def update_from_output(self, scheduler_output, model_runner_output):
        with inside():
            spin(250)
            return {0: scheduler_output.total_num_scheduled_tokens}
