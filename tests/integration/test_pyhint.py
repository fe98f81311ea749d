# SPDX-License-Identifier: BSD-2-Clause
"""py: probes that match nothing, said at attach with the closest names;
dotted module-level functions; and what the report and stderr say when
steps are not counted (issue 24, parts 3 and 4).

Against tests/victims/pyengine.py (its functions, classes and module are
known: see its docstring) and tests/victims/pydot_victim.py (pydot.mod's
module-level work() and Runner.run, with their call counts as truth):

- with the Python agent, a typo in a method, a function, a module, and a
  class named as a function each get one line at attach, before
  "proftrace: attached", naming the file:line:col and the closest
  qualified names the process has (or that the module is not imported);
  report.md and summary.json give the same reason;
- --dry-run with the agent lists the functions it would hook and the
  reasons, and leaves the agent dormant (a real attach after is exact);
- without the agent, the step is said to be sampled (not "did it attach"),
  stderr counts the py: probes as sampled, and a typo is said from the
  samples within a second;
- py:pydot.mod.work (function of module pydot.mod, written with dots)
  counts exactly the calls the victim made; py:pydot.mod.nosuch lists
  both spellings.
"""
import json
import os
import subprocess
import tempfile

from harness import (PROFTRACE, ROOT, Skip, eq, func, profile, proftrace, proftrace_done,
                     read_run, stop, victim, write_conf)
import test_python as tp

DEBIAN_PY = "/usr/bin/python3.11"
PYDOT = os.path.join(ROOT, "tests", "victims", "pydot_victim.py")

TYPOS = """\
step   py:pyengine.Engine.stepp
bucket a.sched py:pyengine.Scheduler.schedule
bucket a.post  py:pyengine::postprocesss
bucket a.gone  py:pyenginee.Engine.step
bucket a.cls   py:pyengine.Engine
"""


def debian():
    if not os.access(DEBIAN_PY, os.X_OK):
        raise Skip("no %s" % DEBIAN_PY)
    return DEBIAN_PY


def said_at_attach(err, pid, conf_path, pos, probe, text):
    """The line for probe at conf_path:pos, said before "attached"."""
    lines = err.splitlines()
    att = [k for k, x in enumerate(lines) if x.startswith("proftrace: attached")]
    assert att, err
    want = "pid %d: %s:%s: %s: %s" % (pid, conf_path, pos, probe, text)
    hits = [k for k, x in enumerate(lines) if want in x]
    assert len(hits) == 1, "want one line with %r in:\n%s" % (want, err)
    assert hits[0] < att[0], "said after attach:\n%s" % err
    return lines[hits[0]]


def row(s, probe):
    rows = [f for f in s["functions"] if f["probe"] == probe]
    eq(len(rows), 1, "rows of " + probe)
    return rows[0]


def test_typos_with_agent():
    s, t, err = profile(TYPOS, victim_args=["--steps", 60],
                        victim_name=[debian(), tp.VICTIM], victim_env=tp.victim_env())
    pid = s["meta"]["pid"]
    conf = s["meta"]["targets_file"]
    line = said_at_attach(err, pid, conf, "1:8", "py:pyengine.Engine.stepp",
                          "no function of module pyengine matches (closest: "
                          "py:pyengine.Engine.step, ")
    assert line.startswith("proftrace: warning: "), line
    said_at_attach(err, pid, conf, "3:16", "py:pyengine::postprocesss",
                   "no function of module pyengine matches (closest: py:pyengine::postprocess, ")
    said_at_attach(err, pid, conf, "4:16", "py:pyenginee.Engine.step",
                   "neither module pyenginee nor pyenginee.Engine is imported")
    line = said_at_attach(err, pid, conf, "5:16", "py:pyengine.Engine",
                          "no function of module pyengine matches (closest: ")
    assert line.endswith("; Engine is a class: name a method, py:pyengine.Engine.<method>"), \
        line
    # the one probe that matched: counted, and the attach line says so
    eq(func(s, "Scheduler.schedule")["calls"], t["functions"]["Scheduler.schedule"]["calls"],
       "schedule calls")
    assert "proftrace: attached 1 probe to pid %d" % pid in err, err
    assert "agent hooks 1 code object for 1 of 5 py: probes" in err, err
    # the same reasons in summary.json and report.md
    r = row(s, "py:pyengine.Engine.stepp")
    eq(r["attached"], False, "stepp attached")
    assert r["reason"].startswith("no function of module pyengine matches (closest: "
                                  "py:pyengine.Engine.step, "), r
    assert "is not imported" not in row(s, "py:pyengine::postprocesss")["reason"]
    assert "nor pyenginee.Engine is imported" in row(s, "py:pyenginee.Engine.step")["reason"]
    u = [x["reason"] for x in s["health"]["unattached"] if x["probe"] == "py:pyengine.Engine"]
    assert u and "Engine is a class" in u[0], s["health"]["unattached"]
    with open(os.path.join(s["_out"], "report.md")) as f:
        md = f.read()
    assert ("The step probe `py:pyengine.Engine.stepp` (mode call) matched no function: no "
            "function of module pyengine matches (closest: py:pyengine.Engine.step") \
        in md.replace("\\_", "_"), md
    assert "did it attach" not in md, md


