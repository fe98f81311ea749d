// SPDX-License-Identifier: BSD-2-Clause
/*
 * libproftrace_agent.so: loaded into a CPython process at start
 * (LD_PRELOAD, from `proftrace env`), at attach on 3.14+ (PEP 768, by
 * proftrace), or with `proftrace --inject`. Dormant until proftrace
 * attaches: nothing installed in the interpreter, one thread asleep on a
 * futex in the control segment (shim/ptagent.h has the protocol).
 *
 * In a process that is not CPython it does nothing at all; in one it
 * cannot serve (a version or build we do not support) it only publishes
 * why, so proftrace can say so.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "scan.h"
#include "shim/memseg.h"
#include "shim/ptagent.h"

struct ptag_agent {
	struct pt_pyapi api;
	struct ptag_hooks hooks;
	struct ptag_header *hdr;
	char *mem;
	int fd; /* the segment's memfd, and its file */
	dev_t dev;
	ino_t ino;
	pid_t owner;
	bool supported;
	/* the control thread's view */
	bool active;
	uint64_t failed_seq; /* an attach that failed: not retried */
	uint64_t last_scan_ns;
	ssize_t last_nmods;
	uint64_t rescan_seen;
	struct ptag_scan scan; /* the candidates, references held */
	PyObject *cand[PTAG_MAX_CODES];
	PyObject *near[PTAG_MAX_NEAR_HOW];	/* what a probe that matched nothing could name */
	struct ptag_fn fns[2 * PTAG_MAX_CODES]; /* the candidates' functions (3.8-3.11) */
	bool scanning; /* a walk is under way: an import it causes is not walked again */
	char files[PTAG_FILES_SIZE];
	struct ptag_spec specs[PTAG_MAX_SPECS];
	uint32_t nspecs;
};

static struct ptag_agent g = { .fd = -1 };

static uint64_t ptag_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the segment ---- */

/* The segment: a sealed memfd that proftrace finds through /proc/PID/fd
 * (shim/memseg.h says why not a name in /dev/shm). Kept open and mapped
 * for the process's life; the kernel frees it with the process. */
static int segment_create(struct ptag_agent *a)
{
	void *mem = NULL;
	struct stat st;
	int e;

	/* a second copy of the agent, loaded from another path */
	if (pt_memseg__ours_open(PTAG_MEMFD_NAME, PTAG_MAGIC, PTAG_MAGIC_LEN,
				 offsetof(struct ptag_header, agent_pid)))
		return -EADDRINUSE;
	e = pt_memseg__create(PTAG_MEMFD_NAME, PTAG_SIZE, &mem, &a->fd);
	if (e)
		return e;
	if (!fstat(a->fd, &st)) {
		a->dev = st.st_dev;
		a->ino = st.st_ino;
	}
	a->mem = mem;
	a->hdr = mem;
	return 0;
}

static void segment_publish(struct ptag_agent *a)
{
	struct ptag_header *h = a->hdr;

	h->version = PTAG_VERSION;
	h->header_size = PTAG_HEADER_SIZE;
	h->total_size = PTAG_SIZE;
	h->agent_pid = (uint32_t)a->owner;
	h->py_hex = a->api.hex;
	h->created_ns = ptag_now_ns();
	h->enter_addr = (uint64_t)pt_agent_enter;
	h->exit_addr = (uint64_t)pt_agent_exit;
	h->tool_id = -1;
	h->mechanism = a->api.minor >= 12 ? PTAG_MECH_MONITORING : PTAG_MECH_EVALFRAME;
	h->files_off = PTAG_FILES_OFF;
	h->files_size = PTAG_FILES_SIZE;
	h->cand_off = PTAG_CAND_OFF;
	h->cand_cap = PTAG_MAX_CODES;
	h->arm_off = PTAG_ARM_OFF;
	h->arm_cap = PTAG_MAX_CODES;
	h->flags = PTAG_FLAG_SPECS | PTAG_FLAG_HOW | PTAG_FLAG_CLOCKS;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, PTAG_MAGIC, PTAG_MAGIC_LEN);
}

