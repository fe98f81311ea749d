# SPDX-License-Identifier: BSD-2-Clause
"""The CUPTI shim loaded late (issue 18, part 3's shim side): dlopen'ed into
a process that already has libcudart (as proftrace --inject will), with
nobody calling InitializeInjection. Its constructor must start the same
dormant shim; attached, its CUPTI calls fail here (no driver), the failure
is reported exactly as for a shim loaded at start, and the process runs
on. Without CUDA in the process, or when CUDA_INJECTION64_PATH names it
(the driver will call InitializeInjection), the constructor does nothing.
"""
import glob
import os
import subprocess

from harness import ROOT, Skip, eq, profile, with_agent
from test_python import pyenv_python

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def shim_and_cudart():
    shim = os.environ.get("PT_SHIM") or os.path.join(ROOT, ".output", "libproftrace_cupti.so")
    if not os.path.exists(shim):
        raise Skip("no CUPTI shim at %s: built only when CUDA is found" % shim)
    libs = sorted(glob.glob(os.path.join(CUDA_HOME, "lib64", "libcudart.so*")) +
                  glob.glob(os.path.join(CUDA_HOME, "targets", "*", "lib", "libcudart.so*")))
    if not libs:
        raise Skip("no libcudart under %s" % CUDA_HOME)
    return shim, libs[0]


def victim_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k != "CUDA_INJECTION64_PATH"}
    env.update(extra or {})
    return env


def test_shim_loaded_late_reports_like_at_start():
    shim, cudart = shim_and_cudart()
    py = pyenv_python(10)
    s, t, err = profile("step py:pyshim::step\n", ["--steps", 60, "--late", cudart],
                        victim_name=[py, os.path.join(ROOT, "tests", "victims", "pyshim.py"),
                                     shim],
                        extra=["--gpu", "on"], victim_env=with_agent(victim_env()))
    eq(t["init"], 0, "InitializeInjection not called by the victim")
    eq(s["stats"]["steps"], 60, "steps: the process ran on")
    g = s["gpu"]
    eq(g["source"], "cupti-shim", "source: the shim started by its constructor")
    c = g["shim"]["conflict"]
    assert c and c["call"].startswith("cupti") and c["result"] == "CUPTI_ERROR_UNKNOWN", g["shim"]
    eq((g["shim"]["active"], g["kernels"]), (False, 0), "never active, no records")
    assert "CUPTI could not be enabled" in err, err


def test_shim_injected_into_a_running_cuda_process():
    """proftrace --inject into a process that runs CUDA without the shim:
    the shim is loaded with the borrowed-thread dlopen and reports like
    one loaded at start; the process runs on."""
    shim, cudart = shim_and_cudart()
    py = pyenv_python(10)
    s, t, err = profile("step py:pyshim::step\n", ["--steps", 60, "--cuda-only", cudart],
                        victim_name=[py, os.path.join(ROOT, "tests", "victims", "pyshim.py"),
                                     shim],
                        extra=["--gpu", "on", "--inject"], victim_env=with_agent(victim_env()))
    assert "the CUPTI shim loaded (--inject)" in err, err
    eq(s["stats"]["steps"], 60, "steps: the process ran on")
    g = s["gpu"]
    eq(g["source"], "cupti-shim", "source: the injected shim")
    c = g["shim"]["conflict"]
    assert c and c["call"].startswith("cupti") and c["result"] == "CUPTI_ERROR_UNKNOWN", g["shim"]
    assert "CUPTI could not be enabled" in err, err


def run_plain(args, env):
    py = pyenv_python(10)
    p = subprocess.run([py, os.path.join(ROOT, "tests", "victims", "pyshim.py")] + args,
                       input="go\n", capture_output=True, text=True, timeout=60, env=env)
    return p


def test_shim_constructor_stays_out():
    shim, cudart = shim_and_cudart()
    # no CUDA in the process: nothing starts (pyshim exits non-zero if it did)
    p = run_plain([shim, "--steps", "1", "--no-cuda"], victim_env())
    eq(p.returncode, 0, "no CUDA: " + p.stderr)
    # named by CUDA_INJECTION64_PATH: left to the driver's InitializeInjection
    p = run_plain([shim, "--steps", "1", "--late", cudart, "--expect-no-start"],
                  victim_env({"CUDA_INJECTION64_PATH": shim}))
    eq(p.returncode, 0, "named by CUDA_INJECTION64_PATH: " + p.stderr)
