# SPDX-License-Identifier: BSD-2-Clause
"""Tokens, KV lengths and batch sizes per step, read at the probes (issue 7).

The victims pass known values and record them per step themselves
(victim_tokens.c, pytokens.py). Totals, means and bin populations must be
exact; tok/s is tokens over the summed step time, where proftrace's step
(BPF entry to return) lies inside the victim's own timing around the call,
so its rate is at least the victim's and within 5% of it (per-step probe
and call overhead is a few microseconds of steps of 0.1-1 ms).
"""
from harness import Skip, eq, profile
from test_python import pyenv_python, victim_env
import os

from harness import ROOT

PYVICTIM = os.path.join(ROOT, "tests", "victims", "pytokens.py")
BINS = [0, 512, 1024, 2048, 4096, 8192, 16384]
WARM = 10


def bin_of(x):
    return max(i for i, lo in enumerate(BINS) if x >= lo)


def check_rate(got, tokens, secs, what):
    want = tokens / secs
    assert want <= got <= want * 1.05, "%s: %.1f tok/s, victim's own %.1f" % (what, got, want)


def check_bins(s, steps, key):
    """bin populations and tokens, by the victim's own per-step figure"""
    got = s["decode_length_buckets"]
    eq([b["kv_min"] for b in got], BINS, "bin bounds")
    eq(got[-1]["kv_max"], None, "last bin open-ended")
    pop = [0] * len(BINS)
    tok = [0] * len(BINS)
    for st in steps:
        pop[bin_of(st[key])] += 1
        tok[bin_of(st[key])] += st["tokens"]
    eq([b["steps"] for b in got], pop, "steps per kv bin")
    eq([b["tokens"] for b in got], tok, "tokens per kv bin")


def test_native_args():
    conf = ("step native:exe:engine_step tokens=arg0 kv_len=arg1 batch=arg2\n"
            "bucket engine.sample native:exe:sampler_accept\n")
    s, t, _ = profile(conf, ["--steps", 300], victim_name="victim_tokens")
    st = s["stats"]
    eq(st["steps"], 300, "steps")
    eq(st["tokens"], t["tokens"], "tokens")
    eq(st["steps_with_tokens"], 300, "steps with tokens")
    eq(st["batch_mean"], round(t["batch_sum"] / 300, 6), "batch mean")
    eq(st["kv_len_mean"], round(t["kv_sum"] / 300, 6), "kv_len mean")
    got = s["decode_length_buckets"]
    eq([b["steps"] for b in got], [b["steps"] for b in t["bins"]], "steps per kv bin")
    eq([b["tokens"] for b in got], [b["tokens"] for b in t["bins"]], "tokens per kv bin")
    check_rate(st["tok_per_s"], t["tokens"], t["step_ns"] / 1e9, "tok/s")
    for role in ("tokens", "kv_len", "batch"):
        v = s["values"][role]
        eq((v["read"], v["missing_total"], v["steps_without_value"]), (300, 0, 0), role)
    assert "## Tokens and sequence lengths" in open(os.path.join(s["_out"], "report.md")).read()


def test_native_count_ret():
    """count tokens from another function's return value"""
    conf = ("step native:exe:engine_step kv_len=arg1\n"
            "count tokens native:exe:sampler_accept ret\n"
            "set kv_bins 0,4096\n")
    s, t, _ = profile(conf, ["--steps", 200], victim_name="victim_tokens")
    eq(s["stats"]["tokens"], t["accepted"], "tokens from sampler_accept's return")
    eq(s["values"]["count_tokens"][0]["read"], 200, "count reads")
    eq(s["values"]["count_tokens"][0]["outside_step"], 0, "outside a step")
    eq([b["kv_min"] for b in s["decode_length_buckets"]], [0, 4096], "custom bins")
    eq(sum(b["steps"] for b in s["decode_length_buckets"]), 200, "binned steps")


def test_native_32bit_argument():
    """engine_reject(int delta) gets negative ints: :i32 reads them right;
    the whole register (the default, a long) would read the zero-extended
    upper half as a large positive number"""
    conf = ("step native:exe:engine_step\n"
            "count tokens native:exe:engine_reject arg0:i32\n")
    s, t, _ = profile(conf, ["--steps", 100], victim_name="victim_tokens")
    eq(s["stats"]["tokens"], t["rejected"], "tokens from a 32-bit argument")
    assert t["rejected"] < 0, t
    conf = conf.replace("arg0:i32", "arg0:u32")
    s, t, _ = profile(conf, ["--steps", 100], victim_name="victim_tokens")
    eq(s["stats"]["tokens"], sum((-(i % 5)) & 0xffffffff for i in range(100)), "as u32")


PYCONF = ("step py:pytokens.Engine.step tokens=arg:num_tokens kv_len=arg:kv_lens "
          "batch=len(arg:reqs)\nset warmup_steps %d\n" % WARM)


