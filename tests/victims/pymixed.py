# SPDX-License-Identifier: BSD-2-Clause
"""Mixed native/Python stacks with known native time, for `set
native_frames on` (tests/integration/test_mixed_stacks.py) and the bench's
native_frames rows (bench/run.py).

Runs unchanged on CPython 3.8 to 3.13: standard library and ptnative,
tests/victims/pyext/ptnative.c built for the interpreter that runs this
(harness.build_ptnative), its path given with --ext or $PTNATIVE.

Each step, in the main thread:
  python_part(py_ns)        a busy loop in Python: no native frame of ours
  native_part(native_ns)    ptnative.spin(native_ns): the stack reads
                            step -> native_part -> spin -> ptn_spin_outer
                            -> ptn_spin_inner -> ptn_leaf
  callback_part(cb_ns)      ptnative.call(callback, cb_ns), callback
                            calling ptnative.spin(cb_ns): step ->
                            callback_part -> call -> ptn_callback ->
                            callback -> spin -> ... -> ptn_leaf
  block_part(block_ns)      with --block-ms: ptnative.block(block_ns), off
                            the CPU: step -> block_part -> block ->
                            ptn_block_outer -> ptn_block_inner -> libc
  short_part(n, ns)         with --short-blocks N: N blocks of --short-us
                            each (shorter than a sampling period), the
                            same path under short_part
  gil_part(ns)              with --gil-ms: the "gil-hog" thread spins in
                            Python (holding the GIL) while this thread
                            calls ptnative.gil(ns): a sleep with the GIL
                            released, then the wait to get it back, off
                            the CPU in take_gil: step -> gil_part -> gil ->
                            ptn_gil_take -> [GIL wait] -> libc
  pool_part(ns)             with --pool-ms: ptnative.pool(ns), a job on
                            ptnative's worker thread (no Python thread
                            state): ptn_pool_main -> ptn_pool_work ->
                            ptn_leaf there, while this thread waits off the
                            CPU in pool -> ptn_pool_wait

Protocol (as pylines.py): print "ready <pid>", wait for one line on stdin
("go"), run --steps steps, write the truth file, exit 0 (3 if stdin hits
EOF first). With --hold, print "done" after writing the truth and wait
for one more line before exiting, so the driver stops proftrace while
the process (and its mappings, which native frames are named from) is
still there.

Truth JSON: python, pid, tid, ext (the .so's path), steps, wall_ns (go to
the last step's end), cpu_ns (the same span of this thread's CPU time),
step {calls, wall_ns, cpu_ns}, and for each kind of spin, "native"
(native_part's) and "callback" (callback's): {calls, spun_ns (what
ptn_leaf measured on its own clock, inside every frame of the path),
outer_ns (time.perf_counter_ns around the ptnative.spin call), cpu_ns
(time.thread_time_ns around that, the clock the cpu-clock perf event
counts; the CPU clock read outside the wall one, so a preemption in it
is in both)}, and "python" {calls, wall_ns, cpu_ns} of python_part;
with blocks, "block" and "short" the same as the spins' (spun_ns: what
ptn_block_inner slept on its own clock); with the pool, "pool" the same
(spun_ns: the worker's CPU time in ptn_pool_work, on its thread clock);
with --gil-ms, "gil" the same (spun_ns: what ptn_gil_take measured around
PyEval_RestoreThread, the GIL's wait in it; slept_ns: the sleeps before).
"""
import argparse
import os
import sys
import threading
import time

import victimio

now = time.perf_counter_ns
cpu = time.thread_time_ns
ptnative = None
truth = {}


def kind(name):
    return truth.setdefault(name, {"calls": 0, "spun_ns": 0, "outer_ns": 0, "cpu_ns": 0})


def book(name, spun, t0, t1, c0, c1):
    k = kind(name)
    k["calls"] += 1
    k["spun_ns"] += spun
    k["outer_ns"] += t1 - t0
    k["cpu_ns"] += c1 - c0


def python_part(ns):
    k = truth.setdefault("python", {"calls": 0, "wall_ns": 0, "cpu_ns": 0})
    c0 = cpu()
    t0 = now()
    end = t0 + ns
    x = 0
    while now() < end:
        x += 1
    k["wall_ns"] += now() - t0
    k["cpu_ns"] += cpu() - c0
    k["calls"] += 1
    return x


# ptnative.spin is called right here (no helper between), so the sampled
# stacks read native_part -> spin and callback -> spin


def native_part(ns):
    c0 = cpu()
    t0 = now()
    spun = ptnative.spin(ns)
    t1 = now()
    book("native", spun, t0, t1, c0, cpu())


def callback(ns):
    c0 = cpu()
    t0 = now()
    spun = ptnative.spin(ns)
    t1 = now()
    book("callback", spun, t0, t1, c0, cpu())


