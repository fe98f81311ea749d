// SPDX-License-Identifier: BSD-2-Clause
/*
 * libproftrace_cupti.so: loaded by the CUDA driver through
 * CUDA_INJECTION64_PATH, which calls InitializeInjection() once CUDA starts.
 *
 * The shim stays dormant (no activity kind enabled, so CUDA runs at full
 * speed) until proftrace attaches through the shared segment; see ptgpu.h
 * for the protocol. Nothing here may abort or block the CUDA process:
 * every failure is recorded in the segment, printed once, and tracing
 * simply stays off.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convert.h"
#include "inject.h"
#include "memseg.h"

#define PTG_EXPORT __attribute__((visibility("default")))

/* Not SYNCHRONIZATION: on an H200 it added 190 ns to every cudaGetDevice
 * and 330 ns to every cudaEventQuery (calls that wait nothing); the waits
 * are recorded as API calls below, with their host time. */
const CUpti_ActivityKind ptg_kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMSET,
};
const size_t ptg_n_kinds = sizeof(ptg_kinds) / sizeof(ptg_kinds[0]);

/*
 * API records only for the calls that launch, copy, set or wait, from the
 * Callback API: a callback on the calling thread at each such call's entry
 * and exit, nothing on any other call (cudaGetDevice, cudaEventQuery
 * polling loops...). Not the activity API: the RUNTIME/DRIVER kinds record
 * every call (389 records per step of a PyTorch decode loop, 1.35-1.53x
 * slower on an H200), and cuptiActivityEnableRuntimeApi/DriverApi for
 * single calls, enabled after the CUDA context exists (at attach), gave
 * no record at all there (docs/gpu.md).
 *
 * The driver's calls only: every runtime call that launches, copies, sets
 * or waits makes one of these driver calls, with the runtime call's
 * correlation id (seen on an H200 for cudaLaunchKernel, cudaGraphLaunch,
 * cudaMemcpyAsync, cudaMemsetAsync, cudaEventSynchronize: one record each,
 * every piece of work joined), and cuBLAS, Triton and CUDA graphs launch
 * through them directly. Enabling the runtime's too made a driver launch
 * 250 ns dearer (docs/gpu.md, "What a call costs").
 */
#define DRV(x) CUPTI_DRIVER_TRACE_CBID_##x
#define L(x)                                                                                       \
	{                                                                                          \
		DRV(x), PTGPU_API_LAUNCH                                                           \
	}
#define C(x)                                                                                       \
	{                                                                                          \
		DRV(x), PTGPU_API_COPY                                                             \
	}
#define S(x)                                                                                       \
	{                                                                                          \
		DRV(x), PTGPU_API_SET                                                              \
	}
#define W(x)                                                                                       \
	{                                                                                          \
		DRV(x), PTGPU_API_WAIT                                                             \
	}
