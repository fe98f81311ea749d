# SPDX-License-Identifier: BSD-2-Clause
"""Objects whose attributes tests/tools/pyattr_check reads from outside.

Runs unchanged on CPython 3.8 to 3.13, standard library only. Driven by
tests/integration/test_pyattr.py, over stdin/stdout:

  P <pid> <minor>
  T <type> <name>          resolve these before any instance exists
  W                        (then waits for a line: the early resolves are done)
  A <obj> <type> <name> <expect>   one attribute read each
  E                        (then waits for a line, and exits)

Addresses are hex (id()). <expect> is what Python itself gives for
getattr(obj, name), checked here before it is printed:
  ok <id> int <n>     the instance holds an int object <id> of value n
  ok <id> len <n>     ... a list of n items
  ok <id> -           ... some other object
  unset               a __slots__ member never set (AttributeError)
  missing             not in the instance dict (AttributeError)
  class <id>          not in the instance; the class's attribute applies
  getattr <id>        not in the instance; __getattr__ returned <id>
  keycmp <id>         the instance dict has it under a str that is not
                      the interned one: the reader must say it cannot tell
  noread <why>        not stored (a property, custom __getattribute__ ...):
                      the resolver must refuse
  nosuch              no instance can have it (no member, no __dict__)
"""
import collections
import dataclasses
import os
import sys
import types

MINOR = sys.version_info[1]
out = []
_keep = []  # everything printed stays alive until exit


def w(line):
    out.append(line)


def flush():
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()
    del out[:]


def wait():
    if not sys.stdin.readline():
        sys.exit(3)


# ---- the classes ----

class Req:
    """Attributes set in __init__: the shared-keys case."""

    def __init__(self, num_tokens, prompt, tag):
        self.num_tokens = num_tokens
        self.prompt = prompt
        self.tag = tag


class Big:
    """More attributes than shared keys hold (30 on 3.11+): a combined dict."""

    def __init__(self, base):
        for k in range(40):
            setattr(self, "a%d" % k, base + k)
        self.marker = base


class Huge:
    """A dict of 50000 entries: 2^17 index slots, 4-byte indices."""

    def __init__(self):
        for k in range(50000):
            setattr(self, "h%d" % k, k * 3)


class Mid:
    """1000 entries: 2048 index slots, 2-byte indices."""

    def __init__(self):
        for k in range(1000):
            setattr(self, "m%d" % k, k * 5)


class Slotted:
    __slots__ = ("x", "y")

    def __init__(self, x):
        self.x = x


class SlotDict(Slotted):
    """A slots class's subclass without __slots__: slots and a dict."""

    def __init__(self, x, z):
        Slotted.__init__(self, x)
        self.z = z


class SlotSlot(Slotted):
    __slots__ = ("w",)

    def __init__(self, x, w):
        Slotted.__init__(self, x)
        self.w = w


@dataclasses.dataclass
class DC:
    n: int
    items: list


@dataclasses.dataclass(frozen=True)
class DCF:
    """Frozen: __init__ sets fields through object.__setattr__(self, "n",
    ...): the names are constants of its code, not names."""
    n: int
    items: list


class SlotsAndDict:
    __slots__ = ("a", "__dict__")

    def __init__(self):
        self.a = 51
        self.b = 52


if MINOR >= 10:
    @dataclasses.dataclass(slots=True)
    class DCS:
        n: int
        items: list
else:
    DCS = None


class Prop:
    def __init__(self):
        self._total = 12

    @property
    def total(self):
        return self._total * 2


class K:
    limit = 5000

    def __init__(self):
        self.own = 1

    def method(self):
        return self.own


class GA:
    def __init__(self):
        self.real = 11

    def __getattr__(self, name):
        return 4242


class GAB:
    def __init__(self):
        self.real = 12

    def __getattribute__(self, name):
        return object.__getattribute__(self, name)


class IntSub(int):
    """Var-sized instances: the dict after the digits before 3.12."""


class Base:
    def __init__(self):
        self.base_attr = 31337


class Derived(Base):
    def __init__(self):
        Base.__init__(self)
        self.derived_attr = 271828


