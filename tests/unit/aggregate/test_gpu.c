// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_gpu: GPU records joined with host steps and bucket calls, on
 * synthetic records whose times are known to the ns, so every figure has
 * an exact expected value. Windows are half-open: [s, e).
 *
 * Empty arrays are NULL: the join must not hand them to qsort()
 * (undefined; the asan build aborts on it).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aggregate/gpu.h"

#define TA 10 /* thread ids */
#define TB 20

/* ---- records as the ring reader hands them over ---- */

static void add(struct pt_gpu *g, struct pt_gpu_rec r)
{
	assert_int_equal(pt_gpu__record(g, &r), 0);
}

static void kern(struct pt_gpu *g, uint32_t corr, uint32_t dev, const char *name, uint64_t s,
		 uint64_t e)
{
	struct pt_gpu_rec r = {
		.kind = PT_GPU_KERNEL, .correlation_id = corr, .start_ns = s, .end_ns = e
	};

	r.kernel.device_id = dev;
	r.kernel.name = name;
	add(g, r);
}

static void copy(struct pt_gpu *g, uint32_t corr, uint32_t dev, uint64_t bytes, uint64_t s,
		 uint64_t e)
{
	struct pt_gpu_rec r = {
		.kind = PT_GPU_MEMCPY, .correlation_id = corr, .start_ns = s, .end_ns = e
	};

	r.memcpy.device_id = dev;
	r.memcpy.bytes = bytes;
	r.memcpy.copy_kind = 1;
	add(g, r);
}

static void mset(struct pt_gpu *g, uint32_t corr, uint32_t dev, uint64_t s, uint64_t e)
{
	struct pt_gpu_rec r = {
		.kind = PT_GPU_MEMSET, .correlation_id = corr, .start_ns = s, .end_ns = e
	};

	r.memset.device_id = dev;
	r.memset.bytes = 64;
	add(g, r);
}

/* The launch call: only its thread and start matter to the join. */
static void api(struct pt_gpu *g, uint32_t corr, uint32_t tid, uint64_t s, bool driver)
{
	struct pt_gpu_rec r = {
		.kind = PT_GPU_API, .correlation_id = corr, .start_ns = s, .end_ns = s + 5
	};

	r.api.tid = tid;
	r.api.pid = TA;
	r.api.driver = driver;
	add(g, r);
}

static void sync_rec(struct pt_gpu *g, uint64_t s, uint64_t e)
{
	struct pt_gpu_rec r = { .kind = PT_GPU_SYNC, .start_ns = s, .end_ns = e };

	add(g, r);
}

static void step(struct pt_gpu *g, uint32_t tid, uint64_t s, uint64_t e)
{
	assert_int_equal(pt_gpu__step(g, tid, s, e), 0);
}

static void bcall(struct pt_gpu *g, uint32_t tid, uint64_t s, uint64_t e, uint64_t mask)
{
	assert_int_equal(pt_gpu__bucket_call(g, tid, s, e, mask), 0);
}

static const struct pt_gpu_result *join(struct pt_gpu *g, uint64_t t0, uint64_t t1)
{
	const struct pt_gpu_result *R = pt_gpu__join(g, t0, t1);

	assert_non_null(R);
	return R;
}

static void assert_dist(const struct pt_dist *d, uint64_t count, uint64_t sum, uint64_t min,
			uint64_t max)
{
	assert_int_equal(d->count, count);
	if (d->sum != (double)sum)
		fail_msg("dist sum %.0f, want %llu", d->sum, (unsigned long long)sum);
	if (count) {
		assert_int_equal(d->min, min);
		assert_int_equal(d->max, max);
	}
}

static const struct pt_gpu_device *dev(const struct pt_gpu_result *R, uint32_t id)
{
	for (size_t i = 0; i < R->ndevices; i++)
		if (R->devices[i].device == id)
			return &R->devices[i];
	fail_msg("no device %u", id);
	return NULL;
}

/* ---- tests ---- */

static void test_counts(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	struct pt_gpu_rec odd = { .kind = 9, .correlation_id = 1, .start_ns = 1, .end_ns = 2 };
	const struct pt_gpu_result *R;

	assert_non_null(g);
	kern(g, 1, 0, "k", 100, 200);
	kern(g, 2, 0, "k", 300, 400);
	copy(g, 3, 0, 1000, 500, 600);
	copy(g, 4, 0, 24, 700, 800);
	mset(g, 5, 0, 900, 1000);
	api(g, 1, TA, 50, false);
	api(g, 2, TA, 60, false);
	api(g, 3, TA, 70, false);
	sync_rec(g, 10, 20);
	sync_rec(g, 30, 40);
	/* end < start: ignored, bytes too */
	kern(g, 6, 0, "bad", 5000, 4000);
	copy(g, 7, 0, 5000, 6000, 5999);
	mset(g, 8, 0, 7000, 1);
	/* an unknown kind is skipped, not an error */
	assert_int_equal(pt_gpu__record(g, &odd), 0);

	R = join(g, 0, 10000);
	assert_int_equal(R->kernels, 2);
	assert_int_equal(R->copies, 2);
	assert_int_equal(R->memsets, 1);
	assert_int_equal(R->api_calls, 3);
	assert_int_equal(R->syncs, 2);
	assert_int_equal(R->copy_bytes, 1024);
	assert_int_equal(R->busy_ns, 500);
	assert_int_equal(R->window_ns, 10000);
	assert_int_equal(R->unmatched, 2);     /* the second copy and the memset */
	assert_int_equal(R->outside_steps, 3); /* no steps at all */
	assert_int_equal(R->steps, 0);
	assert_int_equal(R->step_items, 0);
	assert_int_equal(R->ndevices, 1);
	assert_int_equal(R->devices[0].device, 0);
	assert_int_equal(R->devices[0].kernels, 2);
	assert_int_equal(R->devices[0].copies, 2);
	assert_int_equal(R->devices[0].memsets, 1);
	assert_int_equal(R->devices[0].busy_ns, 500);
	assert_int_equal(R->ntop, 1);
	assert_string_equal(R->top[0].name, "k");
	assert_int_equal(R->top[0].count, 2);
	pt_gpu__free(g);
}

