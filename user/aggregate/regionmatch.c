// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "regionmatch.h"

/* Spans of one kernel name, in launch (start time) order. */
struct kname {
	const char *name;
	size_t *idx; /* into spans */
	size_t n;
	long *owner; /* per launch: the region launch that took it, -1 */
	size_t next; /* the next launch for regions without an index */
	uint64_t with_regions;
};

static const struct pt_kspan *g_spans; /* for the qsort below only */

static int span_cmp(const void *a, const void *b)
{
	const struct pt_kspan *x = &g_spans[*(const size_t *)a], *y = &g_spans[*(const size_t *)b];

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static bool span_named(const struct pt_kspan *k, const char *name)
{
	return (k->name && !strcmp(k->name, name)) || (k->mangled && !strcmp(k->mangled, name));
}

static struct kname *find_name(struct kname *kn, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kn[i].name, name))
			return &kn[i];
	return NULL;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Region indices of one launch ordered by (tag, start). */
static const struct pt_region *g_ev;

static int ev_cmp(const void *a, const void *b)
{
	const struct pt_region *x = &g_ev[*(const size_t *)a], *y = &g_ev[*(const size_t *)b];

	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return 0;
}

/* The middle of [a, b], a <= b, without overflow. */
static int64_t mid(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + ((uint64_t)b - (uint64_t)a) / 2);
}

static uint64_t nearest_rank(const uint64_t *sorted, size_t n, double q)
{
	size_t k = (size_t)(q * (double)n + 0.999999999);

	if (!n)
		return 0;
	if (k < 1)
		k = 1;
	return sorted[(k > n ? n : k) - 1];
}

/* Per-launch sums of each (kernel, tag), to take quantiles from. */
struct sums {
	uint64_t *v;
	size_t n, cap;
};