class Later:
    """Resolved before any instance; attributes arrive afterwards."""

    def __init__(self, v):
        self.v = v


Point = collections.namedtuple("Point", "px py")


def fn():
    pass


EARLY = [(Req, "num_tokens"), (Req, "prompt"), (Later, "v"), (Slotted, "x"), (K, "limit"),
         (DC, "n"), (Big, "a7")]


# ---- expectations, checked against Python before they are printed ----

def expect_ok(obj, name):
    v = getattr(obj, name)
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and name in d:
        assert d[name] is v
    if type(v) is int and -(1 << 62) < v < (1 << 62):
        return "ok %x int %d" % (id(v), v)
    if type(v) is list:
        return "ok %x len %d" % (id(v), len(v))
    return "ok %x -" % id(v)


def expect_absent(obj, name, what):
    try:
        getattr(obj, name)
    except AttributeError:
        return what
    raise AssertionError("%r has %s" % (obj, name))


def expect_class(obj, name):
    v = getattr(obj, name)
    assert name not in getattr(obj, "__dict__", {})
    return "class %x" % id(v)


def case(obj, name, expect):
    _keep.append(obj)
    w("A %x %x %s %s" % (id(obj), id(type(obj)), name, expect))


def main():
    w("P %d %d" % (os.getpid(), MINOR))
    for t, name in EARLY:
        w("T %x %s" % (id(t), name))
    w("W")
    flush()
    wait()

    reqs = [Req(5, [1, 2, 3], "a"), Req(70000, [], "b"), Req(-3, list(range(40)), "c")]
    for r in reqs:
        for name in ("num_tokens", "prompt", "tag"):
            case(r, name, expect_ok(r, name))
    # an attribute added later, from outside the class's code
    extra = Req(1, [9], "x")
    extra.extra = 99
    case(extra, "extra", expect_ok(extra, "extra"))
    case(reqs[0], "extra", expect_absent(reqs[0], "extra", "missing"))
    # deleted (before 3.11 this also stops key sharing for the type)
    gone = Req(2, [], "y")
    del gone.num_tokens
    case(gone, "num_tokens", expect_absent(gone, "num_tokens", "missing"))
    case(gone, "prompt", expect_ok(gone, "prompt"))
    after = Req(3, [4, 5], "z")  # created after the deletion
    case(after, "num_tokens", expect_ok(after, "num_tokens"))
    case(after, "tag", expect_ok(after, "tag"))
    # the dict replaced: interned keys (constants), then a key that is an
    # equal str but not the interned one
    repl = Req(4, [], "r")
    repl.__dict__ = {"num_tokens": 444, "prompt": [0] * 7}
    case(repl, "num_tokens", expect_ok(repl, "num_tokens"))
    case(repl, "tag", expect_absent(repl, "tag", "missing"))
    odd = Req(4, [], "r")
    odd_key = "".join(["num_", "tokens"])
    assert odd_key is not sys.intern(odd_key)
    odd.__dict__ = {odd_key: 555}
    case(odd, "num_tokens", "keycmp %x" % id(odd.num_tokens))
    # the dict materialized, then attributes added through both
    mat = Req(6, [1], "m")
    d = mat.__dict__
    mat.late = 606
    d["prompt"] = [7, 7]
    case(mat, "num_tokens", expect_ok(mat, "num_tokens"))
    case(mat, "late", expect_ok(mat, "late"))
    case(mat, "prompt", expect_ok(mat, "prompt"))
    # a non-str key makes the dict general (3.11+: 24-byte entries)
    gen = Req(8, [], "g")
    gen.__dict__[1] = "one"
    case(gen, "num_tokens", expect_ok(gen, "num_tokens"))
    case(gen, "tag", expect_ok(gen, "tag"))
    # None as a value
    nn = Req(None, None, None)
    case(nn, "num_tokens", expect_ok(nn, "num_tokens"))

    later = [Later(10), Later(20)]
    for x in later:
        case(x, "v", expect_ok(x, "v"))

    big = [Big(1000), Big(2000)]
    for b in big:
        for name in ("a0", "a7", "a29", "a30", "a39", "marker"):
            case(b, name, expect_ok(b, name))
    # and combined on every version: deleting from a split table
    # combines it (before 3.11 the type stops sharing keys, too)
    for cls, prefix, n in ((Huge, "h", 50000), (Mid, "m", 1000)):
        split, comb = cls(), cls()
        delattr(comb, "%s%d" % (prefix, n - 1))
        for x in (split, comb):
            for k in (0, 1, 17, 100, n // 3 if n < 4000 else 4000):
                case(x, "%s%d" % (prefix, k), expect_ok(x, "%s%d" % (prefix, k)))
            case(x, "%s%d" % (prefix, n + 5), expect_absent(x, "%s%d" % (prefix, n + 5),
                                                            "missing"))
        case(comb, "%s%d" % (prefix, n - 1), expect_absent(comb, "%s%d" % (prefix, n - 1),
                                                           "missing"))
        # many keys of the combined one: probe chains of every length
        # the table has (resolving finds keys among the first 4096)
        for k in range(3, min(n - 1, 4000), 32 if n > 4000 else 8):
            case(comb, "%s%d" % (prefix, k), expect_ok(comb, "%s%d" % (prefix, k)))

    s = Slotted(17)
    case(s, "x", expect_ok(s, "x"))
    case(s, "y", expect_absent(s, "y", "unset"))
    case(s, "nothere", "nosuch")
    sd = SlotDict(18, 19)
    case(sd, "x", expect_ok(sd, "x"))
    case(sd, "z", expect_ok(sd, "z"))
    case(sd, "y", expect_absent(sd, "y", "unset"))
    case(sd, "q", expect_absent(sd, "q", "missing"))
    ss = SlotSlot(20, 21)
    case(ss, "x", expect_ok(ss, "x"))
    case(ss, "w", expect_ok(ss, "w"))
    case(ss, "y", expect_absent(ss, "y", "unset"))

    dc = DC(22, [1, 2])
    case(dc, "n", expect_ok(dc, "n"))
    case(dc, "items", expect_ok(dc, "items"))
    if DCS is not None:
        dcs = DCS(23, [3])
        case(dcs, "n", expect_ok(dcs, "n"))
        case(dcs, "items", expect_ok(dcs, "items"))

    dcf = DCF(24, [5, 6, 7])
    case(dcf, "n", expect_ok(dcf, "n"))
    case(dcf, "items", expect_ok(dcf, "items"))
    sad = SlotsAndDict()
    case(sad, "a", expect_ok(sad, "a"))
    case(sad, "b", expect_ok(sad, "b"))

    p = Prop()
    case(p, "total", "noread property")
    case(p, "_total", expect_ok(p, "_total"))

    k1, k2 = K(), K()
    k2.limit = 6000
    case(k1, "limit", expect_class(k1, "limit"))
    case(k2, "limit", expect_ok(k2, "limit"))
    case(k1, "method", expect_class(k1, "method"))
    case(k1, "own", expect_ok(k1, "own"))

    ga = GA()
    case(ga, "real", expect_ok(ga, "real"))
    case(ga, "virtual", "getattr %x" % id(ga.virtual))
    gab = GAB()
    case(gab, "real", "noread __getattribute__")

    i = IntSub(5)
    i.tag = 3
    case(i, "tag", expect_ok(i, "tag") if MINOR >= 12 else "noread var-sized")

    dv = Derived()
    case(dv, "base_attr", expect_ok(dv, "base_attr"))
    case(dv, "derived_attr", expect_ok(dv, "derived_attr"))

    ns = types.SimpleNamespace(alpha=77, beta=[1, 2, 3, 4])
    case(ns, "alpha", expect_ok(ns, "alpha"))
    case(ns, "beta", expect_ok(ns, "beta"))
    fn.custom = 808
    case(fn, "custom", expect_ok(fn, "custom"))
    pt = Point(1, 2)
    case(pt, "px", "noread namedtuple field")
    case(sys, "maxsize", "noread module")
    exc = ValueError("boom")
    case(exc, "args", "noread getset")
    case(K, "limit", "noread type object")  # type's own C getattro
    case(12345, "real", "noread int getset")

    w("E")
    flush()
    wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
