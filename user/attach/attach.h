/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF side as one object: load the skeleton, attach entry/return
 * probes per function (the fid travels as the BPF cookie), drain the ring.
 * Links are owned by this process only (nothing pinned), so the kernel
 * detaches everything when proftrace exits, even on SIGKILL.
 */
#ifndef PT_ATTACH_H
#define PT_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"

struct pt_func;
struct pt_py_code;

/*
 * One object serves every traced process: each is added with an index
 * (pidx < PT_MAX_PROCS) that its probes carry in their fids (proftrace.h),
 * and BPF drops hits of any other process.
 */
struct pt_attach_opts {
	unsigned int ringbuf_mb;
	bool wakeup_each;
	bool follow_children; /* report forks of traced processes (PT_REC_FORK) */
	/* Load the frame-evaluator programs (py: probes timed by the frame
	 * probe); each process's layout comes with pt_attach__add_proc. */
	bool py_probe;
	bool py_session; /* use a uprobe session when the kernel has them */
	/* Load the Python agent's programs (pt_attach__agent). */
	bool py_agent;
	/* Load the native: probes' programs; false: pt_attach__func fails. */
	bool native;
	/* Some probe reads values: load the value readers. */
	bool has_vals;
	/* Called for each record; return non-zero to stop draining. */
	int (*on_rec)(void *ctx, const struct pt_rec *r, size_t size);
	void *ctx;
};

struct pt_attach;

/* -errno with a one-line message; -EPERM means missing privileges. */
int pt_attach__open(struct pt_attach **out, const struct pt_attach_opts *opts, char *err,
		    size_t errlen);
void pt_attach__free(struct pt_attach *a);

/* Trace process pid as index pidx; py: where its CPython keeps what BPF
 * reads (frames, code objects, values), NULL when it runs none. 0 or
 * -errno. */
int pt_attach__add_proc(struct pt_attach *a, unsigned int pidx, int pid,
			const struct pt_py_offsets *py);
/* pid (index pidx) exited or exec'ed: hits still in flight are dropped;
 * detach: its probes come off now (exec: the new image may map the same
 * files), else at pt_attach__free() (it exited: nothing left to hit).
 * With a NULL (no BPF object: a run opened, not attached): nothing. */
void pt_attach__end_proc(struct pt_attach *a, unsigned int pidx, int pid, bool detach);
/* What to read at calls of fid (PT_FID_MAKE: process and local fid),
 * before its probes go in. 0 or -errno. */
int pt_attach__val_spec(struct pt_attach *a, uint32_t fid, const struct pt_val_spec *spec);
/* Entry and return probe for function f of process pid (index pidx).
 * 0 or -errno (message in err). f->vals_spec >= 0: its pt_val_spec must
 * be in place. */
int pt_attach__func(struct pt_attach *a, unsigned int pidx, int pid, const struct pt_func *f,
		    char *err, size_t errlen);
/* The same for n functions of one file (host_path): as two uprobe_multi
 * links where the kernel has them (6.6+; taking a link out waits for an
 * RCU grace period, ~0.1 s, whatever the number of functions in it),
 * else one by one. errs[i]: 0 or -errno for fs[i] (pt_attach__func_err
 * says it). Returns how many failed. */
int pt_attach__funcs(struct pt_attach *a, unsigned int pidx, int pid,
		     const struct pt_func *const *fs, size_t n, int *errs);
void pt_attach__func_err(const struct pt_func *f, int e, char *err, size_t errlen);
/* Probe the dynamic linker's r_brk hook (see pt_dlopen in the BPF code). */
int pt_attach__dl_hook(struct pt_attach *a, unsigned int pidx, int pid, const char *path,
		       uint64_t file_off);
/* Entry and return probe on _PyEval_EvalFrameDefault at file offset off
 * of the interpreter at host_path (path: as the target names it, for
 * messages) in process pid (py: probes): one uprobe session, or a
 * uprobe/uretprobe pair. -ENOTSUP when the object was opened without
 * py_probe. */
int pt_attach__python(struct pt_attach *a, unsigned int pidx, int pid, const char *host_path,
		      const char *path, uint64_t off, char *err, size_t errlen);
/* The Python agent's two probe sites (shim/ptagent.h) in the file at
 * host_path, at these file offsets, in process pid; clocks: they pass
 * the agent's clock reads (PTAG_FLAG_CLOCKS). 0 or -errno. */
int pt_attach__agent(struct pt_attach *a, unsigned int pidx, int pid, const char *host_path,
		     const char *path, uint64_t enter_off, uint64_t exit_off, bool clocks,
		     char *err, size_t errlen);
/* Tell BPF what a code object of process pid is (PT_REC_PYCODE answered;
 * val->fid is a PT_FID_MAKE fid). 0 or -errno. */
int pt_attach__py_code(struct pt_attach *a, int pid, uint64_t code, const struct pt_py_code *val);
/* Where objects of key->type keep the attribute of expression key->k
 * (PT_REC_ATTR answered), or a kind NONE loc with the status to report.
 * 0 or -errno. */
int pt_attach__attr_loc(struct pt_attach *a, const struct pt_attr_key *key,
			const struct pt_pyattr_loc *loc);
/* Ask again at the next such object (its location was not found yet). */
int pt_attach__attr_forget(struct pt_attach *a, const struct pt_attr_key *key);
/* "session" or "pair": how the frame evaluator is probed. */
const char *pt_attach__py_probe(const struct pt_attach *a);
/* Number of functions attached. */
size_t pt_attach__nattached(const struct pt_attach *a);

/* fd to poll: readable after a forced wakeup (dlopen records). */
int pt_attach__ring_fd(const struct pt_attach *a);
/* Drain everything in the ring. Records consumed, or -errno. With a NULL (no
 * BPF object: a run opened, not attached): 0, and its counters all 0. */
int pt_attach__drain(struct pt_attach *a);
void pt_attach__counters(const struct pt_attach *a, struct pt_counters *out);

#endif
