# SPDX-License-Identifier: BSD-2-Clause
"""Mixed native/Python stacks (`set native_frames on`) against the truth of
tests/victims/pymixed.py and tests/victims/pytorch_mixed.py.

With native_frames on, each on-CPU sample unwinds the native frames too
and the interpreter's own C frames are replaced by the Python frames they
run. Labels: a Python frame "qualname (file.py:line)" as before; a native
frame "<demangled symbol> (<module basename>)", or "<module
basename>+0x<hex offset>" where no symbol covers the pc; never a frame of
the interpreter itself (the python executable, libpython) nor of
proftrace's own libraries (libproftrace_*).

pymixed.py, on every CPython on the machine (pyenv 3.8, 3.10-3.13,
Debian's 3.11; those absent are skipped, saying so), with ptnative.so
built for that interpreter -O2 -fomit-frame-pointer (harness.build_ptnative:
.eh_frame only, the unwinder's way through code without frame pointers):
  (a) every stack through ptn_leaf is one of the two paths, root to leaf,
      frames in this order (others may sit between; no Python frame after
      the path's last Python frame):
        step, native_part, spin, ptn_spin_outer, ptn_spin_inner, ptn_leaf
        step, callback_part, call, ptn_callback, callback, spin,
          ptn_spin_outer, ptn_spin_inner, ptn_leaf
      and below ptn_leaf only native frames (libc's clock_gettime, the
      vDSO): SAMPLES_BELOW_LEAF;
  (b) the on-CPU weight of each path against the victim's CPU time around
      its spins (SPIN_TOL below);
  (c) no frame of the interpreter, no _PyEval_EvalFrameDefault, no
      libproftrace_ module;
  (d) with `set native_frames off` no native frame at all, ptnative's
      spins sampled in native_part / callback as today.

Off the CPU (pymixed.py --block-ms, --short-blocks): a block in the C
extension (nanosleep, the GIL released) is an off-CPU interval whose
stack reads step -> block_part -> block -> ptn_block_outer ->
ptn_block_inner -> libc (BLOCK_PATH); its off-CPU weight is the victim's
own clock around the sleep in ptn_block_inner (BLOCK_TOL). Blocks
shorter than a period get native frames while the thread's credit lasts
(bpf/pysample.bpf.c, want_native): some do, the rest are counted
(offcpu_budget), and all their time is there either way.

A thread without Python (pymixed.py --pool-ms: ptnative's worker, as an
OpenMP or tokenizer pool's): its on-CPU stacks are native only, one
sample in 10 sent with a native stack and the weight of the ones before
(PT_SAMPLEF_POOLED): ptn-pool's stacks through ptn_pool_main ->
ptn_pool_work -> ptn_leaf weigh the worker's own CPU time (POOL_TOL), and
the Python thread waiting for it is off the CPU in pool -> ptn_pool_wait.

The GIL (pymixed.py --gil-ms, Debian's 3.11 where take_gil has no name,
pyenv 3.8 and 3.13 where it has): while gil-hog spins in Python, the main
thread sleeps with the GIL released and then waits to get it back; that
wait reads step -> gil_part -> gil -> ptn_gil_take -> [GIL wait] -> libc
(GIL_PATH), the interpreter's frames replaced by the pseudo frame, and
weighs the victim's clock around PyEval_RestoreThread less take_gil's
own time on the CPU (BLOCK_TOL's bound a call); the sleep before it is
never under [GIL...].

pytorch_mixed.py on Debian's 3.11 with python3-torch 1.13 (skipped
without it): the stacks of Linear.forward go through the libtorch frames
TORCH_LINEAR_PATH (why each: there), and the on-CPU weight of the
forward's stacks with native frames below the model's first
Module._call_impl is the victim's in-forward CPU time (TORCH_TOL).

Tolerances (a sampled weight is whole 1 ms samples of CPU time):
- SPIN_TOL: a path's on-CPU weight W ms is a count of samples. Taken as a
  Poisson count (the worst case: the cpu-clock timer is periodic in the
  thread's CPU time, so each spin of L ms really gets floor or ceil of L
  samples), its standard deviation is sqrt(W) samples; 4 sigma is
  4 * sqrt(W) ms: 113 ms of native_part's 800 ms, 98 ms of callback's
  600 ms at the default 100 steps (a quarter of that would fail with
  one spin in 7 missing). Plus, for samples where the unwinder stopped
  early (no way from ptn_leaf up to step: counted by proftrace, see
  incomplete_ms), one period each; plus the host's steal during the run
  (harness.host_steal_ms: the sample timer ticks through a steal shorter
  than its period, the victim's CPU clock does not). The truth's cpu_ns
  also holds each spin call's own Python-side cost (argument parsing, two
  clock reads, ~2 us a call: 0.2 ms over 100 calls), inside the bound.
- BLOCK_TOL: an interval off the CPU is exact (two BPF clock reads at
  the switches); the victim's clock around nanosleep holds it plus the
  system call's way in and out and two clock reads (~5-20 us here):
  0.2 ms a call is ten times that. Intervals that went without native
  frames (offcpu_moved, missing) are under block_part with Python frames
  only: the path and those hold the sleeps, and the path lies inside the
  victim's clock around the call.
- POOL_TOL: SPIN_TOL, plus two pooled samples (10 periods each) for
  the worker's stacks outside ptn_pool_work (its wake-up, a clock read)
  that a pooled sample may land in, plus the samples held at the end
  (sent without a stack: up to 10 periods).
- TORCH_TOL: the same 4 sigma + incomplete + steal, plus 5% of the
  forward's time for what runs in it with no native frame below a Python
  one: six module calls' Python (~50 us a forward on 3.11) against ~70 ms
  of reference BLAS here and still >= 1 ms with an optimised BLAS.
"""
import os
import re
import signal
import subprocess
import tempfile

