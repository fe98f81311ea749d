/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GPU stream joined with the host one (issue 5): kernels, copies and
 * memsets from the CUPTI shim (gpuring.h) are matched by correlation id
 * to the runtime/driver call that launched them, that call's thread and
 * time to the counted step and the bucket calls open there, and the GPU
 * intervals to each step's window: busy and idle time inside the step.
 * Pure C: tests feed records, steps and bucket intervals.
 */
#ifndef PT_GPU_H
#define PT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dist.h"
#include "gpu/gpuring.h"

struct pt_gpu;

struct pt_gpu_kstat { /* one kernel name */
	/* demangled when CUPTI gave a C++ one (mangled is then that name;
	 * else NULL): the join owns it */
	const char *name;
	const char *mangled;
	uint64_t count;
	uint64_t total_ns;
	uint64_t max_ns;
};

struct pt_gpu_bucket {
	uint64_t kernels; /* GPU work items launched inside the bucket's calls, in counted steps */
	uint64_t gpu_ns;  /* their summed duration */
};

struct pt_gpu_device {
	uint32_t device;
	uint64_t kernels, copies, memsets;
	uint64_t busy_ns; /* union of its work, inside the window */
};

struct pt_gpu_result {
	uint64_t kernels, copies, memsets, api_calls;
	uint64_t syncs; /* the host waiting for the GPU: wait calls (and SYNC records) */
	uint64_t copy_bytes;
	uint64_t busy_ns; /* union of all work on all devices, inside the window */
	uint64_t window_ns;
	uint64_t unmatched;	/* work whose launch call was not seen (no API record) */
	uint64_t outside_steps; /* launched outside any counted step */
	/* the memory bound (pt_gpu__set_max_held): folds of the old part
	 * into these totals; records that came after a fold had settled
	 * their time (gpu.c, "Late records"); records not held because a
	 * fold could free nothing */
	uint64_t folds;
	uint64_t late;
	uint64_t not_held;
	/* counted steps */
	uint64_t steps;
	uint64_t steps_with_gpu;	     /* with any work launched in them */
	uint64_t step_ns;		     /* their summed time */
	uint64_t step_busy_ns;		     /* GPU busy inside the step windows */
	uint64_t step_items;		     /* work launched in counted steps */
	struct pt_dist step_busy, step_idle; /* per step, ns */
	struct pt_dist launch_delay;	     /* kernel start - its launch call's start, ns */
	struct pt_gpu_device *devices;
	size_t ndevices;
	struct pt_gpu_kstat *top; /* by total_ns, descending */
	size_t ntop;
	struct pt_gpu_bucket *buckets; /* nbuckets */
};

struct pt_gpu *pt_gpu__new(size_t nbuckets);
void pt_gpu__free(struct pt_gpu *g);
/* A record from the ring (names must stay valid until pt_gpu__free). */
int pt_gpu__record(struct pt_gpu *g, const struct pt_gpu_rec *r);
/* A completed host call of bucket functions (bmask) on thread tid. */
int pt_gpu__bucket_call(struct pt_gpu *g, uint32_t tid, uint64_t t0, uint64_t t1, uint64_t bmask);
/* A counted step. */
int pt_gpu__step(struct pt_gpu *g, uint32_t tid, uint64_t t0, uint64_t t1);
/*
 * At most n records held (default 4M, and an eighth more while a fold
 * frees nothing): at n, what is older than the fold lag behind the
 * latest record of every stream (default 30 s) is settled into the
 * totals and freed (gpu.c, settle()).
 */
void pt_gpu__set_max_held(struct pt_gpu *g, size_t n);
void pt_gpu__set_fold_lag(struct pt_gpu *g, uint64_t ns);
/* Records (and residual busy intervals) held now. */
size_t pt_gpu__held(const struct pt_gpu *g);
/* Join everything; the window is [t0, t1) (the part a fold settled is
 * counted whole: it must lie inside). The result lives in g. */
const struct pt_gpu_result *pt_gpu__join(struct pt_gpu *g, uint64_t t0, uint64_t t1);

#endif
