# SPDX-License-Identifier: BSD-2-Clause
"""A small PyTorch model's forward in a loop, for mixed native/Python
stacks through libtorch (tests/integration/test_mixed_stacks.py).

For Debian 12's /usr/bin/python3.11 with python3-torch (1.13, CPU). Exits
4 with "skip: ..." on stdout, before "ready", where torch cannot be
imported.

The model: Sequential of Linear(512, 512), ReLU, Linear(512, 512), ReLU,
Linear(512, 512) on a batch of 64, under torch.no_grad(), one intra-op
thread (torch.set_num_threads(1)): every forward runs in the main thread,
so its stacks are the main thread's. Each step is one model(x) call from
step(), timed around the call.

Protocol (as pymixed.py): print "ready <pid>", wait for one line ("go"),
run --steps steps, write the truth file, exit 0; --hold: print "done"
after the truth and wait for one more line.

Truth JSON: python_version, torch, pid, tid, steps, wall_ns and cpu_ns
(go to the last step's end), forward {calls, wall_ns, cpu_ns}: summed
over the model(x) calls, time.perf_counter_ns around each one and
time.thread_time_ns (the cpu-clock perf event's clock) outside that.
"""
import argparse
import os
import sys
import threading
import time

import victimio

now = time.perf_counter_ns
cpu = time.thread_time_ns


def build(torch, width, depth):
    layers = []
    for i in range(depth):
        layers.append(torch.nn.Linear(width, width))
        if i < depth - 1:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).eval()


def step(model, x, fw):
    c0 = cpu()
    t0 = now()
    y = model(x)
    t1 = now()
    fw["cpu_ns"] += cpu() - c0
    fw["wall_ns"] += t1 - t0
    fw["calls"] += 1
    return y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install's OSError
        sys.stdout.write("skip: torch not importable by %s: %s\n" % (sys.executable, e))
        sys.stdout.flush()
        return 4
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build(torch, a.width, a.depth)
    x = torch.randn(a.batch, a.width)
    fw = {"calls": 0, "wall_ns": 0, "cpu_ns": 0}
    with torch.no_grad():
        for _ in range(3):  # warm: first calls allocate and pick kernels
            model(x)
        if not victimio.ready():
            return 3
        c0 = cpu()
        t0 = now()
        for _ in range(a.steps):
            step(model, x, fw)
        wall, cpu_ns = now() - t0, cpu() - c0
    t = {"python_version": sys.version.split()[0], "executable": sys.executable,
         "torch": torch.__version__, "pid": os.getpid(), "tid": threading.get_native_id(),
         "steps": a.steps, "wall_ns": wall, "cpu_ns": cpu_ns, "forward": fw,
         "model": {"width": a.width, "depth": a.depth, "batch": a.batch}}
    return victimio.finish(a.truth, t, a.hold)


if __name__ == "__main__":
    sys.exit(main())