def run_py(python, conf, env=None, args=(), steps=150):
    return profile(conf, victim_args=["--steps", steps, "--warmup", WARM] + list(args),
                   victim_name=list(python), victim_env=victim_env(env))


def answered_in_warmup(s):
    """Only the first calls, before the code object (or an object's type,
    for attributes) was known to BPF, may miss their values, and those
    within the warmup steps (the victim gives them 0.35 s): else the
    counted steps' figures cannot be the victim's."""
    v = s["values"]
    for role, x in [(k, v[k]) for k in ("tokens", "kv_len", "batch") if k in v] + \
            [("count_tokens", c) for c in v.get("count_tokens", [])]:
        assert set(x["missing"]) <= {"first_call", "type_pending"}, (role, x)
        assert x["missing_total"] <= WARM, (
            "%s: %d calls missed their value, more than the %d warmup steps: proftrace "
            "answered BPF late" % (role, x["missing_total"], WARM), x)


def check_py(s, t, steps):
    answered_in_warmup(s)
    counted = t["steps"][WARM:]
    st = s["stats"]
    eq(st["steps"], steps - WARM, "counted steps")
    eq(st["steps_with_tokens"], steps - WARM, "steps with tokens")
    eq(st["tokens"], sum(x["tokens"] for x in counted), "tokens")
    eq(st["batch_mean"], round(sum(x["batch"] for x in counted) / len(counted), 6), "batch")
    kv = sum(x["kv_mean"] for x in counted) / len(counted)
    assert abs(st["kv_len_mean"] - kv) < 1e-5, (st["kv_len_mean"], kv)
    check_bins(s, counted, "kv_mean")
    check_rate(st["tok_per_s"], sum(x["tokens"] for x in counted),
               sum(x["s"] for x in counted), "tok/s")
    for role in ("tokens", "kv_len", "batch"):
        eq(s["values"][role]["steps_without_value"], 0, role + " steps without")


def py_versions():
    out = []
    for minor in (8, 9, 10):
        out.append(([pyenv_python(minor), PYVICTIM], None))
    for minor in (12, 13):  # every call seen with the perf trampoline
        out.append(([pyenv_python(minor), "-X", "perf", PYVICTIM], None))
    return out


def test_python_args_all_versions():
    for cmd, env in py_versions():
        s, t, _ = run_py(cmd, PYCONF, env)
        try:
            check_py(s, t, 150)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (cmd[0], e))


def test_python_p90_and_count_ret():
    conf = ("step py:pytokens.Engine.step kv_len=p90(arg:kv_lens)\n"
            "count tokens py:pytokens.Sampler.sample len(ret)\n"
            "set warmup_steps %d\n" % WARM)
    s, t, _ = run_py([pyenv_python(10), PYVICTIM], conf)
    answered_in_warmup(s)
    counted = t["steps"][WARM:]
    for x in counted:
        x["tokens"] = x["accepted"]
    eq(s["stats"]["tokens"], sum(x["accepted"] for x in counted), "accepted tokens")
    eq(s["values"]["kv_len"]["reduce"], "p90", "reduce")
    check_bins(s, counted, "kv_p90")
    kv = sum(x["kv_p90"] for x in counted) / len(counted)
    assert abs(s["stats"]["kv_len_mean"] - kv) < 1e-5, (s["stats"]["kv_len_mean"], kv)


def test_python_kv_len_reduce_max():
    conf = PYCONF + "set kv_len_reduce max\n"
    s, t, _ = run_py([pyenv_python(9), PYVICTIM], conf)
    answered_in_warmup(s)
    check_bins(s, t["steps"][WARM:], "kv_max")


OBJCONF = ("step py:pytokens.Engine.step_obj tokens=arg:out.num_scheduled_tokens "
           "kv_len=arg:out.kv_lens batch=len(arg:out.reqs)\nset warmup_steps %d\n" % WARM)


def test_python_attributes_all_versions():
    """The same figures read as attributes of an instance-dict object (two
    types: a class and its subclass), on every version's instance layout
    (dict pointer; 3.11 values; 3.12 tagged word; 3.13 inline values)."""
    runs = [(cmd, env, ["--objects"]) for cmd, env in py_versions()]
    # 3.11 sees calls from C only: the step is called through map()
    runs += [([pyenv_python(11), PYVICTIM], None, ["--objects", "--via-c"]),
             (["/usr/bin/python3.11", PYVICTIM], None, ["--objects", "--via-c"])]
    for cmd, env, args in runs:
        s, t, err = run_py(cmd, OBJCONF, env, args=args)
        try:
            check_py(s, t, 150)
        except AssertionError as e:
            raise AssertionError("%s: %s\n%s" % (cmd[0], e, err))


