# SPDX-License-Identifier: BSD-2-Clause
"""Native probes on live victims: exact counts, times against ground truth."""
import json
import os
import signal
import subprocess
import tempfile
import time

from harness import (PROFTRACE, VICTIMS, Skip, bpf_progs, bracket, bucket, eq, func, profile,
                     proftrace, rank, run_proftrace, victim, within, write_conf)

N = 150  # steps per run: ~1 ms each

ENGINE_CONF = """\
# the engine victim, one bucket per phase
step   native:exe:engine_step
bucket engine.schedule native:exe:engine_schedule
bucket engine.prepare  native:exe:engine_prepare
bucket engine.forward  native:exe:engine_forward
bucket model.layer     native:exe:model_layer
bucket engine.sample   native:exe:engine_sample
bucket engine.recurse  native:exe:engine_recurse
bucket engine.idle     native:exe:engine_idle
"""

PHASES = ["engine_schedule", "engine_prepare", "engine_forward", "engine_sample"]


def check_engine(s, t, steps, threads=1, probes=8):
    eq(s["stats"]["steps"], steps, "steps")
    eq(s["health"]["dropped_events"], 0, "dropped")
    eq(s["health"]["probes_attached"], probes, "probes attached")
    tf = t["functions"]
    want_calls = {"engine_step": steps, "engine_schedule": steps, "engine_prepare": steps,
                  "engine_forward": steps, "model_layer": 4 * steps, "engine_sample": steps,
                  "engine_recurse": 3 * steps, "engine_idle": steps}
    for sym, calls in want_calls.items():
        f = func(s, sym)
        eq(f["calls"], calls, sym + " calls")
        eq(tf[sym]["calls"], calls, sym + " truth calls")
        within(f["total_ms"], tf[sym], calls, sym + " total")
    within(s["stats"]["time_ms"], tf["engine_step"], steps, "step time")
    for sym in PHASES:
        b = bucket(s, sym.replace("_", ".", 1))
        eq(b["calls"], steps, b["name"] + " calls")
        within(b["total_ms"], tf[sym], steps, b["name"] + " total")
    # model.layer nests inside engine.forward: each still gets its own time
    b = bucket(s, "model.layer")
    eq(b["calls"], 4 * steps, "model.layer calls")
    within(b["total_ms"], tf["model_layer"], 4 * steps, "model.layer")
    # recursion: only the outermost call counts
    b = bucket(s, "engine.recurse")
    eq(b["calls"], steps, "engine.recurse calls (outermost only)")
    within(b["total_ms"], tf["engine_recurse_outer"], steps, "engine.recurse (outermost only)")
    # engine_idle runs between steps: a function row, but no bucket time
    b = bucket(s, "engine.idle")
    eq(b["calls"], 0, "engine.idle calls inside steps")
    eq(b["total_ms"], 0, "engine.idle time inside steps")
    # step.other = step - disjoint outer phases (forward covers model.layer)
    outer = [tf[k] for k in PHASES] + [tf["engine_recurse_outer"]]
    b = bucket(s, "step.other")
    eq(b["calls"], steps, "step.other calls")
    bracket(b["total_ms"], tf["engine_step"]["total_ns"] - sum(x["outer_ns"] for x in outer),
            tf["engine_step"]["outer_ns"] - sum(x["total_ns"] for x in outer), 6 * steps,
            "step.other total")
    st = s["stats"]
    assert st["min_ms"] <= st["p50_ms"] <= st["p90_ms"] <= st["p99_ms"] <= st["max_ms"], st
    if threads > 1:
        return
    # Percentiles: every step's proftrace time lies in [inside, around], so each
    # order statistic does too; the histogram adds at most 0.5% (docs/summary.md).
    inner, outer_s = t["thread0_step_inner_ns"], t["thread0_step_outer_ns"]
    for key, q in (("min_ms", 0.0), ("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99),
                   ("max_ms", 1.0)):
        lo, hi = rank(inner, q), rank(outer_s, q)
        if key not in ("min_ms", "max_ms"):
            lo, hi = lo * 0.995, hi * 1.005
        bracket(st[key], lo, hi, 1, "stats." + key)


def test_call_mode_pie():
    s, t, _ = profile(ENGINE_CONF, ["--steps", N])
    check_engine(s, t, N)
    assert os.path.exists(os.path.join(s["_out"], "report.md"))


def test_call_mode_nopie():
    s, t, _ = profile(ENGINE_CONF, ["--steps", N], victim_name="victim_nopie")
    check_engine(s, t, N)


def test_threads():
    s, t, _ = profile(ENGINE_CONF, ["--steps", N, "--threads", 3])
    check_engine(s, t, 3 * N, threads=3)


def test_warmup():
    s, t, _ = profile(ENGINE_CONF + "set warmup_steps 20\n", ["--steps", N])
    eq(s["stats"]["steps"], N - 20, "counted steps")
    eq(s["stats"]["warmup_steps_skipped"], 20, "warmup skipped")
    eq(s["meta"]["warmup_steps"], 20, "meta.warmup_steps")
    eq(bucket(s, "engine.schedule")["calls"], N - 20, "bucket calls after warmup")
    eq(func(s, "engine_step")["calls"], N, "functions include warmup")


def test_iteration_mode():
    conf = ENGINE_CONF.replace("step   native:exe:engine_step",
                               "step   native:exe:loop_top mode=iteration")
    s, t, _ = profile(conf, ["--steps", N])
    # N entries of loop_top make N-1 closed iterations; the last never closes
    eq(s["stats"]["steps"], N - 1, "iterations")
    eq(t["iterations"], N - 1, "truth iterations")
    eq(s["stats"]["incomplete_steps"], 1, "the open last iteration")
    # iteration time: loop_top entry to loop_top entry
    bracket(s["stats"]["time_ms"], t["iteration_lower_ns"], t["iteration_upper_ns"], 2,
            "iteration time")
    # engine_idle now lies inside the iteration, except in the last one
    eq(bucket(s, "engine.idle")["calls"], N - 1, "engine.idle calls in iterations")
    eq(bucket(s, "engine.schedule")["calls"], N - 1, "engine.schedule calls in iterations")


def test_dlopen_after_attach():
    conf = ENGINE_CONF + "bucket engine.dl native:libvictim_dl.so:dl_work\n"
    lib = os.path.join(VICTIMS, "libvictim_dl.so")

    # the library sits next to the executable: proftrace finds its file
    # at attach and probes it before it is mapped (run/prearm.c), so no
    # call is missed (test_faults.py has the case where it cannot)
    def on_attached(v, pt):
        assert "waiting for its library" not in pt.lines["err"][-1], pt.lines["err"][-1]
        v.send("go\n")
        v.wait_line("dlopened")

    s, t, _ = profile(conf, ["--steps", N, "--dlopen", lib], on_attached=on_attached)
    f = func(s, "dl_work")
    eq(f["attached"], True, "dl_work attached")
    eq(f["dlopen_window_ms"], 0, "armed before its library was mapped")
    eq(f["calls"], N, "dl_work calls")
    within(f["total_ms"], t["functions"]["dl_work"], N, "dl_work total")
    eq(bucket(s, "engine.dl")["calls"], N, "engine.dl calls")
    eq(s["health"]["probes_attached"], 9, "probes attached")


def test_longjmp_unwound():
    conf = ENGINE_CONF + "bucket engine.jump native:exe:engine_jump native:exe:engine_jump_inner\n"
    s, t, _ = profile(conf, ["--steps", N, "--longjmp-every", 5])
    jumps = N // 5
    eq(func(s, "engine_jump")["calls"], jumps, "engine_jump calls")
    eq(t["functions"]["engine_jump"]["calls"], jumps, "truth engine_jump calls")
    # engine_jump_inner never returns: no call, one unwound frame each
    eq(func(s, "engine_jump_inner")["calls"], 0, "engine_jump_inner completed calls")
    eq(s["health"]["unwound"], jumps, "unwound frames")
    eq(s["health"]["orphan_returns"], 0, "orphan returns")
    eq(s["stats"]["steps"], N, "steps still exact")
    eq(bucket(s, "engine.jump")["calls"], jumps, "engine.jump outermost calls")
    within(bucket(s, "engine.jump")["total_ms"], t["functions"]["engine_jump"], jumps,
           "engine.jump total")


def long_run(extra=()):
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, ENGINE_CONF)
    out = os.path.join(tmp, "out")
    v = victim("victim_engine", "--steps", 1000000)
    pt = proftrace(v.pid, conf, out, *extra)
    pt.wait_line("proftrace: attached", "err", timeout=90)
    v.send("go\n")
    return v, pt, out


