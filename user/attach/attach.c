// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/btf.h>

#include <bpf/libbpf.h>

#include "attach.h"
#include "util/log.h"
#include "proftrace.skel.h"
#include "resolve.h"

struct link {
	struct bpf_link *l;
	int session_fd; /* a uprobe session link (no bpf_link): its fd, else -1 */
	unsigned int pidx;
};

struct pt_attach {
	struct proftrace_bpf *skel;
	struct ring_buffer *rb;
	struct link *links; /* two per function, the dl hook, the frame probe */
	size_t nlinks, cap;
	size_t nattached;
	struct pt_attach_opts opts;
	bool py_session; /* the frame evaluator is probed as a uprobe session */
	bool multi;	 /* native: functions as uprobe_multi links (6.6+) */
	struct bpf_link *fork_link, *exec_link, *texit_link;
	pthread_t *reapers; /* threads taking out the probes of exec'ed processes */
	size_t nreapers;
};

/* Links to take out, by a thread of their own. */
struct reap {
	struct link *v;
	size_t n;
};

/* Kernel ABI values newer than the system's libbpf 1.1 headers. */
#define PT_BPF_TRACE_UPROBE_MULTI 48
#define PT_BPF_TRACE_UPROBE_SESSION 57
#define PT_BPF_LINK_CREATE 28
#define PT_BPF_F_UPROBE_MULTI_RETURN 1

/*
 * BPF_LINK_CREATE for a uprobe_multi link, by hand: the system's libbpf
 * (1.1) predates uprobe_multi. Layout of union bpf_attr's link_create as
 * in the kernel UAPI (include/uapi/linux/bpf.h).
 */
struct pt_link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 um_flags;
	__u32 pid;
	__u32 pad[17]; /* zero up to 128 bytes: the kernel checks unused bytes */
};

/* uprobe_multi links: kernel 6.6+, seen as their link type in the
 * kernel's BTF. */
static bool kernel_has_uprobe_multi(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool yes;

	if (!btf)
		return false;
	yes = btf__find_by_name_kind(btf, "bpf_uprobe_multi_link", BTF_KIND_STRUCT) > 0;
	btf__free(btf);
	return yes;
}

/* Uprobe sessions: kernel 6.13+, seen as the bpf_session_is_return kfunc
 * in the kernel's BTF. */
static bool kernel_has_uprobe_session(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool yes;

	if (!btf)
		return false;
	yes = btf__find_by_name_kind(btf, "bpf_session_is_return", BTF_KIND_FUNC) > 0;
	btf__free(btf);
	return yes;
}

static int on_sample(void *ctx, void *data, size_t size)
{
	struct pt_attach *a = ctx;

	if (size < sizeof(struct pt_rec))
		return 0;
	return a->opts.on_rec(a->opts.ctx, data, size);
}

