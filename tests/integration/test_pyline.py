# SPDX-License-Identifier: BSD-2-Clause
"""pyline: line-table decoding against each interpreter's own answers.

Each interpreter dumps every code object of its top-level standard library
(the .pyc files its own compiler wrote, else compiled from source) plus a
few synthetic ones with extreme tables (line jumps of 2*10^5 in both
directions, firstlineno past 2^16, one line spanning thousands of bytes):
firstlineno, the code length, the raw table, and the truth. On 3.10+ the
truth is co_lines(). 3.8/3.9 have no co_lines(): there the truth is
PyCode_Addr2Line() called through ctypes for every even offset, the C
function CPython itself uses for a frame's f_lineno and a traceback's
tb_lineno (so no frame is needed), plus dis.findlinestarts() for the line
starts. tests/tools/pyline_check decodes the same tables with
pt_pyline__*() and counts mismatches (pyline_check.c says what it checks).
"""
import glob
import os
import subprocess
import time

from harness import ROOT, Skip

PYENV = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
TOOLS = os.path.abspath(os.environ.get("PT_TOOLS", os.path.join(ROOT, ".output", "tests-tools")))
CHECK = os.path.join(TOOLS, "pyline_check")

DUMP = r'''
import ctypes, dis, importlib.util, marshal, os, sys, sysconfig

minor = sys.version_info[1]
out = []
w = out.append

def gap(n):
    return "\n" * n

SYNTHETIC = [
    # a forward jump of 2*10^5 lines (4-chunk varints on 3.11+), then back
    "def jump(xs):\n    t = 0\n    for x in xs:\n        t += x\n" + gap(200000) +
    "        t -= 1\n    return t\n",
    # a call whose arguments are 3000 lines below it: the call goes back
    "def back(f, a):\n    return f(a,\n" + gap(3000) + "             a)\n",
    # firstlineno past 2^16 (multi-chunk varints on 3.11+)
    gap(70000) + "def far():\n    return 1\n",
    # one line of several thousand bytes (3.8: >255-byte pairs; 3.10: 254-byte chains)
    "def wide():\n    return [" + ", ".join("v%d" % i for i in range(1500)) + "]\n",
    "x = (1,\n" + gap(300) + "     2)\nclass K:\n    def m(self):\n        pass\n",
]

codes = []
def walk(co, name):
    codes.append((co, name))
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            walk(c, name)

d = sysconfig.get_paths()["stdlib"]
for f in sorted(os.listdir(d)):
    if not f.endswith(".py"):
        continue
    path = os.path.join(d, f)
    try:
        with open(importlib.util.cache_from_source(path), "rb") as fh:
            data = fh.read()
        if data[:4] != importlib.util.MAGIC_NUMBER:
            raise OSError
        co = marshal.loads(data[16:])
    except (OSError, ValueError, EOFError):
        try:
            with open(path, "rb") as fh:
                co = compile(fh.read(), path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, OSError):
            continue
    walk(co, f)
for i, src in enumerate(SYNTHETIC):
    walk(compile(src, "synthetic%d" % i, "exec", dont_inherit=True), "synthetic%d" % i)

if minor < 10:
    a2l = ctypes.pythonapi.PyCode_Addr2Line
    a2l.argtypes = [ctypes.py_object, ctypes.c_int]
    a2l.restype = ctypes.c_int

w("V %d" % minor)
for co, name in codes:
    tab = co.co_linetable if minor >= 10 else co.co_lnotab
    n = len(co.co_code)
    w("C %d %d %s %s:%s" % (co.co_firstlineno, n, tab.hex() or "-", name,
                           co.co_name.replace(" ", "_")))
    if minor >= 10:
        for s, e, l in co.co_lines():
            w("R %d %d %d" % (s, e, -1 if l is None else l))
    else:
        w("O " + " ".join([str(a2l(co, a)) for a in range(0, n, 2)]))
        for a, l in dis.findlinestarts(co):
            w("S %d %d" % (a, l))
w("E")
sys.stdout.write("\n".join(out) + "\n")
'''


def check(python, want_minor):
    if not os.path.exists(python):
        raise Skip("no %s" % python)
    assert os.access(CHECK, os.X_OK), "no %s: build it with `make integration`" % CHECK
    t0 = time.monotonic()
    dump = subprocess.run([python, "-I", "-c", DUMP], capture_output=True, timeout=60)
    assert dump.returncode == 0, "%s failed:\n%s" % (python, dump.stderr.decode(errors="replace"))
    assert dump.stdout.startswith(b"V %d\n" % want_minor), dump.stdout[:40]
    t1 = time.monotonic()
    res = subprocess.run([CHECK], input=dump.stdout, capture_output=True, timeout=60)
    out = res.stdout.decode(errors="replace").strip()
    err = res.stderr.decode(errors="replace")
    print("  %s: %s (dump %.1fs, check %.1fs)" % (python, out or "no result", t1 - t0,
                                                  time.monotonic() - t1))
    assert res.returncode == 0, "pyline_check exit %d:\n%s\n%s" % (res.returncode, out, err)


def pyenv(minor):
    found = sorted(glob.glob(os.path.join(PYENV, "versions", "3.%d.*" % minor, "bin", "python3")))
    if not found:
        raise Skip("no pyenv CPython 3.%d" % minor)
    return found[-1]


def test_pyline_38():
    check(pyenv(8), 8)


def test_pyline_39():
    check(pyenv(9), 9)


def test_pyline_310():
    check(pyenv(10), 10)


def test_pyline_311():
    check(pyenv(11), 11)


def test_pyline_312():
    check(pyenv(12), 12)


def test_pyline_313():
    check(pyenv(13), 13)


def test_pyline_debian_311():
    check("/usr/bin/python3.11", 11)