static int sums_add(struct sums *s, uint64_t v)
{
	if (s->n == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 16;
		uint64_t *nv = realloc(s->v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = c;
	}
	s->v[s->n++] = v;
	return 0;
}

static long tag_slot(struct pt_regions_result *r, struct sums **sums, size_t *cap,
		     const char *kernel, uint32_t tag)
{
	for (size_t i = 0; i < r->ntags; i++)
		if (r->tags[i].tag == tag && !strcmp(r->tags[i].kernel, kernel))
			return (long)i;
	if (r->ntags == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct pt_rtag *t = realloc(r->tags, c * sizeof(*t));
		struct sums *s;

		if (!t)
			return -ENOMEM;
		r->tags = t;
		s = realloc(*sums, c * sizeof(*s));
		if (!s)
			return -ENOMEM;
		*sums = s;
		*cap = c;
	}
	memset(&r->tags[r->ntags], 0, sizeof(r->tags[0]));
	memset(&(*sums)[r->ntags], 0, sizeof((*sums)[0]));
	r->tags[r->ntags].kernel = kernel;
	r->tags[r->ntags].tag = tag;
	return (long)r->ntags++;
}

static int launch_stats(struct pt_regions_result *r, const struct pt_region_launch *l,
			const struct pt_rmatch *m, struct sums **sums, size_t *tcap)
{
	size_t *ix = malloc((l->nev + 1) * sizeof(*ix));
	size_t i = 0;

	if (!ix)
		return -ENOMEM;
	for (size_t j = 0; j < l->nev; j++)
		ix[j] = j;
	g_ev = l->ev;
	qsort(ix, l->nev, sizeof(*ix), ev_cmp);
	while (i < l->nev) {
		uint32_t tag = l->ev[ix[i]].tag;
		uint64_t sum = 0, uni = 0, cs = 0, ce = 0, cnt = 0;
		long t = tag_slot(r, sums, tcap, m->kernel, tag);
		bool first = true;

		if (t < 0) {
			free(ix);
			return (int)t;
		}
		for (; i < l->nev && l->ev[ix[i]].tag == tag; i++) {
			const struct pt_region *e = &l->ev[ix[i]];
			uint64_t s = e->start_ns, en = e->start_ns + e->dur_ns;

			sum += e->dur_ns;
			cnt++;
			if (first || s > ce) { /* a new piece of the union */
				uni += ce - cs;
				cs = s;
				ce = en;
				first = false;
			} else if (en > ce) {
				ce = en;
			}
		}
		uni += ce - cs;
		r->tags[t].count += cnt;
		r->tags[t].total_ns += sum;
		r->tags[t].launches++;
		r->tags[t].union_ns += uni;
		if (sums_add(&(*sums)[t], sum)) {
			free(ix);
			return -ENOMEM;
		}
	}
	free(ix);
	return 0;
}

/* One match's working state, shared by its phases. */
struct match {
	const struct pt_region_set *s;
	const char *default_kernel;
	const struct pt_kspan *spans;
	size_t nspans;
	struct pt_regions_result *r;
	struct kname *kn; /* the kernel names that have regions */
	size_t nkn;
	int64_t *lo, *hi, *offs; /* per launch: the offsets it allows */
	struct sums *sums;	 /* per tag: each launch's time in it */
	size_t tcap;
};

/* The kernel names that have regions, with their launches in order. */
static int collect_kernels(struct match *c)
{
	const struct pt_region_set *s = c->s;
	struct pt_regions_result *r = c->r;

	for (size_t i = 0; i < s->nl; i++) {
		const char *name = s->l[i].kernel ? s->l[i].kernel : c->default_kernel;
		struct kname *k;

		r->m[i] =
			(struct pt_rmatch){ .kernel = name, .span = -1, .launch = s->l[i].launch };
		r->regions_invalid += s->l[i].invalid;
		if (s->l[i].overflow)
			r->overflowed++;
		if (!name || find_name(c->kn, c->nkn, name))
			continue;
		k = &c->kn[c->nkn++];
		k->name = name;
		for (size_t j = 0; j < c->nspans; j++)
			k->n += span_named(&c->spans[j], name);
		k->idx = calloc(k->n + 1, sizeof(*k->idx));
		k->owner = calloc(k->n + 1, sizeof(*k->owner));
		if (!k->idx || !k->owner)
			return -ENOMEM;
		k->n = 0;
		for (size_t j = 0; j < c->nspans; j++)
			if (span_named(&c->spans[j], name))
				k->idx[k->n++] = j;
		g_spans = c->spans;
		qsort(k->idx, k->n, sizeof(*k->idx), span_cmp);
		for (size_t j = 0; j < k->n; j++)
			k->owner[j] = -1;
	}
	return 0;
}

/* Each launch of regions to a kernel launch: explicit launch indices
 * first, then the others in order; why not, for those left. */
static void assign_launches(struct match *c)
{
	const struct pt_region_set *s = c->s;
	struct pt_regions_result *r = c->r;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < s->nl; i++) {
			struct pt_rmatch *m = &r->m[i];
			struct kname *k;

			if ((pass == 0) != (s->l[i].launch >= 0))
				continue;
			if (!m->kernel) {
				m->why = "no kernel name (in the file or --kernel)";
				continue;
			}
			if (!s->l[i].nev) {
				m->why = "no valid regions";
				continue;
			}
			k = find_name(c->kn, c->nkn, m->kernel);
			if (!k->n) {
				m->why = "no kernel of that name in trace.json";
				continue;
			}
			if (pass == 1) {
				while (k->next < k->n && k->owner[k->next] >= 0)
					k->next++;
				m->launch = (int64_t)k->next;
			}
			if (m->launch >= (int64_t)k->n) {
				m->why = pass ? "more region launches than launches of that kernel "
						"in "
						"trace.json"
					      : "launch index past the launches of that kernel in "
						"trace.json";
				continue;
			}
			if (k->owner[m->launch] >= 0) {
				m->why = "that launch has regions from another file already";
				continue;
			}
			k->owner[m->launch] = (long)i;
			m->span = (long)k->idx[m->launch];
			k->with_regions++;
		}
	}
}

