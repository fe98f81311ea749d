// SPDX-License-Identifier: BSD-2-Clause
/*
 * Live GPU busy and host-bound time (gpulive.h): sorted, disjoint
 * interval sets that hold only what is younger than the settle point, and
 * the steps waiting for it. Records arrive mostly in time order, so an
 * insert lands at or near the end; a settle counts what the point passed
 * and drops what no waiting step still needs.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/gpulive.h"
#include "util/search.h"

struct iv {
	uint64_t s, e;
};

struct ivset { /* sorted by s, disjoint (so sorted by e too) */
	struct iv *v;
	size_t n, cap;
};

struct dev {
	uint32_t device;
	struct ivset u;
	uint64_t busy_ns;
};

struct pt_gpulive {
	uint64_t t0, lag, keep;
	uint64_t kept_from; /* the union is known from here on */
	struct ivset all;
	struct dev *devs;
	size_t ndevs;
	struct iv *steps; /* counted steps not settled yet, any order */
	size_t nsteps, capsteps;
	struct pt_gpulive_dev *out;
	struct pt_gpulive_totals tot;
};

struct pt_gpulive *pt_gpulive__new(uint64_t t0, uint64_t lag_ns, uint64_t keep_ns)
{
	struct pt_gpulive *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->t0 = t0;
	g->kept_from = t0;
	g->lag = lag_ns;
	g->keep = keep_ns;
	g->tot.settled = t0;
	return g;
}

void pt_gpulive__free(struct pt_gpulive *g)
{
	if (!g)
		return;
	free(g->all.v);
	for (size_t i = 0; i < g->ndevs; i++)
		free(g->devs[i].u.v);
	free(g->devs);
	free(g->steps);
	free(g->out);
	free(g);
}

static bool ends_by(const void *iv, const void *t)
{
	return ((const struct iv *)iv)->e <= *(const uint64_t *)t;
}

/* the first interval that ends after t */
static size_t first_after(const struct ivset *u, uint64_t t)
{
	return pt_lower_bound(u->v, u->n, sizeof(*u->v), &t, ends_by);
}

/* The union gets [s, e): the intervals it touches become one. */
static int ivset__add(struct ivset *u, uint64_t s, uint64_t e)
{
	size_t i, j;

	/* the common case: after everything held */
	if (!u->n || u->v[u->n - 1].e < s) {
		i = j = u->n;
	} else {
		i = first_after(u, s);
		if (i && u->v[i - 1].e == s)
			i--; /* touches it: one interval */
		for (j = i; j < u->n && u->v[j].s <= e; j++)
			;
	}
	if (i < j) { /* overlaps v[i..j) */
		uint64_t ns = u->v[i].s < s ? u->v[i].s : s;
		uint64_t ne = u->v[j - 1].e > e ? u->v[j - 1].e : e;

		u->v[i] = (struct iv){ ns, ne };
		memmove(&u->v[i + 1], &u->v[j], (u->n - j) * sizeof(*u->v));
		u->n -= j - i - 1;
		return 0;
	}
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 64;
		struct iv *v = realloc(u->v, cap * sizeof(*v));

		if (!v)
			return -1;
		u->v = v;
		u->cap = cap;
	}
	memmove(&u->v[i + 1], &u->v[i], (u->n - i) * sizeof(*u->v));
	u->v[i] = (struct iv){ s, e };
	u->n++;
	return 0;
}

/* time of the union inside [s, e) */
static uint64_t ivset__overlap(const struct ivset *u, uint64_t s, uint64_t e)
{
	uint64_t sum = 0;

	for (size_t i = first_after(u, s); i < u->n && u->v[i].s < e; i++) {
		uint64_t a = u->v[i].s > s ? u->v[i].s : s;
		uint64_t b = u->v[i].e < e ? u->v[i].e : e;

		sum += b - a;
	}
	return sum;
}

/* forget the intervals that end at or before t */
static void ivset__drop(struct ivset *u, uint64_t t)
{
	size_t k = first_after(u, t);

	if (!k)
		return; /* (an empty set has no array: memmove(NULL) is undefined) */
	memmove(u->v, &u->v[k], (u->n - k) * sizeof(*u->v));
	u->n -= k;
}

