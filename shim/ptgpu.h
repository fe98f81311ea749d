/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ptgpu: the shared-memory ABI between the CUPTI shim (libproftrace_cupti.so,
 * running inside the CUDA process) and proftrace's reader (user/gpuring.c).
 * The one header both sides include: fixed-width types, enums, limits.
 *
 * Segment: a memfd named PTGPU_MEMFD_NAME, sealed against shrinking and
 * growing, that the shim keeps open (close-on-exec) and mapped for the
 * process's life; proftrace finds it through /proc/PID/fd (shim/memseg.h
 * says why). shim_pid tells the shim's own segment from one a forked child
 * still holds of its parent's. Layout, all offsets from the start:
 *
 *   [0, header_size)          struct ptgpu_header (the shim reserves a page)
 *   [ring_off, +ring_size)    ring_size / slot_size slots of union ptgpu_rec;
 *                             the slot count is a power of two
 *   [strtab_off, +strtab_size) string table: NUL-terminated strings; a string
 *                             id is its byte offset; ids < PTGPU_STR_FIRST are
 *                             reserved (PTGPU_NAME_FULL, PTGPU_NAME_NONE)
 *
 * Who writes what (everything else is zero):
 *
 *   shim, once, before publishing: every layout field, then `magic` last with
 *     a release store. A reader that sees no magic retries later.
 *   shim, at run time: head, strtab_used, counters, state fields.
 *   proftrace: tail, attach_seq, attached, heartbeat_ns, reader_pid.
 *
 * Ring protocol (single producer, single consumer). head and tail count
 * records since creation (u64, never wrap in practice); slot = pos &
 * (slots - 1).
 *   producer: if head - tail >= slots the record is dropped and
 *     ring_dropped counted (the CUDA process never waits on proftrace);
 *     else it writes slot[head], interns strings first (string bytes, then
 *     strtab_used with a release store), and publishes with a release store
 *     of head + 1.
 *   consumer: acquire-loads head, copies each slot out before validating it,
 *     then release-stores tail. Everything the shim wrote is untrusted:
 *     head - tail > slots is counted as lost records, not read.
 *
 * Attach protocol (proftrace drives, the shim's control thread polls every
 * ~10 ms):
 *   attach: tail = head (skip old records), heartbeat_ns = now, reader_pid,
 *     attach_seq += 1, then attached = 1 (release).
 *   while attached: heartbeat_ns = CLOCK_MONOTONIC now, at least every
 *     PTGPU_HEARTBEAT_NS; drain the ring.
 *   shim: attached, heartbeat younger than PTGPU_HEARTBEAT_TIMEOUT_NS and an
 *     attach_seq it has not failed on -> enable the activity kinds, state =
 *     ACTIVE, active_seq = attach_seq. A failure is recorded in conflict_*,
 *     state stays DORMANT and that attach_seq is not retried.
 *   detach: attached = 0. The shim disables every kind, force-flushes CUPTI
 *     (the last records still land in the ring), then state = DORMANT with
 *     dormant_reason. proftrace drains until it sees DORMANT.
 *   proftrace killed: the heartbeat ages past the timeout and the shim goes
 *     DORMANT on its own (reason TIMEOUT). A new attach_seq while ACTIVE
 *     (a new proftrace) means deactivate, then activate for the new seq.
 *   CUDA process exits while ACTIVE: the shim's atexit handler disables,
 *     force-flushes and sets DORMANT (reason EXIT);
 *     proftrace's mapping stays valid, so it drains the last records.
 *
 * Timestamps are CLOCK_MONOTONIC ns (the shim's CUPTI timestamp callback),
 * the clock bpf_ktime_get_ns() uses.
 */
#ifndef PTGPU_H
#define PTGPU_H

#include <stdint.h>

#define PTGPU_MAGIC "PTGPURNG" /* 8 bytes, no NUL stored */
#define PTGPU_MAGIC_LEN 8
#define PTGPU_VERSION 1
#define PTGPU_SLOT_SIZE 64
#define PTGPU_MEMFD_NAME "proftrace-gpu"

/* proftrace refreshes the heartbeat at least this often... */
#define PTGPU_HEARTBEAT_NS (100ull * 1000 * 1000)
/* ...and the shim goes dormant when it is older than this. */
#define PTGPU_HEARTBEAT_TIMEOUT_NS (1000ull * 1000 * 1000)

/* Reserved string ids: table full, and a kernel record without a name. */
#define PTGPU_NAME_FULL 0
#define PTGPU_NAME_NONE 1
#define PTGPU_STR_FIRST 8
/* Longest name the shim stores (with its NUL); longer ones are cut. */
#define PTGPU_NAME_MAX 4096

enum ptgpu_state {
	PTGPU_STATE_DORMANT = 0,
	PTGPU_STATE_ACTIVE = 1,
};

/* Why the shim is dormant (dormant_reason). */
enum ptgpu_dormant_reason {
	PTGPU_DORMANT_NEVER = 0,    /* never attached */
	PTGPU_DORMANT_DETACH = 1,   /* attached flag cleared */
	PTGPU_DORMANT_TIMEOUT = 2,  /* heartbeat too old: proftrace gone */
	PTGPU_DORMANT_CONFLICT = 3, /* a CUPTI call failed at attach */
	PTGPU_DORMANT_RESTART = 4,  /* new attach_seq while active */
	PTGPU_DORMANT_EXIT = 5,	    /* the process exited (final flush done) */
};

/* Which CUPTI call failed (conflict_call); conflict_code is its CUptiResult,
 * conflict_arg the activity kind or callback id when there is one. */
enum ptgpu_call {
	PTGPU_CALL_NONE = 0,
	PTGPU_CALL_TIMESTAMP_CB = 1, /* cuptiActivityRegisterTimestampCallback */
	PTGPU_CALL_THREAD_ID = 2,    /* cuptiSetThreadIdType */
	PTGPU_CALL_CALLBACKS = 3,    /* cuptiActivityRegisterCallbacks */
	PTGPU_CALL_SUBSCRIBE = 4,    /* cuptiSubscribe */
	PTGPU_CALL_ENABLE = 5,	     /* cuptiActivityEnable(kind) */
	PTGPU_CALL_RUNTIME_API = 6,  /* cuptiEnableCallback(runtime domain, cbid) */
	PTGPU_CALL_DRIVER_API = 7,   /* cuptiEnableCallback(driver domain, cbid) */
	PTGPU_CALL_DISABLE = 8,	     /* cuptiActivityDisable */
	PTGPU_CALL_FLUSH = 9,	     /* cuptiActivityFlushAll */
	PTGPU_CALL_MAX
};

/* The CUPTI function a PTGPU_CALL_* stands for (the shim's message and
 * proftrace's report say the same). */
static inline const char *ptgpu_call_name(uint32_t call)
{
	static const char *const names[PTGPU_CALL_MAX] = {
		[PTGPU_CALL_NONE] = "none",
		[PTGPU_CALL_TIMESTAMP_CB] = "cuptiActivityRegisterTimestampCallback",
		[PTGPU_CALL_THREAD_ID] = "cuptiSetThreadIdType",
		[PTGPU_CALL_CALLBACKS] = "cuptiActivityRegisterCallbacks",
		[PTGPU_CALL_SUBSCRIBE] = "cuptiSubscribe",
		[PTGPU_CALL_ENABLE] = "cuptiActivityEnable",
		[PTGPU_CALL_RUNTIME_API] = "cuptiEnableCallback(runtime)",
		[PTGPU_CALL_DRIVER_API] = "cuptiEnableCallback(driver)",
		[PTGPU_CALL_DISABLE] = "cuptiActivityDisable",
		[PTGPU_CALL_FLUSH] = "cuptiActivityFlushAll",
	};

	return call < PTGPU_CALL_MAX && names[call] ? names[call] : "unknown call";
}

struct ptgpu_header {
	/* Line 0: identity and layout; written once before magic. */
	uint8_t magic[PTGPU_MAGIC_LEN];
	uint32_t version;
	uint32_t header_size; /* sizeof(struct ptgpu_header) */
	uint64_t total_size;  /* the whole segment */
	uint64_t ring_off;
	uint64_t ring_size; /* bytes; slots * slot_size, slots a power of two */
	uint32_t slot_size; /* PTGPU_SLOT_SIZE */
	uint32_t shim_pid;  /* getpid() in the shim's PID namespace */
	uint64_t strtab_off;
	uint64_t strtab_size;

	/* Line 1: more identity. */
	uint32_t cupti_version; /* cuptiGetVersion() */
	uint32_t flags;		/* none yet */
	uint64_t created_ns;	/* CLOCK_MONOTONIC */
	uint64_t reserved1[6];

	/* Line 2: producer (shim), hot. */
	uint64_t head;		  /* records published (release) */
	uint64_t strtab_used;	  /* bytes of strtab in use (release) */
	uint64_t records_written; /* records put in the ring */
	uint64_t ring_dropped;	  /* records dropped: ring full */
	uint64_t cupti_dropped;	  /* cuptiActivityGetNumDroppedRecords, summed */
	uint64_t strtab_full;	  /* names given PTGPU_NAME_FULL */
	uint64_t unknown_kinds;	  /* CUPTI records of kinds not converted */
	uint64_t bad_records;	  /* CUPTI records shorter than expected */

	/* Line 3: shim state. */
	uint32_t state;		      /* enum ptgpu_state */
	uint32_t dormant_reason;      /* enum ptgpu_dormant_reason */
	uint64_t active_seq;	      /* attach_seq the shim went ACTIVE for */
	uint64_t enable_stall_ns;     /* last activation: time in enable calls */
	uint64_t enable_stall_max_ns; /* the longest of them */
	uint32_t conflict_call;	      /* enum ptgpu_call of the last failure */
	uint32_t conflict_code;	      /* its CUptiResult */
	uint32_t conflict_arg;	      /* kind or cbid, else 0 */
	uint32_t activations;	      /* successful DORMANT -> ACTIVE */
	uint64_t conflict_seq;	      /* attach_seq then (0: at init) */
	uint64_t reserved3;

	/* Line 4: consumer (proftrace). */
	uint64_t tail;	       /* records consumed (release) */
	uint64_t attach_seq;   /* bumped by each attach */
	uint64_t heartbeat_ns; /* CLOCK_MONOTONIC */
	uint32_t attached;     /* 1 while proftrace wants records */
	uint32_t reader_pid;   /* proftrace's pid, informational */
	uint64_t reserved4[4];
};

_Static_assert(sizeof(struct ptgpu_header) == 320, "ptgpu_header layout");
_Static_assert(__builtin_offsetof(struct ptgpu_header, magic) == 0, "magic first");
_Static_assert(__builtin_offsetof(struct ptgpu_header, head) == 128, "producer line");
_Static_assert(__builtin_offsetof(struct ptgpu_header, state) == 192, "state line");
_Static_assert(__builtin_offsetof(struct ptgpu_header, tail) == 256, "consumer line");

enum ptgpu_rec_type {
	PTGPU_REC_NONE = 0,
	PTGPU_REC_KERNEL = 1, /* KERNEL and CONCURRENT_KERNEL */
	PTGPU_REC_MEMCPY = 2,
	PTGPU_REC_MEMSET = 3,
	PTGPU_REC_API = 4, /* runtime or driver: ptgpu_api.domain */
	PTGPU_REC_SYNC = 5,
	PTGPU_REC_MAX
};

enum ptgpu_api_domain {
	PTGPU_API_RUNTIME = 1,
	PTGPU_API_DRIVER = 2,
};

/* What an API call does (ptgpu_api.what); 0 from a shim that did not say. */
enum ptgpu_api_what {
	PTGPU_API_LAUNCH = 1, /* kernels, CUDA graphs */
	PTGPU_API_COPY = 2,
	PTGPU_API_SET = 3,
	PTGPU_API_WAIT = 4, /* the host waits for the GPU (synchronize, wait event) */
};

/* Every record starts with these 24 bytes; `aux` is per type. */
struct ptgpu_rec_hdr {
	uint16_t type; /* enum ptgpu_rec_type */
	uint16_t aux;
	uint32_t correlation_id;
	uint64_t start_ns;
	uint64_t end_ns;
};

#define PTGPU_KERNEL_DEVICE_LAUNCHED 0x1 /* flags: launched from the GPU */

/* Grid y/z and block dims fit 16 bits (CUDA's limits: 65535, 1024, 64);
 * larger values are clamped. */
struct ptgpu_kernel {
	uint16_t type;
	uint16_t device_id; /* clamped to 0xffff */
	uint32_t correlation_id;
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t graph_node_id; /* 0 outside CUDA graphs */
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t graph_id;
	uint32_t name_id; /* string table offset */
	uint32_t grid_x;
	uint16_t grid_y, grid_z;
	uint16_t block_x, block_y, block_z;
	uint16_t flags;
};

struct ptgpu_memcpy {
	uint16_t type;
	uint16_t device_id;
	uint32_t correlation_id;
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t bytes;
	uint64_t graph_node_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t graph_id;
	uint8_t copy_kind; /* CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, ...) */
	uint8_t src_kind;  /* CUpti_ActivityMemoryKind */
	uint8_t dst_kind;
	uint8_t flags; /* CUpti_ActivityFlag bits (async) */
	uint32_t reserved[2];
};

struct ptgpu_memset {
	uint16_t type;
	uint16_t device_id;
	uint32_t correlation_id;
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t bytes;
	uint64_t graph_node_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t graph_id;
	uint32_t value;
	uint16_t memory_kind;
	uint16_t flags;
	uint32_t reserved;
};

/* One launch, copy, set or wait call, written by the shim's Callback API
 * handler on the calling thread when the call returns (not a CUPTI
 * activity record): start/end are the call's entry and exit. The shim
 * records the driver's calls (a runtime call makes one, with its
 * correlation id); the domain field allows runtime ones. */
struct ptgpu_api {
	uint16_t type;
	uint16_t domain; /* enum ptgpu_api_domain */
	uint32_t correlation_id;
	uint64_t start_ns;
	uint64_t end_ns;
	uint32_t cbid; /* CUPTI_RUNTIME_TRACE_CBID_* or CUPTI_DRIVER_TRACE_CBID_* */
	uint32_t tid;  /* the caller's OS TID (gettid() in the shim's namespace) */
	uint32_t pid;
	uint32_t return_value;
	uint32_t what; /* enum ptgpu_api_what */
	uint32_t reserved0;
	uint64_t reserved[2];
};

struct ptgpu_sync {
	uint16_t type;
	uint16_t sync_type; /* CUpti_ActivitySynchronizationType */
	uint32_t correlation_id;
	uint64_t start_ns;
	uint64_t end_ns;
	uint32_t context_id;
	uint32_t stream_id; /* 0xffffffff when not applicable */
	uint32_t cuda_event_id;
	uint32_t return_value;
	uint64_t cuda_event_sync_id;
	uint64_t reserved[2];
};

union ptgpu_rec {
	struct ptgpu_rec_hdr h;
	struct ptgpu_kernel kernel;
	struct ptgpu_memcpy memcpy;
	struct ptgpu_memset memset;
	struct ptgpu_api api;
	struct ptgpu_sync sync;
	uint64_t raw[PTGPU_SLOT_SIZE / 8];
};

_Static_assert(sizeof(struct ptgpu_rec_hdr) == 24, "ptgpu_rec_hdr");
_Static_assert(sizeof(struct ptgpu_kernel) == 64, "ptgpu_kernel");
_Static_assert(sizeof(struct ptgpu_memcpy) == 64, "ptgpu_memcpy");
_Static_assert(sizeof(struct ptgpu_memset) == 64, "ptgpu_memset");
_Static_assert(sizeof(struct ptgpu_api) == 64, "ptgpu_api");
_Static_assert(sizeof(struct ptgpu_sync) == 64, "ptgpu_sync");
_Static_assert(sizeof(union ptgpu_rec) == PTGPU_SLOT_SIZE, "slot size");

#endif
