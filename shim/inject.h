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
	CUptiResult (*enable_callback)(uint32_t enable, CUpti_SubscriberHandle sub,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
	CUptiResult (*flush_all)(uint32_t flag);
	CUptiResult (*get_next_record)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
	CUptiResult (*get_num_dropped)(CUcontext ctx, uint32_t stream, size_t *dropped);
};

/* The real libcupti entry points. */
extern const struct ptg_cupti_ops ptg_cupti_real_ops;

/* A driver call recorded through the Callback API, and what it is (enum
 * ptgpu_api_what). */
struct ptg_api_call {
	CUpti_CallbackId cbid;
	uint32_t what;
};

/* What an activation enables, in this order (deactivation undoes it in
 * the same order): the activity kinds, then the Callback API on each
 * launch/copy/set/wait call of the driver. Exposed for the tests. */
extern const CUpti_ActivityKind ptg_kinds[];
extern const size_t ptg_n_kinds;
extern const struct ptg_api_call ptg_driver_calls[];
extern const size_t ptg_n_driver_calls;

/* While active, a default (non-forced) flush this often keeps records
 * flowing: CUPTI otherwise returns a buffer only when it is full. */
#define PTG_FLUSH_EVERY_NS (100ull * 1000 * 1000)
/* Control thread poll period. */
#define PTG_TICK_NS (10ull * 1000 * 1000)
/* Activity buffer handed to CUPTI. */
#define PTG_BUF_SIZE (1u << 20)
/* Buffers kept for reuse, and how many an activation prepares (touched,
 * on the control thread) before CUPTI asks for the first. */
#define PTG_POOL_MAX 8
#define PTG_POOL_PREFILL 2

struct ptg_shim {
	const struct ptg_cupti_ops *ops;
	uint64_t (*now)(void); /* CLOCK_MONOTONIC ns; a fake in tests */
	struct ptg_ring ring;
	/* The ring has one producer at a time: API callbacks on every
	 * launching thread and buffers from CUPTI's worker take ring_lock
	 * for each write (a few records), never longer. */
	pthread_mutex_t ring_lock;
	/* CUPTI may deliver buffers from its worker and from a flush in the
	 * control thread at once: conversion (the string table) is theirs. */
	pthread_mutex_t conv_lock;
	/* Completed CUPTI buffers kept for reuse (pool_lock), so that a
	 * buffer request on a launching thread neither maps nor faults in
	 * fresh pages. */
	pthread_mutex_t pool_lock;
	uint8_t *pool[PTG_POOL_MAX];
	unsigned int npool;
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
	/* How much of ptg_kinds/ptg_driver_calls is enabled, for an exact undo. */
	size_t kinds_on, calls_on;
	/* What an activation enables: all, except under bench knobs. */
	uint32_t kinds_mask; /* bit i: ptg_kinds[i] */
	bool callbacks;
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
/*
 * The Callback API handler, subscribed while active with s as user data:
 * one PTGPU_REC_API record per driver call of ptg_driver_calls, written at
 * the call's exit on the calling thread: its entry and exit time, its
 * correlation id (the one CUPTI gives the kernel, copy or memset records
 * of that call, and of the runtime call that made it), the caller's OS
 * thread id. Any other callback returns at once.
 */
void ptg_shim__api_cb(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
		      const void *data);
/* The API record for one driver call (exported for the tests). */
void ptg_shim__api_rec(union ptgpu_rec *rec, CUpti_CallbackId cbid, uint32_t what, uint32_t corr,
		       uint64_t start, uint64_t end, uint32_t tid, uint32_t pid, uint32_t ret);
/* Buffer callbacks as CUPTI calls them (exported for the tests). */
void ptg_shim__buffer_request(uint8_t **buf, size_t *size, size_t *max_records);
void ptg_shim__buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
			       size_t valid);
/* Convert one completed CUPTI buffer into the ring (does not free it). */
void ptg_shim__buffer_done(struct ptg_shim *s, CUcontext ctx, uint32_t stream, uint8_t *buf,
			   size_t valid);
/* At process exit: if active, disable, force-flush (the last records
 * reach the ring) and go DORMANT with reason EXIT. Takes ctl_lock (waiting
 * at most timeout_ms) and keeps it, so no tick touches CUPTI afterwards.
 * 0, or -ETIMEDOUT when a tick held the lock too long. */
int ptg_shim__exit(struct ptg_shim *s, unsigned int timeout_ms);
/* Bench knobs (PTG_BENCH_KINDS, PTG_BENCH_CALLBACKS; NULL: all). */
void ptg_shim__bench_knobs(struct ptg_shim *s, const char *kinds, const char *callbacks);
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