/* clang-format off */
const struct ptg_api_call ptg_driver_calls[] = {
	L(cuLaunchKernel), L(cuLaunchKernel_ptsz),
	L(cuLaunchKernelEx), L(cuLaunchKernelEx_ptsz),
	L(cuLaunchCooperativeKernel), L(cuLaunchCooperativeKernel_ptsz),
	L(cuLaunchCooperativeKernelMultiDevice),
	L(cuLaunch), L(cuLaunchGrid), L(cuLaunchGridAsync),
	L(cuGraphLaunch), L(cuGraphLaunch_ptsz),
	C(cuMemcpy), C(cuMemcpy_ptds), C(cuMemcpyAsync), C(cuMemcpyAsync_ptsz),
	C(cuMemcpyHtoD_v2), C(cuMemcpyHtoD_v2_ptds),
	C(cuMemcpyDtoH_v2), C(cuMemcpyDtoH_v2_ptds),
	C(cuMemcpyDtoD_v2), C(cuMemcpyDtoD_v2_ptds),
	C(cuMemcpyHtoDAsync_v2), C(cuMemcpyHtoDAsync_v2_ptsz),
	C(cuMemcpyDtoHAsync_v2), C(cuMemcpyDtoHAsync_v2_ptsz),
	C(cuMemcpyDtoDAsync_v2), C(cuMemcpyDtoDAsync_v2_ptsz),
	C(cuMemcpyDtoA_v2), C(cuMemcpyDtoA_v2_ptds), C(cuMemcpyAtoD_v2), C(cuMemcpyAtoD_v2_ptds),
	C(cuMemcpyHtoA_v2), C(cuMemcpyHtoA_v2_ptds), C(cuMemcpyAtoH_v2), C(cuMemcpyAtoH_v2_ptds),
	C(cuMemcpyAtoA_v2), C(cuMemcpyAtoA_v2_ptds),
	C(cuMemcpyHtoAAsync_v2), C(cuMemcpyHtoAAsync_v2_ptsz),
	C(cuMemcpyAtoHAsync_v2), C(cuMemcpyAtoHAsync_v2_ptsz),
	C(cuMemcpy2D_v2), C(cuMemcpy2D_v2_ptds),
	C(cuMemcpy2DUnaligned_v2), C(cuMemcpy2DUnaligned_v2_ptds),
	C(cuMemcpy2DAsync_v2), C(cuMemcpy2DAsync_v2_ptsz),
	C(cuMemcpy3D_v2), C(cuMemcpy3D_v2_ptds),
	C(cuMemcpy3DAsync_v2), C(cuMemcpy3DAsync_v2_ptsz),
	C(cuMemcpyPeer), C(cuMemcpyPeer_ptds),
	C(cuMemcpyPeerAsync), C(cuMemcpyPeerAsync_ptsz),
	C(cuMemcpy3DPeer), C(cuMemcpy3DPeer_ptds),
	C(cuMemcpy3DPeerAsync), C(cuMemcpy3DPeerAsync_ptsz),
	C(cuMemcpyBatchAsync), C(cuMemcpyBatchAsync_ptsz),
	C(cuMemcpyBatchAsync_v2), C(cuMemcpyBatchAsync_v2_ptsz),
	C(cuMemcpy3DBatchAsync), C(cuMemcpy3DBatchAsync_ptsz),
	C(cuMemcpy3DBatchAsync_v2), C(cuMemcpy3DBatchAsync_v2_ptsz),
	S(cuMemsetD8_v2), S(cuMemsetD8_v2_ptds),
	S(cuMemsetD16_v2), S(cuMemsetD16_v2_ptds),
	S(cuMemsetD32_v2), S(cuMemsetD32_v2_ptds),
	S(cuMemsetD2D8_v2), S(cuMemsetD2D8_v2_ptds),
	S(cuMemsetD2D16_v2), S(cuMemsetD2D16_v2_ptds),
	S(cuMemsetD2D32_v2), S(cuMemsetD2D32_v2_ptds),
	S(cuMemsetD8Async), S(cuMemsetD8Async_ptsz),
	S(cuMemsetD16Async), S(cuMemsetD16Async_ptsz),
	S(cuMemsetD32Async), S(cuMemsetD32Async_ptsz),
	S(cuMemsetD2D8Async), S(cuMemsetD2D8Async_ptsz),
	S(cuMemsetD2D16Async), S(cuMemsetD2D16Async_ptsz),
	S(cuMemsetD2D32Async), S(cuMemsetD2D32Async_ptsz),
	/* waits (not the queries: frameworks poll them in loops) */
	W(cuCtxSynchronize), W(cuCtxSynchronize_v2),
	W(cuStreamSynchronize), W(cuStreamSynchronize_ptsz),
	W(cuEventSynchronize),
	W(cuStreamWaitEvent), W(cuStreamWaitEvent_ptsz),
};
/* clang-format on */
#undef DRV
#undef L
#undef C
#undef S
#undef W
const size_t ptg_n_driver_calls = sizeof(ptg_driver_calls) / sizeof(ptg_driver_calls[0]);

/* What a driver call is (enum ptgpu_api_what), by callback id: 0 for
 * the calls not recorded. Filled once, read by every callback. */
static uint8_t ptg_what[CUPTI_DRIVER_TRACE_CBID_SIZE];

