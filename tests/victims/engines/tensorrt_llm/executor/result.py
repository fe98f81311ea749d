# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm.executor.result: DetokenizedGenerationResultBase.
_handle_response detokenizes each response in the process that holds the
LLM API (trtllm-serve's, the proxy), not in the workers
(tensorrt_llm/executor/result.py; with num_postprocess_workers > 0 in the
postprocess worker processes of tensorrt_llm/executor/postproc_worker.py)."""
from _fake import inside, spin, timed


class GenerationResultBase:
    pass


class DetokenizedGenerationResultBase(GenerationResultBase):
    @timed
    def _handle_response(self, response):
        with inside():
            spin(300)
