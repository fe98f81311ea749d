# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.worker.gpu.spec_decode.eagle.speculator: EagleSpeculator
inherits propose from AutoRegressiveSpeculator (its code object lives in
autoregressive/speculator.py, which is what a py: probe matches)."""
from vllm.v1.worker.gpu.spec_decode.autoregressive.speculator import AutoRegressiveSpeculator


class EagleSpeculator(AutoRegressiveSpeculator):
    pass
