/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One proftrace run: the processes it traces and what it keeps of each,
 * shared by the files of user/run/ only (main() sees session.h), which
 * do its parts (README.md: session.c the phases, run.c the steps,
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <signal.h>
#include <time.h>

#include "aggregate/agg.h"
#include "attach/attach.h"
#include "attach/inject.h"
#include "config/config.h"
#include "aggregate/gpu.h"
#include "aggregate/gpulive.h"
#include "gpu/gpuring.h"
#include "gpu/nstid.h"
#include "python/pycode.h"
#include "python/pyprobe.h"
#include "sample/pysym.h"
#include "sample/thrname.h"
#include "python/pythreads.h"
#include "python/python.h"
#include "python/agent.h"
#include <cjson/cJSON.h>

#include "aggregate/overhead.h"
#include "report/summary.h"
#include "calib.h"
#include "procstate.h"
#include "proctable.h"
#include "attach/resolve.h"
#include "aggregate/bursts.h"
#include "sample/sampler.h"
#include "aggregate/skew.h"
#include "aggregate/stacks.h"
#include "aggregate/stepvals.h"
#include "attach/tracee.h"
#include "report/trace.h"
#include "util/log.h"
#include "util/util.h"

#include "env.h"

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
struct pt_outdir;
struct pt_agent;

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

/* A process's Python agent: written by pyagent.c only. */
struct proc_agent {
	struct pt_agent *handle; /* NULL when it has none or it is not used */
	char *why;		 /* why there is none, for the report (owned) */
	uint32_t narm;		 /* code objects it was asked to hook */
	uint64_t *arm;		 /* which, in arm[] order (owned) */
	bool active, warned, lost_said;
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
 * records.c), Python (have_py, py_probed, sampled, other_ns: procs.c),
 * and the parts of its own, each written by one file: the Python agent
 * (agent, struct proc_agent: pyagent.c), the GPU stream (gpu, struct
 * proc_gpu: gpustream.c), what --metrics keeps (metrics: metrics.c).
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

	/* py: probes */
	bool have_py;	/* it runs CPython (py is valid) */
	bool py_probed; /* its frame evaluator is probed */
	bool sampled;	/* its stacks are sampled */
	struct pt_python py;
	struct pt_pyprobe *pyprobe;
	struct pt_pysym *sym;
	struct pt_pythreads *pyth; /* its Python thread names (sampled) */
	struct pt_thrname *tn;	   /* what each sampled thread is called */
	bool other_ns;		   /* in another PID namespace: tids differ inside */
	char proc_root[64], proc_cwd[64];
	int tramp_checks, tramp_on; /* perf trampoline: checks made, seen active */
	uint64_t py_unresolved;	    /* calls of code freed before it could be read */
	const char *py_why_not;	    /* have_py but not probed or sampled: why */
	struct proc_agent agent;    /* pyagent.c's */
	struct pt_pyhint *hint;	    /* py: probes that match nothing (pyhint.c) */

	struct view v;
	struct view *window_view;   /* --interval: the figures of the current window */
	struct pt_skew_steps steps; /* counted steps, for the skew across processes */

	struct proc_gpu gpu;	     /* gpustream.c's */
	struct proc_metrics metrics; /* metrics.c's */

	struct pt_tmem tmem; /* its memory (frame slots of py: values) */
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
 * The files' functions, from the lowest rank to the highest (calib.c's,
 * procstate.c's and proctable.c's are in their own headers, below them
 * all): a file calls only the
 * functions of those before its own here, never of one after it, so no two call each other. Where a
 * lower file has something for a higher one (an fd to wait on, functions to attach), it hands it
 * back instead of calling up. scripts/check-layers.sh holds the order (run_rank) and checks it.
 */

/* probecost.c: what the probes cost, into a view's document */
enum pt_site_kind pt_run__site_kind(const struct proc *p, const struct pt_func *f);
int pt_run__declare_cost(struct proc *p, const struct pt_func *f, struct pt_ovh *o, uint32_t fid);
void pt_run__overhead_doc(const struct run *r, const struct view *v, const struct pt_report *rep,
			  cJSON *doc);

/* metrics.c: --metrics, Prometheus text exposition while attached */
struct pt_metrics;
int pt_run__metrics_open(struct run *r);
void pt_run__metrics_step(struct proc *p, const struct pt_step *s);
void pt_run__metrics_gpu(struct proc *p, const struct pt_gpu_rec *g);
/* Its listening socket, for the event loop to wait on; -1: no --metrics. */
int pt_run__metrics_fd(const struct run *r);
void pt_run__metrics_serve(struct run *r);
void pt_run__metrics_free(struct run *r);
/* What --metrics kept of p (p->metrics). */
void pt_run__metrics_free_proc(struct proc *p);

