# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm/_torch/pyexecutor/resource_manager.py (single-module layout):
ResourceManager.prepare_resources allocates KV cache blocks and slots."""
from _fake import inside, spin, timed


class ResourceManager:
    @timed
    def prepare_resources(self, scheduled_batch):
        with inside():
            spin(250)

    @timed
    def update_resources(self, scheduled_batch):
        with inside():
            spin(200)
