# SPDX-License-Identifier: BSD-2-Clause
# The agent's trampoline maker (shim/agent/tramp.h), in Python: built into
# libproftrace_agent.so (tramp.c, .incbin) and run once, when the first
# trampoline is needed, into a namespace of its own (never in sys.modules).
# CPython 3.8-3.11; standard library not needed. Tested on its own on every
# interpreter by tests/integration/test_agent.py (test_tramp_semantics).
#
# make(func, code, cbs, mark) returns the code object to put in
# func.__code__ in place of code: a function of the same signature, name
# and qualname whose every activation of the original is bracketed by
# cbs = (enter, leave, unwind): enter(code) before, leave(code, value)
# after it returns or yields value, unwind(code) after an exception leaves
# it. mark is the file name its frames carry (the sampler drops them).
#
# - A plain function: enter, a copy of the original (inner) called with the
#   arguments as received, leave.
# - A generator: the wrapper is a generator that delegates (yield from) to
#   drive(), which resumes the original's generator step by step with the
#   callbacks around each step: each resumption is an activation, as the
#   original's own frames would be. send, throw and close reach the
#   original as they would have.
# - A coroutine (async def): the same through await, drive() marked as a
#   generator-based coroutine; inspect.iscoroutinefunction stays true.
#
# The wrapper's source is written for the function's own signature, so its
# defaults apply as before and inner gets every argument as passed
# (positional-only and positional by position, keyword-only by name); its
# locals get names no parameter has. A free variable of the original is
# declared in the wrapper too (an unrun lambda uses it): a function's
# __code__ must have as many free variables as its closure has cells. The
# tuple the wrapper unpacks first is a placeholder string in its source,
# replaced by our objects in co_consts (constants can be any objects).

CO_VARARGS, CO_VARKEYWORDS = 0x4, 0x8
CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE = 0x20, 0x80, 0x100
PLACEHOLDER = "proftrace:T"

# k, given to each callback, stands for the original's own frame (the
# activation's identity, where its arguments are read): on 3.11 the
# generator or coroutine object itself (its frame lives inside it, at a
# fixed offset), before that the frame object it runs in (held here, so
# its address stays the same after it finishes).
DRIVE = '''
def drive(it, c, e, x, u, k):
    v = t = None
    while True:
        e(c, k)
        try:
            y = it.send(v) if t is None else it.throw(t)
        except StopIteration as s:
            x(c, s.value, k)
            return s.value
        except BaseException:
            u(c, k)
            raise
        x(c, y, k)
        t = None
        try:
            v = yield y
        except GeneratorExit:
            e(c, k)
            try:
                it.close()
            except BaseException:
                u(c, k)
                raise
            x(c, None, k)
            raise
        except BaseException as z:
            v, t = None, z
'''
KEY = '''
def key(it):
    if PY311:
        return it
    return it.cr_frame if hasattr(it, "cr_frame") else it.gi_frame
'''

_drivers = {}
# wrappers' code by their source: functions of one shape (all the
# (self) methods, say) share one compile (about 100 us each), and get
# their own objects by co_consts only (a few us)
_compiled = {}


def drivers(mark):
    """drive() as a generator, as a generator-based coroutine, and key()."""
    if mark not in _drivers:
        import sys
        g = {"__builtins__": __builtins__, "PY311": sys.version_info[:2] == (3, 11)}
        exec(compile(DRIVE + KEY, mark, "exec", 0, True), g)
        gen = g["drive"]
        co = gen.__code__
        coro = type(gen)(co.replace(co_flags=co.co_flags | CO_ITERABLE_COROUTINE), g, "drive")
        _drivers[mark] = (gen, coro, g["key"])
    return _drivers[mark]


def make(func, code, cbs, mark):
    names = code.co_varnames
    n, p, k = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    va = names[n + k] if code.co_flags & CO_VARARGS else None
    vk = names[n + k + (va is not None)] if code.co_flags & CO_VARKEYWORDS else None
    used = set(names) | set(code.co_freevars) | set(code.co_cellvars)

    def fresh(b):
        while b in used:
            b += "_"
        used.add(b)
        return b
    # enter, original, leave, unwind, code, driver, result, key
    e, o, x, u, c, d, r, y = [fresh(b) for b in "eoxucdry"]
    pos, kwo = list(names[:n]), list(names[n:n + k])
    params = pos[:p] + ["/"] * (p > 0) + pos[p:]
    if va is not None:
        params.append("*" + va)
    elif kwo:
        params.append("*")
    params += kwo + (["**" + vk] if vk is not None else [])
    args = pos + (["*" + va] if va is not None else [])
    args = ", ".join(args + [a + "=" + a for a in kwo] + (["**" + vk] if vk is not None else []))
    fv = code.co_freevars
    s = "def outer():\n"
    if fv:
        s += "    " + " = ".join(fv) + " = None\n"
    coro = code.co_flags & CO_COROUTINE
    s += "    %sdef w(%s):\n" % ("async " if coro else "", ", ".join(params))
    if fv:
        s += "        if 0: (lambda: (" + ", ".join(fv) + ",))\n"
    s += "        %s, %s, %s, %s, %s, %s, %s = %r\n" % (e, o, x, u, c, d, y, PLACEHOLDER)
    if coro or code.co_flags & CO_GENERATOR:
        s += "        %s = %s(%s)\n" % (r, o, args)
        call = "%s(%s, %s, %s, %s, %s, %s(%s))" % (d, r, c, e, x, u, y, r)
        s += ("        return await %s\n" if coro else "        return (yield from %s)\n") % call
    else:
        s += ("        try:\n"
              "            %s(%s)\n"
              "            %s = %s(%s)\n"
              "            %s(%s, %s)\n"
              "        except BaseException:\n"
              "            %s(%s)\n"
              "            raise\n"
              "        return %s\n") % (e, c, r, o, args, x, c, r, u, c, r)
    s += "    return w\n"
    w = _compiled.get((s, mark))
    if w is None:
        g = {"__builtins__": __builtins__}
        exec(compile(s, mark, "exec", 0, True), g)
        w = _compiled[(s, mark)] = g["outer"]().__code__
    inner = type(func)(code, func.__globals__, code.co_name, None, func.__closure__)
    inner.__qualname__ = func.__qualname__
    gen, cor, key = drivers(mark)
    t = (cbs[0], inner, cbs[1], cbs[2], code, cor if coro else gen, key)
    kw = {"co_consts": tuple(t if type(v) is str and v == PLACEHOLDER else v
                             for v in w.co_consts),
          "co_name": code.co_name}
    if hasattr(code, "co_qualname"):
        kw["co_qualname"] = code.co_qualname
    return w.replace(**kw)