static void set_state(struct ptag_agent *a, uint32_t state, uint32_t reason)
{
	__atomic_store_n(&a->hdr->dormant_reason, reason, __ATOMIC_RELAXED);
	__atomic_store_n(&a->hdr->state, state, __ATOMIC_RELEASE);
}

static void set_conflict(struct ptag_agent *a, uint32_t conflict, const char *text)
{
	snprintf(a->hdr->conflict_text, sizeof(a->hdr->conflict_text), "%s", text);
	__atomic_store_n(&a->hdr->conflict, conflict, __ATOMIC_RELEASE);
}

/* ---- what proftrace wrote (ours to check) ---- */

/* The probes: nfiles pairs "path\0glob\0", copied out first so proftrace
 * cannot change them under us. */
static int read_specs(struct ptag_agent *a)
{
	uint32_t n = __atomic_load_n(&a->hdr->nfiles, __ATOMIC_ACQUIRE), k = 0;
	const char *p = a->files, *end = a->files + sizeof(a->files);

	memcpy(a->files, a->mem + PTAG_FILES_OFF, sizeof(a->files));
	a->files[sizeof(a->files) - 1] = 0;
	while (k < n && k < sizeof(a->specs) / sizeof(a->specs[0]) && p < end) {
		const char *path = p, *glob = memchr(p, 0, (size_t)(end - p));

		if (!glob || ++glob >= end || !memchr(glob, 0, (size_t)(end - glob)))
			break;
		a->specs[k].path = path;
		a->specs[k].glob = glob;
		k++;
		p = glob + strlen(glob) + 1;
	}
	a->nspecs = k;
	return k ? 0 : -EINVAL;
}

/* The layout proftrace knows; offsets past any plausible struct are
 * refused rather than followed. */
static int read_layout(struct ptag_agent *a)
{
	const struct ptag_header *h = a->hdr;
	struct ptag_layout *L = &a->hooks.L;

	L->tstate_frame = h->tstate_frame;
	L->cframe_frame = h->cframe_frame;
	L->frame_code = h->frame_code;
	L->frame_owner = h->frame_owner;
	L->code_flags = h->code_flags;
	L->interp_eval_frame = h->interp_eval_frame;
	L->code_mask = h->code_mask;
	a->hooks.no_tramp = h->options & PTAG_OPT_NO_TRAMPOLINES;
	a->scan.type_dict = h->type_dict;
	a->scan.type_flags = h->type_flags;
	if (L->tstate_frame > 4096 || L->cframe_frame > 64 || L->frame_code > 512 ||
	    L->frame_owner > 512 || L->code_flags > 512 || L->interp_eval_frame > 65536 ||
	    !L->code_mask || !a->scan.type_dict || a->scan.type_dict > 1024 ||
	    !a->scan.type_flags || a->scan.type_flags > 1024)
		return -EINVAL;
	return 0;
}

/* ---- with the GIL ---- */

static bool gil_ok(struct ptag_agent *a, uint32_t *reason)
{
	if (!a->api.IsInitialized()) {
		*reason = PTAG_DORMANT_WAITING;
		return false;
	}
	if (a->api.IsFinalizing()) {
		*reason = PTAG_DORMANT_FINALIZING;
		return false;
	}
	return true;
}

static void publish(struct ptag_agent *a)
{
	struct ptag_scan *s = &a->scan;
	uint64_t *cand = (uint64_t *)(a->mem + PTAG_CAND_OFF);

	uint64_t *near = (uint64_t *)(a->mem + PTAG_NEAR_OFF);
	uint8_t *found = (uint8_t *)(a->mem + PTAG_FOUND_OFF);

	for (uint32_t i = 0; i < s->n; i++)
		cand[i] = (uint64_t)s->out[i];
	a->hdr->ncand = s->n;
	a->hdr->cand_dropped = s->dropped;
	for (uint32_t i = 0; i < PTAG_MAX_SPECS; i++)
		found[i] = ptag_scan__found(s, i);
	for (uint32_t i = 0; i < s->nnear; i++)
		near[i] = (uint64_t)s->near[i];
	a->hdr->nnear = s->nnear;
	a->hdr->near_dropped = s->near_dropped;
	__atomic_fetch_add(&a->hdr->cand_seq, 1, __ATOMIC_RELEASE);
}

