# SPDX-License-Identifier: BSD-2-Clause
"""The GPU stream of a server in a container (issue 18, part 2).

victim_gpu_synth runs in a new PID namespace (`unshare --pid --fork`) with
a mount namespace and a /dev/shm of its own, as in a container: it is pid
1 there, publishes 1 as its shim_pid, and its CUDA API records carry the
thread ids it sees. Its segment is a sealed memfd it keeps open, in no
/dev/shm at all (neither its own nor the host's): proftrace must find it
among the process's open files (/proc/PID/fd), take it for the process's
own (shim_pid 1 against the last NSpid field, not a parent's held across
fork), map every thread id to the host's through NSpid and join each
launch to its step exactly, also for threads started after attach
(--threads: each chunk of steps on a new thread).
"""
import json
import os
import shutil
import tempfile
import time

from harness import PROFTRACE, Proc, Skip, VICTIMS, eq, proftrace_done, read_run, stop, write_conf
from test_gpu import CONF, close


def host_pid_of(unshare_pid, timeout=10.0):
    """The victim: the child unshare forked into the new namespace."""
    deadline = time.monotonic() + timeout
    path = "/proc/%d/task/%d/children" % (unshare_pid, unshare_pid)
    while time.monotonic() < deadline:
        with open(path) as f:
            kids = f.read().split()
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    raise AssertionError("unshare has no child")


def shm_names(root=""):
    """Our helpers' old names in a /dev/shm (root: the process's view)."""
    try:
        return {n for n in os.listdir(root + "/dev/shm") if n.startswith("proftrace")}
    except FileNotFoundError:
        return set()


def fd_links(pid):
    links = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            links.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass
    return links


def run_in_namespace(n, threads):
    if not shutil.which("unshare"):
        raise Skip("no unshare(1)")
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, CONF)
    out = os.path.join(tmp, "out")
    truth = os.path.join(tmp, "truth.json")
    synth = os.path.join(VICTIMS, "victim_gpu_synth")
    inner = "mount -t tmpfs pt-shm /dev/shm && exec %s --truth %s --steps %d --threads %d" % (
        synth, truth, n, threads)
    v = Proc(["unshare", "--pid", "--fork", "--mount", "--propagation", "private",
              "sh", "-c", inner])
    pt = None
    host_shm = shm_names()
    try:
        line = v.wait_line("ready ")
        eq(int(line.split()[1]), 1, "the victim is pid 1 in its namespace")
        pid = host_pid_of(v.p.pid)
        eq(fd_links(pid).count("/memfd:proftrace-gpu (deleted)"), 1, "the victim's memfd")
        eq(shm_names("/proc/%d/root" % pid), set(), "segment in the victim's /dev/shm")
        eq(shm_names() - host_shm, set(), "segment in the host's /dev/shm")
        pt = Proc([PROFTRACE, "-p", str(pid), "--targets", conf, "-o", out, "--trace",
                   "--gpu", "on"], stdin=False, stdout=True, stderr=True)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        assert v.wait(60) == 0, "victim failed"
        err = proftrace_done(pt)
    finally:
        stop(v, pt)
    s, t = read_run(out, truth)
    with open(os.path.join(out, "trace.json")) as f:
        tr = json.load(f)["traceEvents"]
    return pid, s, t, tr


def check_join(s, t, n):
    g = s["gpu"]
    eq(g["source"], "cupti-shim", "source")
    eq((g["kernels"], g["copies"], g["api_calls"]), (4 * n, n, t["api"]), "records")
    eq((g["unmatched"], g["outside_steps"]), (0, 0), "unmatched, outside steps")
    st = g["steps"]
    eq((st["steps"], st["steps_with_gpu"], st["work_launched"]), (n, n, 5 * n), "steps")
    close(st["busy_ms"], n * t["busy_ns_per_step"] / 1e6, "busy ms in steps")
    gb = {b["name"]: b for b in g["buckets"]}
    eq(gb["engine.forward"]["work_launched"], 4 * n, "kernels launched in engine.forward")
    eq(gb["engine.schedule"]["work_launched"], n, "copies launched in engine.schedule")
    eq(g["launch_delay"]["count"], 4 * n, "launch delays")
    close(g["launch_delay"]["max_ms"], 0.01, "launch delay max")
    ns = g["pid_namespace"]
    eq((ns["other"], ns["ns_pid"]), (True, 1), "another PID namespace, pid 1 there")
    eq((ns["api_records_mapped"], ns["api_records_unmapped"]), (t["api"], 0), "tids mapped")


def test_gpu_join_in_pid_namespace():
    n = 120
    pid, s, t, tr = run_in_namespace(n, 0)
    eq(t["pid"], 1, "the victim's own pid")
    check_join(s, t, n)
    # the CUDA API calls are on the host thread's track, under the host pid
    api_tids = {e["tid"] for e in tr if e.get("cat") == "cuda_api"}
    eq(api_tids, {2000000000 + pid}, "CUDA API track of the host thread")


def test_gpu_join_in_pid_namespace_new_threads():
    """Each chunk of steps on a thread started after attach: the map is
    refreshed as they come, and keeps those that went."""
    n, k = 120, 4
    pid, s, t, tr = run_in_namespace(n, k)
    eq(len(t["thread_tids"]), k, "threads")
    check_join(s, t, n)
    eq(s["gpu"]["pid_namespace"]["threads_mapped"] >= k + 1, True, "threads mapped")
    api_tids = {e["tid"] - 2000000000 for e in tr if e.get("cat") == "cuda_api"}
    step_tids = {e["tid"] - 1000000000 for e in tr if e.get("cat") == "step"}
    eq(len(api_tids), k, "one CUDA API track per thread")
    eq(api_tids, step_tids, "CUDA calls on the threads that ran the steps")
    assert not api_tids & set(t["thread_tids"]) or all(x > 1000 for x in api_tids), api_tids
