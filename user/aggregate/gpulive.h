/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU busy and host-bound time while the run goes on (--metrics), in
 * constant memory: the end-of-run join (gpu.h) holds every record, this
 * keeps only what is younger than a settle point.
 *
 * CUPTI hands records over late (buffers flushed every 100 ms, a kernel's
 * record only once it ended), so the figures of a time t are final only
 * when every record that can touch t has arrived. The settle point S
 * trails the clock by `lag`: what lies before S is counted and forgotten,
 * what after it is held (the union of the work so far and the steps not
 * settled yet). A record that arrives with part of its time before S is
 * late: that part is left out, and counted in `late` (never silently).
 * With no late record, the settled figures equal the end-of-run join's
 * over the same time (tests/unit/aggregate/test_gpulive.c).
 *
 * Figures are counters over [t0, S): busy time per device and of the
 * union over all devices, and of each counted step that ended before S
 * its time and the part of it no GPU worked (host-bound). A step's
 * record comes at its end, so the union is kept `keep_ns` further back
 * than S for the steps still to come; a step that began before that is
 * late too (the GPU work of its start is gone: it may count as idle).
 */
#ifndef PT_GPULIVE_H
#define PT_GPULIVE_H

#include <stdint.h>

struct pt_gpulive;

struct pt_gpulive_dev {
	uint32_t device;
	uint64_t busy_ns; /* union of its work in [t0, settled) */
};

struct pt_gpulive_totals {
	uint64_t settled; /* the settle point S (ns, CLOCK_MONOTONIC) */
	uint64_t busy_ns; /* union over all devices in [t0, S) */
	uint64_t steps;	  /* counted steps that ended before S */
	uint64_t step_ns; /* their summed time */
	uint64_t idle_ns; /* the part of it with no GPU work on any device */
	uint64_t late;	  /* records that arrived with time before S, and steps
			   * that began before the union kept */
	uint64_t late_ns; /* that time, left out */
	uint64_t held;	  /* intervals and steps held now (the memory) */
	uint64_t oom;	  /* records or steps not taken: out of memory */
	const struct pt_gpulive_dev *devs;
	uint32_t ndevs;
};

/* Figures from t0 on (the attach), settling `lag_ns` behind the clock,
 * the union kept `keep_ns` behind that for steps longer than the lag. */
struct pt_gpulive *pt_gpulive__new(uint64_t t0, uint64_t lag_ns, uint64_t keep_ns);
void pt_gpulive__free(struct pt_gpulive *g);
/* GPU work [s, e) on a device: a kernel, copy or memset. */
void pt_gpulive__work(struct pt_gpulive *g, uint32_t device, uint64_t s, uint64_t e);
/* A counted step [s, e) of the process (any thread). */
void pt_gpulive__step(struct pt_gpulive *g, uint64_t s, uint64_t e);
/* Move the settle point to now - lag (never back) and count what it passed. */
void pt_gpulive__settle(struct pt_gpulive *g, uint64_t now);
/* The figures as of the last settle; valid until the next call. */
const struct pt_gpulive_totals *pt_gpulive__totals(struct pt_gpulive *g);

#endif
