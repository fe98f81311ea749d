# SPDX-License-Identifier: BSD-2-Clause
"""make install, and a server in a container profiled from the host
(issue 24, part 7; docs/containers.md).

- `make install DESTDIR=... PREFIX=/opt/proftrace` puts the binary, the
  helper libraries, the bundled targets and the docs where the installed
  binary finds them: `proftrace env` names the installed helpers,
  `--list-targets` the installed targets; PREFIX defaults to /usr/local.
- A "container": the server in its own mount and PID namespace (unshare
  --mount --pid --fork --mount-proc), pid 1 there, with a /dev/shm of its
  own and the host's install hidden. (a) Started with the environment,
  the helper folder bind-mounted read-only at a path of its own: profiled
  from the host with the installed proftrace, py: calls counted exactly
  by the agent (the calls the victim counted itself), threads named by
  their Python names with the host's tids (the victim's own are its
  namespace's), proftrace-py in Health only. (b) Started with nothing,
  the folder mounted read-only at the host's path: --inject from the host
  loads the agent, exact again. (c) Without the folder inside: --inject is
  refused (exit 2) saying to put the library inside.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from harness import PROFTRACE, ROOT, Proc, Skip, eq, read_run, stop, write_conf
import test_sampling as ts

VICTIM = os.path.join(ROOT, "tests", "victims", "pynamed.py")
CONF = "step py:pynamed::spin_until\n"
_STAGE = []


def staged():
    """A `make install` into a DESTDIR of this run (once): its root."""
    if _STAGE:
        return _STAGE[0]
    stage = tempfile.mkdtemp(prefix="pt-inst-")
    os.chmod(stage, 0o755)
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, "install",
                        "DESTDIR=" + stage, "PREFIX=/opt/proftrace"], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    _STAGE.append(stage)
    return stage


def test_make_install():
    stage = staged()
    pre = os.path.join(stage, "opt", "proftrace")
    lib = os.path.join(pre, "lib", "proftrace")
    exe = os.path.join(pre, "bin", "proftrace")
    eq(os.stat(exe).st_mode & 0o777, 0o755, "binary mode")
    agent = os.path.join(lib, "libproftrace_agent.so")
    eq(os.stat(agent).st_mode & 0o777, 0o755, "agent mode (read by every server's user)")
    shim_built = os.path.exists(os.environ.get("PT_SHIM") or
                                os.path.join(ROOT, ".output", "libproftrace_cupti.so"))
    eq(os.path.exists(os.path.join(lib, "libproftrace_cupti.so")), shim_built, "shim installed")
    eq(sorted(os.listdir(os.path.join(pre, "share", "proftrace", "targets"))),
       sorted(f for f in os.listdir(os.path.join(ROOT, "targets")) if f.endswith(".conf")),
       "targets")
    doc = os.path.join(pre, "share", "doc", "proftrace")
    assert os.path.exists(os.path.join(doc, "README.md"))
    eq(sorted(os.listdir(os.path.join(doc, "docs"))),
       sorted(f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")), "docs")
    assert os.path.exists(os.path.join(doc, "docs", "containers.md"))

    # the installed binary finds its installed helpers and targets
    env = dict(os.environ)
    env.pop("PROFTRACE_LIBDIR", None)
    env.pop("PROFTRACE_TARGETS_DIR", None)
    p = subprocess.run([exe, "env"], capture_output=True, text=True, env=env, timeout=10)
    eq(p.returncode, 0, "proftrace env: " + p.stderr)
    assert "\nexport LD_PRELOAD=%s${LD_PRELOAD:+:$LD_PRELOAD}\n" % agent in p.stdout, p.stdout
    if shim_built:
        assert "\nexport CUDA_INJECTION64_PATH=%s/libproftrace_cupti.so\n" % lib in p.stdout
    p = subprocess.run([exe, "env", "--docker"], capture_output=True, text=True, env=env,
                       timeout=10)
    assert p.stdout.startswith("-v %s:%s:ro -e LD_PRELOAD=%s" % (lib, lib, agent)), p.stdout
    p = subprocess.run([exe, "--list-targets"], capture_output=True, text=True, env=env,
                       timeout=10)
    eq(p.returncode, 0, "--list-targets")
    assert re.search(r"^vllm\s", p.stdout, re.M), p.stdout
    # moved whole, it still finds them (nothing compiled in)
    moved = tempfile.mkdtemp(prefix="pt-moved-")
    shutil.copytree(pre, os.path.join(moved, "p"), symlinks=True)
    p = subprocess.run([os.path.join(moved, "p", "bin", "proftrace"), "env"], capture_output=True,
                       text=True, env=env, timeout=10)
    assert "export LD_PRELOAD=%s/p/lib/proftrace/libproftrace_agent.so" % moved in p.stdout, \
        p.stdout
    shutil.rmtree(moved)
    # make uninstall takes out what make install put in
    other = tempfile.mkdtemp(prefix="pt-uninst-")
    for target in ("install", "uninstall"):
        p = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, target,
                            "DESTDIR=" + other, "PREFIX=/p"], capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
    left = [os.path.join(d, f) for d, _, fs in os.walk(other) for f in fs]
    eq(left, [], "files left after make uninstall")
    shutil.rmtree(other)
    # the default prefix
    p = subprocess.run(["make", "-n", "-C", ROOT, "install", "DESTDIR=/nowhere"],
                       capture_output=True, text=True, timeout=120)
    # the binary make built: ./proftrace, or .output-asan/proftrace under `make asan`
    assert re.search(r"^install -m 0755 (\S*/)?proftrace /nowhere/usr/local/bin/proftrace$",
                     p.stdout, re.M), p.stdout
    assert "/nowhere/usr/local/lib/proftrace/" in p.stdout, p.stdout


def host_pid_of(unshare_pid, timeout=10.0):
    """The server: the child unshare forked into the new namespace."""
    deadline = time.monotonic() + timeout
    path = "/proc/%d/task/%d/children" % (unshare_pid, unshare_pid)
    while time.monotonic() < deadline:
        with open(path) as f:
            kids = f.read().split()
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    raise AssertionError("unshare has no child")


def inner_tids(pid):
    """{the namespace's tid: the host's} of every thread of pid (NSpid)."""
    m = {}
    for t in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/status" % (pid, t)) as f:
            for ln in f:
                if ln.startswith("NSpid:"):
                    ids = [int(x) for x in ln.split()[1:]]
                    m[ids[-1]] = ids[0]
    return m


def container(mounts, env_agent):
    """Start pynamed.py as a container's server: a shell in new mount and
    PID namespaces makes /dev/shm its own, runs mounts (shell lines), then
    execs the server (pid 1), with LD_PRELOAD=env_agent when given.
    Returns (Proc of unshare, host pid of the server, truth path, tmp)."""
    if not shutil.which("unshare"):
        raise Skip("no unshare(1)")
    tmp = tempfile.mkdtemp(prefix="pt-ctr-")
    truth = os.path.join(tmp, "truth.json")
    py = ts.debian_python()
    lines = ["set -e", "mount -t tmpfs pt-shm /dev/shm"] + mounts
    run = "%s %s --truth %s --seconds 1.5" % (py, VICTIM, truth)
    if env_agent:
        run = "env LD_PRELOAD=%s %s" % (env_agent, run)
    lines.append("exec " + run)
    v = Proc(["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--propagation",
              "private", "sh", "-c", "\n".join(lines)], stderr=True)
    line = v.wait_line("ready ")
    eq(int(line.split()[1]), 1, "the server is pid 1 in its namespace")
    return v, host_pid_of(v.p.pid), truth, tmp


def profile_from_host(v, pid, truth, tmp, exe, *extra):
    """The installed proftrace on the host, attached to the server by its
    host pid while it runs; the summary, the truth and stderr."""
    conf = write_conf(tmp, CONF)
    out = os.path.join(tmp, "out")
    pt = None
    try:
        ns = inner_tids(pid)
        pt = Proc([exe, "-p", str(pid), "--targets", conf, "-o", out, "-q"] + list(extra),
                  stdin=False, stdout=True, stderr=True)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        v.wait_line("done", timeout=60)
        pt.p.send_signal(signal.SIGINT)
        rc = pt.wait(60)
        err = pt.rest("err")
        eq(rc, 0, "proftrace exit:\n" + err)
        v.send("exit\n")
        eq(v.wait(30), 0, "server exit")
    finally:
        stop(v, pt)
    s, t = read_run(out, truth)
    return s, t, err, ns


def check_exact(s, t, ns, pid, loaded_by):
    """py: calls counted exactly by the agent, through the namespaces;
    threads under their Python names and host tids; proftrace-py apart."""
    eq(s["meta"]["python"]["agent"]["loaded_by"], loaded_by, "agent loaded by")
    calls = sum(r["calls"] for r in t["per_thread"].values())
    f = [x for x in s["functions"] if x.get("probe") == CONF.split()[1]]
    eq(len(f), 1, "the spin_until row")
    eq(f[0]["timing"], "exact", "timing")
    eq(f[0]["calls"], calls, "calls, the victim's own count")
    eq(s["stats"]["steps"], calls, "steps")
    rows = {x["tid"]: x["name"] for x in s["meta"]["sampling"]["threads"]}
    for name, r in t["per_thread"].items():
        host = ns[r["tid"]]
        assert host != r["tid"], "tids differ across the namespaces"
        eq(rows.get(host), name, "thread %d (%d inside)" % (host, r["tid"]))
    own = s["meta"]["sampling"]["proftrace_threads"]["threads"]
    eq([x["name"] for x in own], ["proftrace-py"], "own threads")
    with open(os.path.join(s["_out"], "stacks.folded"), encoding="utf-8") as fh:
        folded = fh.read()
    assert "bg-worker (tid %d);" % ns[t["per_thread"]["bg-worker"]["tid"]] in folded
    assert "proftrace-py" not in folded


def test_container_env():
    """(a): started with the environment, the helpers at a path of the
    container's own."""
    stage = staged()
    lib = os.path.join(stage, "opt", "proftrace", "lib", "proftrace")
    exe = os.path.join(stage, "opt", "proftrace", "bin", "proftrace")
    inside = tempfile.mkdtemp(prefix="pt-ctr-helpers-")
    mounts = ["mount --bind %s %s" % (lib, inside),
              "mount -o remount,bind,ro %s" % inside,
              "mount -t tmpfs pt-hide %s" % stage]  # the host's install: gone
    v, pid, truth, tmp = container(mounts, os.path.join(inside, "libproftrace_agent.so"))
    # inside, only the container's path holds the agent
    assert os.path.exists("/proc/%d/root%s/libproftrace_agent.so" % (pid, inside))
    assert not os.path.exists("/proc/%d/root%s" % (pid, exe))
    with open("/proc/%d/maps" % pid) as f:
        assert "%s/libproftrace_agent.so" % inside in f.read(), "the agent, from there"
    s, t, err, ns = profile_from_host(v, pid, truth, tmp, exe)
    check_exact(s, t, ns, pid, "environment")


