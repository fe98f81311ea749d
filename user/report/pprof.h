/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sampled stacks as a pprof profile (profile.pb.gz: gzip'ed protobuf,
 * github.com/google/pprof's format, which Pyroscope, Parca and Grafana
 * ingest), from the same tree as stacks.folded: one sample per distinct
 * stack with two values, as pprof users expect: "cpu" (its on-CPU time,
 * 0 for a stack ending in "[off-cpu]"), the default sample type, and
 * "wall" (its time on and off the CPU, as in stacks.folded), both in
 * microseconds; each frame "name (file:line)" becomes a location of
 * function name in file at that line, the thread frame and markers such
 * as "[off-cpu]" functions of their own.
 */
#ifndef PT_PPROF_H
#define PT_PPROF_H

#include <stdint.h>
#include <stdio.h>

#include "aggregate/flame.h"

struct pt_pprof_opts {
	uint64_t time_unix_ns; /* start of the run; 0: unset */
	uint64_t duration_ns;  /* 0: unset */
	uint64_t period_us;    /* one on-CPU sample's time; 0: unset */
};

/* 0 or -errno. */
int pt_pprof__write(const struct pt_flame *fl, FILE *f, const struct pt_pprof_opts *o);
/* Split a folded frame "name (file:line)", or "name (file)" (a native
 * frame's library), into its parts (pointers into a copy in buf): line 0
 * and file NULL when it has none. */
void pt_pprof__split_frame(const char *frame, char *buf, size_t len, const char **name,
			   const char **file, long *line);

#endif
