/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * summary.json's document: built once from a run's figures
 * (pt_summary__build, from struct pt_report below); every text output
 * (report/emit.h) renders from that document, so summary.json and
 * report.md can never disagree.
 */
#ifndef PT_SUMMARY_H
#define PT_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate/agg.h"
#include "aggregate/gpu.h"
#include "aggregate/bursts.h"
#include "aggregate/stepvals.h"
#include "aggregate/top.h"

struct cJSON;

/* The interpreter behind py: probes, and how they were timed. */
struct pt_report_python {
	const char *version;   /* "3.11.7" */
	const char *path;      /* as the target sees it */
	const char *mechanism; /* "evalframe" */
	const char *probe;     /* "session" (one uprobe session) | "pair" (uprobe + uretprobe) */
	bool perf_trampoline;  /* seen active at every check */
	const char *timing;    /* "exact" | "c-entry-only": every py: row's */
	const char *why;       /* one sentence: why that timing */
	const char *advice;    /* what the user can do, or NULL */
	uint64_t code_objects; /* resolved while attached */
	uint64_t matched;
	uint64_t unreadable;
	uint64_t no_source; /* < 3.11: qualname fell back to co_name */
	const char *no_source_file;
	/* the agent (mechanism "agent"); hooks NULL: none in the process */
	struct {
		/* "sys.monitoring" | "trampolines" | "trampolines + frame
		 * evaluator" | "frame evaluator" */
		const char *hooks;
		/* 3.8-3.11 (NULL evaluator_functions: the agent does not say):
		 * named functions hooked by trampolines, and those the frame
		 * evaluator hooks (async generators, nested functions)
		 * comma-separated; whether it was installed at the end;
		 * trampolines found replaced by the program when put back */
		uint64_t trampolines;
		const char *evaluator_functions;
		bool evaluator;
		uint64_t trampolines_lost;
		const char *loaded_by; /* "environment" | "pep768" | "inject" | "earlier" */
		/* the calls' bounds are its clock reads (PTAG_FLAG_CLOCKS);
		 * reads BPF found outside the hits around them (hits' times
		 * used instead) */
		bool clocks;
		uint64_t clock_rejected;
		int tool_id;	     /* sys.monitoring tool id, -1: none */
		uint64_t candidates; /* code objects it found in the probes' modules */
		uint64_t hooked;     /* of which named: hooked */
		uint64_t scans;	     /* module walks */
		double scan_ms;	     /* the GIL held by its last walk */
		const char *problem; /* a conflict or failure, NULL: none */
		/* its segment's file truncated under us: what and when, NULL: not */
		const char *segment_lost;
		/* loaded_by "inject": the borrowed thread (attach/inject.h) */
		bool injected;
		int inject_tid;
		const char *inject_syscall;
		double inject_pause_ms, inject_wait_ms, inject_call_ms;
	} agent;
	/* the frame probe (mechanism "evalframe"): frames it trapped that no
	 * py: probe names (each one a probe hit the target paid for) */
	bool evalframe;
	uint64_t unnamed_frames;
};

/* Stack sampling (meta.sampling): NULL when it was off. */
struct pt_report_thread {
	uint32_t tid;
	const char *name; /* its Python name, else its comm; or NULL */
	const char *comm; /* its comm, or NULL */
	bool python;
	uint64_t samples;
	uint64_t on_ns, off_ns;
};

/* Native frames in the samples (meta.sampling.native_frames): kept by
 * user/run/samples.c as they are merged, the BPF counts added at the end. */
struct pt_report_native {
	uint64_t stacks;		     /* samples and intervals shown with native frames */
	uint64_t offcpu;		     /* of those, intervals off the CPU */
	uint64_t whole, partial, mismatched; /* how they met: sample/mixed.h */
	uint64_t missing;		     /* sent with one, shown without */
	uint64_t frames, unnamed;	     /* native frames shown; with no symbol */
	uint64_t bytes, unwind_ns;	     /* stack copied; user time unwinding */
	/* intervals off the CPU left with Python frames only: by the budget,
	 * or the thread came back other than through its system call
	 * (bpf/pysample.bpf.c) */
	uint64_t offcpu_budget, offcpu_moved;
	/* samples of threads without Python held and folded into a later
	 * one of their thread (PT_SAMPLEF_POOLED): their time is in it */
	uint64_t pooled;
	/* samples and intervals in the interpreter's GIL code: shown under
	 * "[GIL wait]" or "[GIL]" (sample/mixed.h) */
	uint64_t gil;
	/* how intervals off the CPU get their native stack: "task_work" or
	 * "sys_exit" (bpf/pysample.bpf.c); task works that could not take
	 * one (their intervals are in offcpu_moved) */
	const char *offcpu_via;
	uint64_t offcpu_work_missed;
};

