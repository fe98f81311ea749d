/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One proftrace run: the processes it traces and what it keeps of each,
 * shared by the files of user/run/ only (main() sees session.h), which
 * do its parts (README.md: session.c the phases, steps.c the steps,
 * loop.c the event loop, procs.c a process's life, procstate.c its
 * states, proctable.c the table of processes, pyagent.c a process's
 * Python agent, gpustream.c its GPU stream, records.c the routing of
 * records, pyrec.c and samples.c what py: and stack-sample records do,
 * funcs.c the function table, view.c the figures, report.c and window.c
 * the documents and files).
 *
 * Several processes (-p PID,PID, --children) share one BPF object and one
 * sampler; each has its own resolver, aggregator and figures (struct
 * proc), and a merged view (struct view of the run) pools them all, its
 * functions matched across processes by probe, object and symbol.
 */
#ifndef PT_RUN_H
#define PT_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "aggregate/skew.h"
#include "aggregate/stepvals.h"
#include "attach/inject.h"
#include "attach/tracee.h"
#include "bpf/proftrace.h"
#include "config/config.h"
#include "python/agent.h"
#include "python/pycode.h"
#include "python/python.h"
#include "report/summary.h"
#include "sample/unwind.h"
#include "util/util.h"

#include "calib.h"
#include "env.h"
#include "procstate.h"
#include "proctable.h"

/* Fallback maps rescan period: dlopen is seen at once through the
 * dynamic linker hook, this catches anything else (static binaries,
 * mmap'ed code without the hook). */
#define RESCAN_MS 1000
/* A new child is attached once it is this old: a fork is usually
 * followed at once by an exec, and the image wanted is the new one. */
#define CHILD_SETTLE_MS 100

struct fstate {
	bool attached;
	double at_s;
	char *reason;		/* owned */
	unsigned int last_line; /* py: last line per its line table, 0: unknown */
	/* its library was mapped after attach: the time from the mapping
	 * (the dynamic linker's notification) to its probes in place, when
	 * known; 0 when armed before the mapping (prearm.c) */
	bool has_window;
	double window_ms;
};

struct run;
struct proc;
/* held through pointers only: their headers are their users' */
struct pt_agent;
struct pt_agg;
struct pt_attach;
struct pt_bursts;
struct pt_gpu;
struct pt_gpu_result;
struct pt_gpulive;
struct pt_gpuring;
struct pt_metrics;
struct pt_nstid;
struct pt_outdir;
struct pt_ovh;
struct pt_pyhint;
struct pt_pyprobe;
struct pt_pysym;
struct pt_unwind;
struct pt_pythreads;
struct pt_resolver;
struct pt_sampler;
struct pt_sframe;
struct pt_stacks;
struct pt_thrname;
struct pt_trace;

/* Figures of one process, or of all of them merged. */
struct view {
	struct pt_agg *agg;
	struct pt_stepvals sv;
	struct pt_bursts *runs;
	struct pt_stacks *stk; /* NULL: not sampled */
	struct pt_ovh *ovh;    /* the probes' cost in its intervals */
};

/* A type whose attribute location was not found yet: asked again at. */
struct attr_retry {
	struct pt_attr_key key;
	uint64_t due; /* CLOCK_MONOTONIC ns */
};

/* A process's GPU stream (the CUPTI shim's ring): written by gpustream.c
 * only. */
struct proc_gpu {
	struct pt_gpuring *ring;
	struct pt_nstid *nst; /* CUPTI's thread ids -> host ones, when in another PID namespace */
	struct pt_gpu *join;  /* its records, steps and bucket calls; NULL: no stream */
	bool attached;
	bool oom; /* a GPU record, step or bucket call could not be kept */
	bool joined;
	const struct pt_gpu_result *res; /* joined (once joined) */
	char why[1280];			 /* no GPU stream: why */
	char truncated[256]; /* its ring's file truncated by its user: said, not read again */
	int guard;	     /* util/sigbus.h guard of its ring, -1: none */
};

/* Where a process's agent stands, moved by pyagent.c: its named calls are
 * timed exactly in TIMING only. BLOCKED and LOST were said when entered;
 * LOST is final. */
enum pt_agent_state {
	PT_AGENT_WAITING, /* none yet, or its hooks not in yet */
	PT_AGENT_TIMING,  /* its hooks in: the named calls timed */
	PT_AGENT_BLOCKED, /* it cannot hook (another frame evaluator, ...) */
	PT_AGENT_LOST,	  /* its hook replaced, or its segment gone from under us */
};

