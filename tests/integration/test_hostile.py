# SPDX-License-Identifier: BSD-2-Clause
"""Issue 27: a target's user (or any local user) cannot kill, stall or
misdirect root proftrace, and the smaller things an unlucky operator meets
are said as they are.

Attacks run as `nobody` (uid 65534) where they need an unprivileged user:
the target's user truncating the agent's segment under a live attach; a
link planted in a world-writable folder on the way to -o; another user
squatting the name the agent's segment once had. Each checks what proftrace did (its
exit code, its one line on stderr, its files) and that the target is
unharmed where it is not the attacker's own.
"""
import glob
import json
import os
import stat
import subprocess
import tempfile
import time

from harness import PROFTRACE, Proc, Skip, eq, helper_segment, proftrace, victim, write_conf
import test_agent as ta

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
PY311 = "/usr/bin/python3.11"
NATIVE_CONF = """\
step   native:exe:fault_step
bucket fault.work native:exe:fault_work
"""


def py311():
    if not os.access(PY311, os.X_OK):
        raise Skip("no %s" % PY311)
    return PY311


def as_nobody(*argv):
    subprocess.run(NOBODY + list(argv), check=True, timeout=30)


def run_pt(argv, timeout=60, env=None):
    p = subprocess.run([PROFTRACE] + argv, capture_output=True, timeout=timeout, env=env)
    return p.returncode, p.stderr.decode(errors="replace")


def nobody_victim(python, *args, agent=True):
    """pyagent_cases as nobody, the agent preloaded as `proftrace env` does."""
    env = ta.agent_env() if agent else ta.tp.victim_env(agent=False)
    v = Proc(NOBODY + [python, ta.CASES] + [str(a) for a in args], env=env)
    v.pid = int(v.wait_line("ready ").split()[1])
    return v


def test_hostile_agent_segment_sealed():
    """The issue's repro: a 3.11 server as nobody with the agent preloaded,
    proftrace attached; nobody truncates the agent's segment to 0 bytes.
    proftrace used to die of SIGBUS and write nothing. The segment is now
    a sealed memfd (shim/memseg.h), reached only through /proc/PID/fd:
    the truncation is refused by the kernel, and the run stays exact."""
    python = py311()
    tmp = tempfile.mkdtemp(prefix="pt-hostile-")
    conf = write_conf(tmp, ta.CONF)
    out = os.path.join(tmp, "out")
    v = nobody_victim(python, "--steps", 40)
    pt = None
    try:
        seg = helper_segment(v.pid)
        assert seg, "no agent segment among pid %d's files" % v.pid
        pt = proftrace(v.pid, conf, out, "-d", "60")
        pt.wait_line("proftrace: attached", "err", timeout=90)
        r = subprocess.run(NOBODY + [python, "-c", "import os; os.truncate(%r, 0)" % seg],
                           capture_output=True, timeout=30)
        why = r.stderr.decode(errors="replace").strip().splitlines()
        print("  nobody's truncation: exit %d, %s" % (r.returncode, why[-1] if why else ""))
        assert r.returncode != 0 and "Operation not permitted" in why[-1], why
        v.send("go\n")
        eq(v.wait(120), 0, "victim exit")
        rc = pt.wait(60)
        err = pt.rest("err")
    finally:
        v.kill()
        if pt:
            pt.kill()
    eq(rc, 0, "proftrace exit code (stderr:\n%s)" % err)
    assert "truncated" not in err, err
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    py = s["meta"]["python"]
    assert py["agent"] and not py["agent"].get("segment_lost"), py
    eq(s["stats"]["steps"], 40, "steps, all timed through the agent")


