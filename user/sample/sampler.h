/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stack sampler's BPF side (bpf/pysample.bpf.c): a cpu-clock perf
 * event on every thread of the target (inherited by threads created
 * later), the sched_switch program for off-CPU intervals, and the ring
 * their records come through. Nothing is pinned: the kernel removes it
 * all when proftrace exits, however it exits.
 */
#ifndef PT_SAMPLER_H
#define PT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"

struct pt_sampler_opts {
	unsigned int hz;
	bool offcpu;
	unsigned int ringbuf_mb;
	/* each on-CPU sample with its native registers and stack */
	bool native;
	/* Called per record (struct pt_sample, size bytes, nframes checked
	 * against size); return non-zero to stop draining. */
	int (*on_sample)(void *ctx, const struct pt_sample *s);
	/* Called per native stack (len checked against size), just before
	 * the sample of the same tid and t that it belongs to. */
	int (*on_ustack)(void *ctx, const struct pt_ustack *u);
	void *ctx;
};

struct pt_sampler_stats {
	unsigned int threads;	     /* threads given a perf event */
	unsigned int threads_failed; /* threads that could not be given one */
	unsigned int closed_at_end;  /* off-CPU intervals still open at the end */
	/* intervals of threads taken for ones without Python, not settled by
	 * the end (bpf/pysample.bpf.c, settle_held): dropped */
	unsigned int not_python_at_end;
	unsigned int bad_records; /* records of a wrong size: never expected */
	/* native stacks off the CPU taken by task works (pysample.bpf.c,
	 * tw_cb), else at sys_exit */
	bool task_work;
	struct pt_sample_counters bpf;
	/* the kernel's BPF run-time stats of the sample program (the cost
	 * of a sample less the timer interrupt around it); runs 0: not
	 * available (the stats could not be turned on) */
	uint64_t prog_runs, prog_run_ns;
	/* runs of the sampler's programs the kernel skipped (one already
	 * running on that CPU): samples or switches not seen */
	uint64_t prog_misses;
};

struct pt_sampler;

/* Load the programs. -errno with a one-line message. */
int pt_sampler__open(struct pt_sampler **out, const struct pt_sampler_opts *o, char *err,
		     size_t errlen);
/* Start the off-CPU program. 0 or -errno with a message. */
int pt_sampler__attach(struct pt_sampler *s, char *err, size_t errlen);
/* Sample every thread of process pid (its &_PyRuntime at runtime, its
 * interpreter's layout py), now and threads it creates later. 0 or -errno
 * with a message (-ENOTSUP: a frame layout the walker cannot read). */
int pt_sampler__add_process(struct pt_sampler *s, int pid, uint64_t runtime,
			    const struct pt_py_offsets *py, char *err, size_t errlen);
/* Stop sampling pid (it exited or exec'ed). */
void pt_sampler__end_process(struct pt_sampler *s, int pid);
int pt_sampler__ring_fd(const struct pt_sampler *s);
int pt_sampler__drain(struct pt_sampler *s);
/* Stop sampling, deliver what is in the ring, then close the off-CPU
 * intervals of threads still off the CPU at t_end (CLOCK_MONOTONIC ns). */
void pt_sampler__stop(struct pt_sampler *s, uint64_t t_end);
void pt_sampler__stats(const struct pt_sampler *s, struct pt_sampler_stats *out);
void pt_sampler__free(struct pt_sampler *s);

#endif
