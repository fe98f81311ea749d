# SPDX-License-Identifier: BSD-2-Clause
"""--metrics: a real Prometheus server (Debian's `prometheus`) scrapes
proftrace on 127.0.0.1 during a run; its HTTP API's values are checked
against summary.json."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from harness import Skip, eq, proftrace, proftrace_done, read_run, stop, victim, write_conf

CONF = """\
step   native:exe:ovh_step
bucket ovh.tiny  native:exe:ovh_tiny
bucket ovh.phase native:exe:ovh_phase
"""
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def start_prometheus(tmp, target):
    port = free_port()
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                "scrape_configs:\n  - job_name: proftrace\n    static_configs:\n"
                "      - targets: ['%s']\n" % target)
    p = subprocess.Popen([PROMETHEUS, "--config.file=" + cfg,
                          "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                          "--web.listen-address=127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if http(base + "/-/ready")[0] == 200:
                return p, base
        except OSError:
            pass
        time.sleep(0.2)
    p.kill()
    raise AssertionError("prometheus did not get ready")


def wait_scraped(base, timeout=60):
    """Until Prometheus has scraped proftrace once: its discovery hands
    new targets to the scraper in batches (every 5 s), so a short run
    could end before the first scrape."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = json.loads(http(base + "/api/v1/targets")[1])
        if any(t["health"] == "up" for t in d["data"]["activeTargets"]):
            return
        time.sleep(0.2)
    raise AssertionError("Prometheus never scraped proftrace: %s" % d)


