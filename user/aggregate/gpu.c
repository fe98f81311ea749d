// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_gpu: GPU work x host steps and buckets (gpu.h).
 *
 * Everything is kept until the end and joined once: GPU records arrive
 * long after the host calls that launched them (CUPTI hands buffers over
 * when they fill or are flushed), so an online join would need the same
 * memory and more code. Memory: 40 bytes per kernel, copy or memset.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

struct item {
	uint64_t s, e;
	const char *name; /* kernels */
	uint32_t corr;
	uint32_t dev;
	uint8_t kind; /* enum pt_gpu_kind */
};

struct api {
	uint64_t s;
	uint32_t corr;
	uint32_t tid;
};

struct step {
	uint64_t s, e;
	uint32_t tid;
	uint32_t items;
};

struct biv {
	uint64_t s, e, mask;
	uint32_t tid;
	int32_t parent; /* the nearest earlier call of the thread that contains it, -1 */
};

struct iv {
	uint64_t s, e;
};

struct pt_gpu {
	size_t nb;
	struct item *items;
	size_t nitems, citems;
	struct api *apis;
	size_t napis, capis;
	struct step *steps;
	size_t nsteps, csteps;
	struct biv *bivs;
	size_t nbivs, cbivs;
	/* the bound (max_held entries of the four arrays, and an eighth more
	 * for late ones): a time window, [start, cut_ts) */
	size_t max_held;
	bool cut;
	uint64_t cut_ts;
	struct pt_gpu_result res;
};

#define MAX_HELD_DEFAULT (1u << 22)

void pt_gpu__set_max_held(struct pt_gpu *g, size_t n)
{
	g->max_held = n ? n : 1;
}

/*
 * Memory stays bounded over any run length: records are joined at the end,
 * so at most max_held are held. When one does not fit, the figures become
 * those of a time window, the same for every kind: what started before it
 * is still held (records arrive late: GPU work when the ring is drained,
 * steps and bucket calls at their end) in an eighth more, what started
 * from then on is counted in not_held, and the join's window ends there.
 */
static bool hold(struct pt_gpu *g, uint64_t ts)
{
	size_t n = g->nitems + g->napis + g->nsteps + g->nbivs;

	if (g->cut && ts >= g->cut_ts)
		goto no;
	if (n < g->max_held || (g->cut && n < g->max_held + g->max_held / 8))
		return true;
	if (!g->cut || ts < g->cut_ts)
		g->cut_ts = ts;
	g->cut = true;
no:
	g->res.not_held++;
	return false;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *q;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 256;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

struct pt_gpu *pt_gpu__new(size_t nbuckets)
{
	struct pt_gpu *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->nb = nbuckets;
	g->max_held = MAX_HELD_DEFAULT;
	g->res.buckets = calloc(nbuckets ? nbuckets : 1, sizeof(*g->res.buckets));
	if (!g->res.buckets) {
		free(g);
		return NULL;
	}
	return g;
}

void pt_gpu__free(struct pt_gpu *g)
{
	if (!g)
		return;
	free(g->items);
	free(g->apis);
	free(g->steps);
	free(g->bivs);
	free(g->res.devices);
	free(g->res.top);
	free(g->res.buckets);
	pt_dist__free(&g->res.step_busy);
	pt_dist__free(&g->res.step_idle);
	pt_dist__free(&g->res.launch_delay);
	free(g);
}

int pt_gpu__record(struct pt_gpu *g, const struct pt_gpu_rec *r)
{
	struct item *it;

	switch (r->kind) {
	case PT_GPU_API:
		if (!hold(g, r->start_ns))
			return 0;
		g->res.api_calls++;
		if (grow((void **)&g->apis, &g->capis, g->napis, sizeof(*g->apis)))
			return -ENOMEM;
		g->apis[g->napis++] = (struct api){ .s = r->start_ns,
						    .corr = r->correlation_id,
						    .tid = r->api.tid };
		return 0;
	case PT_GPU_SYNC:
		if (!g->cut || r->start_ns < g->cut_ts)
			g->res.syncs++;
		return 0;
	case PT_GPU_KERNEL:
	case PT_GPU_MEMCPY:
	case PT_GPU_MEMSET:
		break;
	default:
		return 0;
	}
	if (r->end_ns < r->start_ns)
		return 0; /* the reader drops these; never trust it twice */
	if (!hold(g, r->start_ns))
		return 0;
	if (grow((void **)&g->items, &g->citems, g->nitems, sizeof(*g->items)))
		return -ENOMEM;
	it = &g->items[g->nitems++];
	it->s = r->start_ns;
	it->e = r->end_ns;
	it->corr = r->correlation_id;
	it->kind = (uint8_t)r->kind;
	it->name = NULL;
	if (r->kind == PT_GPU_KERNEL) {
		it->dev = r->kernel.device_id;
		it->name = r->kernel.name;
	} else if (r->kind == PT_GPU_MEMCPY) {
		it->dev = r->memcpy.device_id;
		g->res.copy_bytes += r->memcpy.bytes;
	} else {
		it->dev = r->memset.device_id;
	}
	return 0;
}

int pt_gpu__bucket_call(struct pt_gpu *g, uint32_t tid, uint64_t t0, uint64_t t1, uint64_t bmask)
{
	if (!bmask || t1 < t0)
		return 0;
	if (!hold(g, t0))
		return 0;
	if (grow((void **)&g->bivs, &g->cbivs, g->nbivs, sizeof(*g->bivs)))
		return -ENOMEM;
	g->bivs[g->nbivs++] = (struct biv){ .s = t0, .e = t1, .mask = bmask, .tid = tid };
	return 0;
}

int pt_gpu__step(struct pt_gpu *g, uint32_t tid, uint64_t t0, uint64_t t1)
{
	if (!hold(g, t0))
		return 0;
	if (grow((void **)&g->steps, &g->csteps, g->nsteps, sizeof(*g->steps)))
		return -ENOMEM;
	g->steps[g->nsteps++] = (struct step){ .s = t0, .e = t1 > t0 ? t1 : t0, .tid = tid };
	return 0;
}

/* ---- the join ---- */

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b))

