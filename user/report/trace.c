// SPDX-License-Identifier: BSD-2-Clause
/*
 * trace.json (trace.h): a bounded array of events filled while the run
 * goes, written once at the end as Chrome trace-event JSON, sorted by
 * time so that a parent slice comes before the calls it holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "aggregate/agg.h"
#include "gpu/gpuring.h"
#include "config/valexpr.h"
#include "util/demangle.h"
#include "util/search.h"
#include "util/util.h"

enum ev_kind { EV_NATIVE = 1, EV_PY, EV_STEP, EV_KERNEL, EV_MEMCPY, EV_MEMSET, EV_API };
enum trk_cls { TRK_HOST = 1, TRK_STEPS, TRK_API, TRK_GPU };

/* 48 bytes: a million events cost 48 MB. */
struct ev {
	uint64_t ts, dur; /* CLOCK_MONOTONIC ns */
	const char *name; /* NULL for steps, copies, memsets, API calls */
	uint64_t arg;	  /* bucket mask | step aux index | bytes | cbid */
	uint32_t track;	  /* index into tracks */
	uint32_t corr;	  /* GPU correlation id, 0: none */
	uint32_t proc;	  /* GPU and API: index into procs */
	uint8_t kind;	  /* enum ev_kind */
	uint8_t sub;	  /* copy kind; API: 1 driver */
};
_Static_assert(sizeof(struct ev) == 48, "struct ev grew");

struct track {
	uint8_t cls;   /* enum trk_cls */
	uint32_t id;   /* host tid, or the stream */
	uint32_t dev;  /* GPU device */
	uint32_t proc; /* GPU: index into procs */
};

#define NO_SLOT UINT32_MAX

/* A process as it came to pt_trace (pid 0: procs[0] of the write). */
struct proc {
	uint32_t pid;
	uint32_t gslot; /* order of its first GPU work, NO_SLOT: none yet */
};

struct thr {
	char *name;    /* NULL: not named (only its pid is known) */
	uint32_t proc; /* index into procs + 1, 0: unknown */
};

struct step_aux {
	uint64_t index, other_ns;
	unsigned int vmask;
	double val[3];
};

/* Open addressing, u64 keys (stored + 1: 0 is empty) -> u32 values. */
struct map {
	uint64_t *k;
	uint32_t *v;
	size_t cap, n;
};

/* Flow state per correlation id. */
#define CF_API 1u
#define CF_WORK 2u
#define CF_FLOW 4u   /* both ends kept, and room for the arrow */
#define CF_S_DONE 8u /* written (pt_trace__write) */
#define CF_F_DONE 16u

struct pt_trace {
	size_t max, nbuckets;
	struct ev *ev;
	size_t nev, cev;
	uint64_t nflows, dropped;
	uint64_t first_drop_ts;
	bool any_drop;
	/* the window's end: the earliest start of a slice that was dropped
	 * (an arrow is no event of its own: dropping one moves no window) */
	uint64_t win_ts;
	bool win;
	struct step_aux *aux;
	uint64_t *bns; /* nbuckets per aux, room for cbns auxes */
	size_t naux, caux, cbns;
	struct track *trk;
	size_t ntrk, ctrk;
	struct map trk_map;  /* track key -> index */
	struct map name_map; /* tid -> index into thr */
	struct thr *thr;
	size_t nthr, cthr;
	struct proc *procs; /* in the order they came */
	size_t nprocs, cprocs;
	struct map proc_map; /* pid -> index into procs */
	uint32_t ngslots;
	struct map corr_map; /* proc index << 32 | correlation id -> CF_* */
};

