# SPDX-License-Identifier: BSD-2-Clause
"""Module-level functions and a class for the dotted py: probes of
tests/integration/test_pyhint.py."""
import time


def work():
    """~100 us of spinning."""
    end = time.perf_counter_ns() + 100000
    while time.perf_counter_ns() < end:
        pass


def helper():
    return 2


class Runner:
    def run(self):
        work()
