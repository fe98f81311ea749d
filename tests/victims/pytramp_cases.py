# SPDX-License-Identifier: BSD-2-Clause
"""The agent's trampoline maker (shim/agent/tramp.py) on its own, in any
CPython 3.8+: each case below runs unwrapped, then with every function it
uses wrapped as the agent wraps them (make() with Python callbacks in
place of the agent's C ones), and must give the same results, exceptions,
side effects, signatures and inspect answers; the callbacks must see
exactly the activations the original frames have (a plain call one, a
generator one per resumption, close and throw included), each enter
followed by its leave or unwind from the same frame.

usage: pytramp_cases.py PATH/TO/tramp.py
Prints "ok <cases> <activations>" and exits 0, or says what differs and
exits 1.
"""
import asyncio
import inspect
import sys

MARK = "<proftrace>"
events = []
finals = []


def key_ok(c, k):
    """The driver's key stands for the original's own frame: on 3.11 the
    generator or coroutine (the agent adds its frame's offset), before
    that its frame object."""
    if sys.version_info[:2] == (3, 11):
        return getattr(k, "gi_code", None) is c or getattr(k, "cr_code", None) is c
    return getattr(k, "f_code", None) is c


# the frame an activation is known by: the one given (a generator's or a
# coroutine's, through the driver's key), else the caller's (the wrapper)
def enter(c, k=None):
    if k is not None and not key_ok(c, k):
        events.append(("bad key", c.co_name, repr(k)))
    events.append(("enter", c.co_name, id(k) if k is not None else id(sys._getframe(1))))


def leave(c, v, k=None):
    events.append(("leave", c.co_name, id(k) if k is not None else id(sys._getframe(1))))


def unwind(c, k=None):
    events.append(("unwind", c.co_name, id(k) if k is not None else id(sys._getframe(1))))


# ---- the functions the cases use ----

def sig(a, b=2, /, c=3, *rest, d, e=5, **kw):
    return (a, b, c, rest, d, e, sorted(kw.items()))


def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)


def boom(x):
    raise ValueError("boom %s" % x)


def gen(n):
    try:
        for i in range(n):
            got = yield i
            if got is not None:
                finals.append(("sent", got))
        return "done %d" % n
    finally:
        finals.append(("finally", n))


def gen_catches():
    while True:
        try:
            yield 1
        except KeyError as x:
            finals.append(("caught", str(x)))


def gen_bad():
    yield 1
    raise StopIteration  # PEP 479: a RuntimeError out of the generator


def delegating():
    r = yield from gen(2)
    return r


async def coro(n):
    total = 0
    for i in range(n):
        await asyncio.sleep(0)
        total += i
    return total


async def coro_fails():
    await asyncio.sleep(0)
    raise KeyError("k")


async def coro_cancelled():
    try:
        await asyncio.sleep(10)
    finally:
        finals.append(("cancelled", True))


class K:
    def meth(self, x):
        return super().__repr__()[:1] + str(x)


WRAPPED = [sig, rec, boom, gen, gen_catches, gen_bad, delegating, coro, coro_fails,
           coro_cancelled, K.meth]


def outcome(fn):
    """What a case gives: its value or its exception, and side effects."""
    del finals[:]
    try:
        r = ("ok", fn())
    except BaseException as x:
        r = ("raised", type(x).__name__, str(x))
    return r, list(finals)


def run_async(c):
    return asyncio.new_event_loop().run_until_complete(c)


def cancel_case():
    async def main():
        t = asyncio.ensure_future(coro_cancelled())
        await asyncio.sleep(0)
        t.cancel()
        try:
            await t
        except asyncio.CancelledError:
            return "cancelled"
    return run_async(main())


def throw_case():
    g = gen_catches()
    a = next(g)
    b = g.throw(KeyError("x"))
    g.close()
    return a, b


def close_case():
    g = gen(5)
    out = [next(g), g.send("s")]
    g.close()
    return out


def uncaught_throw_case():
    g = gen(3)
    next(g)
    return g.throw(ValueError("v"))


# (name, case, activations of wrapped functions it makes)
CASES = [
    ("sig", lambda: [sig(1, d=4), sig(1, 9, 8, 7, d=4, e=0, z=1), sig(1, b=7, d=4)], 3),
    ("sig refused", lambda: sig(d=4), 0),
    ("rec", lambda: rec(4), 5),
    ("boom", lambda: boom(1), 1),
    ("meth", lambda: K().meth(3), 1),
    ("gen", lambda: list(gen(3)), 4),
    # dropped suspended: closed as it is freed, its finally run (one more)
    ("gen send", lambda: (lambda g: [next(g), g.send("a"), g.send("b")])(gen(5)), 4),
    ("gen close", close_case, 3),
    ("gen throw caught", throw_case, 3),
    ("gen throw uncaught", uncaught_throw_case, 2),
    ("gen return value", lambda: list(delegating()), 3 + 3),
    ("gen PEP 479", lambda: list(gen_bad()), 2),
    ("gen unstarted closed", lambda: gen(2).close(), 0),
    ("coro", lambda: run_async(coro(3)), 4),
    ("coro fails", lambda: run_async(coro_fails()), 2),
    ("coro cancelled", cancel_case, 2),
]


def main():
    g = {"__builtins__": __builtins__}
    with open(sys.argv[1]) as f:
        exec(compile(f.read(), "tramp.py", "exec"), g)
    before = {name: outcome(case) for name, case, _ in CASES}
    sigs = [inspect.signature(f) for f in WRAPPED]
    kinds = [(inspect.isgeneratorfunction(f), inspect.iscoroutinefunction(f)) for f in WRAPPED]
    for f in WRAPPED:
        f.__code__ = g["make"](f, f.__code__, (enter, leave, unwind), MARK)
    bad = []
    if [inspect.signature(f) for f in WRAPPED] != sigs:
        bad.append("signatures changed")
    if [(inspect.isgeneratorfunction(f), inspect.iscoroutinefunction(f))
            for f in WRAPPED] != kinds:
        bad.append("inspect's kinds changed")
    total = 0
    for name, case, want in CASES:
        del events[:]
        got = outcome(case)
        if got != before[name]:
            bad.append("%s: %r, unwrapped %r" % (name, got, before[name]))
        # asyncio's own loop functions are not wrapped: only ours count
        ev = [e for e in events]
        opened = {}
        n = 0
        for kind, fn, frame in ev:
            if kind == "bad key":
                bad.append("%s: %s's key is not its frame: %s" % (name, fn, frame))
            elif kind == "enter":
                opened.setdefault(frame, []).append(fn)
                n += 1
            elif not opened.get(frame) or opened[frame].pop() != fn:
                bad.append("%s: %s of %s without its enter" % (name, kind, fn))
        if any(opened.values()):
            bad.append("%s: an enter without its end: %r" % (name, opened))
        if n != want:
            bad.append("%s: %d activations, want %d (%r)" % (name, n, want, ev))
        total += n
    if bad:
        print("\n".join(bad))
        return 1
    print("ok %d %d" % (len(CASES), total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
