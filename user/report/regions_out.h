/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intra-kernel regions into an output folder's documents (import-regions,
 * docs/gpu.md "Regions inside a kernel"): the kernel launches read from
 * trace.json, the regions written back into it nested under their
 * kernels, and summary.json's gpu.regions.
 *
 * In trace.json each region is an "X" slice (cat "region") on its
 * kernel's stream track, inside the kernel's slice. Regions that overlap
 * without nesting (concurrent warps or blocks) cannot share a track, so a
 * launch's regions are laid out on lanes, first fit: lane 0 is the stream
 * track itself; lane L >= 1 is a track of the same GPU, tid
 * PT_REGION_LANE_TID + L * 1000000 + stream, named "stream S regions L",
 * holding a copy of the kernel's slice (cat "region_kernel") so its
 * regions nest under the kernel there too. A region that alignment left
 * partly outside its kernel is clamped into it, with args.outside_ns.
 * Importing again replaces the regions imported before.
 */
#ifndef PT_REGIONS_OUT_H
#define PT_REGIONS_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "aggregate/regionmatch.h"

#define PT_REGION_LANE_TID 1000000000u
#define PT_REGION_MAX_LANES 999

/* trace ts can be negative (before attach): spans are kept as ts in ns
 * plus this (1e15 ns, 11.6 days), so offsets found against them are too:
 * CLOCK_MONOTONIC = GPU time + offset - PT_RTRACE_BIAS_NS + t0_mono_ns. */
#define PT_RTRACE_BIAS_NS 1000000000000000ll

/* The kernel launches of a parsed trace.json. */
struct pt_rtrace {
	cJSON *doc;
	struct pt_kspan *spans; /* times: trace ts in ns + a bias (all positive) */
	cJSON **kev;		/* the kernel's event of each span */
	size_t n;
	uint64_t removed;   /* regions of an earlier import, taken out */
	int64_t t0_mono_ns; /* otherData's: CLOCK_MONOTONIC of ts 0 */
};

/* Find the kernels of doc (a proftrace trace.json) and take out the
 * regions of an earlier import. 0, -EINVAL (not a proftrace trace, err
 * says why) or -ENOMEM. */
int pt_rtrace__open(struct pt_rtrace *t, cJSON *doc, char *err, size_t errlen);
void pt_rtrace__free(struct pt_rtrace *t); /* not doc */

struct pt_rtrace_stats {
	uint64_t written;  /* region slices added */
	uint64_t lanes;	   /* most lanes any launch needed (1: the stream track only) */
	uint64_t clamped;  /* regions clamped into their kernel */
	uint64_t left_out; /* regions past PT_REGION_MAX_LANES lanes */
};

/* Add the matched regions, re-sort traceEvents by time. 0 or -ENOMEM. */
int pt_rtrace__merge(struct pt_rtrace *t, const struct pt_region_set *s,
		     const struct pt_regions_result *res, struct pt_rtrace_stats *st);

/* summary.json's gpu.regions (replaces one there). Offsets are given on
 * CLOCK_MONOTONIC (t0_mono_ns: pt_rtrace's). files: the inputs as given.
 * 0, -EINVAL (no gpu object) or -ENOMEM. */
int pt_regions_out__add_summary(cJSON *summary, const struct pt_region_set *s,
				const struct pt_regions_result *res,
				const struct pt_rtrace_stats *st, int64_t t0_mono_ns,
				const char *const *files, size_t nfiles);

/* Parse a JSON text keeping integers of 16 digits or more exact (as raw
 * items: start_unix_ns would not survive a double); all_raw: every
 * number, so it is written back as it was ("10.000" stays). NULL: not
 * JSON or out of memory. */
cJSON *pt_regions_out__parse_json(const char *txt, size_t len, bool all_raw);

/* trace.json as proftrace writes it: one event a line. 0 or -errno. */
int pt_rtrace__write(FILE *f, const cJSON *doc);

#endif