def stop_with(sig):
    v, pt, out = long_run()
    try:
        time.sleep(1.0)
        pt.p.send_signal(sig)
        eq(pt.wait(30), 0, "proftrace exit code")
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        assert os.path.getsize(os.path.join(out, "report.md")) > 0
        assert s["stats"]["steps"] > 100, s["stats"]
        assert v.p.poll() is None, "the victim must survive the detach"
        # counts stay consistent in a run cut at an arbitrary point
        steps = s["stats"]["steps"] + s["stats"]["incomplete_steps"]
        assert abs(func(s, "engine_schedule")["calls"] - steps) <= 1, s["stats"]
        assert abs(func(s, "model_layer")["calls"] - 4 * steps) <= 4
    finally:
        v.kill()
        pt.kill()


def test_sigint_full_report():
    stop_with(signal.SIGINT)


def test_sigterm_full_report():
    stop_with(signal.SIGTERM)


def test_duration():
    v, pt, out = long_run(["-d", "1"])
    try:
        eq(pt.wait(20), 0, "proftrace exit code")
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        assert 0.9 <= s["meta"]["duration_s"] <= 3.0, s["meta"]
        assert s["stats"]["steps"] > 100
    finally:
        v.kill()
        pt.kill()


def test_json_stdout():
    v, pt, out = long_run(["-d", "0.5", "--json"])
    try:
        eq(pt.wait(20), 0, "exit code")
        doc = json.loads(pt.rest("out"))
        with open(os.path.join(out, "summary.json")) as f:
            eq(doc, json.load(f), "--json output equals summary.json")
    finally:
        v.kill()
        pt.kill()


