# SPDX-License-Identifier: BSD-2-Clause
"""Several processes at once: -p PID,PID and --children (issue 6).

victim_ranks starts worker processes (RANK, LOCAL_RANK in their
environment) that run steps in lockstep; each writes its own truth: steps,
per-function totals, every step's duration. Rank r's compute spins
1 ms + r * 0.4 ms + (i % 4) * 0.1 ms, so the skew across ranks is known
step by step.
"""
import json
import os
import tempfile

from harness import (CLOCK_SLACK_NS, PROFTRACE, Proc, bucket, eq, proftrace_done, run_proftrace,
                     stop, victim, within, write_conf)

CONF = """\
step   native:exe:rank_step
bucket engine.forward native:exe:rank_compute
bucket comm.sync      native:exe:rank_comm
"""


def _start(tmp, *args):
    truth = os.path.join(tmp, "truth")
    v = victim("victim_ranks", "--truth", truth, *args)
    workers = [int(x) for x in v.wait_line("pids ").split()[1:]]
    return v, truth, workers


def _truth(truth, rank):
    with open("%s.%d" % (truth, rank)) as f:
        return json.load(f)


def _run(pid_arg, extra, args, attached):
    """Start the victim, attach to what pid_arg(launcher, workers) names,
    wait for `attached` 'attached' lines, go; returns (summary, truth
    path, workers, proftrace stderr, the victim)."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, CONF)
    out = os.path.join(tmp, "out")
    v, truth, workers = _start(tmp, *args)
    pt = None
    try:
        pt = Proc([PROFTRACE, "-p", pid_arg(v.pid, workers), "--targets", conf, "-o", out] +
                  list(extra), stdin=False, stdout=True, stderr=True)
        for _ in range(attached):
            pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        late = None
        if "--late" in args:
            late = int(v.wait_line("late ").split()[1])
        assert v.wait(120) == 0, "victim failed"
        err = proftrace_done(pt)
    finally:
        stop(v, pt)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    s["_out"] = out
    return s, truth, workers, late, err


def _section(s, pid):
    rows = [p for p in s["processes"] if p["meta"]["pid"] == pid]
    assert len(rows) == 1, "want one section for pid %d, got %d" % (pid, len(rows))
    return rows[0]


def _fn(doc, symbol):
    rows = [f for f in doc["functions"] if f["symbol"] == symbol]
    assert len(rows) == 1, "want one row for %s, got %d" % (symbol, len(rows))
    return rows[0]


def _check_proc(p, t, what):
    """A process's section against its own truth: exact counts, times
    inside the victim's bracket."""
    n = t["steps"]
    eq(p["stats"]["steps"], n, what + " steps")
    within(p["stats"]["time_ms"], t["rank_step"], n, what + " step time")
    eq(bucket(p, "engine.forward")["calls"], n, what + " forward calls")
    within(bucket(p, "engine.forward")["total_ms"], t["rank_compute"], n, what + " forward time")
    eq(bucket(p, "comm.sync")["calls"], n, what + " comm calls")
    for sym in ("rank_step", "rank_compute", "rank_comm"):
        eq(_fn(p, sym)["calls"], t[sym]["calls"], "%s %s calls" % (what, sym))
        within(_fn(p, sym)["total_ms"], t[sym], t[sym]["calls"], "%s %s time" % (what, sym))