/* prearm.c: the libraries named by probes and not mapped yet whose file
 * can be found now, resolved ahead of their mapping: the number of
 * functions p's resolver gained (the caller attaches them), *nlibs the
 * libraries; or -ENOMEM. */
int pt_run__prearm(struct proc *p, size_t *nlibs);

/* gpustream.c: a process's GPU stream (p->gpu): the drains hand each
 * record to cb (records.c's pt_run__on_gpu_rec) */
/* Does pid run CUDA (the runtime or the driver library mapped)? */
bool pt_run__runs_cuda(int pid);
/* The CUPTI shim's ring, if p has one (before the clock starts:
 * attaching is what wakes the shim). 0, -ENOMEM, or -PT_EUSAGE when
 * --gpu on cannot be honoured. */
int pt_run__open_gpu(struct proc *p);
/* Its ring attached (p is attaching). 0, or -PT_EUSAGE (--gpu on). */
int pt_run__attach_gpu(struct proc *p);
/* The GPU ring's file was truncated (said once, not read again)? */
bool pt_run__gpu_lost(struct proc *p);
/* Drain p's GPU ring unless it was truncated. */
void pt_run__gpu_drain(struct proc *p, pt_gpuring_cb cb);
/* Each tick: the shim's heartbeat, new threads' ids, a drain. */
void pt_run__gpu_tick(struct proc *p, uint64_t now, pt_gpuring_cb cb);
/* p ended: what its ring holds is taken, and it is read no more. */
void pt_run__gpu_end(struct proc *p, pt_gpuring_cb cb);
/* The run stopped: the shim detached, its last records taken. */
void pt_run__gpu_finish(struct proc *p, pt_gpuring_cb cb);
const struct pt_gpu_rec *pt_run__gpu_record(struct proc *p, const struct pt_gpu_rec *g,
					    struct pt_gpu_rec *host);
/* A counted step, a bucket's call (its bucket_mask): into the join. */
void pt_run__gpu_step(struct proc *p, const struct pt_step *s);
void pt_run__gpu_call(struct proc *p, const struct pt_rec *rec, uint32_t bucket_mask);
/* Its records joined (once: the documents share it); NULL: out of memory. */
const struct pt_gpu_result *pt_run__gpu_result(struct proc *p);
void pt_run__gpu_free(struct proc *p);

/* view.c: a view's aggregators (steps counted reach step_cb). 0 or -ENOMEM. */
int pt_run__new_view(struct run *r, struct view *v,
		     void (*step_cb)(void *ctx, const struct pt_step *s), void *ctx);
void pt_run__free_view(struct view *v);
/* --interval: p's window view (none without), with every function p
 * knows; fed like p's own view */
int pt_run__window_open(struct proc *p);
int pt_run__window_declare(struct proc *p, const struct pt_func *f);
/* A thread ended: the window view forgets it too. */
void pt_run__window_thread_exit(struct proc *p, uint32_t tid);
void pt_run__window_record(struct proc *p, const struct pt_rec *rec);

/* funcs.c: the function table (p->fs, p->mfid, r->merged_funcs) */
/* Room for every function p's resolver has now. 0 or -ENOMEM. */
int pt_run__grow_fstate(struct proc *p);
/* Function i of p is known to the aggregators (merged view too). */
int pt_run__declare_func(struct proc *p, size_t i);
/* Function i of p has its probes now (or was found, for py:). */
void pt_run__mark_attached(struct proc *p, size_t i);
/* What BPF reads at f's calls, when its probe has values. */
void pt_run__set_val_spec(struct proc *p, const struct pt_func *f);
/* Python functions found at run time (by a PYCODE record or in samples):
 * the aggregators and the report learn of them. */
void pt_run__sync_py_funcs(struct proc *p);

/* pyrec.c: records of py: functions */
void pt_run__on_pycode(struct proc *p, const struct pt_rec_pycode *rec);
void pt_run__on_attr(struct proc *p, const struct pt_rec_attr *a);
bool pt_run__py_pending_fid(struct proc *p, const struct pt_rec *rec, uint32_t *fid);
/* Attribute locations not found yet: BPF asks again once they are due. */
void pt_run__attr_retries(struct proc *p, uint64_t now);

/* pyhint.c: py: probes that match nothing, why, and the closest names */
struct pt_pyhint;
struct pt_agent_spec;
/* The (module path, name glob) pairs the agent walks for: each py: probe,
 * and the function reading of a dotted one (py:a.b.c: module a.b); spec_of
 * is each pair's probe. 0 or -ENOMEM (free both). */
