/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for victim programs: busy-spin for a known time and record ground
 * truth measured inside each function, so tests compare proftrace's numbers
 * with what the program itself saw.
 */
#ifndef VICTIM_H
#define VICTIM_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Probed victim functions must stay real calls: noinline keeps the call,
 * the empty asm keeps the compiler from proving the body pure. */
#define VT_FN __attribute__((noinline, used))
#define VT_BARRIER() __asm__ volatile("" ::: "memory")

static inline uint64_t vt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void vt_spin(uint64_t ns)
{
	uint64_t end = vt_now() + ns;

	while (vt_now() < end)
		VT_BARRIER();
}

/*
 * Each probed call is measured twice: inside the function (total_ns, from
 * its first to its last statement) and around the call at its call site
 * (outer_ns). proftrace's interval, BPF entry to BPF return on the same
 * CLOCK_MONOTONIC, lies between the two for every single call, whatever
 * the scheduler does, so tests check a bracket instead of a guessed
 * tolerance.
 */
struct vt_truth {
	uint64_t calls;
	uint64_t total_ns;
	uint64_t outer_ns;
};

static inline void vt_add(struct vt_truth *t, uint64_t t0)
{
	uint64_t d = vt_now() - t0;

	__atomic_fetch_add(&t->calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&t->total_ns, d, __ATOMIC_RELAXED);
}

static inline void vt_outer(struct vt_truth *t, uint64_t t0)
{
	__atomic_fetch_add(&t->outer_ns, vt_now() - t0, __ATOMIC_RELAXED);
}

/* Call, measuring around the call site into truth t. */
#define VT_CALL(t, call)                                                                           \
	do {                                                                                       \
		uint64_t t0_ = vt_now();                                                           \
		call;                                                                              \
		vt_outer((t), t0_);                                                                \
	} while (0)

#endif