static size_t slot_of(const struct map *m, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (m->cap - 1);

	while (m->k[i] && m->k[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint32_t *map_get(const struct map *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	i = slot_of(m, key + 1);
	return m->k[i] ? &m->v[i] : NULL;
}

/* The value slot of key, inserted with val when absent; NULL: no memory. */
static uint32_t *map_put(struct map *m, uint64_t key, uint32_t val)
{
	uint32_t *v = map_get(m, key);
	size_t i;

	if (v)
		return v;
	if ((m->n + 1) * 2 > m->cap) {
		struct map g = { .cap = m->cap ? m->cap * 2 : 64 };

		g.k = calloc(g.cap, sizeof(*g.k));
		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.k || !g.v) {
			free(g.k);
			free(g.v);
			return NULL;
		}
		for (size_t j = 0; j < m->cap; j++) {
			if (!m->k[j])
				continue;
			i = slot_of(&g, m->k[j]);
			g.k[i] = m->k[j];
			g.v[i] = m->v[j];
		}
		g.n = m->n;
		free(m->k);
		free(m->v);
		*m = g;
	}
	i = slot_of(m, key + 1);
	m->k[i] = key + 1;
	m->v[i] = val;
	m->n++;
	return &m->v[i];
}

static void map_free(struct map *m)
{
	free(m->k);
	free(m->v);
}

static int grow(void **p, size_t *cap, size_t n, size_t size, size_t limit)
{
	size_t c;
	void *q;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 1024;
	if (limit && c > limit)
		c = limit;
	if (c <= n)
		c = n + 1;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

struct pt_trace *pt_trace__new(size_t max_events, size_t nbuckets)
{
	struct pt_trace *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max = max_events;
	t->nbuckets = nbuckets;
	return t;
}

void pt_trace__free(struct pt_trace *t)
{
	if (!t)
		return;
	free(t->ev);
	free(t->aux);
	free(t->bns);
	free(t->trk);
	for (size_t i = 0; i < t->nthr; i++)
		free(t->thr[i].name);
	free(t->thr);
	free(t->procs);
	map_free(&t->trk_map);
	map_free(&t->name_map);
	map_free(&t->proc_map);
	map_free(&t->corr_map);
	free(t);
}

/* Index of pid's process, added when new; -ENOMEM. */
static long proc_idx(struct pt_trace *t, uint32_t pid)
{
	uint32_t *v = map_get(&t->proc_map, pid);

	if (v)
		return *v;
	if (grow((void **)&t->procs, &t->cprocs, t->nprocs, sizeof(*t->procs), 0) ||
	    !map_put(&t->proc_map, pid, (uint32_t)t->nprocs))
		return -ENOMEM;
	t->procs[t->nprocs] = (struct proc){ .pid = pid, .gslot = NO_SLOT };
	return (long)t->nprocs++;
}

/* Index of tid's entry, added (unnamed, no pid) when new; -ENOMEM. */
static long thr_idx(struct pt_trace *t, uint32_t tid)
{
	uint32_t *v = map_get(&t->name_map, tid);

	if (v)
		return *v;
	if (grow((void **)&t->thr, &t->cthr, t->nthr, sizeof(*t->thr), 0) ||
	    !map_put(&t->name_map, tid, (uint32_t)t->nthr))
		return -ENOMEM;
	t->thr[t->nthr] = (struct thr){ 0 };
	return (long)t->nthr++;
}

/*
 * Host tracks are keyed by tid alone (a tid is one thread of one process
 * at a time; its pid is looked up when writing); GPU ones by the GPU slot
 * of their process, the device and the stream.
 */
static uint64_t trk_key(uint8_t cls, uint32_t gslot, uint32_t dev, uint32_t id)
{
	_Static_assert(TRK_GPU < 8 && PT_TRACE_GPU_SLOTS <= 1u << 16, "trk_key fields");
	return (uint64_t)cls << 61 | (uint64_t)(gslot & 0xffffu) << 45 |
	       (uint64_t)(dev & 0x1fffu) << 32 | id;
}

/* Index of the track, added when new; -ENOMEM, -E2BIG (out of GPU slots). */
static long track(struct pt_trace *t, uint8_t cls, uint32_t proc, uint32_t dev, uint32_t id)
{
	uint32_t gslot = 0, *v;
	uint64_t key;

	if (cls == TRK_GPU) {
		gslot = t->procs[proc].gslot;
		if (gslot == NO_SLOT)
			gslot = t->ngslots;
		if (gslot >= PT_TRACE_GPU_SLOTS)
			return -E2BIG;
	} else {
		proc = 0;
		dev = 0;
	}
	key = trk_key(cls, gslot, dev, id);
	v = map_get(&t->trk_map, key);
	if (v)
		return *v;
	if (grow((void **)&t->trk, &t->ctrk, t->ntrk, sizeof(*t->trk), 0))
		return -ENOMEM;
	if (!map_put(&t->trk_map, key, (uint32_t)t->ntrk))
		return -ENOMEM;
	if (cls == TRK_GPU && t->procs[proc].gslot == NO_SLOT)
		t->procs[proc].gslot = t->ngslots++;
	t->trk[t->ntrk] = (struct track){ .cls = cls, .id = id, .dev = dev, .proc = proc };
	return (long)t->ntrk++;
}

static int drop(struct pt_trace *t, uint64_t ts, uint64_t n, int e)
{
	if (!t->any_drop || ts < t->first_drop_ts)
		t->first_drop_ts = ts;
	t->any_drop = true;
	t->dropped += n;
	if (n == 1 && (!t->win || ts < t->win_ts)) {
		t->win = true;
		t->win_ts = ts;
	}
	return e;
}

static uint64_t used(const struct pt_trace *t)
{
	return t->nev + 2 * t->nflows;
}

/*
 * The bound keeps a time window, not the first events to arrive: once an
 * event is dropped, everything that started before the earliest dropped
 * one is still taken (records arrive late: a call's slice comes at its
 * return, GPU work when the device ring is drained), in up to max / 8
 * events more; at the end the events from that time on are left out
 * (window_cut), so the file holds every event of [start, cut) and none
 * after, whatever its kind.
 */
static bool late_room(const struct pt_trace *t, uint64_t ts, uint64_t n)
{
	return t->win && ts < t->win_ts && used(t) + n <= t->max + t->max / 8;
}

/* A new event on track (cls, proc, dev, id), or NULL when dropped (*e
 * says why). */
static struct ev *add(struct pt_trace *t, uint8_t cls, uint32_t proc, uint32_t dev, uint32_t id,
		      uint64_t ts, uint64_t te, int *e)
{
	struct ev *v;
	long k;

	*e = -ENOSPC;
	if (used(t) >= t->max && !late_room(t, ts, 1))
		return NULL;
	*e = -ENOMEM;
	if (grow((void **)&t->ev, &t->cev, t->nev, sizeof(*t->ev), t->max + t->max / 8))
		return NULL;
	k = track(t, cls, proc, dev, id);
	if (k < 0) {
		*e = (int)k;
		return NULL;
	}
	v = &t->ev[t->nev];
	memset(v, 0, sizeof(*v));
	v->ts = ts;
	v->dur = te > ts ? te - ts : 0;
	v->track = (uint32_t)k;
	v->proc = proc;
	*e = 0;
	return v;
}

int pt_trace__slice(struct pt_trace *t, uint32_t tid, uint64_t t0, uint64_t t1, const char *name,
		    bool py, uint64_t bucket_mask)
{
	struct ev *v;
	int e;

	v = add(t, TRK_HOST, 0, 0, tid, t0, t1, &e);
	if (!v)
		return drop(t, t0, 1, e);
	v->name = name;
	v->kind = py ? EV_PY : EV_NATIVE;
	v->arg = bucket_mask;
	t->nev++;
	return 0;
}

int pt_trace__step(struct pt_trace *t, const struct pt_step *s)
{
	struct step_aux *a;
	struct ev *v;
	int e;

	v = add(t, TRK_STEPS, 0, 0, s->tid, s->t_start, s->t_end, &e);
	if (!v)
		return drop(t, s->t_start, 1, e);
	if (grow((void **)&t->aux, &t->caux, t->naux, sizeof(*t->aux), 0))
		return drop(t, s->t_start, 1, -ENOMEM);
	if (t->nbuckets) {
		uint64_t *b = t->bns;

		if (t->cbns < t->caux) {
			b = realloc(t->bns, t->caux * t->nbuckets * sizeof(*b));
			if (!b)
				return drop(t, s->t_start, 1, -ENOMEM);
			t->bns = b;
			t->cbns = t->caux;
		}
		if (s->bucket_ns)
			memcpy(b + t->naux * t->nbuckets, s->bucket_ns, t->nbuckets * sizeof(*b));
		else
			memset(b + t->naux * t->nbuckets, 0, t->nbuckets * sizeof(*b));
	}
	a = &t->aux[t->naux];
	a->index = s->index;
	a->other_ns = s->other_ns;
	a->vmask = s->vmask;
	memcpy(a->val, s->val, sizeof(a->val));
	v->kind = EV_STEP;
	v->arg = t->naux++;
	t->nev++;
	return 0;
}

static uint64_t corr_key(uint32_t proc, uint32_t c)
{
	return (uint64_t)proc << 32 | c;
}

/* A kept event of process proc with correlation id c at one end of a
 * launch: reserve the arrow once both ends are there. */
static void note_corr(struct pt_trace *t, uint32_t proc, uint32_t c, uint32_t end, uint64_t ts)
{
	uint32_t *st;

	if (!c)
		return;
	st = map_put(&t->corr_map, corr_key(proc, c), 0);
	if (!st)
		return; /* no arrow for it: the slices are there */
	if (*st & end)
		return;
	*st |= end;
	if ((*st & (CF_API | CF_WORK)) != (CF_API | CF_WORK))
		return;
	if (used(t) + 2 > t->max && !late_room(t, ts, 2)) {
		drop(t, ts, 2, 0);
		return;
	}
	*st |= CF_FLOW;
	t->nflows++;
}

int pt_trace__api(struct pt_trace *t, const struct pt_gpu_rec *g, uint32_t pid)
{
	struct ev *v;
	long p, k;
	int e;

	if (g->kind != PT_GPU_API)
		return 0;
	p = proc_idx(t, pid);
	if (p < 0)
		return drop(t, g->start_ns, 1, (int)p);
	if (pid) {
		/* the thread's process, unless it was named with one */
		k = thr_idx(t, g->api.tid);
		if (k < 0)
			return drop(t, g->start_ns, 1, (int)k);
		if (!t->thr[k].proc)
			t->thr[k].proc = (uint32_t)p + 1;
	}
	v = add(t, TRK_API, (uint32_t)p, 0, g->api.tid, g->start_ns, g->end_ns, &e);
	if (!v)
		return drop(t, g->start_ns, 1, e);
	v->kind = EV_API;
	v->sub = g->api.driver;
	v->arg = g->api.cbid;
	v->corr = g->correlation_id;
	t->nev++;
	note_corr(t, (uint32_t)p, g->correlation_id, CF_API, g->start_ns);
	return 0;
}

int pt_trace__gpu(struct pt_trace *t, const struct pt_gpu_rec *g, uint32_t pid)
{
	uint32_t dev, stream;
	struct ev *v;
	long p;
	int e;

	switch (g->kind) {
	case PT_GPU_API:
		return pt_trace__api(t, g, pid);
	case PT_GPU_KERNEL:
		dev = g->kernel.device_id;
		stream = g->kernel.stream_id;
		break;
	case PT_GPU_MEMCPY:
		dev = g->memcpy.device_id;
		stream = g->memcpy.stream_id;
		break;
	case PT_GPU_MEMSET:
		dev = g->memset.device_id;
		stream = g->memset.stream_id;
		break;
	default:
		return 0;
	}
	p = proc_idx(t, pid);
	if (p < 0)
		return drop(t, g->start_ns, 1, (int)p);
	v = add(t, TRK_GPU, (uint32_t)p, dev, stream, g->start_ns, g->end_ns, &e);
	if (!v)
		return drop(t, g->start_ns, 1, e);
	v->corr = g->correlation_id;
	switch (g->kind) {
	case PT_GPU_KERNEL:
		v->kind = EV_KERNEL;
		v->name = g->kernel.name;
		break;
	case PT_GPU_MEMCPY:
		v->kind = EV_MEMCPY;
		v->arg = g->memcpy.bytes;
		v->sub = g->memcpy.copy_kind;
		break;
	default:
		v->kind = EV_MEMSET;
		v->arg = g->memset.bytes;
		break;
	}
	t->nev++;
	note_corr(t, (uint32_t)p, g->correlation_id, CF_WORK, g->start_ns);
	return 0;
}

int pt_trace__thread_name(struct pt_trace *t, uint32_t tid, uint32_t pid, const char *name)
{
	long p = pid ? proc_idx(t, pid) : 0;
	long k = p < 0 ? p : thr_idx(t, tid);
	char *s;

	if (k < 0)
		return (int)k;
	s = strdup(name ? name : "");
	if (!s)
		return -ENOMEM;
	free(t->thr[k].name);
	t->thr[k].name = s;
	if (pid)
		t->thr[k].proc = (uint32_t)p + 1;
	return 0;
}

bool pt_trace__has_thread_name(const struct pt_trace *t, uint32_t tid)
{
	uint32_t *v = map_get(&t->name_map, tid);

	return v && t->thr[*v].name;
}

/* ---- stats ---- */

/* Whether track i is the first of its GPU (process, device). */
static bool first_of_gpu(const struct pt_trace *t, size_t i)
{
	const struct track *k = &t->trk[i];

	if (k->cls != TRK_GPU)
		return false;
	for (size_t j = 0; j < i; j++)
		if (t->trk[j].cls == TRK_GPU && t->trk[j].proc == k->proc &&
		    t->trk[j].dev == k->dev)
			return false;
	return true;
}

/* GPU pseudo processes: one per (process, device). */
static size_t ngpus(const struct pt_trace *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->ntrk; i++)
		n += first_of_gpu(t, i);
	return n;
}

/* Host processes as the write will have them if its procs are the pids
 * that came here (pid 0 stands for procs[0]). */
static size_t nhosts(const struct pt_trace *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].pid != 0;
	return n ? n : 1;
}

/* The window: leave out what started at or after the earliest dropped
 * event (late_room), arrows included when one end goes. Idempotent. */
static void window_cut(struct pt_trace *t)
{
	size_t k = 0;

	if (!t->win)
		return;
	for (size_t i = 0; i < t->nev; i++) {
		struct ev *e = &t->ev[i];
		uint32_t *st;

		if (e->ts < t->win_ts) {
			t->ev[k++] = *e;
			continue;
		}
		t->dropped++;
		st = e->corr ? map_get(&t->corr_map, corr_key(e->proc, e->corr)) : NULL;
		if (st && (*st & CF_FLOW)) {
			*st &= ~CF_FLOW;
			t->nflows--;
			t->dropped += 2;
		}
	}
	t->nev = k;
}

void pt_trace__stats(struct pt_trace *t, struct pt_trace_stats *st)
{
	uint64_t n;

	memset(st, 0, sizeof(*st));
	if (!t)
		return;
	window_cut(t);
	st->window_end_ns = t->win ? t->win_ts : 0;
	st->kept = used(t);
	st->flows = t->nflows;
	st->dropped = t->dropped;
	st->max_events = t->max;
	st->truncated = t->dropped > 0;
	/* process_name of each host process and of each GPU, with
	 * process_sort_index when several host processes, thread_name per
	 * track, the truncation marker */
	n = nhosts(t) + ngpus(t);
	st->events = st->kept + n + (nhosts(t) > 1 ? n : 0) + t->ntrk + st->truncated;
}

/* ---- writing ---- */

struct cbid_name {
	uint32_t cbid;
	const char *name;
};

/*
 * CUPTI callback ids of the calls the shim traces (shim/inject.c), from
 * cupti_runtime_cbid.h and cupti_driver_cbid.h (CUDA 13.0; ids are never
 * reused). Runtime names without their _vNNNN suffix.
 */
/* clang-format off */
static const struct cbid_name rt_names[] = {
	{ 31, "cudaMemcpy" }, { 32, "cudaMemcpy2D" }, { 33, "cudaMemcpyToArray" },
	{ 34, "cudaMemcpy2DToArray" }, { 35, "cudaMemcpyFromArray" },
	{ 36, "cudaMemcpy2DFromArray" }, { 39, "cudaMemcpyToSymbol" },
	{ 40, "cudaMemcpyFromSymbol" }, { 41, "cudaMemcpyAsync" },
	{ 42, "cudaMemcpyToArrayAsync" }, { 43, "cudaMemcpyFromArrayAsync" },
	{ 44, "cudaMemcpy2DAsync" }, { 45, "cudaMemcpy2DToArrayAsync" },
	{ 46, "cudaMemcpy2DFromArrayAsync" }, { 47, "cudaMemcpyToSymbolAsync" },
	{ 48, "cudaMemcpyFromSymbolAsync" }, { 49, "cudaMemset" }, { 50, "cudaMemset2D" },
	{ 51, "cudaMemsetAsync" }, { 52, "cudaMemset2DAsync" }, { 126, "cudaThreadSynchronize" },
	{ 131, "cudaStreamSynchronize" }, { 137, "cudaEventSynchronize" },
	{ 142, "cudaMemset3D" }, { 143, "cudaMemset3DAsync" }, { 144, "cudaMemcpy3D" },
	{ 145, "cudaMemcpy3DAsync" }, { 147, "cudaStreamWaitEvent" }, { 160, "cudaMemcpyPeer" },
	{ 161, "cudaMemcpyPeerAsync" }, { 162, "cudaMemcpy3DPeer" },
	{ 163, "cudaMemcpy3DPeerAsync" }, { 165, "cudaDeviceSynchronize" },
	{ 211, "cudaLaunchKernel" }, { 214, "cudaLaunchKernel_ptsz" }, { 215, "cudaMemcpy_ptds" },
	{ 216, "cudaMemcpy2D_ptds" }, { 217, "cudaMemcpyToArray_ptds" },
	{ 218, "cudaMemcpy2DToArray_ptds" }, { 219, "cudaMemcpyFromArray_ptds" },
	{ 220, "cudaMemcpy2DFromArray_ptds" }, { 223, "cudaMemcpyToSymbol_ptds" },
	{ 224, "cudaMemcpyFromSymbol_ptds" }, { 225, "cudaMemcpyAsync_ptsz" },
	{ 226, "cudaMemcpyToArrayAsync_ptsz" }, { 227, "cudaMemcpyFromArrayAsync_ptsz" },
	{ 228, "cudaMemcpy2DAsync_ptsz" }, { 229, "cudaMemcpy2DToArrayAsync_ptsz" },
	{ 230, "cudaMemcpy2DFromArrayAsync_ptsz" }, { 231, "cudaMemcpyToSymbolAsync_ptsz" },
	{ 232, "cudaMemcpyFromSymbolAsync_ptsz" }, { 233, "cudaMemset_ptds" },
	{ 234, "cudaMemset2D_ptds" }, { 235, "cudaMemsetAsync_ptsz" },
	{ 236, "cudaMemset2DAsync_ptsz" }, { 239, "cudaStreamSynchronize_ptsz" },
	{ 243, "cudaMemset3D_ptds" }, { 244, "cudaMemset3DAsync_ptsz" },
	{ 245, "cudaMemcpy3D_ptds" }, { 246, "cudaMemcpy3DAsync_ptsz" },
	{ 247, "cudaStreamWaitEvent_ptsz" }, { 249, "cudaMemcpy3DPeer_ptds" },
	{ 250, "cudaMemcpy3DPeerAsync_ptsz" }, { 269, "cudaLaunchCooperativeKernel" },
	{ 270, "cudaLaunchCooperativeKernel_ptsz" },
	{ 272, "cudaLaunchCooperativeKernelMultiDevice" }, { 311, "cudaGraphLaunch" },
	{ 312, "cudaGraphLaunch_ptsz" }, { 430, "cudaLaunchKernelExC" },
	{ 431, "cudaLaunchKernelExC_ptsz" }, { 482, "cudaMemcpyBatchAsync" },
	{ 483, "cudaMemcpyBatchAsync_ptsz" }, { 484, "cudaMemcpy3DBatchAsync" },
	{ 485, "cudaMemcpy3DBatchAsync_ptsz" }, { 509, "cudaMemcpyBatchAsync" },
	{ 510, "cudaMemcpyBatchAsync_ptsz" }, { 511, "cudaMemcpy3DBatchAsync" },
	{ 512, "cudaMemcpy3DBatchAsync_ptsz" },
};
/* clang-format on */
/* clang-format off */
static const struct cbid_name drv_names[] = {
	{ 17, "cuCtxSynchronize" }, { 115, "cuLaunch" }, { 116, "cuLaunchGrid" },
	{ 117, "cuLaunchGridAsync" }, { 121, "cuEventSynchronize" },
	{ 126, "cuStreamSynchronize" }, { 216, "cuMemsetD8Async" }, { 218, "cuMemsetD16Async" },
	{ 220, "cuMemsetD32Async" }, { 222, "cuMemsetD2D8Async" }, { 224, "cuMemsetD2D16Async" },
	{ 226, "cuMemsetD2D32Async" }, { 249, "cuMemsetD8_v2" }, { 250, "cuMemsetD16_v2" },
	{ 251, "cuMemsetD32_v2" }, { 252, "cuMemsetD2D8_v2" }, { 253, "cuMemsetD2D16_v2" },
	{ 254, "cuMemsetD2D32_v2" }, { 276, "cuMemcpyHtoD_v2" }, { 277, "cuMemcpyHtoDAsync_v2" },
	{ 278, "cuMemcpyDtoH_v2" }, { 279, "cuMemcpyDtoHAsync_v2" }, { 280, "cuMemcpyDtoD_v2" },
	{ 281, "cuMemcpyDtoDAsync_v2" }, { 287, "cuMemcpy2D_v2" },
	{ 288, "cuMemcpy2DUnaligned_v2" }, { 289, "cuMemcpy2DAsync_v2" },
	{ 290, "cuMemcpy3D_v2" }, { 291, "cuMemcpy3DAsync_v2" }, { 295, "cuStreamWaitEvent" },
	{ 305, "cuMemcpy" }, { 306, "cuMemcpyAsync" }, { 307, "cuLaunchKernel" },
	{ 318, "cuMemcpyPeer" }, { 319, "cuMemcpyPeerAsync" }, { 320, "cuMemcpy3DPeer" },
	{ 321, "cuMemcpy3DPeerAsync" }, { 397, "cuMemcpyHtoD_v2_ptds" },
	{ 398, "cuMemcpyDtoH_v2_ptds" }, { 399, "cuMemcpyDtoD_v2_ptds" },
	{ 405, "cuMemcpy2D_v2_ptds" }, { 406, "cuMemcpy2DUnaligned_v2_ptds" },
	{ 407, "cuMemcpy3D_v2_ptds" }, { 408, "cuMemcpy_ptds" }, { 409, "cuMemcpyPeer_ptds" },
	{ 410, "cuMemcpy3DPeer_ptds" }, { 411, "cuMemsetD8_v2_ptds" },
	{ 412, "cuMemsetD16_v2_ptds" }, { 413, "cuMemsetD32_v2_ptds" },
	{ 414, "cuMemsetD2D8_v2_ptds" }, { 415, "cuMemsetD2D16_v2_ptds" },
	{ 416, "cuMemsetD2D32_v2_ptds" }, { 418, "cuMemcpyAsync_ptsz" },
	{ 421, "cuMemcpyHtoDAsync_v2_ptsz" }, { 422, "cuMemcpyDtoHAsync_v2_ptsz" },
	{ 423, "cuMemcpyDtoDAsync_v2_ptsz" }, { 424, "cuMemcpy2DAsync_v2_ptsz" },
	{ 425, "cuMemcpy3DAsync_v2_ptsz" }, { 426, "cuMemcpyPeerAsync_ptsz" },
	{ 427, "cuMemcpy3DPeerAsync_ptsz" }, { 428, "cuMemsetD8Async_ptsz" },
	{ 429, "cuMemsetD16Async_ptsz" }, { 430, "cuMemsetD32Async_ptsz" },
	{ 431, "cuMemsetD2D8Async_ptsz" }, { 432, "cuMemsetD2D16Async_ptsz" },
	{ 433, "cuMemsetD2D32Async_ptsz" }, { 436, "cuStreamWaitEvent_ptsz" },
	{ 440, "cuStreamSynchronize_ptsz" }, { 442, "cuLaunchKernel_ptsz" },
	{ 477, "cuLaunchCooperativeKernel" }, { 478, "cuLaunchCooperativeKernel_ptsz" },
	{ 514, "cuGraphLaunch" }, { 515, "cuGraphLaunch_ptsz" }, { 652, "cuLaunchKernelEx" },
	{ 653, "cuLaunchKernelEx_ptsz" }, { 776, "cuMemcpyBatchAsync" },
	{ 777, "cuMemcpyBatchAsync_ptsz" }, { 778, "cuMemcpy3DBatchAsync" },
	{ 779, "cuMemcpy3DBatchAsync_ptsz" }, { 796, "cuMemcpyBatchAsync_v2" },
	{ 797, "cuMemcpyBatchAsync_v2_ptsz" }, { 798, "cuMemcpy3DBatchAsync_v2" },
	{ 799, "cuMemcpy3DBatchAsync_v2_ptsz" }, { 800, "cuCtxSynchronize_v2" },
};
/* clang-format on */

static bool cbid_before(const void *name, const void *cbid)
{
	return ((const struct cbid_name *)name)->cbid < *(const uint32_t *)cbid;
}

static const char *cbid_name(bool driver, uint32_t cbid)
{
	const struct cbid_name *v = driver ? drv_names : rt_names;
	size_t n = driver ? ARRAY_SIZE(drv_names) : ARRAY_SIZE(rt_names);
	size_t lo = pt_lower_bound(v, n, sizeof(*v), &cbid, cbid_before);

	return lo < n && v[lo].cbid == cbid ? v[lo].name : NULL;
}

/* CUpti_ActivityMemcpyKind */
static const char *copy_kind(uint8_t k)
{
	static const char *const names[] = { "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					     "AtoD",	"DtoA", "DtoD", "HtoH", "PtoP" };

	return k < ARRAY_SIZE(names) ? names[k] : "unknown";
}

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* s as the inside of a JSON string: escapes, and U+FFFD for each byte
 * that is not valid UTF-8 (names come from the target: anything goes). */
static void put_esc(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n) {
		unsigned char c = *p;
		size_t k;

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			const unsigned char *q = p;

			while (n && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\') {
				q++;
				n--;
			}
			fwrite(p, 1, (size_t)(q - p), f);
			p = q;
			continue;
		}
		if (c < 0x80) {
			switch (c) {
			case '"':
				fputs("\\\"", f);
				break;
			case '\\':
				fputs("\\\\", f);
				break;
			case '\n':
				fputs("\\n", f);
				break;
			case '\r':
				fputs("\\r", f);
				break;
			case '\t':
				fputs("\\t", f);
				break;
			case '\b':
				fputs("\\b", f);
				break;
			case '\f':
				fputs("\\f", f);
				break;
			default:
				fprintf(f, "\\u%04x", c);
				break;
			}
			p++;
			n--;
			continue;
		}
		k = utf8_len(p, n);
		if (!k) {
			fputs("\\ufffd", f);
			k = 1;
		} else {
			fwrite(p, 1, k, f);
		}
		p += k;
		n -= k;
	}
}

