/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Readers of intra-kernel region traces (docs/gpu.md, "Regions inside a
 * kernel"): what a device-side profiler recorded inside one kernel launch,
 * on the GPU's global timer. Two forms, both files from elsewhere, so
 * every field is checked and a malformed file gives one message, never a
 * crash (tests/fuzz/fuzz_regions.c):
 *
 *   raw: a buffer of little-endian int64, [count, then count x (start_ns,
 *     dur_ns, tag_id, tid)], as copied from the device, and its tag table,
 *     a JSON array of names (index = tag_id) or an object
 *     {"tags": [...], "kernel": NAME, "launch": N, "capacity": N}. One
 *     buffer is one launch. count above the events the buffer holds (or
 *     above capacity) is the profiler's overflow: the events there are
 *     read, the launch is flagged.
 *   chrome: the Chrome-trace JSON such a profiler exports, one "X" slice
 *     per region (name: the tag; ts, dur: microseconds; tid: the
 *     profiler's thread, a warp or block), grouped into launches by
 *     (kernel, args.launch or else pid); the kernel is args.kernel, else
 *     the process_name of the pid, else the caller's default.
 *
 * Launches without a kernel name take the one the caller gives
 * (import-regions --kernel); without an index (-1) they are matched in
 * order (aggregate/regionmatch.h).
 */
#ifndef PT_REGIONFILE_H
#define PT_REGIONFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_REGIONS_MAX_EVENTS (1u << 24) /* per file */
#define PT_REGIONS_MAX_TAGS 65536

struct pt_region {
	uint64_t start_ns; /* GPU clock */
	uint64_t dur_ns;
	uint32_t tag; /* index into pt_region_set.tags */
	int64_t tid;  /* the profiler's thread (warp, block) */
};

struct pt_region_launch {
	char *kernel;	/* NULL: not named in the file */
	int64_t launch; /* index among the kernel's launches; -1: in order */
	struct pt_region *ev;
	size_t nev;
	uint64_t recorded; /* events the profiler counted (>= nev) */
	bool overflow;	   /* it counted more than its buffer held */
	uint64_t invalid;  /* events left out: negative or overflowing times, bad tag */
	char *source;	   /* the file it came from, for messages */
	const char *clock; /* its time base: PT_REGIONS_GPU_CLOCK, or source */
};

/* The clock of raw buffers: the GPU's global timer, one for all. */
#define PT_REGIONS_GPU_CLOCK "gpu-globaltimer"

struct pt_region_set {
	char **tags; /* names; ids without a name in the table get "tag <id>" */
	size_t ntags;
	struct pt_region_launch *l;
	size_t nl;
};

void pt_regionfile__init(struct pt_region_set *s);
void pt_regionfile__free(struct pt_region_set *s);

/*
 * A raw buffer and its tag table (NULL: none; tags are named "tag <id>").
 * Adds one launch to s. 0, or -EINVAL/-ENOMEM/-E2BIG with one line in err.
 */
int pt_regionfile__read_raw(struct pt_region_set *s, const void *buf, size_t len,
			    const char *tags_json, size_t tags_len, const char *source, char *err,
			    size_t errlen);

/* A Chrome-trace JSON text. Adds its launches to s. 0 or -errno, err set. */
int pt_regionfile__read_chrome(struct pt_region_set *s, const char *json, size_t len,
			       const char *source, char *err, size_t errlen);

/* Whether a JSON text is a tag table (array, or object without
 * traceEvents) rather than a Chrome trace. */
bool pt_regionfile__is_tag_table(const char *json, size_t len);

#endif
