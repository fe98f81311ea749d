# SPDX-License-Identifier: BSD-2-Clause
"""Intra-kernel regions on proftrace's timeline (issue 18, part 1).

proftrace traces victim_gpu_synth (kernels attn_fwd and mlp_fwd of known
lengths on stream 7) with --trace; a generator then writes what a
device-side profiler would have recorded inside those kernels, on a GPU
clock OFF ns ahead of the trace's: raw buffers (.bin + tag table .json,
one per attn_fwd launch, matched in order) and a Chrome-trace JSON
(mlp_fwd launches with explicit indices), plus files that cannot match
(a kernel the trace does not have, a launch past the last one) and a
buffer that overflowed. `proftrace import-regions` must nest every region
inside its kernel on that kernel's stream track (or a lane track holding a
copy of the kernel), at the generator's times exactly (every launch has a
region as long as its kernel, so one offset fits exactly), and
summary.json's gpu.regions must have the generator's figures.
"""
import json
import math
import os
import struct
import subprocess
import tempfile

from harness import PROFTRACE, Proc, VICTIMS, eq, proftrace_done, stop, write_conf
from test_gpu import CONF

OFF = 1700000000123456789  # GPU global timer minus the trace clock, ns
OFF2 = 5000000321  # the Chrome trace's time base (a tool rebases its export)
TAGS = ["whole", "load", "compute", "mma", "store"]
WARPS = 4


def run_traced(n):
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, CONF)
    out = os.path.join(tmp, "out")
    v = Proc([os.path.join(VICTIMS, "victim_gpu_synth"), "--steps", str(n)])
    v.wait_line("ready ")
    pt = None
    try:
        pt = Proc([PROFTRACE, "-p", str(v.p.pid), "--targets", conf, "-o", out, "--trace"],
                  stdin=False, stdout=True, stderr=True)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        assert v.wait(60) == 0, "victim failed"
        proftrace_done(pt)
    finally:
        stop(v, pt)
    return tmp, out


def ns(us):
    return int(round(us * 1000))


def kernels(trace_path):
    with open(trace_path) as f:
        tr = json.load(f)["traceEvents"]
    ks = {}
    for e in tr:
        if e["ph"] == "X" and e.get("cat") == "kernel":
            ks.setdefault(e["name"], []).append((ns(e["ts"]), ns(e["dur"]), e["pid"], e["tid"]))
    for v in ks.values():
        v.sort()
    return ks