/* A process's Python agent: written by pyagent.c only. */
struct proc_agent {
	struct pt_agent *handle; /* NULL when it has none or it is not used */
	char *why;		 /* why there is none, for the report (owned) */
	uint32_t narm;		 /* code objects it was asked to hook */
	uint64_t *arm;		 /* which, in arm[] order (owned) */
	enum pt_agent_state state;
	const char *loaded_by;			    /* "environment" (at start), "pep768", "inject",
						     * "earlier" (by an earlier proftrace) */
	bool inject_tried, inject_failed, injected; /* --inject: asked, refused, done */
	struct pt_inject_result inject;		    /* what loading it cost (injected) */
	uint64_t pep768_asked;	   /* when proftrace asked through PEP 768, 0: never */
	char pep768_dir[48];	   /* its script's folder, "" once removed */
	struct pt_agent_info last; /* its segment at the end */
	/* its segment's file truncated by its user: said, not read again */
	char truncated[256];
	/* a memfd of the agent's segment's name that is not the agent's */
	bool foreign;
};

/* A process's Python part: written by pyproc.c only (found when the
 * process is opened, set up as it is attached, freed with it). */
struct proc_python {
	bool have;		      /* it runs CPython (rt is valid) */
	bool probed;		      /* its frame evaluator is probed */
	bool sampled;		      /* its stacks are sampled */
	struct pt_python rt;	      /* its interpreter: layout, version, where */
	struct pt_pyprobe *probe;     /* code objects -> py: functions */
	struct pt_pysym *sym;	      /* code objects -> labels and lines (sampled) */
	struct pt_pythreads *threads; /* its Python thread names (sampled) */
	struct pt_thrname *tn;	      /* what each sampled thread is called */
	bool other_ns;		      /* in another PID namespace: tids differ inside */
	char root[64], cwd[64];	      /* /proc/PID/root and cwd: its source files */
	int tramp_checks, tramp_on;   /* perf trampoline: checks made, seen active */
	struct pt_tmem mem;	      /* its memory, for what is read of its objects */
	struct pt_unwind *unw;	      /* its native stacks (native_frames on), or NULL */
	const char *why_not;	      /* have, but not probed or sampled: why */
};

/* A sample's native stack, unwound, until its sample comes (samples.c). */
#define RUN_NAT_SLOTS 64
#define RUN_NAT_FRAMES 128

struct run_nat {
	bool used;
	uint32_t tid;
	uint64_t t;
	size_t n;
	enum pt_unwind_end end;
	struct pt_unwind_frame f[RUN_NAT_FRAMES];
};

/* What --metrics keeps of a process: written by metrics.c only. */
struct proc_metrics {
	struct pt_gpulive *gpulive; /* GPU busy and host-bound time, live */
	uint64_t gpulive_recs;
};

/*
 * One traced process. Its life is one state (procstate.h: found,
 * attaching, attached or failed, execed, ended), moved by
 * pt_proc__set_state only. The booleans are properties, each set by one
 * part: the maps (rescan, dl_hooked, dl_tried: procs.c, rescan by
 * records.c), and the parts of its own, each written by one file: its
 * Python (python, struct proc_python: pyproc.c), the Python agent (agent,
 * struct proc_agent: pyagent.c), the GPU stream (gpu, struct proc_gpu:
 * gpustream.c), what --metrics keeps (metrics: metrics.c).
 */
struct proc {
	struct run *run;
	unsigned int idx; /* its BPF slot, in fids (PT_FID_MAKE); reused after
			   * it exited (proctable.c) */
	unsigned int pos; /* in run->procs.v */
	struct pt_tracee tracee;
	int rank, local_rank;	   /* RANK, LOCAL_RANK in its environment; -1: not set */
	int pidfd;		   /* readable when it exits; -1: checked each tick */
	enum pt_proc_state state;  /* procstate.h */
	const char *end_why;	   /* "exited" | "exec" */
	uint64_t t_added, t_ended; /* CLOCK_MONOTONIC ns */
	uint64_t events;

	struct pt_resolver *res;
	struct fstate *fs;
	size_t nfs;
	uint32_t *mfid; /* local fid -> fid of the merged view (several processes) */
	bool rescan;
	uint64_t dl_ns; /* first dynamic-linker notification not rescanned yet */
	bool dl_hooked;
	bool dl_tried; /* a dynamic linker was seen: hooked or not, done */

	struct proc_python python; /* pyproc.c's */
	uint64_t py_unresolved;	   /* calls of code freed before it could be read (pyrec.c) */
	struct proc_agent agent;   /* pyagent.c's */
	struct pt_pyhint *hint;	   /* py: probes that match nothing (pyhint.c) */