static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	put_esc(f, s ? s : "");
	fputc('"', f);
}

/* ns as microseconds with 3 decimals: exact, no floating point. */
static void put_us(FILE *f, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	fprintf(f, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned int)(a % 1000));
}

static void put_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.17g", v);
	else
		fputs("null", f);
}

struct wctx {
	struct pt_trace *t;
	FILE *f;
	const struct pt_trace_write_opts *o;
	bool first;
	uint32_t *tpid;	 /* pid in the file of each track */
	uint32_t *hosts; /* host processes: procs, then pids not listed */
	size_t nhosts;
	struct map knames; /* kernel name pointer -> index into dem */
	char **dem;	   /* demangled, NULL: not a C++ name */
	size_t ndem, cdem;
};

/* The real pid of process index p (pid 0: procs[0]). */
static uint32_t real_pid(const struct wctx *w, uint32_t p)
{
	uint32_t pid = w->t->procs[p].pid;

	return pid ? pid : (uint32_t)w->o->procs[0].pid;
}

static uint32_t track_pid(const struct wctx *w, const struct track *k)
{
	const struct pt_trace *t = w->t;
	uint32_t *v;

	if (k->cls == TRK_GPU)
		return PT_TRACE_GPU_PID + t->procs[k->proc].gslot * 256 + k->dev;
	v = map_get(&t->name_map, k->id);
	if (!v || !t->thr[*v].proc)
		return (uint32_t)w->o->procs[0].pid;
	return real_pid(w, t->thr[*v].proc - 1);
}