static void ptg_what__fill(void)
{
	for (size_t i = 0; i < ptg_n_driver_calls; i++)
		if (ptg_driver_calls[i].cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
			ptg_what[ptg_driver_calls[i].cbid] = ptg_driver_calls[i].what;
}

const struct ptg_cupti_ops ptg_cupti_real_ops = {
	.get_version = cuptiGetVersion,
	.get_result_string = cuptiGetResultString,
	.register_timestamp_cb = cuptiActivityRegisterTimestampCallback,
	.set_thread_id_type = cuptiSetThreadIdType,
	.register_callbacks = cuptiActivityRegisterCallbacks,
	.subscribe = cuptiSubscribe,
	.unsubscribe = cuptiUnsubscribe,
	.enable = cuptiActivityEnable,
	.disable = cuptiActivityDisable,
	.enable_callback = cuptiEnableCallback,
	.flush_all = cuptiActivityFlushAll,
	.get_next_record = cuptiActivityGetNextRecord,
	.get_num_dropped = cuptiActivityGetNumDroppedRecords,
};

/* CUPTI's buffer callbacks take no user pointer: they find the shim here. */
static struct ptg_shim *ptg_cur;

uint64_t ptg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC (CUPTI's default is CLOCK_REALTIME) so GPU records share
 * bpf_ktime_get_ns()'s clock. */
static uint64_t CUPTIAPI ptg_timestamp(void)
{
	return ptg_now_ns();
}

/* A buffer from the pool, else a new one. CUPTI wants 8-byte alignment;
 * without a buffer it drops records and counts them (cupti_dropped). */
static uint8_t *ptg_pool__get(struct ptg_shim *s)
{
	uint8_t *buf = NULL;

	if (s) {
		pthread_mutex_lock(&s->pool_lock);
		if (s->npool)
			buf = s->pool[--s->npool];
		pthread_mutex_unlock(&s->pool_lock);
	}
	return buf ? buf : aligned_alloc(8, PTG_BUF_SIZE);
}

static void ptg_pool__put(struct ptg_shim *s, uint8_t *buf)
{
	if (s) {
		pthread_mutex_lock(&s->pool_lock);
		if (s->npool < PTG_POOL_MAX) {
			s->pool[s->npool++] = buf;
			buf = NULL;
		}
		pthread_mutex_unlock(&s->pool_lock);
	}
	free(buf);
}

/* Called before the first records of an activation: the first buffers
 * are mapped and their pages touched here, on the control thread, not by
 * a launching thread inside a kernel launch. */
static void ptg_pool__prefill(struct ptg_shim *s)
{
	uint8_t *bufs[PTG_POOL_PREFILL];
	unsigned int i, n = 0;

	pthread_mutex_lock(&s->pool_lock);
	i = s->npool;
	pthread_mutex_unlock(&s->pool_lock);
	for (; i < PTG_POOL_PREFILL; i++) {
		bufs[n] = aligned_alloc(8, PTG_BUF_SIZE);
		if (!bufs[n])
			break;
		memset(bufs[n++], 0, PTG_BUF_SIZE);
	}
	for (i = 0; i < n; i++)
		ptg_pool__put(s, bufs[i]);
}

void CUPTIAPI ptg_shim__buffer_request(uint8_t **buf, size_t *size, size_t *max_records)
{
	*buf = ptg_pool__get(__atomic_load_n(&ptg_cur, __ATOMIC_ACQUIRE));
	*size = *buf ? PTG_BUF_SIZE : 0;
	*max_records = 0;
}

void CUPTIAPI ptg_shim__buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
					size_t valid)
{
	struct ptg_shim *s = __atomic_load_n(&ptg_cur, __ATOMIC_ACQUIRE);

	if (!buf)
		return;
	if (s)
		ptg_shim__buffer_done(s, ctx, stream, buf, valid);
	ptg_pool__put(s, buf);
}

/* ---- the Callback API: one record per launch, copy, set or wait ---- */

static __thread uint32_t ptg_tid;

void ptg_shim__api_rec(union ptgpu_rec *rec, CUpti_CallbackId cbid, uint32_t what, uint32_t corr,
		       uint64_t start, uint64_t end, uint32_t tid, uint32_t pid, uint32_t ret)
{
	memset(rec, 0, sizeof(*rec));
	rec->api.type = PTGPU_REC_API;
	rec->api.domain = PTGPU_API_DRIVER;
	rec->api.correlation_id = corr;
	rec->api.start_ns = start;
	rec->api.end_ns = end;
	rec->api.cbid = cbid;
	rec->api.tid = tid;
	rec->api.pid = pid;
	rec->api.return_value = ret;
	rec->api.what = what;
}

void CUPTIAPI ptg_shim__api_cb(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			       const void *data)
{
	const CUpti_CallbackData *d = data;
	struct ptg_shim *s = ud;
	union ptgpu_rec rec;
	uint64_t now;
	uint32_t ret;

	if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE ||
	    !ptg_what[cbid])
		return;
	now = s->now();
	if (d->callbackSite == CUPTI_API_ENTER) {
		/* shared by this call's entry and exit callbacks */
		*d->correlationData = now;
		return;
	}
	if (!ptg_tid)
		ptg_tid = (uint32_t)gettid();
	/* a CUresult: an int-sized enum */
	ret = d->functionReturnValue ? *(const uint32_t *)d->functionReturnValue : 0;
	ptg_shim__api_rec(&rec, cbid, ptg_what[cbid], d->correlationId,
			  *d->correlationData ? *d->correlationData : now, now, ptg_tid,
			  s->ring.hdr->shim_pid, ret);
	pthread_mutex_lock(&s->ring_lock);
	ptg_ring__write(&s->ring, &rec);
	pthread_mutex_unlock(&s->ring_lock);
}

