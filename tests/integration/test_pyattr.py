# SPDX-License-Identifier: BSD-2-Clause
"""pyattr: attribute locations and reads against each interpreter's own answers.

tests/victims/pyattr_victim.py builds objects of every kind of attribute
storage (shared keys, combined and replaced dicts, materialized dicts,
__slots__ and their subclasses, dataclasses, properties, class attributes,
__getattr__/__getattribute__, var-sized instances, a 50000-entry dict, C
types' dicts) and prints, per attribute, what getattr() gives. Some types
are resolved before any instance exists (phase 1), the way proftrace
resolves a type when it first meets it. tests/tools/pyattr_check then reads
each attribute out of the live process with pt_pyattr__resolve() and
pt_pyattr__read() (pyattr_check.c says what it compares).
"""
import glob
import os
import subprocess
import tempfile
import time

from harness import ROOT, Proc, Skip

PYENV = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
TOOLS = os.path.abspath(os.environ.get("PT_TOOLS", os.path.join(ROOT, ".output", "tests-tools")))
CHECK = os.path.join(TOOLS, "pyattr_check")
VICTIM = os.path.join(ROOT, "tests", "victims", "pyattr_victim.py")


def lines_until(v, end):
    """The victim's stdout lines up to and including the one that is end."""
    got = []
    while True:
        line = v.wait_line("", timeout=60)
        got.append(line)
        if line == end:
            return got


def check(python, want_minor):
    if not os.path.exists(python):
        raise Skip("no %s" % python)
    assert os.access(CHECK, os.X_OK), "no %s: build it with `make integration`" % CHECK
    t0 = time.monotonic()
    v = Proc([python, "-I", VICTIM])
    state = tempfile.NamedTemporaryFile(prefix="pt-pyattr-", delete=False)
    state.close()
    try:
        early = lines_until(v, "W")
        assert early[0].startswith("P ") and early[0].split()[2] == str(want_minor), early[0]
        res = subprocess.run([CHECK, "--early", state.name], input="\n".join(early).encode(),
                             capture_output=True, timeout=60)
        assert res.returncode == 0, "pyattr_check --early exit %d:\n%s%s" % (
            res.returncode, res.stdout.decode(errors="replace"),
            res.stderr.decode(errors="replace"))
        v.send("go\n")
        dump = [early[0]] + lines_until(v, "E")
        t1 = time.monotonic()
        res = subprocess.run([CHECK, "--state", state.name], input="\n".join(dump).encode(),
                             capture_output=True, timeout=120)
        out = res.stdout.decode(errors="replace").strip()
        err = res.stderr.decode(errors="replace")
        print("  %s: %s (victim %.1fs, check %.1fs)" % (python, out or "no result", t1 - t0,
                                                      time.monotonic() - t1))
        assert res.returncode == 0, "pyattr_check exit %d:\n%s\n%s" % (res.returncode, out, err)
        v.send("bye\n")
        assert v.wait(30) == 0, "victim failed"
    finally:
        v.kill()
        os.unlink(state.name)


def pyenv(minor):
    found = sorted(glob.glob(os.path.join(PYENV, "versions", "3.%d.*" % minor, "bin", "python3")))
    if not found:
        raise Skip("no pyenv CPython 3.%d" % minor)
    return found[-1]


def test_pyattr_38():
    check(pyenv(8), 8)


def test_pyattr_39():
    check(pyenv(9), 9)


def test_pyattr_310():
    check(pyenv(10), 10)


def test_pyattr_311():
    check(pyenv(11), 11)


def test_pyattr_312():
    check(pyenv(12), 12)


def test_pyattr_313():
    check(pyenv(13), 13)


def test_pyattr_debian_311():
    check("/usr/bin/python3.11", 11)


def _bpf_vs_reference(python):
    """One interpreter: each kind's BPF reads (count tokens per look_<kind>)
    against the user reference's reads of the same objects."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests", "victims"))
    import pyattr_cmp as pc
    from harness import profile
    import test_python as tp
    conf = "step py:pyattr_cmp::never_called\n" + "".join(
        "count tokens py:pyattr_cmp::look_%s arg:o.%s\n" % (k, a) for k, a in pc.KINDS)
    s, t, err = profile(conf, victim_args=["--check", CHECK],
                        victim_name=[python, os.path.join(ROOT, "tests", "victims",
                                                          "pyattr_cmp.py")],
                        victim_env=tp.victim_env())
    # the reference: every read as Python's getattr() says
    assert t["check_rc"] == 0, t["check_out"]
    lines = s["values"]["count_tokens"]
    assert len(lines) == len(pc.KINDS), lines
    for (kind, attr), v in zip(pc.KINDS, lines):
        want = t["kinds"][kind]
        what = "%s: %s (%s, reference: %s)" % (python, kind, attr, want["expect"])
        miss = dict(v["missing"])
        # the first reads of a type not met before wait for its layout
        early = miss.pop("type_pending", 0) + miss.pop("first_call", 0)
        assert early <= 3, (what, v)
        if "value" in want:
            assert not miss, (what, v)
            assert v["read"] == t["calls"] - early, (what, v)
            assert v["tokens_outside_step"] == want["value"] * v["read"], (what, v)
        else:
            assert miss == {want["missing"]: t["calls"] - early}, (what, v)
            assert v["tokens_outside_step"] == 0, (what, v)
    return s


def test_pyattr_bpf_matches_reference():
    """proftrace's attribute read in BPF and the user-space reference it
    was ported from agree, kind of storage by kind (shared keys, combined,
    replaced and materialized dicts, slots, a slot class's dict, a
    dataclass, a namespace; deleted, unset, class-only, a property, a key
    that is not the interned name), on every interpreter here."""
    ran = []
    for minor in (8, 9, 10, 11, 12, 13):
        try:
            python = pyenv(minor)
        except Skip:
            continue
        _bpf_vs_reference(python)
        ran.append("3.%d" % minor)
    if os.path.exists("/usr/bin/python3.11"):
        _bpf_vs_reference("/usr/bin/python3.11")
        ran.append("debian-3.11")
    assert ran, "no interpreter"
    print("  BPF and reference reads agree on: %s" % ", ".join(ran))