int pt_attach__open(struct pt_attach **out, const struct pt_attach_opts *opts, char *err,
		    size_t errlen)
{
	struct pt_attach *a = calloc(1, sizeof(*a));
	int e;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->opts = *opts;
	a->skel = proftrace_bpf__open();
	if (!a->skel) {
		e = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-e));
		goto fail;
	}
	a->skel->rodata->follow_children = opts->follow_children;
	a->skel->rodata->wakeup_each = opts->wakeup_each;
	a->skel->rodata->has_vals = opts->has_vals;
	if (opts->py_probe)
		a->py_session = opts->py_session && kernel_has_uprobe_session();
	/* Load only the Python programs in use (the session one needs a
	 * kernel that knows its attach type and kfunc). */
	bpf_program__set_autoload(a->skel->progs.pt_agent_enter, opts->py_agent);
	bpf_program__set_autoload(a->skel->progs.pt_agent_exit, opts->py_agent);
	bpf_program__set_autoload(a->skel->progs.pt_py_entry, opts->py_probe && !a->py_session);
	bpf_program__set_autoload(a->skel->progs.pt_py_exit, opts->py_probe && !a->py_session);
	bpf_program__set_autoload(a->skel->progs.pt_py_session, a->py_session);
	bpf_program__set_autoload(a->skel->progs.pt_fork, opts->follow_children);
	/* native: probes only when the targets file names a native: function
	 * (pt_exit alone took 1.7 s of verifying on the 2-vCPU VM) */
	bpf_program__set_autoload(a->skel->progs.pt_entry, opts->native);
	bpf_program__set_autoload(a->skel->progs.pt_exit, opts->native);
	/* Many functions of one file as one link: taking a uprobe out waits
	 * for an RCU grace period (~0.1 s), once per link: 2,153 functions
	 * of libc as perf-event uprobes took 470 s to detach. */
	a->multi = opts->native && kernel_has_uprobe_multi();
	if (a->multi) {
		bpf_program__set_expected_attach_type(
			a->skel->progs.pt_entry, (enum bpf_attach_type)PT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(
			a->skel->progs.pt_exit, (enum bpf_attach_type)PT_BPF_TRACE_UPROBE_MULTI);
	}
	if (a->py_session)
		bpf_program__set_expected_attach_type(
			a->skel->progs.pt_py_session,
			(enum bpf_attach_type)PT_BPF_TRACE_UPROBE_SESSION);
	e = libbpf_num_possible_cpus();
	if (e > 0)
		e = bpf_map__set_max_entries(a->skel->maps.val_scratch, (__u32)e);
	if (e) {
		snprintf(err, errlen, "cannot size the value buffers: %s", strerror(-e));
		goto fail;
	}
	e = bpf_map__set_max_entries(a->skel->maps.events, opts->ringbuf_mb << 20);
	if (e) {
		snprintf(err, errlen, "cannot size the ring buffer: %s", strerror(-e));
		goto fail;
	}
	e = proftrace_bpf__load(a->skel);
	if (e) {
		if ((e == -EPERM || e == -EACCES) && geteuid() != 0)
			snprintf(err, errlen,
				 "not allowed to load BPF programs (%s): run as root, e.g. `sudo "
				 "proftrace ...` (or grant CAP_BPF, CAP_PERFMON and "
				 "CAP_SYS_RESOURCE)",
				 strerror(-e));
		else
			snprintf(err, errlen,
				 "cannot load the BPF programs: %s (run with -v for the verifier "
				 "log; kernel >= 5.15 with BTF is needed)",
				 strerror(-e));
		goto fail;
	}
	a->rb = ring_buffer__new(bpf_map__fd(a->skel->maps.events), on_sample, a, NULL);
	if (!a->rb) {
		e = -errno;
		snprintf(err, errlen, "cannot open the ring buffer: %s", strerror(-e));
		goto fail;
	}
	/* exec of a traced process: always (its probes are gone with the
	 * old image); forks: only for --children */
	a->exec_link = bpf_program__attach(a->skel->progs.pt_exec);
	/* thread exits: what is kept per thread is freed as threads end */
	if (a->exec_link)
		a->texit_link = bpf_program__attach(a->skel->progs.pt_texit);
	if (a->exec_link && !a->texit_link) {
		e = -errno;
		snprintf(err, errlen, "cannot attach to the sched_process_exit tracepoint: %s",
			 strerror(-e));
		goto fail;
	}
	if (a->exec_link && opts->follow_children)
		a->fork_link = bpf_program__attach(a->skel->progs.pt_fork);
	if (!a->exec_link || (opts->follow_children && !a->fork_link)) {
		e = -errno;
		snprintf(err, errlen, "cannot attach to the sched_process_%s tracepoint: %s",
			 a->exec_link ? "fork" : "exec", strerror(-e));
		goto fail;
	}
	*out = a;
	return 0;
fail:
	pt_attach__free(a);
	return e ? e : -EINVAL;
}

static void destroy_serial(struct link *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bpf_link__destroy(v[i].l);
		if (v[i].session_fd >= 0)
			close(v[i].session_fd);
	}
}

struct destroy_part {
	struct link *v;
	size_t n;
};