/* Record a failed CUPTI call in the header and say it once on stderr. */
static void ptg_shim__conflict(struct ptg_shim *s, enum ptgpu_call call, CUptiResult code,
			       uint32_t arg, uint64_t seq, const char *what_now)
{
	struct ptgpu_header *h = s->ring.hdr;
	const char *str = NULL;
	char args[16] = "";

	__atomic_store_n(&h->conflict_call, (uint32_t)call, __ATOMIC_RELAXED);
	__atomic_store_n(&h->conflict_code, (uint32_t)code, __ATOMIC_RELAXED);
	__atomic_store_n(&h->conflict_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&h->conflict_seq, seq, __ATOMIC_RELEASE);
	if (!s->ops->get_result_string || s->ops->get_result_string(code, &str) != CUPTI_SUCCESS)
		str = NULL;
	/* The kind or callback id, for the calls that take one. */
	if (call >= PTGPU_CALL_ENABLE && call <= PTGPU_CALL_DISABLE)
		snprintf(args, sizeof(args), "%u", arg);
	fprintf(stderr, "proftrace-cupti: %s(%s) failed: %s (%d); %s\n", ptgpu_call_name(call),
		args, str ? str : "CUPTI error", (int)code, what_now);
}

static void ptg_shim__set_state(struct ptg_shim *s, uint32_t state, uint32_t reason)
{
	s->state = state;
	__atomic_store_n(&s->ring.hdr->dormant_reason, reason, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ring.hdr->state, state, __ATOMIC_RELEASE);
}

int ptg_shim__init(struct ptg_shim *s, const struct ptg_cupti_ops *ops, uint64_t (*now)(void),
		   void *mem, size_t len, const struct ptg_ring_params *p)
{
	CUptiResult r;
	int err;

	memset(s, 0, sizeof(*s));
	s->ops = ops;
	s->now = now;
	s->kinds_mask = (1u << ptg_n_kinds) - 1;
	s->callbacks = true;
	ptg_what__fill();
	err = ptg_ring__init(&s->ring, mem, len, p);
	if (err)
		return err;
	pthread_mutex_init(&s->ring_lock, NULL);
	pthread_mutex_init(&s->conv_lock, NULL);
	pthread_mutex_init(&s->pool_lock, NULL);
	pthread_mutex_init(&s->ctl_lock, NULL);
	__atomic_store_n(&ptg_cur, s, __ATOMIC_RELEASE);

	/* Once, and before anything is enabled: re-registering mid-session
	 * mixes clocks in the records of the next round. */
	r = ops->register_timestamp_cb(ptg_timestamp);
	if (r != CUPTI_SUCCESS)
		ptg_shim__conflict(s, PTGPU_CALL_TIMESTAMP_CB, r, 0, 0,
				   "will retry at attach; GPU tracing stays off until then");
	else
		s->ts_registered = true;
	/* API records then carry the OS TID, the one BPF sees. */
	r = ops->set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if (r != CUPTI_SUCCESS)
		ptg_shim__conflict(s, PTGPU_CALL_THREAD_ID, r, 0, 0,
				   "API records will carry CUPTI's own thread ids");
	r = ops->register_callbacks(ptg_shim__buffer_request, ptg_shim__buffer_complete);
	if (r != CUPTI_SUCCESS)
		ptg_shim__conflict(s, PTGPU_CALL_CALLBACKS, r, 0, 0, "will retry at attach");
	return 0;
}