	struct view v;
	struct view *window_view;   /* --interval: the figures of the current window */
	struct pt_skew_steps steps; /* counted steps, for the skew across processes */

	struct proc_gpu gpu;	     /* gpustream.c's */
	struct proc_metrics metrics; /* metrics.c's */

	struct attr_retry *retries;
	size_t nretries;
};

/* Not ended: its records are routed to it, the loop ticks it. */
static inline bool pt_proc__live(const struct proc *p)
{
	return p->state != PT_PROC_ENDED;
}

/* A function of the merged view: the same probe, object and symbol (or
 * file, qualified name and line) in any process. */
struct mfunc {
	struct proc *p; /* the first process that resolved it */
	int fid;	/* its fid there (the resolver's array moves as it grows:
			 * no pointer into it is kept) */
	bool attached;
	double at_s;
	unsigned int last_line;
};

/* A descendant seen, attached once it is CHILD_SETTLE_MS old. */
struct cand {
	int pid;
	uint64_t seen;
};

/* A descendant not traced, and why (summary.json meta.processes_skipped). */
struct skipped {
	int pid;
	char comm[64];
	char why[160];
};

struct run {
	struct pt_env env;
	struct pt_config cfg;
	struct pt_attach *att;
	struct pt_sampler *smp;
	struct proctable procs; /* proctable.h */
	bool multi;		/* several processes (or --children): merged view + sections */
	struct view all;	/* merged (multi only) */
	struct mfunc *merged_funcs;
	size_t nmerged_funcs;
	const struct pt_python *py0; /* the first process's CPython: python_mode is decided on it */
	bool want_py;
	bool py_probe_wanted;
	uint64_t t0_mono, t0_unix, t_end_mono;
	/* the machine's steal when the clock started (util/steal.h); ok:
	 * it could be read */
	uint64_t steal0_ns;
	bool steal0_ok;
	uint64_t t_start_mono; /* pt_run__open: proftrace's start */
	/* the attach (pt_run__open to the end of pt_run__attach): its wall
	 * time, and proftrace's CPU by its end */
	uint64_t attach_ns, attach_cpu_ns;
	int stop_sig; /* SIGINT or SIGTERM taken while attaching */
	uint64_t events;
	uint64_t dropped_seen;
	int ep;		    /* the event loop's epoll (loop.c), -1: none */
	sigset_t stop_mask; /* SIGINT, SIGTERM: blocked, read from a signalfd */

	/* --children */
	bool scan_children;
	struct cand *cands;
	size_t ncands;
	struct skipped *skipped;
	size_t nskipped;

	/* scratch of one sample: its frames and their labels, merged fids */
	struct pt_sframe *sf, *msf;
	char (*labels)[256];
	/* native_frames on: samples' native stacks until their samples come,
	 * and what became of them (meta.sampling.native_frames) */
	struct run_nat *nat;
	size_t nat_next;
	struct pt_report_native nstat; /* native frames: samples.c */

	/* --trace: trace.json's events */
	struct pt_trace *trace;
	struct pt_outdir *out; /* the output folder, opened before attaching */

	uint8_t *attr_warned; /* per spec and expression: a missing attribute was said */

	struct pt_calib calib;	    /* what a probe hit costs here (calib.h) */
	struct pt_metrics *metrics; /* --metrics (metrics.c) */
	uint64_t next_window;	    /* --interval: when the next window ends */
	unsigned int nwindows;
};

/* epoll tags; TAG_PID + i is process i's pidfd */
enum { TAG_SIG = 1, TAG_TIMER, TAG_RING, TAG_METRICS, TAG_PID = 16 };

static inline double since_start_s(const struct run *r)
{
	return (double)(pt_now_ns(CLOCK_MONOTONIC) - r->t0_mono) / 1e9;
}

/*
 * Each file of user/run/ declares its functions in a header of its own
 * (probecost.h for probecost.c, ...); this one holds the types they share
 * only. The files are ranked, calib.c, procstate.c and proctable.c the
 * lowest (their headers, like this one's types, are below them all): a
 * file calls only the functions of those ranked below its own, never of
 * one above it, so no two call each other, and includes only their
 * headers, so that a lower file does not even see a higher one's
 * functions.
 * Where a lower file has something for a higher one (an fd to wait on,
 * functions to attach), it hands it back instead of calling up.
 * scripts/check-layers.sh holds the order (run_rank) and checks both.
 */

#endif