struct pt_report_sampling {
	unsigned int hz;
	uint64_t period_ns;
	const char *mechanism;
	const struct pt_report_thread *threads; /* sorted by wall time, longest first */
	size_t nthreads;
	uint64_t samples, on_ns, off_ns, intervals;
	uint64_t python_samples, no_frames, not_python, not_python_out;
	/* intervals of threads taken for ones without Python at switch-out,
	 * found with a thread state by a later look: kept, stack unknown */
	uint64_t found_late;
	/* intervals whose switch in the kernel did not trace: closed where
	 * the scheduler's run time says (bpf/pysample.bpf.c, close_unseen) */
	uint64_t unseen_in;
	uint64_t truncated, unreadable, unknown_frames, lost;
	uint64_t threads_merged; /* past the row limit: in the "other threads" row */
	/* on-CPU samples whose timer missed periods (steal), and the time of
	 * the periods missed, booked off the CPU (bpf/sampleclock.h) */
	uint64_t late_samples, late_ns;
	unsigned int threads_sampled, threads_failed;
	/* proftrace's own threads in the target (the Python agent's, the
	 * CUPTI shim's): in none of the figures above nor in the stacks */
	const struct pt_report_thread *own;
	size_t nown;
	uint64_t own_samples, own_on_ns, own_off_ns;
	/* threads named by their Python name, by their comm; why none had
	 * its Python name (NULL: no reason known) */
	uint64_t names_python, names_comm;
	const char *names_why;
	const char *folded, *svg, *svg_wall; /* file names written, or NULL */
	/* native_frames on (else native is false): how the samples' native
	 * stacks were merged (user/sample/mixed.h) */
	bool native;
	struct pt_report_native nat;
	/* what the hypervisor took from this machine's CPUs from attach to
	 * the end (util/steal.h), and its share of duration x CPUs; ok:
	 * known (else null) */
	bool steal_ok;
	uint64_t steal_ns;
	double steal_share;
};

/* trace.json (--trace): meta.trace; NULL when it was not asked for. */
struct pt_report_trace {
	const char *file; /* "trace.json" */
	uint64_t events;  /* in its traceEvents */
	uint64_t dropped; /* left out at --trace-max-events */
	uint64_t max_events;
	bool truncated;
};

/* A descendant that was not traced (--children), and why. */
struct pt_report_skipped {
	int pid;
	const char *comm;
	const char *why;
};

#define PT_REPORT_MAX_SKIPPED 64

struct pt_report_meta {
	const char *tool;    /* "proftrace" */
	const char *version; /* PT_VERSION */
	int pid;
	const char *comm;
	const char *exe;
	uint64_t start_unix_ns;
	double duration_s;
	const char *targets_file;
	bool sampling_only; /* no targets file: stacks sampled only (meta.mode) */
	const char *kernel; /* uname -r */
	unsigned int warmup_steps;
	const char *step_probe;			   /* probe text of the step line, or NULL */
	const char *step_mode;			   /* "call" | "iteration" */
	const struct pt_report_python *python;	   /* NULL: no py: probes */
	const struct pt_report_sampling *sampling; /* NULL: no sampling */
	const struct pt_report_trace *trace;	   /* NULL: no --trace */
	/* Several processes. The merged document: every pid traced, in the
	 * order they were added, whether --children was given, and the
	 * descendants not traced (the first PT_REPORT_MAX_SKIPPED). */
	const int *pids; /* NULL: one process */
	size_t npids;
	bool children;
	struct pt_report_skipped skipped[PT_REPORT_MAX_SKIPPED];
	size_t nskipped;
	/* A process's own document (processes[]): rank and local rank from
	 * its environment (-1: not set), when it was attached (s after the
	 * start), and how it ended ("exited", "exec"; NULL: traced to the
	 * end) and when. */
	bool process;
	int rank, local_rank;
	double added_s;
	const char *ended;
	double ended_s;
};

/* One row of `functions`: a resolved function (fid) or a probe that
 * matched nothing (fid < 0, attached false, reason set). */