static int api_cmp(const void *a, const void *b)
{
	const struct api *x = a, *y = b;

	return x->corr != y->corr ? CMP(x->corr, y->corr) : CMP(x->s, y->s);
}

static int step_cmp(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	return x->tid != y->tid ? CMP(x->tid, y->tid) : CMP(x->s, y->s);
}

/* by thread, start, and the longer first: a caller before its callee */
static int biv_cmp(const void *a, const void *b)
{
	const struct biv *x = a, *y = b;

	if (x->tid != y->tid)
		return CMP(x->tid, y->tid);
	return x->s != y->s ? CMP(x->s, y->s) : CMP(y->e, x->e);
}

/*
 * A thread's calls nest (they come from its call stack), so the calls
 * open at a time t are the last call starting at or before t and those of
 * its ancestors that have not ended: link each call to its parent once.
 */
static int link_parents(struct pt_gpu *g)
{
	int32_t *stack;
	size_t n = 0;

	if (!g->nbivs)
		return 0;
	stack = malloc(g->nbivs * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	for (size_t i = 0; i < g->nbivs; i++) {
		struct biv *b = &g->bivs[i];

		if (i && g->bivs[i - 1].tid != b->tid)
			n = 0;
		while (n && g->bivs[stack[n - 1]].e <= b->s)
			n--;
		b->parent = n ? stack[n - 1] : -1;
		stack[n++] = (int32_t)i;
	}
	free(stack);
	return 0;
}

static int iv_cmp(const void *a, const void *b)
{
	const struct iv *x = a, *y = b;

	return CMP(x->s, y->s);
}

/* The first launch call with this correlation id (a runtime call and the
 * driver call under it may both be recorded). */
static const struct api *find_api(const struct pt_gpu *g, uint32_t corr)
{
	size_t lo = 0, hi = g->napis;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->apis[mid].corr < corr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->napis && g->apis[lo].corr == corr ? &g->apis[lo] : NULL;
}

/* Index of the last element of (tid, s)-sorted base with tid and s <= t,
 * or -1. stride: element size; the key fields are read through acc. */
static long last_at_or_before(const struct step *v, size_t n, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* first element > (tid, t) */
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].tid < tid || (v[mid].tid == tid && v[mid].s <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || v[lo - 1].tid != tid)
		return -1;
	return (long)lo - 1;
}

static long biv_last_at_or_before(const struct biv *v, size_t n, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].tid < tid || (v[mid].tid == tid && v[mid].s <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || v[lo - 1].tid != tid)
		return -1;
	return (long)lo - 1;
}

