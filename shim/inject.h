/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shim's lifecycle: InitializeInjection, the timestamp callback, the
 * control thread and the dormant/active state machine. CUPTI is reached
 * only through struct ptg_cupti_ops, so unit tests substitute a fake table
 * and a fake clock and check the exact sequence of calls.
 */
#ifndef PTG_INJECT_H
#define PTG_INJECT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "ring.h"

struct ptg_cupti_ops {
	CUptiResult (*get_version)(uint32_t *version);
	CUptiResult (*get_result_string)(CUptiResult r, const char **str); /* may be NULL */
	CUptiResult (*register_timestamp_cb)(CUpti_TimestampCallbackFunc fn);
	CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType type);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc request,
					  CUpti_BuffersCallbackCompleteFunc complete);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *ud);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle sub);
	CUptiResult (*enable)(CUpti_ActivityKind kind);
	CUptiResult (*disable)(CUpti_ActivityKind kind);
	CUptiResult (*enable_runtime_api)(CUpti_CallbackId cbid, uint8_t enable);
	CUptiResult (*enable_driver_api)(CUpti_CallbackId cbid, uint8_t enable);
	CUptiResult (*flush_all)(uint32_t flag);
	CUptiResult (*get_next_record)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
	CUptiResult (*get_num_dropped)(CUcontext ctx, uint32_t stream, size_t *dropped);
};

/* The real libcupti entry points. */
extern const struct ptg_cupti_ops ptg_cupti_real_ops;

/* What an activation enables, in this order (deactivation undoes it in
 * the same order). Exposed for the tests. */
extern const CUpti_ActivityKind ptg_kinds[];
extern const size_t ptg_n_kinds;
extern const CUpti_CallbackId ptg_runtime_cbids[];
extern const size_t ptg_n_runtime_cbids;
extern const CUpti_CallbackId ptg_driver_cbids[];
extern const size_t ptg_n_driver_cbids;

/* While active, a default (non-forced) flush this often keeps records
 * flowing: CUPTI otherwise returns a buffer only when it is full. */
#define PTG_FLUSH_EVERY_NS (100ull * 1000 * 1000)
/* Control thread poll period. */
#define PTG_TICK_NS (10ull * 1000 * 1000)
/* Activity buffer handed to CUPTI. */
#define PTG_BUF_SIZE (1u << 20)

struct ptg_shim {
	const struct ptg_cupti_ops *ops;
	uint64_t (*now)(void); /* CLOCK_MONOTONIC ns; a fake in tests */
	struct ptg_ring ring;
	/* CUPTI may deliver buffers from its worker and from a flush in the
	 * control thread at once; the ring has one producer. */
	pthread_mutex_t ring_lock;
	/* Serializes the control thread's ticks with the exit handler. */
	pthread_mutex_t ctl_lock;
	CUpti_SubscriberHandle sub;
	bool subscribed;
	bool ts_registered;
	uint32_t state; /* enum ptgpu_state, mirrored into the header */
	uint64_t active_seq;
	bool failed; /* activation for failed_seq failed: not retried */
	uint64_t failed_seq;
	uint64_t last_flush_ns;
	/* How much of ptg_kinds/..._cbids is enabled, for an exact undo. */
	size_t kinds_on, runtime_on, driver_on;
};

/*
 * Lay out the segment in mem and make the once-per-process CUPTI calls
 * (timestamp callback first, thread id type, buffer callbacks). A failing
 * CUPTI call is recorded in the header and reported on stderr, never
 * fatal. 0, or the ring's -errno.
 */
int ptg_shim__init(struct ptg_shim *s, const struct ptg_cupti_ops *ops, uint64_t (*now)(void),
		   void *mem, size_t len, const struct ptg_ring_params *p);
/* One control step at time now: activate, deactivate or flush. */
void ptg_shim__tick(struct ptg_shim *s, uint64_t now);
/* Convert one completed CUPTI buffer into the ring (does not free it). */
void ptg_shim__buffer_done(struct ptg_shim *s, CUcontext ctx, uint32_t stream, uint8_t *buf,
			   size_t valid);
/* At process exit: if active, disable, force-flush (the last records
 * reach the ring) and go DORMANT with reason EXIT. Takes ctl_lock (waiting
 * at most timeout_ms) and keeps it, so no tick touches CUPTI afterwards.
 * 0, or -ETIMEDOUT when a tick held the lock too long. */
int ptg_shim__exit(struct ptg_shim *s, unsigned int timeout_ms);
/* Tests only: forget s (the real shim lives as long as the process). */
void ptg_shim__fini(struct ptg_shim *s);

/*
 * Whether the shim, loaded late into a running process (dlopen by
 * proftrace --inject), starts from its constructor: only in a CUDA
 * process (libcuda or libcudart mapped) and only when
 * CUDA_INJECTION64_PATH does not name it (then the driver calls
 * InitializeInjection). self: the shim's own path. The start runs on a
 * thread of its own, never inside dlopen.
 */
bool ptg_inject__late_wanted(const char *injection_env, const char *self, bool cuda_loaded);

/* CLOCK_MONOTONIC in ns; also what CUPTI's timestamp callback returns. */
uint64_t ptg_now_ns(void);

#endif