from harness import (ROOT, Skip, build_ptnative, eq, host_steal_ms, late_ms, proftrace,
                     proftrace_done, read_run, stop, victim, with_agent, write_conf)
import test_sampling as ts

VICTIM = os.path.join(ROOT, "tests", "victims", "pymixed.py")
TORCH_VICTIM = os.path.join(ROOT, "tests", "victims", "pytorch_mixed.py")
CONF = "step py:pymixed::step\nset sample_hz 1000\nset native_frames %s\n"
TORCH_CONF = "step py:pytorch_mixed::step\nset sample_hz 1000\nset native_frames on\n"
SIGMAS = 4.0
TORCH_PY_REL = 0.05

# root -> leaf, each a frame label prefix ("qualname (file.py:" for Python)
NATIVE_PATH = ("step (pymixed.py:", "native_part (pymixed.py:", "spin (ptnative",
               "ptn_spin_outer (ptnative", "ptn_spin_inner (ptnative", "ptn_leaf (ptnative")
CALLBACK_PATH = ("step (pymixed.py:", "callback_part (pymixed.py:", "call (ptnative",
                 "ptn_callback (ptnative", "callback (pymixed.py:", "spin (ptnative",
                 "ptn_spin_outer (ptnative", "ptn_spin_inner (ptnative", "ptn_leaf (ptnative")

# What one nn.Linear's forward runs through on Debian 12 (python3-torch
# 1.13.0, CPU; libtorch_cpu.so.1.13 links the reference libblas.so.3,
# /usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0, and oneDNN, which
# float32 linear does not use), as `perf record --call-graph dwarf` of
# pytorch_mixed.py showed it, each exported (nm -D --defined-only | c++filt),
# so named from .dynsym (libtorch_cpu has no .symtab):
#   Linear.forward (linear.py:114)        F.linear(input, self.weight, self.bias)
#   [libtorch_python: torch._C._nn.linear's binding, a static function: unnamed]
#   at::_ops::linear::call                the operator's dispatcher entry
#   [libtorch_cpu+0x...: the CompositeImplicitAutograd kernel wrapper, static]
#   at::native::linear                    bias given, 2-D input: addmm
#   at::_ops::addmm::call                 dispatch of addmm
#   [2 static frames: the autograd (VariableType) kernel; under no_grad it
#    only redispatches]
#   at::_ops::addmm::redispatch           to the CPU kernel
#   [2 static frames: the structured kernel's wrapper]
#   at::native::structured_addmm_out_cpu::impl
#   [2 static frames: addmm_impl_cpu_, at::native::cpublas::gemm]
#   sgemm_ (libblas.so.3.11.0)            the matrix product, most of the time
# Modules are matched by prefix (libtorch_cpu.so.1.13.0 is the mapped file,
# libtorch_cpu.so.1.13 its soname), symbols with or without parameters.
TORCH_LINEAR_PATH = (("Linear.forward (linear.py:", None),
                     ("at::_ops::linear::call", "libtorch_cpu.so"),
                     ("at::native::linear", "libtorch_cpu.so"),
                     ("at::_ops::addmm::call", "libtorch_cpu.so"),
                     ("at::_ops::addmm::redispatch", "libtorch_cpu.so"),
                     ("at::native::structured_addmm_out_cpu::impl", "libtorch_cpu.so"),
                     ("sgemm_", "libblas.so"))

BLOCK_PATH = ("step (pymixed.py:", "block_part (pymixed.py:", "block (ptnative",
              "ptn_block_outer (ptnative", "ptn_block_inner (ptnative")
SHORT_PATH = ("step (pymixed.py:", "short_part (pymixed.py:", "block (ptnative",
              "ptn_block_outer (ptnative", "ptn_block_inner (ptnative")
BLOCK_CALL_TOL_MS = 0.2
POOL_PATH = ("ptn_pool_main (ptnative", "ptn_pool_work (ptnative", "ptn_leaf (ptnative")
POOL_WAIT_PATH = ("step (pymixed.py:", "pool_part (pymixed.py:", "pool (ptnative",
                  "ptn_pool_wait (ptnative")
POOL_EVERY = 10  # bpf/proftrace.h PT_POOL_EVERY
GIL_WAIT_SHARE = 0.75
GIL_PATH = ("step (pymixed.py:", "gil_part (pymixed.py:", "gil (ptnative",
            "ptn_gil_take (ptnative", "[GIL wait]")

PY_FRAME = re.compile(r" \([^()]*:\d+\)$")
INTERPRETER_MODULE = re.compile(r"^(lib)?python\d")