/* Sorted, merged union of ivs (sorted in place), clipped to [t0, t1). */
static size_t merge(struct iv *ivs, size_t n, uint64_t t0, uint64_t t1, uint64_t *total)
{
	size_t k = 0;

	*total = 0;
	if (!n)
		return 0;
	qsort(ivs, n, sizeof(*ivs), iv_cmp);
	for (size_t i = 0; i < n; i++) {
		uint64_t s = ivs[i].s < t0 ? t0 : ivs[i].s, e = ivs[i].e > t1 ? t1 : ivs[i].e;

		if (s >= e)
			continue;
		if (k && s <= ivs[k - 1].e) {
			if (e > ivs[k - 1].e)
				ivs[k - 1].e = e;
		} else {
			ivs[k].s = s;
			ivs[k].e = e;
			k++;
		}
	}
	for (size_t i = 0; i < k; i++)
		*total += ivs[i].e - ivs[i].s;
	return k;
}

/* Time of the merged union u (sorted, disjoint) inside [s, e). */
static uint64_t overlap(const struct iv *u, size_t n, uint64_t s, uint64_t e)
{
	size_t lo = 0, hi = n;
	uint64_t sum = 0;

	while (lo < hi) { /* first interval ending after s */
		size_t mid = lo + (hi - lo) / 2;

		if (u[mid].e <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < n && u[i].s < e; i++) {
		uint64_t a = u[i].s > s ? u[i].s : s, b = u[i].e < e ? u[i].e : e;

		if (b > a)
			sum += b - a;
	}
	return sum;
}

static void attribute(struct pt_gpu *g, const struct item *it)
{
	struct pt_gpu_result *R = &g->res;
	const struct api *a = find_api(g, it->corr);
	uint64_t m = 0, dur = it->e - it->s;
	struct step *st;
	long k;

	if (!a) {
		R->unmatched++;
		return;
	}
	if (it->kind == PT_GPU_KERNEL && it->s >= a->s)
		pt_dist__add(&R->launch_delay, it->s - a->s);
	k = last_at_or_before(g->steps, g->nsteps, a->tid, a->s);
	if (k < 0 || a->s >= g->steps[k].e) {
		R->outside_steps++;
		return;
	}
	st = &g->steps[k];
	st->items++;
	R->step_items++;
	/* bucket calls open at the launch: the last one started and its
	 * ancestors (link_parents) */
	for (long j = biv_last_at_or_before(g->bivs, g->nbivs, a->tid, a->s); j >= 0;
	     j = g->bivs[j].parent)
		if (g->bivs[j].e > a->s)
			m |= g->bivs[j].mask;
	for (; m; m &= m - 1) {
		unsigned int b = __builtin_ctzll(m);

		if (b < g->nb) {
			R->buckets[b].kernels++;
			R->buckets[b].gpu_ns += dur;
		}
	}
}

static int kstat_cmp(const void *a, const void *b)
{
	const struct pt_gpu_kstat *x = a, *y = b;

	return x->total_ns != y->total_ns ? CMP(y->total_ns, x->total_ns) : CMP(y->count, x->count);
}

static int name_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->kind != y->kind)
		return CMP(x->kind, y->kind);
	if (x->name == y->name)
		return 0;
	if (!x->name || !y->name)
		return x->name ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int dev_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return x->dev != y->dev ? CMP(x->dev, y->dev) : CMP(x->s, y->s);
}

static int kernel_stats(struct pt_gpu *g)
{
	struct pt_gpu_result *R = &g->res;
	size_t i = 0, n = 0;

	if (g->nitems)
		qsort(g->items, g->nitems, sizeof(*g->items), name_cmp);
	R->top = calloc(g->nitems ? g->nitems : 1, sizeof(*R->top));
	if (!R->top)
		return -ENOMEM;
	while (i < g->nitems) {
		const struct item *it = &g->items[i];
		struct pt_gpu_kstat *k;

		if (it->kind != PT_GPU_KERNEL) {
			i++;
			continue;
		}
		k = &R->top[n++];
		k->name = it->name ? it->name : "[unnamed kernel]";
		for (; i < g->nitems && !name_cmp(&g->items[i], it); i++) {
			uint64_t d = g->items[i].e - g->items[i].s;

			k->count++;
			k->total_ns += d;
			if (d > k->max_ns)
				k->max_ns = d;
		}
	}
	if (n)
		qsort(R->top, n, sizeof(*R->top), kstat_cmp);
	R->ntop = n;
	return 0;
}

