#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A PyTorch decode loop for make gpu-check: host-bound, as a small-batch
LLM decode step is. Each Engine.step() is

    schedule()   pure Python: pick requests, grow their lengths
    forward()    8 bf16 Linear + ReLU layers (cuBLAS: nvjet kernels through
                 cuLaunchKernelEx), or one CUDA graph replay of them (--graph)
    sample()     softmax + argmax, the token copied to the host (a sync)
    post()       one Triton kernel (driver launch) when triton is there

The victim is its own ground truth: each step's and each bucket call's
CLOCK_MONOTONIC window (time.monotonic_ns) and the thread that ran it go
to --truth as JSON, with the step count and what the run had (graph,
triton). --wait-stdin: warm up (Triton compile, graph capture, 20 steps),
print "victim_torch: pid N ready" and wait for a line on stdin before the
timed steps, so the caller can attach proftrace first. --phases K: K times
that many steps, each after a line on stdin, so one process can be timed
unattached, attached and detached again.

--device cpu runs the same loop without a GPU (float32, no graph, no
Triton), to test the harness where there is none; --pure runs it without
torch at all (lists of floats), to tell the interpreter's part of a cost
from torch's. The truth also has the main thread's getrusage over the timed
steps (user and system CPU, page faults, context switches).
"""
import argparse
import json
import os
import resource
import sys
import threading
import time
import types


def build_triton():
    try:
        import triton
        import triton.language as tl
    except Exception as e:  # absent or broken: the section says so
        return None, "triton: %s" % e

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = off < n
        tl.store(x_ptr + off, tl.load(x_ptr + off, mask=mask) + 1, mask=mask)

    def launch(x):
        add_one[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256)

    return launch, None


class Engine:
    def __init__(self, torch, dev, layers, width, batch, graph, triton_launch):
        self.torch = torch
        self.dev = dev
        dt = torch.bfloat16 if dev == "cuda" else torch.float32
        torch.manual_seed(0)
        self.layers = [torch.nn.Linear(width, width, device=dev, dtype=dt)
                       for _ in range(layers)]
        self.x = torch.randn(batch, width, device=dev, dtype=dt)
        self.lens = [16 + i for i in range(batch)]
        self.triton = triton_launch
        self.counter = torch.zeros(1024, device=dev, dtype=torch.float32)
        self.graph = None
        self.truth_calls = []  # (bucket, start_ns, end_ns)
        if graph:
            self.capture()

    def layers_fwd(self, h):
        for lin in self.layers:
            h = self.torch.relu(lin(h))
        return h

    def capture(self):
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.layers_fwd(self.x)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = self.layers_fwd(self.x)

    def schedule(self):
        t0 = time.monotonic_ns()
        picked = []
        for i, n in enumerate(self.lens):
            if (n + i) % 3 != 2:
                picked.append(i)
            self.lens[i] = n + 1 if n < 4096 else 16
        blocks = sum((self.lens[i] + 15) // 16 for i in picked)
        self.truth_calls.append(("host.schedule", t0, time.monotonic_ns()))
        return blocks

    def forward(self):
        t0 = time.monotonic_ns()
        if self.graph is not None:
            self.graph.replay()
            h = self.static_out
        else:
            h = self.layers_fwd(self.x)
        self.truth_calls.append(("model.forward", t0, time.monotonic_ns()))
        return h

    def sample(self, h):
        t0 = time.monotonic_ns()
        if self.torch is PureTorch:
            tok = max(range(len(h)), key=h.__getitem__)
            self.truth_calls.append(("model.sample", t0, time.monotonic_ns()))
            return tok
        p = self.torch.softmax(h.float(), dim=-1)
        tok = int(self.torch.argmax(p[0]).item())  # copy to the host: a sync
        self.truth_calls.append(("model.sample", t0, time.monotonic_ns()))
        return tok

    def post(self):
        t0 = time.monotonic_ns()
        self.triton(self.counter)
        self.truth_calls.append(("model.post", t0, time.monotonic_ns()))

    def step(self):
        self.schedule()
        h = self.forward()
        tok = self.sample(h)
        if self.triton:
            self.post()
        return tok


class PureLinear:
    """What --pure uses instead of torch.nn.Linear: a Python call per layer."""

    def __init__(self, width):
        self.w = [1.0 / (i + 1) for i in range(width)]

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        return [a * b for a, b in zip(x, self.w)]


class PureTorch:
    """The few torch calls Engine makes, in pure Python."""
    bfloat16 = float32 = None

    class nn:
        @staticmethod
        def Linear(width, _w2, device=None, dtype=None):
            return PureLinear(min(width, 64))

    @staticmethod
    def manual_seed(_):
        pass

    @staticmethod
    def randn(batch, width, device=None, dtype=None):
        return [0.5 - i / 128.0 for i in range(min(width, 64))]

    @staticmethod
    def zeros(n, device=None, dtype=None):
        return [0.0] * 8

    @staticmethod
    def relu(x):
        return [v if v > 0 else 0.0 for v in x]


def make_twin(eng):
    """The same engine under another class whose methods are copies of
    Engine's with new code objects named Twin.*: no py: probe names them,
    so a process attached with the probes on Engine runs both, the one
    probed and the one not, in alternation on the same CPU and memory."""
    cls = type("Twin", (), {})
    for name, f in vars(Engine).items():
        if isinstance(f, types.FunctionType):
            code = f.__code__
            code = code.replace(co_qualname="Twin." + name) if hasattr(
                code, "co_qualname") else code.replace(co_name="twin_" + name)
            setattr(cls, name, types.FunctionType(code, f.__globals__, name, f.__defaults__,
                                                  f.__closure__))
    twin = cls.__new__(cls)
    twin.__dict__.update(eng.__dict__)
    return twin


def rusage():
    r = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return {"utime_us": round(r.ru_utime * 1e6), "stime_us": round(r.ru_stime * 1e6),
            "minflt": r.ru_minflt, "majflt": r.ru_majflt, "nvcsw": r.ru_nvcsw,
            "nivcsw": r.ru_nivcsw}


CONF = """\
step   py:victim_torch.Engine.step
bucket host.schedule py:victim_torch.Engine.schedule
bucket model.forward py:victim_torch.Engine.forward
bucket model.sample  py:victim_torch.Engine.sample
bucket model.post    py:victim_torch.Engine.post
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--pure", action="store_true", help="no torch: pure Python layers")
    ap.add_argument("--wait-stdin", action="store_true")
    ap.add_argument("--twin", type=int, default=0,
                    help="alternate this many steps of Engine and of its unnamed twin "
                    "(steps of the twin are marked in the truth)")
    ap.add_argument("--phases", type=int, default=1,
                    help="run --steps steps this many times, each after a line on stdin "
                    "(\"victim_torch: phase N done\" after each but the last)")
    ap.add_argument("--truth", required=True)
    ap.add_argument("--print-conf", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.pure:
        torch, a.device = PureTorch, "pure"
    else:
        import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        print("victim_torch: no CUDA device", file=sys.stderr)
        return 2
    triton_launch, why = (None, "off") if (a.no_triton or a.device != "cuda") else \
        build_triton()
    if triton_launch:
        try:  # Triton builds its launcher with the host C compiler: that can fail
            triton_launch(torch.zeros(256, device="cuda"))
            torch.cuda.synchronize()
        except Exception as e:
            triton_launch, why = None, "triton: %s" % str(e).splitlines()[0][:100]
    eng = Engine(torch, a.device, a.layers, a.width, a.batch, a.graph and a.device == "cuda",
                 triton_launch)
    for _ in range(a.warmup):
        eng.step()
    if a.device == "cuda":
        torch.cuda.synchronize()
    version = "none (--pure)" if a.pure else torch.__version__
    print("victim_torch: pid %d ready (torch %s, graph %s, triton %s)" %
          (os.getpid(), version, eng.graph is not None,
           "on" if triton_launch else why), flush=True)
    eng.truth_calls = []
    twin = make_twin(eng) if a.twin else None
    steps, phases = [], []
    for ph in range(a.phases):
        if a.wait_stdin and not sys.stdin.readline():
            print("victim_torch: stdin closed before go", file=sys.stderr)
            return 1
        ru0 = rusage()
        for i in range(a.steps):
            e = twin if twin is not None and (i // a.twin) % 2 else eng
            t0 = time.monotonic_ns()
            e.step()
            steps.append((t0, time.monotonic_ns(), ph, e is twin))
        ru1 = rusage()
        phases.append({k: ru1[k] - ru0[k] for k in ru0})
        if ph + 1 < a.phases:
            print("victim_torch: phase %d done" % ph, flush=True)
    if a.device == "cuda":
        torch.cuda.synchronize()
    truth = {
        "clock": "CLOCK_MONOTONIC",
        "pid": os.getpid(),
        "tid": threading.get_native_id(),
        "torch": version,
        "device": torch.cuda.get_device_name(0) if a.device == "cuda" else a.device,
        "rusage": {k: sum(p[k] for p in phases) for k in phases[0]},
        "phase_rusage": phases,
        "graph": eng.graph is not None,
        "triton": bool(triton_launch),
        "triton_why": why,
        "layers": a.layers,
        "steps": [dict({"host_start_ns": s, "host_end_ns": e, "phase": p},
                       **({"twin": tw} if twin is not None else {}))
                  for s, e, p, tw in steps],
        "calls": [list(c) for c in eng.truth_calls],
    }
    with open(a.truth, "w") as f:
        json.dump(truth, f)
    print("victim_torch: done, %d steps" % a.steps, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