/*
 * Step on TA [1000, 2000) and [3000, 4000); step on TB [5000, 6000).
 *   corr 1: launched on TA at 1100         -> in TA's first step
 *   corr 2: launched on TB at 1100         -> TB has no step then: outside
 *   corr 3: no launch record               -> unmatched (busy still counts)
 *   corr 4: driver call on TB at 1510 (seen first), runtime call on TA at
 *           1500: the earlier one is the launch -> in the step
 *   corr 5: launched on TA at 1000, the step's start -> in it
 *   corr 6: launched on TA at 2000, the step's end   -> outside
 */
static void test_correlation(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	step(g, TA, 1000, 2000);
	step(g, TA, 3000, 4000);
	step(g, TB, 5000, 6000);
	api(g, 1, TA, 1100, false);
	kern(g, 1, 0, "a", 1200, 1300);
	api(g, 2, TB, 1100, false);
	kern(g, 2, 0, "a", 1400, 1500);
	kern(g, 3, 0, "a", 1600, 1700);
	api(g, 4, TB, 1510, true);
	api(g, 4, TA, 1500, false);
	kern(g, 4, 0, "a", 1800, 1900);
	api(g, 5, TA, 1000, false);
	kern(g, 5, 0, "a", 2100, 2200);
	api(g, 6, TA, 2000, false);
	kern(g, 6, 0, "a", 2300, 2400);

	R = join(g, 0, 10000);
	assert_int_equal(R->kernels, 6);
	assert_int_equal(R->api_calls, 6);
	assert_int_equal(R->step_items, 3);
	assert_int_equal(R->outside_steps, 2);
	assert_int_equal(R->unmatched, 1);
	assert_int_equal(R->steps, 3);
	assert_int_equal(R->steps_with_gpu, 1);
	assert_int_equal(R->busy_ns, 600);
	/* TA step 1 sees 1200-1300, 1400-1500, 1600-1700, 1800-1900 */
	assert_int_equal(R->step_busy_ns, 400);
	assert_int_equal(R->step_ns, 3000);
	pt_gpu__free(g);
}

/* The runtime call is earlier whatever order the records came in. */
static void test_correlation_earlier_first_seen(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	step(g, TA, 1000, 2000);
	api(g, 4, TA, 1500, false);
	api(g, 4, TB, 1510, true);
	kern(g, 4, 0, "a", 1800, 1900);
	R = join(g, 0, 10000);
	assert_int_equal(R->step_items, 1);
	assert_int_equal(R->outside_steps, 0);
	assert_dist(&R->launch_delay, 1, 300, 300, 300);
	pt_gpu__free(g);
}

/* dev 3: three kernels, two overlapping, one touching -> [100, 500);
 * dev 7: a copy overlapping dev 3's tail and a memset -> 250 + 100.
 * All devices: [100, 700) + [800, 900) = 700, not 400 + 350. */
static void test_busy_union(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;
	const struct pt_gpu_device *d;

	assert_non_null(g);
	kern(g, 1, 3, "a", 100, 300);
	kern(g, 2, 3, "a", 200, 400);
	kern(g, 3, 3, "a", 400, 500);
	copy(g, 4, 7, 8, 450, 700);
	mset(g, 5, 7, 800, 900);
	R = join(g, 0, 10000);
	assert_int_equal(R->busy_ns, 700);
	assert_int_equal(R->ndevices, 2);
	d = dev(R, 3);
	assert_int_equal(d->kernels, 3);
	assert_int_equal(d->copies, 0);
	assert_int_equal(d->memsets, 0);
	assert_int_equal(d->busy_ns, 400);
	d = dev(R, 7);
	assert_int_equal(d->kernels, 0);
	assert_int_equal(d->copies, 1);
	assert_int_equal(d->memsets, 1);
	assert_int_equal(d->busy_ns, 350);
	/* the kernel list sums time, overlapping or not: 200 + 200 + 100 */
	assert_int_equal(R->ntop, 1);
	assert_int_equal(R->top[0].total_ns, 500);
	assert_int_equal(R->top[0].count, 3);
	assert_int_equal(R->top[0].max_ns, 200);
	pt_gpu__free(g);
}

/*
 * Window [1000, 2000). Kernels 500-1200, 1500-1600, 1900-2500, 3000-3100:
 * inside the window 200 + 100 + 100 + 0 = 400.
 * Steps (TA) 1100-1550: busy 100 + 50, idle 300; 1850-1950: busy 50, idle
 * 50; 1250-1450: busy 0, idle 200.
 */
static void test_clipping(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	kern(g, 1, 0, "a", 500, 1200);
	kern(g, 2, 0, "a", 1500, 1600);
	kern(g, 3, 1, "a", 1900, 2500);
	kern(g, 4, 0, "a", 3000, 3100);
	step(g, TA, 1100, 1550);
	step(g, TA, 1850, 1950);
	step(g, TA, 1250, 1450);

	R = join(g, 1000, 2000);
	assert_int_equal(R->window_ns, 1000);
	assert_int_equal(R->busy_ns, 400);
	assert_int_equal(dev(R, 0)->busy_ns, 300);
	assert_int_equal(dev(R, 1)->busy_ns, 100);
	assert_int_equal(R->steps, 3);
	assert_int_equal(R->steps_with_gpu, 0);
	assert_int_equal(R->unmatched, 4);
	assert_int_equal(R->step_ns, 750);
	assert_int_equal(R->step_busy_ns, 200);
	assert_dist(&R->step_busy, 3, 200, 0, 150);
	assert_dist(&R->step_idle, 3, 550, 50, 300);
	/* host-bound = idle / step time */
	assert_int_equal(R->step_ns - R->step_busy_ns, 550);
	pt_gpu__free(g);
}