def gen_launch(ks, d):
    """Regions of one launch starting at ks (trace ns), lasting d ns:
    [(start_trace_ns, dur_ns, tag, tid)]. Warps overlap; mma nests in
    compute; 'whole' spans the kernel exactly."""
    ev = [(ks, d, 0, 0)]
    for w in range(WARPS):
        s = ks + d * (5 + w) // 100
        load, comp, store = d * 20 // 100, d * 50 // 100, d * 10 // 100
        ev.append((s, load, 1, w))
        ev.append((s + load, comp, 2, w))
        ev.append((s + load + comp * 20 // 100, comp * 40 // 100, 3, w))
        ev.append((s + load + comp, store, 4, w))
    return ev


def write_bin(path, ev, count=None):
    with open(path, "wb") as f:
        f.write(struct.pack("<q", len(ev) if count is None else count))
        for s, d, t, tid in ev:
            f.write(struct.pack("<qqqq", s + OFF, d, t, tid))


def union(iv):
    tot, cs, ce = 0, None, None
    for s, e in sorted(iv):
        if cs is None or s > ce:
            if cs is not None:
                tot += ce - cs
            cs, ce = s, e
        else:
            ce = max(ce, e)
    return tot + (ce - cs if cs is not None else 0)


def nearest_rank(v, q):
    v = sorted(v)
    k = max(1, math.ceil(q * len(v) - 1e-9))
    return v[min(k, len(v)) - 1]


def test_import_regions():
    tmp, out = run_traced(40)
    ks = kernels(os.path.join(out, "trace.json"))
    eq(sorted(ks), ["attn_fwd", "mlp_fwd"], "kernels in the trace")
    with open(os.path.join(out, "summary.json")) as f:
        start_unix = json.load(f)["meta"]["start_unix_ns"]
    with open(os.path.join(out, "trace.json")) as f:
        od = json.load(f)["otherData"]
    start_unix_tr, t0 = od["start_unix_ns"], od["t0_mono_ns"]
    assert start_unix > 2 ** 53, start_unix
    truth = {}   # (kernel, launch) -> events in trace ns
    files = []
    # attn_fwd launches 0..9: raw buffers, in order, tag table beside each
    for i in range(10):
        k0, d, _, _ = ks["attn_fwd"][i]
        ev = gen_launch(k0, d)
        truth[("attn_fwd", i)] = ev
        p = os.path.join(tmp, "attn%02d.bin" % i)
        # launch 3: the profiler counted 7 more events than its buffer held
        write_bin(p, ev, count=len(ev) + 7 if i == 3 else None)
        with open(p[:-4] + ".json", "w") as f:
            json.dump({"kernel": "attn_fwd", "tags": TAGS}, f)
        files.append(p)
    # mlp_fwd launches 3, 5, 7: one Chrome trace, explicit launch indices
    # for two, the third by its process_name
    chrome = []
    for pid, i in enumerate((3, 5, 7)):
        k0, d, _, _ = ks["mlp_fwd"][i]
        ev = gen_launch(k0, d)
        truth[("mlp_fwd", i)] = ev
        chrome.append({"ph": "M", "pid": pid, "name": "process_name",
                       "args": {"name": "mlp_fwd"}})
        for s, dd, t, tid in ev:
            e = {"ph": "X", "pid": pid, "tid": tid, "name": TAGS[t],
                 "ts": (s + OFF2) / 1000.0, "dur": dd / 1000.0, "args": {"launch": i}}
            chrome.append(e)
    cpath = os.path.join(tmp, "mlp_regions.json")
    with open(cpath, "w") as f:
        json.dump({"traceEvents": chrome, "displayTimeUnit": "ns"}, f)
    files.append(cpath)
    # cannot match: a kernel the trace lacks, a launch past the last
    bad = os.path.join(tmp, "other.bin")
    write_bin(bad, gen_launch(0, 1000))
    with open(bad[:-4] + ".json", "w") as f:
        json.dump({"kernel": "no_such_kernel", "tags": TAGS}, f)
    past = os.path.join(tmp, "past.bin")
    write_bin(past, gen_launch(0, 1000))
    with open(past[:-4] + ".json", "w") as f:
        json.dump({"kernel": "mlp_fwd", "launch": 100000, "tags": TAGS}, f)
    files += [bad, past]

    with open(os.path.join(out, "report.md")) as f:
        md_before = f.read()
    with open(os.path.join(out, "trace.json")) as f:
        trace_before = f.read()
    p = subprocess.run([PROFTRACE, "import-regions"] + files + [out], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "13 of 15 region launches matched" in p.stderr, p.stderr
    # report.md: the same, plus a regions section in its GPU part
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    head, sep, rest = md.partition("### Regions inside kernels\n")
    assert sep, md
    section, _, tail = rest.partition("\n\n")  # the summary line
    table, _, tail = tail.partition("\n\n")
    notes, _, tail2 = tail.partition("\n\n")
    assert notes.startswith("- not matched:"), notes
    eq(head + tail2, md_before, "report.md otherwise unchanged")
    assert "13 of 15 region launches matched" in section, section
    assert "| `attn_fwd` | load | 40 | 10 |" in table, table
    # (markdown text: underscores escaped)
    assert "buffer overflowed: %s" % files[3].replace("_", "\\_") in notes, notes
    assert "no_such_kernel" in p.stderr and "not matched" in p.stderr, p.stderr
    assert "overflowed: %d events recorded, %d read" % (
        len(truth[("attn_fwd", 3)]) + 7, len(truth[("attn_fwd", 3)])) in p.stderr, p.stderr

    with open(os.path.join(out, "trace.json")) as f:
        text = f.read()
    doc = json.loads(text)
    tr = doc["traceEvents"]
    # every event proftrace wrote is there as it was, one a line
    lines = set(ln.rstrip(",") for ln in text.splitlines())
    old = [ln.rstrip(",") for ln in trace_before.splitlines() if ln.startswith("{\"ph\"")]
    eq([ln for ln in old if ln not in lines], [], "events of the run, unchanged")
    eq(doc["otherData"]["tool"], "proftrace", "otherData kept")
    regions = [e for e in tr if e["ph"] == "X" and e.get("cat") == "region"]
    eq(len(regions), sum(len(v) for v in truth.values()), "region slices")
    eq(doc["otherData"]["regions"], len(regions), "otherData.regions")
    # slices on each track, to find the kernel each region sits in
    by_track = {}
    for e in tr:
        if e["ph"] == "X" and e.get("cat") in ("kernel", "region_kernel"):
            by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    got = {}
    for r in regions:
        a = r["args"]
        key = (a["kernel"], a["launch"])
        s, d = ns(r["ts"]), ns(r["dur"])
        assert "outside_ns" not in a, r
        k0, kd, kpid, ktid = ks[a["kernel"]][a["launch"]]
        eq(r["pid"], kpid, "region on its kernel's GPU")
        if a["lane"] == 0:
            eq(r["tid"], ktid, "lane 0 is the stream track")
        else:
            eq(r["tid"], 1000000000 + a["lane"] * 1000000 + ktid, "lane track")
        encl = [k for k in by_track[(r["pid"], r["tid"])] if k["name"] == a["kernel"] and
                ns(k["ts"]) <= s and s + d <= ns(k["ts"]) + ns(k["dur"])]
        eq(len(encl), 1, "one enclosing kernel slice on the region's track")
        eq((ns(encl[0]["ts"]), ns(encl[0]["dur"])), (k0, kd), "the launch it ran in")
        got.setdefault(key, []).append((s, d, TAGS.index(r["name"]), a["tid"]))
    eq(sorted(got), sorted(truth), "launches with regions")
    for key in truth:
        eq(sorted(got[key]), sorted(truth[key]), "regions of %s launch %d, exact" % key)
    # slices on one track nest (no partial overlap)
    for track, _ in by_track.items():
        sl = sorted(((ns(e["ts"]), -ns(e["dur"])) for e in tr if e["ph"] == "X" and
                     (e["pid"], e["tid"]) == track and e.get("cat") in
                     ("kernel", "region_kernel", "region")))
        stack = []
        for s, md in sl:
            end = s - md
            while stack and stack[-1] <= s:
                stack.pop()
            assert not stack or end <= stack[-1], "slices overlap on track %r" % (track,)
            stack.append(end)
    names = {e["args"]["name"] for e in tr if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "stream 7 regions 1" in names, names

    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    g = s["gpu"]["regions"]
    eq((g["launches"], g["launches_matched"]), (15, 13), "launches")
    eq(g["regions"], len(regions), "regions")
    al = g["alignment"]
    eq((al["mode"], al["residual_max_ns"], al["regions_outside"], al["regions_clamped"]),
       ("one_offset_per_clock", 0, 0, 0), "one exact offset per clock, nothing outside")
    eq(sorted((c["clock"], c["launches"], c["mode"], c["offset_ns"], c["offset_spread_ns"])
              for c in al["clocks"]),
       sorted([("gpu-globaltimer", 10, "one_offset", t0 - OFF, 0),
               (cpath, 3, "one_offset", t0 - OFF2, 0)]), "clocks: CLOCK_MONOTONIC offsets")
    um = {(u["kernel"], u["why"].split(" ")[0]) for u in g["unmatched"]}
    eq(um, {("no_such_kernel", "no"), ("mlp_fwd", "launch")}, "unmatched")
    eq([(o["kernel"], o["launch"]) for o in g["overflowed"]], [("attn_fwd", 3)], "overflowed")
    kk = {k["name"]: (k["launches"], k["launches_with_regions"]) for k in g["kernels"]}
    eq(kk, {"attn_fwd": (80, 10), "mlp_fwd": (80, 3), "no_such_kernel": (0, 0)}, "kernels")
    tags = {(t["kernel"], t["tag"]): t for t in g["tags"]}
    for kname in ("attn_fwd", "mlp_fwd"):
        launches = [k for k in truth if k[0] == kname]
        kern_ns = sum(ks[kname][k[1]][1] for k in launches)
        for ti, tag in enumerate(TAGS):
            per = [sum(d for _, d, t, _ in truth[k] if t == ti) for k in launches]
            uni = sum(union([(s, s + d) for s, d, t, _ in truth[k] if t == ti])
                      for k in launches)
            t = tags[(kname, tag)]
            eq(t["count"], sum(1 for k in launches for e in truth[k] if e[2] == ti),
               "%s %s count" % (kname, tag))
            eq(round(t["total_ms"] * 1e6), sum(per), "%s %s total" % (kname, tag))
            eq(round(t["mean_ms"] * 1e6), sum(per) // len(per), "%s %s mean" % (kname, tag))
            eq(round(t["p50_ms"] * 1e6), nearest_rank(per, 0.5), "%s %s p50" % (kname, tag))
            eq(round(t["p99_ms"] * 1e6), nearest_rank(per, 0.99), "%s %s p99" % (kname, tag))
            assert abs(t["share_of_kernel"] - uni / kern_ns) < 1e-12, (kname, tag, t)
    eq(tags[("attn_fwd", "whole")]["share_of_kernel"], 1.0, "whole spans the kernel")
    # integers past a double's 53 bits survive the rewrite exactly
    eq(s["meta"]["start_unix_ns"], start_unix, "meta.start_unix_ns")
    eq(doc["otherData"]["start_unix_ns"], start_unix_tr, "otherData.start_unix_ns")

    # importing again replaces, never doubles
    p = subprocess.run([PROFTRACE, "import-regions"] + files[:10] + [out], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(out, "trace.json")) as f:
        tr = json.load(f)["traceEvents"]
    eq(sum(1 for e in tr if e.get("cat") == "region"),
       sum(len(v) for k, v in truth.items() if k[0] == "attn_fwd"), "regions after re-import")
    eq(sum(1 for e in tr if e.get("cat") == "kernel"), 160, "kernels untouched")


def test_import_regions_errors():
    """Malformed input: exit 2 and one line; nothing matched: exit 1."""
    tmp, out = run_traced(5)
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write("{not json")
    p = subprocess.run([PROFTRACE, "import-regions", bad, out], capture_output=True, text=True)
    eq(p.returncode, 2, "malformed: " + p.stderr)
    assert "not JSON" in p.stderr, p.stderr
    short = os.path.join(tmp, "short.bin")
    with open(short, "wb") as f:
        f.write(b"\x01\x02")
    p = subprocess.run([PROFTRACE, "import-regions", "--kernel", "attn_fwd", short, out],
                       capture_output=True, text=True)
    eq(p.returncode, 2, "short buffer: " + p.stderr)
    assert "no event count" in p.stderr, p.stderr
    none = os.path.join(tmp, "none.bin")
    write_bin(none, gen_launch(0, 1000))
    p = subprocess.run([PROFTRACE, "import-regions", "--kernel", "nope", none, out],
                       capture_output=True, text=True)
    eq(p.returncode, 1, "nothing matched: " + p.stderr)
    assert "0 of 1 region launches matched" in p.stderr and "no kernel of that name" in p.stderr, \
        p.stderr
    p = subprocess.run([PROFTRACE, "import-regions", none, tmp], capture_output=True, text=True)
    eq(p.returncode, 2, "no trace.json: " + p.stderr)
    assert "--trace" in p.stderr, p.stderr
    # a buffer without kernel name or --kernel: said, not guessed
    p = subprocess.run([PROFTRACE, "import-regions", none, out], capture_output=True, text=True)
    eq(p.returncode, 1, "no kernel name: " + p.stderr)
    assert "no kernel name" in p.stderr, p.stderr
