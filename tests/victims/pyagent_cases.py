# SPDX-License-Identifier: BSD-2-Clause
"""Every kind of activation a named Python function can have, for the agent.

Each function below busy-spins for a known time and measures itself; the
totals are written as JSON at exit. tests/integration/test_agent.py names
them in a targets file and checks proftrace's counts and times against
this truth on every interpreter.

  Engine.step()          the step: calls everything below once per step
  plain(x)               a Python-to-Python call (3.11+ inline these)
  recurse(n)             recursion: recurse(3) is 4 activations, nested
  decorated(x)           wrapped by a functools.wraps decorator
  closured(x)            wrapped by a decorator without wraps (the inner
                         function lives only in the wrapper's closure)
  fails(i)               raises ValueError for odd i, caught by the caller
  produce()              a generator: 3 yields, so 4 activations when exhausted
  decode(i)              a coroutine awaiting asyncio.sleep(0) once, run by an
                         asyncio event loop: 2 activations per call (outer_ns:
                         around the loop's run_until_complete)
  signature(a, b=2, /, c=3, *rest, d, e=5, **kw)
                         called 5 ways a step (3 that return, 2 that raise
                         TypeError: missing arguments), each result checked
                         against an unattached run; exit 4 if one differs
  threaded(x)            called from 2 threads started after proftrace attached

Per function: {"calls": activations, "total_ns": time measured inside each
activation (from its first statement, or its resumption, to its last, or
its suspension), "outer_ns": time measured around it at the call site
(generators: around next(); the coroutine: around the event loop's run)}.

Protocol as the other victims: print "ready <pid>", wait for one line on
stdin, run --steps steps, write --truth, exit 0 (3 on EOF before the line).
With --hold, after the steps print "held" and wait for another line (a
test detaches proftrace meanwhile), then check that no hook of the agent is
left in the interpreter and print "hooks <n>" (n: hooks found; before
"held", "attached: evaluator <0|1> trampolines <n>" says what was in while
attached: a frame evaluator, functions whose code is a trampoline), then run
--steps more steps and write the truth of both phases.
Standard library only; CPython 3.8+.
"""
import argparse
import select
import asyncio
import functools
import json
import os
import sys
import threading
import time
import types

now = time.perf_counter_ns
truth = {}
lock = threading.Lock()


def spin(us):
    end = now() + int(us * 1000)
    while now() < end:
        pass


def record(name, inside, outer=0):
    with lock:
        t = truth.setdefault(name, {"calls": 0, "total_ns": 0, "outer_ns": 0})
        t["calls"] += 1
        t["total_ns"] += inside
        t["outer_ns"] += outer


def around(name, fn, *args):
    """Call fn(*args), adding the call-site time to name's outer_ns."""
    t0 = now()
    try:
        return fn(*args)
    finally:
        with lock:
            truth.setdefault(name, {"calls": 0, "total_ns": 0, "outer_ns": 0})
            truth[name]["outer_ns"] += now() - t0


def plain(x):
    t0 = now()
    spin(60)
    record("plain", now() - t0)
    return x + 1


def recurse(n):
    t0 = now()
    spin(20)
    if n:
        around("recurse", recurse, n - 1)
    record("recurse", now() - t0)


def wraps_deco(fn):
    @functools.wraps(fn)
    def wrapper(*a):
        return fn(*a)
    return wrapper


def plain_deco(fn):
    def inner_wrapper(*a):
        return fn(*a)
    return inner_wrapper


@wraps_deco
def decorated(x):
    t0 = now()
    spin(40)
    record("decorated", now() - t0)
    return x


@plain_deco
def closured(x):
    t0 = now()
    spin(40)
    record("closured", now() - t0)
    return x


def fails(i):
    t0 = now()
    spin(30)
    if i % 2:
        record("fails", now() - t0)
        raise ValueError(i)
    record("fails", now() - t0)


def produce():
    t0 = now()
    for k in range(3):
        spin(25)
        record("produce", now() - t0)
        yield k
        t0 = now()
    spin(25)
    record("produce", now() - t0)


async def decode(i):
    t0 = now()
    spin(50)
    record("decode", now() - t0)
    await asyncio.sleep(0)
    t0 = now()
    spin(50)
    record("decode", now() - t0)
    return i


def signature(a, b=2, /, c=3, *rest, d, e=5, **kw):
    t0 = now()
    spin(20)
    record("signature", now() - t0)
    return (a, b, c, rest, d, e, sorted(kw.items()))


def signature_calls():
    """signature() called every way its parameters allow, each result and
    each refusal against what it gave before anything was attached (3.8-
    3.11 trampolines take the function's own signature: defaults,
    positional-only, keyword-only, *rest, **kw, the errors' text)."""
    got = []
    for args, kw in (((1,), {"d": 4}), ((1, 9, 8, 7, 6), {"d": 4, "e": 0, "z": 1}),
                     ((1,), {"b": 7, "d": 4}), ((), {"d": 4}), ((1,), {})):
        t0 = now()
        try:
            got.append(signature(*args, **kw))
        except TypeError as x:
            got.append(str(x))
        with lock:
            truth.setdefault("signature", {"calls": 0, "total_ns": 0, "outer_ns": 0})
            truth["signature"]["outer_ns"] += now() - t0
    return got


