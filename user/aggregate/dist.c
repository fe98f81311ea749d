// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_dist: exact moments plus a log histogram (see dist.h).
 *
 * Bin i > 0 holds the values in (gamma^(i-1), gamma^i]; bin 0 holds 1 ns.
 * Reporting a bin as 2 * gamma^i / (gamma + 1), the point whose relative
 * distance to both edges is equal, bounds the relative error of any
 * value in it by (gamma - 1) / (gamma + 1) < 0.5%.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"

#define PT_DIST_GAMMA 1.01
/* ceil(log(1e13) / log(1.01)) = 3009: bins reach ~2.8 hours of ns.
 * Anything longer lands in the last bin (and quantiles stay within
 * [min, max], which are exact). */
#define PT_DIST_NBINS 3010

/* log(PT_DIST_GAMMA), spelled out so the hot path multiplies by a
 * constant instead of dividing by a call. */
#define PT_DIST_LOG_GAMMA 0.009950330853168092

static inline size_t dist_bin(uint64_t v)
{
	double x;

	if (v <= 1)
		return 0;
	x = ceil(log((double)v) * (1.0 / PT_DIST_LOG_GAMMA));
	if (x >= PT_DIST_NBINS - 1)
		return PT_DIST_NBINS - 1;
	return (size_t)x;
}

static inline double dist_bin_value(size_t i)
{
	return 2.0 * exp((double)i * PT_DIST_LOG_GAMMA) / (PT_DIST_GAMMA + 1.0);
}

static inline void bin_add(uint32_t *bin, uint64_t n)
{
	uint64_t s = (uint64_t)*bin + n;

	/* Saturate: a stuck top count skews a quantile a little; a wrapped
	 * one would move it anywhere. */
	*bin = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

static int dist_alloc_bins(struct pt_dist *d)
{
	if (d->bins)
		return 0;
	d->bins = calloc(PT_DIST_NBINS, sizeof(*d->bins));
	return d->bins ? 0 : -ENOMEM;
}

void pt_dist__init(struct pt_dist *d)
{
	memset(d, 0, sizeof(*d));
}

int pt_dist__add(struct pt_dist *d, uint64_t v_ns)
{
	double v = (double)v_ns, delta;

	if (!d->count || v_ns < d->min)
		d->min = v_ns;
	if (!d->count || v_ns > d->max)
		d->max = v_ns;
	d->count++;
	d->sum += v;
	delta = v - d->mean;
	d->mean += delta / (double)d->count;
	d->m2 += delta * (v - d->mean);

	if (!v_ns) {
		d->zeros++;
		return 0;
	}
	if (!d->bins && dist_alloc_bins(d))
		return -ENOMEM;
	bin_add(&d->bins[dist_bin(v_ns)], 1);
	return 0;
}

int pt_dist__merge(struct pt_dist *dst, const struct pt_dist *src)
{
	double n, delta;
	size_t i;

	if (!src->count)
		return 0;
	if (!dst->count) {
		dst->min = src->min;
		dst->max = src->max;
	} else {
		if (src->min < dst->min)
			dst->min = src->min;
		if (src->max > dst->max)
			dst->max = src->max;
	}
	/* Chan et al.: combine two Welford states without the samples. */
	n = (double)dst->count + (double)src->count;
	delta = src->mean - dst->mean;
	dst->m2 += src->m2 + delta * delta * (double)dst->count * (double)src->count / n;
	dst->mean += delta * (double)src->count / n;
	dst->count += src->count;
	dst->sum += src->sum;
	dst->zeros += src->zeros;

	if (!src->bins)
		return 0;
	if (dist_alloc_bins(dst))
		return -ENOMEM;
	for (i = 0; i < PT_DIST_NBINS; i++)
		if (src->bins[i])
			bin_add(&dst->bins[i], src->bins[i]);
	return 0;
}

double pt_dist__quantile(const struct pt_dist *d, double q)
{
	uint64_t n, rank, seen;
	double x, v;
	size_t i;

	if (!d || !d->count)
		return 0;
	if (!(q > 0)) /* also NaN */
		return (double)d->min;
	if (q >= 1)
		return (double)d->max;

	/* Rank against what the histogram holds, not d->count: after a
	 * failed allocation or a saturated bin the two differ, and walking
	 * for a rank that is not there would fall off the end. */
	n = d->zeros;
	if (d->bins)
		for (i = 0; i < PT_DIST_NBINS; i++)
			n += d->bins[i];
	if (!n)
		return (double)d->min;

	/* Nearest rank, ceil(q * n). q * n is often a hair above an integer
	 * (0.07 * 100 = 7.000000000000001): shave a relative epsilon so the
	 * rank is the one an exact computation gives. */
	x = q * (double)n;
	x = ceil(x - x * 1e-12);
	rank = x < 1 ? 1 : (uint64_t)x;
	if (rank >= n)
		return (double)d->max;
	if (rank == 1)
		return (double)d->min;
	if (rank <= d->zeros)
		return 0;

	seen = d->zeros;
	for (i = 0; i < PT_DIST_NBINS; i++) {
		seen += d->bins[i];
		if (seen >= rank)
			break;
	}
	if (i == PT_DIST_NBINS)
		return (double)d->max;
	v = dist_bin_value(i);
	if (v < (double)d->min)
		v = (double)d->min;
	if (v > (double)d->max)
		v = (double)d->max;
	return v;
}

double pt_dist__std(const struct pt_dist *d)
{
	if (!d || !d->count || d->m2 <= 0)
		return 0;
	return sqrt(d->m2 / (double)d->count);
}

void pt_dist__free(struct pt_dist *d)
{
	if (!d)
		return;
	free(d->bins);
	pt_dist__init(d);
}
