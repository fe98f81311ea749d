/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Step-time skew across processes (tensor-parallel ranks): where several
 * processes run the same steps in lockstep, the slowest one sets the pace.
 * Per step index, skew = slowest step time - fastest step time.
 *
 * Steps line up by time, not by count: processes attached a few steps
 * apart number their steps differently. The reference is the process
 * whose first counted step starts last; each other process's offset is
 * found from the step that overlaps one of the reference's first steps
 * most. Then step i of the reference is compared with step i + offset of
 * every other process when they all line up with it (overlap it for half
 * of the shorter step at least); an index where one does not (a lost or
 * an extra step, a rank that ran ahead) is counted as not compared. The
 * comparison ends with the shortest list. Independent loops line up now
 * and then by chance: unless 90% of the indices do, there are no figures
 * (why says so).
 */
#ifndef PT_SKEW_H
#define PT_SKEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dist.h"

/* The counted steps of one process, in commit order: the first
 * PT_SKEW_MAX_STEPS (16 MiB), whatever the run's length; the comparison
 * covers those (it ends with the shortest list anyway). */
#define PT_SKEW_MAX_STEPS (1u << 20)
struct pt_skew_steps {
	uint64_t *t; /* start, end pairs (CLOCK_MONOTONIC ns) */
	size_t n, cap;
	uint64_t not_kept; /* steps past PT_SKEW_MAX_STEPS */
	bool oom;	   /* a step could not be kept: no skew figures */
};

void pt_skew__add(struct pt_skew_steps *s, uint64_t t_start, uint64_t t_end);
void pt_skew__free(struct pt_skew_steps *s);

struct pt_skew {
	size_t nprocs;
	size_t aligned;	       /* step indices compared */
	size_t unaligned;      /* indices skipped: a step did not overlap the reference's */
	struct pt_dist skew;   /* slowest - fastest, per index, ns */
	double slowest_ms_sum; /* sum of the slowest step times compared */
	double skew_ms_sum;
	/* per process, in the order given */
	size_t *first;	 /* its step compared with the reference's first compared */
	long *offset;	 /* its step k lines up with the reference's k - offset */
	size_t *slowest; /* indices where it was the slowest */
	size_t *fastest;
	const char *why; /* aligned == 0: why */
};

/*
 * Compare n processes' steps. 0, -EINVAL (n < 2) or -ENOMEM; out is
 * filled (why says when nothing could be compared) and freed with
 * pt_skew__free_result().
 */
int pt_skew__compute(const struct pt_skew_steps *const *procs, size_t n, struct pt_skew *out);
void pt_skew__free_result(struct pt_skew *k);

#endif
