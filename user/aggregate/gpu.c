// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_gpu: GPU work x host steps and buckets (gpu.h).
 *
 * Records are kept and joined at the end: GPU records arrive long after
 * the host calls that launched them (CUPTI hands buffers over when they
 * fill or are flushed). Memory: 40 bytes per kernel, copy or memset, up
 * to the bound; there the old part is folded into the totals by the
 * same code as the final join (settle(); docs/gpu.md, "The memory
 * bound"), so a long run is covered whole in bounded memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "util/demangle.h"
#include "util/search.h"

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
	uint64_t busy; /* GPU busy in it, up to the last fold's horizon */
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

/* A device's merged busy interval that reaches past the last fold's
 * horizon: its part from the horizon on, still open to later unions. */
struct div {
	uint64_t s, e;
	uint32_t dev;
};

/* latest time seen per stream: items by start, apis by start, steps and
 * bucket calls by end */
enum { S_ITEM, S_API, S_STEP, S_BIV, S_NR };

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
	struct div *rest; /* residual intervals of settled items (fold()) */
	size_t nrest, crest;
	/* the bound: fold at max_held, drop past an eighth more */
	size_t max_held;
	uint64_t lag;
	uint64_t last[S_NR];
	uint64_t h; /* the last fold's horizon: everything before it is settled */
	uint64_t arrivals, next_fold;
	size_t ctop, cdev;
	struct pt_gpu_result res;
};

#define MAX_HELD_DEFAULT (1u << 22)
#define FOLD_LAG_DEFAULT (30ULL * 1000000000ULL)

void pt_gpu__set_max_held(struct pt_gpu *g, size_t n)
{
	g->max_held = n ? n : 1;
}

void pt_gpu__set_fold_lag(struct pt_gpu *g, uint64_t ns)
{
	g->lag = ns;
}

size_t pt_gpu__held(const struct pt_gpu *g)
{
	return g->nitems + g->napis + g->nsteps + g->nbivs + g->nrest;
}

static long fold(struct pt_gpu *g);

/*
 * Memory stays bounded over any run length. When max_held records are
 * held, fold() settles what is older than a horizon into the running
 * totals and frees it. When a fold cannot free anything (nothing held is
 * older than the horizon), records are taken in an eighth more, a fold
 * is tried again every sixteenth of the bound, and past that the new
 * record is dropped and counted in not_held.
 * 1: hold it, 0: not held, -ENOMEM.
 */
static int make_room(struct pt_gpu *g)
{
	size_t n = pt_gpu__held(g);

	g->arrivals++;
	if (n >= g->max_held && g->arrivals >= g->next_fold) {
		long freed = fold(g);

		if (freed < 0)
			return (int)freed;
		g->next_fold = g->arrivals + (g->max_held / 16 ? g->max_held / 16 : 1);
		n = pt_gpu__held(g);
	}
	return n < g->max_held + g->max_held / 8;
}

static void seen(struct pt_gpu *g, int stream, uint64_t t)
{
	if (t > g->last[stream])
		g->last[stream] = t;
}

/* A record whose time a fold already settled (see "Late records" above
 * pt_gpu__record()). */
static bool late(const struct pt_gpu *g, uint64_t t)
{
	return g->res.folds && t < g->h;
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
	g->lag = FOLD_LAG_DEFAULT;
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
	free(g->rest);
	free(g->res.devices);
	for (size_t i = 0; i < g->res.ntop; i++)
		if (g->res.top[i].mangled)
			free((char *)g->res.top[i].name);
	free(g->res.top);
	free(g->res.buckets);
	pt_dist__free(&g->res.step_busy);
	pt_dist__free(&g->res.step_idle);
	pt_dist__free(&g->res.launch_delay);
	free(g);
}

static int count_item(struct pt_gpu *g, const struct item *it);

