# SPDX-License-Identifier: BSD-2-Clause
"""--interval SEC: a summary per window in the output folder, bounded in
number; the final summary.json covers the whole run as without it."""
import glob
import json
import os
import subprocess

from harness import PROFTRACE, eq, profile

CONF = """\
step   native:exe:engine_step
bucket engine.forward native:exe:engine_forward
"""


def test_interval_windows():
    env_keep = os.environ.get("PT_WINDOWS_KEPT")
    os.environ["PT_WINDOWS_KEPT"] = "3"
    try:
        s, t, _ = profile(CONF, ("--steps", 5000), extra=("--interval", "1"))
    finally:
        if env_keep is None:
            del os.environ["PT_WINDOWS_KEPT"]
        else:
            os.environ["PT_WINDOWS_KEPT"] = env_keep
    eq(s["stats"]["steps"], t["steps"], "the final summary: every step, as without --interval")
    files = sorted(glob.glob(os.path.join(s["_out"], "window-*.json")))
    wins = [json.load(open(f)) for f in files]
    n = int(s["meta"]["duration_s"])  # windows that ended before the run did
    assert n >= 4, "a run of %.1f s" % s["meta"]["duration_s"]
    # only the last 3 are kept
    eq([w["window"]["index"] for w in wins], list(range(n - 2, n + 1)), "windows kept")
    for w in wins:
        i = w["window"]["index"]
        eq(w["window"]["start_s"], i - 1, "start")
        eq(w["window"]["end_s"], i, "end")
        eq(w["meta"]["duration_s"], 1, "a window's duration")
        st = w["stats"]
        assert st["steps"] > 100, st
        eq(st["steps_per_s"], st["steps"], "steps per second of a 1 s window")
        # each step ~1 ms: a 1 s window holds about 1000 less what the machine took
        assert st["steps"] <= 1100, st
        # a step that straddles the window's edges is not in it
        assert st["incomplete_steps"] <= 2, st
        b = [x for x in w["buckets"] if x["name"] == "engine.forward"][0]
        eq(b["calls"], st["steps"], "forward once per step")
        f = [x for x in w["functions"] if x["symbol"] == "engine_step"][0]
        assert st["steps"] <= f["calls"] <= st["steps"] + 1, (f["calls"], st["steps"])