def test_dry_run_lists_candidates():
    """--dry-run asks the agent what it would hook now, and leaves it
    dormant: an attach after it counts every call."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    truth_path = os.path.join(tmp, "truth.json")
    conf = write_conf(tmp, TYPOS)
    v = victim([debian(), tp.VICTIM], "--truth", truth_path, "--steps", 60,
               env=tp.victim_env())
    pt = None
    try:
        p = subprocess.run([PROFTRACE, "-p", str(v.pid), "--targets", conf, "--dry-run"],
                           capture_output=True, text=True, timeout=60)
        eq(p.returncode, 0, "dry run: " + p.stderr)
        out = p.stdout
        with open(tp.VICTIM) as f:
            src = f.read().split("\n")
        line = 1 + next(k for k, x in enumerate(src) if x.startswith("class Scheduler"))
        assert ("Scheduler.schedule %s:%d (the agent hooks it at attach)"
                % (tp.VICTIM, line + 1)) in out, out
        stepp = [x for x in out.splitlines() if x.startswith("py:pyengine.Engine.stepp ")]
        eq(len(stepp), 1, "rows of the typo")
        assert stepp[0].split(None, 1)[1].startswith(
            "matches nothing now: no function of module pyengine matches (closest: "
            "py:pyengine.Engine.step"), stepp
        assert "py:pyenginee.Engine.step" in out and "is imported" in out, out
        # the agent is dormant again: a real attach is exact
        out_dir = os.path.join(tmp, "out")
        pt = proftrace(v.pid, write_conf(tmp, tp.CONF), out_dir)
        pt.wait_line("proftrace: attached", "err", timeout=90)
        v.send("go\n")
        assert v.wait(120) == 0
        proftrace_done(pt)
    finally:
        stop(v, pt)
    s, t = read_run(out_dir, truth_path)
    eq(s["stats"]["steps"], 60, "steps after a dry run")
    eq(func(s, "Scheduler.schedule")["calls"], t["functions"]["Scheduler.schedule"]["calls"],
       "schedule calls after a dry run")


def test_without_agent_says_sampled():
    """No agent: the step is sampled, and says so; a typo is said from the
    samples (within a second), with the closest sampled names."""
    conf = "step py:pyengine.Engine.step\nbucket a.b py:pyengine.Scheduler.schedulee\n"
    s, _, err = profile(conf, victim_args=["--steps", 2500],
                        victim_name=[debian(), tp.VICTIM],
                        victim_env=tp.victim_env(agent=False))
    pid = s["meta"]["pid"]
    assert "attached 0 probes to pid %d (python3.11); 2 py: probes timed from samples " \
           "(no Python agent: above)" % pid in err, err
    want = ("proftrace: warning: pid %d: %s:2:12: py:pyengine.Scheduler.schedulee: no sampled "
            "function of module pyengine matches (closest: py:pyengine.Scheduler.schedule"
            % (pid, s["meta"]["targets_file"]))
    assert want in err, err
    eq(s["stats"]["steps"], 0, "steps (sampled)")
    with open(os.path.join(s["_out"], "report.md")) as f:
        md = f.read()
    assert ("The step probe `py:pyengine.Engine.step` (mode call) was found, but its calls "
            "are only sampled here") in md, md
    assert "did it attach" not in md


def test_dotted_function():
    """py:pydot.mod.work: function work of module pydot.mod, every call
    counted; py:pydot.mod.Runner.run a method; py:pydot.mod.nosuch says
    both spellings."""
    conf = ("bucket d.work py:pydot.mod.work\n"
            "bucket d.run  py:pydot.mod.Runner.run\n"
            "bucket d.nope py:pydot.mod.nosuch\n")
    s, t, err = profile(conf, victim_args=["--calls", 300],
                        victim_name=[debian(), PYDOT], victim_env=tp.victim_env())
    eq(func(s, "work")["calls"], t["work"], "work calls")
    eq(func(s, "work")["timing"], "exact", "work timing")
    eq(func(s, "Runner.run")["calls"], t["run"], "Runner.run calls")
    r = row(s, "py:pydot.mod.nosuch")
    assert r["reason"].startswith("no function of module pydot or pydot.mod matches"), r
    assert ("it reads as method nosuch of class mod in module pydot or as function nosuch "
            "of module pydot.mod (py:pydot.mod::nosuch)") in r["reason"], r
    assert "py:pydot.mod.nosuch: no function of module pydot or pydot.mod" in err, err