int pt_run__py_pairs(const struct run *r, struct pt_agent_spec **pairs, size_t **spec_of,
		     size_t *n);
/* The agent's candidates codes[0..n) were resolved: what matches nothing
 * now is said (once per reason). */
void pt_run__py_hint_agent(struct proc *p, const uint64_t *codes, uint32_t n);
/* Without the agent (p has none: the caller checks), once a second of
 * samples is in: the same from them. */
void pt_run__py_hint_samples(struct proc *p);
/* Why py: probe spec matched nothing in p (for the report), NULL when it
 * matched or nothing can be said. */
const char *pt_run__py_hint_why(struct proc *p, size_t spec);
void pt_run__py_hint_free(struct proc *p);
/* --dry-run: the functions p's Python agent would have hooked for each
 * py: probe now (and why a probe has none), on stdout. */
void pt_run__py_dry_run(struct proc *p);

/* pyagent.c: a process's Python agent (p->agent) */
/* p's agent, if it has one: 0, or -errno with why in err, kept for the
 * report (-ENOENT: none; -EINPROGRESS: asked for through PEP 768, not up
 * yet: each tick looks again). */
int pt_run__agent_start(struct proc *p, char *err, size_t errlen);
void pt_run__agent_tick(struct proc *p, uint64_t now);
void pt_run__agent_stop(struct proc *p);
/* Heartbeat every started process's agent (while another is being started). */
void pt_run__agents_alive(struct run *r);
/* Are its named calls timed through the agent right now? */
bool pt_run__agent_ok(const struct proc *p);
void pt_run__agent_free(struct proc *p);

/* records.c: the record streams (on_* are the callbacks given to attach,
 * sampler, aggregators and GPU ring) */
int pt_run__on_rec(void *ctx, const struct pt_rec *rec, size_t size);
void pt_run__on_step(void *ctx, const struct pt_step *s);
void pt_run__on_merged_step(void *ctx, const struct pt_step *s);
int pt_run__on_gpu_rec(void *ctx, const struct pt_gpu_rec *g);

/* samples.c: a stack sample into its process's stacks (the sampler's callback) */
int pt_run__on_sample(void *ctx, const struct pt_sample *s);

/* procs.c: processes */
int pt_run__open_proc(struct run *r, int pid, bool strict, struct proc **out, char *err,
		      size_t errlen);
int pt_run__start_proc(struct proc *p);
void pt_run__end_proc(struct proc *p, const char *why);
void pt_run__free_proc(struct proc *p);
int pt_run__attach_new(struct proc *p, size_t from);
void pt_run__rescan(struct proc *p);
int pt_run__open_sampler(struct run *r, char *err, size_t errlen);
bool pt_run__py_exact(const struct proc *p);
bool pt_run__want_py_probe(const struct run *r, const struct proc *p);
const char *pt_run__py_timing(const struct proc *p);
/* --children */
void pt_run__scan_children(struct run *r, uint64_t now);
void pt_run__add_cand(struct run *r, int pid, uint64_t now);
int pt_run__add_candidates(struct run *r, uint64_t now, bool at_start);
/* SIGINT or SIGTERM pending while attaching: taken, kept in r->stop_sig,
 * said once; the attach then ends with -PT_ESTOPPED. */
bool pt_run__stop_asked(struct run *r);

/* report.c */
void pt_run__print_dry_run(struct run *r);
/* The output folder (-o, or a new default one), before attaching: -PT_EUSAGE
 * when it cannot be created or written. */
int pt_run__open_output(struct run *r);
int pt_run__write_outputs(struct run *r);
/* The summary document of process p from view v (window.c). */
cJSON *pt_run__view_doc(struct run *r, struct proc *p, struct view *v);

/* window.c: --interval, a summary of each window of SEC seconds */
void pt_run__window_tick(struct run *r, uint64_t now);

/* loop.c: until --duration, SIGINT/SIGTERM or every process ended; the
 * one file that registers fds with the loop's epoll (the others hand
 * theirs over: proc's pidfd, pt_run__metrics_fd) */
int pt_run__loop(struct run *r);

/* run.c: the steps of a session (session.c), each 0 or -errno
 * (-PT_EUSAGE: exit 2), its error said on stderr. pt_run__free after any
 * of them. */
int pt_run__open(struct run *r, const struct pt_env *env);
int pt_run__attach(struct run *r);
int pt_run__report(struct run *r);
void pt_run__free(struct run *r);

#endif
