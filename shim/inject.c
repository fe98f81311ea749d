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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convert.h"
#include "inject.h"

#define PTG_EXPORT __attribute__((visibility("default")))

const CUpti_ActivityKind ptg_kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
};
const size_t ptg_n_kinds = sizeof(ptg_kinds) / sizeof(ptg_kinds[0]);

/*
 * API records only for the calls that launch, copy, set or wait: enabling
 * the RUNTIME/DRIVER kinds would record every call (cudaGetDevice,
 * cudaEventQuery polling loops...) at a cost per call. CUDA 13.0 has
 * cuptiActivityEnableRuntimeApi/DriverApi to pick single calls, and we never
 * enable the whole kinds (they would override the per-call settings).
 * Driver calls matter too: Triton and CUDA graphs launch through cuLaunch*.
 */
#define RT(x) CUPTI_RUNTIME_TRACE_CBID_##x
/* clang-format off */
const CUpti_CallbackId ptg_runtime_cbids[] = {
	/* launch */
	RT(cudaLaunchKernel_v7000), RT(cudaLaunchKernel_ptsz_v7000),
	RT(cudaLaunchKernelExC_v11060), RT(cudaLaunchKernelExC_ptsz_v11060),
	RT(cudaLaunchCooperativeKernel_v9000), RT(cudaLaunchCooperativeKernel_ptsz_v9000),
	RT(cudaLaunchCooperativeKernelMultiDevice_v9000),
	RT(cudaGraphLaunch_v10000), RT(cudaGraphLaunch_ptsz_v10000),
	/* copy */
	RT(cudaMemcpy_v3020), RT(cudaMemcpy_ptds_v7000),
	RT(cudaMemcpyAsync_v3020), RT(cudaMemcpyAsync_ptsz_v7000),
	RT(cudaMemcpy2D_v3020), RT(cudaMemcpy2D_ptds_v7000),
	RT(cudaMemcpy2DAsync_v3020), RT(cudaMemcpy2DAsync_ptsz_v7000),
	RT(cudaMemcpy3D_v3020), RT(cudaMemcpy3D_ptds_v7000),
	RT(cudaMemcpy3DAsync_v3020), RT(cudaMemcpy3DAsync_ptsz_v7000),
	RT(cudaMemcpyPeer_v4000), RT(cudaMemcpyPeerAsync_v4000),
	RT(cudaMemcpy3DPeer_v4000), RT(cudaMemcpy3DPeer_ptds_v7000),
	RT(cudaMemcpy3DPeerAsync_v4000), RT(cudaMemcpy3DPeerAsync_ptsz_v7000),
	RT(cudaMemcpyToSymbol_v3020), RT(cudaMemcpyToSymbol_ptds_v7000),
	RT(cudaMemcpyFromSymbol_v3020), RT(cudaMemcpyFromSymbol_ptds_v7000),
	RT(cudaMemcpyToSymbolAsync_v3020), RT(cudaMemcpyToSymbolAsync_ptsz_v7000),
	RT(cudaMemcpyFromSymbolAsync_v3020), RT(cudaMemcpyFromSymbolAsync_ptsz_v7000),
	RT(cudaMemcpyToArray_v3020), RT(cudaMemcpyToArray_ptds_v7000),
	RT(cudaMemcpyFromArray_v3020), RT(cudaMemcpyFromArray_ptds_v7000),
	RT(cudaMemcpyToArrayAsync_v3020), RT(cudaMemcpyToArrayAsync_ptsz_v7000),
	RT(cudaMemcpyFromArrayAsync_v3020), RT(cudaMemcpyFromArrayAsync_ptsz_v7000),
	RT(cudaMemcpy2DToArray_v3020), RT(cudaMemcpy2DToArray_ptds_v7000),
	RT(cudaMemcpy2DFromArray_v3020), RT(cudaMemcpy2DFromArray_ptds_v7000),
	RT(cudaMemcpy2DToArrayAsync_v3020), RT(cudaMemcpy2DToArrayAsync_ptsz_v7000),
	RT(cudaMemcpy2DFromArrayAsync_v3020), RT(cudaMemcpy2DFromArrayAsync_ptsz_v7000),
	RT(cudaMemcpyBatchAsync_v12080), RT(cudaMemcpyBatchAsync_ptsz_v12080),
	RT(cudaMemcpyBatchAsync_v13000), RT(cudaMemcpyBatchAsync_ptsz_v13000),
	RT(cudaMemcpy3DBatchAsync_v12080), RT(cudaMemcpy3DBatchAsync_ptsz_v12080),
	RT(cudaMemcpy3DBatchAsync_v13000), RT(cudaMemcpy3DBatchAsync_ptsz_v13000),
	/* set */
	RT(cudaMemset_v3020), RT(cudaMemset_ptds_v7000),
	RT(cudaMemsetAsync_v3020), RT(cudaMemsetAsync_ptsz_v7000),
	RT(cudaMemset2D_v3020), RT(cudaMemset2D_ptds_v7000),
	RT(cudaMemset2DAsync_v3020), RT(cudaMemset2DAsync_ptsz_v7000),
	RT(cudaMemset3D_v3020), RT(cudaMemset3D_ptds_v7000),
	RT(cudaMemset3DAsync_v3020), RT(cudaMemset3DAsync_ptsz_v7000),
	/* wait (not the Query calls: frameworks poll them in loops) */
	RT(cudaDeviceSynchronize_v3020), RT(cudaThreadSynchronize_v3020),
	RT(cudaStreamSynchronize_v3020), RT(cudaStreamSynchronize_ptsz_v7000),
	RT(cudaEventSynchronize_v3020),
	RT(cudaStreamWaitEvent_v3020), RT(cudaStreamWaitEvent_ptsz_v7000),
};
/* clang-format on */
#undef RT
const size_t ptg_n_runtime_cbids = sizeof(ptg_runtime_cbids) / sizeof(ptg_runtime_cbids[0]);