/* A step the GPU covers entirely is busy for its whole duration, not for
 * the kernel's; a second device's overlapping work adds nothing. */
static void test_step_fully_busy(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	api(g, 1, TA, 1050, false);
	kern(g, 1, 0, "a", 900, 2100);
	kern(g, 2, 1, "a", 1200, 1300);
	step(g, TA, 1000, 2000);
	R = join(g, 0, 5000);
	assert_int_equal(R->busy_ns, 1200);
	assert_int_equal(R->step_busy_ns, 1000);
	assert_dist(&R->step_busy, 1, 1000, 1000, 1000);
	assert_dist(&R->step_idle, 1, 0, 0, 0);
	assert_int_equal(R->steps_with_gpu, 1);
	/* started before its launch call: no launch delay */
	assert_int_equal(R->launch_delay.count, 0);
	pt_gpu__free(g);
}

enum { B0 = 1, B1 = 2, B2 = 4, B5 = 32 };

/*
 * Three buckets; TA's step [0, 10000) with
 *   outer  bit 0  [100, 5000)
 *   inner  bit 1  [1000, 2000)   (nested in outer)
 *   early  bit 2  [300, 400)     ended before the launch at 1500
 *   wide   bit 5  [1400, 1600)   bit >= nbuckets: ignored
 *   edge   bit 2  [3500, 4000)   ends at the launch at 4000: not open
 *   both   bits 1|2 [5500, 7000)
 *   TB's   bit 2  [1000, 3000)   another thread
 *   late   bit 0  [19000, 21000) open at 20000, but outside every step
 * Launches (TA): corr 1 kernel at 1500 (100 ns), corr 7 copy at 1550
 * (50 ns), corr 2 at 4000 (200 ns), corr 3 at 6000 (400 ns), corr 4 at
 * 20000 (1000 ns).
 */
static void test_buckets(void **state)
{
	struct pt_gpu *g = pt_gpu__new(3);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	step(g, TA, 0, 10000);
	bcall(g, TA, 1000, 2000, B1);
	bcall(g, TA, 300, 400, B2);
	bcall(g, TA, 1400, 1600, B5);
	bcall(g, TA, 100, 5000, B0); /* outer exits last: recorded last */
	bcall(g, TA, 3500, 4000, B2);
	bcall(g, TA, 5500, 7000, B1 | B2);
	bcall(g, TB, 1000, 3000, B2);
	bcall(g, TA, 19000, 21000, B0);
	/* no bits: nothing to record */
	assert_int_equal(pt_gpu__bucket_call(g, TA, 0, 10000, 0), 0);

	api(g, 1, TA, 1500, false);
	kern(g, 1, 0, "a", 1600, 1700);
	api(g, 7, TA, 1550, false);
	copy(g, 7, 0, 4096, 1700, 1750);
	api(g, 2, TA, 4000, false);
	kern(g, 2, 0, "a", 4100, 4300);
	api(g, 3, TA, 6000, false);
	kern(g, 3, 0, "a", 6100, 6500);
	api(g, 4, TA, 20000, false);
	kern(g, 4, 0, "a", 20100, 21100);

	R = join(g, 0, 30000);
	assert_int_equal(R->step_items, 4);
	assert_int_equal(R->outside_steps, 1);
	assert_int_equal(R->buckets[0].kernels, 3);
	assert_int_equal(R->buckets[0].gpu_ns, 350);
	assert_int_equal(R->buckets[1].kernels, 3);
	assert_int_equal(R->buckets[1].gpu_ns, 550);
	assert_int_equal(R->buckets[2].kernels, 1);
	assert_int_equal(R->buckets[2].gpu_ns, 400);
	pt_gpu__free(g);
}

/* A bucket call starting at the launch is open; a launch at a step's
 * start is in it. */
static void test_bucket_boundaries(void **state)
{
	struct pt_gpu *g = pt_gpu__new(2);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	step(g, TA, 1000, 2000);
	bcall(g, TA, 1000, 1500, B0);
	bcall(g, TA, 1200, 1200, B1); /* empty: open at no time */
	api(g, 1, TA, 1000, false);
	kern(g, 1, 0, "a", 1100, 1130);
	api(g, 2, TA, 1200, false);
	kern(g, 2, 0, "a", 1300, 1310);
	R = join(g, 0, 5000);
	assert_int_equal(R->buckets[0].kernels, 2);
	assert_int_equal(R->buckets[0].gpu_ns, 40);
	assert_int_equal(R->buckets[1].kernels, 0);
	pt_gpu__free(g);
}

/*
 * A bucket call around several steps (generate() around per-token steps):
 * TA's steps [1000, 2000) and [3000, 4000), outer bucket 0 [0, 10000),
 * launches at 1500 and 3500. The launch at 3500 is inside the outer call
 * and in a counted step, like the one at 1500 (docs/gpu.md: "work_launched
 * inside the bucket's calls in counted steps"). Without other bucket
 * calls both count; a sampler call (bucket 1) in each step must not
 * change that.
 *
 * Regression: the calls open at a launch are found through each call's
 * parent, so an earlier call that ended before the step cannot hide the
 * outer one.
 */