static struct dev *dev_of(struct pt_gpulive *g, uint32_t device)
{
	struct dev *d;

	for (size_t i = 0; i < g->ndevs; i++)
		if (g->devs[i].device == device)
			return &g->devs[i];
	d = realloc(g->devs, (g->ndevs + 1) * sizeof(*d));
	if (!d)
		return NULL;
	g->devs = d;
	d = &g->devs[g->ndevs++];
	memset(d, 0, sizeof(*d));
	d->device = device;
	return d;
}

void pt_gpulive__work(struct pt_gpulive *g, uint32_t device, uint64_t s, uint64_t e)
{
	uint64_t S = g->tot.settled;
	struct dev *d;

	if (e <= g->t0 || e <= s)
		return; /* before attach, as the end-of-run window; or empty */
	if (s < g->t0)
		s = g->t0;
	if (s < S) {
		g->tot.late++;
		g->tot.late_ns += (e < S ? e : S) - s;
		if (e <= S)
			return;
		s = S;
	}
	d = dev_of(g, device);
	if (!d || ivset__add(&g->all, s, e) || ivset__add(&d->u, s, e))
		g->tot.oom++;
}

static void settle_step(struct pt_gpulive *g, uint64_t s, uint64_t e)
{
	uint64_t busy = ivset__overlap(&g->all, s, e);

	g->tot.steps++;
	g->tot.step_ns += e - s;
	g->tot.idle_ns += e - s - busy;
}

void pt_gpulive__step(struct pt_gpulive *g, uint64_t s, uint64_t e)
{
	if (e < s)
		return;
	if (s < g->kept_from)
		g->tot.late++; /* began before the union kept: its start's work is gone */
	if (e <= g->tot.settled) {
		/* came after its time settled (counted above when what it
		 * overlaps is gone) */
		settle_step(g, s, e);
		return;
	}
	if (g->nsteps == g->capsteps) {
		size_t cap = g->capsteps ? 2 * g->capsteps : 64;
		struct iv *v = realloc(g->steps, cap * sizeof(*v));

		if (!v) {
			g->tot.oom++;
			return;
		}
		g->steps = v;
		g->capsteps = cap;
	}
	g->steps[g->nsteps++] = (struct iv){ s, e };
}

void pt_gpulive__settle(struct pt_gpulive *g, uint64_t now)
{
	uint64_t S = g->tot.settled, nS = now > g->lag ? now - g->lag : 0, keep;

	if (nS <= S)
		return;
	g->tot.busy_ns += ivset__overlap(&g->all, S, nS);
	for (size_t i = 0; i < g->ndevs; i++) {
		g->devs[i].busy_ns += ivset__overlap(&g->devs[i].u, S, nS);
		ivset__drop(&g->devs[i].u, nS);
	}
	g->tot.settled = nS;
	/* steps that ended before the point are final; the others keep the
	 * union from their start on, and steps still to come from keep_ns
	 * before the point */
	keep = nS > g->keep ? nS - g->keep : 0;
	for (size_t i = 0; i < g->nsteps;) {
		if (g->steps[i].e <= nS) {
			settle_step(g, g->steps[i].s, g->steps[i].e);
			g->steps[i] = g->steps[--g->nsteps];
			continue;
		}
		if (g->steps[i].s < keep)
			keep = g->steps[i].s;
		i++;
	}
	if (keep > g->kept_from) {
		ivset__drop(&g->all, keep);
		g->kept_from = keep;
	}
}

const struct pt_gpulive_totals *pt_gpulive__totals(struct pt_gpulive *g)
{
	struct pt_gpulive_dev *o = realloc(g->out, (g->ndevs ? g->ndevs : 1) * sizeof(*o));
	size_t held = g->all.n + g->nsteps;

	if (o) {
		g->out = o;
		for (size_t i = 0; i < g->ndevs; i++)
			o[i] = (struct pt_gpulive_dev){ g->devs[i].device, g->devs[i].busy_ns };
		g->tot.devs = o;
		g->tot.ndevs = (uint32_t)g->ndevs;
	}
	for (size_t i = 0; i < g->ndevs; i++)
		held += g->devs[i].u.n;
	g->tot.held = held;
	return &g->tot;
}