void ptg_shim__fini(struct ptg_shim *s)
{
	struct ptg_shim *cur = s;

	__atomic_compare_exchange_n(&ptg_cur, &cur, NULL, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	while (s->npool)
		free(s->pool[--s->npool]);
	pthread_mutex_destroy(&s->ring_lock);
	pthread_mutex_destroy(&s->conv_lock);
	pthread_mutex_destroy(&s->pool_lock);
	pthread_mutex_destroy(&s->ctl_lock);
	ptg_ring__free(&s->ring);
}

/* Undo whatever part of an activation is in place, in enabling order. A
 * failing disable is recorded but does not stop the others. */
static void ptg_shim__undo(struct ptg_shim *s, bool flush, uint64_t seq)
{
	const struct ptg_cupti_ops *ops = s->ops;
	CUptiResult r;
	size_t i;

	for (i = 0; i < s->kinds_on; i++) {
		if (!(s->kinds_mask >> i & 1))
			continue;
		r = ops->disable(ptg_kinds[i]);
		if (r != CUPTI_SUCCESS)
			ptg_shim__conflict(s, PTGPU_CALL_DISABLE, r, ptg_kinds[i], seq,
					   "records of that kind may continue");
	}
	for (i = 0; i < s->calls_on; i++)
		ops->enable_callback(0, s->sub, CUPTI_CB_DOMAIN_DRIVER_API,
				     ptg_driver_calls[i].cbid);
	s->kinds_on = s->calls_on = 0;
	/* Disable first, then force-flush (Kineto's stop order): what was
	 * recorded up to now reaches the ring while proftrace still drains,
	 * and nothing stale waits in CUPTI for the next attach. */
	if (flush) {
		r = ops->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		if (r != CUPTI_SUCCESS)
			ptg_shim__conflict(s, PTGPU_CALL_FLUSH, r, 0, seq,
					   "the last records may be lost");
	}
	if (s->subscribed) {
		ops->unsubscribe(s->sub);
		s->subscribed = false;
	}
}

static void ptg_shim__activate(struct ptg_shim *s, uint64_t seq)
{
	const struct ptg_cupti_ops *ops = s->ops;
	struct ptgpu_header *h = s->ring.hdr;
	enum ptgpu_call call;
	uint64_t t0, stall;
	uint32_t arg = 0;
	CUptiResult r;

	if (!s->ts_registered) {
		call = PTGPU_CALL_TIMESTAMP_CB;
		r = ops->register_timestamp_cb(ptg_timestamp);
		if (r != CUPTI_SUCCESS)
			goto fail;
		s->ts_registered = true;
	}
	/* Holding a subscriber only while active leaves CUPTI free for
	 * torch.profiler or Nsight while we are dormant, and makes their
	 * presence show up here as MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED. */
	call = PTGPU_CALL_SUBSCRIBE;
	r = ops->subscribe(&s->sub, ptg_shim__api_cb, s);
	if (r != CUPTI_SUCCESS)
		goto fail;
	s->subscribed = true;
	/* Again: another CUPTI client may have replaced our buffer callbacks
	 * since init (they are process-wide). */
	call = PTGPU_CALL_CALLBACKS;
	r = ops->register_callbacks(ptg_shim__buffer_request, ptg_shim__buffer_complete);
	if (r != CUPTI_SUCCESS)
		goto fail;

	ptg_pool__prefill(s);

	/* The first enable can stall the process for seconds (Kineto saw
	 * > 5 s for CONCURRENT_KERNEL): measure it for the report. */
	t0 = s->now();
	call = PTGPU_CALL_ENABLE;
	for (; s->kinds_on < ptg_n_kinds; s->kinds_on++) {
		if (!(s->kinds_mask >> s->kinds_on & 1))
			continue;
		arg = ptg_kinds[s->kinds_on];
		r = ops->enable(ptg_kinds[s->kinds_on]);
		if (r != CUPTI_SUCCESS)
			goto fail;
	}
	call = PTGPU_CALL_DRIVER_API;
	for (; s->callbacks && s->calls_on < ptg_n_driver_calls; s->calls_on++) {
		arg = ptg_driver_calls[s->calls_on].cbid;
		r = ops->enable_callback(1, s->sub, CUPTI_CB_DOMAIN_DRIVER_API, arg);
		if (r != CUPTI_SUCCESS)
			goto fail;
	}
	s->last_flush_ns = s->now();
	stall = s->last_flush_ns - t0;
	__atomic_store_n(&h->enable_stall_ns, stall, __ATOMIC_RELAXED);
	if (stall > h->enable_stall_max_ns)
		__atomic_store_n(&h->enable_stall_max_ns, stall, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->activations, 1, __ATOMIC_RELAXED);
	s->active_seq = seq;
	__atomic_store_n(&h->active_seq, seq, __ATOMIC_RELAXED);
	ptg_shim__set_state(s, PTGPU_STATE_ACTIVE, PTGPU_DORMANT_NEVER);
	return;

fail:
	ptg_shim__conflict(s, call, r, arg, seq, "GPU tracing stays off until the next attach");
	ptg_shim__undo(s, false, seq);
	s->failed = true;
	s->failed_seq = seq;
	ptg_shim__set_state(s, PTGPU_STATE_DORMANT, PTGPU_DORMANT_CONFLICT);
}

void ptg_shim__tick(struct ptg_shim *s, uint64_t now)
{
	struct ptgpu_header *h = s->ring.hdr;
	uint32_t attached = __atomic_load_n(&h->attached, __ATOMIC_ACQUIRE);
	uint64_t seq = __atomic_load_n(&h->attach_seq, __ATOMIC_ACQUIRE);
	uint64_t hb = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE);
	int64_t age = (int64_t)(now - hb);
	/* A heartbeat far in the future is as dead as an old one (garbage,
	 * or a reader on another clock). */
	bool fresh = hb && age < (int64_t)PTGPU_HEARTBEAT_TIMEOUT_NS &&
		     age > -(int64_t)PTGPU_HEARTBEAT_TIMEOUT_NS;
	uint32_t reason = 0;

	if (s->state == PTGPU_STATE_ACTIVE) {
		if (!attached)
			reason = PTGPU_DORMANT_DETACH;
		else if (!fresh)
			reason = PTGPU_DORMANT_TIMEOUT;
		else if (seq != s->active_seq)
			reason = PTGPU_DORMANT_RESTART;
		if (!reason) {
			if (now - s->last_flush_ns >= PTG_FLUSH_EVERY_NS) {
				s->ops->flush_all(0);
				s->last_flush_ns = now;
			}
			return;
		}
		ptg_shim__undo(s, true, s->active_seq);
		ptg_shim__set_state(s, PTGPU_STATE_DORMANT, reason);
	}
	/* A timed-out reader that comes back with the same seq resumes; a
	 * seq whose activation failed waits for the next attach. */
	if (attached && fresh && !(s->failed && seq == s->failed_seq))
		ptg_shim__activate(s, seq);
}