static uint32_t track_tid(const struct track *k)
{
	switch (k->cls) {
	case TRK_STEPS:
		return PT_TRACE_STEPS_TID + k->id;
	case TRK_API:
		return PT_TRACE_API_TID + k->id;
	default:
		return k->id; /* the tid, or the stream */
	}
}

/* Start an event: `{"ph":"X","pid":..,"tid":..` with the separator. */
static void ev_open(struct wctx *w, const char *ph, uint32_t track)
{
	fprintf(w->f, "%s\n{\"ph\":\"%s\",\"pid\":%u,\"tid\":%u", w->first ? "" : ",", ph,
		w->tpid[track], track_tid(&w->t->trk[track]));
	w->first = false;
}

static const char *host_name(const struct pt_trace *t, uint32_t tid)
{
	uint32_t *v = map_get(&t->name_map, tid);

	return v && t->thr[*v].name && t->thr[*v].name[0] ? t->thr[*v].name : NULL;
}

static size_t host_pos(const struct wctx *w, uint32_t pid)
{
	size_t i = 0;

	while (i < w->nhosts && w->hosts[i] != pid)
		i++;
	return i;
}

/* The host processes in file order: procs as given, then the pids that
 * came to pt_trace without being listed (once each). 0 or -ENOMEM. */