#define DRV(x) CUPTI_DRIVER_TRACE_CBID_##x
/* clang-format off */
const CUpti_CallbackId ptg_driver_cbids[] = {
	/* launch */
	DRV(cuLaunchKernel), DRV(cuLaunchKernel_ptsz),
	DRV(cuLaunchKernelEx), DRV(cuLaunchKernelEx_ptsz),
	DRV(cuLaunchCooperativeKernel), DRV(cuLaunchCooperativeKernel_ptsz),
	DRV(cuLaunch), DRV(cuLaunchGrid), DRV(cuLaunchGridAsync),
	DRV(cuGraphLaunch), DRV(cuGraphLaunch_ptsz),
	/* copy */
	DRV(cuMemcpy), DRV(cuMemcpy_ptds), DRV(cuMemcpyAsync), DRV(cuMemcpyAsync_ptsz),
	DRV(cuMemcpyHtoD_v2), DRV(cuMemcpyHtoD_v2_ptds),
	DRV(cuMemcpyDtoH_v2), DRV(cuMemcpyDtoH_v2_ptds),
	DRV(cuMemcpyDtoD_v2), DRV(cuMemcpyDtoD_v2_ptds),
	DRV(cuMemcpyHtoDAsync_v2), DRV(cuMemcpyHtoDAsync_v2_ptsz),
	DRV(cuMemcpyDtoHAsync_v2), DRV(cuMemcpyDtoHAsync_v2_ptsz),
	DRV(cuMemcpyDtoDAsync_v2), DRV(cuMemcpyDtoDAsync_v2_ptsz),
	DRV(cuMemcpy2D_v2), DRV(cuMemcpy2D_v2_ptds),
	DRV(cuMemcpy2DUnaligned_v2), DRV(cuMemcpy2DUnaligned_v2_ptds),
	DRV(cuMemcpy2DAsync_v2), DRV(cuMemcpy2DAsync_v2_ptsz),
	DRV(cuMemcpy3D_v2), DRV(cuMemcpy3D_v2_ptds),
	DRV(cuMemcpy3DAsync_v2), DRV(cuMemcpy3DAsync_v2_ptsz),
	DRV(cuMemcpyPeer), DRV(cuMemcpyPeer_ptds),
	DRV(cuMemcpyPeerAsync), DRV(cuMemcpyPeerAsync_ptsz),
	DRV(cuMemcpy3DPeer), DRV(cuMemcpy3DPeer_ptds),
	DRV(cuMemcpy3DPeerAsync), DRV(cuMemcpy3DPeerAsync_ptsz),
	DRV(cuMemcpyBatchAsync), DRV(cuMemcpyBatchAsync_ptsz),
	DRV(cuMemcpyBatchAsync_v2), DRV(cuMemcpyBatchAsync_v2_ptsz),
	DRV(cuMemcpy3DBatchAsync), DRV(cuMemcpy3DBatchAsync_ptsz),
	DRV(cuMemcpy3DBatchAsync_v2), DRV(cuMemcpy3DBatchAsync_v2_ptsz),
	/* set */
	DRV(cuMemsetD8_v2), DRV(cuMemsetD8_v2_ptds),
	DRV(cuMemsetD16_v2), DRV(cuMemsetD16_v2_ptds),
	DRV(cuMemsetD32_v2), DRV(cuMemsetD32_v2_ptds),
	DRV(cuMemsetD2D8_v2), DRV(cuMemsetD2D8_v2_ptds),
	DRV(cuMemsetD2D16_v2), DRV(cuMemsetD2D16_v2_ptds),
	DRV(cuMemsetD2D32_v2), DRV(cuMemsetD2D32_v2_ptds),
	DRV(cuMemsetD8Async), DRV(cuMemsetD8Async_ptsz),
	DRV(cuMemsetD16Async), DRV(cuMemsetD16Async_ptsz),
	DRV(cuMemsetD32Async), DRV(cuMemsetD32Async_ptsz),
	DRV(cuMemsetD2D8Async), DRV(cuMemsetD2D8Async_ptsz),
	DRV(cuMemsetD2D16Async), DRV(cuMemsetD2D16Async_ptsz),
	DRV(cuMemsetD2D32Async), DRV(cuMemsetD2D32Async_ptsz),
	/* wait */
	DRV(cuCtxSynchronize), DRV(cuCtxSynchronize_v2),
	DRV(cuStreamSynchronize), DRV(cuStreamSynchronize_ptsz),
	DRV(cuEventSynchronize),
	DRV(cuStreamWaitEvent), DRV(cuStreamWaitEvent_ptsz),
};
/* clang-format on */
#undef DRV
const size_t ptg_n_driver_cbids = sizeof(ptg_driver_cbids) / sizeof(ptg_driver_cbids[0]);

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
	.enable_runtime_api = cuptiActivityEnableRuntimeApi,
	.enable_driver_api = cuptiActivityEnableDriverApi,
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

