# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.core.sched.output: SchedulerOutput is a plain dataclass
(vllm/v1/core/sched/output.py); EngineCore reads its
total_num_scheduled_tokens, and so does targets/vllm.conf's count tokens."""
from dataclasses import dataclass


@dataclass
class SchedulerOutput:
    step: int
    total_num_scheduled_tokens: int