static int list_hosts(struct wctx *w)
{
	const struct pt_trace *t = w->t;

	w->hosts = calloc(w->o->nprocs + t->nprocs, sizeof(*w->hosts));
	if (!w->hosts)
		return -ENOMEM;
	for (size_t i = 0; i < w->o->nprocs; i++) {
		uint32_t pid = (uint32_t)w->o->procs[i].pid;

		if (host_pos(w, pid) == w->nhosts)
			w->hosts[w->nhosts++] = pid;
	}
	for (size_t i = 0; i < t->nprocs; i++) {
		uint32_t pid = t->procs[i].pid;

		if (pid && host_pos(w, pid) == w->nhosts)
			w->hosts[w->nhosts++] = pid;
	}
	return 0;
}

/* Each kernel name demangled once: the ring hands one pointer per name.
 * 0 or -ENOMEM. */
static int demangle_kernels(struct wctx *w)
{
	const struct pt_trace *t = w->t;

	for (size_t i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];

		if (e->kind != EV_KERNEL || !e->name || map_get(&w->knames, (uintptr_t)e->name))
			continue;
		if (grow((void **)&w->dem, &w->cdem, w->ndem, sizeof(*w->dem), 0) ||
		    !map_put(&w->knames, (uintptr_t)e->name, (uint32_t)w->ndem))
			return -ENOMEM;
		w->dem[w->ndem++] = pt_demangle(e->name);
	}
	return 0;
}

