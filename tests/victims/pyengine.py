# SPDX-License-Identifier: BSD-2-Clause
"""A Python "inference engine" for proftrace's integration tests.

The Python counterpart of victim_engine.c: steps made of phases (methods,
a decorated function, a generator, a function called only from C, a native
libc call, an exception path, and optionally a module imported only after
proftrace attached) that busy-spin for known times. Every function measures
itself; the totals are written as JSON (--truth FILE) at exit.
tests/integration/test_python.py relies on the function names and the
timings below: change them together.

Runs unchanged on CPython 3.8 to 3.13, standard library only.

Protocol with the test driver (stdin/stdout, line based, as the native
victim): print "ready <pid>", wait for one line on stdin, run the steps,
write the truth file, exit 0 (3 if stdin hits EOF before the line).

Options:
  --truth FILE      write the ground truth here at exit
  --steps N         steps per engine thread (default 100)
  --threads K       K engine threads of N steps each (default 1: the main
                    thread runs the engine itself; K > 1: K threading.Threads,
                    the main thread only joins them)
  --lazy            from step N//2 on, each step also calls
                    pyengine_lazy.lazy_work(); pyengine_lazy is imported at
                    that moment (importlib.import_module), not before, so its
                    code objects are created after proftrace attached
  --spin-scale F    multiply every spin duration by F (default 1.0)
  --churn           after each step, compile, run and drop a fresh function
                    from source "churn.py": churn_target on even steps,
                    churn_other on odd ones (5 us each), so code object
                    addresses are freed and reused

Workload per step (Engine.step; spins in microseconds at scale 1):
  Scheduler.schedule        200
  ModelRunner.forward        50 + 4 x ModelRunner.layer (100 each)
                                + 2 x ModelRunner.layer_norm (10 each, called
                                  from C: list(map(self.layer_norm, range(2))))
  Sampler.sample            100 + one os.getppid() (libc getppid)
  Sampler.check(i)           20, raises ValueError when i is odd (caught)
  postprocess(batch)         50, wrapped by the @timed decorator (the wrapper's
                                  code object is "wrapper", qualname
                                  "timed.<locals>.wrapper")
  detokenize(3)              generator: 3 x (20 then yield), resumed with next()
  pyengine_lazy.lazy_work    30 + LazyHelper.help (10); only with --lazy,
                                  from step N//2 on
That is about 0.9 ms per step (0.94 ms with lazy_work); engine_idle (50) runs
between steps, outside them, called by run_engine's loop.

Ground truth, per function: {"calls", "total_ns", "outer_ns"}.
  total_ns  sum over calls of the time measured *inside* the function: from
            its first statement (t0 = now()) to just before it returns (or
            raises: check() records on both paths; the generator records per
            activation, from resume to yield/return).
  outer_ns  sum over calls of the time measured *around* the call at the
            call site, in the caller, just before and after the call
            expression.
The profiler's time for each call (entry to return, on the same
CLOCK_MONOTONIC: time.perf_counter_ns on Linux) lies between the two, so
tests check proftrace's totals against the bracket [total_ns, outer_ns]
(harness.within()). Measurement overhead (dict updates) is kept outside the
inside interval: inside() reads the clock first and only then books it.
Special entries:
  detokenize            calls = activations (each resume until the next yield
                        or the return: n + 1 = 4 per generator); outer_ns is
                        around each next(), including the one that raises
                        StopIteration. Creating the generator is not counted.
  ModelRunner.layer_norm  called by map() from C: outer_ns is the time around
                        the whole list(map(...)) per forward, an upper bound
                        for the sum of its 2 calls, not a per-call time.
  getppid               the libc function: calls and outer_ns (around
                        os.getppid()), total_ns = 0 (not measurable inside).
  postprocess           the inner (decorated) function; its outer_ns is
                        around postprocess(batch), so includes the wrapper.
Other keys: python, pid, steps (N*K), threads (K), steps_per_thread, lazy,
lazy_first_step (N//2), lazy_calls, lazy_import_step (the step index at which
pyengine_lazy got imported, -1 if never), spin_scale, and
thread0_step_inner_ns / thread0_step_outer_ns (per step of the first engine
thread: inside Engine.step and around the call).

Truth is kept per thread (threading.local) and merged at exit, so threads do
not race on shared counters.
"""
import functools
import importlib
import json
import os
import sys
import threading
import time

# pyengine_lazy imports its helpers from "pyengine": make that the running
# module even when this file runs as __main__ (no second copy gets loaded).
sys.modules.setdefault("pyengine", sys.modules[__name__])

# CLOCK_MONOTONIC on Linux: the clock of proftrace's BPF timestamps.
now = time.perf_counter_ns

_ns_per_us = 1000.0  # 1000 * --spin-scale

