# SPDX-License-Identifier: BSD-2-Clause
"""Code that exists only after proftrace attached: pyengine.py --lazy imports
this module (importlib.import_module) at step N//2, so its code objects are
created while the profiler runs. lazy_work() spins 30 us and calls
LazyHelper().help() (10 us) once; ground truth as in pyengine.py (names
relied on by tests/integration/test_python.py).
"""
# The running victim: pyengine registers itself under this name even when it
# runs as __main__, so this is the same module (and truth), not a new copy.
import pyengine as _engine

now = _engine.now
inside = _engine.inside
outer = _engine.outer
spin_us = _engine.spin_us


class LazyHelper:
    def help(self):
        t0 = now()
        spin_us(10)
        inside("LazyHelper.help", t0)


def lazy_work():
    t0 = now()
    spin_us(30)
    helper = LazyHelper()
    t = now()
    helper.help()
    outer("LazyHelper.help", t)
    inside("lazy_work", t0)
