# SPDX-License-Identifier: BSD-2-Clause
"""`make bench`, section memory: proftrace's RSS over a long run.

Four loads: on tests/victims/victim_faults a steady rate of probed calls
(20,000 a second) and thread churn (1,000 short threads a second, each
making one probed call); on tests/victims/pythreads.py Python thread churn
(500 a second) with stack sampling on, whose per-thread rows are bounded;
on tests/victims/victim_gpu_synth GPU records (about 1,000 steps a second,
each with 5 launch calls, 5 GPU records, its step and bucket calls), with
the GPU join's bound at 100,000 records and a fold lag of 1 s
(PT_GPU_MAX_HELD, PT_GPU_FOLD_LAG_MS) so that it folds all along. proftrace's RSS is read at 1 min (a tenth of a
shorter run) and at its end; memory is bounded when the two agree (docs/guarantees.md says
what is bounded and how). PT_BENCH_MEM_S: the run's length in seconds
(120; the issue's figure is 3600: RSS at 1 min vs 60 min). PT_BENCH_MEM_LOADS:
the loads to run, by mode (rate,threadrate,pythreads,gpu; all by default).
"""
import concurrent.futures
import json
import os
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PROFTRACE = os.path.join(ROOT, "proftrace")
VICTIMS = os.path.abspath(os.environ.get("PT_VICTIMS", os.path.join(ROOT, ".output", "victims")))
SECONDS = float(os.environ.get("PT_BENCH_MEM_S", "120"))
PYTHON = os.environ.get("PT_BENCH_MEM_PYTHON", "/usr/bin/python3.11")
# the first reading: at 1 min (the figure) or a tenth of a short run
EARLY_S = min(60.0, SECONDS / 10)


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def victim_argv(mode, rate, tmp):
    if mode == "gpu":  # about 1 ms a step
        return [os.path.join(VICTIMS, "victim_gpu_synth"), "--steps",
                str(int(SECONDS * rate)), "--truth", os.path.join(tmp, "truth.json")]
    if mode == "pythreads":  # Python, sampled: the sampler's per-thread rows
        return [PYTHON, os.path.join(ROOT, "tests", "victims", "pythreads.py"), str(rate),
                str(SECONDS)]
    return [os.path.join(VICTIMS, "victim_faults"), mode, str(rate), str(SECONDS),
            "--truth", os.path.join(tmp, "truth.json")]


def one(mode, rate, conf_text):
    tmp = tempfile.mkdtemp(prefix="pt-bench-mem-")
    conf = os.path.join(tmp, "t.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    env = dict(os.environ)
    pt_env = dict(os.environ)
    if mode == "gpu":  # the test knobs: a small bound, so the join folds
        pt_env.update(PT_GPU_MAX_HELD="100000", PT_GPU_FOLD_LAG_MS="1000")
    if mode == "pythreads":  # the agent, as a server started with `proftrace env`
        out = subprocess.run(["bash", "-c", 'eval "$("$0" env)" && env -0', PROFTRACE],
                             capture_output=True, check=True).stdout
        env = dict(kv.decode().split("=", 1) for kv in out.split(b"\0") if b"=" in kv)
    v = subprocess.Popen(victim_argv(mode, rate, tmp), env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = int(v.stdout.readline().split()[1])
    t = subprocess.Popen([PROFTRACE, "-q", "-p", str(pid), "--targets", conf, "-o",
                          os.path.join(tmp, "out")], stderr=subprocess.PIPE, env=pt_env)
    while True:
        line = t.stderr.readline().decode(errors="replace")
        if not line or line.startswith("proftrace: attached"):
            break
    v.stdin.write(b"go\n")
    v.stdin.flush()
    t0 = time.monotonic()
    time.sleep(EARLY_S)
    early = rss_kb(t.pid)
    late = early
    while v.poll() is None:
        late = rss_kb(t.pid) or late
        time.sleep(1)
    t.wait(120)
    with open(os.path.join(tmp, "out", "summary.json")) as f:
        s = json.load(f)
    calls = sum(r["calls"] or 0 for r in s["functions"]
                if r["symbol"] in ("fault_step", "fault_tiny", "step", "gpu_step"))
    h = dict(s["health"])
    sm = s["meta"].get("sampling") or {}
    # threads whose state was freed (they entered a probed call), or
    # whose sampled rows were merged into one (sampling)
    h["freed"] = "%s / %s" % (h.get("threads_ended", "?"), sm.get("threads_merged", "-"))
    g = s.get("gpu") or {}
    if mode == "gpu":  # GPU records: folds / late / not held
        h["freed"] = "GPU %s kernels, folds %s, late %s, not held %s" % (
            g.get("kernels"), g.get("folds"), g.get("records_late"), g.get("records_not_held"))
    return early, late, calls / max(time.monotonic() - t0, 1e-9), h


def memory_tables():
    rows = []
    loads = (("20,000 probed calls/s", "rate", 20000, "step native:exe:fault_tiny\n"),
             ("1,000 thread creations/s", "threadrate", 1000,
              "step native:exe:fault_step\nbucket fault.work native:exe:fault_work\n"),
             ("Python, sampled: 500 thread creations/s", "pythreads", 500,
              "step py:pythreads::step\n"),
             ("GPU records: 1,000 steps/s, folding", "gpu", 950,
              "step native:exe:gpu_step\nbucket engine.schedule native:exe:engine_schedule\n"
              "bucket engine.forward native:exe:engine_forward\n"))
    only = os.environ.get("PT_BENCH_MEM_LOADS")
    if only:
        loads = tuple(l for l in loads if l[1] in only.split(","))
    # the loads run at the same time (a proftrace and a victim each): RSS
    # does not depend on the others' CPU use, and the hour's figure then
    # takes one hour, not three
    with concurrent.futures.ThreadPoolExecutor(len(loads)) as pool:
        done = list(pool.map(lambda l: one(l[1], l[2], l[3]), loads))
    for (what, _, _, _), (early, late, per_s, h) in zip(loads, done):
        rows.append([what, "%.0f" % per_s, "%.1f" % (early / 1024), "%.1f" % (late / 1024),
                     "%+.1f%%" % (100.0 * (late - early) / max(early, 1)),
                     h["freed"], str(h.get("dropped_events", "?"))])
    print("\n### Memory over a run of %.0f s (RSS of proftrace; the loads at once)\n" % SECONDS)
    head = ["load", "calls/s seen", "RSS MB at %.0f s" % EARLY_S,
            "RSS MB at %.0f s" % SECONDS, "growth",
            "threads freed / sampled rows merged", "drops"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\nBounded: growth within 10%. PT_BENCH_MEM_S=3600 for the hour.")


if __name__ == "__main__":
    memory_tables()