def code_byte(pid, exe, file_off):
    """The byte at file offset file_off of exe as mapped in process pid."""
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            w = line.split()
            if len(w) >= 6 and w[5] == exe and "x" in w[1]:
                start, end = (int(x, 16) for x in w[0].split("-"))
                off = int(w[2], 16)
                if off <= file_off < off + (end - start):
                    with open("/proc/%d/mem" % pid, "rb") as m:
                        m.seek(start + file_off - off)
                        return m.read(1)[0]
    raise AssertionError("offset 0x%x not mapped" % file_off)


def test_kill9_leaves_nothing_attached():
    # the previous test's proftrace has exited, but the kernel releases its
    # programs asynchronously (seen in CI: pt_exec, a tracepoint link)
    before = []
    for _ in range(50):
        before = [n for n in bpf_progs() if n.startswith("pt_")]
        if not before:
            break
        time.sleep(0.1)
    if before:
        raise Skip("another proftrace is running (programs %s)" % before)
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    truth_path = os.path.join(tmp, "truth.json")
    conf = write_conf(tmp, ENGINE_CONF)
    # ~10 s: still running after the kill and the programs' release, even
    # on a loaded machine
    v = victim("victim_engine", "--steps", 10000, "--truth", truth_path)
    pt = proftrace(v.pid, conf, os.path.join(tmp, "out"))
    exe = os.path.join(VICTIMS, "victim_engine")
    nm = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
    off = [int(l.split()[0], 16) for l in nm.splitlines() if l.endswith(" engine_step")][0]
    with open(exe, "rb") as f:
        f.seek(off)
        orig = f.read(1)[0]
    try:
        pt.wait_line("proftrace: attached", "err", timeout=90)
        assert [n for n in bpf_progs() if n.startswith("pt_")], "programs loaded while attached"
        eq(code_byte(v.pid, exe, off), 0xCC, "int3 at engine_step while attached")
        v.send("go\n")
        time.sleep(0.2)
        pt.p.kill()
        pt.p.wait()
        left = []
        for _ in range(50):  # the kernel releases programs asynchronously
            left = [n for n in bpf_progs() if n.startswith("pt_")]
            if not left:
                break
            time.sleep(0.1)
        eq(left, [], "BPF programs left after kill -9")
        assert v.p.poll() is None, "victim still running for the code check"
        eq(code_byte(v.pid, exe, off), orig, "engine_step's first byte restored")
        eq(v.wait(60), 0, "victim exit code")
        with open(truth_path) as f:
            t = json.load(f)
        eq(t["functions"]["engine_step"]["calls"], 10000, "victim ran all its steps")
        eq(t["functions"]["engine_recurse"]["calls"], 30000, "victim recursion intact")
    finally:
        v.kill()
        pt.kill()