def test_two_processes_exact_and_skew():
    n = 150
    s, truth, workers, _, _ = _run(lambda launcher, w: ",".join(map(str, w)), ["--trace"],
                                   ["--ranks", 2, "--steps", n], 2)
    t = [_truth(truth, r) for r in range(2)]
    eq(s["meta"]["pids"], workers, "meta.pids")
    eq(len(s["processes"]), 2, "sections")
    for r in range(2):
        p = _section(s, workers[r])
        eq(p["meta"]["rank"], r, "rank from RANK")
        eq(p["meta"]["local_rank"], r, "local rank from LOCAL_RANK")
        eq(p["meta"]["ended"], "exited", "ended")
        assert "processes" not in p and "skew" not in p, "a section holds no sections"
        assert "dropped_events" not in p["health"], "object-wide counters only at the top"
        _check_proc(p, t[r], "rank %d" % r)
    # merged: the two processes pooled, functions matched by symbol
    eq(s["stats"]["steps"], 2 * n, "merged steps")
    within(s["stats"]["time_ms"], {k: t[0]["rank_step"][k] + t[1]["rank_step"][k]
                                   for k in ("total_ns", "outer_ns")}, 2 * n, "merged step time")
    for sym in ("rank_step", "rank_compute", "rank_comm"):
        eq(_fn(s, sym)["calls"], t[0][sym]["calls"] + t[1][sym]["calls"], "merged " + sym)
    eq(bucket(s, "engine.forward")["calls"], 2 * n, "merged forward calls")

    # trace.json: each process's slices and steps under its own pid (the
    # workers are single-threaded: tid == pid), one named process each
    with open(os.path.join(s["_out"], "trace.json")) as f:
        tr = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in tr
             if e["ph"] == "M" and e["name"] == "process_name"}
    for r in range(2):
        eq(names.get(workers[r]), "exe rank %d" % r, "trace process name")
        calls = [e for e in tr if e["ph"] == "X" and e["pid"] == workers[r] and e.get("cat") == "native"]
        assert all(e["tid"] == workers[r] for e in calls), "slices on the process's thread"
        eq(len(calls), sum(t[r][f]["calls"] for f in ("rank_step", "rank_compute", "rank_comm")),
           "rank %d slices" % r)
        eq(len([e for e in tr if e["ph"] == "X" and e["pid"] == workers[r] and
                e.get("cat") == "step"]), n, "rank %d step slices" % r)

    # skew: rank 1 is the slower by ~0.4 ms. Steps are compared where
    # they line up in time (overlap for half the shorter one): by the
    # victim's own step intervals, all but the odd first step, whose start
    # can lag (a thread's first probe hit maps the uprobe trampoline).
    # Each of proftrace's step times lies in the victim's [inside, around]
    # bracket, so its skew is within the two brackets' widths of the
    # victim's own |d0 - d1|.
    k = s["skew"]
    eq(k["processes"], 2, "skew processes")

    def lines_up(i):
        a0, a1 = t[0]["step_t0"][i], t[0]["step_t0"][i] + t[0]["step_ns"][i]
        b0, b1 = t[1]["step_t0"][i], t[1]["step_t0"][i] + t[1]["step_ns"][i]
        return 2 * max(0, min(a1, b1) - max(a0, b0)) >= min(a1 - a0, b1 - b0)
    S = [i for i in range(n) if lines_up(i)]
    eq(k["steps_compared"] + k["steps_not_compared"] if k["steps_compared"] else n, n,
       "steps compared or not")
    # a loaded machine can delay one rank's start (2 CPUs, 4 processes):
    # then the victim itself is not in lockstep, and proftrace must say so
    if len(S) < 0.9 * n - 2:
        eq(k["steps_compared"], 0, "no figures when the victim's steps do not line up "
           "(%d of %d do)" % (len(S), n))
        assert k["why"], "why no figures"
        return
    if len(S) <= 0.9 * n + 2:
        return  # at the threshold: proftrace's intervals may fall either side
    assert abs(k["steps_compared"] - len(S)) <= 1, \
        "steps compared %d, the victim's line up %d" % (k["steps_compared"], len(S))
    true = [abs(t[0]["step_ns"][i] - t[1]["step_ns"][i]) for i in S]
    eps = [(t[0]["step_outer_ns"][i] - t[0]["step_ns"][i]) +
           (t[1]["step_outer_ns"][i] - t[1]["step_ns"][i]) + 2 * CLOCK_SLACK_NS for i in S]
    mean = sum(true) / len(S) / 1e6
    tol = sum(eps) / len(S) / 1e6 + 2 * max(true) / len(S) / 1e6  # one index in or out
    assert abs(k["mean_ms"] - mean) <= tol, \
        "skew mean %.4f ms, victim %.4f +- %.4f ms" % (k["mean_ms"], mean, tol)
    assert abs(k["max_ms"] - max(true) / 1e6) <= max(eps) / 1e6, \
        "skew max %.4f ms, victim %.4f ms" % (k["max_ms"], max(true) / 1e6)
    # who was slowest: rank 1 by design, but a preempted step of rank 0
    # can turn one around; the victim's brackets say which ones surely were
    per = {e["pid"]: e for e in k["per_process"]}
    sure = sum(t[1]["step_ns"][i] > t[0]["step_outer_ns"][i] for i in S) - 1
    maybe = sum(t[1]["step_outer_ns"][i] > t[0]["step_ns"][i] for i in S) + 1
    assert sure <= per[workers[1]]["slowest"] <= maybe, \
        "rank 1 slowest %d times, victim: between %d and %d" % (
            per[workers[1]]["slowest"], sure, maybe)
    # the bracket above is narrow when the victim's ranks do differ by
    # their 0.4 ms (CI saw 139 of 150 surely rank 1's). Under a CPU hog
    # on every core (make test-loaded: 96 of 145) the preemptions are the
    # victim's own, the bracket widens as its truth does, and is said so.
    if sure < 0.8 * len(S):
        print("    the victim's own steps: rank 1 surely slower in %d of %d, maybe in %d "
              "(a loaded machine preempts both ranks): proftrace's %d checked in that bracket"
              % (sure, len(S), maybe, per[workers[1]]["slowest"]))
    eq(per[workers[0]]["slowest"] + per[workers[1]]["slowest"], k["steps_compared"],
       "slowest counts")
    eq(per[workers[0]]["fastest"], per[workers[1]]["slowest"], "fastest = other's slowest")