int ptg_shim__exit(struct ptg_shim *s, unsigned int timeout_ms)
{
	struct timespec ts;

	/* timedlock: a first enable can stall for seconds, and exit must not
	 * wait for it. */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	if (pthread_mutex_timedlock(&s->ctl_lock, &ts))
		return -ETIMEDOUT;
	if (s->state == PTGPU_STATE_ACTIVE) {
		ptg_shim__undo(s, true, s->active_seq);
		ptg_shim__set_state(s, PTGPU_STATE_DORMANT, PTGPU_DORMANT_EXIT);
	}
	return 0;
}

/* Records converted per taking of ring_lock: a launching thread's API
 * record waits behind at most this many ring writes. */
#define PTG_BATCH 32

static void ptg_shim__write_batch(struct ptg_shim *s, const union ptgpu_rec *v, size_t n)
{
	size_t i;

	pthread_mutex_lock(&s->ring_lock);
	for (i = 0; i < n; i++)
		ptg_ring__write(&s->ring, &v[i]);
	pthread_mutex_unlock(&s->ring_lock);
}

void ptg_shim__buffer_done(struct ptg_shim *s, CUcontext ctx, uint32_t stream, uint8_t *buf,
			   size_t valid)
{
	const struct ptg_cupti_ops *ops = s->ops;
	CUpti_Activity *cur = NULL, *next;
	uint8_t *end, *lim = buf + valid;
	union ptgpu_rec batch[PTG_BATCH];
	size_t dropped = 0, avail, n = 0;
	CUptiResult st;

	pthread_mutex_lock(&s->conv_lock);
	st = valid ? ops->get_next_record(buf, valid, &cur) : CUPTI_ERROR_MAX_LIMIT_REACHED;
	while (st == CUPTI_SUCCESS) {
		/* CUPTI gives no record size: the distance to the next record
		 * (or the buffer end) is what we may read. */
		next = cur;
		st = ops->get_next_record(buf, valid, &next);
		end = st == CUPTI_SUCCESS ? (uint8_t *)next : lim;
		if ((uint8_t *)cur < buf || end <= (uint8_t *)cur || end > lim) {
			PTG_COUNT(&s->ring, bad_records, 1);
			st = CUPTI_ERROR_MAX_LIMIT_REACHED;
			break;
		}
		avail = (size_t)(end - (uint8_t *)cur);
		switch (ptg_convert__activity(&s->ring, cur, avail, &batch[n])) {
		case PTG_CONV_OK:
			if (++n == PTG_BATCH) {
				ptg_shim__write_batch(s, batch, n);
				n = 0;
			}
			break;
		case PTG_CONV_UNKNOWN:
			PTG_COUNT(&s->ring, unknown_kinds, 1);
			break;
		case PTG_CONV_SHORT:
			PTG_COUNT(&s->ring, bad_records, 1);
			break;
		}
		cur = next;
	}
	ptg_shim__write_batch(s, batch, n);
	/* INVALID_KIND: a record CUPTI itself cannot size; the rest of the
	 * buffer is unreadable. */
	if (st != CUPTI_ERROR_MAX_LIMIT_REACHED)
		PTG_COUNT(&s->ring, bad_records, 1);
	if (ops->get_num_dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
		PTG_COUNT(&s->ring, cupti_dropped, dropped);
	pthread_mutex_unlock(&s->conv_lock);
}

/* ---- the real process: segment file, control thread, entry point ---- */

static struct ptg_shim ptg_shim_main;
static pid_t ptg_shm_owner;
static int ptg_shm_fd = -1;
static dev_t ptg_shm_dev;
static ino_t ptg_shm_ino;
static void *ptg_shm_mem;
static size_t ptg_shm_size;

/* fork(): the child has no control thread and the parent's segment is not
 * its (CUDA does not work in a forked child, and no shim starts there).
 * The ring becomes a private copy at the same address, so anything in the
 * child that still reaches the writer writes into its own memory, never
 * as a second producer into the parent's ring; and the fd is closed, so
 * the child holds nothing of the parent's for proftrace to find. */
static void ptg_after_fork_child(void)
{
	bool ours = pt_memseg__same(ptg_shm_fd, ptg_shm_dev, ptg_shm_ino);

	if (!ptg_shm_mem)
		return;
	if (!ours || mmap(ptg_shm_mem, ptg_shm_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_FIXED, ptg_shm_fd, 0) == MAP_FAILED)
		/* no copy (the program closed our fd, or out of memory): zeros
		 * of our own, still never the parent's ring, never a fault */
		mmap(ptg_shm_mem, ptg_shm_size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	/* a number the program reused is its own: left alone */
	if (ours)
		close(ptg_shm_fd);
	ptg_shm_fd = -1;
}

static void ptg_atexit(void)
{
	/* A forked child inherits atexit handlers, not the segment. */
	if (getpid() != ptg_shm_owner)
		return;
	/* Exit handlers run last-registered first: whatever CUPTI set up
	 * when it was loaded (before us) is still there for the flush. */
	ptg_shim__exit(&ptg_shim_main, 200);
}

static void *ptg_control(void *arg)
{
	struct ptg_shim *s = arg;
	struct timespec ts = { 0, PTG_TICK_NS };
	sigset_t all;

	/* The CUDA process's signals are its own business. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		pthread_mutex_lock(&s->ctl_lock);
		ptg_shim__tick(s, s->now());
		pthread_mutex_unlock(&s->ctl_lock);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Ring and string table sizes to try: 2 + 2 MiB, then 256 + 256 KiB when
 * memory is short (a container's limit). */
static const struct {
	uint64_t nslots, strtab;
} ptg_sizes[] = {
	{ 1u << 15, 2u << 20 },
	{ 1u << 12, 256u << 10 },
};

static int ptg_inject__start(struct ptg_shim *s)
{
	struct ptg_ring_params p = { 0 };
	pthread_attr_t attr;
	pthread_t thr;
	void *mem = NULL;
	size_t size = 0, i;
	int err = -EINVAL;

	ptg_shm_owner = getpid();
	/* a second copy of the shim, loaded from another path */
	if (pt_memseg__ours_open(PTGPU_MEMFD_NAME, PTGPU_MAGIC, PTGPU_MAGIC_LEN,
				 offsetof(struct ptgpu_header, shim_pid))) {
		fprintf(stderr, "proftrace-cupti: another copy of the shim runs in this "
				"process; this one stays off\n");
		return -EADDRINUSE;
	}
	for (i = 0; i < sizeof(ptg_sizes) / sizeof(ptg_sizes[0]); i++) {
		size = ptg_ring__size(ptg_sizes[i].nslots, ptg_sizes[i].strtab);
		err = pt_memseg__create(PTGPU_MEMFD_NAME, size, &mem, &ptg_shm_fd);
		if (err != -ENOSPC && err != -ENOMEM)
			break;
	}
	if (err) {
		fprintf(stderr,
			"proftrace-cupti: cannot make the GPU segment: %s; GPU tracing "
			"is off\n",
			strerror(-err));
		return err;
	}
	ptg_shm_mem = mem;
	ptg_shm_size = size;
	{
		struct stat st;

		if (!fstat(ptg_shm_fd, &st)) {
			ptg_shm_dev = st.st_dev;
			ptg_shm_ino = st.st_ino;
		}
	}

	p.nslots = ptg_sizes[i].nslots;
	p.strtab_size = ptg_sizes[i].strtab;
	p.pid = (uint32_t)ptg_shm_owner;
	p.created_ns = ptg_now_ns();
	if (ptg_cupti_real_ops.get_version(&p.cupti_version) != CUPTI_SUCCESS)
		p.cupti_version = 0;
	err = ptg_shim__init(s, &ptg_cupti_real_ops, ptg_now_ns, mem, size, &p);
	if (err) {
		fprintf(stderr, "proftrace-cupti: bad segment layout: %s\n", strerror(-err));
		munmap(ptg_shm_mem, ptg_shm_size);
		close(ptg_shm_fd);
		ptg_shm_fd = -1;
		return err;
	}
	ptg_shim__bench_knobs(s, getenv("PTG_BENCH_KINDS"), getenv("PTG_BENCH_CALLBACKS"));
	atexit(ptg_atexit);
	pthread_atfork(NULL, NULL, ptg_after_fork_child);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	err = -pthread_create(&thr, &attr, ptg_control, s);
	pthread_attr_destroy(&attr);
	if (err) {
		fprintf(stderr, "proftrace-cupti: no control thread: %s; GPU tracing is off\n",
			strerror(-err));
		return err;
	}
	pthread_setname_np(thr, "proftrace-cupti");
	return 0;
}

static int ptg_started;

/* Bench knobs (tests/gpu/gpu_check.py, section calls: what each part of an
 * activation costs a CUDA call). kinds: "none" or a comma list of kernel,
 * memcpy, memset; callbacks: "none" or anything else. A part left out is
 * not traced: never set them on a server. */
void ptg_shim__bench_knobs(struct ptg_shim *s, const char *kinds, const char *cbs)
{
	static const char *const names[] = { "kernel", "memcpy", "memset" };
	size_t i;

	if (kinds) {
		s->kinds_mask = 0;
		for (i = 0; i < ptg_n_kinds && i < sizeof(names) / sizeof(names[0]); i++)
			if (strstr(kinds, names[i]))
				s->kinds_mask |= 1u << i;
	}
	if (cbs)
		s->callbacks = strcmp(cbs, "none") != 0;
	if (kinds || cbs)
		fprintf(stderr, "proftrace-cupti: bench knobs: kinds 0x%x, callbacks %s\n",
			s->kinds_mask, s->callbacks ? "on" : "off");
}

/* Called by the CUDA driver. Always reports success: a profiler must not
 * be the reason a server fails to start. */
PTG_EXPORT int InitializeInjection(void)
{
	if (!__atomic_exchange_n(&ptg_started, 1, __ATOMIC_ACQ_REL))
		ptg_inject__start(&ptg_shim_main);
	return 1;
}

/* ---- loaded late (proftrace --inject dlopens the shim into a running
 * CUDA process): the driver will not call InitializeInjection, so the
 * constructor starts the same dormant shim. Activation is then what it
 * always is: CUPTI subscribed and activity enabled when proftrace
 * attaches, which CUPTI allows after CUDA is initialised. ---- */

bool ptg_inject__late_wanted(const char *injection_env, const char *self, bool cuda_loaded)
{
	char a[PATH_MAX], b[PATH_MAX];

	if (!cuda_loaded)
		return false; /* not a CUDA process (an LD_PRELOAD that strayed) */
	/* Named by CUDA_INJECTION64_PATH: the driver calls InitializeInjection,
	 * maybe from inside cuInit right now, where CUPTI must not be called */
	if (injection_env && *injection_env && self &&
	    (!strcmp(injection_env, self) ||
	     (realpath(injection_env, a) && realpath(self, b) && !strcmp(a, b))))
		return false;
	return true;
}

static int ptg_find_cuda(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	base = base ? base + 1 : info->dlpi_name;
	if (base && (!strncmp(base, "libcuda.so", 10) || !strncmp(base, "libcudart.so", 12) ||
		     !strncmp(base, "libcudart-", 10))) {
		*(bool *)data = true;
		return 1;
	}
	return 0;
}

static void *ptg_late_start(void *arg)
{
	InitializeInjection();
	return NULL;
}

__attribute__((constructor)) static void ptg_ctor(void)
{
	bool cuda = false;
	pthread_attr_t attr;
	pthread_t thr;
	Dl_info di;

	dl_iterate_phdr(ptg_find_cuda, &cuda);
	if (!ptg_inject__late_wanted(getenv("CUDA_INJECTION64_PATH"),
				     dladdr((void *)ptg_ctor, &di) ? di.dli_fname : NULL, cuda))
		return;
	/* Not from in here: the loader's lock is held, and CUPTI's first
	 * calls may load libraries of their own. */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	if (pthread_create(&thr, &attr, ptg_late_start, NULL))
		InitializeInjection(); /* no thread: at once, still never fatal */
	pthread_attr_destroy(&attr);
}
