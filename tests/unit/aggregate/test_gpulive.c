// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_gpulive: live GPU busy and host-bound time on synthetic intervals
 * whose union is known to the ns; and, on random streams that arrive out
 * of order within the lag, the settled figures equal the end-of-run
 * join's (aggregate/gpu.c) exactly while holding only the recent past.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aggregate/gpu.h"
#include "aggregate/gpulive.h"

#define MS 1000000ull
#define T0 (1000 * MS)
#define LAG (2000 * MS)
#define KEEP (500 * MS) /* the union kept behind the settle point */

static const struct pt_gpulive_totals *at(struct pt_gpulive *g, uint64_t settle_to)
{
	pt_gpulive__settle(g, settle_to + LAG);
	return pt_gpulive__totals(g);
}

static uint64_t dev_busy(const struct pt_gpulive_totals *t, uint32_t dev)
{
	for (uint32_t i = 0; i < t->ndevs; i++)
		if (t->devs[i].device == dev)
			return t->devs[i].busy_ns;
	fail_msg("no device %u", dev);
	return 0;
}

static void test_union_of_streams_and_devices(void **state)
{
	struct pt_gpulive *g = pt_gpulive__new(T0, LAG, KEEP);
	const struct pt_gpulive_totals *t;

	(void)state;
	assert_non_null(g);
	/* device 0: two streams overlapping [10,30) + [20,40) = 30; a
	 * touching one [40,45) joins them: 35; a separate [50,60): 45 */
	pt_gpulive__work(g, 0, T0 + 10, T0 + 30);
	pt_gpulive__work(g, 0, T0 + 20, T0 + 40);
	pt_gpulive__work(g, 0, T0 + 50, T0 + 60);
	pt_gpulive__work(g, 0, T0 + 40, T0 + 45); /* out of order */
	/* device 1: [35,55): the union of all adds [45,50) */
	pt_gpulive__work(g, 1, T0 + 35, T0 + 55);
	t = at(g, T0 + 100);
	assert_int_equal(dev_busy(t, 0), 45);
	assert_int_equal(dev_busy(t, 1), 20);
	assert_int_equal(t->busy_ns, 50);
	assert_int_equal(t->late, 0);
	assert_int_equal(t->settled, T0 + 100);
	/* an interval covering everything held merges them all */
	pt_gpulive__work(g, 0, T0 + 200, T0 + 210);
	pt_gpulive__work(g, 0, T0 + 220, T0 + 230);
	pt_gpulive__work(g, 0, T0 + 150, T0 + 300);
	t = at(g, T0 + 400);
	assert_int_equal(dev_busy(t, 0), 45 + 150);
	assert_int_equal(t->busy_ns, 50 + 150);
	pt_gpulive__free(g);
}

static void test_settles_only_behind_the_lag(void **state)
{
	struct pt_gpulive *g = pt_gpulive__new(T0, LAG, KEEP);
	const struct pt_gpulive_totals *t;

	(void)state;
	pt_gpulive__work(g, 0, T0 + 10 * MS, T0 + 20 * MS);
	/* the clock at T0 + 15 ms: nothing settled yet */
	pt_gpulive__settle(g, T0 + 15 * MS);
	t = pt_gpulive__totals(g);
	assert_int_equal(t->settled, T0);
	assert_int_equal(t->busy_ns, 0);
	/* half of it settled; the point never goes back */
	t = at(g, T0 + 15 * MS);
	assert_int_equal(t->busy_ns, 5 * MS);
	pt_gpulive__settle(g, T0);
	t = pt_gpulive__totals(g);
	assert_int_equal(t->settled, T0 + 15 * MS);
	t = at(g, T0 + 30 * MS);
	assert_int_equal(t->busy_ns, 10 * MS);
	pt_gpulive__free(g);
}

static void test_late_records_are_counted_not_added(void **state)
{
	struct pt_gpulive *g = pt_gpulive__new(T0, LAG, KEEP);
	const struct pt_gpulive_totals *t;

	(void)state;
	at(g, T0 + 100);
	/* wholly before the point: late, nothing added */
	pt_gpulive__work(g, 0, T0 + 10, T0 + 40);
	/* across it: the part before is late, the rest counts */
	pt_gpulive__work(g, 0, T0 + 90, T0 + 130);
	/* before the attach: not ours, not late (as the end-of-run window) */
	pt_gpulive__work(g, 0, T0 - 50, T0 - 10);
	t = at(g, T0 + 200);
	assert_int_equal(t->late, 2);
	assert_int_equal(t->late_ns, 30 + 10);
	assert_int_equal(t->busy_ns, 30);
	assert_int_equal(dev_busy(t, 0), 30);
	pt_gpulive__free(g);
}

