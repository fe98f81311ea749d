# SPDX-License-Identifier: BSD-2-Clause
"""Fake tensorrt_llm/_torch/pyexecutor/resource_manager.py (single-module layout)."""
from _fake import spin


class ResourceManager:
    def prepare_resources(self, scheduled_batch):
        spin(10)

    def update_resources(self, scheduled_batch):
        spin(5)