/*
 * Late records: one that arrives after a fold with a time that fold
 * already settled (an item that started, or was launched, before the
 * horizon h; an api, step or bucket call that started before it) is
 * counted in late and joins only what cannot count anything twice:
 * - an item: its kind's count, copy_bytes, its device's count, the top
 *   kernels, and the busy time from h on (before h the union is final);
 *   not launch_delay, the steps, the buckets, unmatched or outside_steps
 *   (what it would change there is settled and freed);
 * - an api: api_calls (it is not held: items it launched are unmatched);
 * - a step or a bucket call: nothing else.
 * So kernels + copies + memsets = step_items + outside_steps + unmatched
 * + the late items. Items launched before h are recognised as late only
 * while their launch call is held (one fold longer than needed), after
 * that they count as unmatched.
 */
static int late_item(struct pt_gpu *g, const struct item *it)
{
	g->res.late++;
	if (it->e > g->h) {
		if (grow((void **)&g->rest, &g->crest, g->nrest, sizeof(*g->rest)))
			return -ENOMEM;
		g->rest[g->nrest++] = (struct div){ .s = g->h, .e = it->e, .dev = it->dev };
	}
	return count_item(g, it);
}

int pt_gpu__record(struct pt_gpu *g, const struct pt_gpu_rec *r)
{
	struct item it = { 0 };
	int rc;

	switch (r->kind) {
	case PT_GPU_API:
		if (r->api.what == PT_GPU_API_WAIT)
			g->res.syncs++;
		seen(g, S_API, r->start_ns);
		rc = make_room(g);
		if (rc < 0)
			return rc;
		if (late(g, r->start_ns)) {
			g->res.late++;
			g->res.api_calls++;
			return 0;
		}
		if (!rc) {
			g->res.not_held++;
			return 0;
		}
		g->res.api_calls++;
		if (grow((void **)&g->apis, &g->capis, g->napis, sizeof(*g->apis)))
			return -ENOMEM;
		g->apis[g->napis++] = (struct api){ .s = r->start_ns,
						    .corr = r->correlation_id,
						    .tid = r->api.tid };
		return 0;
	case PT_GPU_SYNC:
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
	it.s = r->start_ns;
	it.e = r->end_ns;
	it.corr = r->correlation_id;
	it.kind = (uint8_t)r->kind;
	if (r->kind == PT_GPU_KERNEL) {
		it.dev = r->kernel.device_id;
		it.name = r->kernel.name;
	} else if (r->kind == PT_GPU_MEMCPY) {
		it.dev = r->memcpy.device_id;
	} else {
		it.dev = r->memset.device_id;
	}
	seen(g, S_ITEM, it.s);
	rc = make_room(g);
	if (rc < 0)
		return rc;
	if (!rc) { /* a late one too: it would hold a residual interval */
		g->res.not_held++;
		return 0;
	}
	if (r->kind == PT_GPU_MEMCPY)
		g->res.copy_bytes += r->memcpy.bytes;
	if (late(g, it.s))
		return late_item(g, &it);
	if (grow((void **)&g->items, &g->citems, g->nitems, sizeof(*g->items)))
		return -ENOMEM;
	g->items[g->nitems++] = it;
	return 0;
}

/* Hold a step or bucket call starting at t0 and ending at t1: 1 hold it,
 * 0 not (late or not held), -ENOMEM. */
static int host_rec(struct pt_gpu *g, int stream, uint64_t t0, uint64_t t1)
{
	int rc;

	seen(g, stream, t1);
	rc = make_room(g);
	if (rc < 0)
		return rc;
	if (late(g, t0)) {
		g->res.late++;
		return 0;
	}
	if (!rc)
		g->res.not_held++;
	return rc;
}

int pt_gpu__bucket_call(struct pt_gpu *g, uint32_t tid, uint64_t t0, uint64_t t1, uint64_t bmask)
{
	int rc;

	if (!bmask || t1 < t0)
		return 0;
	rc = host_rec(g, S_BIV, t0, t1);
	if (rc <= 0)
		return rc;
	if (grow((void **)&g->bivs, &g->cbivs, g->nbivs, sizeof(*g->bivs)))
		return -ENOMEM;
	g->bivs[g->nbivs++] = (struct biv){ .s = t0, .e = t1, .mask = bmask, .tid = tid };
	return 0;
}

int pt_gpu__step(struct pt_gpu *g, uint32_t tid, uint64_t t0, uint64_t t1)
{
	int rc;

	if (t1 < t0)
		t1 = t0;
	rc = host_rec(g, S_STEP, t0, t1);
	if (rc <= 0)
		return rc;
	if (grow((void **)&g->steps, &g->csteps, g->nsteps, sizeof(*g->steps)))
		return -ENOMEM;
	g->steps[g->nsteps++] = (struct step){ .s = t0, .e = t1, .tid = tid };
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
 * Sorted in place, unless it is already: what a fold keeps stays sorted
 * and launch calls come in correlation order (CUPTI counts them up), so a
 * fold mostly checks. qsort(NULL, 0, ...) is undefined: empty arrays are
 * NULL here.
 */
static void sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	const char *p = v;

	for (size_t i = 1; i < n; i++) {
		if (cmp(p + (i - 1) * size, p + i * size) > 0) {
			qsort(v, n, size, cmp);
			return;
		}
	}
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

static bool corr_before(const void *api, const void *corr)
{
	return ((const struct api *)api)->corr < *(const uint32_t *)corr;
}

/* The first launch call with this correlation id (a runtime call and the
 * driver call under it may both be recorded). */
static const struct api *find_api(const struct pt_gpu *g, uint32_t corr)
{
	size_t lo = pt_lower_bound(g->apis, g->napis, sizeof(*g->apis), &corr, corr_before);

	return lo < g->napis && g->apis[lo].corr == corr ? &g->apis[lo] : NULL;
}

/* A thread and a time, searched for in the (tid, s)-sorted steps and
 * bucket calls. */
struct tid_at {
	uint32_t tid;
	uint64_t t;
};

static bool at_or_before(uint32_t tid, uint64_t s, const struct tid_at *k)
{
	return tid < k->tid || (tid == k->tid && s <= k->t);
}

static bool step_at_or_before(const void *step, const void *k)
{
	const struct step *v = step;

	return at_or_before(v->tid, v->s, k);
}

static bool biv_at_or_before(const void *biv, const void *k)
{
	const struct biv *v = biv;

	return at_or_before(v->tid, v->s, k);
}

/* Index of the last step of the (tid, s)-sorted v with tid and s <= t,
 * or -1 (and the same for bucket calls below): the one before the first
 * element > (tid, t), when it is tid's. */
static long last_at_or_before(const struct step *v, size_t n, uint32_t tid, uint64_t t)
{
	size_t i = pt_lower_bound(v, n, sizeof(*v), &(struct tid_at){ tid, t }, step_at_or_before);

	return i && v[i - 1].tid == tid ? (long)i - 1 : -1;
}

static long biv_last_at_or_before(const struct biv *v, size_t n, uint32_t tid, uint64_t t)
{
	size_t i = pt_lower_bound(v, n, sizeof(*v), &(struct tid_at){ tid, t }, biv_at_or_before);

	return i && v[i - 1].tid == tid ? (long)i - 1 : -1;
}

/* Sorted, merged union of ivs (sorted in place), clipped to [t0, t1). */
static size_t merge(struct iv *ivs, size_t n, uint64_t t0, uint64_t t1, uint64_t *total)
{
	size_t k = 0;

	*total = 0;
	if (!n)
		return 0;
	sort(ivs, n, sizeof(*ivs), iv_cmp);
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

static bool ends_by(const void *iv, const void *t)
{
	return ((const struct iv *)iv)->e <= *(const uint64_t *)t;
}

/* Time of the merged union u (sorted, disjoint) inside [s, e). */
static uint64_t overlap(const struct iv *u, size_t n, uint64_t s, uint64_t e)
{
	size_t lo = pt_lower_bound(u, n, sizeof(*u), &s, ends_by); /* first ending after s */
	uint64_t sum = 0;

	for (size_t i = lo; i < n && u[i].s < e; i++) {
		uint64_t a = u[i].s > s ? u[i].s : s, b = u[i].e < e ? u[i].e : e;

		if (b > a)
			sum += b - a;
	}
	return sum;
}

static void attribute(struct pt_gpu *g, const struct item *it, const struct api *a)
{
	struct pt_gpu_result *R = &g->res;
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

/* A kernel's name as the records give it (NULL: unnamed). */
static const char *kkey(const struct pt_gpu_kstat *k)
{
	return k->mangled ? k->mangled : k->name;
}

static int kstat_cmp(const void *a, const void *b)
{
	const struct pt_gpu_kstat *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return CMP(y->total_ns, x->total_ns);
	if (x->count != y->count)
		return CMP(y->count, x->count);
	return strcmp(kkey(x), kkey(y)); /* ties in one order, folded or not */
}

/* NULL (unnamed) first, then by name */
static int name_cmp(const char *x, const char *y)
{
	if (x == y)
		return 0;
	if (!x || !y)
		return x ? 1 : -1;
	return strcmp(x, y);
}

static bool name_before(const void *kstat, const void *name)
{
	return name_cmp(kkey(kstat), *(const char *const *)name) < 0;
}

/* The kernel table (res.top, by name until the join sorts it by time):
 * as long as the number of distinct names. A C++ name is demangled here,
 * once, when it first comes. */
static int kstat_add(struct pt_gpu *g, const char *name, uint64_t d)
{
	struct pt_gpu_result *R = &g->res;
	size_t lo = pt_lower_bound(R->top, R->ntop, sizeof(*R->top), &name, name_before);
	struct pt_gpu_kstat *k;

	if (lo == R->ntop || name_cmp(kkey(&R->top[lo]), name)) {
		char *d;

		if (grow((void **)&R->top, &g->ctop, R->ntop, sizeof(*R->top)))
			return -ENOMEM;
		d = name ? pt_demangle(name) : NULL;
		memmove(&R->top[lo + 1], &R->top[lo], (R->ntop - lo) * sizeof(*R->top));
		R->ntop++;
		R->top[lo] = d ? (struct pt_gpu_kstat){ .name = d, .mangled = name }
			       : (struct pt_gpu_kstat){ .name = name };
	}
	k = &R->top[lo];
	k->count++;
	k->total_ns += d;
	if (d > k->max_ns)
		k->max_ns = d;
	return 0;
}

static bool device_before(const void *d, const void *dev)
{
	return ((const struct pt_gpu_device *)d)->device < *(const uint32_t *)dev;
}

/* The device table (res.devices, by id). */
static struct pt_gpu_device *device(struct pt_gpu *g, uint32_t dev)
{
	struct pt_gpu_result *R = &g->res;
	size_t lo =
		pt_lower_bound(R->devices, R->ndevices, sizeof(*R->devices), &dev, device_before);

	if (lo == R->ndevices || R->devices[lo].device != dev) {
		if (grow((void **)&R->devices, &g->cdev, R->ndevices, sizeof(*R->devices)))
			return NULL;
		memmove(&R->devices[lo + 1], &R->devices[lo],
			(R->ndevices - lo) * sizeof(*R->devices));
		R->ndevices++;
		R->devices[lo] = (struct pt_gpu_device){ .device = dev };
	}
	return &R->devices[lo];
}

/* The plain counts of an item: its kind, its device, its kernel name. */
static int count_item(struct pt_gpu *g, const struct item *it)
{
	struct pt_gpu_result *R = &g->res;
	struct pt_gpu_device *d = device(g, it->dev);

	if (!d)
		return -ENOMEM;
	R->kernels += it->kind == PT_GPU_KERNEL;
	R->copies += it->kind == PT_GPU_MEMCPY;
	R->memsets += it->kind == PT_GPU_MEMSET;
	d->kernels += it->kind == PT_GPU_KERNEL;
	d->copies += it->kind == PT_GPU_MEMCPY;
	d->memsets += it->kind == PT_GPU_MEMSET;
	if (it->kind == PT_GPU_KERNEL)
		return kstat_add(g, it->name, it->e - it->s);
	return 0;
}

static int div_cmp(const void *a, const void *b)
{
	const struct div *x = a, *y = b;

	return x->dev != y->dev ? CMP(x->dev, y->dev) : CMP(x->s, y->s);
}

/* Busy time below h of a merged union, and (keep) its part from h on
 * kept in rest, on dev. */
static int split(struct pt_gpu *g, const struct iv *u, size_t n, uint64_t h, uint32_t dev,
		 uint64_t *busy, bool keep)
{
	for (size_t i = 0; i < n; i++) {
		if (u[i].s < h)
			*busy += (u[i].e < h ? u[i].e : h) - u[i].s;
		if (!keep || u[i].e <= h)
			continue;
		if (grow((void **)&g->rest, &g->crest, g->nrest, sizeof(*g->rest)))
			return -ENOMEM;
		g->rest[g->nrest++] =
			(struct div){ .s = u[i].s > h ? u[i].s : h, .e = u[i].e, .dev = dev };
	}
	return 0;
}

/*
 * The horizon of a fold, lowered below the start of any item launched
 * after it (a GPU clock a little behind the host's): such an item is
 * settled later, and the union before h must be final.
 *
 * Steps and bucket calls may straddle h. Lowering h to their start
 * instead cascades when several threads step at once (each start lies
 * inside another thread's step) and stops the folds. A step open at h
 * stays held and takes its busy time of [previous h, h) now (the union
 * there is final); a bucket call open at h stays held, and the calls
 * open at a launch are found among the held ones alone: every call that
 * contains a later launch is held, and they nest (link_parents()).
 */
static uint64_t lower(const struct pt_gpu *g, uint64_t h)
{
	bool again = true;

	while (again) {
		again = false;
		for (size_t i = 0; i < g->nitems; i++) {
			const struct api *a = find_api(g, g->items[i].corr);

			if (a && a->s >= h && g->items[i].s < h) {
				h = g->items[i].s;
				again = true;
			}
		}
	}
	return h;
}

/*
 * Settle what is older than h into the running totals (res) and free it:
 * items launched before h (by their start when the launch call is not
 * held), steps that end by h, bucket calls that end by h, launch calls
 * before the previous horizon (kept one fold longer to recognise late
 * items). The union of the settled items is final below h: its time
 * there is added to busy_ns, its part from h on is kept in rest and
 * takes part in later unions. The join settles everything (final, h =
 * UINT64_MAX) with the unions clipped to [t0, t1). Returns the number of
 * records freed, or -ENOMEM.
 */
static long settle(struct pt_gpu *g, uint64_t h, uint64_t t0, uint64_t t1, bool final)
{
	struct pt_gpu_result *R = &g->res;
	size_t held = pt_gpu__held(g), k, n = 0, nu;
	struct div *ivs;
	struct iv *u;
	long rc = -ENOMEM;

	sort(g->apis, g->napis, sizeof(*g->apis), api_cmp);
	sort(g->steps, g->nsteps, sizeof(*g->steps), step_cmp);
	sort(g->bivs, g->nbivs, sizeof(*g->bivs), biv_cmp);
	if (!final) {
		h = lower(g, h);
		if (h <= g->h)
			return 0;
	}
	if (link_parents(g))
		return -ENOMEM;
	ivs = malloc((g->nrest + g->nitems + 1) * sizeof(*ivs));
	u = malloc((g->nrest + g->nitems + 1) * sizeof(*u));
	if (!ivs || !u)
		goto out;
	if (g->nrest)
		memcpy(ivs, g->rest, g->nrest * sizeof(*ivs));
	n = g->nrest;
	g->nrest = 0;
	for (size_t i = k = 0; i < g->nitems; i++) {
		const struct item *it = &g->items[i];
		const struct api *a = find_api(g, it->corr);
		bool is_late = R->folds && a && a->s < g->h;

		if (!final && !is_late && (a ? a->s : it->s) >= h) {
			g->items[k++] = *it;
			continue;
		}
		if (count_item(g, it))
			goto out;
		if (is_late)
			R->late++;
		else
			attribute(g, it, a);
		ivs[n++] = (struct div){ .s = it->s, .e = it->e, .dev = it->dev };
	}
	g->nitems = k;

	/* the union over all devices: a step is host-bound when no GPU works */
	for (size_t i = 0; i < n; i++)
		u[i] = (struct iv){ .s = ivs[i].s, .e = ivs[i].e };
	nu = merge(u, n, t0, t1, &(uint64_t){ 0 });
	/* its part from h on is the union of the devices' parts (below) */
	if (split(g, u, nu, h, 0, &R->busy_ns, false))
		goto out;
	for (size_t i = k = 0; i < g->nsteps; i++) {
		struct step *st = &g->steps[i];
		uint64_t busy, dur = st->e - st->s, lo = st->s > g->h ? st->s : g->h;
		uint64_t hi = st->e < h ? st->e : h;

		if (hi > lo)
			st->busy += overlap(u, nu, lo, hi);
		if (!final && st->e > h) {
			g->steps[k++] = *st;
			continue;
		}
		busy = st->busy;
		R->steps++;
		R->step_ns += dur;
		R->step_busy_ns += busy;
		R->steps_with_gpu += st->items > 0;
		pt_dist__add(&R->step_busy, busy);
		pt_dist__add(&R->step_idle, dur - busy);
	}
	g->nsteps = k;

	/* per device */
	sort(ivs, n, sizeof(*ivs), div_cmp);
	for (size_t i = 0; i < n;) {
		uint32_t dev = ivs[i].dev;
		struct pt_gpu_device *d = device(g, dev);

		if (!d)
			goto out;
		for (nu = 0; i < n && ivs[i].dev == dev; i++)
			u[nu++] = (struct iv){ .s = ivs[i].s, .e = ivs[i].e };
		nu = merge(u, nu, t0, t1, &(uint64_t){ 0 });
		if (split(g, u, nu, h, dev, &d->busy_ns, true))
			goto out;
	}

	for (size_t i = k = 0; i < g->nbivs; i++)
		if (!final && g->bivs[i].e > h)
			g->bivs[k++] = g->bivs[i];
	g->nbivs = k;
	for (size_t i = k = 0; i < g->napis; i++)
		if (!final && g->apis[i].s >= g->h)
			g->apis[k++] = g->apis[i];
	g->napis = k;
	if (!final) {
		g->h = h;
		R->folds++;
	}
	rc = (long)(held - pt_gpu__held(g));
out:
	free(ivs);
	free(u);
	return rc;
}

/*
 * The horizon: the lag behind the latest record of every stream. When the
 * bound fills within twice the lag (a fast GPU stream: above 70,000
 * records a second at the defaults), the older half of what is held is
 * folded instead, so that a fold always frees about half: down to a sixth
 * of the lag (5 s by default, fifty times the shim's 100 ms flush period;
 * a step or bucket call longer than that which had not ended at the fold
 * is then late, and counted).
 */
static long fold(struct pt_gpu *g)
{
	const size_t n[S_NR] = { g->nitems, g->napis, g->nsteps, g->nbivs };
	uint64_t lo = UINT64_MAX, old = UINT64_MAX, lag = g->lag, span;

	for (int i = 0; i < S_NR; i++)
		if (n[i] && g->last[i] < lo)
			lo = g->last[i];
	for (size_t i = 0; i < g->nitems; i++)
		if (g->items[i].s < old)
			old = g->items[i].s;
	for (size_t i = 0; i < g->napis; i++)
		if (g->apis[i].s < old)
			old = g->apis[i].s;
	if (lo == UINT64_MAX)
		return 0;
	span = old < lo ? lo - old : 0;
	if (span / 2 < lag)
		lag = span / 2 > lag / 6 ? span / 2 : lag / 6;
	if (lo <= lag)
		return 0;
	return settle(g, lo - lag, 0, UINT64_MAX, false);
}

const struct pt_gpu_result *pt_gpu__join(struct pt_gpu *g, uint64_t t0, uint64_t t1)
{
	struct pt_gpu_result *R = &g->res;

	R->window_ns = t1 > t0 ? t1 - t0 : 0;
	if (settle(g, UINT64_MAX, t0, t1, true) < 0)
		return NULL;
	for (size_t i = 0; i < R->ntop; i++)
		if (!R->top[i].name)
			R->top[i].name = "[unnamed kernel]";
	if (R->ntop)
		qsort(R->top, R->ntop, sizeof(*R->top), kstat_cmp);
	return R;
}
