/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace.json: the run as a Chrome trace-event JSON file that
 * ui.perfetto.dev and chrome://tracing open (docs/summary.md, "trace.json").
 *
 * Events are kept in a bounded array while the run goes (at most
 * max_events slices and flow events, and max_events / 8 more for events
 * that started before the first one dropped; the kept ones are a time
 * window, the same for every kind: trace.c's late_room) and written at
 * the end, sorted by time. Strings are kept
 * as pointers: function names must live until pt_trace__write (the
 * resolver's do), GPU kernel names too (the ring's live until
 * pt_gpuring__close); thread names are copied.
 *
 * Several processes (one per rank, say) share one file. Tracks (pid, tid
 * in the file):
 *   host thread T of process P     (P, T): one X slice per probed call
 *   its counted steps              (P, PT_TRACE_STEPS_TID + T)
 *   its CUDA runtime/driver calls  (P, PT_TRACE_API_TID + T)
 *   GPU device D, stream S of P    (PT_TRACE_GPU_PID + slot * 256 + D, S)
 * P is the pid pt_trace__thread_name gave T (a CUDA API record's pid when
 * it gave none), else procs[0] of the write options. slot: 0 for the
 * first process that showed GPU work, 1 for the second, and so on, so
 * each (P, D) has a pseudo process of its own (D < 256, as CUDA device
 * ordinals are) and a single process's GPU D is PT_TRACE_GPU_PID + D.
 * It is named "GPU D", or "GPU D (pid P)" when several processes have
 * GPU tracks.
 *
 * A flow (s/f) goes from each launch call to the first GPU work it
 * launched, when both ends were kept; both ends are matched by (process,
 * correlation id), since correlation ids are per process. Its id is
 * n << 32 | correlation id, n the order in which the process first came
 * to pt_trace (0 for the first: the correlation id itself).
 */
#ifndef PT_TRACE_H
#define PT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* its inputs, by pointer: a counted step (aggregate/agg.h) and a GPU record
 * (gpu/gpuring.h) */
struct pt_step;
struct pt_gpu_rec;

#define PT_TRACE_DEFAULT_MAX 1000000
/* Pseudo ids: real pids and tids stay below 2^22 (pid_max). GPU pseudo
 * pids span PT_TRACE_GPU_PID + [0, PT_TRACE_GPU_SLOTS * 256), below 2^31
 * (JSON readers take pids as int32). */
#define PT_TRACE_STEPS_TID 1000000000u
#define PT_TRACE_API_TID 2000000000u
#define PT_TRACE_GPU_PID 1500000000u
#define PT_TRACE_GPU_SLOTS 65536u

struct pt_trace;

/* NULL on allocation failure; nbuckets: entries of pt_step.bucket_ns. */
struct pt_trace *pt_trace__new(size_t max_events, size_t nbuckets);
void pt_trace__free(struct pt_trace *t);

/*
 * One completed call [t0, t1] (CLOCK_MONOTONIC ns) of function name on
 * host thread tid; py: a Python function (cat "python", else "native");
 * bucket_mask: the buckets it belongs to (args.buckets).
 * 0; -ENOSPC when it was dropped at the bound; -ENOMEM (dropped too).
 */
int pt_trace__slice(struct pt_trace *t, uint32_t tid, uint64_t t0, uint64_t t1, const char *name,
		    bool py, uint64_t bucket_mask);
/* A counted step (its bucket_ns and values are copied). */
int pt_trace__step(struct pt_trace *t, const struct pt_step *s);
/*
 * A GPU record of process pid (whose ring it came from; 0: procs[0]):
 * kernels, copies and memsets on their stream's track; API calls go to
 * pt_trace__api; other kinds are ignored (0). -E2BIG (dropped) past
 * PT_TRACE_GPU_SLOTS processes with GPU work.
 */
int pt_trace__gpu(struct pt_trace *t, const struct pt_gpu_rec *g, uint32_t pid);
/* A CUDA runtime/driver call (kind PT_GPU_API) of process pid on its
 * thread's API track; the thread goes under pid unless named with one. */
int pt_trace__api(struct pt_trace *t, const struct pt_gpu_rec *g, uint32_t pid);

/*
 * Name host thread tid of process pid (name copied). pid 0: unknown (the
 * pid known so far stays; none: procs[0]). NULL or "": unknown ("thread
 * <tid>"). Named again, the latest name and pid win.
 */
int pt_trace__thread_name(struct pt_trace *t, uint32_t tid, uint32_t pid, const char *name);
/* Whether tid was named already (so callers read /proc once per tid). */
bool pt_trace__has_thread_name(const struct pt_trace *t, uint32_t tid);

struct pt_trace_proc {
	int pid;
	const char *name; /* comm, or NULL */
	int rank;	  /* -1: unknown */
};

struct pt_trace_write_opts {
	/*
	 * The processes, first the main one (its pid marks the trace cut and
	 * is otherData's pid): one process_name each, "<comm> rank R" when
	 * rank >= 0. A pid that came to pt_trace but is not listed gets one
	 * too ("process"). When the file has several host processes, each
	 * gets a process_sort_index in this order, and the GPU pseudo
	 * processes come after them all, in the order of their host, then by
	 * device.
	 */
	const struct pt_trace_proc *procs;
	size_t nprocs;			 /* >= 1 */
	uint64_t t0;			 /* ts 0 (CLOCK_MONOTONIC ns): when proftrace attached */
	uint64_t start_unix_ns;		 /* the same instant, wall clock (otherData) */
	const char *version;		 /* proftrace's, for otherData */
	const char *const *bucket_names; /* nbuckets; NULL: "bucket <i>" */
};

/* Write the whole file. 0 or -errno (-EINVAL: no procs). */
int pt_trace__write(struct pt_trace *t, FILE *f, const struct pt_trace_write_opts *o);

/*
 * events counts one host process per pid given to pt_trace__thread_name,
 * pt_trace__gpu or pt_trace__api (at least one): exact when the write
 * lists those processes (name a thread of each, its main thread say, to
 * count a process that has no events yet).
 */
struct pt_trace_stats {
	uint64_t events;  /* in traceEvents, as pt_trace__write writes them */
	uint64_t kept;	  /* of which slices and flow events (the bounded part) */
	uint64_t flows;	  /* launch -> GPU work arrows (2 events each) */
	uint64_t dropped; /* slices and flow events left out at the bound */
	uint64_t max_events;
	bool truncated;		/* dropped > 0 */
	uint64_t window_end_ns; /* truncated: the events kept are those that
				 * started before this (CLOCK_MONOTONIC) */
};

/* Applies the bound's window first (so not const): call once recording
 * is over. */
void pt_trace__stats(struct pt_trace *t, struct pt_trace_stats *st);

#endif