def test_dry_run_offsets():
    """--dry-run prints file offsets that agree with the ELF (nm + program headers)."""
    v = victim("victim_engine")
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    try:
        rc, out, err = run_proftrace(["-p", str(v.pid), "--targets", write_conf(tmp, ENGINE_CONF),
                                      "--dry-run"])
        eq(rc, 0, "dry-run exit (%s)" % err)
        exe = os.path.join(VICTIMS, "victim_engine")
        nm = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
        addrs = {l.split()[2]: int(l.split()[0], 16) for l in nm.splitlines() if len(l.split()) == 3}
        # PIE from gcc: text segment has p_vaddr == p_offset, so offset == st_value
        rows = {l.split()[1]: l.split()[3] for l in out.splitlines()[1:] if l.startswith("native:")}
        for sym in ["engine_step", "model_layer", "engine_idle"]:
            eq(int(rows[sym], 16), addrs[sym], sym + " offset")
        assert v.p.poll() is None
    finally:
        v.kill()


def test_errors_exit_2():
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    os.chmod(tmp, 0o755)  # readable by the unprivileged user below
    good = write_conf(tmp, ENGINE_CONF)
    v = victim("victim_engine")
    try:
        # dead pid
        rc, out, err = run_proftrace(["-p", "999999", "--targets", good])
        eq(rc, 2, "dead pid exit")
        assert err.startswith("proftrace: no such process: 999999"), err
        eq(len(err.strip().splitlines()), 1, "one line")
        # unknown symbol, with closest names
        bad = os.path.join(tmp, "bad.conf")
        with open(bad, "w") as f:
            f.write("step native:exe:engine_stepp\n")
        rc, out, err = run_proftrace(["-p", str(v.pid), "--targets", bad])
        eq(rc, 2, "unknown symbol exit")
        assert "bad.conf:1:6: error: no function matches 'engine_stepp'" in err, err
        assert "closest: engine_step" in err, err
        eq(len(err.strip().splitlines()), 1, "one line")
        # bad config line
        with open(bad, "w") as f:
            f.write("step native:exe:engine_step\nbuckt engine.x native:exe:engine_idle\n")
        rc, out, err = run_proftrace(["-p", str(v.pid), "--targets", bad])
        eq(rc, 2, "bad config exit")
        assert "bad.conf:2:1: error:" in err, err
        # missing targets file, bad usage
        rc, out, err = run_proftrace(["-p", str(v.pid), "--targets", "/nonexistent.conf"])
        eq(rc, 2, "missing targets exit")
        rc, out, err = run_proftrace(["--targets", good])
        eq(rc, 2, "no pid exit")
        rc, out, err = run_proftrace(["-p", "12x", "--targets", good])
        eq(rc, 2, "bad pid exit")
        # no privileges: an unprivileged user cannot read a root process
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        p = subprocess.run(nobody + [PROFTRACE, "-p", str(v.pid), "--targets", good],
                           capture_output=True, text=True, timeout=30)
        eq(p.returncode, 2, "unprivileged exit (%s)" % p.stderr)
        assert "root" in p.stderr, p.stderr
        eq(len(p.stderr.strip().splitlines()), 1, "one line")
        assert v.p.poll() is None, "victim untouched"
    finally:
        v.kill()