FUNCTIONS = [
    "Engine.step",
    "Scheduler.schedule",
    "ModelRunner.forward",
    "ModelRunner.layer",
    "ModelRunner.layer_norm",
    "Sampler.sample",
    "Sampler.check",
    "postprocess",
    "detokenize",
    "engine_idle",
    "getppid",
    "lazy_work",
    "LazyHelper.help",
    "churn_target",
    "churn_other",
]

# --churn: code objects compiled, run once and freed every step, so their
# addresses get reused by the next one; only churn_target is configured.
# Both names stay interned (referenced here), as a live program's would.
_CHURN_NAMES = ("churn_target", "churn_other")
_CHURN_SRC = ("def %s():\n"
              "    t0 = now()\n"
              "    spin_us(5)\n"
              "    inside(%r, t0)\n")


def spin(ns):
    """Busy-loop until ns nanoseconds have elapsed."""
    end = now() + ns
    while now() < end:
        pass


def spin_us(us):
    """Spin for us microseconds times --spin-scale."""
    spin(int(us * _ns_per_us))


# --- ground truth ---------------------------------------------------------

_tls = threading.local()
_all_truth = []  # every thread's dict, merged at exit
_all_lock = threading.Lock()


def _truth():
    try:
        return _tls.truth
    except AttributeError:
        t = _tls.truth = {}
        with _all_lock:
            _all_truth.append(t)
        return t


def _entry(name):
    t = _truth()
    e = t.get(name)
    if e is None:
        e = t[name] = [0, 0, 0]  # calls, total_ns (inside), outer_ns (around)
    return e


def inside(name, t0):
    """End of the *inside* interval begun at t0 = now() in the function's
    first statement: call it as the function's last statement. Counts one
    call. Returns the interval (ns)."""
    d = now() - t0  # the clock is read first: the booking below is outside
    e = _entry(name)
    e[0] += 1
    e[1] += d
    return d


def outer(name, t0, calls=0):
    """End of the *outer* interval: t0 = now() just before the call
    expression, outer() just after it, in the caller. Counts no call unless
    told (for callees that cannot measure themselves: getppid). Returns the
    interval (ns)."""
    d = now() - t0
    e = _entry(name)
    e[0] += calls
    e[2] += d
    return d


def merged_truth():
    out = {}
    for name in FUNCTIONS:
        calls = total = around = 0
        with _all_lock:
            dicts = list(_all_truth)
        for t in dicts:
            e = t.get(name)
            if e:
                calls += e[0]
                total += e[1]
                around += e[2]
        out[name] = {"calls": calls, "total_ns": total, "outer_ns": around}
    return out


# --- the workload -----------------------------------------------------------
# Pattern: in a measured function, "t0 = now()" is the first statement and
# "inside(NAME, t0)" the last before return; at a call site,
# "t = now()" / call / "outer(NAME, t)". Calls are made directly from the
# caller (no helper in between) so the Python call stack is the real one.


class Scheduler:
    def schedule(self):
        t0 = now()
        spin_us(200)
        inside("Scheduler.schedule", t0)


class ModelRunner:
    def layer(self):
        t0 = now()
        spin_us(100)
        inside("ModelRunner.layer", t0)

    def layer_norm(self, x):
        t0 = now()
        spin_us(10)
        inside("ModelRunner.layer_norm", t0)
        return x

    def forward(self):
        t0 = now()
        for _ in range(4):
            t = now()
            self.layer()
            outer("ModelRunner.layer", t)
        # called from C only (map); outer: around both calls together
        t = now()
        list(map(self.layer_norm, range(2)))
        outer("ModelRunner.layer_norm", t)
        spin_us(50)
        inside("ModelRunner.forward", t0)


class Sampler:
    def sample(self):
        t0 = now()
        spin_us(100)
        t = now()
        os.getppid()  # libc getppid(), probed as native:libc.so*:getppid
        outer("getppid", t, calls=1)
        inside("Sampler.sample", t0)

    def check(self, i):
        t0 = now()
        try:
            spin_us(20)
            if i % 2:
                raise ValueError("odd step %d" % i)
        finally:
            inside("Sampler.check", t0)  # on return and on raise


