/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A distribution of durations in constant memory: exact count, sum, min,
 * max, mean and standard deviation (Welford), and quantiles from a
 * logarithmic histogram whose buckets are 1% wide (gamma = 1.01), so any
 * quantile is within 0.5% of a value that was really added (relative
 * error <= (gamma-1)/(gamma+1)). Values are integers in ns; 0 is counted
 * in its own bucket. Memory: one lazily allocated array, same size for a
 * run of a second or of a week.
 */
#ifndef PT_DIST_H
#define PT_DIST_H

#include <stdint.h>

struct pt_dist {
	uint64_t count;
	uint64_t min, max; /* ns; valid when count > 0 */
	double sum;	   /* ns */
	double mean, m2;   /* Welford */
	uint64_t zeros;
	uint32_t *bins; /* NULL until the first non-zero value */
};

#define PT_DIST_INIT                                                                               \
	{                                                                                          \
		0                                                                                  \
	}

void pt_dist__init(struct pt_dist *d);
/* 0 or -ENOMEM (then only the exact moments keep counting). */
int pt_dist__add(struct pt_dist *d, uint64_t v_ns);
/* Add all of src into dst (for merged views). 0 or -ENOMEM. */
int pt_dist__merge(struct pt_dist *dst, const struct pt_dist *src);
/* q in [0,1]. 0 when empty. Result within 0.5% of a true sample value of
 * that rank; clamped into [min, max]. */
double pt_dist__quantile(const struct pt_dist *d, double q);
double pt_dist__std(const struct pt_dist *d); /* population std, ns */
void pt_dist__free(struct pt_dist *d);

#endif