/* The name trace.json shows for kernel event e, and its mangled name when
 * that differs (else NULL). */
static const char *kernel_name(const struct wctx *w, const struct ev *e, const char **mangled)
{
	uint32_t *v = e->name ? map_get(&w->knames, (uintptr_t)e->name) : NULL;

	*mangled = NULL;
	if (!e->name)
		return "[unnamed kernel]";
	if (!v || !w->dem[*v])
		return e->name;
	*mangled = e->name;
	return w->dem[*v];
}

static void put_proc_meta(struct wctx *w, uint32_t pid, const char *name, int rank, long sort_index)
{
	FILE *f = w->f;

	fprintf(f, "%s\n{\"ph\":\"M\",\"pid\":%u,\"name\":\"process_name\",\"args\":{\"name\":\"",
		w->first ? "" : ",", pid);
	put_esc(f, name);
	if (rank >= 0)
		fprintf(f, " rank %d", rank);
	fputs("\"}}", f);
	w->first = false;
	if (sort_index >= 0)
		fprintf(f,
			",\n{\"ph\":\"M\",\"pid\":%u,\"name\":\"process_sort_index\","
			"\"args\":{\"sort_index\":%ld}}",
			pid, sort_index);
}

static void put_meta(struct wctx *w)
{
	struct pt_trace *t = w->t;
	bool sorted = w->nhosts > 1, several_gpus = t->ngslots > 1;
	FILE *f = w->f;
	char name[64];

	for (size_t i = 0; i < w->nhosts; i++) {
		const struct pt_trace_proc *p = NULL;

		for (size_t j = 0; j < w->o->nprocs && !p; j++)
			if ((uint32_t)w->o->procs[j].pid == w->hosts[i])
				p = &w->o->procs[j];
		put_proc_meta(w, w->hosts[i], p && p->name ? p->name : "process", p ? p->rank : -1,
			      sorted ? (long)i : -1);
	}
	/* each process's GPUs after all host processes, in host order */
	for (size_t i = 0; i < t->ntrk; i++) {
		const struct track *k = &t->trk[i];
		uint32_t pid;

		if (!first_of_gpu(t, i))
			continue;
		pid = real_pid(w, k->proc);
		if (several_gpus)
			snprintf(name, sizeof(name), "GPU %u (pid %u)", k->dev, pid);
		else
			snprintf(name, sizeof(name), "GPU %u", k->dev);
		put_proc_meta(w, w->tpid[i], name, -1,
			      sorted ? (long)(w->nhosts + host_pos(w, pid) * 256 + k->dev) : -1);
	}
	for (size_t i = 0; i < t->ntrk; i++) {
		const struct track *k = &t->trk[i];
		const char *hn = k->cls != TRK_GPU ? host_name(t, k->id) : NULL;

		ev_open(w, "M", (uint32_t)i);
		fputs(",\"name\":\"thread_name\",\"args\":{\"name\":\"", f);
		if (k->cls == TRK_GPU)
			fprintf(f, "stream %u", k->id);
		else if (hn)
			put_esc(f, hn);
		else
			fprintf(f, "thread %u", k->id);
		if (k->cls == TRK_STEPS)
			fputs(" steps", f);
		else if (k->cls == TRK_API)
			fputs(" CUDA API", f);
		fputs("\"}}", f);
	}
}