static void test_bucket_around_steps(void **state)
{
	for (int sampler = 0; sampler <= 1; sampler++) {
		struct pt_gpu *g = pt_gpu__new(2);
		const struct pt_gpu_result *R;
		uint64_t items, b0, b0_ns, b1;

		assert_non_null(g);
		step(g, TA, 1000, 2000);
		step(g, TA, 3000, 4000);
		if (sampler) {
			bcall(g, TA, 1500, 1600, B1);
			bcall(g, TA, 3100, 3200, B1);
		}
		bcall(g, TA, 0, 10000, B0);
		api(g, 1, TA, 1500, false);
		kern(g, 1, 0, "a", 1700, 1800);
		api(g, 2, TA, 3500, false);
		kern(g, 2, 0, "a", 3700, 3900);
		R = join(g, 0, 20000);
		items = R->step_items;
		b0 = R->buckets[0].kernels;
		b0_ns = R->buckets[0].gpu_ns;
		b1 = R->buckets[1].kernels;
		pt_gpu__free(g); /* before a failure jumps out: the asan build checks leaks */
		assert_int_equal(items, 2);
		assert_int_equal(b1, sampler ? 1 : 0);
		if (b0 != 2 || b0_ns != 300)
			fail_msg("sampler %d: bucket 0 got %llu launches, %llu ns; want 2, 300",
				 sampler, (unsigned long long)b0, (unsigned long long)b0_ns);
	}
}

/* kernel start - launch call start: kernels only, never negative. */
static void test_launch_delay(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	api(g, 1, TA, 1000, false);
	kern(g, 1, 0, "a", 1250, 1300);
	api(g, 2, TA, 2000, false);
	copy(g, 2, 0, 8, 2100, 2200); /* a copy: not a kernel */
	api(g, 3, TA, 3000, false);
	kern(g, 3, 0, "a", 2990, 3100); /* before its call (clock skew): skipped */
	api(g, 4, TA, 4000, false);
	kern(g, 4, 0, "a", 4000, 4100); /* 0 */
	kern(g, 5, 0, "a", 4500, 4600); /* no call */
	api(g, 6, TA, 5000, false);
	mset(g, 6, 0, 5100, 5200);
	api(g, 7, TA, 5000, false);
	kern(g, 7, 0, "a", 5700, 5800);
	R = join(g, 0, 10000);
	assert_dist(&R->launch_delay, 3, 950, 0, 700);
	assert_int_equal(R->launch_delay.zeros, 1);
	pt_gpu__free(g);
}

static void test_top_kernels(void **state)
{
	/* the same name at two addresses: one kernel */
	char gemm1[] = "gemm", gemm2[] = "gemm";
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	assert_ptr_not_equal(gemm1, gemm2);
	kern(g, 1, 0, gemm1, 0, 100);
	kern(g, 2, 1, "softmax", 0, 250);
	kern(g, 3, 0, NULL, 1000, 1050);
	kern(g, 4, 0, gemm2, 2000, 2300);
	kern(g, 5, 0, "attn", 3000, 3500);
	kern(g, 6, 0, NULL, 4000, 4020);
	copy(g, 7, 0, 8, 10000, 20000);
	mset(g, 8, 0, 30000, 40000);

	R = join(g, 0, 100000);
	assert_int_equal(R->ntop, 4);
	assert_string_equal(R->top[0].name, "attn");
	assert_int_equal(R->top[0].count, 1);
	assert_int_equal(R->top[0].total_ns, 500);
	assert_int_equal(R->top[0].max_ns, 500);
	assert_string_equal(R->top[1].name, "gemm");
	assert_int_equal(R->top[1].count, 2);
	assert_int_equal(R->top[1].total_ns, 400);
	assert_int_equal(R->top[1].max_ns, 300);
	assert_string_equal(R->top[2].name, "softmax");
	assert_int_equal(R->top[2].count, 1);
	assert_int_equal(R->top[2].total_ns, 250);
	assert_string_equal(R->top[3].name, "[unnamed kernel]");
	assert_int_equal(R->top[3].count, 2);
	assert_int_equal(R->top[3].total_ns, 70);
	assert_int_equal(R->top[3].max_ns, 50);
	pt_gpu__free(g);
}

/* C++ kernels come mangled: one row per name CUPTI gave, shown
 * demangled with that name kept; a C name as it came. Sorted among the
 * plain ones by the name that came, across a fold too. */
static void test_kernel_names_demangled(void **state)
{
	static const char fill[] = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
				   "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
	char fill2[sizeof(fill)];
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	memcpy(fill2, fill, sizeof(fill));
	pt_gpu__set_max_held(g, 4);
	pt_gpu__set_fold_lag(g, 100);
	kern(g, 1, 0, "zz_plain", 0, 10);
	kern(g, 2, 0, fill, 100, 400);
	kern(g, 3, 0, "_ZN2ns1kILi4EEEvPf", 500, 600);
	kern(g, 4, 0, "a_plain", 700, 720);
	kern(g, 5, 0, fill2, 10000, 10200); /* after a fold, at another address */
	kern(g, 6, 0, "_Zjunk", 11000, 11001);

	R = join(g, 0, 100000);
	assert_true(R->folds > 0);
	assert_int_equal(R->ntop, 5);
	assert_string_equal(R->top[0].name,
			    "void at::native::vectorized_elementwise_kernel<4, "
			    "at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
			    "at::native::FillFunctor<float>, std::array<char*, 1ul>)");
	assert_string_equal(R->top[0].mangled, fill);
	assert_int_equal(R->top[0].count, 2);
	assert_int_equal(R->top[0].total_ns, 500);
	assert_string_equal(R->top[1].name, "void ns::k<4>(float*)");
	assert_string_equal(R->top[1].mangled, "_ZN2ns1kILi4EEEvPf");
	assert_string_equal(R->top[2].name, "a_plain");
	assert_null(R->top[2].mangled);
	assert_string_equal(R->top[3].name, "zz_plain");
	assert_null(R->top[3].mangled);
	/* not a valid mangling: as it came */
	assert_string_equal(R->top[4].name, "_Zjunk");
	assert_null(R->top[4].mangled);
	pt_gpu__free(g);
}

