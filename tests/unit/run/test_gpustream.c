// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/gpustream.c: a process's GPU stream, on a run opened by pt_run__open
 * on a child of this test that waits (no BPF object). The child plays the
 * CUPTI shim: it makes the shim's segment as the shim does (a sealed memfd
 * named proftrace-gpu, shim/memseg.h), laid out and written by the shim's
 * own writer (shim/ring.c), and acts as the shim's control thread does on
 * the header (active once attached, a last flush then dormant once
 * detached); it writes on the test's word the records CUPTI would give
 * (a launch call and its kernel, a copy call and its copy).
 *
 * It proves: pt_run__open_gpu finds the child's ring among its open files
 * (and not a segment it holds of its parent's, across fork, nor a memfd of
 * that name that is not sealed as the shim's is); with no ring, --gpu on
 * is -PT_EUSAGE and --gpu auto runs without one, saying why; --gpu off
 * does not look. pt_run__attach_gpu attaches (the child sees attached,
 * our pid, a new attach_seq), and what was in the ring before is not
 * delivered; another reader attached first is said, --gpu on refuses it.
 * pt_run__gpu_drain hands every record the child wrote to the callback,
 * in the order written, once. pt_run__gpu_tick is the shim's heartbeat
 * and a drain. pt_run__gpu_step and pt_run__gpu_call feed the join and
 * pt_run__gpu_result joins once: the work launched in a step (and in a
 * bucket's call) is the step's, the rest outside steps. A ring whose file
 * went shorter than its mapping (the read faults: util/sigbus.h) is said
 * once and not read again (pt_run__gpu_lost). pt_run__gpu_end takes what
 * is left and reads no more; pt_run__gpu_finish detaches and waits for
 * the shim's last flush; pt_run__free (pt_run__gpu_free) unmaps and closes
 * it, and the shim sees it detached. pt_run__runs_cuda sees CUDA's
 * library mapped.
 *
 * Not here: --inject (loading the shim into a CUDA process: ptrace, CUDA
 * and the built shim, tests/integration test_gpu_late); a process in
 * another PID namespace (pt_run__gpu_record's thread ids mapped: a PID
 * namespace to make, tests/integration test_gpu_ns and
 * tests/unit/gpu/test_nstid); the drains as the loop calls them each tick
 * and at the stop (pt_run__on_gpu_rec is the callback here, the loop's
 * ticks need BPF: tests/integration test_gpu).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "aggregate/agg.h"
#include "aggregate/gpu.h"
#include "bpf/proftrace.h"
#include "gpu/gpuring.h"
#include "run/env.h"
#include "run/gpustream.h"
#include "run/records.h"
#include "run/run.h"
#include "run/steps.h"
#include "util/util.h"
#include "memseg.h"
#include "ptgpu.h"
#include "ring.h"
#include "runfx.h"

#define US 1000ull
#define MS 1000000ull

/* What the targets file names in the child (this binary): noinline with
 * a body, so the symbols are there to resolve. */
RUNFX_VICTIM(gs_victim_step);
RUNFX_VICTIM(gs_victim_forward);

/* ---- the child: the CUPTI shim's side ---- */

/* What the child holds. */
enum seg_kind {
	SEG_NONE,   /* nothing: a process without the shim */
	SEG_SHIM,   /* the shim's segment, made by the shim's writer */
	SEG_FOREIGN /* a memfd of the shim's name, never to be sealed */
};

/* The test's word to the child, and its answer. */
enum { OP_WORK = 1, OP_STATUS };

struct cmd {
	int op;
	uint64_t t; /* OP_WORK: the launch calls' time */
};

struct status {
	uint32_t attached, reader_pid, state;
	uint64_t heartbeat_ns, attach_seq, written;
};

static const char *const kname = "gs_kernel";
static const char *const flush_kname = "gs_flush";

static struct ptg_ring ring; /* the child's writer */
static uint32_t corr = 1;
static uint64_t written;

static void put(const union ptgpu_rec *r)
{
	if (!ptg_ring__write(&ring, r))
		written++;
}

/* A launch or copy call (what the shim's Callback API handler writes). */
static void api(uint64_t t, uint32_t c, uint32_t what)
{
	union ptgpu_rec r = { 0 };

	r.api.type = PTGPU_REC_API;
	r.api.domain = PTGPU_API_DRIVER;
	r.api.correlation_id = c;
	r.api.start_ns = t;
	r.api.end_ns = t + US;
	r.api.cbid = what == PTGPU_API_LAUNCH ? 307 : 279;
	r.api.tid = (uint32_t)syscall(SYS_gettid);
	r.api.pid = (uint32_t)getpid();
	r.api.what = what;
	put(&r);
}

static void kernel(uint64_t t, uint32_t c, const char *name)
{
	union ptgpu_rec r = { 0 };

	r.kernel.type = PTGPU_REC_KERNEL;
	r.kernel.correlation_id = c;
	r.kernel.start_ns = t;
	r.kernel.end_ns = t + 40 * US;
	r.kernel.stream_id = 7;
	r.kernel.name_id = ptg_ring__intern(&ring, name);
	r.kernel.grid_x = 128;
	r.kernel.block_x = 256;
	put(&r);
}

/* One launch at t (its kernel from t + 10 us, 40 us long) and one copy
 * at t + 100 us (1 MiB, from t + 105 us, 30 us long): 4 records. */
static void work(uint64_t t)
{
	union ptgpu_rec r = { 0 };
	uint32_t c = corr++;

	api(t, c, PTGPU_API_LAUNCH);
	kernel(t + 10 * US, c, kname);
	c = corr++;
	api(t + 100 * US, c, PTGPU_API_COPY);
	r.memcpy.type = PTGPU_REC_MEMCPY;
	r.memcpy.correlation_id = c;
	r.memcpy.start_ns = t + 105 * US;
	r.memcpy.end_ns = t + 135 * US;
	r.memcpy.bytes = 1 << 20;
	r.memcpy.copy_kind = 1; /* HtoD */
	r.memcpy.stream_id = 7;
	put(&r);
}

/* The shim's control thread, as far as a reader sees it (ptgpu.h,
 * "Attach protocol"): active for a new attach; once detached, a last
 * flush (a kernel of its own) and dormant. */
static void control(void)
{
	struct ptgpu_header *h = ring.hdr;
	uint32_t attached = __atomic_load_n(&h->attached, __ATOMIC_ACQUIRE);

	if (attached && (h->state != PTGPU_STATE_ACTIVE || h->active_seq != h->attach_seq)) {
		h->active_seq = h->attach_seq;
		h->activations++;
		__atomic_store_n(&h->state, PTGPU_STATE_ACTIVE, __ATOMIC_RELEASE);
	} else if (!attached && h->state == PTGPU_STATE_ACTIVE) {
		kernel(pt_now_ns(CLOCK_MONOTONIC), corr++, flush_kname);
		h->dormant_reason = PTGPU_DORMANT_DETACH;
		__atomic_store_n(&h->state, PTGPU_STATE_DORMANT, __ATOMIC_RELEASE);
	}
}

static int make_segment(enum seg_kind kind)
{
	struct ptg_ring_params p = { .nslots = 256, .strtab_size = 4096 };
	void *mem = NULL;
	size_t size;
	int fd = -1;

	if (kind == SEG_NONE)
		return 0;
	if (kind == SEG_FOREIGN) {
		/* someone's memfd of that name: sealed against sealing, never
		 * against resizing */
		fd = (int)syscall(SYS_memfd_create, PTGPU_MEMFD_NAME, MFD_ALLOW_SEALING);
		return fd < 0 || ftruncate(fd, 1 << 20) || fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL) ? -1
											       : 0;
	}
	p.pid = (uint32_t)getpid();
	p.created_ns = pt_now_ns(CLOCK_MONOTONIC);
	size = ptg_ring__size(p.nslots, p.strtab_size);
	if (pt_memseg__create(PTGPU_MEMFD_NAME, size, &mem, &fd))
		return -1;
	return ptg_ring__init(&ring, mem, size, &p);
}

/* The child's life: its segment, then the test's words until EOF. */
static void __attribute__((noreturn)) shim_child(enum seg_kind kind, int in, int out)
{
	struct cmd c;
	struct status st;
	char ok = make_segment(kind) ? 'e' : 'r';

	if (write(out, &ok, 1) != 1 || ok != 'r')
		_exit(1);
	for (;;) {
		struct pollfd pfd = { .fd = in, .events = POLLIN };
		int n = poll(&pfd, 1, 5);

		if (kind == SEG_SHIM)
			control();
		if (n <= 0)
			continue;
		if (read(in, &c, sizeof(c)) != sizeof(c))
			_exit(0);
		memset(&st, 0, sizeof(st));
		if (c.op == OP_WORK && kind == SEG_SHIM)
			work(c.t);
		if (kind == SEG_SHIM) {
			st.attached = __atomic_load_n(&ring.hdr->attached, __ATOMIC_ACQUIRE);
			st.reader_pid = ring.hdr->reader_pid;
			st.state = ring.hdr->state;
			st.heartbeat_ns = ring.hdr->heartbeat_ns;
			st.attach_seq = ring.hdr->attach_seq;
			st.written = written;
		}
		if (write(out, &st, sizeof(st)) != sizeof(st))
			_exit(1);
	}
}

/* ---- the test's side ---- */

struct fx {
	struct run r;
	bool opened;
	pid_t child, other; /* other: another reader of the child's ring */
	int to, from;	    /* the child's words */
	char targets[64];
};

/* What the drains delivered (names copied). */
#define MAXREC 64
static struct got {
	int n;
	struct pt_gpu_rec r[MAXREC];
	char names[MAXREC][64];
} got;

/* The drains' callback: kept, then on to records.c's, as the loop does. */
static int collect(void *ctx, const struct pt_gpu_rec *g)
{
	assert_true(got.n < MAXREC);
	got.r[got.n] = *g;
	if (g->kind == PT_GPU_KERNEL)
		snprintf(got.names[got.n], sizeof(got.names[0]), "%s", g->kernel.name);
	got.n++;
	return pt_run__on_gpu_rec(ctx, g);
}

static int setup(void **state)
{
	static const char text[] = "step native:exe:gs_victim_step\n"
				   "bucket eng.fwd native:exe:gs_victim_forward\n";
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->child = x->other = -1;
	x->to = x->from = -1;
	snprintf(x->targets, sizeof(x->targets), "/tmp/pt-test-gpustream-XXXXXX");
	if (runfx__targets(x->targets, text))
		return -1;
	memset(&got, 0, sizeof(got));
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->opened)
		pt_run__free(&x->r);
	runfx__reap(x->other);
	runfx__reap(x->child);
	if (x->to >= 0)
		close(x->to);
	if (x->from >= 0)
		close(x->from);
	unlink(x->targets);
	free(x);
	return 0;
}