/* Walk the modules (GIL held), publish the candidates. */
static void scan(struct ptag_agent *a)
{
	struct ptag_scan *s = &a->scan;
	uint64_t t0 = ptag_now_ns();
	PyObject *mods = a->api.SysGet("modules");

	a->scanning = true;
	ptag_scan__free(s);
	s->api = &a->api;
	s->out = a->cand;
	s->cap = PTAG_MAX_CODES;
	s->near = a->near;
	s->near_cap = PTAG_MAX_NEAR_HOW;
	/* 3.8-3.11: the functions too, for the trampolines */
	s->fns = a->fns;
	s->fns_cap = a->hooks.mechanism == PTAG_MECH_EVALFRAME ? 2 * PTAG_MAX_CODES : 0;
	s->unwrap = ptag_hooks__unwrap;
	s->unwrap_ctx = &a->hooks;
	s->specs = a->specs;
	s->nspecs = a->nspecs;
	s->dropped = 0;
	/* counted before the walk: a module imported while it runs (the walk
	 * calls into Python, which lets other threads run; on_import is off
	 * meanwhile) makes the count differ, so the next tick scans again.
	 * Counted after, such a module was never scanned: a lazily imported
	 * probe's module stayed unhooked for the whole run (CI, asan) */
	a->last_nmods = mods ? a->api.DictSize(mods) : -1;
	ptag_scan__run(s); /* out of memory: what was found is used */
	a->scanning = false;
	a->hooks.watch_imports = !ptag_scan__all_found(s);
	a->hdr->scans++;
	a->hdr->scan_ns = ptag_now_ns() - t0;
	publish(a);
	a->last_scan_ns = ptag_now_ns();
}

/* What is hooked, and how (how[]: per arm[] slot, want[0..n); none
 * when the arm came from an import: proftrace's list is older). */
static void hooked(struct ptag_agent *a, const uint64_t *want, uint32_t n)
{
	uint8_t *how = (uint8_t *)(a->mem + PTAG_HOW_OFF);
	struct ptag_hooks *h = &a->hooks;
	uint32_t nt = 0;

	for (uint32_t k = 0; k < h->narmed; k++)
		nt += ptag_hooks__how(h, h->armed[k]) == PTAG_HOOK_TRAMPOLINE;
	if (want) {
		memset(how, 0, PTAG_MAX_CODES / 8);
		for (uint32_t i = 0; nt && i < n; i++) {
			/* looked up in the hooks' sets by address only: what
			 * proftrace wrote is never handed to Python */
			PyObject *c = (PyObject *)__atomic_load_n(&want[i], __ATOMIC_RELAXED);

			if (ptag_hooks__how(h, c) == PTAG_HOOK_TRAMPOLINE)
				how[i / 8] |= (uint8_t)(1u << (i % 8));
		}
	}
	a->hdr->narmed = h->narmed;
	a->hdr->ntramp = nt;
	a->hdr->evaluator_on = h->evaluator;
	a->hdr->tramp_lost = h->tramp.lost + h->tramp.replaced;
}

/*
 * A module was imported, in the importing thread (GIL held), before the
 * program can call into it. Its candidates are hooked at once: BPF times
 * their first calls as code objects it does not know yet and asks
 * proftrace, whose arm list then keeps only the named ones.
 */