/* Every array empty (see the header comment). */
static void test_empty(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	R = join(g, 0, 0);
	assert_int_equal(R->kernels + R->copies + R->memsets + R->api_calls + R->syncs, 0);
	assert_int_equal(R->busy_ns, 0);
	assert_int_equal(R->window_ns, 0);
	assert_int_equal(R->unmatched + R->outside_steps, 0);
	assert_int_equal(R->steps + R->steps_with_gpu + R->step_ns + R->step_busy_ns, 0);
	assert_int_equal(R->step_busy.count + R->step_idle.count + R->launch_delay.count, 0);
	assert_int_equal(R->ndevices, 0);
	assert_int_equal(R->ntop, 0);
	assert_non_null(R->buckets);
	pt_gpu__free(g);
	pt_gpu__free(NULL);

	/* a window that ends before it starts is empty */
	g = pt_gpu__new(1);
	assert_non_null(g);
	kern(g, 1, 0, "a", 100, 200);
	R = join(g, 1000, 500);
	assert_int_equal(R->window_ns, 0);
	assert_int_equal(R->busy_ns, 0);
	assert_int_equal(R->kernels, 1);
	pt_gpu__free(g);

	/* steps without GPU work: all idle */
	g = pt_gpu__new(1);
	assert_non_null(g);
	step(g, TA, 0, 100);
	step(g, TB, 50, 40); /* ends before it starts: 0 long */
	R = join(g, 0, 1000);
	assert_int_equal(R->steps, 2);
	assert_int_equal(R->step_ns, 100);
	assert_dist(&R->step_idle, 2, 100, 0, 100);
	assert_dist(&R->step_busy, 2, 0, 0, 0);
	assert_int_equal(R->buckets[0].kernels, 0);
	pt_gpu__free(g);
}

/* No buckets configured: bucket calls and their bits are ignored. */
static void test_no_buckets(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	step(g, TA, 0, 1000);
	bcall(g, TA, 0, 1000, B0 | B1);
	api(g, 1, TA, 10, false);
	kern(g, 1, 0, "a", 20, 30);
	R = join(g, 0, 1000);
	assert_int_equal(R->step_items, 1);
	assert_int_equal(R->busy_ns, 10);
	pt_gpu__free(g);
}

/*
 * 100k kernels, recorded launch calls last and in reverse: 1000 steps on
 * TA of 1000 ns, 100 kernels each of 5 ns launched 1 ns before they start;
 * a bucket-0 call over the first half of every step; names by j % 10:
 * 0-4 "k50", 5-7 "k30", 8-9 "k20"; devices alternate.
 */
#define NK 100000

static void test_many(void **state)
{
	static const char *const names[10] = { "k50", "k50", "k50", "k50", "k50",
					       "k30", "k30", "k30", "k20", "k20" };
	struct pt_gpu *g = pt_gpu__new(1);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	for (uint64_t i = 0; i < NK / 100; i++) {
		step(g, TA, i * 1000, i * 1000 + 1000);
		bcall(g, TA, i * 1000, i * 1000 + 500, B0);
	}
	for (uint32_t j = 0; j < NK; j++)
		kern(g, j + 1, j % 2, names[j % 10], j * 10ULL + 2, j * 10ULL + 7);
	for (uint32_t j = NK; j-- > 0;)
		api(g, j + 1, TA, j * 10ULL + 1, false);

	R = join(g, 0, NK * 10ULL);
	assert_int_equal(R->kernels, NK);
	assert_int_equal(R->api_calls, NK);
	assert_int_equal(R->busy_ns, NK * 5ULL);
	assert_int_equal(R->unmatched, 0);
	assert_int_equal(R->outside_steps, 0);
	assert_int_equal(R->steps, NK / 100);
	assert_int_equal(R->steps_with_gpu, NK / 100);
	assert_int_equal(R->step_items, NK);
	assert_int_equal(R->step_ns, NK * 10ULL);
	assert_int_equal(R->step_busy_ns, NK * 5ULL);
	assert_dist(&R->step_busy, NK / 100, NK * 5ULL, 500, 500);
	assert_dist(&R->step_idle, NK / 100, NK * 5ULL, 500, 500);
	assert_dist(&R->launch_delay, NK, NK, 1, 1);
	assert_int_equal(R->ndevices, 2);
	assert_int_equal(dev(R, 0)->kernels, NK / 2);
	assert_int_equal(dev(R, 1)->busy_ns, NK / 2 * 5ULL);
	assert_int_equal(R->buckets[0].kernels, NK / 2);
	assert_int_equal(R->buckets[0].gpu_ns, NK / 2 * 5ULL);
	assert_int_equal(R->ntop, 3);
	assert_string_equal(R->top[0].name, "k50");
	assert_int_equal(R->top[0].count, NK / 2);
	assert_int_equal(R->top[0].total_ns, NK / 2 * 5ULL);
	assert_string_equal(R->top[1].name, "k30");
	assert_int_equal(R->top[1].count, NK * 3 / 10);
	assert_string_equal(R->top[2].name, "k20");
	assert_int_equal(R->top[2].total_ns, NK / 5 * 5ULL);
	pt_gpu__free(g);
}

/* ---- the memory bound: folds ---- */

