// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CUPTI shim without a GPU: real CUpti_Activity* structs from the CUDA
 * 13.0 headers go through the shim's buffer-completed path (iterated by the
 * real libcupti cuptiActivityGetNextRecord, which works without a driver;
 * a scripted iterator covers malformed buffers) and come back out of the
 * ring through proftrace's reader. The dormant/active state machine runs
 * against a fake CUPTI table and a fake clock, and the exact sequence of
 * enable/disable calls is checked. A fake CUDA call (fake_call) does what
 * a real one was seen to do on an H200 with CUPTI 13.0: API records come
 * only from the Callback API (or the whole RUNTIME/DRIVER activity kinds,
 * which the shim never enables); the kernel, copy or memset it starts is
 * an activity record with the call's correlation id, a graph launch's
 * kernels all with the launch's; a runtime call's driver call under it
 * has the runtime call's correlation id. InitializeInjection itself runs in a
 * child process to check the segment (a sealed memfd found by pid, none in
 * a forked child, one per process, nothing left at exit).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "convert.h"
#include "gpu/gpuring.h"
#include "inject.h"
#include "memseg.h"
#include "ptgpu.h"
#include "ring.h"

int InitializeInjection(void);

/* ---- fake CUPTI ---- */

enum op {
	OP_TS = 1,
	OP_TID,
	OP_CALLBACKS,
	OP_SUB,
	OP_UNSUB,
	OP_ENABLE,
	OP_DISABLE,
	OP_RT,
	OP_DRV,
	OP_FLUSH,
};

struct call {
	enum op op;
	uint32_t arg, val;
};

#define MAXLOG 8192
static struct {
	struct call log[MAXLOG];
	int n;
	/* Fail this op (with this arg, or any when ANY) with code. */
	enum op fail_op;
	uint32_t fail_arg;
	CUptiResult fail_code;
	size_t dropped;
	CUpti_BuffersCallbackRequestFunc req;
	CUpti_BuffersCallbackCompleteFunc done;
	CUpti_TimestampCallbackFunc ts;
	/* The Callback API: the subscriber's function and what is enabled. */
	CUpti_CallbackFunc cb;
	void *cb_ud;
	bool subscribed;
	bool cb_on[2][2048]; /* [0] runtime, [1] driver, by cbid */
	bool kind_on[64];
	/* Activity records of fake calls, until fake_flush hands them over. */
	uint8_t pending[16384];
	size_t npending;
	uint32_t corr;
	/* Scripted iteration instead of libcupti's. */
	bool scripted;
	size_t offs[16];
	int noffs, pos;
	CUptiResult end_status;
	uint8_t *buf;
} F;
#define ANY 0xffffffffu

static CUptiResult logcall(enum op op, uint32_t arg, uint32_t val)
{
	assert_true(F.n < MAXLOG);
	F.log[F.n++] = (struct call){ op, arg, val };
	if (F.fail_op == op && (F.fail_arg == ANY || F.fail_arg == arg))
		return F.fail_code;
	return CUPTI_SUCCESS;
}

static CUptiResult f_version(uint32_t *v)
{
	*v = 130001;
	return CUPTI_SUCCESS;
}
static CUptiResult f_ts(CUpti_TimestampCallbackFunc fn)
{
	CUptiResult r = logcall(OP_TS, 0, 0);

	if (r == CUPTI_SUCCESS)
		F.ts = fn;
	return r;
}
static CUptiResult f_tid(CUpti_ActivityThreadIdType t)
{
	return logcall(OP_TID, t, 0);
}
static CUptiResult f_callbacks(CUpti_BuffersCallbackRequestFunc req,
			       CUpti_BuffersCallbackCompleteFunc done)
{
	CUptiResult r = logcall(OP_CALLBACKS, 0, 0);

	if (r == CUPTI_SUCCESS) {
		F.req = req;
		F.done = done;
	}
	return r;
}
static CUptiResult f_sub(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *ud)
{
	CUptiResult r;

	*sub = (CUpti_SubscriberHandle)(uintptr_t)0x5b;
	r = logcall(OP_SUB, 0, 0);
	if (r == CUPTI_SUCCESS) {
		assert_false(F.subscribed); /* one subscriber per process */
		F.subscribed = true;
		F.cb = fn;
		F.cb_ud = ud;
	}
	return r;
}
static CUptiResult f_unsub(CUpti_SubscriberHandle sub)
{
	assert_ptr_equal(sub, (CUpti_SubscriberHandle)(uintptr_t)0x5b);
	F.subscribed = false;
	memset(F.cb_on, 0, sizeof(F.cb_on));
	return logcall(OP_UNSUB, 0, 0);
}
static CUptiResult f_enable(CUpti_ActivityKind k)
{
	CUptiResult r = logcall(OP_ENABLE, k, 0);

	if (r == CUPTI_SUCCESS && k < 64)
		F.kind_on[k] = true;
	return r;
}
static CUptiResult f_disable(CUpti_ActivityKind k)
{
	CUptiResult r = logcall(OP_DISABLE, k, 0);

	if (r == CUPTI_SUCCESS && k < 64)
		F.kind_on[k] = false;
	return r;
}
static CUptiResult f_cb(uint32_t en, CUpti_SubscriberHandle sub, CUpti_CallbackDomain dom,
			CUpti_CallbackId cbid)
{
	CUptiResult r;

	assert_true(dom == CUPTI_CB_DOMAIN_RUNTIME_API || dom == CUPTI_CB_DOMAIN_DRIVER_API);
	assert_true(cbid < 2048);
	r = logcall(dom == CUPTI_CB_DOMAIN_RUNTIME_API ? OP_RT : OP_DRV, cbid, en);
	if (!F.subscribed || sub != (CUpti_SubscriberHandle)(uintptr_t)0x5b)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (r == CUPTI_SUCCESS)
		F.cb_on[dom == CUPTI_CB_DOMAIN_DRIVER_API][cbid] = en;
	return r;
}
static CUptiResult f_flush(uint32_t flag)
{
	return logcall(OP_FLUSH, flag, 0);
}
static CUptiResult f_next(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	if (!F.scripted)
		return cuptiActivityGetNextRecord(buf, valid, rec);
	if (F.pos >= F.noffs)
		return F.end_status;
	*rec = (CUpti_Activity *)(buf + F.offs[F.pos++]);
	return CUPTI_SUCCESS;
}
static CUptiResult f_dropped(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	*dropped = F.dropped;
	F.dropped = 0; /* CUPTI resets it on read */
	return CUPTI_SUCCESS;
}

static const struct ptg_cupti_ops fake_ops = {
	.get_version = f_version,
	.get_result_string = cuptiGetResultString,
	.register_timestamp_cb = f_ts,
	.set_thread_id_type = f_tid,
	.register_callbacks = f_callbacks,
	.subscribe = f_sub,
	.unsubscribe = f_unsub,
	.enable = f_enable,
	.disable = f_disable,
	.enable_callback = f_cb,
	.flush_all = f_flush,
	.get_next_record = f_next,
	.get_num_dropped = f_dropped,
};

/* Every call to the clock moves it 1 us: an activation's stall is the
 * number of clock reads between its two reads, times 1 us. */
static uint64_t fake_now;
static uint64_t fake_clock(void)
{
	fake_now += 1000;
	return fake_now;
}

/* stderr into a file, to count the lines the shim prints. */
static int saved_stderr = -1;
static FILE *captured;

static void capture_stderr(void)
{
	fflush(stderr);
	captured = tmpfile();
	assert_non_null(captured);
	saved_stderr = dup(2);
	dup2(fileno(captured), 2);
}

static int captured_lines(void)
{
	char line[512];
	int n = 0;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(captured);
	while (fgets(line, sizeof(line), captured))
		n++;
	fclose(captured);
	return n;
}

/* ---- one shim over a private segment, with a reader on it ---- */

struct fixture {
	struct ptg_shim s;
	void *mem;
	size_t len;
	struct pt_gpuring *r;
};

