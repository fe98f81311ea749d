# SPDX-License-Identifier: BSD-2-Clause
"""Helpers of the fake engines: busy-spin, and the native calls they make.

hook("sync") stands for the host waiting on the GPU (cudaStreamSynchronize
of the CUDA runtime given with --cudart), hook("comm") for a collective
(ncclGroupStart + ncclGroupEnd of the libnccl given with --nccl); without
those libraries a hook does nothing. Counts per hook go to the truth file.
"""
import ctypes
import time

_libs = {}
calls = {"sync": 0, "comm": 0}


def load(cudart=None, nccl=None):
    if cudart:
        _libs["sync"] = ctypes.CDLL(cudart)
    if nccl:
        _libs["comm"] = ctypes.CDLL(nccl)


def hook(what):
    lib = _libs.get(what)
    if lib is None:
        return
    calls[what] += 1
    if what == "sync":
        lib.cudaStreamSynchronize(None)  # no GPU: an error code, still a call
    else:
        lib.ncclGroupStart()
        lib.ncclGroupEnd()


def spin(us):
    end = time.perf_counter_ns() + us * 1000
    while time.perf_counter_ns() < end:
        pass