static void put_buckets_arg(struct wctx *w, uint64_t mask)
{
	bool first = true;

	fputs(",\"args\":{\"buckets\":[", w->f);
	for (size_t b = 0; b < w->t->nbuckets && b < 64; b++) {
		if (!(mask >> b & 1))
			continue;
		if (!first)
			fputc(',', w->f);
		first = false;
		if (w->o->bucket_names && w->o->bucket_names[b])
			put_str(w->f, w->o->bucket_names[b]);
		else
			fprintf(w->f, "\"bucket %zu\"", b);
	}
	fputs("]}", w->f);
}

static void put_step_args(struct wctx *w, const struct ev *e)
{
	const struct step_aux *a = &w->t->aux[e->arg];
	const uint64_t *bns = w->t->bns + e->arg * w->t->nbuckets;
	FILE *f = w->f;

	fprintf(f, ",\"args\":{\"index\":%" PRIu64 ",\"bucket_ns\":{", a->index);
	for (size_t b = 0; b < w->t->nbuckets; b++) {
		if (w->o->bucket_names && w->o->bucket_names[b])
			put_str(f, w->o->bucket_names[b]);
		else
			fprintf(f, "\"bucket %zu\"", b);
		fprintf(f, ":%" PRIu64 ",", bns[b]);
	}
	fprintf(f, "\"step.other\":%" PRIu64 "}", a->other_ns);
	for (unsigned int r = 0; r < 3; r++) {
		if (!(a->vmask >> r & 1))
			continue;
		fprintf(f, ",\"%s\":", pt_vexpr__role_name((enum pt_vrole)r));
		put_num(f, a->val[r]);
	}
	fputs("}", f);
}

/* The flow end this event carries, if any: 's' (launch), 'f' (work), 0. */
static char flow_end(struct pt_trace *t, const struct ev *e)
{
	uint32_t *st;
	uint32_t bit;

	if (!e->corr || (e->kind != EV_API && e->kind != EV_KERNEL && e->kind != EV_MEMCPY &&
			 e->kind != EV_MEMSET))
		return 0;
	st = map_get(&t->corr_map, corr_key(e->proc, e->corr));
	if (!st || !(*st & CF_FLOW))
		return 0;
	bit = e->kind == EV_API ? CF_S_DONE : CF_F_DONE;
	if (*st & bit)
		return 0; /* the earliest end only: events are sorted by time */
	*st |= bit;
	return e->kind == EV_API ? 's' : 'f';
}