static void fx_init(struct fixture *fx, uint64_t nslots, uint64_t strtab)
{
	struct ptg_ring_params p = {
		.nslots = nslots,
		.strtab_size = strtab,
		.pid = 777,
		.cupti_version = 130001,
	};
	char err[256];

	memset(&F, 0, sizeof(F));
	fx->len = ptg_ring__size(nslots, strtab);
	fx->mem = aligned_alloc(4096, fx->len);
	memset(fx->mem, 0, fx->len);
	assert_int_equal(ptg_shim__init(&fx->s, &fake_ops, fake_clock, fx->mem, fx->len, &p), 0);
	if (pt_gpuring__open_mem(&fx->r, fx->mem, fx->len, err, sizeof(err)))
		fail_msg("open_mem: %s", err);
}

static void fx_fini(struct fixture *fx)
{
	pt_gpuring__close(fx->r);
	ptg_shim__fini(&fx->s);
	free(fx->mem);
}

static struct ptgpu_header *fx_hdr(struct fixture *fx)
{
	return fx->mem;
}

#define MAXREC 64
struct got {
	int n;
	struct pt_gpu_rec r[MAXREC];
};

static int collect(void *ctx, const struct pt_gpu_rec *rec)
{
	struct got *g = ctx;

	assert_true(g->n < MAXREC);
	g->r[g->n++] = *rec;
	return 0;
}

/* ---- fake CUDA calls (see the top of the file) ---- */

static void pend(const void *rec, size_t len)
{
	assert_true(F.npending + len <= sizeof(F.pending));
	memcpy(F.pending + F.npending, rec, len);
	F.npending += len;
}

static void fake_cb(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
		    uint32_t corr, uint64_t *scratch, uint32_t *ret)
{
	CUpti_CallbackData cd;

	if (!F.subscribed || !F.cb_on[dom == CUPTI_CB_DOMAIN_DRIVER_API][cbid])
		return;
	memset(&cd, 0, sizeof(cd));
	cd.callbackSite = site;
	cd.functionName = "fake";
	cd.correlationId = corr;
	cd.correlationData = scratch;
	cd.functionReturnValue = site == CUPTI_API_EXIT ? ret : NULL;
	F.cb(F.cb_ud, dom, cbid, &cd);
}

enum fake_work { W_NONE, W_KERNEL, W_COPY, W_SET };

/*
 * One CUDA call on the calling thread: the entry callbacks (the runtime
 * call's, then the driver call's it makes, same correlation id), the work
 * it starts (nwork kernels for a graph launch, all with the launch's
 * correlation id), the exit callbacks. Returns the correlation id.
 */
static uint32_t fake_call(CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			  CUpti_CallbackId nested_drv, enum fake_work w, int nwork, uint32_t graph)
{
	uint64_t sc_rt = 0, sc_drv = 0;
	uint32_t corr = ++F.corr, ret = 0;
	CUpti_ActivityKernel10 k;
	CUpti_ActivityMemcpy6 mc;
	CUpti_ActivityMemset4 ms;
	CUpti_ActivityAPI api;
	uint64_t t0 = F.ts ? F.ts() : 0;
	int i;

	fake_cb(dom, cbid, CUPTI_API_ENTER, corr, &sc_rt, &ret);
	if (nested_drv)
		fake_cb(CUPTI_CB_DOMAIN_DRIVER_API, nested_drv, CUPTI_API_ENTER, corr, &sc_drv,
			&ret);
	for (i = 0; i < nwork; i++) {
		if (w == W_KERNEL && F.kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) {
			memset(&k, 0, sizeof(k));
			k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
			k.start = t0 + 5000 + 1000 * i;
			k.end = k.start + 800;
			k.correlationId = corr;
			k.graphId = graph;
			k.graphNodeId = graph ? 100 + i : 0;
			k.name = i % 2 ? "_Z8k_oddPf" : "k_even";
			k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
			pend(&k, sizeof(k));
		} else if (w == W_COPY && F.kind_on[CUPTI_ACTIVITY_KIND_MEMCPY]) {
			memset(&mc, 0, sizeof(mc));
			mc.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
			mc.start = t0 + 5000;
			mc.end = mc.start + 300;
			mc.bytes = 8;
			mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
			mc.correlationId = corr;
			pend(&mc, sizeof(mc));
		} else if (w == W_SET && F.kind_on[CUPTI_ACTIVITY_KIND_MEMSET]) {
			memset(&ms, 0, sizeof(ms));
			ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
			ms.start = t0 + 5000;
			ms.end = ms.start + 200;
			ms.bytes = 4096;
			ms.correlationId = corr;
			pend(&ms, sizeof(ms));
		}
	}
	/* What the activity API gives for API calls: only the whole kinds. */
	if (F.kind_on[dom == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME
							 : CUPTI_ACTIVITY_KIND_DRIVER]) {
		memset(&api, 0, sizeof(api));
		api.kind = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME
							      : CUPTI_ACTIVITY_KIND_DRIVER;
		api.cbid = cbid;
		api.correlationId = corr;
		pend(&api, sizeof(api));
	}
	if (nested_drv)
		fake_cb(CUPTI_CB_DOMAIN_DRIVER_API, nested_drv, CUPTI_API_EXIT, corr, &sc_drv,
			&ret);
	fake_cb(dom, cbid, CUPTI_API_EXIT, corr, &sc_rt, &ret);
	return corr;
}

/* CUPTI hands over what it recorded (a flush, or a full buffer). */
static void fake_flush(void)
{
	uint8_t *buf = NULL;
	size_t size = 0, max = 0;

	if (!F.npending)
		return;
	F.req(&buf, &size, &max);
	assert_non_null(buf);
	assert_true(size >= F.npending);
	memcpy(buf, F.pending, F.npending);
	F.done(NULL, 0, buf, size, F.npending);
	F.npending = 0;
}