static int device_stats(struct pt_gpu *g, struct iv *ivs, uint64_t t0, uint64_t t1)
{
	struct pt_gpu_result *R = &g->res;
	size_t i = 0;

	if (g->nitems)
		qsort(g->items, g->nitems, sizeof(*g->items), dev_cmp);
	while (i < g->nitems) {
		uint32_t dev = g->items[i].dev;
		struct pt_gpu_device *d, *nd;
		size_t n = 0;

		nd = realloc(R->devices, (R->ndevices + 1) * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		R->devices = nd;
		d = &R->devices[R->ndevices++];
		memset(d, 0, sizeof(*d));
		d->device = dev;
		for (; i < g->nitems && g->items[i].dev == dev; i++) {
			const struct item *it = &g->items[i];

			d->kernels += it->kind == PT_GPU_KERNEL;
			d->copies += it->kind == PT_GPU_MEMCPY;
			d->memsets += it->kind == PT_GPU_MEMSET;
			ivs[n].s = it->s;
			ivs[n].e = it->e;
			n++;
		}
		merge(ivs, n, t0, t1, &d->busy_ns);
	}
	return 0;
}

const struct pt_gpu_result *pt_gpu__join(struct pt_gpu *g, uint64_t t0, uint64_t t1)
{
	struct pt_gpu_result *R = &g->res;
	struct iv *ivs, *u;
	size_t nu;

	if (g->cut) {
		/* the window: what started before cut_ts, nothing after */
		size_t k;

#define WINDOW(arr, n, field)                                                                      \
	do {                                                                                       \
		for (k = 0, i_ = 0; i_ < (n); i_++)                                                \
			if ((arr)[i_].field < g->cut_ts)                                           \
				(arr)[k++] = (arr)[i_];                                            \
		R->not_held += (n)-k;                                                              \
		(n) = k;                                                                           \
	} while (0)
		size_t i_;

		for (k = 0, i_ = 0; i_ < g->napis; i_++)
			if (g->apis[i_].s < g->cut_ts)
				g->apis[k++] = g->apis[i_];
		R->api_calls -= g->napis - k;
		R->not_held += g->napis - k;
		g->napis = k;
		WINDOW(g->items, g->nitems, s);
		WINDOW(g->steps, g->nsteps, s);
		WINDOW(g->bivs, g->nbivs, s);
#undef WINDOW
		if (t1 > g->cut_ts)
			t1 = g->cut_ts;
		R->window_cut = true;
		R->window_end_ns = t1;
	}
	R->window_ns = t1 > t0 ? t1 - t0 : 0;
	/* qsort(NULL, 0, ...) is undefined: empty arrays are NULL here */
	if (g->napis)
		qsort(g->apis, g->napis, sizeof(*g->apis), api_cmp);
	if (g->nsteps)
		qsort(g->steps, g->nsteps, sizeof(*g->steps), step_cmp);
	if (g->nbivs)
		qsort(g->bivs, g->nbivs, sizeof(*g->bivs), biv_cmp);
	if (link_parents(g))
		return NULL;
	for (size_t i = 0; i < g->nitems; i++) {
		const struct item *it = &g->items[i];

		R->kernels += it->kind == PT_GPU_KERNEL;
		R->copies += it->kind == PT_GPU_MEMCPY;
		R->memsets += it->kind == PT_GPU_MEMSET;
		attribute(g, it);
	}

	ivs = malloc((g->nitems ? g->nitems : 1) * sizeof(*ivs));
	if (!ivs)
		return NULL;
	for (size_t i = 0; i < g->nitems; i++) {
		ivs[i].s = g->items[i].s;
		ivs[i].e = g->items[i].e;
	}
	/* the union over all devices: a step is host-bound when no GPU works */
	u = ivs;
	nu = merge(u, g->nitems, t0, t1, &R->busy_ns);
	R->steps = g->nsteps;
	for (size_t i = 0; i < g->nsteps; i++) {
		const struct step *st = &g->steps[i];
		uint64_t busy = overlap(u, nu, st->s, st->e), dur = st->e - st->s;

		R->step_ns += dur;
		R->step_busy_ns += busy;
		R->steps_with_gpu += st->items > 0;
		pt_dist__add(&R->step_busy, busy);
		pt_dist__add(&R->step_idle, dur - busy);
	}
	if (device_stats(g, ivs, t0, t1) || kernel_stats(g)) {
		free(ivs);
		return NULL;
	}
	free(ivs);
	return R;
}