def interpreter(label):
    """(label, python) by label ("3.8" ... "3.13" from pyenv, "debian-3.11")."""
    if label == "debian-3.11":
        return label, ts.debian_python()
    return label, ts.pyenv_python(int(label.split(".")[1]))


# --- stacks.folded --------------------------------------------------------


def read_folded(out):
    """[(frames, weight us)] of out/stacks.folded; frames[0] the thread root."""
    rows = []
    with open(os.path.join(out, "stacks.folded"), encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            frames, sep, w = line.rpartition(" ")
            assert sep and frames and w.isdigit(), "stacks.folded: bad line %r" % line
            rows.append((frames.split(";"), int(w)))
    assert rows, "stacks.folded is empty (%s)" % out
    return rows


def kind(label):
    """'python', 'pseudo' ([off-cpu] and the like) or 'native'."""
    if label.startswith("[") and label.endswith("]"):
        return "pseudo"
    if PY_FRAME.search(label):
        return "python"
    return "native"


def native_parts(label):
    """(symbol or None, module) of a native frame's label."""
    if label.endswith(")") and " (" in label:
        i = label.rfind(" (")
        return label[:i], label[i + 2:-1]
    m = re.match(r"^(.*)\+0x[0-9a-f]+$", label)
    return None, m.group(1) if m else label


def on_cpu(frames):
    return frames[-1] != "[off-cpu]"


def find_path(frames, path, match=str.startswith):
    """Indices of the frames matching path's elements (match(frame, want):
    a label prefix by default), in order, or None."""
    at, k = [], 1
    for want in path:
        while k < len(frames) and not match(frames[k], want):
            k += 1
        if k == len(frames):
            return None
        at.append(k)
        k += 1
    return at


def show(rows, limit=12):
    """Folded lines for a failure message, the heaviest first."""
    rows = sorted(rows, key=lambda r: -r[1])
    return "\n  ".join("%s %d" % (";".join(f), w) for f, w in rows[:limit]) + \
        ("\n  ... %d more" % (len(rows) - limit) if len(rows) > limit else "")


def incomplete_ms(s):
    """Sampled time where the native unwinder stopped early: those samples
    lack the path's upper frames, so they are no path's weight."""
    return not_whole(s) * s["meta"]["sampling"]["period_ns"] / 1e6


def not_whole(s):
    """Samples not merged whole (meta.sampling.native_frames): the unwind
    stopped early (partial), did not pair up with the Python frames
    (mismatched), or never reached proftrace (missing)."""
    nf = s["meta"]["sampling"].get("native_frames") or {}
    return nf.get("partial", 0) + nf.get("mismatched", 0) + nf.get("missing", 0)


def spin_tol(want_ms, s):
    return SIGMAS * max(want_ms, 1.0) ** 0.5 + incomplete_ms(s) + s.get("_steal_ms", 0.0)


# --- runs -----------------------------------------------------------------


def run(python, script, conf_text, args=(), env=None, pt_args=()):
    """Attach to script under python with conf_text, go, stop proftrace
    with SIGINT once the victim said done (still alive: its mappings can
    be read), then let it exit. Returns (summary with "_out" and
    "_steal_ms", truth, proftrace stderr, folded rows)."""
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    truth_path = os.path.join(tmp, "truth.json")
    conf = write_conf(tmp, conf_text)
    out = os.path.join(tmp, "out")
    v = victim([python, script], "--truth", truth_path, "--hold", *args, env=env)
    pt = None
    steal0 = host_steal_ms()
    try:
        pt = proftrace(v.pid, conf, out, *pt_args)
        try:
            pt.wait_line("proftrace: attached", "err", timeout=90)
        except AssertionError:
            try:  # a refused targets file: its error line comes just before the exit
                rc = pt.p.wait(5)
            except subprocess.TimeoutExpired:
                raise
            raise AssertionError("proftrace did not attach (exit %d) with the targets file:\n"
                                 "%s\nit said:\n%s" % (rc, conf_text, pt.rest("err"))) from None
        v.send("go\n")
        v.wait_line("done", timeout=120)
        pt.p.send_signal(signal.SIGINT)
        err = proftrace_done(pt)
        v.send("exit\n")
        assert v.wait(30) == 0, "victim failed"
    finally:
        stop(v, pt)
    s, t = read_run(out, truth_path)
    s["_steal_ms"] = host_steal_ms() - steal0
    return s, t, err, read_folded(out)


def env_for(extra=None):
    env = dict(os.environ)
    env.pop("PYTHONPERFSUPPORT", None)  # perf trampolines: native frames of their own
    env.update(extra or {})
    return with_agent(env)


def run_mixed(python, native_frames, *args):
    """pymixed.py with ptnative built for python, its args after --ext."""
    tmp = tempfile.mkdtemp(prefix="pt-ptnative-")
    so = build_ptnative(python, tmp)
    return run(python, VICTIM, CONF % native_frames, ("--ext", so) + args, env_for())


# --- checks ---------------------------------------------------------------


def check_no_interpreter(rows, label):
    """(c): no native frame of the interpreter or of proftrace's libraries."""
    bad = []
    for frames, w in rows:
        for f in frames[1:]:
            if "_PyEval_EvalFrameDefault" in f:
                bad.append((frames, w))
                break
            if kind(f) != "native":
                continue
            _, mod = native_parts(f)
            if INTERPRETER_MODULE.match(mod) or mod.startswith("libproftrace_"):
                bad.append((frames, w))
                break
    assert not bad, "%s: %d stacks with a frame of the interpreter or of proftrace:\n  %s" % (
        label, len(bad), show(bad))


def check_paths(s, t, rows, label):
    """(a) and (b). Returns the table lines."""
    leaf = [(f, w) for f, w in rows if any(x.startswith("ptn_leaf (ptnative") for x in f)]
    assert leaf, "%s: no stack through ptn_leaf (ptnative...); the heaviest stacks:\n  %s" % (
        label, show(rows))
    weight = {"native": 0, "callback": 0}
    stray = []
    for frames, w in leaf:
        hit = None
        for name, path in (("callback", CALLBACK_PATH), ("native", NATIVE_PATH)):
            at = find_path(frames, path)
            if at is None:
                continue
            # the path's last Python frame is the last Python frame of the
            # stack, and below ptn_leaf only native frames (clock_gettime)
            last_py = max(i for i in at if kind(frames[i]) == "python")
            if any(kind(x) == "python" for x in frames[last_py + 1:]):
                continue
            if any(kind(x) not in ("native", "pseudo") for x in frames[at[-1] + 1:]):
                continue
            hit = name
            break
        if hit is None:
            stray.append((frames, w))
        elif on_cpu(frames):
            weight[hit] += w
    stray_ms = sum(w for f, w in stray if on_cpu(f)) / 1000.0
    inc = incomplete_ms(s)
    assert stray_ms <= inc, (
        "%s: %.1f ms on the CPU in stacks through ptn_leaf that are neither path (the unwinder's "
        "early stops allow %.1f ms: native_frames partial+mismatched+missing %r):\n  %s\nwant, root to leaf:"
        "\n  %s\n  %s" % (label, stray_ms, inc, not_whole(s),
                          show(stray), " ... ".join(NATIVE_PATH), " ... ".join(CALLBACK_PATH)))
    table = []
    for name in ("native", "callback"):
        tr = t[name]
        want = tr["cpu_ns"] / 1e6
        got = weight[name] / 1000.0
        tol = spin_tol(want, s)
        table.append("  %-8s %3d spins  spun %7.1f ms  around %7.1f ms  CPU %7.1f ms  "
                     "sampled on-CPU %7.1f ms  diff %+6.1f (tolerance %.1f)" % (
                         name, tr["calls"], tr["spun_ns"] / 1e6, tr["outer_ns"] / 1e6, want, got,
                         got - want, tol))
    sm = s["meta"]["sampling"]
    text = "\n".join(table)
    for name, line in zip(("native", "callback"), table):
        want = t[name]["cpu_ns"] / 1e6
        got = weight[name] / 1000.0
        assert abs(got - want) <= spin_tol(want, s), (
            "%s: %s path's on-CPU weight off the victim's CPU time:\n%s\nsamples %d, lost %d, "
            "unreadable %d, not merged whole %r, host steal %.0f ms; heaviest stacks through "
            "ptn_leaf:\n  %s" % (label, name, text, sm["samples"], sm["lost_samples"],
                                 sm["unreadable_stacks"], not_whole(s),
                                 s["_steal_ms"], show(leaf)))
    return table


def check_on(python, label):
    s, t, _, rows = run_mixed(python, "on")
    check_no_interpreter(rows, label)
    table = check_paths(s, t, rows, label)
    print("%s: native_frames on, %d steps, %.0f ms\n%s" % (
        label, t["steps"], t["wall_ns"] / 1e6, "\n".join(table)))


def check_off(python, label):
    """(d): as today, whatever the default is."""
    s, t, _, rows = run_mixed(python, "off")
    native = [(f, w) for f, w in rows if any(kind(x) == "native" for x in f[1:])]
    assert not native, "%s: native_frames off, %d stacks with native frames:\n  %s" % (
        label, len(native), show(native))
    for name, frame in (("native", "native_part (pymixed.py:"),
                        ("callback", "callback (pymixed.py:")):
        got = sum(w for f, w in rows if on_cpu(f) and f[-1].startswith(frame)) / 1000.0
        want = t[name]["cpu_ns"] / 1e6
        assert abs(got - want) <= spin_tol(want, s), (
            "%s: native_frames off, on-CPU weight of stacks ending in %s %.1f ms, the victim's "
            "spins %.1f ms (tolerance %.1f):\n  %s" % (
                label, frame, got, want, spin_tol(want, s), show(rows)))


def kernel_task_work():
    """Does this kernel's BPF have task works (6.18+)? Its name in the
    kernel's BTF strings says so."""
    with open("/sys/kernel/btf/vmlinux", "rb") as f:
        return b"\0bpf_task_work_schedule_resume_impl\0" in f.read()


def check_offcpu(python, label, block_ms=3.0, shorts=5, short_us=100.0, steps=60,
                 task_work=True):
    """Native frames off the CPU, against the victim's clock; task_work
    False: the way kernels before 6.18 take them (PT_NO_TASK_WORK=1, the
    sys_exit tracepoint)."""
    if not task_work:
        os.environ["PT_NO_TASK_WORK"] = "1"
    try:
        s, t, _, rows = run_mixed(python, "on", "--steps", str(steps), "--block-ms",
                                  str(block_ms), "--short-blocks", str(shorts), "--short-us",
                                  str(short_us))
    finally:
        os.environ.pop("PT_NO_TASK_WORK", None)
    check_no_interpreter(rows, label)
    nf = s["meta"]["sampling"]["native_frames"]
    eq(nf["offcpu_via"], "task_work" if task_work and kernel_task_work() else "sys_exit",
       "%s: how native stacks off the CPU were taken" % label)
    off = [(f, w) for f, w in rows if not on_cpu(f)]

    def below_native(frames, at):
        # below ptn_block_inner: libc's frames only, then [off-cpu]
        return all(kind(x) in ("native", "pseudo") for x in frames[at[-1] + 1:])

    blk = [(f, w) for f, w in off if (lambda at: at and below_native(f, at))(
        find_path(f, BLOCK_PATH))]
    # under block_part off the CPU with no native frame: intervals that went
    # without (missing, moved) or a preemption in block_part's own Python
    py_only = sum(w for f, w in off if find_path(f, BLOCK_PATH[:2]) and
                  not any(kind(x) == "native" for x in f[1:])) / 1000.0
    got = sum(w for _, w in blk) / 1000.0
    tb = t["block"]
    want, around = tb["spun_ns"] / 1e6, tb["outer_ns"] / 1e6
    lost = nf["offcpu_moved"] + nf["missing"]
    tol = tb["calls"] * BLOCK_CALL_TOL_MS
    table = ("  %s: %d blocks of %.1f ms: slept %.1f ms (victim; %.1f around the call), off the "
             "CPU under the path %.1f ms (+%.1f Python frames only), diff %+.1f (tolerance "
             "%.1f); native_frames %r" % (label, tb["calls"], block_ms, want, around, got,
                                         py_only, got + py_only - want, tol, nf))
    print(table)
    assert blk, "%s: no off-CPU stack through %s; off-CPU stacks:\n  %s" % (
        label, " ... ".join(BLOCK_PATH), show(off))
    # every interval on the path lies inside the victim's clock around the
    # call; the sleeps lie inside intervals with or without native frames
    assert got <= around + tol and got + py_only >= want - tol, (
        "%s: off-CPU weight of the blocks' native path against the victim's clock:\n%s\n"
        "off-CPU stacks:\n  %s" % (label, table, show(off)))
    assert nf["offcpu_stacks"] >= tb["calls"] - lost, (table, nf)
    # the short blocks: all their time off the CPU under short_part, some
    # with the native path, the others counted
    ts_ = t["short"]
    short_all = sum(w for f, w in off if find_path(f, SHORT_PATH[:2])) / 1000.0
    short_nat = [(f, w) for f, w in off if find_path(f, SHORT_PATH)]
    swant = ts_["spun_ns"] / 1e6
    stol = ts_["calls"] * BLOCK_CALL_TOL_MS
    print("  short blocks: %d of %.0f us, slept %.1f ms, off the CPU under short_part %.1f ms, "
          "with native frames %.1f ms; offcpu_budget %d" % (
              ts_["calls"], short_us, swant, short_all,
              sum(w for _, w in short_nat) / 1000.0, nf["offcpu_budget"]))
    assert swant - stol <= short_all <= swant + stol, (label, swant, short_all, show(off))
    assert short_nat, "%s: no short block had native frames:\n  %s" % (label, show(off))
    assert nf["offcpu_budget"] > 0, ("%s: every short block had native frames: no budget?" %
                                     label, nf)


def check_pool(python, label, pool_ms=8.0, steps=60):
    """A thread without Python's native stacks, against its own CPU clock."""
    s, t, _, rows = run_mixed(python, "on", "--steps", str(steps), "--pool-ms", str(pool_ms))
    check_no_interpreter(rows, label)
    sm = s["meta"]["sampling"]
    period_ms = sm["period_ns"] / 1e6
    worker = [(f, w) for f, w in rows if f[0].startswith("ptn-pool (tid ")]
    assert worker, "%s: no stack of the ptn-pool thread; roots: %r" % (
        label, sorted({f[0] for f, _ in rows}))
    # the path from the thread's root, natives only
    on_path = [(f, w) for f, w in worker if on_cpu(f) and find_path(f, POOL_PATH)]
    got = sum(w for _, w in on_path) / 1000.0
    tp = t["pool"]
    want = tp["spun_ns"] / 1e6
    tol = spin_tol(want, s) * 1.0 + (2 + 1) * POOL_EVERY * period_ms + \
        not_whole(s) * POOL_EVERY * period_ms
    stray = [(f, w) for f, w in worker if any(kind(x) == "python" for x in f[1:])]
    print("  %s: pool: %d jobs, worker CPU %.1f ms (its clock), sampled on-CPU through the "
          "path %.1f ms, all of ptn-pool's %.1f ms; diff %+.1f (tolerance %.1f)" % (
              label, tp["calls"], want, got, sum(w for f, w in worker if on_cpu(f)) / 1000.0,
              got - want, tol))
    assert not stray, "%s: Python frames in ptn-pool's stacks:\n  %s" % (label, show(stray))
    # nine in ten of its samples were held and folded into the tenth
    nf = sm["native_frames"]
    held = nf["pooled_samples"] * period_ms
    assert 0.8 * want - tol <= held <= 0.9 * want + tol, (
        "%s: pooled_samples %d (%.1f ms) for %.1f ms of the worker's CPU" % (
            label, nf["pooled_samples"], held, want))
    assert abs(got - want) <= tol, (
        "%s: ptn-pool's on-CPU weight through %s against the worker's CPU time: %.1f vs "
        "%.1f ms (tolerance %.1f); its stacks:\n  %s" % (
            label, " ... ".join(POOL_PATH), got, want, tol, show(worker)))
    # the Python thread waits for it off the CPU, in ptn_pool_wait
    off = [(f, w) for f, w in rows if not on_cpu(f)]
    wait = sum(w for f, w in off if find_path(f, POOL_WAIT_PATH)) / 1000.0
    py_only = sum(w for f, w in off if find_path(f, POOL_WAIT_PATH[:2]) and
                  not any(kind(x) == "native" for x in f[1:])) / 1000.0
    on_part = sum(w for f, w in rows if on_cpu(f) and find_path(f, POOL_WAIT_PATH[:2])) / 1000.0
    around = tp["outer_ns"] / 1e6
    wtol = tp["calls"] * BLOCK_CALL_TOL_MS + spin_tol(on_part, s)
    print("  %s: pool: waited around the call %.1f ms; off the CPU in ptn_pool_wait %.1f ms "
          "(+%.1f Python frames only), on the CPU in pool_part %.1f ms" % (
              label, around, wait, py_only, on_part))
    assert wait > 0, "%s: no off-CPU stack through %s:\n  %s" % (
        label, " ... ".join(POOL_WAIT_PATH), show(off))
    assert wait <= around + wtol and wait + py_only + on_part >= around - wtol, (
        label, around, wait, py_only, on_part, wtol)


def check_gil(python, label, gil_ms=1.0, steps=40):
    """A wait for the GIL shown as such, against the victim's clock around
    PyEval_RestoreThread: each step sleeps gil_ms with the GIL released
    while gil-hog spins in Python, then waits for the GIL back (the switch
    interval, 5 ms) in take_gil."""
    s, t, _, rows = run_mixed(python, "on", "--steps", str(steps), "--gil-ms", str(gil_ms))
    check_no_interpreter(rows, label)
    nf = s["meta"]["sampling"]["native_frames"]
    off = [(f, w) for f, w in rows if not on_cpu(f)]
    # the wait: under the path, then libc's frames only
    gw = [(f, w) for f, w in off if (lambda at: at and all(
        kind(x) in ("native", "pseudo") for x in f[at[-1] + 1:]))(find_path(f, GIL_PATH))]
    got = sum(w for _, w in gw) / 1000.0
    # all of the take's time off the CPU: the wait, and a preemption in its
    # mutex or signal (libc frames without a condition wait: not the GIL's
    # to tell on a build that does not name take_gil)
    take = sum(w for f, w in off if find_path(f, GIL_PATH[:4])) / 1000.0
    # in ptn_gil_take off the CPU without native frames (the budget, a
    # native stack that did not come)
    py_only = sum(w for f, w in off if find_path(f, GIL_PATH[:2]) and
                  not any(kind(x) == "native" for x in f[1:])) / 1000.0
    tg = t["gil"]
    want, cpu_ms = tg["spun_ns"] / 1e6, tg["cpu_ns"] / 1e6
    # the intervals are exact; the victim's clock around each take holds
    # its intervals and its time on the CPU (bounded by the thread's CPU
    # clock around the call), plus two clock reads a call, plus what the
    # hypervisor took while it ran (in neither: harness.host_steal_ms)
    tol = tg["calls"] * BLOCK_CALL_TOL_MS
    steal = s["_steal_ms"]
    table = ("  %s: %d waits for the GIL after %.1f ms sleeps: PyEval_RestoreThread took %.1f "
             "ms (victim; CPU %.1f around the call), off the CPU under ... ptn_gil_take;[GIL "
             "wait] %.1f ms, under ptn_gil_take %.1f (+%.1f Python frames only); host steal "
             "%.0f ms; gil_stacks %d" % (label, tg["calls"], gil_ms, want, cpu_ms, got, take,
                                         py_only, steal, nf["gil_stacks"]))
    print(table)
    assert gw, "%s: no off-CPU stack through %s; off-CPU stacks:\n  %s" % (
        label, " ... ".join(GIL_PATH), show(off))
    assert got <= take <= want + tol and take + py_only + cpu_ms + steal >= want - tol, (
        "%s: off-CPU weight in ptn_gil_take against the victim's clock:\n%s\noff-CPU "
        "stacks:\n  %s" % (label, table, show(off)))
    # most of it is the wait: each take waits out the hog's switch interval
    # (5 ms) in the condition wait, against tens of us of mutex and signal
    assert got >= GIL_WAIT_SHARE * take, (
        "%s: [GIL wait] holds too little of the take's time off the CPU:\n%s\noff-CPU "
        "stacks:\n  %s" % (label, table, show(off)))
    # the sleep before it is no GIL wait; the hog waits for the GIL too
    assert not [f for f, _ in rows if "ptn_block_inner (ptnative.so)" in f and
                any(x.startswith("[GIL") for x in f)], show(rows)
    assert [f for f, _ in off if f[0].startswith("gil-hog ") and "[GIL wait]" in f], show(off)
    assert nf["gil_stacks"] >= len(gw), nf


def _gil(label):
    label, python = interpreter(label)
    check_gil(python, label)


def test_mixed_gil_debian_py311():
    """Debian's 3.11: take_gil not named (.symtab stripped), the shape says it."""
    _gil("debian-3.11")


def test_mixed_gil_py38():
    _gil("3.8")


def test_mixed_gil_py313():
    _gil("3.13")


def _pool(label):
    label, python = interpreter(label)
    check_pool(python, label)


def _offcpu(label):
    label, python = interpreter(label)
    check_offcpu(python, label)


def test_mixed_pool_debian_py311():
    _pool("debian-3.11")


def test_mixed_pool_py312():
    _pool("3.12")


def test_mixed_offcpu_debian_py311():
    _offcpu("debian-3.11")


def test_mixed_offcpu_py38():
    _offcpu("3.8")


def test_mixed_offcpu_py313():
    _offcpu("3.13")


def test_mixed_offcpu_sys_exit_debian_py311():
    """The way without task works (kernels before 6.18): the same truth."""
    label, python = interpreter("debian-3.11")
    check_offcpu(python, label, task_work=False)


def test_mixed_cli_debian_py311():
    """On by default (a targets file that does not say); --no-native on the
    command line turns it off over the file's silence, --native on over
    the file's off."""
    label, python = interpreter("debian-3.11")
    tmp = tempfile.mkdtemp(prefix="pt-ptnative-")
    so = build_ptnative(python, tmp)
    conf = "step py:pymixed::step\n"
    s, t, _, rows = run(python, VICTIM, conf, ("--ext", so), env_for())
    nf = s["meta"]["sampling"]["native_frames"]
    assert nf and nf["stacks"] > 0, ("on by default", nf)
    check_no_interpreter(rows, label)
    check_paths(s, t, rows, label)
    s, _, _, rows = run(python, VICTIM, conf, ("--ext", so), env_for(), ("--no-native",))
    assert s["meta"]["sampling"]["native_frames"] is None, "--no-native"
    assert not [f for f, _ in rows if any(kind(x) == "native" for x in f[1:])], show(rows)
    s, t, _, rows = run(python, VICTIM, conf + "set native_frames off\n", ("--ext", so),
                        env_for(), ("--native",))
    nf = s["meta"]["sampling"]["native_frames"]
    assert nf and nf["stacks"] > 0, ("--native over the file's off", nf)
    check_no_interpreter(rows, label)
    check_paths(s, t, rows, label)


def _on(label):
    label, python = interpreter(label)
    check_on(python, label)


def _off(label):
    label, python = interpreter(label)
    check_off(python, label)


def test_mixed_py38():
    _on("3.8")


def test_mixed_py310():
    _on("3.10")


def test_mixed_py311():
    _on("3.11")


def test_mixed_py312():
    _on("3.12")


def test_mixed_py313():
    _on("3.13")


def test_mixed_debian_py311():
    _on("debian-3.11")


def test_mixed_off_py38():
    _off("3.8")


def test_mixed_off_py312():
    _off("3.12")


def test_mixed_off_debian_py311():
    _off("debian-3.11")


# --- torch ----------------------------------------------------------------


def torch_python():
    python = ts.debian_python()
    p = subprocess.run([python, "-c", "import torch"], capture_output=True, timeout=120)
    if p.returncode != 0:
        raise Skip("torch not importable by %s (apt install python3-torch): %s" % (
            python, p.stderr.decode(errors="replace").strip().splitlines()[-1:]))
    return python


def torch_match(frame, want):
    """frame is want = (prefix or symbol, module prefix or None for Python)."""
    name, mod = want
    if mod is None:
        return frame.startswith(name)
    if kind(frame) != "native":
        return False
    sym, m = native_parts(frame)
    return sym is not None and m.startswith(mod) and (sym == name or sym.startswith(name + "("))


def find_torch_path(frames):
    return find_path(frames, TORCH_LINEAR_PATH, torch_match)


def test_mixed_torch_debian_py311():
    python = torch_python()
    s, t, _, rows = run(python, TORCH_VICTIM, TORCH_CONF, (), env_for())
    check_no_interpreter(rows, "torch")
    fw_cpu = t["forward"]["cpu_ns"] / 1e6
    linear = [(f, w) for f, w in rows if any(x.startswith("Linear.forward (linear.py:")
                                             for x in f)]
    assert linear, "torch: no stack through Linear.forward; the heaviest:\n  %s" % show(rows)
    sgemm = [(f, w) for f, w in linear if find_torch_path(f) is not None]
    assert sgemm, ("torch: no stack under Linear.forward goes through, in order:\n  %s\n"
                   "stacks under Linear.forward, the heaviest:\n  %s" % (
                       "\n  ".join("%s (%s)" % w if w[1] else w[0] for w in TORCH_LINEAR_PATH),
                       show(linear)))
    # the forward: from the model's first Module._call_impl under step
    fwd_native = fwd_py = 0
    for frames, w in rows:
        if not on_cpu(frames):
            continue
        st = find_path(frames, ("step (pytorch_mixed.py:", "Module._call_impl (module.py:"))
        if st is None:
            continue
        if any(kind(x) == "native" for x in frames[st[1] + 1:]):
            fwd_native += w
        else:
            fwd_py += w
    got = fwd_native / 1000.0
    sg = sum(w for f, w in sgemm if on_cpu(f)) / 1000.0
    tol = spin_tol(fw_cpu, s) + TORCH_PY_REL * fw_cpu
    sm = s["meta"]["sampling"]
    table = ("  forward calls %d, truth wall %.1f ms, CPU %.1f ms\n"
             "  sampled on-CPU under forward: with native frames below %.1f ms, Python only "
             "%.1f ms; through sgemm_ (the path) %.1f ms\n"
             "  diff %+.1f ms (tolerance %.1f); samples %d, not merged whole %r, steal %.0f ms"
             % (t["forward"]["calls"], t["forward"]["wall_ns"] / 1e6, fw_cpu, got,
                fwd_py / 1000.0, sg, got - fw_cpu, tol, sm["samples"],
                not_whole(s), s["_steal_ms"]))
    print("torch %s (Debian 3.11):\n%s" % (t["torch"], table))
    assert abs(got - fw_cpu) <= tol, (
        "torch: on-CPU weight of the forward with native frames below, against the victim's "
        "in-forward CPU time:\n%s\nheaviest forward stacks:\n  %s" % (table, show(linear)))
    eq(t["forward"]["calls"], t["steps"], "forward calls")


# --- a native thread that takes a thread state (pyadopt.py) ----------------

ADOPT_VICTIM = os.path.join(ROOT, "tests", "victims", "pyadopt.py")
ADOPT_CONF = "lines py:pyadopt::work\nset sample_hz 1000\nset native_frames %s\n"
ADOPT_PERIODS = 3  # on-CPU time is sampled: the grid's phase at each end, and one to spare
ADOPT_FOUND = "[stack unknown: not read at switch-out]"


def check_adopted(python, label, native_frames):
    """Each ptn-adopt thread's sampled wall time against its life on its
    own clock. The sampler's last look at it before its Python sleep was
    made while it had no thread state (spinning in C), a few ms before:
    the sleep's switch-out reads "none" from that look, and the interval
    was dropped whole as a native thread's idle time (200 ms missing a
    thread); a look after it now decides (bpf/pysample.bpf.c, settle_held).
    Tolerance: ADOPT_PERIODS sampling periods (the on-CPU parts are
    sampled), what late samples may miss, and the host's steal; below, the
    C spin's time off the CPU (preempted while it had no thread state: a
    native thread's, not counted)."""
    tmp = tempfile.mkdtemp(prefix="pt-ptnative-")
    so = build_ptnative(python, tmp)
    s, t, _, rows = run(python, ADOPT_VICTIM, ADOPT_CONF % native_frames, ("--ext", so),
                        env_for())
    sm = s["meta"]["sampling"]
    tol = ADOPT_PERIODS * sm["period_ns"] / 1e6 + late_ms(s) + s["_steal_ms"]
    table = []
    bad = []
    for row in t["threads"]:
        th = ts.thread(s, row["tid"])
        life = row["life_ns"] / 1e6
        native_off = (row["spun_ns"] - row["spun_cpu_ns"]) / 1e6
        table.append("  tid %d: life %.1f ms (sleep %.1f, C spin off the CPU %.1f), sampled wall "
                     "%.1f ms (on %.1f, off %.1f): %+.1f" % (
                         row["tid"], life, row["sleep_ns"] / 1e6, native_off, th["wall_ms"],
                         th["on_cpu_ms"], th["off_cpu_ms"], th["wall_ms"] - life))
        if not life - native_off - tol <= th["wall_ms"] <= life + tol:
            bad.append(row["tid"])
    found = sum(w for f, w in rows if ADOPT_FOUND in f) / 1000.0
    print("%s (native frames %s): found late %d intervals, %.1f ms; dropped as without Python "
          "%d\n%s" % (label, native_frames, sm["off_cpu_found_late"], found,
                       sm["off_cpu_not_python"], "\n".join(table)))
    assert not bad, "%s: threads %r: sampled wall time off their life by more than %.1f ms:\n%s" % (
        label, bad, tol, "\n".join(table))
    # what the counter says was kept is what the stacks show, and back
    assert (found > 0) == (sm["off_cpu_found_late"] > 0), (found, sm["off_cpu_found_late"])


def test_adopted_thread_py39():
    label, python = interpreter("3.9")
    check_adopted(python, label, "on")


def test_adopted_thread_debian_py311():
    label, python = interpreter("debian-3.11")
    check_adopted(python, label, "off")


def test_adopted_thread_py313():
    label, python = interpreter("3.13")
    check_adopted(python, label, "on")