/* The offsets each matched launch allows: [lo, hi]. */
static void offset_windows(struct match *c)
{
	const struct pt_region_set *s = c->s;
	struct pt_regions_result *r = c->r;

	for (size_t i = 0; i < s->nl; i++) {
		const struct pt_region_launch *l = &s->l[i];
		const struct pt_kspan *k;
		uint64_t rmin = UINT64_MAX, rmax = 0;

		if (r->m[i].span < 0) {
			r->unmatched++;
			continue;
		}
		k = &c->spans[r->m[i].span];
		for (size_t j = 0; j < l->nev; j++) {
			if (l->ev[j].start_ns < rmin)
				rmin = l->ev[j].start_ns;
			if (l->ev[j].start_ns + l->ev[j].dur_ns > rmax)
				rmax = l->ev[j].start_ns + l->ev[j].dur_ns;
		}
		c->lo[i] = (int64_t)(k->start_ns - rmin);
		c->hi[i] = (int64_t)(k->end_ns - rmax);
		if (c->lo[i] > c->hi[i]) /* longer than the kernel: centred */
			c->lo[i] = c->hi[i] = (int64_t)((k->start_ns + k->end_ns) / 2) -
					      (int64_t)(rmin + (rmax - rmin) / 2);
		r->launches_matched++;
		r->regions += l->nev;
	}
}

/* One offset per clock when one fits all its launches, else each its own. */
static int clock_offsets(struct match *c)
{
	const struct pt_region_set *s = c->s;
	struct pt_regions_result *r = c->r;

	r->clocks = calloc(s->nl + 1, sizeof(*r->clocks));
	if (!r->clocks)
		return -ENOMEM;
	r->global = true;
	for (size_t i = 0; i < s->nl; i++) {
		struct pt_rclock *ck = NULL;
		int64_t L = INT64_MIN, H = INT64_MAX;

		if (r->m[i].span < 0)
			continue;
		for (size_t q = 0; q < r->nclocks && !ck; q++)
			if (!strcmp(r->clocks[q].clock, s->l[i].clock))
				ck = &r->clocks[q];
		if (ck)
			continue; /* done with its first launch */
		ck = &r->clocks[r->nclocks++];
		ck->clock = s->l[i].clock;
		for (size_t j = i; j < s->nl; j++) {
			if (r->m[j].span < 0 || strcmp(s->l[j].clock, ck->clock))
				continue;
			L = c->lo[j] > L ? c->lo[j] : L;
			H = c->hi[j] < H ? c->hi[j] : H;
			ck->launches++;
		}
		ck->one_offset = L <= H;
		r->global &= ck->one_offset;
		for (size_t j = i, n = 0; j < s->nl; j++) {
			if (r->m[j].span < 0 || strcmp(s->l[j].clock, ck->clock))
				continue;
			r->m[j].offset_ns = ck->one_offset ? mid(L, H) : mid(c->lo[j], c->hi[j]);
			c->offs[n++] = r->m[j].offset_ns;
		}
		qsort(c->offs, ck->launches, sizeof(*c->offs), i64_cmp);
		ck->offset_ns = c->offs[(ck->launches - 1) / 2];
		ck->offset_min_ns = c->offs[0];
		ck->offset_max_ns = c->offs[ck->launches - 1];
	}
	r->global &= r->nclocks > 0;
	return 0;
}

/* What of each matched launch falls outside its kernel once shifted (the
 * residual), and its figures per tag. */
