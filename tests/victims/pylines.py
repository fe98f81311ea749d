# SPDX-License-Identifier: BSD-2-Clause
"""Per-line ground truth for proftrace's stack sampling (`lines` directives).

work() is a function whose lines take known, different amounts of wall
time per call; the victim measures every line itself and writes the truth
as JSON. tests/integration/test_sampling.py profiles it with
`lines py:pylines::work` on every CPython on the machine and compares.

Runs unchanged on CPython 3.8 to 3.13, standard library only.

Protocol with the test driver (as pyengine.py): print "ready <pid>", wait
for one line on stdin, run for --seconds, write the truth file, exit 0
(3 if stdin hits EOF before the line). With --hold, print "done" after
writing the truth and wait for one more line before exiting, so the driver
can stop proftrace while the process is still alive.

Options:
  --truth FILE      write the ground truth here
  --seconds S       how long the workers call work() after the go line
                    (default 4.0)
  --threads K       worker threads calling work() in a loop (default 1)
  --late-thread     one more worker, started by the main thread about 1 s
                    after go: a thread created after proftrace attached
  --calls N         instead of --seconds: each worker makes exactly N calls
  --no-sleeper      leave out the sleeping thread
  --wall-only       read no CPU clock (cpu() is int(): 0, no system call);
                    the truth's cpu_ns are then 0. For comparisons that need
                    only line times (line_profiler), see below on why
  --blocker         add a thread that blocks (Event.wait) from before
                    "ready" until the process exits, never waking
  --hold            see above

Threads (all but the late one exist before "ready", so they are alive for
the whole attach window; workers and the sleeper wait on an Event for go):
  main      after go: sleeps ~1 s (--late-thread: then starts it), then
            joins the workers: mostly idle, off the CPU
  worker-k  call work() until the deadline (or N times), then end; the
            calls go through functools.partial (C), so that the frame probe
            sees each one even where it sees only calls made from C
  sleeper   time.sleep(0.01) until the process exits: ~all off the CPU
  blocker   one Event.wait() until the process exits
  late      as a worker, from ~1 s after go to the deadline

Lines of work() (each tagged "# @NAME" at its end, so the line numbers are
found at run time by reading this file: edit freely, keep the tags):
  spin3   ~3 ms busy loop in work()'s own frame (no Python callee)
  spin1   ~1 ms busy loop in spin(), a callee
  helper  helper() -> inner() -> spin(): ~2 ms two calls down; the time
          of callees belongs to the calling line
  sleep   time.sleep(0.002): ~2 ms off the CPU
  cheap   one integer operation

Where the clock reads sit matters on a loaded machine: reading the CPU
clock is a system call, and the scheduler's accounting in it often ends
the thread's time slice, so the thread tends to be preempted right there.
Every tagged line therefore ends with its own reads, CPU clock first and
wall clock last ("...; c = cpu(); t = now()"), and the next line's
interval starts at that wall read: a preemption in cpu() lies inside the
wall interval of the very line proftrace sees the thread on. The in-frame
loop's last now() read is its end; the CPU read of its end is the first
statement of the spin1 line (so a preemption in it counts on the spin1
line, in both). Only the first line (c0, t0) lies outside every tagged
line (and a preemption in its cpu() call outside work()'s truth total);
then one _book() call per work() call. The price: the preemptions that
collect in cpu() lengthen the line after a long spin on a busy machine
(the 1 ms spin line can take as long as the 2 ms helper line), so the
ranking of lines depends on the load; --wall-only keeps it.

Ground truth: each tagged line's wall time (time.perf_counter_ns, the
CLOCK_MONOTONIC of proftrace's BPF timestamps) and CPU time
(time.thread_time_ns, the thread's CLOCK_THREAD_CPUTIME_ID, which is what
the cpu-clock perf event counts) are read where each tagged line ends
(above) and summed over all calls and threads. So the truth is what
really happened on this (possibly loaded) machine: a spin line that waited
for a CPU or for the GIL has that time as wall but not as CPU time, and so
should it have in proftrace.

Truth JSON:
  python, pid, seconds, threads (workers, without late), late_thread,
  file (this file's absolute path), function "work",
  first_line (work's def line), last_line (its last non-blank line),
  work: {calls, wall_ns, cpu_ns}  all threads; per call from its first
        clock read to its last
  lines: {NAME: {line, text, wall_ns, cpu_ns}} for the tagged lines
  per_thread: {main, sleeper, blocker, worker-K, late: {tid, start_unix_ns,
        end_unix_ns}}: native thread id and CLOCK_REALTIME (time.time_ns)
        when the thread began and ended its Python function (end null:
        alive at exit); workers also {calls, wall_ns, cpu_ns} of work()
  run_ns: from go to the end of the last worker

In process (e.g. under line_profiler): import pylines; pylines.run(...)
returns the same truth as a dict.
"""
import argparse
import functools
import inspect
import json
import os
import sys
import threading
import time