static void test_init_sequence(void **state)
{
	struct fixture fx;
	struct ptgpu_header *h;
	struct timespec ts;
	uint64_t a, b, c;

	fx_init(&fx, 8, 256);
	h = fx_hdr(&fx);
	/* Timestamp callback first (before anything is enabled), then the
	 * thread id type, then the buffer callbacks; nothing enabled. */
	assert_int_equal(F.n, 3);
	assert_int_equal(F.log[0].op, OP_TS);
	assert_int_equal(F.log[1].op, OP_TID);
	assert_int_equal(F.log[1].arg, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	assert_int_equal(F.log[2].op, OP_CALLBACKS);
	assert_int_equal(h->state, PTGPU_STATE_DORMANT);
	assert_int_equal(h->conflict_call, PTGPU_CALL_NONE);
	assert_memory_equal(h->magic, PTGPU_MAGIC, PTGPU_MAGIC_LEN);
	assert_int_equal(h->shim_pid, 777);

	/* The timestamp callback is CLOCK_MONOTONIC. */
	assert_non_null(F.ts);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	a = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	b = F.ts();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	assert_true(a <= b && b <= c);

	/* Dormant and nobody attached: ticks call nothing. */
	ptg_shim__tick(&fx.s, 1000000000ull);
	ptg_shim__tick(&fx.s, 2000000000ull);
	assert_int_equal(F.n, 3);
	fx_fini(&fx);
}

/* Lay real CUPTI records into a buffer CUPTI would have asked us for. */
struct buf {
	uint8_t *p;
	size_t size, used;
};

static void buf_get(struct buf *b)
{
	size_t max = 1;

	b->p = NULL;
	F.req(&b->p, &b->size, &max);
	assert_non_null(b->p);
	assert_int_equal(b->size, PTG_BUF_SIZE);
	assert_int_equal((uintptr_t)b->p % 8, 0);
	assert_int_equal(max, 0);
	memset(b->p, 0, b->size);
	b->used = 0;
}

static void *buf_add(struct buf *b, const void *rec, size_t len)
{
	void *at = b->p + b->used;

	memcpy(at, rec, len);
	b->used += len;
	return at;
}

static void test_buffer_every_kind(void **state)
{
	struct fixture fx;
	struct got *g = calloc(1, sizeof(*g));
	struct pt_gpuring_info in;
	CUpti_ActivityKernel10 k;
	CUpti_ActivityMemcpy6 mc;
	CUpti_ActivityMemset4 ms;
	CUpti_ActivityAPI api;
	CUpti_ActivitySynchronization2 sy;
	CUpti_ActivityExternalCorrelation ext;
	struct buf b;
	char name[32];

	fx_init(&fx, 16, 256);
	buf_get(&b);

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 1000;
	k.end = 2500;
	k.deviceId = 1;
	k.contextId = 2;
	k.streamId = 13;
	k.gridX = 1024;
	k.gridY = 2;
	k.gridZ = 1;
	k.blockX = 256;
	k.blockY = 1;
	k.blockZ = 1;
	k.correlationId = 501;
	snprintf(name, sizeof(name), "vectorAdd");
	k.name = name;
	k.graphNodeId = 0xabcdef0123ull;
	k.graphId = 9;
	buf_add(&b, &k, sizeof(k));
	/* The same name again (one string), clamped dims, device launch. */
	k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
	k.correlationId = 502;
	k.gridX = -5;
	k.gridY = 70000;
	k.isDeviceLaunched = 1;
	buf_add(&b, &k, sizeof(k));

	memset(&mc, 0, sizeof(mc));
	mc.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	mc.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	mc.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	mc.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	mc.bytes = 1 << 20;
	mc.start = 3000;
	mc.end = 3300;
	mc.deviceId = 1;
	mc.contextId = 2;
	mc.streamId = 14;
	mc.correlationId = 503;
	mc.graphNodeId = 77;
	mc.graphId = 8;
	buf_add(&b, &mc, sizeof(mc));

	memset(&ms, 0, sizeof(ms));
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	ms.value = 0x5a;
	ms.bytes = 4096;
	ms.start = 4000;
	ms.end = 4010;
	ms.deviceId = 1;
	ms.contextId = 2;
	ms.streamId = 15;
	ms.correlationId = 504;
	ms.flags = 1;
	ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	ms.graphNodeId = 78;
	ms.graphId = 7;
	buf_add(&b, &ms, sizeof(ms));

	memset(&api, 0, sizeof(api));
	api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	api.start = 900;
	api.end = 990;
	api.processId = 4321;
	api.threadId = 4322;
	api.correlationId = 501;
	api.returnValue = 0;
	buf_add(&b, &api, sizeof(api));
	api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	api.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	api.correlationId = 505;
	api.returnValue = 2;
	buf_add(&b, &api, sizeof(api));

	memset(&sy, 0, sizeof(sy));
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	sy.start = 5000;
	sy.end = 7000;
	sy.correlationId = 506;
	sy.contextId = 2;
	sy.streamId = 13;
	sy.cudaEventId = 0xffffffffu;
	sy.cudaEventSyncId = 31;
	sy.returnValue = 0;
	buf_add(&b, &sy, sizeof(sy));

	/* A kind CUPTI knows and we do not convert. */
	memset(&ext, 0, sizeof(ext));
	ext.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	ext.externalId = 1;
	buf_add(&b, &ext, sizeof(ext));

	F.dropped = 7;
	/* Hands the buffer back (and frees it), as CUPTI would. */
	F.done(NULL, 0, b.p, b.size, b.used);
	/* The name was interned: CUPTI's pointer dies with the buffer. */
	memset(name, 'X', sizeof(name) - 1);

	assert_int_equal(pt_gpuring__drain(fx.r, collect, g), 7);

	assert_int_equal(g->r[0].kind, PT_GPU_KERNEL);
	assert_int_equal(g->r[0].start_ns, 1000);
	assert_int_equal(g->r[0].end_ns, 2500);
	assert_int_equal(g->r[0].correlation_id, 501);
	assert_string_equal(g->r[0].kernel.name, "vectorAdd");
	assert_int_equal(g->r[0].kernel.device_id, 1);
	assert_int_equal(g->r[0].kernel.context_id, 2);
	assert_int_equal(g->r[0].kernel.stream_id, 13);
	assert_int_equal(g->r[0].kernel.graph_id, 9);
	assert_int_equal(g->r[0].kernel.graph_node_id, 0xabcdef0123ull);
	assert_int_equal(g->r[0].kernel.grid[0], 1024);
	assert_int_equal(g->r[0].kernel.grid[1], 2);
	assert_int_equal(g->r[0].kernel.grid[2], 1);
	assert_int_equal(g->r[0].kernel.block[0], 256);
	assert_int_equal(g->r[0].kernel.block[1], 1);
	assert_int_equal(g->r[0].kernel.block[2], 1);
	assert_false(g->r[0].kernel.device_launched);

	assert_int_equal(g->r[1].kind, PT_GPU_KERNEL);
	assert_int_equal(g->r[1].correlation_id, 502);
	assert_ptr_equal(g->r[1].kernel.name, g->r[0].kernel.name);
	assert_int_equal(g->r[1].kernel.grid[0], 0);
	assert_int_equal(g->r[1].kernel.grid[1], 0xffff);
	assert_true(g->r[1].kernel.device_launched);

	assert_int_equal(g->r[2].kind, PT_GPU_MEMCPY);
	assert_int_equal(g->r[2].start_ns, 3000);
	assert_int_equal(g->r[2].end_ns, 3300);
	assert_int_equal(g->r[2].correlation_id, 503);
	assert_int_equal(g->r[2].memcpy.bytes, 1 << 20);
	assert_int_equal(g->r[2].memcpy.copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
	assert_int_equal(g->r[2].memcpy.src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
	assert_int_equal(g->r[2].memcpy.dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
	assert_int_equal(g->r[2].memcpy.flags, CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
	assert_int_equal(g->r[2].memcpy.device_id, 1);
	assert_int_equal(g->r[2].memcpy.context_id, 2);
	assert_int_equal(g->r[2].memcpy.stream_id, 14);
	assert_int_equal(g->r[2].memcpy.graph_node_id, 77);
	assert_int_equal(g->r[2].memcpy.graph_id, 8);

	assert_int_equal(g->r[3].kind, PT_GPU_MEMSET);
	assert_int_equal(g->r[3].start_ns, 4000);
	assert_int_equal(g->r[3].end_ns, 4010);
	assert_int_equal(g->r[3].correlation_id, 504);
	assert_int_equal(g->r[3].memset.bytes, 4096);
	assert_int_equal(g->r[3].memset.value, 0x5a);
	assert_int_equal(g->r[3].memset.device_id, 1);
	assert_int_equal(g->r[3].memset.context_id, 2);
	assert_int_equal(g->r[3].memset.stream_id, 15);
	assert_int_equal(g->r[3].memset.flags, 1);
	assert_int_equal(g->r[3].memset.memory_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
	assert_int_equal(g->r[3].memset.graph_node_id, 78);
	assert_int_equal(g->r[3].memset.graph_id, 7);

	assert_int_equal(g->r[4].kind, PT_GPU_API);
	assert_false(g->r[4].api.driver);
	assert_int_equal(g->r[4].api.cbid, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	assert_int_equal(g->r[4].start_ns, 900);
	assert_int_equal(g->r[4].end_ns, 990);
	assert_int_equal(g->r[4].api.pid, 4321);
	assert_int_equal(g->r[4].api.tid, 4322);
	assert_int_equal(g->r[4].correlation_id, 501);
	assert_int_equal(g->r[4].api.return_value, 0);

	assert_int_equal(g->r[5].kind, PT_GPU_API);
	assert_true(g->r[5].api.driver);
	assert_int_equal(g->r[5].api.cbid, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
	assert_int_equal(g->r[5].correlation_id, 505);
	assert_int_equal(g->r[5].api.return_value, 2);

	assert_int_equal(g->r[6].kind, PT_GPU_SYNC);
	assert_int_equal(g->r[6].start_ns, 5000);
	assert_int_equal(g->r[6].end_ns, 7000);
	assert_int_equal(g->r[6].correlation_id, 506);
	assert_int_equal(g->r[6].sync.type, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
	assert_int_equal(g->r[6].sync.context_id, 2);
	assert_int_equal(g->r[6].sync.stream_id, 13);
	assert_int_equal(g->r[6].sync.cuda_event_id, 0xffffffffu);

	pt_gpuring__info(fx.r, &in);
	assert_int_equal(in.records, 7);
	assert_int_equal(in.unknown_kinds, 1);
	assert_int_equal(in.cupti_dropped, 7);
	assert_int_equal(in.bad_records, 0);
	assert_int_equal(in.ring_dropped, 0);
	assert_int_equal(in.strtab_used, PTGPU_STR_FIRST + sizeof("vectorAdd"));

	/* An empty buffer is fine; dropped records still add up. */
	buf_get(&b);
	F.dropped = 3;
	F.done(NULL, 0, b.p, b.size, 0);
	pt_gpuring__info(fx.r, &in);
	assert_int_equal(in.cupti_dropped, 10);
	assert_int_equal(in.records, 7);
	fx_fini(&fx);
	free(g);
}

static void test_expected_sizes(void **state)
{
	/* What the shim was built against; a newer libcupti may only add. */
	assert_int_equal(ptg_convert__expected_size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
			 sizeof(CUpti_ActivityKernel10));
	assert_int_equal(ptg_convert__expected_size(CUPTI_ACTIVITY_KIND_KERNEL),
			 sizeof(CUpti_ActivityKernel10));
	assert_int_equal(ptg_convert__expected_size(CUPTI_ACTIVITY_KIND_MEMCPY),
			 sizeof(CUpti_ActivityMemcpy6));
	assert_int_equal(ptg_convert__expected_size(CUPTI_ACTIVITY_KIND_MEMSET),
			 sizeof(CUpti_ActivityMemset4));
	assert_int_equal(ptg_convert__expected_size(CUPTI_ACTIVITY_KIND_RUNTIME),
			 sizeof(CUpti_ActivityAPI));
	assert_int_equal(ptg_convert__expected_size(CUPTI_ACTIVITY_KIND_DRIVER),
			 sizeof(CUpti_ActivityAPI));
	assert_int_equal(ptg_convert__expected_size(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION),
			 sizeof(CUpti_ActivitySynchronization2));
	assert_int_equal(ptg_convert__expected_size(CUPTI_ACTIVITY_KIND_MARKER), 0);
}

/* Malformed buffers through a scripted iterator: short records, a next
 * pointer going backwards, CUPTI giving up on a kind. */
static void test_buffer_malformed(void **state)
{
	struct fixture fx;
	struct got *g = calloc(1, sizeof(*g));
	struct pt_gpuring_info in;
	CUpti_ActivityKernel10 k;
	CUpti_ActivityAPI api;
	struct buf b;

	fx_init(&fx, 16, 256);
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = "k";
	memset(&api, 0, sizeof(api));
	api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;

	/* A kernel record cut short by the end of the valid bytes. */
	buf_get(&b);
	buf_add(&b, &api, sizeof(api));
	buf_add(&b, &k, sizeof(k));
	F.scripted = true;
	F.offs[0] = 0;
	F.offs[1] = sizeof(api);
	F.noffs = 2;
	F.end_status = CUPTI_ERROR_MAX_LIMIT_REACHED;
	F.done(NULL, 0, b.p, b.size, sizeof(api) + 100);
	pt_gpuring__info(fx.r, &in);
	assert_int_equal(in.records, 1);
	assert_int_equal(in.bad_records, 1);

	/* An API record followed too closely by the next one. */
	buf_get(&b);
	F.pos = 0;
	F.offs[0] = 0;
	F.offs[1] = 16;
	F.offs[2] = 16 + sizeof(api);
	F.noffs = 3;
	buf_add(&b, &api, sizeof(api));
	memcpy(b.p + 16, &api, sizeof(api));
	memcpy(b.p + 16 + sizeof(api), &api, sizeof(api));
	F.done(NULL, 0, b.p, b.size, 16 + 2 * sizeof(api));
	pt_gpuring__info(fx.r, &in);
	assert_int_equal(in.records, 3);
	assert_int_equal(in.bad_records, 2);

	/* Next pointer backwards: stop, counted. */
	buf_get(&b);
	F.pos = 0;
	F.offs[0] = 64;
	F.offs[1] = 0;
	F.noffs = 2;
	memcpy(b.p + 64, &api, sizeof(api));
	F.done(NULL, 0, b.p, b.size, 256);
	pt_gpuring__info(fx.r, &in);
	assert_int_equal(in.records, 3);
	assert_int_equal(in.bad_records, 3);

	/* CUPTI stops with INVALID_KIND after one record. */
	buf_get(&b);
	F.pos = 0;
	F.offs[0] = 0;
	F.noffs = 1;
	F.end_status = CUPTI_ERROR_INVALID_KIND;
	buf_add(&b, &api, sizeof(api));
	F.done(NULL, 0, b.p, b.size, 512);
	pt_gpuring__info(fx.r, &in);
	assert_int_equal(in.records, 4);
	assert_int_equal(in.bad_records, 4);

	assert_int_equal(pt_gpuring__drain(fx.r, collect, g), 4);
	fx_fini(&fx);
	free(g);
}

static void test_ring_overflow_and_strtab_full(void **state)
{
	struct fixture fx;
	struct got *g = calloc(1, sizeof(*g));
	struct pt_gpuring_info in;
	CUpti_ActivityKernel10 k;
	char names[11][16];
	struct buf b;
	int i;

	/* 8 slots, 64-byte table: 8 reserved + five 10-byte names. */
	fx_init(&fx, 8, 64);
	buf_get(&b);
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	for (i = 0; i < 11; i++) {
		snprintf(names[i], sizeof(names[i]), "kernel_%02d", i);
		k.name = names[i];
		k.correlationId = (uint32_t)i;
		buf_add(&b, &k, sizeof(k));
	}
	F.done(NULL, 0, b.p, b.size, b.used);
	pt_gpuring__info(fx.r, &in);
	assert_int_equal(in.records, 8);
	assert_int_equal(in.ring_dropped, 3);
	/* Names interned for every converted record, written or not. */
	assert_int_equal(in.strtab_full, 6);

	assert_int_equal(pt_gpuring__drain(fx.r, collect, g), 8);
	for (i = 0; i < 5; i++)
		assert_string_equal(g->r[i].kernel.name, names[i]);
	for (; i < 8; i++)
		assert_string_equal(g->r[i].kernel.name, "[string table full]");
	fx_fini(&fx);
	free(g);
}

/* ---- the state machine ---- */

#define SEC 1000000000ull
#define MS 1000000ull

static void expect(int *i, enum op op, uint32_t arg, uint32_t val)
{
	if (*i >= F.n)
		fail_msg("call %d: none, want op %d(%u, %u)", *i, op, arg, val);
	if (F.log[*i].op != op || F.log[*i].arg != arg || F.log[*i].val != val)
		fail_msg("call %d: op %d(%u, %u), want op %d(%u, %u)", *i, F.log[*i].op,
			 F.log[*i].arg, F.log[*i].val, op, arg, val);
	(*i)++;
}

/* An activation: subscribe, callbacks, every kind, the callback of every
 * driver call, each up to (not including) the failing one. No runtime
 * call's callback: the driver call under it is recorded. */
static void expect_activate(int *i, size_t kinds, size_t drv)
{
	size_t j;

	expect(i, OP_SUB, 0, 0);
	expect(i, OP_CALLBACKS, 0, 0);
	for (j = 0; j < kinds; j++)
		expect(i, OP_ENABLE, ptg_kinds[j], 0);
	for (j = 0; j < drv; j++)
		expect(i, OP_DRV, ptg_driver_calls[j].cbid, 1);
}

static void expect_activate_all(int *i)
{
	expect_activate(i, ptg_n_kinds, ptg_n_driver_calls);
}

static void expect_deactivate(int *i, size_t kinds, size_t drv, bool flush)
{
	size_t j;

	for (j = 0; j < kinds; j++)
		expect(i, OP_DISABLE, ptg_kinds[j], 0);
	for (j = 0; j < drv; j++)
		expect(i, OP_DRV, ptg_driver_calls[j].cbid, 0);
	if (flush)
		expect(i, OP_FLUSH, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, 0);
	expect(i, OP_UNSUB, 0, 0);
}

static void expect_deactivate_all(int *i)
{
	expect_deactivate(i, ptg_n_kinds, ptg_n_driver_calls, true);
}

static void test_cycle(void **state)
{
	struct fixture fx;
	struct pt_gpuring_info in;
	struct ptgpu_header *h;
	uint64_t t = 10 * SEC;
	int i;

	fx_init(&fx, 8, 256);
	h = fx_hdr(&fx);
	F.n = 0;

	/* The lists are the launch/copy/set/sync calls only. */
	assert_int_equal(ptg_n_kinds, 3);
	assert_true(ptg_n_driver_calls > 50);

	/* attach -> active */
	assert_int_equal(pt_gpuring__attach(fx.r, t), 0);
	fake_now = t + 5 * MS;
	ptg_shim__tick(&fx.s, t + 5 * MS);
	i = 0;
	expect_activate_all(&i);
	assert_int_equal(i, F.n);
	assert_int_equal(h->state, PTGPU_STATE_ACTIVE);
	assert_int_equal(h->active_seq, 1);
	assert_int_equal(h->activations, 1);
	/* Two clock reads around the enables: 1 us on the fake clock. */
	assert_int_equal(h->enable_stall_ns, 1000);
	pt_gpuring__info(fx.r, &in);
	assert_true(in.active);

	/* Active, heartbeat fresh: a default flush every 100 ms, nothing
	 * else. The activation read the clock last at fake_now. */
	F.n = 0;
	ptg_shim__tick(&fx.s, fake_now + 50 * MS);
	assert_int_equal(F.n, 0);
	ptg_shim__tick(&fx.s, fake_now + PTG_FLUSH_EVERY_NS);
	i = 0;
	expect(&i, OP_FLUSH, 0, 0);
	assert_int_equal(F.n, 1);
	ptg_shim__tick(&fx.s, fake_now + PTG_FLUSH_EVERY_NS + 10 * MS);
	assert_int_equal(F.n, 1);

	/* proftrace killed: the heartbeat ages past 1 s -> dormant. */
	ptg_shim__tick(&fx.s, t + PTGPU_HEARTBEAT_TIMEOUT_NS - 1);
	assert_int_equal(h->state, PTGPU_STATE_ACTIVE);
	F.n = 0;
	ptg_shim__tick(&fx.s, t + PTGPU_HEARTBEAT_TIMEOUT_NS);
	i = 0;
	expect_deactivate_all(&i);
	assert_int_equal(i, F.n);
	assert_int_equal(h->state, PTGPU_STATE_DORMANT);
	assert_int_equal(h->dormant_reason, PTGPU_DORMANT_TIMEOUT);
	/* Still stale: nothing more. */
	ptg_shim__tick(&fx.s, t + 2 * SEC);
	assert_int_equal(F.n, i);

	/* The same reader comes back (it was only stopped): resumes. */
	t += 3 * SEC;
	pt_gpuring__heartbeat(fx.r, t);
	F.n = 0;
	ptg_shim__tick(&fx.s, t + 10 * MS);
	i = 0;
	expect_activate_all(&i);
	assert_int_equal(h->state, PTGPU_STATE_ACTIVE);
	assert_int_equal(h->activations, 2);

	/* A heartbeat from the future (another clock) counts as stale. */
	pt_gpuring__heartbeat(fx.r, t + 10 * SEC);
	F.n = 0;
	ptg_shim__tick(&fx.s, t + 20 * MS);
	i = 0;
	expect_deactivate_all(&i);
	assert_int_equal(h->dormant_reason, PTGPU_DORMANT_TIMEOUT);
	pt_gpuring__heartbeat(fx.r, t + 20 * MS);
	F.n = 0;
	ptg_shim__tick(&fx.s, t + 30 * MS);
	i = 0;
	expect_activate_all(&i);

	/* Detach -> dormant, flushed. */
	pt_gpuring__detach(fx.r);
	F.n = 0;
	ptg_shim__tick(&fx.s, t + 40 * MS);
	i = 0;
	expect_deactivate_all(&i);
	assert_int_equal(i, F.n);
	assert_int_equal(h->state, PTGPU_STATE_DORMANT);
	assert_int_equal(h->dormant_reason, PTGPU_DORMANT_DETACH);
	ptg_shim__tick(&fx.s, t + 50 * MS);
	assert_int_equal(F.n, i);

	/* Attach again, and again while active (a new proftrace): the
	 * second restarts within one tick. */
	assert_int_equal(pt_gpuring__attach(fx.r, t + 60 * MS), 0);
	F.n = 0;
	ptg_shim__tick(&fx.s, t + 70 * MS);
	i = 0;
	expect_activate_all(&i);
	assert_int_equal(h->active_seq, 2);
	assert_int_equal(pt_gpuring__attach(fx.r, t + 80 * MS), 0);
	F.n = 0;
	ptg_shim__tick(&fx.s, t + 90 * MS);
	i = 0;
	expect_deactivate_all(&i);
	expect_activate_all(&i);
	assert_int_equal(i, F.n);
	assert_int_equal(h->active_seq, 3);
	assert_int_equal(h->state, PTGPU_STATE_ACTIVE);
	assert_int_equal(h->activations, 5);
	assert_int_equal(h->conflict_call, PTGPU_CALL_NONE);
	fx_fini(&fx);
}

#define RT(x) CUPTI_RUNTIME_TRACE_CBID_##x
#define DRV(x) CUPTI_DRIVER_TRACE_CBID_##x

struct thread_call {
	uint32_t corr;
	pid_t tid;
};

static void *launch_on_thread(void *arg)
{
	struct thread_call *tc = arg;

	tc->tid = gettid();
	tc->corr = fake_call(CUPTI_CB_DOMAIN_DRIVER_API, DRV(cuLaunchKernelEx), 0, W_KERNEL, 1, 0);
	return NULL;
}

static const struct pt_gpu_rec *api_of(const struct got *g, uint32_t corr, int *n)
{
	const struct pt_gpu_rec *a = NULL;
	int i;

	*n = 0;
	for (i = 0; i < g->n; i++)
		if (g->r[i].kind == PT_GPU_API && g->r[i].correlation_id == corr) {
			a = &g->r[i];
			(*n)++;
		}
	return a;
}

/*
 * Every piece of work joined to the call that started it, through the
 * ring: a runtime launch (recorded by the driver launch under it), a
 * driver-only launch (cuBLAS, Triton) on another thread, a graph launch
 * of three kernels, a copy, a memset and a wait, each with what it is.
 * Calls that neither launch, copy, set nor wait leave no record; nothing
 * is recorded while dormant.
 */
static void test_launch_join(void **state)
{
	struct got *g = calloc(1, sizeof(*g));
	uint32_t c_rt, c_graph, c_copy, c_set, c_sync;
	struct thread_call tc = { 0 };
	const struct pt_gpu_rec *a;
	struct fixture fx;
	pthread_t thr;
	int i, n, work = 0;

	fx_init(&fx, 64, 4096);
	/* Dormant: CUDA runs with nothing of ours in its way. */
	fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaLaunchKernel_v7000), DRV(cuLaunchKernel),
		  W_KERNEL, 1, 0);
	fake_flush();
	assert_int_equal(pt_gpuring__drain(fx.r, collect, g), 0);

	assert_int_equal(pt_gpuring__attach(fx.r, 10 * SEC), 0);
	ptg_shim__tick(&fx.s, 10 * SEC + 10 * MS);
	assert_int_equal(fx_hdr(&fx)->state, PTGPU_STATE_ACTIVE);

	c_rt = fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaLaunchKernel_v7000),
			 DRV(cuLaunchKernel), W_KERNEL, 1, 0);
	assert_int_equal(pthread_create(&thr, NULL, launch_on_thread, &tc), 0);
	assert_int_equal(pthread_join(thr, NULL), 0);
	c_graph = fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaGraphLaunch_v10000),
			    DRV(cuGraphLaunch), W_KERNEL, 3, 7);
	c_copy = fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaMemcpyAsync_v3020),
			   DRV(cuMemcpyDtoHAsync_v2), W_COPY, 1, 0);
	c_set = fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaMemsetAsync_v3020),
			  DRV(cuMemsetD8Async), W_SET, 1, 0);
	c_sync = fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaStreamSynchronize_v3020),
			   DRV(cuStreamSynchronize), W_NONE, 0, 0);
	/* not ours: no callback, no record */
	for (i = 0; i < 100; i++) {
		fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaGetDevice_v3020), 0, W_NONE, 0, 0);
		fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaEventQuery_v3020), DRV(cuEventQuery),
			  W_NONE, 0, 0);
	}
	fake_flush();
	assert_true(pt_gpuring__drain(fx.r, collect, g) > 0);

	/* One API record per call we record, none for the others. */
	for (i = n = 0; i < g->n; i++)
		n += g->r[i].kind == PT_GPU_API;
	assert_int_equal(n, 6);
	for (i = 0; i < g->n; i++) {
		const struct pt_gpu_rec *w = &g->r[i];

		if (w->kind == PT_GPU_API || w->kind == PT_GPU_SYNC)
			continue;
		work++;
		a = api_of(g, w->correlation_id, &n);
		assert_int_equal(n, 1);
		assert_non_null(a);
		/* launched before it ran, on the shim's clock */
		assert_true(a->start_ns <= a->end_ns && a->start_ns <= w->start_ns);
	}
	assert_int_equal(work, 1 + 1 + 3 + 1 + 1);

	/* the runtime launch is recorded by the driver call it made */
	a = api_of(g, c_rt, &n);
	assert_true(a->api.driver);
	assert_int_equal(a->api.cbid, DRV(cuLaunchKernel));
	assert_int_equal(a->api.what, PT_GPU_API_LAUNCH);
	assert_int_equal(a->api.tid, (uint32_t)gettid());
	assert_int_equal(a->api.pid, 777);
	a = api_of(g, tc.corr, &n);
	assert_true(a->api.driver);
	assert_int_equal(a->api.cbid, DRV(cuLaunchKernelEx));
	assert_int_equal(a->api.tid, (uint32_t)tc.tid);
	assert_int_not_equal(tc.tid, gettid());
	for (i = n = 0; i < g->n; i++)
		n += g->r[i].kind == PT_GPU_KERNEL && g->r[i].correlation_id == c_graph &&
		     g->r[i].kernel.graph_id == 7;
	assert_int_equal(n, 3);
	assert_int_equal(api_of(g, c_graph, &n)->api.cbid, DRV(cuGraphLaunch));
	assert_int_equal(api_of(g, c_copy, &n)->api.cbid, DRV(cuMemcpyDtoHAsync_v2));
	assert_int_equal(api_of(g, c_copy, &n)->api.what, PT_GPU_API_COPY);
	assert_int_equal(api_of(g, c_set, &n)->api.cbid, DRV(cuMemsetD8Async));
	assert_int_equal(api_of(g, c_set, &n)->api.what, PT_GPU_API_SET);
	assert_int_equal(api_of(g, c_sync, &n)->api.cbid, DRV(cuStreamSynchronize));
	assert_int_equal(api_of(g, c_sync, &n)->api.what, PT_GPU_API_WAIT);

	/* Detached: callbacks off, nothing more. */
	pt_gpuring__detach(fx.r);
	ptg_shim__tick(&fx.s, 10 * SEC + 20 * MS);
	assert_int_equal(fx_hdr(&fx)->state, PTGPU_STATE_DORMANT);
	g->n = 0;
	fake_call(CUPTI_CB_DOMAIN_RUNTIME_API, RT(cudaLaunchKernel_v7000), DRV(cuLaunchKernel),
		  W_KERNEL, 1, 0);
	fake_flush();
	assert_int_equal(pt_gpuring__drain(fx.r, collect, g), 0);
	fx_fini(&fx);
	free(g);
}

