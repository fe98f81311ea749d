# SPDX-License-Identifier: BSD-2-Clause
"""C++ functions probed by their demangled names (tests/victims/victim_cxx.cc):
globs over qualified names select every overload, a parameter list one,
mangled names keep working; reports show demangled names, summary.json
both; "closest" suggestions are demangled."""
import os
import tempfile

from harness import (PROFTRACE, bucket, eq, profile, proftrace, victim, within, write_conf)

N = 60

CONF = """\
step   native:exe:eng::Runner::step
bucket cxx.linear   native:exe:eng::ops::linear::call
bucket cxx.softmax  native:exe:eng::*softmax*
bucket cxx.add_int  native:exe:eng::add(int)
bucket cxx.add      native:exe:eng::add
bucket cxx.scale    native:exe:_ZN3eng5scaleIdEET_S1_
bucket cxx.op       native:exe:eng::Functor::operator()
bucket cxx.anon     native:exe:(anonymous?namespace)::helper
"""

# demangled symbol -> (mangled, truth key)
ROWS = {
    "eng::Runner::step(int)": ("_ZN3eng6Runner4stepEi", "step"),
    "eng::ops::linear::call(int)": ("_ZN3eng3ops6linear4callEi", "linear"),
    "eng::ops::softmax_forward(float)": ("_ZN3eng3ops15softmax_forwardEf", "softmax_forward"),
    "eng::ops::log_softmax_backward(double)": ("_ZN3eng3ops20log_softmax_backwardEd",
                                               "log_softmax_backward"),
    "eng::add(int)": ("_ZN3eng3addEi", "add_int"),
    "eng::add(double)": ("_ZN3eng3addEd", "add_double"),
    "double eng::scale<double>(double)": ("_ZN3eng5scaleIdEET_S1_", "scale"),
    "eng::Functor::operator()(int) const": ("_ZNK3eng7FunctorclEi", "call_op"),
    "(anonymous namespace)::helper()": ("_ZN12_GLOBAL__N_16helperEv", "anon"),
}


def test_cxx_names():
    s, t, _ = profile(CONF, ("--steps", N), victim_name="victim_cxx")
    tf = t["functions"]
    eq(s["stats"]["steps"], N, "steps")
    eq(s["health"]["dropped_events"], 0, "dropped")
    got = {f["symbol"]: f for f in s["functions"]}
    eq(sorted(got), sorted(ROWS), "functions by demangled name")
    for sym, (mangled, key) in ROWS.items():
        f = got[sym]
        eq(f["mangled"], mangled, sym + " mangled")
        eq(f["calls"], N, sym + " calls")
        eq(tf[key]["calls"], N, sym + " truth calls")
        within(f["total_ms"], tf[key], N, sym + " total")
    within(s["stats"]["time_ms"], tf["step"], N, "step time")
    # `eng::add` selects both overloads, `eng::add(int)` one
    b = bucket(s, "cxx.add")
    eq(b["calls"], 2 * N, "cxx.add calls (both overloads)")
    eq(bucket(s, "cxx.add_int")["calls"], N, "cxx.add_int calls")
    eq(bucket(s, "cxx.softmax")["calls"], 2 * N, "cxx.softmax calls (both functions)")
    for name in ("cxx.linear", "cxx.scale", "cxx.op", "cxx.anon"):
        eq(bucket(s, name)["calls"], N, name + " calls")
    with open(os.path.join(s["_out"], "report.md")) as f:
        md = f.read()
    assert "eng::ops::linear::call(int)" in md, "report.md shows demangled names"
    assert "_ZN3eng3ops6linear4callEi" not in md, "report.md shows no mangled names"


def test_cxx_closest():
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    conf = write_conf(tmp, "step native:exe:eng::ops::linaer::call\n")
    v = victim("victim_cxx")
    try:
        pt = proftrace(v.pid, conf, os.path.join(tmp, "out"), "--dry-run")
        rc = pt.wait(30)
        err = pt.rest("err")
    finally:
        v.kill()
    eq(rc, 2, "exit code")
    assert "no function matches 'eng::ops::linaer::call'" in err, err
    assert "closest: eng::ops::linear::call," in err, err
    assert "nm -DC" in err, err