/* A child holding kind, ready. */
static void start_child(struct fx *x, enum seg_kind kind)
{
	int to[2], from[2];
	char ok = 0;

	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	x->child = fork();
	assert_true(x->child >= 0);
	if (x->child == 0) {
		close(to[1]);
		close(from[0]);
		shim_child(kind, to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	x->to = to[1];
	x->from = from[0];
	assert_int_equal(read(x->from, &ok, 1), 1);
	assert_int_equal(ok, 'r');
}

/* A word to the child; its header as it sees it then. */
static struct status ask(struct fx *x, int op, uint64_t t)
{
	struct cmd c = { .op = op, .t = t };
	struct status st;

	assert_int_equal(write(x->to, &c, sizeof(c)), sizeof(c));
	assert_int_equal(read(x->from, &st, sizeof(st)), sizeof(st));
	return st;
}

/* The run of the child, --gpu gpu (pt_run__open: its process opened by
 * pt_run__open_proc); its process. */
static struct proc *open_run(struct fx *x, int gpu)
{
	struct pt_env env = { 0 };

	env.pid = env.pids[0] = x->child;
	env.npids = 1;
	env.targets = x->targets;
	env.quiet = true;
	env.gpu = gpu;
	assert_int_equal(pt_run__open(&x->r, &env), 0);
	x->opened = true;
	assert_int_equal(x->r.procs.n, 1);
	return x->r.procs.v[0];
}

/* The child's ring found and attached, as pt_run__attach does (the clock
 * started between the two, as there). */
static struct proc *attached(struct fx *x)
{
	struct proc *p;

	start_child(x, SEG_SHIM);
	p = open_run(x, PT_GPU_AUTO);
	assert_int_equal(pt_run__open_gpu(p), 0);
	/* pt_run__attach starts the clock there (it needs BPF) */
	x->r.t0_mono = pt_now_ns(CLOCK_MONOTONIC);
	assert_int_equal(pt_run__attach_gpu(p), 0);
	return p;
}

/* Is a segment of the shim's name open, or mapped, in this process? */
static bool holding_segment(void)
{
	char want[96], line[512];
	bool held = false;
	FILE *f;

	pt_memseg__link(want, sizeof(want), PTGPU_MEMFD_NAME);
	for (int fd = 0; fd < 1024 && !held; fd++) {
		char ent[32];

		snprintf(ent, sizeof(ent), "/proc/self/fd/%d", fd);
		held = pt_memseg__link_is(AT_FDCWD, ent, want);
	}
	f = fopen("/proc/self/maps", "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		held |= strstr(line, "memfd:" PTGPU_MEMFD_NAME) != NULL;
	fclose(f);
	return held;
}

/* Found, attached, drained: the records written after the attach, each
 * once, in the order written. */
static void test_found_attached_drained(void **state)
{
	struct fx *x = *state;
	struct status st;
	struct proc *p;
	uint64_t t;

	start_child(x, SEG_SHIM);
	p = open_run(x, PT_GPU_AUTO);
	assert_null(p->gpu.ring);
	assert_int_equal(pt_run__open_gpu(p), 0);
	assert_non_null(p->gpu.ring);
	assert_non_null(p->gpu.join);
	assert_string_equal(p->gpu.why, "");
	assert_false(p->gpu.attached);
	/* an earlier session's records, in the ring before the attach */
	t = pt_now_ns(CLOCK_MONOTONIC);
	assert_int_equal(ask(x, OP_WORK, t).written, 4);
	/* not attached yet: nothing read */
	pt_run__gpu_drain(p, collect);
	assert_int_equal(got.n, 0);
	x->r.t0_mono = pt_now_ns(CLOCK_MONOTONIC);
	assert_int_equal(pt_run__attach_gpu(p), 0);
	assert_true(p->gpu.attached);
	st = ask(x, OP_STATUS, 0);
	assert_int_equal(st.attached, 1);
	assert_int_equal(st.reader_pid, getpid());
	assert_int_equal(st.attach_seq, 1);
	assert_int_equal(st.state, PTGPU_STATE_ACTIVE);
	pt_run__gpu_drain(p, collect);
	assert_int_equal(got.n, 0);

	t = x->r.t0_mono + 10 * MS;
	ask(x, OP_WORK, t);
	ask(x, OP_WORK, t + MS);
	pt_run__gpu_drain(p, collect);
	assert_int_equal(got.n, 8);
	for (int i = 0; i < 2; i++) {
		const struct pt_gpu_rec *r = &got.r[4 * i];
		uint64_t at = t + (uint64_t)i * MS;

		assert_int_equal(r[0].kind, PT_GPU_API);
		assert_int_equal(r[0].api.what, PT_GPU_API_LAUNCH);
		assert_int_equal(r[0].api.tid, x->child);
		assert_int_equal(r[0].start_ns, at);
		assert_int_equal(r[1].kind, PT_GPU_KERNEL);
		assert_int_equal(r[1].correlation_id, r[0].correlation_id);
		assert_int_equal(r[1].start_ns, at + 10 * US);
		assert_string_equal(got.names[4 * i + 1], kname);
		assert_int_equal(r[2].kind, PT_GPU_API);
		assert_int_equal(r[2].api.what, PT_GPU_API_COPY);
		assert_int_equal(r[3].kind, PT_GPU_MEMCPY);
		assert_int_equal(r[3].correlation_id, r[2].correlation_id);
		assert_int_equal(r[3].memcpy.bytes, 1 << 20);
	}
	assert_true(got.r[4].correlation_id > got.r[2].correlation_id);
	/* once */
	pt_run__gpu_drain(p, collect);
	assert_int_equal(got.n, 8);
}

/* Each tick: the shim's heartbeat (what keeps it active), and a drain. */
static void test_tick_heartbeat(void **state)
{
	struct fx *x = *state;
	struct proc *p = attached(x);
	uint64_t now = pt_now_ns(CLOCK_MONOTONIC) + 123;

	ask(x, OP_WORK, now);
	pt_run__gpu_tick(p, now, collect);
	assert_int_equal(ask(x, OP_STATUS, 0).heartbeat_ns, now);
	assert_int_equal(got.n, 4);
	pt_run__gpu_tick(p, now + 50 * MS, collect);
	assert_int_equal(ask(x, OP_STATUS, 0).heartbeat_ns, now + 50 * MS);
	assert_int_equal(got.n, 4);
}

/* The join: the work launched in a counted step is the step's, and the
 * bucket's whose call it was launched in; the rest is outside steps.
 * Joined once: the documents share it. */
static void test_join_step(void **state)
{
	struct fx *x = *state;
	struct proc *p = attached(x);
	uint64_t t = x->r.t0_mono + 10 * MS, t_out = t + 5 * MS;
	struct pt_step s = { .pid = (uint32_t)x->child,
			     .tid = (uint32_t)x->child,
			     .t_start = t - MS,
			     .t_end = t + MS };
	struct pt_rec call = { .type = PT_REC_EXIT,
			       .pid = (uint32_t)x->child,
			       .tid = (uint32_t)x->child,
			       .t_entry = t - MS / 2,
			       .t_exit = t + MS / 2 };
	const struct pt_gpu_result *res;

	ask(x, OP_WORK, t);	/* in the step, in the bucket's call */
	ask(x, OP_WORK, t_out); /* in no step */
	pt_run__gpu_drain(p, collect);
	assert_int_equal(got.n, 8);
	pt_run__gpu_step(p, &s);
	pt_run__gpu_call(p, &call, 1u << 0);
	/* the loop stopped (loop.c sets it) */
	x->r.t_end_mono = t + 100 * MS;
	res = pt_run__gpu_result(p);
	assert_non_null(res);
	assert_false(p->gpu.oom);
	assert_int_equal(res->kernels, 2);
	assert_int_equal(res->copies, 2);
	assert_int_equal(res->copy_bytes, 2 << 20);
	assert_int_equal(res->api_calls, 4);
	assert_int_equal(res->unmatched, 0);
	assert_int_equal(res->steps, 1);
	assert_int_equal(res->steps_with_gpu, 1);
	assert_int_equal(res->step_items, 2);
	assert_int_equal(res->outside_steps, 2);
	/* a kernel and a copy: 40 + 30 us, in the step's window */
	assert_int_equal(res->step_busy_ns, 70 * US);
	assert_int_equal(res->busy_ns, 140 * US);
	assert_int_equal(res->buckets[0].kernels, 2);
	assert_int_equal(res->buckets[0].gpu_ns, 70 * US);
	assert_true(res->ntop >= 1);
	assert_string_equal(res->top[0].name, kname);
	assert_int_equal(res->top[0].count, 2);
	assert_int_equal(res->window_ns, 100 * MS + 10 * MS);
	/* joined once: a later call (the merged document) is that join */
	x->r.t_end_mono += 100 * MS;
	assert_ptr_equal(pt_run__gpu_result(p), res);
	assert_int_equal(res->window_ns, 110 * MS);
	assert_int_equal(res->kernels, 2);
}

/* No shim in the process: --gpu auto runs without a stream, saying why;
 * --gpu on cannot be honoured. */
static void test_no_ring(void **state)
{
	struct fx *x = *state;
	struct proc *p;
	char want[64];

	start_child(x, SEG_NONE);
	p = open_run(x, PT_GPU_AUTO);
	assert_int_equal(pt_run__open_gpu(p), 0);
	assert_null(p->gpu.ring);
	assert_null(p->gpu.join);
	snprintf(want, sizeof(want), "no CUPTI shim in pid %d", x->child);
	assert_non_null(strstr(p->gpu.why, want));
	assert_int_equal(pt_run__attach_gpu(p), 0);
	assert_false(p->gpu.attached);
	pt_run__gpu_drain(p, collect);
	assert_false(pt_run__gpu_lost(p));
	assert_int_equal(got.n, 0);
	pt_run__free(&x->r);
	x->opened = false;

	p = open_run(x, PT_GPU_ON);
	assert_int_equal(pt_run__open_gpu(p), -PT_EUSAGE);
	assert_null(p->gpu.join);
	assert_non_null(strstr(p->gpu.why, want));
}

/* --gpu off: the ring is not looked for, even where there is one. */
static void test_gpu_off(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	start_child(x, SEG_SHIM);
	p = open_run(x, PT_GPU_OFF);
	assert_int_equal(pt_run__open_gpu(p), 0);
	assert_null(p->gpu.ring);
	assert_null(p->gpu.join);
	assert_string_equal(p->gpu.why, "--gpu off");
	assert_int_equal(pt_run__attach_gpu(p), 0);
	assert_int_equal(ask(x, OP_STATUS, 0).attached, 0);
}

/* The segment a process holds of its parent's (across fork) is not its
 * shim's: not found (util/segment.c's owner check), as if it had none. */
static void test_parent_segment(void **state)
{
	struct fx *x = *state;
	struct ptg_ring_params prm = { .nslots = 256, .strtab_size = 4096 };
	struct ptg_ring mine;
	struct proc *p;
	size_t size = ptg_ring__size(prm.nslots, prm.strtab_size);
	void *mem = NULL;
	int fd = -1;

	prm.pid = (uint32_t)getpid();
	assert_int_equal(pt_memseg__create(PTGPU_MEMFD_NAME, size, &mem, &fd), 0);
	assert_int_equal(ptg_ring__init(&mine, mem, size, &prm), 0);
	start_child(x, SEG_NONE); /* holds ours */
	ptg_ring__free(&mine);
	munmap(mem, size);
	close(fd);
	assert_false(holding_segment());

	p = open_run(x, PT_GPU_AUTO);
	assert_int_equal(pt_run__open_gpu(p), 0);
	assert_null(p->gpu.ring);
	assert_null(p->gpu.join);
	assert_non_null(strstr(p->gpu.why, "no CUPTI shim in pid"));
	pt_run__free(&x->r);
	x->opened = false;
	p = open_run(x, PT_GPU_ON);
	assert_int_equal(pt_run__open_gpu(p), -PT_EUSAGE);
}

/* A memfd of the shim's name that is not sealed as the shim's is: not
 * used, said. */
static void test_foreign_memfd(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	start_child(x, SEG_FOREIGN);
	p = open_run(x, PT_GPU_AUTO);
	assert_int_equal(pt_run__open_gpu(p), 0);
	assert_null(p->gpu.ring);
	assert_null(p->gpu.join);
	assert_non_null(strstr(p->gpu.why, "not sealed"));
	assert_false(holding_segment());
}

/* A reader of the child's ring, attached, in a process of its own (as
 * another proftrace would be). */
static void other_reader(struct fx *x)
{
	int ready[2];
	char ok = 0;

	assert_int_equal(pipe(ready), 0);
	x->other = fork();
	assert_true(x->other >= 0);
	if (x->other == 0) {
		struct pt_gpuring *g;
		char err[256];

		ok = !pt_gpuring__open(&g, x->child, err, sizeof(err)) &&
				     !pt_gpuring__attach(g, pt_now_ns(CLOCK_MONOTONIC))
			     ? 'r'
			     : 'e';
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &ok, 1), 1);
	close(ready[0]);
	assert_int_equal(ok, 'r');
}

/* Another proftrace reads the child's shim: said, no stream (--gpu auto);
 * --gpu on refuses. */
static void test_another_reader(void **state)
{
	struct fx *x = *state;
	struct status st;
	struct proc *p;

	start_child(x, SEG_SHIM);
	other_reader(x);
	p = open_run(x, PT_GPU_AUTO);
	assert_int_equal(pt_run__open_gpu(p), 0);
	assert_non_null(p->gpu.join);
	assert_int_equal(pt_run__attach_gpu(p), 0);
	assert_false(p->gpu.attached);
	assert_null(p->gpu.join);
	assert_non_null(strstr(p->gpu.why, "another proftrace is reading"));
	/* the other reader's still */
	st = ask(x, OP_STATUS, 0);
	assert_int_equal(st.reader_pid, x->other);
	assert_int_equal(st.attach_seq, 1);
	pt_run__free(&x->r);
	x->opened = false;

	p = open_run(x, PT_GPU_ON);
	assert_int_equal(pt_run__open_gpu(p), 0);
	assert_int_equal(pt_run__attach_gpu(p), -PT_EUSAGE);
	assert_null(p->gpu.join);
}

/*
 * The ring's memory goes from under us: its file is shorter than the
 * mapping, so a read faults (a sealed memfd cannot be truncated: the test
 * maps an empty file over the ring, which is what a truncation leaves).
 * The guard pt_run__open_gpu put on it turns the fault into zeros; the
 * loss is said once, and the ring is not read again; what was delivered
 * before stays.
 */
static void test_lost_said_once(void **state)
{
	struct fx *x = *state;
	struct proc *p = attached(x);
	uint64_t t = x->r.t0_mono + 10 * MS;
	char line[512], said[256];
	int empty, err_fd, saved, n = 0;
	size_t len;
	void *map;
	FILE *log;

	ask(x, OP_WORK, t);
	pt_run__gpu_drain(p, collect);
	assert_int_equal(got.n, 4);
	assert_false(pt_run__gpu_lost(p));

	map = pt_gpuring__mapping(p->gpu.ring, &len);
	assert_non_null(map);
	empty = (int)syscall(SYS_memfd_create, "gs-empty", 0);
	assert_true(empty >= 0);
	assert_true(mmap(map, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, empty, 0) ==
		    map);
	close(empty);
	ask(x, OP_WORK, t + MS);

	/* what is said on stderr, kept */
	log = tmpfile();
	assert_non_null(log);
	err_fd = fileno(log);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(err_fd, STDERR_FILENO);
	pt_run__gpu_drain(p, collect);
	pt_run__gpu_drain(p, collect);
	pt_run__gpu_tick(p, pt_now_ns(CLOCK_MONOTONIC), collect);
	assert_true(pt_run__gpu_lost(p));
	assert_false(p->gpu.attached);
	pt_run__gpu_end(p, collect);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);

	assert_int_equal(got.n, 4);
	assert_false(p->gpu.attached);
	assert_non_null(strstr(p->gpu.truncated, "faulted"));
	snprintf(said, sizeof(said), "pid %d: a read of the CUPTI shim's ring faulted", x->child);
	rewind(log);
	while (fgets(line, sizeof(line), log))
		n += strstr(line, said) != NULL;
	fclose(log);
	assert_int_equal(n, 1);
	/* the shim's side is untouched: no heartbeat after the loss */
	assert_int_equal(ask(x, OP_STATUS, 0).attached, 1);
}

/* The process ended: what its ring holds is taken, then no more. */
static void test_end_takes_the_rest(void **state)
{
	struct fx *x = *state;
	struct proc *p = attached(x);
	uint64_t t = x->r.t0_mono + 10 * MS;

	ask(x, OP_WORK, t);
	pt_run__gpu_end(p, collect);
	assert_int_equal(got.n, 4);
	assert_false(p->gpu.attached);
	ask(x, OP_WORK, t + MS);
	pt_run__gpu_drain(p, collect);
	pt_run__gpu_tick(p, pt_now_ns(CLOCK_MONOTONIC), collect);
	pt_run__gpu_end(p, collect);
	pt_run__gpu_finish(p, collect);
	assert_int_equal(got.n, 4);
	/* its join stays, for the documents */
	assert_non_null(p->gpu.join);
}

/* The run stopped: detached, and the shim's last flush taken (it comes
 * after the detach: the finish waits for the shim to say dormant). */
static void test_finish_last_flush(void **state)
{
	struct fx *x = *state;
	struct proc *p = attached(x);
	struct status st;

	assert_int_equal(ask(x, OP_STATUS, 0).state, PTGPU_STATE_ACTIVE);
	ask(x, OP_WORK, x->r.t0_mono + 10 * MS);
	pt_run__gpu_finish(p, collect);
	assert_int_equal(got.n, 5);
	assert_string_equal(got.names[4], flush_kname);
	st = ask(x, OP_STATUS, 0);
	assert_int_equal(st.attached, 0);
	assert_int_equal(st.state, PTGPU_STATE_DORMANT);
}

/* Freed with its process: unmapped, closed, detached. */
static void test_freed(void **state)
{
	struct fx *x = *state;

	attached(x);
	assert_true(holding_segment());
	assert_int_equal(ask(x, OP_STATUS, 0).attached, 1);
	pt_run__free(&x->r); /* pt_run__free_proc: pt_run__gpu_free */
	x->opened = false;
	assert_false(holding_segment());
	assert_int_equal(ask(x, OP_STATUS, 0).attached, 0);
}

/* CUDA's library mapped (what --inject needs to load the shim). */
static void test_runs_cuda(void **state)
{
	struct fx *x = *state;
	char dir[] = "/tmp/pt-test-gpustream-cuda-XXXXXX", lib[64];
	int ready[2], fd;
	char ok = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
	fd = open(lib, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	unlink(lib);
	rmdir(dir);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(pipe(ready), 0);
	x->other = fork();
	assert_true(x->other >= 0);
	if (x->other == 0) {
		ok = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED ? 'e' : 'r';
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fd);
	close(ready[1]);
	assert_int_equal(read(ready[0], &ok, 1), 1);
	close(ready[0]);
	assert_int_equal(ok, 'r');
	x->child = runfx__child();
	assert_true(x->child > 0);
	assert_true(pt_run__runs_cuda(x->other));
	assert_false(pt_run__runs_cuda(x->child));
	runfx__reap(x->other);
	assert_false(pt_run__runs_cuda(x->other));
	x->other = -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_found_attached_drained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tick_heartbeat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_segment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_memfd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_another_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_said_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_end_takes_the_rest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finish_last_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_freed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runs_cuda, setup, teardown),
	};

	return cmocka_run_group_tests_name("gpustream", tests, NULL, NULL);
}
