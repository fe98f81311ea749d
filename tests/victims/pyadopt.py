# SPDX-License-Identifier: BSD-2-Clause
"""Native threads that take a Python thread state on the way (a library's
callback threads), for the sampler's off-CPU accounting of a thread that
its first looks found without one (tests/integration/test_mixed_stacks.py,
test_adopted_thread_*).

Runs unchanged on CPython 3.8 to 3.13: standard library and ptnative
(tests/victims/pyext/ptnative.c, built for the interpreter that runs this:
harness.build_ptnative), its path given with --ext.

After go, --threads times in a row, ptnative.adopt(spin, work): a thread
of ptnative's spins --spin-ms in C with no thread state (the sampler looks
at it and finds none), then takes one and calls work(), which sleeps
--sleep-ms in Python (time.sleep: off the CPU, a few ms after the sampler
last looked) and then spins --after-ms in Python (so the sampler looks at
it again before it ends). Without a look after the interval, the sleep was
taken for a native thread's idle time and dropped whole.

Protocol (as pylines.py): print "ready <pid>", wait for one line ("go"),
run, write the truth file, print "done" with --hold and wait for one more
line before exiting.

Truth JSON: threads, a list of {tid, life_ns (ptnative's clock, from the
thread's first instruction to its last), spun_ns and spun_cpu_ns (the C
spin's wall and thread CPU time: a native thread's time off the CPU, a
preemption in the spin, is not counted by proftrace), sleep_ns
(time.perf_counter_ns around the sleep)}.
"""
import argparse
import os
import sys
import time

import victimio

now = time.perf_counter_ns
rows = []
sleep_ns = after_ns = 0


def work():
    """Called by a ptn-adopt thread, once it has a thread state."""
    t0 = now()
    time.sleep(sleep_ns / 1e9)
    t1 = now()
    end = t1 + after_ns
    while now() < end:
        pass
    rows.append({"sleep_ns": t1 - t0})


def load(path):
    """ptnative from the .so at path (named ptnative.so: imported by name)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    import ptnative
    if os.path.abspath(ptnative.__file__) != os.path.abspath(path):
        raise SystemExit("pyadopt: imported %s, not %s" % (ptnative.__file__, path))
    return ptnative


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ext", required=True, help="ptnative.so built for this interpreter")
    ap.add_argument("--truth")
    ap.add_argument("--threads", type=int, default=3)
    ap.add_argument("--spin-ms", type=float, default=30.0)
    ap.add_argument("--sleep-ms", type=float, default=200.0)
    ap.add_argument("--after-ms", type=float, default=10.0)
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()
    global sleep_ns, after_ns
    ptnative = load(a.ext)
    sleep_ns, after_ns = int(a.sleep_ms * 1e6), int(a.after_ms * 1e6)
    if not victimio.ready():
        return 3
    for _ in range(a.threads):
        tid, life, spun, spun_cpu = ptnative.adopt(int(a.spin_ms * 1e6), work)
        rows[-1].update({"tid": tid, "life_ns": life, "spun_ns": spun, "spun_cpu_ns": spun_cpu})
    return victimio.finish(a.truth, {"threads": rows, "python_version": sys.version.split()[0]},
                           a.hold)


if __name__ == "__main__":
    sys.exit(main())