static void *destroy_thread(void *arg)
{
	struct destroy_part *d = arg;

	destroy_serial(d->v, d->n);
	return NULL;
}

/* Links to take out, several at once: each waits for an RCU grace period
 * of its own, and concurrent waits end together. */
#define DESTROY_THREADS 32

static void destroy_links(struct link *v, size_t n)
{
	struct destroy_part parts[DESTROY_THREADS];
	pthread_t t[DESTROY_THREADS];
	size_t k = n < DESTROY_THREADS ? n : DESTROY_THREADS, done = 0, started = 0;

	if (n <= 2) {
		destroy_serial(v, n);
		return;
	}
	for (size_t i = 0; i < k; i++) {
		size_t m = (n - done) / (k - i);

		parts[i] = (struct destroy_part){ v + done, m };
		done += m;
		if (!pthread_create(&t[started], NULL, destroy_thread, &parts[i]))
			parts[started++] = parts[i];
		else
			destroy_serial(parts[i].v, parts[i].n); /* no thread: here */
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
}

void pt_attach__free(struct pt_attach *a)
{
	if (!a)
		return;
	ring_buffer__free(a->rb);
	for (size_t i = 0; i < a->nreapers; i++)
		pthread_join(a->reapers[i], NULL);
	free(a->reapers);
	destroy_links(a->links, a->nlinks);
	bpf_link__destroy(a->fork_link);
	bpf_link__destroy(a->exec_link);
	bpf_link__destroy(a->texit_link);
	free(a->links);
	proftrace_bpf__destroy(a->skel);
	free(a);
}

static int keep_link(struct pt_attach *a, unsigned int pidx, struct bpf_link *l, int session_fd)
{
	if (a->nlinks == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct link *v = realloc(a->links, cap * sizeof(*v));

		if (!v) {
			bpf_link__destroy(l);
			if (session_fd >= 0)
				close(session_fd);
			return -ENOMEM;
		}
		a->links = v;
		a->cap = cap;
	}
	a->links[a->nlinks++] = (struct link){ .l = l, .session_fd = session_fd, .pidx = pidx };
	return 0;
}

static struct bpf_link *uprobe(struct bpf_program *prog, int pid, const char *path, uint64_t off,
			       uint64_t cookie, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie, .retprobe = ret);

	return bpf_program__attach_uprobe_opts(prog, pid, path, off, &o);
}

int pt_attach__agent(struct pt_attach *a, unsigned int pidx, int pid, const char *host_path,
		     const char *path, uint64_t enter_off, uint64_t exit_off, bool clocks,
		     char *err, size_t errlen)
{
	uint64_t cookie = PT_FID_MAKE(pidx, 0) | (clocks ? PT_COOKIE_AGENT_CLOCKS : 0);
	struct bpf_link *l;
	int e;

	if (!a->opts.py_agent) {
		snprintf(err, errlen, "the agent programs were not loaded");
		return -ENOTSUP;
	}
	/* both plain uprobes, no return probe: each site is its own event */
	l = uprobe(a->skel->progs.pt_agent_exit, pid, host_path, exit_off, cookie, false);
	if (!l || (e = keep_link(a, pidx, l, -1)))
		goto fail;
	l = uprobe(a->skel->progs.pt_agent_enter, pid, host_path, enter_off, cookie, false);
	if (!l || (e = keep_link(a, pidx, l, -1)))
		goto fail;
	return 0;
fail:
	e = -errno;
	snprintf(err, errlen, "cannot probe the Python agent %s at 0x%llx/0x%llx: %s", path,
		 (unsigned long long)enter_off, (unsigned long long)exit_off, strerror(-e));
	return e ? e : -EINVAL;
}

int pt_attach__add_proc(struct pt_attach *a, unsigned int pidx, int pid,
			const struct pt_py_offsets *py)
{
	struct pt_bpf_proc p = { .tgid = (__u32)pid };
	__u32 k = pidx, v = (__u32)pid;
	int e;

	if (pidx >= PT_MAX_PROCS)
		return -E2BIG;
	if (py)
		p.py = *py;
	e = bpf_map__update_elem(a->skel->maps.tgids, &v, sizeof(v), &k, sizeof(k), BPF_ANY);
	if (!e)
		e = bpf_map__update_elem(a->skel->maps.procs, &k, sizeof(k), &p, sizeof(p),
					 BPF_ANY);
	return e;
}

