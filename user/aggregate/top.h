/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sampled stacks -> every Python function and line seen, with their self
 * and total time: what py-spy's top and a pprof -top show, and what
 * "proftrace -p PID" without a targets file reports (docs/summary.md,
 * "top"). Pure C over symbolized samples (stacks.h), so tests feed it
 * synthetic ones.
 *
 * A function is a code identity (qualified name, file, first line): two
 * code objects of one function (two processes, a reloaded module) are one
 * row. What a sample counts for:
 * - self: the innermost frame's function and line get the sample;
 * - total: every function on the stack, once per sample (recursion does
 *   not count twice), and the line its outermost frame is at, so a
 *   function's line totals add up to its total (as `lines` does);
 * - on-CPU samples weigh one period, off-CPU intervals their length.
 * Memory is bounded: past PT_TOP_MAX_FUNCS functions and PT_TOP_MAX_LINES
 * lines new ones are counted, not kept.
 */
#ifndef PT_TOP_H
#define PT_TOP_H

#include <stddef.h>
#include <stdint.h>

#include "stacks.h"

#define PT_TOP_MAX_FUNCS (1u << 16)
#define PT_TOP_MAX_LINES (1u << 20)

struct pt_top_line {
	uint32_t line;
	struct pt_stacks_time self, total;
};

struct pt_top_fn {
	const char *qualname, *filename;
	uint32_t first_line, last_line; /* last_line 0: unknown */
	struct pt_stacks_time self, total;
	const struct pt_top_line *lines; /* sorted by line */
	size_t nlines;
};

struct pt_top_stats {
	uint64_t frames_not_kept; /* frames of functions past PT_TOP_MAX_FUNCS */
	uint64_t lines_not_kept;  /* line figures past PT_TOP_MAX_LINES */
};

struct pt_top;

struct pt_top *pt_top__new(void);
void pt_top__free(struct pt_top *t);
/* Frames without a key (unknown code) count for nothing. 0 or -ENOMEM. */
int pt_top__add(struct pt_top *t, const struct pt_stacks_sample *s);
size_t pt_top__nfuncs(const struct pt_top *t);
/* Function i, in the order first seen. */
const struct pt_top_fn *pt_top__func(const struct pt_top *t, size_t i);
const struct pt_top_stats *pt_top__stats(const struct pt_top *t);

/* A line of a function, for the ranking of lines. */
struct pt_top_lref {
	const struct pt_top_fn *fn;
	const struct pt_top_line *line;
};

/*
 * The first max functions (lines) by self on-CPU time, then self off-CPU
 * time, then total time, then name and line: what burns the CPU first,
 * then where threads wait. Only those with time of their own (self, or
 * total for functions) are ranked. The number written to out.
 */
size_t pt_top__rank_funcs(const struct pt_top *t, const struct pt_top_fn **out, size_t max);
size_t pt_top__rank_lines(const struct pt_top *t, struct pt_top_lref *out, size_t max);

#endif
