// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_gpu (aggregate/gpu.c), the end-of-run GPU join
 * with its memory bound: GPU records come from the profiled process's
 * shared memory, so their times, correlation ids and order may be
 * anything. Each 8-byte op is a launch call, a kernel, a copy, a memset,
 * a counted step or a bucket call; the same ops go to a join bounded at
 * a few dozen records (so it folds all along) and to an unbounded one.
 * Checked: the bounded join never holds more than its bound and slack,
 * every record is counted once (held, late or not held), attribution
 * never exceeds the work, busy never exceeds the union of what was given
 * (a bit per time unit), and when nothing was late or dropped every
 * figure equals the unbounded join's, for input that could be real: one
 * launch call per correlation id, none after the work it launched (a
 * fold settles work without a held launch call by its own start, so a
 * launch call later than its work may come after that work was settled
 * as unmatched), none more than the shortest lag (LAG / 6) before it (a
 * launch call is freed a fold after its horizon passed it: work queued
 * longer may find it gone), every record given no more than that after
 * the latest time given before it (items and launch calls by start, steps
 * and bucket calls by end: the order of arrival), a thread's steps one after the other and its
 * bucket calls nested (they come from its call stack; overlapping ones would have the join pick
 * among the held ones). Build and run with `make fuzz`.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/gpu.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define BOUND 48
#define LAG 300u
#define SPAN (1u << 16) /* time units the ops can reach */

/* a C++ one too: the join demangles it and owns what it made */
static const char *const names[4] = { "k0", "k1", "_ZN2ns4gemmILi4EEEvPf", "[unnamed kernel]" };

struct ref {
	uint8_t any[SPAN / 8];
	uint64_t items, apis;
	uint32_t api_s[256];	 /* by correlation id; UINT32_MAX: none */
	uint32_t item_s[256];	 /* the earliest work of each id; UINT32_MAX: none */
	uint32_t item_last[256]; /* the latest */
	struct hiv {
		uint32_t s, e, tid;
		bool step;
	} host[1024];
	size_t nhost;
	uint32_t latest; /* the latest time given so far */
	bool real;
};

/* A record whose time is t arrives now. */
static void arrive(struct ref *r, uint32_t t)
{
	if (t + LAG / 6 < r->latest)
		r->real = false;
	if (t > r->latest)
		r->latest = t;
}

/* Steps of one thread disjoint, its bucket calls nested or disjoint. */
static bool host_real(const struct ref *r)
{
	for (size_t i = 0; i < r->nhost; i++) {
		for (size_t j = i + 1; j < r->nhost; j++) {
			const struct hiv *a = &r->host[i], *b = &r->host[j];
			bool apart = a->e <= b->s || b->e <= a->s;
			bool nested =
				(a->s <= b->s && b->e <= a->e) || (b->s <= a->s && a->e <= b->e);

			if (a->tid != b->tid || a->step != b->step)
				continue;
			if (a->step ? !apart : !(apart || nested))
				return false;
		}
	}
	return true;
}

static void add_host(struct ref *r, uint32_t tid, uint32_t s, uint32_t e, bool step)
{
	if (r->nhost == sizeof(r->host) / sizeof(r->host[0])) {
		r->real = false; /* not checked: not compared */
		return;
	}
	r->host[r->nhost++] = (struct hiv){ .s = s, .e = e, .tid = tid, .step = step };
}

static void mark(uint8_t *bits, uint32_t s, uint32_t e)
{
	for (uint32_t t = s; t < e; t++)
		bits[t / 8] |= (uint8_t)(1u << (t % 8));
}

static uint64_t count(const uint8_t *bits)
{
	uint64_t n = 0;

	for (size_t i = 0; i < SPAN / 8; i++)
		n += (uint64_t)__builtin_popcount(bits[i]);
	return n;
}

static void both(struct pt_gpu *a, struct pt_gpu *b, const struct pt_gpu_rec *r)
{
	CHECK(pt_gpu__record(a, r) == 0 && pt_gpu__record(b, r) == 0);
}

static bool same_dist(const struct pt_dist *x, const struct pt_dist *y)
{
	return x->count == y->count && x->sum == y->sum && x->min == y->min && x->max == y->max &&
	       pt_dist__quantile(x, 0.5) == pt_dist__quantile(y, 0.5);
}