static void *reaper(void *arg)
{
	struct reap *r = arg;

	destroy_links(r->v, r->n);
	free(r->v);
	free(r);
	return NULL;
}

void pt_attach__end_proc(struct pt_attach *a, unsigned int pidx, int pid, bool detach)
{
	struct pt_bpf_proc none = { 0 };
	__u32 k = pidx, v = (__u32)pid;
	struct reap *r = NULL;
	pthread_t *t;
	size_t n = 0;

	if (!a)
		return; /* no BPF object (opened, not attached): nothing to end */
	/* Its hits are dropped from now on by the process check. */
	if (bpf_map__update_elem(a->skel->maps.procs, &k, sizeof(k), &none, sizeof(none), BPF_ANY))
		pt_vlog("proftrace: cannot end process %d in BPF (its late hits are counted)\n",
			pid);
	bpf_map__delete_elem(a->skel->maps.tgids, &v, sizeof(v), 0);
	/* An exited process has no breakpoints left to hit: its links wait
	 * for the end. A new image may map the same files: its old probes
	 * would still trap on every call, so they come out now, by a thread
	 * (taking a uprobe out waits for RCU grace periods, ~0.1 s each:
	 * records must not wait meanwhile). */
	if (!detach)
		return;
	r = calloc(1, sizeof(*r));
	if (r)
		r->v = calloc(a->nlinks + 1, sizeof(*r->v));
	for (size_t i = 0; i < a->nlinks; i++) {
		if (a->links[i].pidx != pidx)
			a->links[n++] = a->links[i];
		else if (r && r->v)
			r->v[r->n++] = a->links[i];
		else
			destroy_links(&a->links[i], 1); /* out of memory: here, then */
	}
	a->nlinks = n;
	if (!r || !r->v || !r->n)
		goto done;
	t = realloc(a->reapers, (a->nreapers + 1) * sizeof(*t));
	if (t) {
		a->reapers = t;
		if (!pthread_create(&t[a->nreapers], NULL, reaper, r)) {
			a->nreapers++;
			return;
		}
	}
	destroy_links(r->v, r->n);
done:
	if (r)
		free(r->v);
	free(r);
}

int pt_attach__val_spec(struct pt_attach *a, uint32_t fid, const struct pt_val_spec *spec)
{
	return bpf_map__update_elem(a->skel->maps.val_specs, &fid, sizeof(fid), spec, sizeof(*spec),
				    BPF_ANY);
}