/*
 * Random streams, as a server makes them: NT threads of back-to-back
 * steps, in each step nested bucket calls (an outer call per step, inner
 * calls inside it) and launches; every launch makes an item on one of
 * ND devices, queued behind earlier work there (so kernels start after
 * later launches, and devices overlap), and sometimes a second (driver)
 * launch call with the same correlation id; some launches outside steps,
 * some items without a launch call. Each record is delivered at its
 * ready time (items at their end, launch calls at their start, steps
 * and bucket calls at their end) plus a random delay below MAXD, in
 * that order: out of time order. Queueing, durations and MAXD stay
 * below the lag, so no record comes after a fold settled its time.
 */
#define NT 3
#define ND 3
#define NB 4
#define MAXD 1500
#define LAG 6000

enum ev_type { EV_ITEM, EV_API, EV_STEP, EV_BIV };

struct ev {
	uint64_t at; /* delivery time */
	enum ev_type type;
	struct pt_gpu_rec r;
	uint32_t tid;
	uint64_t s, e, mask;
};

struct evs {
	struct ev *v;
	size_t n, cap;
};

static uint64_t rnd_state;

static uint64_t rnd(uint64_t n)
{
	rnd_state = rnd_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (rnd_state >> 33) % n;
}

static struct ev *push(struct evs *E, enum ev_type type, uint64_t ready)
{
	struct ev *x;

	if (E->n == E->cap) {
		E->cap = E->cap ? E->cap * 2 : 1024;
		E->v = realloc(E->v, E->cap * sizeof(*E->v));
		assert_non_null(E->v);
	}
	x = &E->v[E->n++];
	memset(x, 0, sizeof(*x));
	x->type = type;
	x->at = ready + rnd(MAXD);
	return x;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

static const char *const knames[] = { "gemm", "attn", "norm", "rope", "gemm_small" };

static void launch(struct evs *E, uint32_t *corr, uint64_t *dev_free, uint32_t tid, uint64_t t,
		   bool with_api)
{
	uint32_t c = ++*corr, d = (uint32_t)rnd(ND);
	uint64_t s = t + 1 + rnd(200), dur = rnd(8) ? 1 + rnd(400) : 0;
	struct ev *x;

	if (dev_free[d] > s && dev_free[d] - s < 2000)
		s = dev_free[d] - rnd(50); /* queued behind, overlapping a little */
	if (s < t)
		s = t;
	if (s + dur > dev_free[d])
		dev_free[d] = s + dur;
	if (with_api) {
		x = push(E, EV_API, t);
		x->r = (struct pt_gpu_rec){
			.kind = PT_GPU_API, .correlation_id = c, .start_ns = t, .end_ns = t + 3
		};
		x->r.api.tid = tid;
		if (!rnd(4)) { /* the driver call under the runtime one */
			x = push(E, EV_API, t + 1);
			x->r = (struct pt_gpu_rec){ .kind = PT_GPU_API,
						    .correlation_id = c,
						    .start_ns = t + 1,
						    .end_ns = t + 2 };
			x->r.api.tid = tid;
			x->r.api.driver = true;
		}
	}
	x = push(E, EV_ITEM, s + dur);
	x->r = (struct pt_gpu_rec){ .correlation_id = c, .start_ns = s, .end_ns = s + dur };
	switch (rnd(6)) {
	case 0:
		x->r.kind = PT_GPU_MEMCPY;
		x->r.memcpy.device_id = d;
		x->r.memcpy.bytes = 1 + rnd(1000);
		break;
	case 1:
		x->r.kind = PT_GPU_MEMSET;
		x->r.memset.device_id = d;
		break;
	default:
		x->r.kind = PT_GPU_KERNEL;
		x->r.kernel.device_id = d;
		x->r.kernel.name = rnd(10) ? knames[rnd(5)] : NULL;
	}
}

static void host(struct evs *E, enum ev_type type, uint32_t tid, uint64_t s, uint64_t e,
		 uint64_t mask)
{
	struct ev *x = push(E, type, e);

	x->tid = tid;
	x->s = s;
	x->e = e;
	x->mask = mask;
}

static void gen(struct evs *E, uint64_t span)
{
	uint64_t dev_free[ND] = { 0 };
	uint32_t corr = 0;

	E->n = 0;
	for (uint32_t tid = 1; tid <= NT; tid++) {
		uint64_t t = 100 + rnd(500);

		while (t < span) {
			uint64_t len = 500 + rnd(2000), e = t + len, c, ce;

			if (rnd(5)) {
				host(E, EV_STEP, tid, t, e, 0);
				/* nested calls: an outer one, inner ones in it */
				host(E, EV_BIV, tid, t + 10, e - 10, 1ULL << rnd(NB));
				for (c = t + 20; c + 210 < e - 20; c = ce + 1 + rnd(500)) {
					ce = c + 50 + rnd(150);

					if (rnd(2))
						host(E, EV_BIV, tid, c, ce, 1ULL << rnd(NB + 1));
					if (rnd(3) == 0 && ce - c > 20)
						host(E, EV_BIV, tid, c + 5, ce - 5,
						     1ULL << rnd(NB));
				}
			}
			/* launches, in and between steps */
			for (c = t; c < e + 200; c += 20 + rnd(150))
				launch(E, &corr, dev_free, tid, c, rnd(20) != 0);
			t = e + rnd(300);
		}
	}
	qsort(E->v, E->n, sizeof(*E->v), ev_cmp);
}

static void feed(struct pt_gpu *g, const struct evs *E, size_t bound)
{
	for (size_t i = 0; i < E->n; i++) {
		const struct ev *x = &E->v[i];

		switch (x->type) {
		case EV_ITEM:
		case EV_API:
			assert_int_equal(pt_gpu__record(g, &x->r), 0);
			break;
		case EV_STEP:
			step(g, x->tid, x->s, x->e);
			break;
		case EV_BIV:
			bcall(g, x->tid, x->s, x->e, x->mask);
			break;
		}
		if (bound)
			assert_true(pt_gpu__held(g) <= bound + bound / 8);
	}
}

static void same_dist(const struct pt_dist *a, const struct pt_dist *b)
{
	static const double qs[] = { 0, 0.1, 0.5, 0.9, 0.99, 1 };

	assert_int_equal(a->count, b->count);
	assert_true(a->sum == b->sum);
	assert_int_equal(a->zeros, b->zeros);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		assert_true(pt_dist__quantile(a, qs[i]) == pt_dist__quantile(b, qs[i]));
	if (a->count) {
		assert_int_equal(a->min, b->min);
		assert_int_equal(a->max, b->max);
	}
}

static void same_result(const struct pt_gpu_result *A, const struct pt_gpu_result *B)
{
	assert_int_equal(A->kernels, B->kernels);
	assert_int_equal(A->copies, B->copies);
	assert_int_equal(A->memsets, B->memsets);
	assert_int_equal(A->api_calls, B->api_calls);
	assert_int_equal(A->syncs, B->syncs);
	assert_int_equal(A->copy_bytes, B->copy_bytes);
	assert_int_equal(A->busy_ns, B->busy_ns);
	assert_int_equal(A->window_ns, B->window_ns);
	assert_int_equal(A->unmatched, B->unmatched);
	assert_int_equal(A->outside_steps, B->outside_steps);
	assert_int_equal(A->steps, B->steps);
	assert_int_equal(A->steps_with_gpu, B->steps_with_gpu);
	assert_int_equal(A->step_ns, B->step_ns);
	assert_int_equal(A->step_busy_ns, B->step_busy_ns);
	assert_int_equal(A->step_items, B->step_items);
	same_dist(&A->step_busy, &B->step_busy);
	same_dist(&A->step_idle, &B->step_idle);
	same_dist(&A->launch_delay, &B->launch_delay);
	assert_int_equal(A->ndevices, B->ndevices);
	for (size_t i = 0; i < A->ndevices; i++) {
		assert_int_equal(A->devices[i].device, B->devices[i].device);
		assert_int_equal(A->devices[i].kernels, B->devices[i].kernels);
		assert_int_equal(A->devices[i].copies, B->devices[i].copies);
		assert_int_equal(A->devices[i].memsets, B->devices[i].memsets);
		assert_int_equal(A->devices[i].busy_ns, B->devices[i].busy_ns);
	}
	assert_int_equal(A->ntop, B->ntop);
	for (size_t i = 0; i < A->ntop; i++) {
		assert_string_equal(A->top[i].name, B->top[i].name);
		assert_int_equal(A->top[i].count, B->top[i].count);
		assert_int_equal(A->top[i].total_ns, B->top[i].total_ns);
		assert_int_equal(A->top[i].max_ns, B->top[i].max_ns);
	}
	for (size_t b = 0; b < NB; b++) {
		assert_int_equal(A->buckets[b].kernels, B->buckets[b].kernels);
		assert_int_equal(A->buckets[b].gpu_ns, B->buckets[b].gpu_ns);
	}
}

/* The folded join equals the join of everything at the end, exactly. */
static void test_fold_equals_join(void **state)
{
	struct evs E = { 0 };
	uint64_t folds = 0;

	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct pt_gpu *all = pt_gpu__new(NB), *f = pt_gpu__new(NB);
		const struct pt_gpu_result *A, *F;
		size_t bound = 1000 + seed * 37 % 1000;

		assert_non_null(all);
		assert_non_null(f);
		rnd_state = seed;
		gen(&E, 300000 + seed * 5000);
		pt_gpu__set_max_held(f, bound);
		pt_gpu__set_fold_lag(f, LAG);
		feed(all, &E, 0);
		feed(f, &E, bound);
		A = join(all, 0, 1ULL << 40);
		F = join(f, 0, 1ULL << 40);
		assert_int_equal(A->folds, 0);
		assert_true(F->folds > 10);
		assert_int_equal(F->late, 0);
		assert_int_equal(F->not_held, 0);
		assert_true(A->kernels > 1000 && A->step_items > 1000);
		assert_true(A->unmatched > 0 && A->outside_steps > 0);
		same_result(A, F);
		folds += F->folds;
		pt_gpu__free(all);
		pt_gpu__free(f);
	}
	print_message("  %llu folds over 40 seeds\n", (unsigned long long)folds);
	free(E.v);
}