now = time.perf_counter_ns
cpu = time.thread_time_ns

SPIN3_NS = 3000000
SPIN1_NS = 1000000
HELPER_NS = 2000000
SLEEP_S = 0.002
# Each turn of the in-frame loop sums these in C (15-30 us): a loop of few,
# longer turns. line_profiler leaves its own work out of the time it gives
# a line, which in a tracer costs more than a bare "pass" turn (it gave a
# 3 ms loop of "pass" turns under 2 ms); here its share is small.
CHUNK = range(2000)

TAGS = ("spin3", "spin1", "helper", "sleep", "cheap")

_lock = threading.Lock()
_books = []  # one per thread: [calls, work_wall, work_cpu, [wall x5], [cpu x5]]
_tls = threading.local()


def spin(ns):
    """Busy-loop for ns nanoseconds of wall time."""
    end = now() + ns
    while now() < end:
        pass


def inner():
    spin(HELPER_NS)


def helper():
    inner()


def _book(t0, c0, t1, c1, t2, c2, t3, c3, t4, c4, t5, c5):
    """Book one call of work(): per line, and the whole."""
    b = getattr(_tls, "book", None)
    if b is None:
        b = _tls.book = [0, 0, 0, [0] * 5, [0] * 5]
        with _lock:
            _books.append(b)
    b[0] += 1
    b[1] += t5 - t0
    b[2] += c5 - c0
    w, c = b[3], b[4]
    w[0] += t1 - t0
    c[0] += c1 - c0
    w[1] += t2 - t1
    c[1] += c2 - c1
    w[2] += t3 - t2
    c[2] += c3 - c2
    w[3] += t4 - t3
    c[3] += c4 - c3
    w[4] += t5 - t4
    c[4] += c5 - c4


def work():
    c0 = cpu(); t0 = now(); e = t0 + SPIN3_NS  # noqa: E702
    while (t1 := now()) < e: sum(CHUNK)  # noqa: E701  # @spin3
    c1 = cpu(); spin(SPIN1_NS); c2 = cpu(); t2 = now()  # noqa: E702  # @spin1
    helper(); c3 = cpu(); t3 = now()  # noqa: E702  # @helper
    time.sleep(SLEEP_S); c4 = cpu(); t4 = now()  # noqa: E702  # @sleep
    x = t4 ^ c4; c5 = cpu(); t5 = now()  # noqa: E702  # @cheap
    _book(t0, c0, t1, c1, t2, c2, t3, c3, t4, c4, t5, c5)
    return x


# Workers call work() through this C callable: then every call enters
# _PyEval_EvalFrameDefault from C, so the frame probe counts all of them
# even where it sees only calls made from C (3.11, 3.12+ without the perf
# trampoline: timing "c-entry-only"). The Python stack is the same.
call_work = functools.partial(work)


def wall_only():
    """--wall-only: work() reads no CPU clock (int() returns 0)."""
    global cpu
    cpu = int


def line_numbers():
    """{tag: (line, text)} for work()'s tagged lines, and its first/last line."""
    src, first = inspect.getsourcelines(work)
    tags = {}
    for k, text in enumerate(src):
        text = text.rstrip("\n")
        for tag in TAGS:
            if text.endswith("# @" + tag):
                tags[tag] = (first + k, text)
    missing = [t for t in TAGS if t not in tags]
    if missing:
        raise SystemExit("pylines: untagged lines in work(): %s" % missing)
    last = first + len(src) - 1
    while not src[last - first].strip():
        last -= 1
    return tags, first, last


def _thread_entry(name):
    """This thread's row of the truth: tid and realtime start (CLOCK_REALTIME,
    the clock of summary.json's meta.start_unix_ns)."""
    st = {"tid": threading.get_native_id(), "start_unix_ns": time.time_ns(),
          "end_unix_ns": None}
    with _lock:
        threads_truth[name] = st
    return st