static int multi_link(struct pt_attach *a, struct bpf_program *prog, unsigned int pidx, int pid,
		      const char *path, const unsigned long *offs, const __u64 *cookies, size_t n,
		      bool ret)
{
	struct pt_link_create_uprobe_multi attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (__u32)bpf_program__fd(prog);
	attr.attach_type = PT_BPF_TRACE_UPROBE_MULTI;
	attr.path = (__u64)(uintptr_t)path;
	attr.offsets = (__u64)(uintptr_t)offs;
	attr.cookies = (__u64)(uintptr_t)cookies;
	attr.cnt = (__u32)n;
	attr.um_flags = ret ? PT_BPF_F_UPROBE_MULTI_RETURN : 0;
	attr.pid = (__u32)pid;
	fd = syscall(__NR_bpf, PT_BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	return keep_link(a, pidx, NULL, (int)fd);
}

/* Entry and return probes of n functions of one file as two links
 * (return first, as pt_attach__func). 0 or -errno, nothing kept. */
static int multi_funcs(struct pt_attach *a, unsigned int pidx, int pid,
		       const struct pt_func *const *fs, size_t n)
{
	unsigned long *offs = calloc(n, sizeof(*offs));
	__u64 *cookies = calloc(n, sizeof(*cookies));
	int e = -ENOMEM;

	if (!offs || !cookies)
		goto out;
	for (size_t i = 0; i < n; i++) {
		offs[i] = (unsigned long)(fs[i]->file_off + fs[i]->site.skip);
		cookies[i] = (__u64)PT_FID_MAKE(pidx, fs[i]->fid) |
			     (fs[i]->vals_spec >= 0 ? PT_COOKIE_VALS : 0);
	}
	e = multi_link(a, a->skel->progs.pt_exit, pidx, pid, fs[0]->host_path, offs, cookies, n,
		       true);
	if (e)
		goto out;
	e = multi_link(a, a->skel->progs.pt_entry, pidx, pid, fs[0]->host_path, offs, cookies, n,
		       false);
	if (e)
		destroy_links(&a->links[--a->nlinks], 1);
	else
		a->nattached += n;
out:
	free(offs);
	free(cookies);
	return e;
}

int pt_attach__func(struct pt_attach *a, unsigned int pidx, int pid, const struct pt_func *f,
		    char *err, size_t errlen)
{
	uint64_t off = f->file_off + f->site.skip;
	/* the values flag saves every other function a map lookup */
	uint64_t cookie =
		(uint64_t)PT_FID_MAKE(pidx, f->fid) | (f->vals_spec >= 0 ? PT_COOKIE_VALS : 0);
	struct bpf_link *in, *out;
	int e;

	if (!a->opts.native) {
		snprintf(err, errlen, "the native: probe programs were not loaded");
		return -EINVAL;
	}
	if (a->multi) {
		e = multi_funcs(a, pidx, pid, &f, 1);
		if (e)
			pt_attach__func_err(f, e, err, errlen);
		return e;
	}
	/* Return probe first: an entry without its return would leave a
	 * frame open on every call until the exit probe lands. */
	out = uprobe(a->skel->progs.pt_exit, pid, f->host_path, off, cookie, true);
	if (!out)
		goto fail;
	e = keep_link(a, pidx, out, -1);
	if (e)
		return e;
	in = uprobe(a->skel->progs.pt_entry, pid, f->host_path, off, cookie, false);
	if (!in) {
		e = -errno;
		bpf_link__destroy(a->links[--a->nlinks].l);
		goto msg;
	}
	e = keep_link(a, pidx, in, -1);
	if (e)
		return e;
	a->nattached++;
	return 0;
fail:
	e = -errno;
msg:
	e = e ? e : -EINVAL;
	pt_attach__func_err(f, e, err, errlen);
	return e;
}

void pt_attach__func_err(const struct pt_func *f, int e, char *err, size_t errlen)
{
	snprintf(err, errlen, "cannot attach to %s in %s at 0x%llx: %s", f->symbol, f->object,
		 (unsigned long long)(f->file_off + f->site.skip), strerror(e < 0 ? -e : e));
}

int pt_attach__funcs(struct pt_attach *a, unsigned int pidx, int pid,
		     const struct pt_func *const *fs, size_t n, int *errs)
{
	char err[16];
	int bad = 0;

	if (!a->opts.native) {
		for (size_t i = 0; i < n; i++)
			errs[i] = -EINVAL;
		return (int)n;
	}
	if (a->multi && n > 1 && !multi_funcs(a, pidx, pid, fs, n)) {
		memset(errs, 0, n * sizeof(*errs));
		return 0;
	}
	/* one at a time: which of them cannot be attached */
	for (size_t i = 0; i < n; i++) {
		errs[i] = a->multi ? multi_funcs(a, pidx, pid, &fs[i], 1)
				   : pt_attach__func(a, pidx, pid, fs[i], err, sizeof(err));
		bad += errs[i] != 0;
	}
	return bad;
}

int pt_attach__dl_hook(struct pt_attach *a, unsigned int pidx, int pid, const char *path,
		       uint64_t file_off)
{
	struct bpf_link *l =
		uprobe(a->skel->progs.pt_dlopen, pid, path, file_off, PT_FID_MAKE(pidx, 0), false);

	if (!l)
		return -errno;
	return keep_link(a, pidx, l, -1);
}

static int session_attach(struct pt_attach *a, unsigned int pidx, int pid, const char *path,
			  uint64_t off)
{
	struct pt_link_create_uprobe_multi attr;
	unsigned long offs[1] = { (unsigned long)off };
	__u64 cookies[1] = { PT_FID_MAKE(pidx, 0) };
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (__u32)bpf_program__fd(a->skel->progs.pt_py_session);
	attr.attach_type = PT_BPF_TRACE_UPROBE_SESSION;
	attr.path = (__u64)(uintptr_t)path;
	attr.offsets = (__u64)(uintptr_t)offs;
	attr.cookies = (__u64)(uintptr_t)cookies;
	attr.cnt = 1;
	attr.pid = (__u32)pid;
	fd = syscall(__NR_bpf, PT_BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	return keep_link(a, pidx, NULL, (int)fd);
}

const char *pt_attach__py_probe(const struct pt_attach *a)
{
	return a->py_session ? "session" : "pair";
}

int pt_attach__python(struct pt_attach *a, unsigned int pidx, int pid, const char *host_path,
		      const char *path, uint64_t off, char *err, size_t errlen)
{
	uint64_t cookie = PT_FID_MAKE(pidx, 0);
	struct bpf_link *l;
	int e;

	if (!a->opts.py_probe) {
		snprintf(err, errlen, "the frame probe was not loaded");
		return -ENOTSUP;
	}
	if (a->py_session) {
		e = session_attach(a, pidx, pid, host_path, off);
		if (e)
			snprintf(err, errlen,
				 "cannot attach a uprobe session to _PyEval_EvalFrameDefault in %s "
				 "at 0x%llx: %s (hint: `set py_session off`)",
				 path, (unsigned long long)off, strerror(-e));
		return e;
	}

	l = uprobe(a->skel->progs.pt_py_exit, pid, host_path, off, cookie, true);
	if (!l || (e = keep_link(a, pidx, l, -1)))
		goto fail;
	l = uprobe(a->skel->progs.pt_py_entry, pid, host_path, off, cookie, false);
	if (!l || (e = keep_link(a, pidx, l, -1)))
		goto fail;
	return 0;
fail:
	e = -errno;
	snprintf(err, errlen, "cannot attach to _PyEval_EvalFrameDefault in %s at 0x%llx: %s", path,
		 (unsigned long long)off, strerror(-e));
	return e ? e : -EINVAL;
}

int pt_attach__attr_loc(struct pt_attach *a, const struct pt_attr_key *key,
			const struct pt_pyattr_loc *loc)
{
	return bpf_map__update_elem(a->skel->maps.attr_locs, key, sizeof(*key), loc, sizeof(*loc),
				    BPF_ANY);
}

int pt_attach__attr_forget(struct pt_attach *a, const struct pt_attr_key *key)
{
	return bpf_map__delete_elem(a->skel->maps.attr_locs, key, sizeof(*key), 0);
}

int pt_attach__py_code(struct pt_attach *a, int pid, uint64_t code, const struct pt_py_code *val)
{
	struct pt_py_key k = { .tgid = (__u32)pid, .code = code };

	return bpf_map__update_elem(a->skel->maps.py_codes, &k, sizeof(k), val, sizeof(*val),
				    BPF_ANY);
}

size_t pt_attach__nattached(const struct pt_attach *a)
{
	return a->nattached;
}

int pt_attach__ring_fd(const struct pt_attach *a)
{
	return ring_buffer__epoll_fd(a->rb);
}

int pt_attach__drain(struct pt_attach *a)
{
	return a ? ring_buffer__consume(a->rb) : 0;
}

void pt_attach__counters(const struct pt_attach *a, struct pt_counters *out)
{
	if (!a) {
		memset(out, 0, sizeof(*out));
		return;
	}
	/* .bss is mmap'ed: a plain read sees the BPF side's counters. */
	memcpy(out, (const void *)&a->skel->bss->counters, sizeof(*out));
}