/* The launching thread's work: a few hundred ns per recorded call (one
 * clock read on entry and exit, one ring write), no allocation; a buffer
 * CUPTI asks for comes from the pool the activation filled, so a launch
 * that crosses a buffer boundary does not map and fault in a new one. */
static void test_buffer_pool(void **state)
{
	uint8_t *b[PTG_POOL_MAX + 2], *first;
	size_t size, max;
	struct fixture fx;
	int i;

	fx_init(&fx, 8, 256);
	assert_int_equal(fx.s.npool, 0);
	assert_int_equal(pt_gpuring__attach(fx.r, 10 * SEC), 0);
	ptg_shim__tick(&fx.s, 10 * SEC + 10 * MS);
	assert_int_equal(fx.s.npool, PTG_POOL_PREFILL);
	first = fx.s.pool[PTG_POOL_PREFILL - 1];
	F.req(&b[0], &size, &max);
	assert_ptr_equal(b[0], first);
	assert_int_equal(size, PTG_BUF_SIZE);
	for (i = 1; i < PTG_POOL_MAX + 2; i++)
		F.req(&b[i], &size, &max);
	assert_int_equal(fx.s.npool, 0);
	/* returned: kept up to the pool's size, the rest freed */
	for (i = 0; i < PTG_POOL_MAX + 2; i++)
		F.done(NULL, 0, b[i], PTG_BUF_SIZE, 0);
	assert_int_equal(fx.s.npool, PTG_POOL_MAX);
	/* a second activation does not add to a full pool */
	pt_gpuring__detach(fx.r);
	ptg_shim__tick(&fx.s, 10 * SEC + 20 * MS);
	assert_int_equal(pt_gpuring__attach(fx.r, 10 * SEC + 30 * MS), 0);
	ptg_shim__tick(&fx.s, 10 * SEC + 40 * MS);
	assert_int_equal(fx.s.npool, PTG_POOL_MAX);
	fx_fini(&fx);
}