static int residuals_and_tags(struct match *c)
{
	const struct pt_region_set *s = c->s;
	struct pt_regions_result *r = c->r;
	int e;

	for (size_t i = 0; i < s->nl; i++) {
		const struct pt_region_launch *l = &s->l[i];
		struct pt_rmatch *m = &r->m[i];
		const struct pt_kspan *k;

		if (m->span < 0)
			continue;
		k = &c->spans[m->span];
		for (size_t j = 0; j < l->nev; j++) {
			/* wrapping sums: no signed overflow on any input */
			int64_t a = (int64_t)(l->ev[j].start_ns + (uint64_t)m->offset_ns);
			int64_t b = (int64_t)((uint64_t)a + l->ev[j].dur_ns);
			int64_t ks = (int64_t)k->start_ns, ke = (int64_t)k->end_ns;
			uint64_t out1 = a < ks ? (uint64_t)ks - (uint64_t)a : 0;
			uint64_t out2 = b > ke ? (uint64_t)b - (uint64_t)ke : 0;
			uint64_t o = out1 > out2 ? out1 : out2;

			if (o > 0) {
				m->outside++;
				if (o > m->outside_ns)
					m->outside_ns = o;
			}
		}
		r->regions_outside += m->outside;
		if (m->outside_ns > r->residual_max_ns)
			r->residual_max_ns = m->outside_ns;
		e = launch_stats(r, l, m, &c->sums, &c->tcap);
		if (e)
			return e;
	}
	return 0;
}

/* Per tag: the kernel time of its kernel's matched launches, quantiles;
 * and the kernels. */
static int totals(struct match *c)
{
	const struct pt_region_set *s = c->s;
	struct pt_regions_result *r = c->r;

	for (size_t t = 0; t < r->ntags; t++) {
		struct pt_rtag *g = &r->tags[t];

		for (size_t i = 0; i < s->nl; i++)
			if (r->m[i].span >= 0 && !strcmp(r->m[i].kernel, g->kernel))
				g->kernel_ns += c->spans[r->m[i].span].end_ns -
						c->spans[r->m[i].span].start_ns;
		qsort(c->sums[t].v, c->sums[t].n, sizeof(uint64_t), u64_cmp);
		g->p50_ns = nearest_rank(c->sums[t].v, c->sums[t].n, 0.50);
		g->p99_ns = nearest_rank(c->sums[t].v, c->sums[t].n, 0.99);
		g->mean_ns = g->launches ? g->total_ns / g->launches : 0;
	}
	r->kernels = calloc(c->nkn + 1, sizeof(*r->kernels));
	if (!r->kernels)
		return -ENOMEM;
	for (size_t i = 0; i < c->nkn; i++)
		r->kernels[i] =
			(struct pt_rkernel){ c->kn[i].name, c->kn[i].n, c->kn[i].with_regions };
	r->nkernels = c->nkn;
	return 0;
}

int pt_regionmatch__match(const struct pt_region_set *s, const char *default_kernel,
			  const struct pt_kspan *spans, size_t nspans,
			  struct pt_regions_result *out)
{
	struct match c = {
		.s = s, .default_kernel = default_kernel, .spans = spans, .nspans = nspans, .r = out
	};
	int e = -ENOMEM;

	memset(out, 0, sizeof(*out));
	out->m = calloc(s->nl + 1, sizeof(*out->m));
	c.lo = calloc(s->nl + 1, sizeof(*c.lo));
	c.hi = calloc(s->nl + 1, sizeof(*c.hi));
	c.offs = calloc(s->nl + 1, sizeof(*c.offs));
	c.kn = calloc(s->nl + 1, sizeof(*c.kn));
	if (!out->m || !c.lo || !c.hi || !c.offs || !c.kn)
		goto out;
	out->nm = s->nl;
	e = collect_kernels(&c);
	if (e)
		goto out;
	assign_launches(&c);
	offset_windows(&c);
	e = clock_offsets(&c);
	if (!e)
		e = residuals_and_tags(&c);
	if (!e)
		e = totals(&c);
out:
	for (size_t i = 0; c.kn && i < c.nkn; i++) {
		free(c.kn[i].idx);
		free(c.kn[i].owner);
	}
	for (size_t t = 0; c.sums && t < out->ntags; t++)
		free(c.sums[t].v);
	free(c.sums);
	free(c.kn);
	free(c.lo);
	free(c.hi);
	free(c.offs);
	if (e)
		pt_regionmatch__result_free(out);
	return e;
}

void pt_regionmatch__result_free(struct pt_regions_result *res)
{
	if (!res)
		return;
	free(res->m);
	free(res->clocks);
	free(res->tags);
	free(res->kernels);
	memset(res, 0, sizeof(*res));
}