static void on_import(void *ctx, PyObject *module)
{
	struct ptag_agent *a = ctx;
	uint32_t n0 = a->scan.n, n;
	uint64_t walked = a->scan.modules;
	PyObject **v;
	char why[128];

	if (!a->active || a->scanning || !a->scan.match)
		return;
	a->scanning = true;
	ptag_scan__module(&a->scan, module);
	a->scanning = false;
	if (a->scan.modules == walked)
		return; /* not a probe's module */
	a->hooks.watch_imports = !ptag_scan__all_found(&a->scan);
	publish(a); /* its candidates, or that it is there (found[], near[]) */
	if (a->scan.n == n0)
		return;
	n = a->hooks.narmed + (a->scan.n - n0);
	v = malloc(n * sizeof(*v));
	if (!v)
		return;
	memcpy(v, a->hooks.armed, a->hooks.narmed * sizeof(*v));
	memcpy(v + a->hooks.narmed, a->scan.out + n0, (a->scan.n - n0) * sizeof(*v));
	if (!ptag_hooks__arm(&a->hooks, v, n, a->scan.fns, a->scan.nfns, why, sizeof(why)))
		hooked(a, NULL, 0);
	free(v);
}

/* Hook what proftrace named, of our candidates only: an address it
 * writes is never given to the interpreter unless we found that object
 * ourselves (and hold a reference to it). */
static void arm(struct ptag_agent *a, uint64_t seq)
{
	const uint64_t *want = (const uint64_t *)(a->mem + PTAG_ARM_OFF);
	uint32_t n = __atomic_load_n(&a->hdr->narm, __ATOMIC_ACQUIRE), k = 0;
	PyObject **codes;
	char why[128] = "";
	uint64_t t0 = ptag_now_ns();
	int e;

	if (n > PTAG_MAX_CODES)
		n = PTAG_MAX_CODES;
	codes = calloc(n ? n : 1, sizeof(*codes));
	if (!codes)
		return;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t c = __atomic_load_n(&want[i], __ATOMIC_RELAXED);

		for (uint32_t j = 0; j < a->scan.n; j++)
			if ((uint64_t)a->scan.out[j] == c) {
				codes[k++] = a->scan.out[j];
				break;
			}
	}
	e = ptag_hooks__arm(&a->hooks, codes, k, a->scan.fns, a->scan.nfns, why, sizeof(why));
	free(codes);
	if (e == -EBUSY)
		set_conflict(a, PTAG_CONFLICT_EVAL_FRAME, why);
	else if (e && e != -EAGAIN)
		set_conflict(a, PTAG_CONFLICT_PYTHON_ERROR, why);
	if (e == -EAGAIN)
		return; /* an import's arm is under way: asked again next tick */
	hooked(a, want, n);
	a->hdr->arm_ns = ptag_now_ns() - t0;
	__atomic_store_n(&a->hdr->armed_seq, seq, __ATOMIC_RELEASE);
}

static void deactivate(struct ptag_agent *a, uint32_t reason)
{
	int gs;

	if (a->active && a->api.IsInitialized() && !a->api.IsFinalizing()) {
		gs = a->api.GILState_Ensure();
		ptag_hooks__off(&a->hooks);
		ptag_scan__free(&a->scan);
		a->api.GILState_Release(gs);
	}
	a->active = false;
	a->hdr->narmed = 0;
	a->hdr->tool_id = -1;
	set_state(a, PTAG_STATE_DORMANT, reason);
}

