# SPDX-License-Identifier: BSD-2-Clause
"""The same attributes read by both of proftrace's read paths.

proftrace reads an attribute (`arg:o.n` in a targets file) in BPF, with a
port of the user-space reader pt_pyattr__read() that tests/tools/
pyattr_check drives. This victim holds one object per kind of attribute
storage, each passed to a function of its own (look_<kind>), so that a
`count tokens py:pyattr_cmp::look_<kind> arg:o.<attr>` line per kind gives
what BPF read for that object alone; and, in the same process, it has
pyattr_check read the very same (object, attribute) pairs with the user
reference. tests/integration/test_pyattr.py compares the two, kind by
kind, and each with what Python's own getattr() gives.

Protocol as the other victims: "ready <pid>", a line on stdin, then
CALLS calls of each look_<kind>, pyattr_check over the same pairs, and
--truth (JSON: per kind the expectation and pyattr_check's verdict).
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyattr_victim as pv  # noqa: E402  (its classes and expectations)

CALLS = 50


def look_shared(o): return o
def look_combined(o): return o
def look_replaced(o): return o
def look_materialized(o): return o
def look_slot(o): return o
def look_slotdict(o): return o
def look_dataclass(o): return o
def look_namespace(o): return o
def look_deleted(o): return o
def look_unset(o): return o
def look_classattr(o): return o
def look_property(o): return o
def look_keycmp(o): return o
def never_called(): pass


def objects():
    """(kind, object, attribute, expectation as pyattr_victim prints it)."""
    import types
    out = []
    r = pv.Req(5, [1], "a")
    out.append(("shared", r, "num_tokens", pv.expect_ok(r, "num_tokens")))
    b = pv.Big(1000)
    out.append(("combined", b, "a29", pv.expect_ok(b, "a29")))
    repl = pv.Req(4, [], "r")
    repl.__dict__ = {"num_tokens": 444}
    out.append(("replaced", repl, "num_tokens", pv.expect_ok(repl, "num_tokens")))
    mat = pv.Req(6, [1], "m")
    d = mat.__dict__
    d["late"] = 606
    out.append(("materialized", mat, "late", pv.expect_ok(mat, "late")))
    s = pv.Slotted(17)
    out.append(("slot", s, "x", pv.expect_ok(s, "x")))
    sd = pv.SlotDict(18, 19)
    out.append(("slotdict", sd, "z", pv.expect_ok(sd, "z")))
    dc = pv.DC(22, [1, 2])
    out.append(("dataclass", dc, "n", pv.expect_ok(dc, "n")))
    ns = types.SimpleNamespace(alpha=77)
    out.append(("namespace", ns, "alpha", pv.expect_ok(ns, "alpha")))
    gone = pv.Req(2, [], "y")
    del gone.num_tokens
    out.append(("deleted", gone, "num_tokens", pv.expect_absent(gone, "num_tokens", "missing")))
    u = pv.Slotted(3)
    out.append(("unset", u, "y", pv.expect_absent(u, "y", "unset")))
    k = pv.K()
    out.append(("classattr", k, "limit", pv.expect_class(k, "limit")))
    p = pv.Prop()
    out.append(("property", p, "total", "noread property"))
    odd = pv.Req(4, [], "r")
    odd_key = "".join(["num_", "tokens"])
    assert odd_key is not sys.intern(odd_key)
    odd.__dict__ = {odd_key: 555}
    out.append(("keycmp", odd, "num_tokens", "keycmp %x" % id(odd.num_tokens)))
    return out


# what the user reference's expectation means for a BPF read
def bpf_expect(expect):
    w = expect.split()
    if w[0] == "ok":
        assert w[2] == "int", expect
        return {"value": int(w[3])}
    if w[0] in ("missing", "unset", "class"):
        return {"missing": "no_attribute"}
    if w[0] == "noread":
        return {"missing": "attribute_not_readable"}
    if w[0] == "keycmp":
        return {"missing": "attribute_undecided"}
    raise AssertionError(expect)


KINDS = [("shared", "num_tokens"), ("combined", "a29"), ("replaced", "num_tokens"),
         ("materialized", "late"), ("slot", "x"), ("slotdict", "z"), ("dataclass", "n"),
         ("namespace", "alpha"), ("deleted", "num_tokens"), ("unset", "y"),
         ("classattr", "limit"), ("property", "total"), ("keycmp", "num_tokens")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth")
    ap.add_argument("--check", required=True, help="tests/tools/pyattr_check")
    a = ap.parse_args()
    objs = objects()
    assert [(k, n) for k, _, n, _ in objs] == KINDS
    g = globals()
    print("ready %d" % os.getpid(), flush=True)
    if not sys.stdin.readline():
        sys.exit(3)
    for i in range(CALLS):
        for kind, o, _, _ in objs:
            g["look_" + kind](o)
        if i < 3:
            time.sleep(0.2)  # a type met for the first time is resolved meanwhile
    dump = ["P %d %d" % (os.getpid(), pv.MINOR)]
    dump += ["A %x %x %s %s" % (id(o), id(type(o)), n, e) for _, o, n, e in objs]
    dump.append("E")
    # the checker is proftrace's code, not the server's: without the
    # agent preloaded into it (an ASan build must come first)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    res = subprocess.run([a.check], input=("\n".join(dump) + "\n").encode(),
                         capture_output=True, timeout=120, env=env)
    out = {"calls": CALLS, "check_rc": res.returncode,
           "check_out": res.stdout.decode(errors="replace") + res.stderr.decode(errors="replace"),
           "kinds": {k: dict(bpf_expect(e), expect=e) for k, _, _, e in objs}}
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