def test_children_started_after_attach():
    n, late_steps = 60, 40
    s, truth, workers, late, err = _run(lambda launcher, w: str(launcher), ["--children"],
                                        ["--ranks", 2, "--steps", n, "--late", late_steps], 3)
    assert late, "no late worker"
    eq(s["meta"]["children"], True, "meta.children")
    assert late in s["meta"]["pids"], "late worker %d not traced: %s" % (late, err)
    for r, pid in enumerate(workers):
        _check_proc(_section(s, pid), _truth(truth, r), "rank %d" % r)
    p = _section(s, late)
    assert p["meta"]["attached_at_s"] > 0, "late worker attached after the start"
    eq(p["meta"]["rank"], 2, "late worker rank")
    t = _truth(truth, 2)
    eq(t["steps"], late_steps, "late worker ran its steps")
    _check_proc(p, t, "late worker")
    eq(s["stats"]["steps"], 2 * n + late_steps, "merged steps")


def test_children_exec_gets_a_new_section():
    """A traced process that exec's: its old image's section ends ("exec"),
    the new image gets a section of its own, both exact."""
    n, late_steps = 30, 40
    s, truth, workers, late, err = _run(lambda launcher, w: str(launcher), ["--children"],
                                        ["--ranks", 2, "--steps", n, "--late", late_steps,
                                         "--late-exec"], 3)
    secs = [p for p in s["processes"] if p["meta"]["pid"] == late]
    eq(len(secs), 2, "sections of the exec'ing worker:\n" + err)
    eq(secs[0]["meta"]["ended"], "exec", "first image ended by exec")
    eq(secs[1]["meta"]["ended"], "exited", "second image exited")
    assert secs[1]["meta"]["attached_at_s"] >= secs[0]["meta"]["ended_at_s"], "in order"
    with open("%s.2.pre" % truth) as f:
        pre = json.load(f)
    _check_proc(secs[0], pre, "before exec")
    _check_proc(secs[1], _truth(truth, 2), "after exec")
    eq(s["stats"]["steps"], 2 * n + late_steps, "merged steps")


