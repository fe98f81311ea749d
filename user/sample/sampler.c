// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "sampler.h" /* the ABI types, before the skeleton that uses them */
#include "pysample.skel.h"
#include "util/tasks.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* pidfd of a thread, not a process (6.9+) */
#endif

struct sproc {
	int pid;
	uint64_t attach_ns; /* sampling of it began */
	bool ended;	    /* exited or exec'ed: not sampled any more */
};

struct thread {
	int tid, pid;
};

struct pt_sampler {
	struct pysample_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links; /* one per thread event */
	size_t nlinks, cap;
	struct bpf_link *sw;   /* sched_switch */
	struct bpf_link *sysx; /* sys_exit: native stacks off the CPU */
	bool tw;	       /* ... or task works (pysample.bpf.c, tw_cb) */
	struct thread *tids;   /* threads given an event */
	size_t ntids;
	struct sproc *procs;
	size_t nprocs;
	struct pt_sampler_opts o;
	struct pt_sampler_stats st;
	int stats_fd; /* BPF run-time stats on while held; -1: not */
	bool stopped;
};

static int on_rec(void *ctx, void *data, size_t size)
{
	struct pt_sampler *s = ctx;
	const struct pt_sample *r = data;

	if (size >= sizeof(uint32_t) && r->type == PT_REC_USTACK) {
		const struct pt_ustack *u = data;

		if (size < PT_USTACK_HDR_SIZE || u->len > PT_USTACK_MAX ||
		    size < PT_USTACK_HDR_SIZE + u->len || !s->o.on_ustack) {
			s->st.bad_records++;
			return 0;
		}
		return s->o.on_ustack(s->o.ctx, u);
	}
	if (size < PT_SAMPLE_HDR_SIZE || r->nframes > PT_SAMPLE_MAX_FRAMES ||
	    size < PT_SAMPLE_HDR_SIZE + r->nframes * sizeof(r->f[0])) {
		s->st.bad_records++;
		return 0;
	}
	return s->o.on_sample(s->o.ctx, r);
}

/* The BPF walker reads one frame prefix into a 128-byte buffer and takes
 * fields at aligned offsets in it (bpf/pysample.bpf.c). */
static bool layout_fits(const struct pt_py_offsets *L)
{
	return L->frame_size && L->frame_size <= 128 && L->frame_code % 8 == 0 &&
	       L->frame_back % 8 == 0 && L->frame_ip % 8 == 0 && L->frame_lasti % 4 == 0 &&
	       L->frame_code + 8 <= L->frame_size && L->frame_back + 8 <= L->frame_size &&
	       (L->frame_lasti ? L->frame_lasti + 4 : L->frame_ip + 8) <= L->frame_size &&
	       L->frame_owner < L->frame_size;
}

/* Can this kernel's BPF queue a task work (6.18+)? PT_NO_TASK_WORK=1
 * takes the way before (pt_sys_exit), so tests cover both here. */
static bool have_task_work(void)
{
	const char *no = getenv("PT_NO_TASK_WORK");
	struct btf *vmlinux;
	bool have;

	if (no && *no && strcmp(no, "0"))
		return false;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return false;
	have = btf__find_by_name_kind(vmlinux, "bpf_task_work_schedule_resume_impl",
				      BTF_KIND_FUNC) > 0;
	btf__free(vmlinux);
	return have;
}

