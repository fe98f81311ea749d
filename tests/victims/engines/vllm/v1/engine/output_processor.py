# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.engine.output_processor: OutputProcessor.process_outputs,
which detokenizes in the API server process, not in the engine core
(vllm/v1/engine/output_processor.py, called by AsyncLLM's output handler)."""
from _fake import inside, spin, timed


class OutputProcessor:
    @timed
    def process_outputs(self, engine_core_outputs):
        with inside():
            spin(250)
