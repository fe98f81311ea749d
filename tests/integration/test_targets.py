# SPDX-License-Identifier: BSD-2-Clause
"""The bundled configs in targets/: each parses, and each works on a real process."""
import glob
import os

from harness import (ROOT, VICTIMS, Skip, bucket, eq, func, profile, run_proftrace, victim,
                     within)

CUDART = os.environ.get("PT_CUDART", "/usr/local/cuda/lib64/libcudart.so.13")
N = 100


def test_every_bundled_config_dry_runs():
    v = victim("victim_engine")
    try:
        confs = sorted(glob.glob(os.path.join(ROOT, "targets", "*.conf")))
        assert confs, "no bundled configs"
        for conf in confs:
            rc, out, err = run_proftrace(["-p", str(v.pid), "--targets", conf, "--dry-run"])
            eq(rc, 0, "%s --dry-run (%s)" % (os.path.basename(conf), err.strip()))
    finally:
        v.kill()


def test_cuda_fallback_counts():
    """targets/cuda.conf on the real libcudart: exact launch/copy/sync counts."""
    if not os.path.exists(CUDART):
        raise Skip("no CUDA runtime at %s (set PT_CUDART)" % CUDART)
    with open(os.path.join(ROOT, "targets", "cuda.conf")) as f:
        conf = "step native:exe:cuda_step\n" + f.read()
    s, t, _ = profile(conf, ["--steps", N], victim_name="victim_cuda",
                      victim_first_args=[CUDART])
    eq(s["stats"]["steps"], N, "steps")
    eq(t["launches"], 8 * N, "truth launches")
    eq(func(s, "cudaLaunchKernel")["calls"], 8 * N, "cudaLaunchKernel calls")
    eq(func(s, "cudaMemcpyAsync")["calls"], 2 * N, "cudaMemcpyAsync calls")
    eq(func(s, "cudaStreamSynchronize")["calls"], N, "cudaStreamSynchronize calls")
    eq(bucket(s, "cuda.launch")["calls"], 8 * N, "cuda.launch calls")
    eq(bucket(s, "cuda.copy")["calls"], 2 * N, "cuda.copy calls")
    eq(bucket(s, "cuda.sync")["calls"], N, "cuda.sync calls")
    within(s["stats"]["time_ms"], t["functions"]["cuda_step"], N, "step time")
    eq(s["health"]["dropped_events"], 0, "dropped")
    for f in s["functions"]:
        if f["symbol"] and f["symbol"].startswith("cuda"):
            eq(f["attached"], True, f["symbol"] + " attached")