/* The bench knobs take parts of an activation out (gpu_check.py measures
 * what each costs a CUDA call): the kernel kind alone, no callbacks. */
static void test_bench_knobs(void **state)
{
	struct fixture fx;
	int i;

	fx_init(&fx, 8, 256);
	capture_stderr();
	ptg_shim__bench_knobs(&fx.s, "kernel", "none");
	assert_int_equal(captured_lines(), 1);
	F.n = 0;
	assert_int_equal(pt_gpuring__attach(fx.r, 10 * SEC), 0);
	ptg_shim__tick(&fx.s, 10 * SEC + 10 * MS);
	i = 0;
	expect(&i, OP_SUB, 0, 0);
	expect(&i, OP_CALLBACKS, 0, 0);
	expect(&i, OP_ENABLE, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0);
	assert_int_equal(i, F.n);
	pt_gpuring__detach(fx.r);
	F.n = 0;
	ptg_shim__tick(&fx.s, 10 * SEC + 20 * MS);
	i = 0;
	expect(&i, OP_DISABLE, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0);
	expect(&i, OP_FLUSH, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, 0);
	expect(&i, OP_UNSUB, 0, 0);
	assert_int_equal(i, F.n);
	fx_fini(&fx);
}

static void test_conflicts(void **state)
{
	struct fixture fx;
	struct pt_gpuring_info in;
	struct ptgpu_header *h;
	uint64_t t = 10 * SEC;
	int i;

	fx_init(&fx, 8, 256);
	h = fx_hdr(&fx);

	/* Another CUPTI client (Nsight, torch.profiler): subscribe fails.
	 * Recorded, one line on stderr, dormant, not retried for this seq. */
	F.n = 0;
	F.fail_op = OP_SUB;
	F.fail_arg = ANY;
	F.fail_code = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	assert_int_equal(pt_gpuring__attach(fx.r, t), 0);
	capture_stderr();
	ptg_shim__tick(&fx.s, t + 10 * MS);
	assert_int_equal(captured_lines(), 1);
	i = 0;
	expect(&i, OP_SUB, 0, 0);
	assert_int_equal(i, F.n);
	assert_int_equal(h->state, PTGPU_STATE_DORMANT);
	assert_int_equal(h->dormant_reason, PTGPU_DORMANT_CONFLICT);
	pt_gpuring__info(fx.r, &in);
	assert_int_equal(in.conflict_call, PTGPU_CALL_SUBSCRIBE);
	assert_int_equal(in.conflict_code, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	assert_int_equal(in.conflict_seq, 1);
	assert_false(in.active);
	ptg_shim__tick(&fx.s, t + 20 * MS);
	ptg_shim__tick(&fx.s, t + 30 * MS);
	assert_int_equal(F.n, 1);

	/* The next attach retries: now enabling MEMSET fails (the third
	 * kind). Undone in order, without a flush. */
	F.fail_op = OP_ENABLE;
	F.fail_arg = CUPTI_ACTIVITY_KIND_MEMSET;
	F.fail_code = CUPTI_ERROR_UNKNOWN;
	assert_int_equal(pt_gpuring__attach(fx.r, t + 40 * MS), 0);
	F.n = 0;
	capture_stderr();
	ptg_shim__tick(&fx.s, t + 50 * MS);
	assert_int_equal(captured_lines(), 1);
	i = 0;
	expect_activate(&i, 3, 0);
	expect_deactivate(&i, 2, 0, false);
	assert_int_equal(i, F.n);
	assert_int_equal(h->conflict_call, PTGPU_CALL_ENABLE);
	assert_int_equal(h->conflict_code, CUPTI_ERROR_UNKNOWN);
	assert_int_equal(h->conflict_arg, CUPTI_ACTIVITY_KIND_MEMSET);
	assert_int_equal(h->conflict_seq, 2);
	assert_int_equal(h->state, PTGPU_STATE_DORMANT);

	/* The fourth driver call fails: everything before it is undone. */
	F.fail_op = OP_DRV;
	F.fail_arg = ptg_driver_calls[3].cbid;
	assert_int_equal(pt_gpuring__attach(fx.r, t + 60 * MS), 0);
	F.n = 0;
	capture_stderr();
	ptg_shim__tick(&fx.s, t + 70 * MS);
	assert_int_equal(captured_lines(), 1);
	i = 0;
	expect_activate(&i, ptg_n_kinds, 4);
	expect_deactivate(&i, ptg_n_kinds, 3, false);
	assert_int_equal(i, F.n);
	assert_int_equal(h->conflict_call, PTGPU_CALL_DRIVER_API);
	assert_int_equal(h->conflict_arg, ptg_driver_calls[3].cbid);

	/* The other client is gone: the next attach works. */
	F.fail_op = 0;
	assert_int_equal(pt_gpuring__attach(fx.r, t + 80 * MS), 0);
	F.n = 0;
	ptg_shim__tick(&fx.s, t + 90 * MS);
	i = 0;
	expect_activate_all(&i);
	assert_int_equal(h->state, PTGPU_STATE_ACTIVE);
	assert_int_equal(h->activations, 1);
	fx_fini(&fx);
}

/* Process exit while active: the last records are flushed into the ring
 * and the reader sees DORMANT (reason EXIT) instead of waiting. */
static void test_exit(void **state)
{
	struct fixture fx;
	struct ptgpu_header *h;
	int i;

	fx_init(&fx, 8, 256);
	h = fx_hdr(&fx);
	/* Dormant: nothing to do. */
	F.n = 0;
	assert_int_equal(ptg_shim__exit(&fx.s, 100), 0);
	assert_int_equal(F.n, 0);
	assert_int_equal(h->dormant_reason, PTGPU_DORMANT_NEVER);
	pthread_mutex_unlock(&fx.s.ctl_lock);

	assert_int_equal(pt_gpuring__attach(fx.r, 10 * SEC), 0);
	ptg_shim__tick(&fx.s, 10 * SEC + 10 * MS);
	assert_int_equal(h->state, PTGPU_STATE_ACTIVE);
	F.n = 0;
	assert_int_equal(ptg_shim__exit(&fx.s, 100), 0);
	i = 0;
	expect_deactivate_all(&i);
	assert_int_equal(i, F.n);
	assert_int_equal(h->state, PTGPU_STATE_DORMANT);
	assert_int_equal(h->dormant_reason, PTGPU_DORMANT_EXIT);
	/* It keeps the lock: the control thread stays off CUPTI. */
	assert_int_equal(pthread_mutex_trylock(&fx.s.ctl_lock), EBUSY);
	/* A tick holding the lock (a long first enable) does not hold up
	 * the exit for longer than the timeout. */
	assert_int_equal(ptg_shim__exit(&fx.s, 20), -ETIMEDOUT);
	pthread_mutex_unlock(&fx.s.ctl_lock);
	fx_fini(&fx);
}

static void test_init_failures(void **state)
{
	struct ptg_ring_params p = { .nslots = 8, .strtab_size = 256, .pid = 1 };
	struct ptgpu_header *h;
	struct ptg_shim s;
	struct pt_gpuring *r;
	size_t len = ptg_ring__size(8, 256);
	void *mem = aligned_alloc(4096, len);
	char err[128];
	int i;

	/* The timestamp callback cannot be registered at init: the server
	 * still starts; the registration is retried at attach, first. */
	memset(mem, 0, len);
	memset(&F, 0, sizeof(F));
	F.fail_op = OP_TS;
	F.fail_arg = ANY;
	F.fail_code = CUPTI_ERROR_NOT_INITIALIZED;
	capture_stderr();
	assert_int_equal(ptg_shim__init(&s, &fake_ops, fake_clock, mem, len, &p), 0);
	assert_int_equal(captured_lines(), 1);
	h = mem;
	assert_int_equal(h->conflict_call, PTGPU_CALL_TIMESTAMP_CB);
	assert_int_equal(h->conflict_code, CUPTI_ERROR_NOT_INITIALIZED);
	assert_int_equal(h->conflict_seq, 0);
	i = 0;
	expect(&i, OP_TS, 0, 0);
	expect(&i, OP_TID, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM, 0);
	expect(&i, OP_CALLBACKS, 0, 0);

	assert_int_equal(pt_gpuring__open_mem(&r, mem, len, err, sizeof(err)), 0);
	F.fail_op = 0;
	F.n = 0;
	assert_int_equal(pt_gpuring__attach(r, 5 * SEC), 0);
	ptg_shim__tick(&s, 5 * SEC + 10 * MS);
	i = 0;
	expect(&i, OP_TS, 0, 0);
	expect_activate_all(&i);
	assert_int_equal(i, F.n);
	assert_int_equal(h->state, PTGPU_STATE_ACTIVE);
	/* Registered once: the next activation does not register again. */
	pt_gpuring__detach(r);
	ptg_shim__tick(&s, 5 * SEC + 20 * MS);
	assert_int_equal(pt_gpuring__attach(r, 5 * SEC + 30 * MS), 0);
	F.n = 0;
	ptg_shim__tick(&s, 5 * SEC + 40 * MS);
	i = 0;
	expect_activate_all(&i);
	pt_gpuring__close(r);
	ptg_shim__fini(&s);

	/* Buffer callbacks taken at init (another client): recorded, and
	 * the segment is still there for proftrace to read why. */
	memset(mem, 0, len);
	memset(&F, 0, sizeof(F));
	F.fail_op = OP_CALLBACKS;
	F.fail_arg = ANY;
	F.fail_code = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	capture_stderr();
	assert_int_equal(ptg_shim__init(&s, &fake_ops, fake_clock, mem, len, &p), 0);
	assert_int_equal(captured_lines(), 1);
	assert_int_equal(h->conflict_call, PTGPU_CALL_CALLBACKS);
	assert_int_equal(h->state, PTGPU_STATE_DORMANT);
	assert_int_equal(pt_gpuring__open_mem(&r, mem, len, err, sizeof(err)), 0);
	pt_gpuring__close(r);
	ptg_shim__fini(&s);

	/* A segment too small for the layout: an error, no CUPTI call. */
	memset(&F, 0, sizeof(F));
	assert_int_equal(ptg_shim__init(&s, &fake_ops, fake_clock, mem, 4096, &p), -ENOSPC);
	assert_int_equal(F.n, 0);
	free(mem);
}

/*
 * The memfds named PTGPU_MEMFD_NAME that pid holds, as proftrace looks
 * for them; -errno when its fds cannot be read (it is gone). cloexec
 * (optional): whether all of them are close-on-exec. No cmocka asserts:
 * children call it.
 */
static int count_segments(int pid, bool *cloexec)
{
	char path[64], link[128], want[64], line[128];
	struct dirent *de;
	unsigned int flags;
	int n = 0;
	ssize_t len;
	FILE *f;
	DIR *d;

	snprintf(want, sizeof(want), "/memfd:%s (deleted)", PTGPU_MEMFD_NAME);
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	if (cloexec)
		*cloexec = true;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		len = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (len <= 0 || (link[len] = 0, strcmp(link, want)))
			continue;
		n++;
		if (!cloexec)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%.16s", pid, de->d_name);
		f = fopen(path, "re");
		flags = 0;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "flags: %o", &flags) == 1)
				break;
		if (f)
			fclose(f);
		if (!(flags & O_CLOEXEC))
			*cloexec = false;
	}
	closedir(d);
	return n;
}

