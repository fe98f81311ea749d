/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reader of the CUPTI shim's shared-memory ring (shim/ptgpu.h has the
 * protocol). Everything in the segment is written by the profiled process
 * and treated as untrusted input: a malformed segment gives an error
 * message or counted skips, never a crash.
 *
 * Typical use, with now = CLOCK_MONOTONIC ns:
 *   pt_gpuring__open(&r, pid, err, sizeof(err))    -ENOENT: no shim there
 *   pt_gpuring__attach(r, now)
 *   every <= 100 ms: pt_gpuring__heartbeat(r, now); pt_gpuring__drain(r, cb, ctx)
 *   pt_gpuring__finish(r, cb, ctx, 2000)            detach + last records
 *   pt_gpuring__close(r)
 */
#ifndef PT_GPURING_H
#define PT_GPURING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_gpuring;

/* Same numbers as enum ptgpu_rec_type. */
enum pt_gpu_kind {
	PT_GPU_KERNEL = 1,
	PT_GPU_MEMCPY = 2,
	PT_GPU_MEMSET = 3,
	PT_GPU_API = 4,
	PT_GPU_SYNC = 5,
};

/* Same numbers as enum ptgpu_api_what: what an API call does. */
enum pt_gpu_api_what {
	PT_GPU_API_LAUNCH = 1,
	PT_GPU_API_COPY = 2,
	PT_GPU_API_SET = 3,
	PT_GPU_API_WAIT = 4,
};

/* One validated record. Times are CLOCK_MONOTONIC ns; end >= start. */
struct pt_gpu_rec {
	enum pt_gpu_kind kind;
	uint32_t correlation_id;
	uint64_t start_ns, end_ns;
	union {
		struct {
			/* Valid until pt_gpuring__close(); "[string table
			 * full]" or "[unnamed kernel]" when the shim had none. */
			const char *name;
			uint64_t graph_node_id;
			uint32_t device_id, context_id, stream_id, graph_id;
			uint32_t grid[3], block[3];
			bool device_launched;
		} kernel;
		struct {
			uint64_t bytes;
			uint64_t graph_node_id;
			uint32_t device_id, context_id, stream_id, graph_id;
			uint8_t copy_kind; /* CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD... */
			uint8_t src_kind, dst_kind, flags;
		} memcpy;
		struct {
			uint64_t bytes;
			uint64_t graph_node_id;
			uint32_t device_id, context_id, stream_id, graph_id;
			uint32_t value;
			uint16_t memory_kind, flags;
		} memset;
		struct {
			bool driver;   /* else the runtime API */
			uint32_t cbid; /* CUPTI_{RUNTIME,DRIVER}_TRACE_CBID_* */
			uint32_t tid;  /* system TID */
			uint32_t pid;
			uint32_t return_value;
			/* enum pt_gpu_api_what; 0: the shim did not say */
			uint32_t what;
		} api;
		struct {
			uint32_t type; /* CUpti_ActivitySynchronizationType */
			uint32_t context_id, stream_id, cuda_event_id;
			uint32_t return_value;
		} sync;
	};
};

/* Return non-zero to stop the drain after this record. */
typedef int (*pt_gpuring_cb)(void *ctx, const struct pt_gpu_rec *rec);

struct pt_gpuring_info {
	uint32_t version, cupti_version, shim_pid;
	uint32_t state;		 /* enum ptgpu_state: 0 dormant, 1 active */
	bool active;		 /* active for our attach */
	uint32_t dormant_reason; /* enum ptgpu_dormant_reason */
	uint32_t activations;
	uint64_t enable_stall_ns, enable_stall_max_ns;
	/* The last failed CUPTI call (enum ptgpu_call, CUptiResult, kind or
	 * cbid, attach_seq; call 0: none). */
	uint32_t conflict_call, conflict_code, conflict_arg;
	uint64_t conflict_seq;
	/* The shim's counters since our attach (since open before it). */
	uint64_t records, ring_dropped, cupti_dropped, strtab_full, unknown_kinds, bad_records;
	/* This reader's. */
	uint64_t delivered;
	uint64_t lost;	    /* head ran more than a ring ahead of us */
	uint64_t skipped;   /* records that failed validation */
	uint64_t bad_names; /* of those: bad string ids */
	uint64_t resyncs;   /* head moved backwards */
	uint64_t ring_slots, strtab_size, strtab_used;
	/* Its file was truncated under us: the shim's fields are those of the
	 * last drain before, and nothing after it was read. */
	bool truncated;
};

/*
 * Find and map the shim's segment in process pid, a memfd among its open
 * files (util/segment.h). 0; -ENOENT when there is none (the process runs
 * without the shim); -EPERM: a memfd of that name the shim did not make;
 * -EAGAIN: not initialised yet; other -errno for a malformed segment. err
 * gets a message for every failure.
 */
int pt_gpuring__open(struct pt_gpuring **out, int pid, char *err, size_t errlen);
/* Same over memory the caller owns (tests, fuzzing); base 8-aligned. */
int pt_gpuring__open_mem(struct pt_gpuring **out, void *base, size_t len, char *err, size_t errlen);

/* Ask the shim to trace: skip what is in the ring, heartbeat, bump
 * attach_seq, set attached. -EBUSY when another live proftrace is; -EIO
 * when its file was truncated. */
int pt_gpuring__attach(struct pt_gpuring *r, uint64_t now_ns);
/* Call at least every PTGPU_HEARTBEAT_NS (100 ms) while attached. */
void pt_gpuring__heartbeat(struct pt_gpuring *r, uint64_t now_ns);
/* Deliver the validated records in the ring. Records delivered (>= 0), or
 * -EIO when the segment file shrank under us. */
int pt_gpuring__drain(struct pt_gpuring *r, pt_gpuring_cb cb, void *ctx);
/* Clear attached; the shim disables tracing and flushes within ~10 ms. */
void pt_gpuring__detach(struct pt_gpuring *r);
/* Detach, then drain until the shim says dormant (its final flush is in
 * the ring) or timeout_ms passes. Records delivered, or -errno. */
int pt_gpuring__finish(struct pt_gpuring *r, pt_gpuring_cb cb, void *ctx, unsigned int timeout_ms);
void pt_gpuring__info(const struct pt_gpuring *r, struct pt_gpuring_info *info);
/*
 * The target's user may truncate the segment's file while we read it: a
 * page past its new end is SIGBUS. The reader checks the size before each
 * drain; a truncation after that check faults, so the caller guards the
 * mapping (util/sigbus.h: a fault becomes a page of zeros, which fails
 * validation) and, after a fault, says so with pt_gpuring__set_lost().
 * Lost, the ring is not touched again: drain and attach give -EIO,
 * heartbeat and detach do nothing, info() has truncated set.
 */
void *pt_gpuring__mapping(const struct pt_gpuring *r, size_t *len); /* NULL: open_mem */
bool pt_gpuring__lost(struct pt_gpuring *r);			    /* also checks its size now */
void pt_gpuring__set_lost(struct pt_gpuring *r);
/* Detaches if attached. NULL is fine. */
void pt_gpuring__close(struct pt_gpuring *r);

/* Names for the info fields, for messages. */
const char *pt_gpuring__call_name(uint32_t call);
const char *pt_gpuring__result_name(uint32_t code);

#endif