struct pt_report_func {
	int fid;		    /* index into the aggregator, -1 if none */
	const char *probe;	    /* probe text from the config */
	const char *object;	    /* path as mapped in the target; NULL if unresolved */
	const char *symbol;	    /* NULL if unresolved; C++: demangled */
	const char *mangled;	    /* C++: the ELF symbol; else NULL */
	const char *const *aliases; /* other names at the same address */
	size_t naliases;
	uint64_t file_offset;	 /* of the symbol */
	unsigned int probe_skip; /* bytes skipped to the probed instruction */
	const char *probe_insn;	 /* pt_insn_class__str() */
	bool attached;
	double attached_after_s; /* since proftrace started; valid if attached */
	/* its library was mapped after attach: ms from the mapping to its
	 * probes (calls in between not seen; 0: armed before the mapping) */
	bool has_window;
	double window_ms;
	const char *reason; /* why not attached; NULL when attached */
	bool py;	    /* a py: function: object is its file, symbol its qualname */
	unsigned int line;  /* py: co_firstlineno */
	const char *timing; /* "exact" | "c-entry-only" | "sampled" */
	/* py: rows while sampling: inclusive sampled time (meta.sampling) */
	bool sampled;
	uint64_t s_samples, s_on_ns, s_off_ns;
};

/* One element of `lines`: a function of a `lines` directive. */
struct pt_report_line {
	unsigned int line;
	const char *text; /* NULL: source unavailable */
	uint64_t samples, on_ns, off_ns;
};

struct pt_report_lines_fn {
	const char *probe, *file, *function;
	unsigned int first_line, last_line;
	bool exact; /* its calls are counted exactly */
	int fid;    /* for the exact figures in the aggregator */
	uint64_t samples, on_ns, off_ns;
	const char *source_error;	    /* NULL when the source was read */
	const struct pt_report_line *lines; /* first_line..last_line */
	size_t nlines;
};

struct pt_report_bucket {
	const char *name;
	const char *domain;
};

struct pt_report_health {
	/* A process's own document: the BPF object's counters (drops, depth,
	 * unwound, orphans, Python frames and map) are shared by every
	 * process and shown only in the merged document. */
	bool process;
	uint64_t events;	 /* records read from the ring buffer */
	uint64_t dropped_events; /* records BPF could not write */
	uint64_t depth_overflow;
	uint64_t unwound;
	uint64_t orphan_returns;
	uint64_t lost_calls;
	uint64_t steps_incomplete;
	uint64_t py_unreadable; /* Python frames whose code BPF could not read */
	uint64_t py_map_full;	/* code objects BPF's map could not hold */
	uint64_t py_unresolved; /* Python calls of code freed before it was read */
	/* bounded memory: threads followed, freed at their exit, most held
	 * at once; exits BPF could not report (their state kept to the end);
	 * steps put into runs out of start order (pt_bursts__late) */
	uint64_t threads, threads_ended, threads_max, thread_exits_dropped;
	uint64_t runs_late_steps;
	uint64_t skew_steps_not_kept;  /* past the skew's bound, all processes */
	unsigned int probes_requested; /* functions resolved + probes unresolved */
	unsigned int probes_attached;
};

/* How many functions and lines summary.json's `top` lists. */
#define PT_REPORT_TOP 50

struct pt_report {
	struct pt_report_meta meta;
	const struct pt_agg *agg;
	/* every sampled function and line (`top`); NULL: not sampled */
	const struct pt_top *top;
	const struct pt_report_bucket *buckets; /* config order; step.other is added */
	size_t nbuckets;
	const struct pt_report_func *funcs;
	size_t nfuncs;
	const struct pt_report_lines_fn *lines;
	size_t nlines;
	/* tokens, kv_len, batch per step; NULL or inactive: not configured */
	const struct pt_stepvals *vals;
	uint64_t val_records_dropped; /* value records BPF could not write */
	/* runs split on idle gaps (NULL: not computed); times relative to t0_mono */
	const struct pt_bursts *runs;
	uint64_t t0_mono;
	/* the GPU stream: NULL gpu: none, and gpu_why says why */
	const struct pt_gpu_result *gpu;
	const struct pt_gpuring_info *gpu_info;
	const char *gpu_why;
	const char *gpu_lost; /* the ring's file truncated under us: what and when, NULL: not */
	struct pt_report_health health;
};

/* Build summary.json's document. NULL on allocation failure. */
struct cJSON *pt_summary__build(const struct pt_report *r);

/* One process's line of `skew` (processes with counted steps). */
struct pt_report_skew_proc {
	int pid;
	int rank;	/* -1: not set */
	size_t steps;	/* counted */
	size_t first;	/* its step compared as index 0 */
	size_t slowest; /* indices where it was the slowest */
	size_t fastest;
};

struct pt_skew;
/* Add `skew` to the merged document: k NULL when fewer than two
 * processes had steps (the object says so). 0 or -ENOMEM. */
int pt_summary__add_skew(struct cJSON *doc, const struct pt_skew *k,
			 const struct pt_report_skew_proc *procs, size_t n);

#endif