/* The shim's control thread runs in this process (it names itself). */
static bool control_thread_runs(void)
{
	char path[300], comm[32];
	struct dirent *de;
	bool found = false;
	FILE *f;
	DIR *d = opendir("/proc/self/task");

	while (d && !found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f))
			found = !strncmp(comm, "proftrace-cupti", 15);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * InitializeInjection in a child: its segment is one memfd among the
 * child's open files however often it is called, close-on-exec, found by
 * pid. A process the child then forks holds none of it (the shim's
 * pthread_atfork handler closes it), so no ring of the parent's turns up
 * in its profile. Once the child exits our mapping still reads (proftrace
 * drains the last records), and nothing is left behind: the file had no
 * name, and nothing appears in /dev/shm. Real libcupti, no driver: CUPTI
 * calls may fail; the process goes on.
 */
static void test_injection_segment(void **state)
{
	int ready[2], go[2], status, ret, gret, n, gn;
	struct pt_gpuring_info in, after;
	struct pt_gpuring *r, *gr;
	char path[64], err[512], gerr[512] = "";
	pid_t pid, gc = 0;
	bool cloexec;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int null = open("/dev/null", O_WRONLY), up[2];
		pid_t g;
		char c;

		close(ready[0]);
		close(go[1]);
		dup2(null, 2);
		if (InitializeInjection() != 1 || InitializeInjection() != 1)
			_exit(3);
		if (pipe(up))
			_exit(5);
		g = fork();
		if (g < 0)
			_exit(5);
		if (!g) {
			/* fork() has returned here: the atfork handlers ran; looked
			 * at until the test closes go */
			close(ready[1]);
			if (write(up[1], "u", 1) != 1)
				_exit(6);
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
		if (read(up[0], &c, 1) != 1)
			_exit(6);
		if (write(ready[1], &g, sizeof(g)) != sizeof(g) || read(go[0], &c, 1) < 0)
			_exit(4);
		waitpid(g, NULL, 0);
		exit(0); /* atexit: the shim's exit handler */
	}
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &gc, sizeof(gc)) != sizeof(gc)) {
		close(go[1]);
		waitpid(pid, &status, 0);
		fail_msg("child failed: status %d", status);
	}
	n = count_segments(pid, &cloexec);
	gn = count_segments(gc, NULL);
	gret = pt_gpuring__open(&gr, gc, gerr, sizeof(gerr));
	if (!gret)
		pt_gpuring__close(gr);
	ret = pt_gpuring__open(&r, pid, err, sizeof(err));
	if (!ret)
		pt_gpuring__info(r, &in);
	close(go[1]); /* EOF: both exit */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(ready[0]);
	if (ret)
		fail_msg("open: %s", err);
	pt_gpuring__info(r, &after);
	pt_gpuring__close(r);

	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(n, 1);
	assert_true(cloexec);
	assert_int_equal(in.shim_pid, (uint32_t)pid);
	assert_int_equal(in.version, PTGPU_VERSION);
	assert_int_equal(in.cupti_version, CUPTI_API_VERSION);
	assert_int_equal(in.state, PTGPU_STATE_DORMANT);
	assert_true(in.ring_slots >= 4096);
	/* the forked grandchild: no fd of it; its private copy of the
	 * parent's ring (still a mapping of the memfd) is told for what it is */
	assert_int_equal(gn, 0);
	if (gret != -ENOENT || !strstr(gerr, "its parent's"))
		fail_msg("grandchild %d: %d (%s)", (int)gc, gret, gerr);
	/* after the exit: still mapped, the same header */
	assert_int_equal(after.shim_pid, (uint32_t)pid);
	assert_int_equal(after.version, PTGPU_VERSION);
	assert_true(count_segments(pid, NULL) < 0);
	snprintf(path, sizeof(path), "/dev/shm/proftrace-%d", (int)pid);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access("/dev/shm/" PTGPU_MEMFD_NAME, F_OK), -1);
}

