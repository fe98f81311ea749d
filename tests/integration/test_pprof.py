# SPDX-License-Identifier: BSD-2-Clause
"""profile.pb.gz: the sampled stacks as a pprof profile. `go tool pprof`
(Debian's golang-go) reads it; it has two sample types, cpu (the default,
as flame.svg) and wall; with wall its top functions and their flat and
cumulative times match stacks.folded, with cpu those of the stacks that do
not end in [off-cpu]; frames keep their file and line."""
import collections
import gzip
import os
import re
import shutil
import subprocess

from harness import Skip, eq
from test_sampling import LINES_CONF, debian_python, run_lines

GO = shutil.which("go") or "/usr/bin/go"


def folded(path):
    """(stack frames root-first, weight) per line of stacks.folded."""
    out = []
    with open(path) as f:
        for line in f:
            stack, _, w = line.rstrip("\n").rpartition(" ")
            out.append((stack.split(";"), int(w)))
    return out


def func_name(frame):
    m = re.match(r"^(.*) \((.*):(\d+)\)$", frame)
    if m and not m.group(2).startswith("tid "):
        return m.group(1)
    # a native frame, "symbol (library)": the library is its file
    m = re.match(r"^(.*) \(([^ :()]+)\)$", frame)
    if m:
        return m.group(1)
    return frame


def pprof(*args):
    env = dict(os.environ, HOME=os.environ.get("HOME", "/root"), PPROF_TMPDIR="/tmp")
    p = subprocess.run([GO, "tool", "pprof"] + list(args), capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


def check_top(prof, index, total, flat, cum):
    text = pprof("-sample_index=" + index, "-top", "-nodecount=100000", "-nodefraction=0",
                 "-edgefraction=0", "-unit=us", prof)
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([\d.]+)us\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)us\s+[\d.]+%\s+(.*)$", line)
        if m:
            rows[m.group(3)] = (float(m.group(1)), float(m.group(2)))
    assert re.search(r"^Type: %s$" % index, text, re.M), text[:500]
    m = re.search(r"of ([\d.]+)us total", text)
    assert m, text[:500]
    eq(round(float(m.group(1))), total, "%s: total weight" % index)
    top = [name for name, _ in flat.most_common(10)]
    for name in top:
        assert name in rows, "%s: %s not in pprof -top:\n%s" % (index, name, text[:2000])
        eq(round(rows[name][0]), flat[name], "%s: flat of %s" % (index, name))
        eq(round(rows[name][1]), cum[name], "%s: cum of %s" % (index, name))


def test_pprof_matches_folded():
    if not os.access(GO, os.X_OK):
        raise Skip("no go (Debian: apt install golang-go)")
    s, _, _ = run_lines(debian_python(), LINES_CONF, seconds=2.0)
    out = s["_out"]
    prof = os.path.join(out, "profile.pb.gz")
    with open(prof, "rb") as f:
        assert f.read(2) == b"\x1f\x8b", "gzip"
    with gzip.open(prof) as f:
        assert len(f.read()) > 100
    stacks = folded(os.path.join(out, "stacks.folded"))
    total = sum(w for _, w in stacks)
    flat = collections.Counter()
    cum = collections.Counter()
    for frames, w in stacks:
        flat[func_name(frames[-1])] += w
        for name in set(func_name(x) for x in frames):
            cum[name] += w
    # pprof's own view: flat and cum per function, in microseconds, of
    # the wall time (stacks.folded's weights)
    check_top(prof, "wall", total, flat, cum)
    # ... and of the on-CPU time, pprof's default (Type: cpu)
    on = [(fr, w) for fr, w in stacks if fr[-1] != "[off-cpu]"]
    flat = collections.Counter()
    cum = collections.Counter()
    for frames, w in on:
        flat[func_name(frames[-1])] += w
        for name in set(func_name(x) for x in frames):
            cum[name] += w
    assert 0 < sum(w for _, w in on) < total, "on-CPU and off-CPU stacks"
    check_top(prof, "cpu", sum(w for _, w in on), flat, cum)
    text = pprof("-top", prof)
    assert re.search(r"^Type: cpu$", text, re.M), text[:500]
    assert "[off-cpu]" not in text, text[:2000]
    # the hot function pylines's work() is there with its file and lines
    text = pprof("-traces", prof)
    assert re.search(r"work\b", text), text[:1000]
    text = pprof("-top", "-lines", "-nodecount=20", prof)
    assert re.search(r"work .*pylines\.py:\d+", text), text[:2000]