static void test_host_bound_time_of_steps(void **state)
{
	struct pt_gpulive *g = pt_gpulive__new(T0, LAG, KEEP);
	const struct pt_gpulive_totals *t;

	(void)state;
	/* step [100,200): GPU [120,150) and [140,170) on two devices and
	 * [190,260) past its end: busy 50 + 10, idle 40 */
	pt_gpulive__step(g, T0 + 100, T0 + 200);
	pt_gpulive__work(g, 0, T0 + 120, T0 + 150);
	pt_gpulive__work(g, 1, T0 + 140, T0 + 170);
	pt_gpulive__work(g, 0, T0 + 190, T0 + 260);
	/* the point inside the step: it waits, and keeps the union from
	 * its start */
	t = at(g, T0 + 160);
	assert_int_equal(t->steps, 0);
	t = at(g, T0 + 200);
	assert_int_equal(t->steps, 1);
	assert_int_equal(t->step_ns, 100);
	assert_int_equal(t->idle_ns, 40);
	/* a second step with no GPU work at all */
	pt_gpulive__step(g, T0 + 300, T0 + 350);
	t = at(g, T0 + 1000);
	assert_int_equal(t->steps, 2);
	assert_int_equal(t->step_ns, 150);
	assert_int_equal(t->idle_ns, 90);
	assert_int_equal(t->busy_ns, 30 + 30 + 70 - 10);
	assert_int_equal(t->late, 0);
	/* a step whose record comes after its time settled (a step longer
	 * than the lag): the union is kept KEEP behind the point, so it is
	 * exact: [120,170) and [190,260) inside [110,990) */
	pt_gpulive__step(g, T0 + 110, T0 + 990);
	t = pt_gpulive__totals(g);
	assert_int_equal(t->steps, 3);
	assert_int_equal(t->idle_ns, 90 + 880 - 120);
	assert_int_equal(t->late, 0);
	/* past KEEP: nothing is held... */
	t = at(g, T0 + KEEP + 1000);
	assert_int_equal(t->held, 0);
	/* ...and a step that began before what is kept is late (its start's
	 * GPU work is gone: counted as idle) */
	pt_gpulive__step(g, T0 + 100, T0 + KEEP + 2000);
	t = at(g, T0 + KEEP + 3000);
	assert_int_equal(t->steps, 4);
	assert_int_equal(t->late, 1);
	pt_gpulive__free(g);
}

/* xorshift: the same stream every run */
static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(uint64_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state % n;
}

struct ev {
	int kind; /* 0 work, 1 step */
	uint32_t dev;
	uint64_t s, e, arrive;
};

static int by_arrival(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->arrive < y->arrive ? -1 : x->arrive > y->arrive;
}

/* A server's stream: steps of 5-15 ms back to back on the host, kernels
 * of 10 us-2 ms on 1-3 devices (some overlapping on several streams),
 * records handed over up to 500 ms after they end (less than the lag),
 * in arrival order. Settled now and then, the live figures at the end
 * equal the join's, and what is held stays within the lag's worth. */
static void test_equals_the_end_of_run_join(void **state)
{
	const size_t nsteps = 2000;
	struct ev *ev = calloc(nsteps * 40, sizeof(*ev));
	size_t n = 0, max_held = 0;
	uint64_t t = T0 + 5 * MS, end = 0;
	struct pt_gpu *join = pt_gpu__new(0);
	struct pt_gpulive *g = pt_gpulive__new(T0, LAG, KEEP);
	const struct pt_gpu_result *R;
	const struct pt_gpulive_totals *L;
	uint32_t corr = 1;

	(void)state;
	assert_non_null(ev);
	assert_non_null(join);
	for (size_t i = 0; i < nsteps; i++) {
		uint64_t d = 5 * MS + rnd(10 * MS), k = rnd(20);

		ev[n++] = (struct ev){ 1, 0, t, t + d, t + d + rnd(MS) };
		for (size_t j = 0; j < k; j++) {
			uint64_t s = t + rnd(d + MS), e = s + 10000 + rnd(2 * MS);

			ev[n++] = (struct ev){ 0, (uint32_t)rnd(3), s, e, e + rnd(500 * MS) };
			if (e > end)
				end = e;
		}
		t += d + rnd(2) * rnd(30 * MS); /* sometimes idle between steps */
	}
	if (t > end)
		end = t;
	qsort(ev, n, sizeof(*ev), by_arrival);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind) {
			assert_int_equal(pt_gpu__step(join, 1, ev[i].s, ev[i].e), 0);
			pt_gpulive__step(g, ev[i].s, ev[i].e);
		} else {
			struct pt_gpu_rec r = { .kind = PT_GPU_KERNEL,
						.correlation_id = corr++,
						.start_ns = ev[i].s,
						.end_ns = ev[i].e };

			r.kernel.device_id = ev[i].dev;
			r.kernel.name = "k";
			assert_int_equal(pt_gpu__record(join, &r), 0);
			pt_gpulive__work(g, ev[i].dev, ev[i].s, ev[i].e);
		}
		if (i % 97 == 0) { /* a scrape, at the clock of this arrival */
			pt_gpulive__settle(g, ev[i].arrive);
			L = pt_gpulive__totals(g);
			if (L->held > max_held)
				max_held = L->held;
		}
	}
	pt_gpulive__settle(g, end + 1 + LAG + KEEP);
	L = pt_gpulive__totals(g);
	R = pt_gpu__join(join, T0, end + 1);
	assert_non_null(R);
	assert_int_equal(L->late, 0);
	assert_int_equal(L->oom, 0);
	assert_int_equal(L->busy_ns, R->busy_ns);
	assert_int_equal(L->steps, R->steps);
	assert_int_equal(L->step_ns, R->step_ns);
	assert_int_equal(L->idle_ns, R->step_ns - R->step_busy_ns);
	assert_int_equal(L->ndevs, R->ndevices);
	for (size_t i = 0; i < R->ndevices; i++)
		assert_int_equal(dev_busy(L, R->devices[i].device), R->devices[i].busy_ns);
	/* the figures are not trivially equal */
	assert_true(R->busy_ns > 0 && R->step_busy_ns > 0 && R->step_busy_ns < R->step_ns);
	/* held: about the lag's and KEEP's worth (3 s of ~35 s), never the
	 * whole run */
	assert_true(max_held < n / 4);
	assert_int_equal(L->held, 0);
	pt_gpulive__free(g);
	pt_gpu__free(join);
	free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_union_of_streams_and_devices),
		cmocka_unit_test(test_settles_only_behind_the_lag),
		cmocka_unit_test(test_late_records_are_counted_not_added),
		cmocka_unit_test(test_host_bound_time_of_steps),
		cmocka_unit_test(test_equals_the_end_of_run_join),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