/*
 * A second copy of the shim (loaded from another path) in a process where
 * one runs already: it sees that copy's published segment, with this pid
 * in shim_pid, and stays off (no segment, no control thread, the other's
 * header untouched); the process goes on. The first copy is simulated by
 * a segment made as the shim makes it. A segment held across fork (the
 * parent's pid in shim_pid) is not a second copy: the shim starts, and
 * proftrace finds the child's own.
 */
static void test_injection_name_in_use(void **state)
{
	struct ptg_ring_params p = { .nslots = 8, .strtab_size = 256, .cupti_version = 4242 };
	int status, ready[2], go[2], n = -1, ret;
	size_t len = ptg_ring__size(8, 256);
	struct pt_gpuring_info in;
	struct pt_gpuring *r;
	struct ptg_ring w;
	char err[512], c;
	void *mem = NULL;
	pid_t pid;
	int fd = -1;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct ptgpu_header h;
		FILE *errf = tmpfile();
		char line[256];
		bool said = false;

		p.pid = (uint32_t)getpid();
		if (!errf || pt_memseg__create(PTGPU_MEMFD_NAME, len, &mem, &fd) ||
		    ptg_ring__init(&w, mem, len, &p))
			_exit(2);
		dup2(fileno(errf), 2);
		if (InitializeInjection() != 1)
			_exit(3);
		if (count_segments(getpid(), NULL) != 1 || control_thread_runs())
			_exit(4);
		if (pread(fd, &h, sizeof(h), 0) != sizeof(h) || h.cupti_version != 4242 ||
		    h.shim_pid != (uint32_t)getpid())
			_exit(5);
		rewind(errf);
		while (fgets(line, sizeof(line), errf))
			said |= !!strstr(line, "another copy of the shim");
		_exit(said ? 0 : 6);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* ours, inherited by the child */
	p.pid = (uint32_t)getpid();
	assert_int_equal(pt_memseg__create(PTGPU_MEMFD_NAME, len, &mem, &fd), 0);
	assert_int_equal(ptg_ring__init(&w, mem, len, &p), 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		close(ready[0]);
		close(go[1]);
		dup2(null, 2);
		if (InitializeInjection() != 1)
			_exit(3);
		c = control_thread_runs() ? 'r' : 'n';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(4);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	c = 0;
	ret = -EIO;
	if (read(ready[0], &c, 1) == 1) {
		n = count_segments(pid, NULL);
		ret = pt_gpuring__open(&r, pid, err, sizeof(err));
		if (!ret) {
			pt_gpuring__info(r, &in);
			pt_gpuring__close(r);
		}
	}
	close(go[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(ready[0]);
	ptg_ring__free(&w);
	munmap(mem, len);
	close(fd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(c, 'r');
	assert_int_equal(n, 2);
	if (ret)
		fail_msg("open the child's: %s", err);
	assert_int_equal(in.shim_pid, (uint32_t)pid);
	assert_int_equal(in.cupti_version, CUPTI_API_VERSION);
}

/* The constructor's decision when the shim is loaded late (dlopen into a
 * running process): only in a CUDA process, never when the driver will
 * call InitializeInjection (CUDA_INJECTION64_PATH names the shim, by
 * path or through a link). */
static void test_late_wanted(void **state)
{
	char dir[] = "/tmp/pt-shim-XXXXXX", lib[64], link[64];
	int fd;

	assert_false(ptg_inject__late_wanted(NULL, "/x/libproftrace_cupti.so", false));
	assert_true(ptg_inject__late_wanted(NULL, "/x/libproftrace_cupti.so", true));
	assert_true(ptg_inject__late_wanted("", "/x/libproftrace_cupti.so", true));
	assert_true(ptg_inject__late_wanted("/usr/lib/nsys.so", "/x/libproftrace_cupti.so", true));
	assert_false(ptg_inject__late_wanted("/x/libproftrace_cupti.so", "/x/libproftrace_cupti.so",
					     true));
	assert_true(ptg_inject__late_wanted("/x/libproftrace_cupti.so", NULL, true));
	assert_non_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "%s/lib.so", dir);
	snprintf(link, sizeof(link), "%s/link.so", dir);
	fd = open(lib, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(lib, link), 0);
	assert_false(ptg_inject__late_wanted(link, lib, true));
	unlink(link);
	unlink(lib);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_sequence),
		cmocka_unit_test(test_buffer_every_kind),
		cmocka_unit_test(test_expected_sizes),
		cmocka_unit_test(test_buffer_malformed),
		cmocka_unit_test(test_ring_overflow_and_strtab_full),
		cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_launch_join),
		cmocka_unit_test(test_buffer_pool),
		cmocka_unit_test(test_bench_knobs),
		cmocka_unit_test(test_conflicts),
		cmocka_unit_test(test_exit),
		cmocka_unit_test(test_init_failures),
		cmocka_unit_test(test_injection_segment),
		cmocka_unit_test(test_injection_name_in_use),
		cmocka_unit_test(test_late_wanted),
	};

	return cmocka_run_group_tests_name("shim", tests, NULL, NULL);
}