def test_hostile_output_middle_symlink():
    """A world-writable sticky folder on the way to -o; nobody makes its
    `results` a link to a root-only folder. -o pubtmp/results/run1 is
    refused (exit 2, one line naming the link and its owner) before
    attaching, and nothing is made in the root-only folder. Under sudo
    the invoking user's own link is followed, and what proftrace makes
    there is theirs, private."""
    tmp = tempfile.mkdtemp(prefix="pt-hostile-")
    os.chmod(tmp, 0o755)
    conf = write_conf(tmp, NATIVE_CONF)
    pub = os.path.join(tmp, "pubtmp")
    os.mkdir(pub)
    os.chmod(pub, 0o1777)
    rootonly = tempfile.mkdtemp(prefix="pt-rootonly-")
    os.chmod(rootonly, 0o700)
    as_nobody("ln", "-s", rootonly, os.path.join(pub, "results"))
    eq(os.lstat(os.path.join(pub, "results")).st_uid, 65534, "the link's owner")
    v = victim("victim_faults", "loop", 0.2)
    try:
        out = os.path.join(pub, "results", "run1")
        rc, err = run_pt(["-p", str(v.pid), "--targets", conf, "-o", out, "-d", "0.3"])
        eq(rc, 2, "exit code (%s)" % err)
        lines = [l for l in err.splitlines() if l.strip()]
        eq(len(lines), 1, "one line: %s" % err)
        assert "results is a symbolic link made by uid 65534 (nobody)" in err, err
        assert "attached" not in err, err
        eq(os.listdir(rootonly), [], "the root-only folder")
        print("  refused: " + lines[0])
        # sudo by nobody: nobody's link is nobody's own choice
        env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534")
        rc, err = run_pt(["-p", str(v.pid), "--targets", conf, "-o", out, "-d", "0.3"],
                         env=env)
        eq(rc, 0, "under sudo: exit code (%s)" % err)
        made = os.path.join(rootonly, "run1")
        st = os.stat(made)
        eq((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (65534, 65534, 0o700),
           "the folder made under sudo")
        for name in os.listdir(made):
            st = os.stat(os.path.join(made, name))
            eq((st.st_uid, stat.S_IMODE(st.st_mode)), (65534, 0o600), name)
        v.send("go\n")
        v.wait(30)
    finally:
        v.kill()
        subprocess.run(["rm", "-rf", rootonly, tmp])


def test_hostile_outputs_private():
    """Outputs are 0600 files in 0700 folders proftrace made (profiles
    hold source lines, argument values, paths), also inside a folder
    others can read; the default folder too."""
    tmp = tempfile.mkdtemp(prefix="pt-hostile-")
    os.chmod(tmp, 0o755)
    conf = write_conf(tmp, NATIVE_CONF)
    v = victim("victim_faults", "loop", 0.2)
    try:
        out = os.path.join(tmp, "a", "run")
        rc, err = run_pt(["-p", str(v.pid), "--targets", conf, "-o", out, "-d", "0.3"])
        eq(rc, 0, "exit code (%s)" % err)
        p = subprocess.run([PROFTRACE, "-p", str(v.pid), "--targets", conf, "-d", "0.3"],
                           capture_output=True, cwd=tmp, timeout=60)
        eq(p.returncode, 0, "default folder: exit code (%s)" % p.stderr.decode())
        v.send("go\n")
        v.wait(30)
    finally:
        v.kill()
    default = glob.glob(os.path.join(tmp, "proftrace_out", "*"))
    eq(len(default), 1, "default run folders")
    for d in (os.path.join(tmp, "a"), out, os.path.join(tmp, "proftrace_out"), default[0]):
        st = os.stat(d)
        eq(stat.S_IMODE(st.st_mode), 0o700, d)
    files = [os.path.join(out, f) for f in os.listdir(out)] + \
        [os.path.join(default[0], f) for f in os.listdir(default[0])]
    assert len(files) >= 4, files
    for f in files:
        eq(stat.S_IMODE(os.stat(f).st_mode), 0o600, f)
    # nobody cannot read them
    r = subprocess.run(NOBODY + ["cat", os.path.join(out, "summary.json")], capture_output=True)
    assert r.returncode != 0, "nobody read summary.json"


def _squat(pid, how):
    """nobody plants something where the agent's segment used to be named
    (/dev/shm/proftrace-py-PID, a name anyone could predict)."""
    seg = "/dev/shm/proftrace-py-%d" % pid
    if how == "symlink":
        as_nobody("ln", "-s", "/etc/shadow", seg)
    elif how == "fifo":
        as_nobody("mkfifo", seg)
    else:
        as_nobody("sh", "-c", "head -c 65536 /dev/zero > %s" % seg)
    return seg


def test_hostile_agent_squatted():
    """Another user plants a link, a FIFO or a file at the name the agent's
    segment once had, for a process it does not own. The agent's segment
    has no name in any file system now (a memfd, found through
    /proc/PID/fd, which only the process's user and root can read), so
    there is nothing to squat: --inject loads the agent and times
    exactly, the squatter is neither touched nor mentioned, and the
    process runs on."""
    python = py311()
    tmp = tempfile.mkdtemp(prefix="pt-hostile-")
    conf = write_conf(tmp, ta.CONF)
    for how in ("symlink", "fifo", "file"):
        v = victim([python, ta.CASES], "--steps", 3, "--poll",
                   env=ta.tp.victim_env(agent=False))
        seg = None
        try:
            seg = _squat(v.pid, how)
            out = os.path.join(tmp, "o-" + how)
            pt = proftrace(v.pid, conf, out, "--inject", "-d", "60")
            pt.wait_line("proftrace: attached", "err", timeout=90)
            assert helper_segment(v.pid), "no agent segment after --inject"
            v.send("go\n")
            eq(v.wait(60), 0, "victim exit")
            rc = pt.wait(60)
            err = pt.rest("err")
            eq(rc, 0, "%s, --inject: exit code (%s)" % (how, err))
            assert "65534" not in err and "nobody" not in err, err
            with open(os.path.join(out, "summary.json")) as f:
                sm = json.load(f)
            eq(sm["stats"]["steps"], 3, "%s: steps through the agent" % how)
            # never written through, never removed
            st = os.lstat(seg)
            eq(st.st_uid, 65534, "the squatter's owner")
            if how == "file":
                eq(st.st_size, 65536, "the squatter's size")
            print("  %s at %s: --inject exact, squatter untouched" % (how, seg))
        finally:
            v.kill()
            if seg and os.path.lexists(seg):
                os.unlink(seg)


def test_hostile_killed_leaves_nothing():
    """A killed target's segment went with it: the agent's is a memfd the
    kernel frees with the process, so nothing of it stays in /dev/shm (it
    used to, until the pid was reused) and nothing needs sweeping."""
    python = py311()
    before = set(x for x in os.listdir("/dev/shm") if x.startswith("proftrace"))
    dead = victim([python, ta.CASES], "--steps", 2, env=ta.agent_env())
    try:
        assert helper_segment(dead.pid), "no agent segment in the target"
        dead.p.kill()
        dead.p.wait()
    finally:
        dead.kill()
    after = set(x for x in os.listdir("/dev/shm") if x.startswith("proftrace"))
    eq(sorted(after - before), [], "helpers' files left in /dev/shm")


def test_hostile_small_messages():
    """Issue 27, list 7: PID 1 refused as root is not told to run as root;
    a long step line is not told to split a bucket; invalid bytes of a
    targets file reach the terminal escaped; --inject that loads nothing
    says so."""
    tmp = tempfile.mkdtemp(prefix="pt-hostile-")
    v = victim("victim_faults", "loop", 0.2)
    try:
        conf = write_conf(tmp, NATIVE_CONF)
        rc, err = run_pt(["-p", "1", "--targets", conf, "--dry-run"])
        if rc != 0:
            assert "hint: run as root" not in err, err
            assert "we run as root" in err, err
            print("  pid 1: " + err.strip())

        path = os.path.join(tmp, "long.conf")
        with open(path, "w") as f:
            f.write("step native:exe:" + "x" * 5000 + "\n")
        rc, err = run_pt(["-p", str(v.pid), "--targets", path, "--dry-run"])
        eq(rc, 2, "long step line: exit code")
        assert "bucket" not in err and "step line names one probe" in err, err

        path = os.path.join(tmp, "bytes.conf")
        with open(path, "wb") as f:
            f.write(NATIVE_CONF.encode() + b"bucket fault.x native:exe:no\x1b]0;pwned\x07such\xff\n")
        p = subprocess.run([PROFTRACE, "-p", str(v.pid), "--targets", path, "--dry-run"],
                           capture_output=True, timeout=60)
        eq(p.returncode, 2, "invalid bytes: exit code")
        assert b"\x1b" not in p.stderr and b"\x07" not in p.stderr and b"\xff" not in p.stderr, \
            p.stderr
        assert b"\\x1b]0;pwned\\x07such\\xff" in p.stderr, p.stderr

        rc, err = run_pt(["-p", str(v.pid), "--targets", conf, "--inject", "-d", "0.3",
                          "-o", os.path.join(tmp, "inj")])
        eq(rc, 0, "--inject, nothing to load: exit code (%s)" % err)
        assert "--inject loads nothing here: the targets file names no py: function, " \
            "and it runs no CUDA" in err, err
        v.send("go\n")
        v.wait(30)
    finally:
        v.kill()


def test_hostile_disk_full_said():
    """A full disk is said as 'No space left on device', with where the
    profile went instead; never 'Input/output error'."""
    tmp = tempfile.mkdtemp(prefix="pt-hostile-")
    small = os.path.join(tmp, "small")
    os.mkdir(small)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small], check=True)
    v = victim("victim_faults", "loop", 0.2)
    try:
        out = os.path.join(small, "out")
        pt = proftrace(v.pid, write_conf(tmp, NATIVE_CONF), out, "-d", "1.5")
        pt.wait_line("proftrace: attached", "err", timeout=90)
        # fill it, then give back two pages: summary.json (about 5 KB)
        # fits, report.md after it does not (its emitter sees only
        # ferror(): the "Input/output error" the issue saw)
        fill = os.path.join(small, "fill")
        fd = os.open(fill, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"x" * 4096)
        except OSError:
            pass
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - 8192))
        os.close(fd)
        rc = pt.wait(60)
        err = pt.rest("err")
        assert rc in (0, 1), (rc, err)
        assert "No space left on device (the disk is full)" in err, err
        assert "Input/output error" not in err, err
        assert "instead" in err, err
        print("  " + [l for l in err.splitlines() if "disk is full" in l][0])
        v.send("go\n")
        v.wait(30)
    finally:
        v.kill()
        subprocess.run(["umount", "-l", small])


