// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_sampleclock__periods (bpf/sampleclock.h), the rule the sampler's BPF
 * program runs, against a model of the kernel's cpu-clock timer: a grid
 * of periods of the thread's time on the CPU, the rest of a period carried
 * over a switch out, a sample late by a timer's jitter, and while the
 * hypervisor holds the vCPU (steal) no sample at all: the timer fires once
 * when the vCPU runs again and moves to the next grid point after now
 * (kernel/events/core.c perf_swevent_hrtimer, hrtimer_forward_now).
 *
 * What must hold: on time, every sample is one period (the weights of
 * before); with steal, the periods add up to the thread's wall time on the
 * CPU and the samples with a period to its time run (wall less steal),
 * each within a period per stretch on the CPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "bpf/sampleclock.h"

#define P 1000000ull /* 1 kHz */
#define MS 1000000ull

struct span {
	uint64_t a, b;
};

/* One thread's life: stretches on the CPU, stretches of steal (inside
 * them), a timer jitter pattern; what the sampler books. */
struct sim {
	const struct span *on, *steal;
	size_t non, nsteal;
	int jitter_us; /* each sample late by 0..jitter_us, varying */
	int track_in;
	/* out */
	uint64_t weight, run, samples, late;
};

static int in_steal(const struct sim *s, uint64_t t, uint64_t *end)
{
	for (size_t i = 0; i < s->nsteal; i++)
		if (t >= s->steal[i].a && t < s->steal[i].b) {
			*end = s->steal[i].b;
			return 1;
		}
	return 0;
}

static void run_sim(struct sim *s)
{
	__u64 left = P, grid = 0, t_in = 0;
	unsigned int n = 0;

	for (size_t i = 0; i < s->non; i++) {
		uint64_t expiry = s->on[i].a + left;

		t_in = s->track_in ? s->on[i].a : 0;
		while (expiry < s->on[i].b) {
			uint64_t fire = expiry, end;
			uint32_t k;

			if (in_steal(s, fire, &end))
				fire = end;
			fire += (uint64_t)((n++ * 7919u) % (unsigned int)(s->jitter_us + 1)) * 1000;
			if (fire >= s->on[i].b)
				fire = s->on[i].b - 1; /* the jitter ends at the switch */
			k = pt_sampleclock__periods(fire, t_in, &grid, P, s->track_in);
			s->weight += k * P;
			s->run += k ? P : 0;
			s->samples++;
			s->late += k > 1;
			while (expiry <= fire)
				expiry += P;
		}
		left = expiry - s->on[i].b; /* past the end: carried */
	}
}

static uint64_t total(const struct span *v, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += v[i].b - v[i].a;
	return t;
}

static uint64_t diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* No steal: every sample is one period, jitter or not, as before. */
static void test_on_time(void **state)
{
	static const struct span on[] = { { 10 * MS, 1010 * MS },
					  { 1500 * MS, 1502 * MS + P / 3 },
					  { 1600 * MS, 1700 * MS } };
	struct sim s = { .on = on, .non = 3, .jitter_us = 40, .track_in = 1 };

	run_sim(&s);
	assert_int_equal(s.late, 0);
	assert_int_equal(s.weight, s.samples * P);
	/* the first period began before the first stretch, the last ends
	 * after the last one: two at most */
	assert_true(diff(s.weight, total(on, 3)) <= 2 * P);
}

/* Steal inside one long stretch on the CPU: the wall time is whole, the
 * time run is the wall less the steal, and the late samples are counted. */
static void test_steal_in_a_stretch(void **state)
{
	static const struct span on[] = { { 0, 1000 * MS } };
	static const struct span steal[] = { { 100 * MS + 300000, 107 * MS + 600000 },
					     { 400 * MS, 420 * MS + 600000 },
					     { 700 * MS + 900000, 704 * MS + 400000 } };
	struct sim s = {
		.on = on, .non = 1, .steal = steal, .nsteal = 3, .jitter_us = 20, .track_in = 1
	};
	struct sim old = s;

	run_sim(&s);
	assert_int_equal(s.late, 3);
	assert_true(diff(s.weight, 1000 * MS) <= P);
	assert_true(diff(s.run, 1000 * MS - total(steal, 3)) <= 3 * P);
	/* one period a sample (no tracking): the steal is lost from the wall */
	old.track_in = 0;
	run_sim(&old);
	assert_int_equal(old.late, 0);
	assert_true(1000 * MS - old.weight >= total(steal, 3) - 3 * P);
}

/* Many short stretches (a thread that blocks often); steal at the start
 * of one (before its first sample) and in the middle of another. */
static void test_steal_across_stretches(void **state)
{
	struct span on[100];
	static const struct span steal[] = { { 1000 * MS + 100000, 1009 * MS },
					     { 1403 * MS + 500000, 1411 * MS + 200000 } };
	struct sim s = {
		.on = on, .non = 100, .steal = steal, .nsteal = 2, .jitter_us = 30, .track_in = 1
	};

	for (size_t i = 0; i < 100; i++) {
		on[i].a = i * 20 * MS;
		on[i].b = on[i].a + 2 * MS + (i % 7) * P / 5;
	}
	on[50].b = on[50].a + 12 * MS;
	on[70].b = on[70].a + 15 * MS;
	run_sim(&s);
	assert_int_equal(s.late, 2);
	/* a late first sample counts from a whole period left: half a period
	 * off at most, and the carry makes the rest whole within one */
	assert_true(diff(s.weight, total(on, 100)) <= 2 * P);
	assert_true(diff(s.run, total(on, 100) - total(steal, 2)) <= 3 * P);
}

/* Rounding: a late sample rounded up past the next grid point gives the
 * next sample no period, and the sum stays the time passed. */
static void test_rounding(void **state)
{
	__u64 grid = 0;

	assert_int_equal(pt_sampleclock__periods(5 * P, 4 * P + P / 2, &grid, P, 1), 1);
	assert_int_equal(grid, 5 * P);
	/* 3.6 periods late: 4, on grid 9P */
	assert_int_equal(pt_sampleclock__periods(8 * P + 6 * P / 10, 4 * P, &grid, P, 1), 4);
	assert_int_equal(grid, 9 * P);
	/* the timer's next grid point, 9P (+ jitter): nothing more */
	assert_int_equal(pt_sampleclock__periods(9 * P + 3000, 4 * P, &grid, P, 1), 0);
	assert_int_equal(pt_sampleclock__periods(10 * P + 2000, 4 * P, &grid, P, 1), 1);
	assert_int_equal(grid, 10 * P);
	/* first sample after a switch in 3.4 periods late: 3 */
	assert_int_equal(pt_sampleclock__periods(20 * P + 4 * P / 10, 17 * P, &grid, P, 1), 3);
	assert_int_equal(grid, 20 * P + 4 * P / 10);
	/* switch in not seen (storage made at the first sample): 1 */
	grid = 0;
	assert_int_equal(pt_sampleclock__periods(50 * P, 0, &grid, P, 1), 1);
	assert_int_equal(pt_sampleclock__periods(53 * P, 0, &grid, P, 1), 3);
	/* no off-CPU tracking: 1, whatever the gap */
	assert_int_equal(pt_sampleclock__periods(90 * P, 0, &grid, P, 0), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_on_time),
		cmocka_unit_test(test_steal_in_a_stretch),
		cmocka_unit_test(test_steal_across_stretches),
		cmocka_unit_test(test_rounding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