def test_python_attribute_of_slots_return():
    """count tokens from len(ret.accepted): a __slots__ object's member."""
    conf = ("step py:pytokens.Engine.step_obj kv_len=p90(arg:out.kv_lens)\n"
            "count tokens py:pytokens.Sampler.sample_obj len(ret.accepted)\n"
            "set warmup_steps %d\n" % WARM)
    for minor in (10, 13):
        cmd = [pyenv_python(minor)] + (["-X", "perf"] if minor >= 12 else []) + [PYVICTIM]
        s, t, err = run_py(cmd, conf, args=["--objects"])
        answered_in_warmup(s)
        counted = t["steps"][WARM:]
        for x in counted:
            x["tokens"] = x["accepted"]
        eq(s["stats"]["tokens"], sum(x["accepted"] for x in counted),
           "3.%d accepted tokens from ret.accepted" % minor)
        check_bins(s, counted, "kv_p90")


def test_python_attribute_errors():
    """an attribute no object has, and a property (computed): counted
    missing by reason, said once, nothing guessed"""
    conf = ("step py:pytokens.Engine.step_obj tokens=arg:out.nope batch=arg:out.total\n"
            "set warmup_steps %d\n" % WARM)
    s, t, err = run_py([pyenv_python(12), "-X", "perf", PYVICTIM], conf, args=["--objects"],
                       steps=60)
    v = s["values"]
    assert "a property" in err and "attribute_not_readable" in err, err
    eq(v["tokens"]["steps_with_value"], 0, "tokens from a missing attribute")
    assert v["tokens"]["missing"].get("no_attribute", 0) >= 60 - WARM - 4, v["tokens"]
    eq(v["batch"]["steps_with_value"], 0, "batch from a property")
    assert v["batch"]["missing"].get("attribute_not_readable", 0) >= 60 - WARM - 4, v["batch"]
    eq(s["stats"]["tokens"], 0, "no tokens guessed")


def test_python_missing_values_are_counted():
    """a name the function does not have, and a list where an int is wanted"""
    conf = ("step py:pytokens.Engine.step tokens=arg:kv_lens batch=arg:nope\n"
            "set warmup_steps %d\n" % WARM)
    s, t, err = run_py([pyenv_python(10), PYVICTIM], conf, steps=60)
    assert "has no argument 'nope'" in err, err
    v = s["values"]
    eq(v["tokens"]["steps_with_value"], 0, "tokens from a list")
    assert v["tokens"]["missing"].get("wrong_type", 0) >= 60 - WARM, v["tokens"]
    assert v["batch"]["missing"].get("no_such_argument", 0) >= 60 - WARM, v["batch"]
    eq(s["stats"]["tokens"], 0, "no tokens guessed")
    eq(s["stats"]["batch_mean"], None, "no batch guessed")


def test_runs_split_on_idle_gaps():
    """4 bursts of 100 steps, 300 ms apart: 4 runs with exact steps and
    tokens each; the first is warmup and left out of runs_aggregate"""
    conf = ("step native:exe:engine_step tokens=arg0 batch=arg2\n"
            "set run_gap_ms 100\nset warmup_runs 1\n")
    s, t, _ = profile(conf, ["--steps", 400, "--bursts", 4, "--gap-ms", 300],
                      victim_name="victim_tokens")
    runs = s["runs"]
    eq(len(runs), 4, "runs")
    eq([r["steps"] for r in runs], [100] * 4, "steps per run")
    eq([r["warmup"] for r in runs], [True, False, False, False], "warmup runs")
    want_tok = [sum(1 + i % 64 for i in range(k * 100, (k + 1) * 100)) for k in range(4)]
    eq([r["tokens"] for r in runs], want_tok, "tokens per run")
    eq([r["batch_mean"] for r in runs], [round(x / 100, 6) for x in want_tok],
       "batch mean per run (batch == tokens here)")
    for a, b in zip(runs, runs[1:]):
        assert b["start_s"] - a["end_s"] >= 0.3, (a, b)  # the victim slept 300 ms
    A = s["runs_aggregate"]
    eq((A["runs"], A["warmup_runs_skipped"], A["run_gap_ms"]), (3, 1, 100), "aggregate")
    eq((A["steps"]["mean"], A["steps"]["std"]), (100, 0), "steps across runs")
    mean = sum(r["mean_ms"] for r in runs[1:]) / 3
    assert abs(A["mean_ms"]["mean"] - mean) < 2e-6, (A["mean_ms"], mean)
    names = [b["name"] for b in A["buckets"]]
    eq(names, ["step.other"], "bucket rows (only step.other here)")
    eq(sum(r["steps"] for r in runs), s["stats"]["steps"], "every counted step in a run")
    md = open(os.path.join(s["_out"], "report.md")).read()
    assert "## Runs" in md and "| 0 (warmup) |" in md, md


def test_one_run_without_gaps():
    s, _, _ = profile("step native:exe:engine_step\n", ["--steps", 100],
                      victim_name="victim_tokens")
    eq(len(s["runs"]), 1, "one run")
    eq(s["runs"][0]["steps"], 100, "its steps")
    eq(s["runs_aggregate"]["runs"], 1, "aggregate runs")
    eq(s["runs_aggregate"]["steps"]["std"], 0, "std of one run")