static void put_event(struct wctx *w, const struct ev *e)
{
	const struct track *k = &w->t->trk[e->track];
	int64_t ts = (int64_t)(e->ts - w->o->t0);
	FILE *f = w->f;
	char fe;

	ev_open(w, "X", e->track);
	fputs(",\"ts\":", f);
	put_us(f, ts);
	fputs(",\"dur\":", f);
	put_us(f, (int64_t)e->dur);
	fputs(",\"name\":", f);
	switch (e->kind) {
	case EV_NATIVE:
	case EV_PY:
		put_str(f, e->name);
		fputs(e->kind == EV_PY ? ",\"cat\":\"python\"" : ",\"cat\":\"native\"", f);
		if (e->arg)
			put_buckets_arg(w, e->arg);
		break;
	case EV_STEP:
		fprintf(f, "\"step %" PRIu64 "\",\"cat\":\"step\"", w->t->aux[e->arg].index);
		put_step_args(w, e);
		break;
	case EV_KERNEL: {
		const char *mangled;

		put_str(f, kernel_name(w, e, &mangled));
		fprintf(f,
			",\"cat\":\"kernel\",\"args\":{\"correlation\":%u,\"device\":%u,"
			"\"stream\":%u",
			e->corr, k->dev, k->id);
		if (mangled) {
			fputs(",\"mangled\":", f);
			put_str(f, mangled);
		}
		fputs("}", f);
		break;
	}
	case EV_MEMCPY:
		fprintf(f,
			"\"memcpy %s\",\"cat\":\"memcpy\",\"args\":{\"correlation\":%u,"
			"\"bytes\":%" PRIu64 ",\"kind\":\"%s\",\"device\":%u,\"stream\":%u}",
			copy_kind(e->sub), e->corr, e->arg, copy_kind(e->sub), k->dev, k->id);
		break;
	case EV_MEMSET:
		fprintf(f,
			"\"memset\",\"cat\":\"memset\",\"args\":{\"correlation\":%u,"
			"\"bytes\":%" PRIu64 ",\"device\":%u,\"stream\":%u}",
			e->corr, e->arg, k->dev, k->id);
		break;
	case EV_API: {
		const char *n = cbid_name(e->sub, (uint32_t)e->arg);

		if (n)
			fprintf(f, "\"%s\"", n);
		else
			fprintf(f, "\"cuda %s cbid %" PRIu64 "\"", e->sub ? "driver" : "runtime",
				e->arg);
		fprintf(f,
			",\"cat\":\"cuda_api\",\"args\":{\"correlation\":%u,\"cbid\":%" PRIu64
			",\"api\":\"%s\"}",
			e->corr, e->arg, e->sub ? "driver" : "runtime");
		break;
	}
	}
	fputs("}", f);
	fe = flow_end(w->t, e);
	if (!fe)
		return;
	/* s at the launch call's start, bound to it; f at the work's start,
	 * bound to the slice enclosing it (bp e): the work itself */
	ev_open(w, fe == 's' ? "s" : "f", e->track);
	fputs(",\"ts\":", f);
	put_us(f, ts);
	/* ids unique across processes, the correlation id for the first */
	fprintf(f, ",\"id\":%" PRIu64 ",\"name\":\"launch\",\"cat\":\"cuda_flow\"%s}",
		corr_key(e->proc, e->corr), fe == 'f' ? ",\"bp\":\"e\"" : "");
}

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1; /* the enclosing slice first */
	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static void free_wctx(struct wctx *w)
{
	free(w->tpid);
	free(w->hosts);
	map_free(&w->knames);
	for (size_t i = 0; i < w->ndem; i++)
		free(w->dem[i]);
	free(w->dem);
}

int pt_trace__write(struct pt_trace *t, FILE *f, const struct pt_trace_write_opts *o)
{
	struct wctx w = { .t = t, .f = f, .o = o, .first = true };
	const struct pt_trace_proc *main_proc;
	struct pt_trace_stats st;

	if (!t || !f || !o || !o->procs || !o->nprocs)
		return -EINVAL;
	main_proc = &o->procs[0];
	w.tpid = calloc(t->ntrk + 1, sizeof(*w.tpid));
	if (!w.tpid || list_hosts(&w) || demangle_kernels(&w)) {
		free_wctx(&w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->ntrk; i++)
		w.tpid[i] = track_pid(&w, &t->trk[i]);
	pt_trace__stats(t, &st);
	if (t->nev)
		qsort(t->ev, t->nev, sizeof(*t->ev), ev_cmp);
	for (size_t i = 0; i < t->corr_map.cap; i++)
		t->corr_map.v[i] &= ~(CF_S_DONE | CF_F_DONE);
	fputs("{\"traceEvents\":[", f);
	put_meta(&w);
	for (size_t i = 0; i < t->nev; i++)
		put_event(&w, &t->ev[i]);
	if (st.truncated) {
		/* a global instant where the trace stops being complete */
		fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"g\",\"pid\":%d,\"tid\":%d,\"ts\":",
			main_proc->pid, main_proc->pid);
		put_us(f, (int64_t)((t->win ? t->win_ts : t->first_drop_ts) - o->t0));
		fprintf(f,
			",\"name\":\"proftrace: trace cut at %" PRIu64 " events "
			"(--trace-max-events), %" PRIu64 " dropped from here on\","
			"\"cat\":\"proftrace\"}",
			st.max_events, st.dropped);
	}
	fputs("\n],\n\"displayTimeUnit\":\"ms\",\n"
	      "\"otherData\":{\"tool\":\"proftrace\",\"version\":",
	      f);
	put_str(f, o->version ? o->version : "");
	fprintf(f, ",\"pid\":%d,\"comm\":", main_proc->pid);
	put_str(f, main_proc->name);
	fprintf(f,
		",\"t0_mono_ns\":%" PRIu64 ",\"start_unix_ns\":%" PRIu64
		",\"time_unit\":\"ts and dur in microseconds since proftrace attached "
		"(start_unix_ns)\",\"max_events\":%" PRIu64 ",\"events\":%" PRIu64
		",\"flows\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"truncated\":%s",
		o->t0, o->start_unix_ns, st.max_events, st.events, st.flows, st.dropped,
		st.truncated ? "true" : "false");
	if (st.truncated && st.window_end_ns) {
		fprintf(f, ",\"window_end_us\":");
		put_us(f, (int64_t)(st.window_end_ns - o->t0));
		fprintf(f,
			",\"note\":\"trace cut at --trace-max-events %" PRIu64 ": every "
			"event that started before window_end_us is kept, of every kind, "
			"%" PRIu64 " from then on left out; raise --trace-max-events for "
			"the whole run\"",
			st.max_events, st.dropped);
	} else if (st.truncated) {
		fprintf(f,
			",\"note\":\"trace cut at --trace-max-events %" PRIu64 ": every "
			"slice kept, %" PRIu64 " arrow events left out; raise "
			"--trace-max-events for the whole run\"",
			st.max_events, st.dropped);
	}
	fputs("}}\n", f);
	free_wctx(&w);
	if (fflush(f) == EOF || ferror(f))
		return -EIO;
	return 0;
}