def callback_part(ns):
    ptnative.call(callback, ns)


def block_part(ns):
    c0 = cpu()
    t0 = now()
    slept = ptnative.block(ns)
    t1 = now()
    book("block", slept, t0, t1, c0, cpu())


def short_part(n, ns):
    for _ in range(n):
        c0 = cpu()
        t0 = now()
        slept = ptnative.block(ns)
        t1 = now()
        book("short", slept, t0, t1, c0, cpu())


def pool_part(ns):
    c0 = cpu()
    t0 = now()
    worker_cpu = ptnative.pool(ns)
    t1 = now()
    book("pool", worker_cpu, t0, t1, c0, cpu())


hog_go = threading.Event()


def hog():
    """Spins in Python, holding the GIL but for the switch interval's
    hand-offs, while hog_go is set."""
    while True:
        hog_go.wait()
        while hog_go.is_set():
            pass


def gil_part(ns):
    hog_go.set()
    c0 = cpu()
    t0 = now()
    slept, took = ptnative.gil(ns)
    t1 = now()
    hog_go.clear()
    book("gil", took, t0, t1, c0, cpu())
    k = kind("gil")
    k["slept_ns"] = k.get("slept_ns", 0) + slept


def step(py_ns, native_ns, cb_ns, block_ns=0, shorts=0, short_ns=0, pool_ns=0, gil_ns=0):
    python_part(py_ns)
    native_part(native_ns)
    callback_part(cb_ns)
    if block_ns:
        block_part(block_ns)
    if shorts:
        short_part(shorts, short_ns)
    if pool_ns:
        pool_part(pool_ns)
    if gil_ns:
        gil_part(gil_ns)


def load(path):
    """ptnative from the .so at path (named ptnative.so: imported by name)."""
    global ptnative
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    import ptnative as m
    if os.path.abspath(m.__file__) != os.path.abspath(path):
        raise SystemExit("pymixed: imported %s, not %s" % (m.__file__, path))
    ptnative = m


def run(steps, py_ns, native_ns, cb_ns, block_ns=0, shorts=0, short_ns=0, pool_ns=0, gil_ns=0):
    st = {"calls": 0, "wall_ns": 0, "cpu_ns": 0}
    for name in ("native", "callback", "block", "short", "pool", "gil"):
        kind(name)
    c0 = cpu()
    t0 = now()
    for _ in range(steps):
        sc = cpu()
        s0 = now()
        step(py_ns, native_ns, cb_ns, block_ns, shorts, short_ns, pool_ns, gil_ns)
        st["wall_ns"] += now() - s0
        st["cpu_ns"] += cpu() - sc
        st["calls"] += 1
    wall = now() - t0
    return {"python": truth.get("python"), "native": truth["native"],
            "callback": truth["callback"], "block": truth["block"], "short": truth["short"],
            "pool": truth["pool"], "gil": truth["gil"], "step": st, "steps": steps, "wall_ns": wall,
            "cpu_ns": cpu() - c0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ext", default=os.environ.get("PTNATIVE"),
                    help="ptnative.so built for this interpreter (default $PTNATIVE)")
    ap.add_argument("--truth")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--py-ms", type=float, default=4.0)
    ap.add_argument("--native-ms", type=float, default=8.0)
    ap.add_argument("--callback-ms", type=float, default=6.0)
    ap.add_argument("--block-ms", type=float, default=0.0)
    ap.add_argument("--short-blocks", type=int, default=0)
    ap.add_argument("--short-us", type=float, default=100.0)
    ap.add_argument("--pool-ms", type=float, default=0.0)
    ap.add_argument("--gil-ms", type=float, default=0.0)
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()
    if not a.ext:
        ap.error("--ext PATH (or $PTNATIVE): ptnative.so built for this interpreter")
    load(a.ext)
    ptnative.spin(1000)  # warm: the first call's lazy binding is not in a step
    ptnative.block(1000)
    if a.pool_ms:
        ptnative.pool(1000)  # the worker made before go
    if a.gil_ms:
        ptnative.gil(1000)
        threading.Thread(target=hog, name="gil-hog", daemon=True).start()
    if not victimio.ready():
        return 3
    t = run(a.steps, int(a.py_ms * 1e6), int(a.native_ms * 1e6), int(a.callback_ms * 1e6),
            int(a.block_ms * 1e6), a.short_blocks, int(a.short_us * 1e3), int(a.pool_ms * 1e6),
            int(a.gil_ms * 1e6))
    t.update({"python_version": sys.version.split()[0], "executable": sys.executable,
              "pid": os.getpid(), "tid": threading.get_native_id(),
              "ext": os.path.abspath(a.ext)})
    return victimio.finish(a.truth, t, a.hold)


if __name__ == "__main__":
    sys.exit(main())
