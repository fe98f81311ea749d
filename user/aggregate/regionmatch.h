/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intra-kernel regions (gpu/regionfile.h) placed on proftrace's timeline:
 * each launch of regions is matched to a kernel launch of the trace by
 * kernel name and launch order, its GPU-clock times shifted by an offset
 * that puts its regions inside that kernel's span, and per-tag figures
 * are computed per kernel launch. Pure C: tests give kernel spans and
 * region sets.
 *
 * Alignment: each matched launch i allows offsets [lo_i, hi_i] (kernel
 * start - first region start, kernel end - last region end). Launches on
 * one clock (pt_region_launch.clock: every raw buffer is on the GPU's
 * global timer, each Chrome trace has a time base of its own) share an
 * offset when one fits them all (the intersection is not empty: one
 * clock offset explains every launch; the middle of the intersection);
 * else each of its launches gets the middle of its own interval, and the
 * spread of offsets is reported.
 * A launch whose regions last longer than its kernel has no such offset:
 * it is centred on the kernel. The residual is how far any region still
 * falls outside its kernel; nothing is clamped here.
 */
#ifndef PT_REGIONMATCH_H
#define PT_REGIONMATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/regionfile.h"

/* A kernel launch of the trace (times on the trace's clock, ns). */
struct pt_kspan {
	const char *name;
	uint64_t start_ns, end_ns;
	/* the name CUPTI gave a C++ kernel, where name is its demangled
	 * form (trace.json's args.mangled), else NULL: a region file may
	 * name the kernel either way */
	const char *mangled;
};

/* One launch of regions (pt_region_set.l[i]) and where it went. */
struct pt_rmatch {
	const char *kernel;  /* its kernel name (the file's, else the default) */
	long span;	     /* index into the kernel spans; -1: unmatched */
	int64_t launch;	     /* the kernel's launch index (matched, or asked for) */
	const char *why;     /* unmatched: why (static text) */
	int64_t offset_ns;   /* trace time = GPU time + offset */
	uint64_t outside_ns; /* the most any of its regions falls outside the kernel */
	uint64_t outside;    /* regions that do */
};

/* Per kernel name and tag, over the matched launches of that kernel. */
struct pt_rtag {
	const char *kernel;
	uint32_t tag;	    /* index into pt_region_set.tags */
	uint64_t count;	    /* regions */
	uint64_t total_ns;  /* their summed durations */
	uint64_t launches;  /* launches it appears in */
	uint64_t union_ns;  /* per launch, the time any region of the tag ran; summed */
	uint64_t kernel_ns; /* the matched launches' kernel time (all of them) */
	uint64_t p50_ns, p99_ns, mean_ns; /* of its per-launch sums (nearest rank) */
};

struct pt_rclock {
	const char *clock; /* pt_region_launch.clock */
	uint64_t launches; /* matched */
	bool one_offset;   /* one offset fits them all */
	int64_t offset_ns; /* the median of its launches' */
	int64_t offset_min_ns, offset_max_ns;
};

struct pt_rkernel {
	const char *name;
	uint64_t launches;     /* in the trace */
	uint64_t with_regions; /* matched */
};

struct pt_regions_result {
	struct pt_rmatch *m; /* one per pt_region_set.l */
	size_t nm;
	bool global; /* one offset per clock fits all its launches */
	struct pt_rclock *clocks;
	size_t nclocks;
	uint64_t launches_matched, unmatched, overflowed;
	uint64_t regions, regions_invalid; /* matched launches' regions; left out by readers */
	uint64_t residual_max_ns, regions_outside;
	struct pt_rtag *tags;
	size_t ntags;
	struct pt_rkernel *kernels; /* names that have region launches */
	size_t nkernels;
};

/*
 * Match s's launches to spans (any order; launch order is by start time
 * per name). default_kernel names launches whose file named none (NULL:
 * they are unmatched). 0 or -ENOMEM; free with pt_regionmatch__result_free.
 */
int pt_regionmatch__match(const struct pt_region_set *s, const char *default_kernel,
			  const struct pt_kspan *spans, size_t nspans,
			  struct pt_regions_result *out);
void pt_regionmatch__result_free(struct pt_regions_result *res);

#endif
