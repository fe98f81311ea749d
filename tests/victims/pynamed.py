# SPDX-License-Identifier: BSD-2-Clause
"""Named Python threads with known on-CPU and off-CPU time, for the flame
graphs' thread roots and their two views (on-CPU flame.svg, wall-time
flame-wall.svg): tests/integration/test_flame_threads.py.

Runs unchanged on CPython 3.8 to 3.14, standard library only.

Protocol (as pylines.py --hold): print "ready <pid>", wait for one line
on stdin ("go"), run for --seconds, write the truth file, print "done",
wait for one more line, exit 0.

Threads, all started before "ready" and alive until exit (each waits for
go, runs its part until the deadline, then waits for exit):
  MainThread      waits for the deadline: off the CPU
  bg-worker       threading.Thread(name="bg-worker"): cycles of a ~6 ms
                  busy loop and a 4 ms sleep, mostly on the CPU
  asyncio_0       the one worker of ThreadPoolExecutor(thread_name_prefix=
                  "asyncio"), named as asyncio's default executor names its
                  threads: cycles of a ~1 ms busy loop and a 9 ms sleep
  Δ-poller-with-a-long-name
                  a Thread subclass (a type of its own), its name not
                  ASCII and longer than a comm (15 bytes): blocked in a
                  pipe read from go to the deadline, off the CPU

And one thread without Python, started at go: a pthread of libc's own
whose start routine is sleep(1) (through ctypes, so no Python code and no
thread state are ever in it): off the CPU for a second, then gone. Its
time off the CPU is no host time of the program's; proftrace counts its
switch-out (meta.sampling.off_cpu_not_python) and gives it no row. The
truth's "native_sleeper" says whether it was started (false where ctypes
cannot).

Truth JSON: python, pid, seconds, per_thread: {name: {tid (its
native_id, the OS thread id, in the process's own PID namespace), cpu_ns
(time.thread_time_ns from go to the deadline, the thread's
CLOCK_THREAD_CPUTIME_ID, which the cpu-clock perf event counts), wall_ns
(the same span on time.perf_counter_ns), calls (of spin_until)}}.
"""
import argparse
import concurrent.futures
import ctypes
import json
import os
import sys
import threading
import time

now = time.perf_counter_ns
cpu = time.thread_time_ns
truth = {}
lock = threading.Lock()
go = threading.Event()
end = threading.Event()  # exit: every thread returns
deadline = [0]


def book(name, t0, c0, calls=0):
    row = {"tid": threading.get_native_id(), "cpu_ns": cpu() - c0, "wall_ns": now() - t0,
           "calls": calls}
    with lock:
        truth[name] = row


def spin_until(t):
    x = 0
    while now() < t:
        x += 1
    return x


def cycles(name, busy_ms, idle_ms):
    go.wait()
    t0, c0 = now(), cpu()
    calls = 0
    while now() < deadline[0]:
        spin_until(min(now() + busy_ms * 1000000, deadline[0]))
        calls += 1
        if now() < deadline[0]:
            time.sleep(idle_ms / 1000.0)
    book(name, t0, c0, calls)
    end.wait()


class Poller(threading.Thread):
    def __init__(self, rfd):
        threading.Thread.__init__(self, name="Δ-poller-with-a-long-name")
        self.rfd = rfd

    def run(self):
        go.wait()
        t0, c0 = now(), cpu()
        os.read(self.rfd, 1)  # until the main thread writes at the deadline
        book(self.name, t0, c0)
        end.wait()


def native_sleeper():
    """A libc thread running sleep(1) and nothing else; its pthread_t, or
    None where it cannot be made."""
    try:
        libc = ctypes.CDLL(None)
        t = ctypes.c_ulong()
        start = ctypes.cast(libc.sleep, ctypes.c_void_p)
        if libc.pthread_create(ctypes.byref(t), None, start, ctypes.c_void_p(1)):
            return None
        return t
    except (OSError, AttributeError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    rfd, wfd = os.pipe()
    bg = threading.Thread(target=cycles, args=("bg-worker", 6, 4), name="bg-worker")
    bg.start()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="asyncio")
    fut = pool.submit(cycles, "asyncio_0", 1, 9)
    poller = Poller(rfd)
    poller.start()
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        return 3
    deadline[0] = now() + int(a.seconds * 1e9)
    t0, c0 = now(), cpu()
    go.set()
    sleeper = native_sleeper()
    time.sleep(max(0.0, (deadline[0] - now()) / 1e9))
    os.write(wfd, b"x")
    book("MainThread", t0, c0)
    while True:
        with lock:
            if len(truth) == 4:
                break
        time.sleep(0.01)
    with open(a.truth, "w") as f:
        json.dump({"python": sys.version.split()[0], "pid": os.getpid(),
                   "seconds": a.seconds, "per_thread": truth,
                   "native_sleeper": sleeper is not None}, f, indent=1, ensure_ascii=False)
    print("done", flush=True)
    sys.stdin.readline()
    end.set()
    bg.join()
    poller.join()
    if sleeper is not None:
        ctypes.CDLL(None).pthread_join(sleeper, None)
    fut.result()
    pool.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