/*
 * A record that comes after a fold settled its time is counted in late
 * and joins only the plain counts: the item's kind, device, kernel name
 * and its busy time from the horizon on; a step, bucket call or launch
 * call before the horizon nothing more (the launch call api_calls).
 */
static void test_fold_late(void **state)
{
	struct pt_gpu *g = pt_gpu__new(1);
	const struct pt_gpu_result *R;
	uint64_t busy1;

	assert_non_null(g);
	pt_gpu__set_max_held(g, 16);
	pt_gpu__set_fold_lag(g, 200);
	for (uint32_t i = 0; i < 40; i++) {
		uint64_t t = 100ULL * i;

		step(g, TA, t, t + 100);
		api(g, i + 1, TA, t + 10, false);
		kern(g, i + 1, 0, "k", t + 20, t + 30);
	}
	/* the last fold's horizon h is in (3000, 4000) */
	assert_true(pt_gpu__held(g) <= 18);
	/* a kernel launched at 50 that ran 60..50000: late */
	api(g, 100, TA, 50, false);
	kern(g, 100, 1, "late", 60, 50000);
	/* a step and a bucket call from the folded part */
	step(g, TB, 10, 20);
	bcall(g, TA, 10, 20, B0);
	R = join(g, 0, 100000);
	assert_true(R->folds > 0);
	assert_int_equal(R->late, 4);
	assert_int_equal(R->not_held, 0);
	/* the plain counts have it */
	assert_int_equal(R->kernels, 41);
	assert_int_equal(R->api_calls, 41);
	assert_int_equal(dev(R, 1)->kernels, 1);
	assert_int_equal(R->ntop, 2);
	assert_string_equal(R->top[0].name, "late");
	assert_int_equal(R->top[0].total_ns, 49940);
	assert_string_equal(R->top[1].name, "k");
	/* its busy time from the horizon on only: 50000 - h */
	busy1 = dev(R, 1)->busy_ns;
	assert_true(busy1 > 46000 && busy1 < 47000);
	assert_int_equal(dev(R, 0)->busy_ns, 400);
	assert_true(R->busy_ns >= busy1 && R->busy_ns <= busy1 + 400);
	/* nothing else: no step, no bucket, no launch delay, not unmatched */
	assert_int_equal(R->steps, 40);
	assert_int_equal(R->step_items, 40);
	assert_int_equal(R->unmatched + R->outside_steps, 0);
	assert_int_equal(R->launch_delay.count, 40);
	assert_int_equal(R->buckets[0].kernels, 0);
	assert_int_equal(R->kernels + R->copies + R->memsets,
			 R->step_items + R->outside_steps + R->unmatched + 1);
	pt_gpu__free(g);
}