def timed(fn):
    """A decorator that adds nothing measurable: the wrapper only calls fn."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@timed
def postprocess(batch):
    t0 = now()
    spin_us(50)
    inside("postprocess", t0)
    return batch


def detokenize(n):
    """Yields n times; each activation (resume to yield/return) is a call."""
    t0 = now()
    for k in range(n):
        spin_us(20)
        inside("detokenize", t0)
        yield k
        t0 = now()
    inside("detokenize", t0)


class Engine:
    def __init__(self, steps, lazy):
        self.steps = steps
        self.lazy = lazy
        self.scheduler = Scheduler()
        self.runner = ModelRunner()
        self.sampler = Sampler()
        self.batch = list(range(8))
        self.lazy_mod = None
        self.inner_ns = 0  # inside time of the last step

    def step(self, i):
        t0 = now()

        t = now()
        self.scheduler.schedule()
        outer("Scheduler.schedule", t)

        t = now()
        self.runner.forward()
        outer("ModelRunner.forward", t)

        t = now()
        self.sampler.sample()
        outer("Sampler.sample", t)

        t = now()
        try:
            self.sampler.check(i)
        except ValueError:
            pass
        outer("Sampler.check", t)

        t = now()
        postprocess(self.batch)
        outer("postprocess", t)

        gen = detokenize(3)
        while True:
            t = now()
            try:
                next(gen)
            except StopIteration:
                outer("detokenize", t)
                break
            outer("detokenize", t)

        if self.lazy and i >= self.steps // 2:
            if self.lazy_mod is None:
                _note_lazy_import(i)
                self.lazy_mod = importlib.import_module("pyengine_lazy")
            t = now()
            self.lazy_mod.lazy_work()
            outer("lazy_work", t)

        self.inner_ns = inside("Engine.step", t0)


_lazy_import_step = -1


def _note_lazy_import(i):
    global _lazy_import_step
    with _all_lock:
        if "pyengine_lazy" not in sys.modules and _lazy_import_step < 0:
            _lazy_import_step = i


def engine_idle():
    t0 = now()
    spin_us(50)
    inside("engine_idle", t0)


def churn(i):
    """Compile, run and drop a fresh function (file "churn.py")."""
    name = _CHURN_NAMES[i % 2]
    ns = {"now": now, "spin_us": spin_us, "inside": inside}
    exec(compile(_CHURN_SRC % (name, name), "churn.py", "exec"), ns)
    fn = ns[name]
    t = now()
    fn()
    outer(name, t)


def run_engine(n, lazy=False, per_step=None, churn_each=False):
    """The engine loop: n steps, engine_idle between them. per_step: a pair
    of lists to append each step's inside and outer time to."""
    engine = Engine(n, lazy)
    for i in range(n):
        t = now()
        engine.step(i)
        d = outer("Engine.step", t)
        if per_step is not None:
            per_step[0].append(engine.inner_ns)
            per_step[1].append(d)

        t = now()
        engine_idle()
        outer("engine_idle", t)
        if churn_each:
            churn(i)


# --- main ---------------------------------------------------------------------


def usage():
    sys.stderr.write("usage: %s [--truth FILE] [--steps N] [--threads K] [--lazy] "
                     "[--spin-scale F] [--churn]\n" % sys.argv[0])
    return 2


def main(argv):
    global _ns_per_us
    truth_path = None
    steps, nthreads, lazy, scale = 100, 1, False, 1.0
    churn_each = False
    i = 0
    try:
        while i < len(argv):
            a = argv[i]
            if a == "--truth" and i + 1 < len(argv):
                truth_path = argv[i + 1]
                i += 1
            elif a == "--steps" and i + 1 < len(argv):
                steps = int(argv[i + 1])
                i += 1
            elif a == "--threads" and i + 1 < len(argv):
                nthreads = int(argv[i + 1])
                i += 1
            elif a == "--spin-scale" and i + 1 < len(argv):
                scale = float(argv[i + 1])
                i += 1
            elif a == "--lazy":
                lazy = True
            elif a == "--churn":
                churn_each = True
            else:
                return usage()
            i += 1
    except ValueError:
        return usage()
    if steps < 0 or nthreads < 1 or nthreads > 64 or scale < 0:
        return usage()
    _ns_per_us = 1000.0 * scale

    # pyengine_lazy is found next to this file (also under python -I), and
    # no __pycache__ is written into the source tree.
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    sys.dont_write_bytecode = True

    sys.stdout.write("ready %d\n" % os.getpid())
    sys.stdout.flush()
    if not sys.stdin.readline():
        return 3

    inner0, outer0 = [], []
    if nthreads == 1:
        run_engine(steps, lazy, (inner0, outer0), churn_each)
    else:
        threads = [threading.Thread(target=run_engine, name="engine-%d" % k,
                                    args=(steps, lazy, (inner0, outer0) if k == 0 else None,
                                          churn_each))
                   for k in range(nthreads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    if truth_path:
        functions = merged_truth()
        truth = {
            "python": "%d.%d.%d" % sys.version_info[:3],
            "pid": os.getpid(),
            "threads": nthreads,
            "steps": steps * nthreads,
            "steps_per_thread": steps,
            "spin_scale": scale,
            "lazy": lazy,
            "lazy_first_step": steps // 2,
            "lazy_calls": functions["lazy_work"]["calls"],
            "lazy_import_step": _lazy_import_step,
            "thread0_step_inner_ns": inner0,
            "thread0_step_outer_ns": outer0,
            "functions": functions,
        }
        with open(truth_path, "w") as f:
            json.dump(truth, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