static void CUPTIAPI ptg_buffer_request(uint8_t **buf, size_t *size, size_t *max_records)
{
	/* CUPTI wants 8-byte alignment. On failure CUPTI drops records and
	 * counts them (cupti_dropped). */
	*buf = aligned_alloc(8, PTG_BUF_SIZE);
	*size = *buf ? PTG_BUF_SIZE : 0;
	*max_records = 0;
}

static void CUPTIAPI ptg_buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
					 size_t valid)
{
	struct ptg_shim *s = __atomic_load_n(&ptg_cur, __ATOMIC_ACQUIRE);

	if (s && buf)
		ptg_shim__buffer_done(s, ctx, stream, buf, valid);
	free(buf);
}

/* A subscriber is held only to claim CUPTI while active; no domain is
 * enabled, so this never runs. */
static void CUPTIAPI ptg_noop_cb(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
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
	err = ptg_ring__init(&s->ring, mem, len, p);
	if (err)
		return err;
	pthread_mutex_init(&s->ring_lock, NULL);
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
	r = ops->register_callbacks(ptg_buffer_request, ptg_buffer_complete);
	if (r != CUPTI_SUCCESS)
		ptg_shim__conflict(s, PTGPU_CALL_CALLBACKS, r, 0, 0, "will retry at attach");
	return 0;
}