/* n launches in time order, 100 ns apart on one thread, a 130 ns kernel
 * each (overlapping the next) on two devices, a step every ten; the held
 * count checked against the bound all along. Returns its peak. */
static size_t feed_regular(struct pt_gpu *g, uint32_t n, size_t bound)
{
	size_t peak = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t t = 100ULL * i;

		if (i % 10 == 0)
			step(g, TA, t, t + 1000);
		api(g, i + 1, TA, t + 10, false);
		kern(g, i + 1, i % 2, "k", t + 20, t + 150);
		if (pt_gpu__held(g) > peak)
			peak = pt_gpu__held(g);
		assert_true(pt_gpu__held(g) <= bound + bound / 8);
	}
	return peak;
}
/*
 * Memory stays bounded: 20x the bound in time order, the held count
 * never above the bound and its eighth; every record still counted.
 */
static void test_fold_bounded(void **state)
{
	enum { BOUND = 1000, N = 20 * BOUND / 2 };
	struct pt_gpu *g = pt_gpu__new(1);
	const struct pt_gpu_result *R;
	size_t peak;

	assert_non_null(g);
	pt_gpu__set_max_held(g, BOUND);
	pt_gpu__set_fold_lag(g, 5000);
	peak = feed_regular(g, N, BOUND);
	R = join(g, 0, 100ULL * N + 1000);
	assert_true(peak >= BOUND - 1);
	assert_true(R->folds >= 10);
	assert_int_equal(R->late + R->not_held, 0);
	assert_int_equal(R->kernels, N);
	assert_int_equal(R->step_items, N);
	assert_int_equal(R->steps, N / 10);
	assert_int_equal(R->busy_ns, 100ULL * (N - 1) + 130);
	assert_int_equal(dev(R, 0)->busy_ns, 130ULL * (N / 2));
	pt_gpu__free(g);
}

/* A stream so fast that the bound fills within the lag (here 47 us of
 * records against a 200 us lag): a fold takes the older half of what is
 * held instead, down to a sixth of the lag, and the figures stay exact. */
static void test_fold_fast_stream(void **state)
{
	enum { BOUND = 1000, N = 20 * BOUND / 2 };
	struct pt_gpu *g = pt_gpu__new(1);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	pt_gpu__set_max_held(g, BOUND);
	pt_gpu__set_fold_lag(g, 200000);
	feed_regular(g, N, BOUND);
	R = join(g, 0, 100ULL * N + 1000);
	assert_true(R->folds >= 10);
	assert_int_equal(R->late + R->not_held, 0);
	assert_int_equal(R->kernels, N);
	assert_int_equal(R->step_items, N);
	assert_int_equal(R->steps, N / 10);
	assert_int_equal(R->busy_ns, 100ULL * (N - 1) + 130);
	pt_gpu__free(g);
}

/* When no fold can free anything (every record within the lag), records
 * are taken in an eighth more, then not held and counted. */
static void test_fold_no_progress(void **state)
{
	struct pt_gpu *g = pt_gpu__new(0);
	const struct pt_gpu_result *R;

	assert_non_null(g);
	pt_gpu__set_max_held(g, 16);
	for (uint32_t c = 1; c <= 10; c++) {
		api(g, c, TA, c * 1000, false);
		kern(g, c, 0, "k", c * 1000 + 100, c * 1000 + 200);
	}
	assert_int_equal(pt_gpu__held(g), 18);
	R = join(g, 0, 100000);
	assert_int_equal(R->kernels, 9);
	assert_int_equal(R->api_calls, 9);
	assert_int_equal(R->not_held, 2);
	assert_int_equal(R->late, 0);
	assert_int_equal(R->unmatched, 0);
	pt_gpu__free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_correlation),
		cmocka_unit_test(test_correlation_earlier_first_seen),
		cmocka_unit_test(test_busy_union),
		cmocka_unit_test(test_clipping),
		cmocka_unit_test(test_step_fully_busy),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_bucket_boundaries),
		cmocka_unit_test(test_bucket_around_steps),
		cmocka_unit_test(test_launch_delay),
		cmocka_unit_test(test_top_kernels),
		cmocka_unit_test(test_kernel_names_demangled),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_no_buckets),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_fold_equals_join),
		cmocka_unit_test(test_fold_late),
		cmocka_unit_test(test_fold_bounded),
		cmocka_unit_test(test_fold_fast_stream),
		cmocka_unit_test(test_fold_no_progress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