def query(base, q):
    _, body = http(base + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    d = json.loads(body)
    assert d["status"] == "success", d
    return d["data"]["result"]


def test_prometheus_scrapes_proftrace():
    if not os.access(PROMETHEUS, os.X_OK):
        raise Skip("no prometheus (Debian: apt install prometheus)")
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    mport = free_port()
    prom, base = start_prometheus(tmp, "127.0.0.1:%d" % mport)
    conf = write_conf(tmp, CONF)
    out = os.path.join(tmp, "out")
    v = victim("victim_overhead", "--steps", 2000, "--tiny", 2, "--linger", 3)
    pt = None
    try:
        v.send("a\n")
        v.wait_line("unattached done", timeout=60)
        pt = proftrace(v.pid, conf, out, "--metrics", "127.0.0.1:%d" % mport)
        pt.wait_line("proftrace: attached", "err", timeout=60)
        # proftrace answers a scrape by itself too
        status, text = http("http://127.0.0.1:%d/metrics" % mport)
        eq(status, 200, "GET /metrics")
        assert "# TYPE proftrace_step_seconds histogram" in text, text
        wait_scraped(base)
        v.send("b\n")
        assert v.wait(120) == 0, "victim failed"
        proftrace_done(pt)
        # scrapes after the last step saw the final figures
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        lbl = '{pid="%d"}' % v.pid
        steps = query(base, "last_over_time(proftrace_steps_total%s[5m])" % lbl)
        eq(len(steps), 1, "one series")
        m = steps[0]["metric"]
        eq(m["comm"], "victim_overhead", "comm label")
        eq(m["host"], socket.gethostname(), "host label")
        assert "rank" not in m, "no rank label without RANK in its environment: %r" % m
        eq(int(float(steps[0]["value"][1])), s["stats"]["steps"], "steps")
        cnt = query(base, "last_over_time(proftrace_step_seconds_count%s[5m])" % lbl)
        eq(int(float(cnt[0]["value"][1])), s["stats"]["steps"], "histogram count")
        tot = query(base, "last_over_time(proftrace_step_seconds_sum%s[5m])" % lbl)
        assert abs(float(tot[0]["value"][1]) - s["stats"]["time_ms"] / 1e3) < 1e-5, (tot, s["stats"])
        inf = query(base, 'last_over_time(proftrace_step_seconds_bucket{pid="%d",le="+Inf"}[5m])'
                    % v.pid)
        eq(int(float(inf[0]["value"][1])), s["stats"]["steps"], "+Inf bucket")
        # the median from the histogram's buckets brackets summary's p50
        le = query(base, 'last_over_time(proftrace_step_seconds_bucket{pid="%d"}[5m])' % v.pid)
        below = sorted((float(x["metric"]["le"]), float(x["value"][1])) for x in le)
        half = s["stats"]["steps"] / 2
        upper = next(b for b, n in below if n >= half)
        assert s["stats"]["p50_ms"] / 1e3 <= upper, (below, s["stats"]["p50_ms"])
        for b in s["buckets"]:
            got = query(base, 'last_over_time(proftrace_bucket_seconds_total{pid="%d",bucket="%s"}'
                        '[5m])' % (v.pid, b["name"]))
            eq(len(got), 1, "bucket " + b["name"])
            assert abs(float(got[0]["value"][1]) - b["total_ms"] / 1e3) < 1e-5, (got, b)
        ov = query(base, "last_over_time(proftrace_probe_overhead_seconds_total%s[5m])" % lbl)
        want = (s["stats"]["time_ms"] - s["stats"]["corrected_time_ms"]) / 1e3
        assert abs(float(ov[0]["value"][1]) - want) < 1e-5, (ov, want)
        drops = query(base, "last_over_time(proftrace_dropped_events_total[5m])")
        eq(float(drops[0]["value"][1]), s["health"]["dropped_events"], "drops")
        up = query(base, "max_over_time(up{job=\"proftrace\"}[5m])")
        eq(up[0]["value"][1], "1", "scrapes succeeded")
    finally:
        stop(v, pt)
        prom.kill()
        prom.wait()


GPU_CONF = """\
step   native:exe:gpu_step
bucket engine.forward native:exe:engine_forward
"""


def scrape(port):
    """{(name, frozenset(labels)): value} of one scrape."""
    _, text = http("http://127.0.0.1:%d/metrics" % port)
    got = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        name, _, labels = name_labels.partition("{")
        kv = frozenset(tuple(x.split("=", 1)) for x in labels.rstrip("}").split(",") if x)
        got[(name, kv)] = float(value)
    return got


def one(got, name, **want):
    rows = [v for (n, kv), v in got.items()
            if n == name and all(dict(kv).get(k) == '"%s"' % w for k, w in want.items())]
    eq(len(rows), 1, "series of " + name)
    return rows[0]


def test_gpu_metrics_equal_the_summary():
    """GPU busy per device and of all devices, and the host-bound time of
    steps, live: once the GPU lag (2 s) has passed after the last step, a
    scrape equals summary.json's end-of-run join to the ns
    (victim_gpu_synth writes the CUPTI records a real launch would give),
    and so does what a real Prometheus scraping the run stored."""
    n = 150
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    mport = free_port()
    prom, base = None, None
    if os.access(PROMETHEUS, os.X_OK):
        prom, base = start_prometheus(tmp, "127.0.0.1:%d" % mport)
    conf = write_conf(tmp, GPU_CONF)
    out = os.path.join(tmp, "out")
    v = victim("victim_gpu_synth", "--truth", os.path.join(tmp, "truth.json"), "--steps", n,
               "--hold")
    pt = None
    try:
        pt = proftrace(v.pid, conf, out, "--metrics", "127.0.0.1:%d" % mport)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        if prom:
            wait_scraped(base)
        v.send("go\n")
        v.wait_line("steps done", timeout=120)
        # GPU figures are final 2 s behind the clock; then Prometheus
        # (1 s scrapes) takes them at least once
        time.sleep(3.5)
        got = scrape(mport)
        v.send("end\n")
        assert v.wait(60) == 0, "victim failed"
        proftrace_done(pt)
        stored = {}
        if prom:
            for name in ("proftrace_gpu_any_busy_seconds_total",
                         "proftrace_gpu_step_idle_seconds_total"):
                r = query(base, 'last_over_time(%s{pid="%d"}[5m])' % (name, v.pid))
                eq(len(r), 1, "Prometheus series of " + name)
                stored[name] = float(r[0]["value"][1])
    finally:
        stop(v, pt, prom)
        if prom:
            prom.wait()
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    g = s["gpu"]
    pid = str(v.pid)

    def close(got_s, want_ms, what):
        assert abs(got_s - want_ms / 1e3) <= 2e-9, "%s: %r s, summary %r ms" % (
            what, got_s, want_ms)

    eq(len(g["devices"]), 1, "devices")
    for d in g["devices"]:
        close(one(got, "proftrace_gpu_busy_seconds_total", pid=pid, device=d["device"]),
              d["busy_ms"], "device busy")
    close(one(got, "proftrace_gpu_any_busy_seconds_total", pid=pid), g["busy_ms"], "busy")
    # the victim's own figure: 0.43 ms of GPU work per step
    close(one(got, "proftrace_gpu_any_busy_seconds_total", pid=pid), n * 0.43, "busy truth")
    close(one(got, "proftrace_gpu_step_seconds_total", pid=pid), s["stats"]["time_ms"],
          "step time")
    close(one(got, "proftrace_gpu_step_idle_seconds_total", pid=pid), g["steps"]["idle_ms"],
          "host-bound time")
    assert abs(one(got, "proftrace_gpu_host_bound_share", pid=pid) -
               g["steps"]["host_bound_share"]) <= 1e-6, "host-bound share"
    eq(one(got, "proftrace_gpu_late_records_total", pid=pid), 0, "late records")
    if stored:
        close(stored["proftrace_gpu_any_busy_seconds_total"], g["busy_ms"], "Prometheus: busy")
        close(stored["proftrace_gpu_step_idle_seconds_total"], g["steps"]["idle_ms"],
              "Prometheus: host-bound time")
    else:
        print("    (no prometheus here: the direct scrape only)")
    eq(one(got, "proftrace_steps_total", pid=pid), n, "steps")


def test_tokens_metrics_equal_the_summary():
    """tok/s and tokens in the Prometheus output: after the last step, a
    scrape gives the victim's own token count and summary.json's tok/s."""
    n = 300
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    mport = free_port()
    conf = write_conf(tmp, "step native:exe:engine_step tokens=arg0 kv_len=arg1 batch=arg2\n")
    out, truth = os.path.join(tmp, "out"), os.path.join(tmp, "truth.json")
    v = victim("victim_tokens", "--truth", truth, "--steps", n, "--hold")
    pt = None
    try:
        pt = proftrace(v.pid, conf, out, "--metrics", "127.0.0.1:%d" % mport)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        v.wait_line("steps done", timeout=120)
        time.sleep(1)  # the ring is drained every poll_ms (20 ms; longer under load)
        got = scrape(mport)
        v.send("end\n")
        assert v.wait(60) == 0, "victim failed"
        proftrace_done(pt)
    finally:
        stop(v, pt)
    s, t = read_run(out, truth)
    pid = str(v.pid)
    eq(one(got, "proftrace_tokens_total", pid=pid), t["tokens"], "tokens: the victim's count")
    eq(s["stats"]["tokens"], t["tokens"], "summary tokens")
    tps = one(got, "proftrace_tokens_per_second", pid=pid)
    assert abs(tps - s["stats"]["tok_per_s"]) <= 1e-6 * max(1.0, tps), (tps, s["stats"])