static void activate(struct ptag_agent *a, uint64_t seq)
{
	char why[128] = "";
	uint32_t reason;
	int gs, e;

	if (!gil_ok(a, &reason)) {
		set_state(a, PTAG_STATE_DORMANT, reason); /* asked again next tick */
		return;
	}
	if (read_specs(a) || read_layout(a)) {
		set_conflict(a, PTAG_CONFLICT_PYTHON_ERROR,
			     "the segment's probes or layout are invalid");
		a->failed_seq = seq;
		set_state(a, PTAG_STATE_DORMANT, PTAG_DORMANT_FAILED);
		return;
	}
	gs = a->api.GILState_Ensure();
	a->hooks.api = &a->api;
	a->hooks.on_import = on_import;
	a->hooks.ctx = a;
	e = ptag_hooks__on(&a->hooks, why, sizeof(why));
	if (!e) {
		scan(a);
		/* watch imports from now on where a probe's module is to come */
		if (a->hooks.watch_imports)
			ptag_hooks__arm(&a->hooks, NULL, 0, NULL, 0, why, sizeof(why));
	}
	a->api.GILState_Release(gs);
	a->hdr->tool_id = a->hooks.tool;
	if (e) {
		set_conflict(a, e == -EBUSY ? PTAG_CONFLICT_TOOL_IDS : PTAG_CONFLICT_PYTHON_ERROR,
			     why);
		a->failed_seq = seq;
		set_state(a, PTAG_STATE_DORMANT,
			  e == -EBUSY ? PTAG_DORMANT_CONFLICT : PTAG_DORMANT_FAILED);
		return;
	}
	set_conflict(a, PTAG_CONFLICT_NONE, "");
	a->active = true;
	a->rescan_seen = __atomic_load_n(&a->hdr->rescan_seq, __ATOMIC_ACQUIRE);
	a->hdr->activations++;
	__atomic_store_n(&a->hdr->active_seq, seq, __ATOMIC_RELEASE);
	set_state(a, PTAG_STATE_ACTIVE, PTAG_DORMANT_NEVER);
}

/* Active: arms asked for, lazy imports, our evaluator still in place. */
static void service(struct ptag_agent *a, uint64_t now)
{
	uint64_t arm_seq = __atomic_load_n(&a->hdr->arm_seq, __ATOMIC_ACQUIRE);
	uint64_t rescan = __atomic_load_n(&a->hdr->rescan_seq, __ATOMIC_ACQUIRE);
	bool want_arm = arm_seq != a->hdr->armed_seq;
	bool want_scan = rescan != a->rescan_seen || now - a->last_scan_ns >= PTAG_RESCAN_NS;
	uint32_t reason;
	int gs;

	if (!want_arm && !want_scan && a->hooks.mechanism != PTAG_MECH_EVALFRAME)
		return;
	if (!gil_ok(a, &reason)) {
		deactivate(a, reason);
		return;
	}
	gs = a->api.GILState_Ensure();
	if (want_scan) {
		PyObject *mods = a->api.SysGet("modules");

		/* a new module (a lazy import) is what brings new code */
		if (rescan != a->rescan_seen || (mods && a->api.DictSize(mods) != a->last_nmods))
			scan(a);
		a->rescan_seen = rescan;
		a->last_scan_ns = now;
	}
	if (want_arm)
		arm(a, arm_seq);
	if (!ptag_hooks__check(&a->hooks)) {
		a->hdr->hook_lost = a->hooks.lost;
		set_conflict(a, PTAG_CONFLICT_EVAL_FRAME,
			     "another frame evaluator (PEP 523) replaced the agent's");
	}
	/* the program set a named function's __code__ itself: said */
	if (a->hooks.tramp.api && ptag_tramp__replaced(&a->hooks.tramp))
		a->hdr->tramp_lost = a->hooks.tramp.lost + a->hooks.tramp.replaced;
	a->api.GILState_Release(gs);
}

static void tick(struct ptag_agent *a)
{
	struct ptag_header *h = a->hdr;
	uint64_t now = ptag_now_ns();
	uint64_t hb = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE);
	uint64_t seq = __atomic_load_n(&h->attach_seq, __ATOMIC_ACQUIRE);
	bool attached = __atomic_load_n(&h->attached, __ATOMIC_ACQUIRE);
	/* a heartbeat in the future is as dead as an old one (garbage) */
	bool alive = hb <= now + PTAG_HEARTBEAT_TIMEOUT_NS && now - hb < PTAG_HEARTBEAT_TIMEOUT_NS;

	if (a->active && (!attached || !alive)) {
		deactivate(a, !attached ? PTAG_DORMANT_DETACH : PTAG_DORMANT_TIMEOUT);
		return;
	}
	if (a->active && seq != h->active_seq)
		deactivate(a, PTAG_DORMANT_RESTART);
	if (!a->active && attached && alive && seq != a->failed_seq)
		activate(a, seq);
	if (a->active)
		service(a, now);
}