def threaded(x):
    t0 = now()
    spin(80)
    record("threaded", now() - t0)
    return x


class Engine:
    def __init__(self):
        self.loop = asyncio.new_event_loop()
        # what signature() gives with nothing attached (its calls of
        # now are left out of the truth)
        self.signature_want = signature_calls()
        truth.clear()

    def step(self, i):
        t0 = now()
        around("plain", plain, i)
        around("recurse", recurse, 3)
        around("decorated", decorated, i)
        around("closured", closured, i)
        got = signature_calls()
        if got != self.signature_want:
            print("signature changed: %r, want %r" % (got, self.signature_want), flush=True)
            os._exit(4)
        try:
            around("fails", fails, i)
        except ValueError:
            pass
        g = produce()
        while True:
            try:
                around("produce", next, g)
            except StopIteration:
                break
        # its activations are resumed by the loop: the loop's run is their
        # call site (it holds both activations and the loop's own work)
        around("decode", self.loop.run_until_complete, decode(i))
        record("Engine.step", now() - t0)


def named_functions():
    """Every function object of this module the agent may wrap (3.8-3.11
    trampolines swap their __code__): module and class level ones, what a
    decorator holds (__wrapped__, closure cells), importlib's import hook."""
    seen, out = set(), []

    def add(f):
        if isinstance(f, types.FunctionType) and id(f) not in seen:
            seen.add(id(f))
            out.append(f)
            add(getattr(f, "__wrapped__", None))
            for c in getattr(f, "__closure__", None) or ():
                try:
                    add(c.cell_contents)
                except ValueError:
                    pass
    for v in list(globals().values()) + list(vars(Engine).values()):
        add(v)
    import importlib._bootstrap as b
    add(b._find_and_load)
    return out


def trampolines_in():
    """Named functions whose code is the agent's trampoline now."""
    return [f.__qualname__ for f in named_functions() if f.__code__.co_filename == "<proftrace>"]


def evaluator_in():
    """1 when a frame evaluator (PEP 523) other than CPython's is in."""
    if getattr(sys, "monitoring", None) is not None:
        return 0
    import ctypes
    api = ctypes.pythonapi
    default = ctypes.cast(api._PyEval_EvalFrameDefault, ctypes.c_void_p).value
    if sys.version_info >= (3, 9):
        api.PyInterpreterState_Get.restype = ctypes.c_void_p
        get = api._PyInterpreterState_GetEvalFrameFunc
        get.restype = ctypes.c_void_p
        get.argtypes = [ctypes.c_void_p]
        cur = get(api.PyInterpreterState_Get())
    else:
        # 3.8: interp->eval_frame at 568 (no getter)
        api.PyThreadState_Get.restype = ctypes.c_void_p
        ts = api.PyThreadState_Get()
        interp = ctypes.c_void_p.from_address(ts + 16).value
        cur = ctypes.c_void_p.from_address(interp + 568).value
    return int(cur not in (None, 0, default))


def hooks_left():
    """How many of the agent's hooks are still in the interpreter."""
    n = len(trampolines_in())
    mon = getattr(sys, "monitoring", None)
    if mon is not None:
        for tool in range(6):
            name = mon.get_tool(tool)
            if name == "proftrace":
                n += 1
            if mon.get_events(tool):
                n += 1
            for f in (plain, recurse, fails, produce, decode, threaded, Engine.step):
                if mon.get_local_events(tool, f.__code__):
                    n += 1
    else:
        n += evaluator_in()
    return n


def run_steps(e, n, start):
    for i in range(start, start + n):
        around("Engine.step", e.step, i)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--hold", action="store_true")
    # wait for the line as a server's event loop waits: Python code runs
    # between short waits (what a PEP 768 request needs to be served)
    ap.add_argument("--poll", action="store_true")
    a = ap.parse_args()
    e = Engine()
    print("ready %d" % os.getpid(), flush=True)
    while a.poll and not select.select([sys.stdin], [], [], 0.005)[0]:
        pass
    if not sys.stdin.readline():
        sys.exit(3)
    # threads started after proftrace attached
    ts = [threading.Thread(target=lambda: [around("threaded", threaded, k)
                                            for k in range(a.steps)]) for _ in range(2)]
    for t in ts:
        t.start()
    run_steps(e, a.steps, 0)
    for t in ts:
        t.join()
    out = {"phase1": json.loads(json.dumps(truth)), "python": sys.version.split()[0]}
    if a.hold:
        # what is in while proftrace is still attached
        print("attached: evaluator %d trampolines %s" % (evaluator_in(),
                                                          " ".join(sorted(trampolines_in()))),
              flush=True)
        print("held", flush=True)
        if not sys.stdin.readline():
            sys.exit(3)
        print("hooks %d" % hooks_left(), flush=True)
        truth.clear()
        if not sys.stdin.readline():
            sys.exit(3)
        run_steps(e, a.steps, a.steps)
        out["phase2"] = json.loads(json.dumps(truth))
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
