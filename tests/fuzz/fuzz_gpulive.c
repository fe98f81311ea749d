// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_gpulive (aggregate/gpulive.c): GPU records come
 * from the profiled process's shared memory, so their times may be
 * anything, in any order, with settles in between. Each 7-byte op is a
 * record (device, start, length up to 4095), a counted step or a settle; at the end
 * everything is settled. Checked against a brute-force reference (a bit
 * per time unit): busy never exceeds the union of what was given, idle
 * never exceeds step time, nothing is held at the end, and with no late
 * record the figures are exact. Build and run with `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/gpulive.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define T0 1000u
#define LAG 100u
#define KEEP 50u
#define SPAN (1u << 16) /* time units the ops can reach */

struct ref {
	uint8_t any[SPAN / 8], dev[4][SPAN / 8];
	uint32_t steps[4096][2];
	size_t nsteps;
};

static void mark(uint8_t *bits, uint32_t s, uint32_t e)
{
	for (uint32_t t = s; t < e; t++)
		bits[t / 8] |= (uint8_t)(1u << (t % 8));
}

static uint64_t count(const uint8_t *bits, uint32_t s, uint32_t e)
{
	uint64_t n = 0;
	uint32_t t = s;

	for (; t < e && t % 8; t++)
		n += (bits[t / 8] >> (t % 8)) & 1;
	for (; t + 8 <= e; t += 8)
		n += (uint64_t)__builtin_popcount(bits[t / 8]);
	for (; t < e; t++)
		n += (bits[t / 8] >> (t % 8)) & 1;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ref R;
	struct pt_gpulive *g = pt_gpulive__new(T0, LAG, KEEP);
	const struct pt_gpulive_totals *t;
	uint64_t idle = 0, step_ns = 0;

	if (!g)
		return 0;
	memset(&R, 0, sizeof(R));
	for (size_t i = 0; i + 7 <= size; i += 7) {
		const uint8_t *b = data + i;
		uint32_t s = (uint32_t)b[1] | (uint32_t)b[2] << 8;
		uint32_t len = (uint32_t)b[4] | (uint32_t)(b[5] & 0x0f) << 8;
		uint32_t e = s + len < SPAN ? s + len : SPAN - 1;
		uint32_t dev = b[6] & 3;

		switch (b[0] % 3) {
		case 0:
			pt_gpulive__work(g, dev, s, e);
			if (e > s && e > T0) {
				mark(R.any, s > T0 ? s : T0, e);
				mark(R.dev[dev], s > T0 ? s : T0, e);
			}
			break;
		case 1:
			pt_gpulive__step(g, s, e);
			if (R.nsteps < 4096) {
				R.steps[R.nsteps][0] = s;
				R.steps[R.nsteps++][1] = e;
			}
			break;
		default:
			pt_gpulive__settle(g, s);
			break;
		}
	}
	pt_gpulive__settle(g, SPAN + LAG + KEEP);
	t = pt_gpulive__totals(g);
	CHECK(t->held == 0);
	CHECK(t->busy_ns <= count(R.any, 0, SPAN));
	CHECK(t->idle_ns <= t->step_ns);
	for (uint32_t d = 0; d < t->ndevs; d++)
		CHECK(t->devs[d].device < 4 &&
		      t->devs[d].busy_ns <= count(R.dev[t->devs[d].device], 0, SPAN));
	if (!t->late && !t->oom && R.nsteps < 4096) {
		CHECK(t->busy_ns == count(R.any, 0, SPAN));
		for (uint32_t d = 0; d < t->ndevs; d++)
			CHECK(t->devs[d].busy_ns == count(R.dev[t->devs[d].device], 0, SPAN));
		for (size_t k = 0; k < R.nsteps; k++) {
			uint32_t s = R.steps[k][0], e = R.steps[k][1];

			step_ns += e - s;
			idle += (e - s) - count(R.any, s, e);
		}
		CHECK(t->steps == R.nsteps && t->step_ns == step_ns && t->idle_ns == idle);
	}
	pt_gpulive__free(g);
	return 0;
}