def test_hostile_merge_output():
    """`proftrace merge -o FILE` as root wrote with fopen(): through a link
    nobody planted at FILE, truncating and rewriting what it points at, and
    0644. Now a link at the name is refused (exit 1, said), its target
    untouched, and the file made is 0600. (A link on the way to FILE is
    still followed: merge -o is not walked as the run's -o is.)"""
    tmp = tempfile.mkdtemp(prefix="pt-hostile-")
    os.chmod(tmp, 0o755)
    conf = write_conf(tmp, NATIVE_CONF)
    v = victim("victim_faults", "loop", 0.2)
    try:
        run = os.path.join(tmp, "run")
        rc, err = run_pt(["-p", str(v.pid), "--targets", conf, "-o", run, "-d", "0.3"])
        eq(rc, 0, "the run to merge (%s)" % err)
        v.send("go\n")
        v.wait(30)
    finally:
        v.kill()
    pub = os.path.join(tmp, "pubtmp")
    os.mkdir(pub)
    os.chmod(pub, 0o1777)
    precious = os.path.join(tmp, "precious")
    with open(precious, "w") as f:
        f.write("keep")
    out = os.path.join(pub, "merged.json")
    as_nobody("ln", "-s", precious, out)
    rc, err = run_pt(["merge", "a=" + run, "b=" + run, "-o", out])
    eq(rc, 1, "merge over a planted link (%s)" % err)
    assert "symbolic link" in err, err
    with open(precious) as f:
        eq(f.read(), "keep", "the link's target")
    os.unlink(out)
    rc, err = run_pt(["merge", "a=" + run, "b=" + run, "-o", out])
    eq(rc, 0, "merge (%s)" % err)
    eq(stat.S_IMODE(os.stat(out).st_mode), 0o600, "merged.json's mode")
    with open(out) as f:
        eq(json.load(f)["merged"]["hosts"], 2, "merged hosts")
    subprocess.run(["rm", "-rf", tmp])