def test_chroot_target():
    """A target in another root (as in a container): its paths exist only
    through /proc/PID/root, and its libc is another file than ours."""
    import shutil
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    root = os.path.join(tmp, "root")
    exe = os.path.join(VICTIMS, "victim_engine")
    os.makedirs(os.path.join(root, "opt"))
    shutil.copy(exe, os.path.join(root, "opt", "engine"))
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True, check=True).stdout
    for line in ldd.splitlines():
        path = [w for w in line.split() if w.startswith("/")]
        if path:
            dst = os.path.join(root, path[0].lstrip("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(path[0], dst)
    from harness import Proc
    v = Proc(["chroot", root, "/opt/engine", "--steps", str(N), "--truth", "/truth.json"])
    pid = int(v.wait_line("ready ").split()[1])
    conf = write_conf(tmp, ENGINE_CONF + "bucket libc.thread native:libc.so*:pthread_create\n")
    pt = proftrace(pid, conf, os.path.join(tmp, "out"))
    try:
        pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        eq(v.wait(120), 0, "victim exit")
        eq(pt.wait(60), 0, "proftrace exit")
        with open(os.path.join(tmp, "out", "summary.json")) as f:
            s = json.load(f)
        with open(os.path.join(root, "truth.json")) as f:
            t = json.load(f)
        eq(func(s, "engine_step")["object"], "/opt/engine", "object as the target sees it")
        eq(s["meta"]["exe"], "/opt/engine", "meta.exe")
        check_engine(s, t, N, probes=9)
        # the copied libc is probed, not ours: the one worker thread's creation
        eq(func(s, "pthread_create")["calls"], 1, "pthread_create calls in the chroot's libc")
    finally:
        v.kill()
        pt.kill()


def test_live_status_on_a_tty():
    """On a terminal: one status line refreshed in place; --quiet: none."""
    import pty
    import select as sel
    for quiet in (False, True):
        v, pt, out = None, None, None
        tmp = tempfile.mkdtemp(prefix="pt-it-")
        conf = write_conf(tmp, ENGINE_CONF)
        v = victim("victim_engine", "--steps", 1000000)
        master, slave = pty.openpty()
        argv = [PROFTRACE, "-p", str(v.pid), "--targets", conf, "-o", os.path.join(tmp, "out"),
                "-d", "2.5"] + (["--quiet"] if quiet else [])
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=slave)
        os.close(slave)
        try:
            v.send("go\n")
            data = b""
            while True:
                r, _, _ = sel.select([master], [], [], 10)
                if not r:
                    break
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the other side closed
                    break
                if not chunk:
                    break
                data += chunk
            eq(p.wait(20), 0, "exit code")
            text = data.decode(errors="replace")
            status = [l for l in text.replace("\r\x1b[K", "\n").split("\n") if " steps/s" in l]
            if quiet:
                eq(status, [], "no status line with --quiet")
            else:
                assert len(status) >= 2, "refreshed each second: %r" % text
                assert "\r\x1b[K" in text, "refreshed in place"
                last = status[-1]
                assert "steps " in last and "p50 " in last and "events/s" in last, last
                steps = int(last.split("steps ")[1].split()[0])
                assert steps > 500, last
        finally:
            os.close(master)
            v.kill()
            if p.poll() is None:
                p.kill()
