# SPDX-License-Identifier: BSD-2-Clause
"""Helpers of the fake engines: ground truth, busy-spin, the native calls
they make, and the pipes between their processes.

Ground truth: every function of a fake engine that a bundled config names
is decorated with @timed and runs its body inside `with inside():`, which
record the call (module, qualified name, thread, start and end on
CLOCK_MONOTONIC measured around the call and inside it, and the timed
calls it is nested in). A test turns these records into the figures
proftrace must report: calls, per-function totals, steps (call or
iteration), bucket totals (outermost calls inside counted steps), each
time between the inside and the around sums.

hook("sync") stands for the host waiting on the GPU (cudaStreamSynchronize
of the CUDA runtime given with --cudart), hook("comm") for a collective
(ncclGroupStart + ncclGroupEnd of the libnccl given with --nccl); without
those libraries a hook does nothing. Each hook call (thread, time) goes to
the truth file.
"""
import ctypes
import functools
import json
import os
import sys
import threading
import time

_libs = {}
hooks = {}  # "sync"/"comm" -> [[tid, thread name, CLOCK_MONOTONIC ns], ...]
records = []  # [module, qualname, tid, thread name, around t0, t1, inside t0, t1, parents]
_tls = threading.local()
US = 1000


def load(cudart=None, nccl=None):
    if cudart:
        _libs["sync"] = ctypes.CDLL(cudart)
    if nccl:
        _libs["comm"] = ctypes.CDLL(nccl)


def hook(what):
    lib = _libs.get(what)
    if lib is None:
        return
    th = threading.current_thread()
    hooks.setdefault(what, []).append([th.ident, th.name, time.monotonic_ns()])
    if what == "sync":
        lib.cudaStreamSynchronize(None)  # no GPU: an error code, still a call
    else:
        lib.ncclGroupStart()
        lib.ncclGroupEnd()


def spin(us):
    """Stands for `us` microseconds of work. A sleep, not a busy loop: the
    engine's processes and threads share the test machine's few CPUs, and
    busy ones would preempt each other, also between proftrace's probe and
    the fake's own clock read, which the truth cannot account for."""
    time.sleep(us * 1e-6)


class _Frame:
    __slots__ = ("key", "a0", "i0", "i1")

    def __init__(self, key):
        self.key = key
        self.i0 = self.i1 = None


def _stack():
    stack = getattr(_tls, "stack", None)
    if stack is None:
        stack = _tls.stack = []
    return stack


def _record(frame, a1, stack):
    th = threading.current_thread()
    records.append([frame.key[0], frame.key[1], th.ident, th.name, frame.a0, a1,
                    frame.i0, frame.i1, ["%s:%s" % f.key for f in stack]])


def timed(fn):
    """Decorator of every fake function a bundled config names: records
    each call, measured around it (the decorator's wrapper, a code object
    no probe names) and, with `with inside():` as the function's first
    statement, inside it. proftrace's interval for the call lies between
    the two, on a busy machine too."""
    key = (fn.__module__, fn.__qualname__)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        stack = _stack()
        frame = _Frame(key)
        stack.append(frame)
        frame.a0 = time.monotonic_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            a1 = time.monotonic_ns()
            stack.pop()
            _record(frame, a1, stack)
    return wrapper


class inside:
    __slots__ = ("frame",)

    def __enter__(self):
        self.frame = _tls.stack[-1]
        self.frame.i0 = time.monotonic_ns()
        return self

    def __exit__(self, *exc):
        self.frame.i1 = time.monotonic_ns()
        return False


class around:
    """`with around("module", "Class.method"):` around a call of a function
    that is not the fake's own (the standard library's Future.result):
    recorded measured around the call only; enabled=False records nothing."""
    __slots__ = ("frame", "enabled")

    def __init__(self, module, qualname, enabled=True):
        self.frame = _Frame((module, qualname))
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            _stack().append(self.frame)
            self.frame.a0 = time.monotonic_ns()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            a1 = time.monotonic_ns()
            stack = _stack()
            stack.pop()
            _record(self.frame, a1, stack)
        return False


def truth(role, rank=None, extra=None):
    """This process's truth: its calls, hooks and whatever the engine adds."""
    out = {"pid": os.getpid(), "role": role, "rank": rank,
           "python": sys.version.split()[0], "calls": records, "hooks": hooks}
    out.update(extra or {})
    return out


# --- processes ---------------------------------------------------------------
# The fake engines run as the real ones do, in several processes (an API
# server or launcher, an engine core or scheduler per rank, workers, a
# detokenizer). Each is this interpreter re-executed with the same
# environment (so with the agent preloaded, as `eval "$(proftrace env)"`
# leaves it), started before proftrace attaches and told to go with the
# others. Messages are JSON lines on the child's stdin/stdout.

class Child:
    def __init__(self, role, args, env=None):
        import subprocess
        here = os.path.dirname(os.path.abspath(__file__))
        argv = [sys.executable, os.path.join(here, "run_engines.py")] + args + ["--role", role]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=dict(os.environ, **(env or {})))
        self.role = role
        self.pids = [int(x) for x in self.recv()["ready"]]

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def recv(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("%s exited early" % self.role)
        return json.loads(line)

    def wait(self):
        """Its last message (its truth, and its children's), then its exit."""
        msg = self.recv()
        rc = self.p.wait()
        if rc:
            raise RuntimeError("%s exited %d" % (self.role, rc))
        return msg["truth"]


class Parent:
    """The child's side: stdin/stdout of the process are the channel
    (several threads may send)."""

    def __init__(self):
        self.out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
        sys.stdout = sys.stderr  # nothing else may write on the channel
        self.lock = threading.Lock()

    def send(self, msg):
        with self.lock:
            self.out.write(json.dumps(msg) + "\n")
            self.out.flush()

    def recv(self):
        line = sys.stdin.readline()
        if not line:
            raise SystemExit(3)
        return json.loads(line)