static void compare(const struct pt_gpu_result *x, const struct pt_gpu_result *y, size_t nb)
{
	CHECK(x->kernels == y->kernels && x->copies == y->copies && x->memsets == y->memsets);
	CHECK(x->api_calls == y->api_calls && x->copy_bytes == y->copy_bytes);
	CHECK(x->busy_ns == y->busy_ns && x->unmatched == y->unmatched);
	CHECK(x->outside_steps == y->outside_steps && x->steps == y->steps);
	CHECK(x->steps_with_gpu == y->steps_with_gpu && x->step_ns == y->step_ns);
	CHECK(x->step_busy_ns == y->step_busy_ns && x->step_items == y->step_items);
	CHECK(same_dist(&x->step_busy, &y->step_busy) && same_dist(&x->step_idle, &y->step_idle));
	CHECK(same_dist(&x->launch_delay, &y->launch_delay));
	CHECK(x->ndevices == y->ndevices && x->ntop == y->ntop);
	for (size_t i = 0; i < x->ndevices; i++)
		CHECK(x->devices[i].device == y->devices[i].device &&
		      x->devices[i].busy_ns == y->devices[i].busy_ns &&
		      x->devices[i].kernels == y->devices[i].kernels);
	for (size_t i = 0; i < x->ntop; i++)
		CHECK(!strcmp(x->top[i].name, y->top[i].name) &&
		      x->top[i].count == y->top[i].count &&
		      x->top[i].total_ns == y->top[i].total_ns);
	for (size_t i = 0; i < nb; i++)
		CHECK(x->buckets[i].kernels == y->buckets[i].kernels &&
		      x->buckets[i].gpu_ns == y->buckets[i].gpu_ns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ref R;
	struct pt_gpu *a = pt_gpu__new(3), *b = pt_gpu__new(3);
	const struct pt_gpu_result *x, *y;

	if (!a || !b)
		goto out;
	memset(&R, 0, sizeof(R));
	memset(R.api_s, 0xff, sizeof(R.api_s));
	memset(R.item_s, 0xff, sizeof(R.item_s));
	R.real = true;
	pt_gpu__set_max_held(a, BOUND);
	pt_gpu__set_fold_lag(a, LAG);
	for (size_t i = 0; i + 8 <= size; i += 8) {
		const uint8_t *o = data + i;
		uint32_t s = (uint32_t)o[1] | (uint32_t)o[2] << 8;
		uint32_t len = (uint32_t)o[3] | (uint32_t)(o[4] & 0x0f) << 8;
		uint32_t e = s + len < SPAN ? s + len : SPAN - 1;
		uint32_t tid = o[5] & 3, corr = o[6], dev = o[7] & 3;
		struct pt_gpu_rec r = { .correlation_id = corr, .start_ns = s, .end_ns = e };

		switch (o[0] % 6) {
		case 0:
			r.kind = PT_GPU_API;
			r.api.tid = tid;
			R.apis++;
			if (R.api_s[corr] != UINT32_MAX)
				R.real = false;
			R.api_s[corr] = s;
			arrive(&R, s);
			both(a, b, &r);
			break;
		case 1:
			r.kind = PT_GPU_KERNEL;
			r.kernel.device_id = dev;
			r.kernel.name = names[o[5] >> 6];
			goto item;
		case 2:
			r.kind = PT_GPU_MEMCPY;
			r.memcpy.device_id = dev;
			r.memcpy.bytes = len;
			goto item;
		case 3:
			r.kind = PT_GPU_MEMSET;
			r.memset.device_id = dev;
		item:
			R.items++;
			if (s < R.item_s[corr])
				R.item_s[corr] = s;
			if (s > R.item_last[corr])
				R.item_last[corr] = s;
			arrive(&R, s);
			mark(R.any, s, e);
			both(a, b, &r);
			break;
		case 4:
			CHECK(pt_gpu__step(a, tid, s, e) == 0 && pt_gpu__step(b, tid, s, e) == 0);
			add_host(&R, tid, s, e, true);
			arrive(&R, e);
			break;
		default:
			if (o[6] & 7) {
				add_host(&R, tid, s, e, false);
				arrive(&R, e);
			}
			CHECK(pt_gpu__bucket_call(a, tid, s, e, o[6] & 7) == 0 &&
			      pt_gpu__bucket_call(b, tid, s, e, o[6] & 7) == 0);
			break;
		}
		CHECK(pt_gpu__held(a) <= BOUND + BOUND / 8);
	}
	x = pt_gpu__join(a, 0, SPAN);
	y = pt_gpu__join(b, 0, SPAN);
	CHECK(x && y);
	/* every item counted once: held (and joined), late, or not held */
	CHECK(x->kernels + x->copies + x->memsets <= R.items);
	CHECK(x->kernels + x->copies + x->memsets + x->not_held >= R.items);
	CHECK(x->api_calls <= R.apis);
	CHECK(x->step_items + x->outside_steps + x->unmatched <=
	      x->kernels + x->copies + x->memsets);
	CHECK(x->busy_ns <= count(R.any) && x->step_busy_ns <= x->step_ns);
	for (size_t i = 0; i < x->ndevices; i++)
		CHECK(x->devices[i].busy_ns <= x->busy_ns);
	CHECK(y->busy_ns == count(R.any) && !y->late && !y->not_held && !y->folds);
	for (size_t c = 0; c < 256; c++)
		if (R.api_s[c] != UINT32_MAX && R.item_s[c] != UINT32_MAX &&
		    (R.api_s[c] > R.item_s[c] || R.item_last[c] - R.api_s[c] > LAG / 6))
			R.real = false;
	if (R.real && host_real(&R) && !x->late && !x->not_held)
		compare(x, y, 3);
out:
	pt_gpu__free(a);
	pt_gpu__free(b);
	return 0;
}