void ptg_shim__fini(struct ptg_shim *s)
{
	struct ptg_shim *cur = s;

	__atomic_compare_exchange_n(&ptg_cur, &cur, NULL, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	pthread_mutex_destroy(&s->ring_lock);
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
		r = ops->disable(ptg_kinds[i]);
		if (r != CUPTI_SUCCESS)
			ptg_shim__conflict(s, PTGPU_CALL_DISABLE, r, ptg_kinds[i], seq,
					   "records of that kind may continue");
	}
	for (i = 0; i < s->runtime_on; i++)
		ops->enable_runtime_api(ptg_runtime_cbids[i], 0);
	for (i = 0; i < s->driver_on; i++)
		ops->enable_driver_api(ptg_driver_cbids[i], 0);
	s->kinds_on = s->runtime_on = s->driver_on = 0;
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
	r = ops->subscribe(&s->sub, ptg_noop_cb, NULL);
	if (r != CUPTI_SUCCESS)
		goto fail;
	s->subscribed = true;
	/* Again: another CUPTI client may have replaced our buffer callbacks
	 * since init (they are process-wide). */
	call = PTGPU_CALL_CALLBACKS;
	r = ops->register_callbacks(ptg_buffer_request, ptg_buffer_complete);
	if (r != CUPTI_SUCCESS)
		goto fail;

	/* The first enable can stall the process for seconds (Kineto saw
	 * > 5 s for CONCURRENT_KERNEL): measure it for the report. */
	t0 = s->now();
	call = PTGPU_CALL_ENABLE;
	for (; s->kinds_on < ptg_n_kinds; s->kinds_on++) {
		arg = ptg_kinds[s->kinds_on];
		r = ops->enable(ptg_kinds[s->kinds_on]);
		if (r != CUPTI_SUCCESS)
			goto fail;
	}
	call = PTGPU_CALL_RUNTIME_API;
	for (; s->runtime_on < ptg_n_runtime_cbids; s->runtime_on++) {
		arg = ptg_runtime_cbids[s->runtime_on];
		r = ops->enable_runtime_api(ptg_runtime_cbids[s->runtime_on], 1);
		if (r != CUPTI_SUCCESS)
			goto fail;
	}
	call = PTGPU_CALL_DRIVER_API;
	for (; s->driver_on < ptg_n_driver_cbids; s->driver_on++) {
		arg = ptg_driver_cbids[s->driver_on];
		r = ops->enable_driver_api(ptg_driver_cbids[s->driver_on], 1);
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

void ptg_shim__buffer_done(struct ptg_shim *s, CUcontext ctx, uint32_t stream, uint8_t *buf,
			   size_t valid)
{
	const struct ptg_cupti_ops *ops = s->ops;
	CUpti_Activity *cur = NULL, *next;
	uint8_t *end, *lim = buf + valid;
	union ptgpu_rec rec;
	size_t dropped = 0, avail;
	CUptiResult st;

	pthread_mutex_lock(&s->ring_lock);
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
		switch (ptg_convert__activity(&s->ring, cur, avail, &rec)) {
		case PTG_CONV_OK:
			ptg_ring__write(&s->ring, &rec);
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
	/* INVALID_KIND: a record CUPTI itself cannot size; the rest of the
	 * buffer is unreadable. */
	if (st != CUPTI_ERROR_MAX_LIMIT_REACHED)
		PTG_COUNT(&s->ring, bad_records, 1);
	if (ops->get_num_dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
		PTG_COUNT(&s->ring, cupti_dropped, dropped);
	pthread_mutex_unlock(&s->ring_lock);
}

/* ---- the real process: segment file, control thread, entry point ---- */

static struct ptg_shim ptg_shim_main;
static char ptg_shm_path[64];
static pid_t ptg_shm_owner;

/* Is the existing segment at path stale? Its shim holds flock(LOCK_EX)
 * for life, so a lock we can take means its process is gone. The same
 * name can belong to a live process in another PID namespace that shares
 * /dev/shm: then the lock stays taken and we leave the file alone. */
static bool ptg_shm__stale(const char *path)
{
	int fd, i;

	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	/* Retry: proftrace's liveness check takes a shared lock briefly. */
	for (i = 0; i < 10; i++) {
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			close(fd);
			return true;
		}
		usleep(5000);
	}
	close(fd);
	return false;
}

static int ptg_shm__create(const char *path, size_t size, void **memp)
{
	void *mem;
	int fd, err, i;

	for (i = 0;; i++) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		err = -errno;
		if (err != -EEXIST || i)
			return err;
		if (!ptg_shm__stale(path))
			return -EADDRINUSE;
		/* Left by a dead process that had our pid. */
		unlink(path);
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		goto fail;
	}
	/* Reserve the pages now: a full /dev/shm (64 MiB in a default
	 * container) then fails here instead of as SIGBUS on a record write. */
	err = -posix_fallocate(fd, 0, (off_t)size);
	if (err)
		goto fail;
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	/* fd stays open for the process's life: it holds the lock. */
	*memp = mem;
	return 0;
fail:
	close(fd);
	unlink(path);
	return err;
}

static void ptg_atexit(void)
{
	/* A forked child inherits atexit handlers, not the segment. */
	if (getpid() != ptg_shm_owner)
		return;
	/* Exit handlers run last-registered first: whatever CUPTI set up
	 * when it was loaded (before us) is still there for the flush. */
	ptg_shim__exit(&ptg_shim_main, 200);
	unlink(ptg_shm_path);
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
 * /dev/shm is short (containers). */
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
	snprintf(ptg_shm_path, sizeof(ptg_shm_path), PTGPU_SHM_PREFIX "%d", (int)ptg_shm_owner);
	for (i = 0; i < sizeof(ptg_sizes) / sizeof(ptg_sizes[0]); i++) {
		size = ptg_ring__size(ptg_sizes[i].nslots, ptg_sizes[i].strtab);
		err = ptg_shm__create(ptg_shm_path, size, &mem);
		if (err != -ENOSPC)
			break;
	}
	if (err) {
		fprintf(stderr, "proftrace-cupti: cannot create %s: %s; GPU tracing is off\n",
			ptg_shm_path,
			err == -EADDRINUSE ? "a live process in another PID namespace has it"
					   : strerror(-err));
		return err;
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
		unlink(ptg_shm_path);
		return err;
	}
	atexit(ptg_atexit);

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