static bool want_ticks(const struct ptag_agent *a)
{
	return a->active || __atomic_load_n(&a->hdr->attached, __ATOMIC_ACQUIRE);
}

static void *control(void *arg)
{
	struct ptag_agent *a = arg;
	struct timespec ts = { PTAG_TICK_NS / 1000000000ull, PTAG_TICK_NS % 1000000000ull };
	sigset_t all;

	/* the program's signals are its own business */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		uint32_t w = __atomic_load_n(&a->hdr->wake, __ATOMIC_ACQUIRE);

		tick(a);
		/* dormant: asleep until proftrace wakes us, no timer at all */
		syscall(SYS_futex, &a->hdr->wake, FUTEX_WAIT, w, want_ticks(a) ? &ts : NULL, NULL,
			0);
	}
	return NULL;
}

static int start(struct ptag_agent *a)
{
	pthread_attr_t attr;
	pthread_t thr;
	int e;

	a->owner = getpid();
	a->active = false;
	a->failed_seq = 0;
	e = segment_create(a);
	if (e)
		return e;
	segment_publish(a);
	if (!a->supported)
		return 0; /* the segment says why; no thread */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	e = -pthread_create(&thr, &attr, control, a);
	pthread_attr_destroy(&attr);
	if (!e)
		pthread_setname_np(thr, "proftrace-py");
	return e;
}

/*
 * fork(): the child has none of our thread, and the parent's segment is
 * not its. A child that exec()s soon (subprocess) should cost nothing, so
 * its agent starts a moment later, from a thread that first checks the
 * image is still ours. Hooks inherited from an active parent are taken out
 * then: the child's proftrace (if any) attaches to its own agent.
 */
static bool g_forked_active;
static void *g_parent_mem;
static int g_parent_fd = -1;
static dev_t g_parent_dev;
static ino_t g_parent_ino;

static void *child_start(void *arg)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	struct ptag_agent *a = arg;
	int gs;

	nanosleep(&ts, NULL);
	if (g_forked_active && a->api.IsInitialized() && !a->api.IsFinalizing()) {
		gs = a->api.GILState_Ensure();
		ptag_hooks__off(&a->hooks);
		ptag_scan__free(&a->scan);
		a->api.GILState_Release(gs);
	}
	/* the parent's segment: not ours to keep alive or to be found by */
	if (g_parent_mem)
		munmap(g_parent_mem, PTAG_SIZE);
	/* a number the program closed and reused meanwhile is its own */
	if (pt_memseg__same(g_parent_fd, g_parent_dev, g_parent_ino))
		close(g_parent_fd);
	g_parent_mem = NULL;
	g_parent_fd = -1;
	if (start(a) == 0 && a->supported)
		return NULL; /* start() made the control thread; this one ends */
	return NULL;
}

static void after_fork_child(void)
{
	pthread_t thr;
	pthread_attr_t attr;

	g_forked_active = g.active;
	g.active = false;
	g.hdr = NULL;
	g_parent_mem = g.mem; /* unmapped by child_start, once no hook can touch it */
	g_parent_fd = g.fd;
	g_parent_dev = g.dev;
	g_parent_ino = g.ino;
	g.mem = NULL;
	g.fd = -1;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 128 << 10);
	pthread_create(&thr, &attr, child_start, &g);
	pthread_attr_destroy(&attr);
}

__attribute__((constructor)) static void ptag_init(void)
{
	char err[128];
	int e;

	e = pt_pyapi__load(&g.api, err, sizeof(err));
	if (e == -ENOENT)
		return; /* not CPython: nothing at all */
	g.supported = !e;
	if (start(&g)) {
		/* out of memory, another agent: the program runs on */
		return;
	}
	if (!g.supported) {
		set_conflict(&g, PTAG_CONFLICT_UNSUPPORTED, err);
		set_state(&g, PTAG_STATE_DORMANT, PTAG_DORMANT_FAILED);
		return;
	}
	pthread_atfork(NULL, NULL, after_fork_child);
}