int pt_sampler__open(struct pt_sampler **out, const struct pt_sampler_opts *o, char *err,
		     size_t errlen)
{
	struct pt_sampler *s;
	int e;

	*out = NULL;
	if (!o->hz) {
		snprintf(err, errlen, "sampling needs a rate");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	/* what a sample costs, measured in this run: the kernel times every
	 * BPF program while this fd is open (two clock reads per run of any
	 * program on the machine, ~20-40 ns; only while sampling) */
	s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	s->skel = pysample_bpf__open();
	if (!s->skel) {
		e = -errno;
		snprintf(err, errlen, "cannot open the sampler's BPF object: %s", strerror(-e));
		goto fail;
	}
	s->skel->rodata->period_ns = 1000000000ull / o->hz;
	s->skel->rodata->offcpu = o->offcpu;
	s->skel->rodata->native = o->native;
	/* native stacks off the CPU: a task work of the thread's where the
	 * kernel has them, else the machine-wide sys_exit tracepoint */
	s->tw = o->offcpu && o->native && have_task_work();
	bpf_program__set_autoload(s->skel->progs.pt_switch, o->offcpu && !s->tw);
	bpf_program__set_autoload(s->skel->progs.pt_switch_tw, s->tw);
	bpf_program__set_autoload(s->skel->progs.pt_sys_exit, o->offcpu && o->native && !s->tw);
	e = bpf_map__set_max_entries(s->skel->maps.samples, o->ringbuf_mb << 20);
	if (!e && !s->tw)
		e = bpf_map__set_max_entries(s->skel->maps.tworks, 1);
	if (!e)
		e = pysample_bpf__load(s->skel);
	if (e) {
		snprintf(err, errlen,
			 "cannot load the sampler's BPF programs: %s (run with -v "
			 "for the verifier log)",
			 strerror(-e));
		goto fail;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), on_rec, s, NULL);
	if (!s->rb) {
		e = -errno;
		snprintf(err, errlen, "cannot open the sample ring: %s", strerror(-e));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	pt_sampler__free(s);
	return e;
}

static bool has_tid(const struct pt_sampler *s, int tid)
{
	for (size_t i = 0; i < s->ntids; i++)
		if (s->tids[i].tid == tid)
			return true;
	return false;
}

static int add_link(struct pt_sampler *s, struct bpf_link *l)
{
	if (s->nlinks == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct bpf_link **v = realloc(s->links, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->links = v;
		s->cap = cap;
	}
	s->links[s->nlinks++] = l;
	return 0;
}

/* One cpu-clock event on thread tid; threads it creates inherit it. */
static int sample_thread(struct pt_sampler *s, int pid, int tid)
{
	struct perf_event_attr a = { 0 };
	struct bpf_link *l;
	struct thread *v;
	int fd, e;

	v = realloc(s->tids, (s->ntids + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->tids = v;
	/* tried: not again, even on failure */
	s->tids[s->ntids++] = (struct thread){ .tid = tid, .pid = pid };
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000000ull / s->o.hz;
	a.inherit = 1;
	a.disabled = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno == ESRCH ? 0 : -errno; /* exited meanwhile: nothing to sample */
	l = bpf_program__attach_perf_event(s->skel->progs.pt_sample, fd);
	if (!l) {
		e = -errno;
		close(fd);
		return e;
	}
	e = add_link(s, l);
	if (e) {
		bpf_link__destroy(l);
		return e;
	}
	s->st.threads++;
	return 0;
}

/*
 * Every thread listed gets an event; threads created later inherit one
 * from their creator. A thread created while we list, by a thread that
 * had no event yet, shows up in the next listing: list until nothing is
 * new.
 */
struct listing {
	struct pt_sampler *s;
	int pid;
	unsigned int added;
};

static int sample_new_thread(void *ctx, int tid)
{
	struct listing *l = ctx;
	int e;

	if (has_tid(l->s, tid))
		return 0;
	l->added++;
	e = sample_thread(l->s, l->pid, tid);
	if (e == -ENOMEM)
		return e;
	if (e)
		l->s->st.threads_failed++;
	return 0;
}

static int sample_all(struct pt_sampler *s, int pid, char *err, size_t errlen)
{
	unsigned int before = s->st.threads;
	struct listing l = { .s = s, .pid = pid, .added = 1 };
	int pass, e;

	for (pass = 0; l.added && pass < 16; pass++) {
		l.added = 0;
		e = pt_tasks__each(pid, sample_new_thread, &l);
		if (e == -ENOMEM) {
			snprintf(err, errlen, "out of memory");
			return e;
		}
		if (e) {
			snprintf(err, errlen, "cannot list the threads of %d: %s", pid,
				 strerror(-e));
			return e;
		}
	}
	if (s->st.threads == before) {
		snprintf(err, errlen, "no thread of %d could be sampled (perf_event_open)", pid);
		return -EPERM;
	}
	return 0;
}

int pt_sampler__attach(struct pt_sampler *s, char *err, size_t errlen)
{
	int e;

	if (s->o.offcpu) {
		s->sw = bpf_program__attach(s->tw ? s->skel->progs.pt_switch_tw
						  : s->skel->progs.pt_switch);
		if (!s->sw) {
			e = -errno;
			snprintf(err, errlen, "cannot attach to sched_switch: %s", strerror(-e));
			return e;
		}
	}
	if (s->o.offcpu && s->o.native && !s->tw) {
		s->sysx = bpf_program__attach(s->skel->progs.pt_sys_exit);
		if (!s->sysx) {
			e = -errno;
			snprintf(err, errlen,
				 "cannot attach to sys_exit (native frames off the CPU): %s",
				 strerror(-e));
			return e;
		}
	}
	return 0;
}

static struct sproc *find_proc(struct pt_sampler *s, int pid)
{
	for (size_t i = s->nprocs; i-- > 0;)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/* The one live process, or 0: BPF's fast path for the usual case. Set
 * to 0 before a second process goes in, so none is ever filtered out. */
static void set_only(struct pt_sampler *s, int adding)
{
	int only = adding, n = adding != 0;

	for (size_t i = 0; i < s->nprocs; i++)
		if (!s->procs[i].ended) {
			only = s->procs[i].pid;
			n++;
		}
	s->skel->bss->only_tgid = n == 1 ? (__u32)only : 0;
}

int pt_sampler__add_process(struct pt_sampler *s, int pid, uint64_t runtime,
			    const struct pt_py_offsets *py, char *err, size_t errlen)
{
	struct pt_sample_proc v = { .runtime = runtime, .py = *py };
	struct timespec ts;
	struct sproc *p;
	__u32 key = (__u32)pid;
	int e;

	if (!layout_fits(py)) {
		snprintf(err, errlen, "Python 3.%u: frame layout unknown to the sampler",
			 py->minor);
		return -ENOTSUP;
	}
	p = realloc(s->procs, (s->nprocs + 1) * sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->procs = p;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v.attach_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	set_only(s, pid);
	e = bpf_map__update_elem(s->skel->maps.tgids, &key, sizeof(key), &v, sizeof(v), BPF_ANY);
	if (e) {
		snprintf(err, errlen, "cannot add process %d to the sampler: %s", pid,
			 strerror(-e));
		return e;
	}
	s->procs[s->nprocs++] = (struct sproc){ .pid = pid, .attach_ns = v.attach_ns };
	return sample_all(s, pid, err, errlen);
}

void pt_sampler__end_process(struct pt_sampler *s, int pid)
{
	struct sproc *p = s ? find_proc(s, pid) : NULL;
	__u32 key = (__u32)pid;

	if (!p || p->ended)
		return;
	p->ended = true;
	bpf_map__delete_elem(s->skel->maps.tgids, &key, sizeof(key), 0);
	set_only(s, 0);
}

int pt_sampler__ring_fd(const struct pt_sampler *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int pt_sampler__drain(struct pt_sampler *s)
{
	return ring_buffer__consume(s->rb);
}

/* A thread that was there at attach and neither ran nor switched since
 * (no task storage): off the CPU the whole window, stack unknown. */
static void whole_window(struct pt_sampler *s, const struct sproc *p, int tid, uint64_t t_end,
			 struct pt_sample_thread *v)
{
	uint64_t t0 = p->attach_ns;

	if (!has_tid(s, tid) || t0 >= t_end)
		return;
	memset(&v->s, 0, PT_SAMPLE_HDR_SIZE);
	v->s.type = PT_REC_OFFCPU;
	v->s.pid = (uint32_t)p->pid;
	v->s.tid = (uint32_t)tid;
	v->s.t = t_end;
	v->s.weight = t_end - t0;
	v->s.flags = PT_SAMPLEF_NO_STACK;
	s->st.closed_at_end++;
	s->o.on_sample(s->o.ctx, &v->s);
}

/* Threads off the CPU now: their interval so far, with the stack they
 * left with. Read through a pidfd, the key of task storage. */
struct closing {
	struct pt_sampler *s;
	const struct sproc *p;
	uint64_t t_end;
	struct pt_sample_thread *v;
};

/* A thread without Python's samples held for its next pooled one
 * (PT_SAMPLEF_POOLED): sent without a stack, so its time is whole. */
static void pool_rest(struct closing *c, int tid, const struct pt_sample_thread *v)
{
	struct pt_sample h;

	if (!v->pool_n)
		return;
	memset(&h, 0, PT_SAMPLE_HDR_SIZE);
	h.type = PT_REC_SAMPLE;
	h.pid = (uint32_t)c->p->pid;
	h.tid = (uint32_t)tid;
	h.t = c->t_end;
	h.weight = v->pool_ns;
	h.periods = (uint32_t)v->pool_n;
	h.flags = PT_SAMPLEF_NOT_PYTHON | PT_SAMPLEF_POOLED;
	c->s->o.on_sample(c->s->o.ctx, &h);
}

static int close_interval(void *ctx, int tid)
{
	struct closing *c = ctx;
	struct pt_sample_thread *v = c->v;
	int pfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);

	if (pfd < 0)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(c->s->skel->maps.threads), &pfd, v)) {
		if (errno == ENOENT)
			whole_window(c->s, c->p, tid, c->t_end, v);
		close(pfd);
		return 0;
	}
	pool_rest(c, tid, v);
	/* taken for a thread without Python and not looked at since
	 * (pysample.bpf.c, settle_held): dropped, as a later look would */
	c->s->st.not_python_at_end += v->held_n + !!v->np_out;
	if (v->pending == 1 && v->pend.nframes <= PT_SAMPLE_MAX_FRAMES) {
		/* closed, its native stack not taken before the end */
		c->s->st.closed_at_end++;
		c->s->o.on_sample(c->s->o.ctx, &v->pend);
	}
	if (v->t_out && v->t_out < c->t_end && v->s.nframes <= PT_SAMPLE_MAX_FRAMES) {
		v->s.t = c->t_end;
		v->s.weight = c->t_end - v->t_out;
		c->s->st.closed_at_end++;
		c->s->o.on_sample(c->s->o.ctx, &v->s);
	}
	close(pfd);
	return 0;
}

/* Threads off the CPU now: their interval so far, with the stack they
 * left with. Read through a pidfd, the key of task storage. */
static void close_open_intervals(struct pt_sampler *s, const struct sproc *p, uint64_t t_end,
				 struct pt_sample_thread *v)
{
	struct closing c = { .s = s, .p = p, .t_end = t_end, .v = v };

	pt_tasks__each(p->pid, close_interval, &c);
}

void pt_sampler__stop(struct pt_sampler *s, uint64_t t_end)
{
	if (!s || s->stopped)
		return;
	s->stopped = true;
	/* Detach first, so no interval is both in the ring and still open. */
	bpf_link__destroy(s->sw);
	s->sw = NULL;
	bpf_link__destroy(s->sysx);
	s->sysx = NULL;
	for (size_t i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	s->nlinks = 0;
	ring_buffer__consume(s->rb);
	if (s->o.offcpu) {
		struct pt_sample_thread *v = malloc(sizeof(*v));

		for (size_t i = 0; v && i < s->nprocs; i++)
			if (!s->procs[i].ended)
				close_open_intervals(s, &s->procs[i], t_end, v);
		free(v);
	}
}

void pt_sampler__stats(const struct pt_sampler *s, struct pt_sampler_stats *out)
{
	const struct bpf_program *progs[] = { s->skel->progs.pt_sample, s->skel->progs.pt_switch,
					      s->skel->progs.pt_switch_tw,
					      s->skel->progs.pt_sys_exit };
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	*out = s->st;
	out->bpf = s->skel->bss->counters;
	out->task_work = s->tw;
	memset(&info, 0, sizeof(info));
	if (s->stats_fd >= 0 &&
	    !bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.pt_sample), &info, &len)) {
		out->prog_runs = info.run_cnt;
		out->prog_run_ns = info.run_time_ns;
	}
	/* runs the kernel skipped (a program already running on that CPU):
	 * a switch not seen loses an interval, never expected */
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		int fd = bpf_program__fd(progs[i]);

		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			out->prog_misses += info.recursion_misses;
	}
}

void pt_sampler__free(struct pt_sampler *s)
{
	if (!s)
		return;
	bpf_link__destroy(s->sw);
	bpf_link__destroy(s->sysx);
	for (size_t i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	ring_buffer__free(s->rb);
	pysample_bpf__destroy(s->skel);
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	free(s->links);
	free(s->tids);
	free(s->procs);
	free(s);
}