def worker(name, go, deadline, calls):
    st = _thread_entry(name)
    go.wait()
    n = 0
    if calls is not None:
        while n < calls:
            call_work()
            n += 1
    else:
        while now() < deadline[0]:
            call_work()
            n += 1
    b = _tls.book if n else [0, 0, 0]
    st.update(calls=b[0], wall_ns=b[1], cpu_ns=b[2])
    st["end_unix_ns"] = time.time_ns()


def sleeper(go):
    """Only sleeps, until the process exits."""
    _thread_entry("sleeper")
    go.wait()
    while True:
        time.sleep(0.01)


def blocker():
    """Blocks from before "ready" until the process exits, never waking."""
    _thread_entry("blocker")
    threading.Event().wait()


threads_truth = {}  # thread name -> {tid, start_unix_ns, end_unix_ns[, calls, wall_ns, cpu_ns]}


USAGE = ("%(prog)s [--truth FILE] [--seconds S] [--threads K] [--late-thread] [--calls N] "
         "[--no-sleeper] [--wall-only] [--blocker] [--hold]")


def run(seconds=4.0, nthreads=1, late=False, calls=None, with_sleeper=True, with_blocker=False,
        on_ready=None):
    """Start the threads, call on_ready() (the protocol: False means stop),
    run, return the truth (None when on_ready said stop)."""
    tags, first, last = line_numbers()
    _thread_entry("main")
    go = threading.Event()
    deadline = [0]
    # daemon: a driver that never says go must not leave the process hanging
    workers = [threading.Thread(target=worker, name="worker-%d" % k,
                                args=("worker-%d" % k, go, deadline, calls), daemon=True)
               for k in range(nthreads)]
    others = []
    if with_sleeper:
        others.append(threading.Thread(target=sleeper, name="sleeper", args=(go,), daemon=True))
    if with_blocker:
        others.append(threading.Thread(target=blocker, name="blocker", daemon=True))
    for th in workers + others:
        th.start()
    while len(threads_truth) < 1 + len(workers) + len(others):  # all have their tid
        time.sleep(0.001)
    if on_ready and not on_ready():
        return None
    go_ns = now()
    deadline[0] = go_ns + int(seconds * 1e9)
    go.set()
    if late:
        time.sleep(1.0)
        lt = threading.Thread(target=worker, name="late", args=("late", go, deadline, calls),
                              daemon=True)
        lt.start()
        workers.append(lt)
    for th in workers:
        th.join()
    end_ns = now()

    with _lock:
        books = list(_books)
    lines = {}
    for k, tag in enumerate(TAGS):
        lines[tag] = {"line": tags[tag][0], "text": tags[tag][1],
                      "wall_ns": sum(b[3][k] for b in books),
                      "cpu_ns": sum(b[4][k] for b in books)}
    return {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "pid": os.getpid(),
        "seconds": seconds,
        "threads": nthreads,
        "late_thread": late,
        "file": os.path.abspath(__file__),
        "function": "work",
        "first_line": first,
        "last_line": last,
        "work": {"calls": sum(b[0] for b in books), "wall_ns": sum(b[1] for b in books),
                 "cpu_ns": sum(b[2] for b in books)},
        "lines": lines,
        "per_thread": dict(threads_truth),
        "run_ns": end_ns - go_ns,
    }


def main(argv):
    ap = argparse.ArgumentParser(usage=USAGE, add_help=False)
    ap.add_argument("--truth")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int)
    ap.add_argument("--late-thread", action="store_true")
    ap.add_argument("--no-sleeper", action="store_true")
    ap.add_argument("--wall-only", action="store_true")
    ap.add_argument("--blocker", action="store_true")
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args(argv)  # bad usage: exit 2
    if a.seconds < 0 or not 1 <= a.threads <= 64 or (a.calls is not None and a.calls < 0):
        ap.error("out of range")
    if a.wall_only:
        wall_only()
    truth_path, hold = a.truth, a.hold

    def ready():
        sys.stdout.write("ready %d\n" % os.getpid())
        sys.stdout.flush()
        return bool(sys.stdin.readline())

    truth = run(a.seconds, a.threads, a.late_thread, a.calls, not a.no_sleeper, a.blocker,
                ready)
    if truth is None:
        return 3
    if truth_path:
        with open(truth_path, "w") as f:
            json.dump(truth, f, indent=1)
            f.write("\n")
    if hold:
        sys.stdout.write("done\n")
        sys.stdout.flush()
        if not sys.stdin.readline():
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