def test_children_probe_matching_nowhere_is_an_error():
    """--children: the named process may hold none of the functions (a
    launcher), but a probe that matches in no process at all, though they
    map its object, is an error, as it is for one process."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, CONF + "bucket engine.typo native:exe:rank_stpe\n")
    v, _, workers = _start(tmp, "--ranks", 1, "--steps", 1)
    try:
        rc, _, err = run_proftrace(["-p", str(v.pid), "--children", "--targets", conf])
        eq(rc, 2, "exit code: " + err)
        assert "probe 'native:exe:rank_stpe' matches no function in pid %d or its " \
               "descendants" % v.pid in err, err
        eq(err.count("\n"), 1, "one line")
    finally:
        v.kill()


def test_pid_lists():
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, CONF)
    for bad in ("1,abc", "1,,2", ",1", "1,1"):
        rc, _, err = run_proftrace(["-p", bad, "--targets", conf])
        eq(rc, 2, "-p %s exit code" % bad)
        assert err.count("\n") == 1 and "proftrace:" in err, "one line: %r" % err
    # one of them dead: an error naming it, nothing attached
    v, _, workers = _start(tmp, "--ranks", 1, "--steps", 1)
    try:
        dead = 4194303  # above any pid this machine hands out by default
        rc, _, err = run_proftrace(["-p", "%d,%d" % (workers[0], dead), "--targets", conf])
        eq(rc, 2, "dead pid exit code")
        assert str(dead) in err, "the dead pid is named: %r" % err
        # --dry-run prints each process's probes
        rc, out, err = run_proftrace(["-p", "%d,%d" % (v.pid, workers[0]), "--targets", conf,
                                      "--dry-run"])
        eq(rc, 0, "dry run: " + err)
        assert "pid %d" % v.pid in out and "pid %d" % workers[0] in out, out
    finally:
        v.kill()


def test_children_of_a_launcher_without_python():
    """--children on a launcher that is no Python (a shell, mpirun): the
    interpreter comes from its descendants; with none, one clear error."""
    import subprocess
    from harness import ROOT
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    engine = os.path.join(ROOT, "tests", "victims", "demo_engine.py")
    # a sleep beside the engine: a descendant with nothing to trace
    # the launcher's environment has the agent (eval "$(proftrace env)"):
    # the Python child inherits it, the shell and the sleep ignore it
    from harness import with_agent
    sh = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & /usr/bin/python3 %s --seed 3; true"
                           % engine], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          env=with_agent(os.environ))
    child = None
    try:
        child = int(sh.stdout.readline().split()[1])  # "ready PID" once it serves
        out = os.path.join(tmp, "out")
        rc, _, err = run_proftrace(["-p", str(sh.pid), "--children", "--targets", "demo",
                                    "-o", out, "-d", "2", "-q"], timeout=60)
        eq(rc, 0, "proftrace:\n" + err)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        eq(s["meta"]["pids"], [sh.pid, child], "the shell and its Python child")
        py = _section(s, child)
        assert py["stats"]["steps"] > 50, py["stats"]
        eq(_section(s, sh.pid)["stats"]["steps"], 0, "the shell runs no steps")
        eq(s["stats"]["steps"], py["stats"]["steps"], "merged steps")
        sk = s["meta"]["processes_skipped"]
        eq([x["comm"] for x in sk], ["sleep"], "the sleep is skipped")
        assert "no CPython" in sk[0]["why"], sk
        eq(s["meta"]["processes_skipped_total"], 1, "skipped total")
    finally:
        subprocess.run(["pkill", "-P", str(sh.pid), "sleep"])
        if child:
            os.kill(child, 9)  # the engine serves forever
        sh.kill()
        sh.wait()
    sleeper = subprocess.Popen(["/bin/sh", "-c", "sleep 30; true"])
    try:
        rc, _, err = run_proftrace(["-p", str(sleeper.pid), "--children", "--targets", "demo",
                                    "-d", "1"], timeout=30)
        eq(rc, 2, "no Python anywhere: " + err)
        assert "no CPython runs in pid %d or its descendants" % sleeper.pid in err, err
        eq(err.count("\n"), 1, "one line")
    finally:
        sleeper.kill()
        sleeper.wait()


def test_two_python_versions_in_one_run():
    """Each process brings its interpreter's layout to BPF (struct
    pt_py_offsets): a 3.10 and a 3.12 (perf trampoline) engine traced in
    one run, both exact against their own truth."""
    import test_python as tp

    py10, py12 = tp.pyenv_python(10), tp.pyenv_python(12)
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, tp.EVALFRAME + tp.CONF)
    out = os.path.join(tmp, "out")
    truths = [os.path.join(tmp, "truth10"), os.path.join(tmp, "truth12")]
    vs, pt = [], None
    try:
        for py, truth, env in ((py10, truths[0], {}), (py12, truths[1], {"PYTHONPERFSUPPORT": "1"})):
            vs.append(victim([py, tp.VICTIM], "--truth", truth, "--steps", tp.N, "--lazy",
                             env=tp.victim_env(env, agent=False)))
        pt = Proc([PROFTRACE, "-p", "%d,%d" % (vs[0].pid, vs[1].pid), "--targets", conf,
                   "-o", out], stdin=False, stdout=True, stderr=True)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        for v in vs:
            v.send("go\n")
        for v in vs:
            assert v.wait(120) == 0, "victim failed"
        err = proftrace_done(pt)
    finally:
        for v in vs:
            v.kill()
        if pt:
            pt.kill()
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    for v, truth in zip(vs, truths):
        with open(truth) as f:
            t = json.load(f)
        sec = dict(_section(s, v.pid))
        # the BPF object's drop counters are the merged document's
        sec["health"] = dict(sec["health"], dropped_events=s["health"]["dropped_events"])
        tp.check_exact(sec, t, tp.N)