def test_container_inject():
    """(b): started with nothing, the helpers mounted read-only at the
    host's path: --inject from the host."""
    stage = staged()
    lib = os.path.join(stage, "opt", "proftrace", "lib", "proftrace")
    exe = os.path.join(stage, "opt", "proftrace", "bin", "proftrace")
    save = tempfile.mkdtemp(prefix="pt-ctr-save-")
    mounts = ["mount --bind %s %s" % (lib, save),
              "mount -t tmpfs pt-hide %s" % stage,
              "mkdir -p %s" % lib,
              "mount --bind %s %s" % (save, lib),
              "mount -o remount,bind,ro %s" % lib]
    v, pid, truth, tmp = container(mounts, None)
    assert not os.path.exists("/proc/%d/root%s" % (pid, exe)), "only the helpers inside"
    s, t, err, ns = profile_from_host(v, pid, truth, tmp, exe, "--inject")
    check_exact(s, t, ns, pid, "inject")


def test_container_inject_not_mounted():
    """(c): --inject into a container without the helpers: refused, the
    server untouched."""
    stage = staged()
    exe = os.path.join(stage, "opt", "proftrace", "bin", "proftrace")
    v, pid, truth, tmp = container(["mount -t tmpfs pt-hide %s" % stage], None)
    try:
        p = subprocess.run([exe, "-p", str(pid), "--targets", write_conf(tmp, CONF), "-o",
                            os.path.join(tmp, "out"), "--inject", "-q", "-d", "1"],
                           capture_output=True, text=True, timeout=120)
        eq(p.returncode, 2, "exit code:\n" + p.stderr)
        assert "is not visible to process %d (it runs in another mount namespace, a " \
               "container): put the library inside it" % pid in p.stderr, p.stderr
        maps = open("/proc/%d/maps" % pid).read()
        assert "libproftrace_agent" not in maps, "nothing loaded"
        v.send("go\n")
        v.wait_line("done", timeout=60)
        v.send("exit\n")
        eq(v.wait(30), 0, "server exit")
    finally:
        stop(v)
