// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reader of the CUPTI shim's ring. The producer is another process that
 * runs concurrently and may be buggy or hostile, so:
 *   - the layout is read and checked once at open, and only our checked
 *     copies are used afterwards;
 *   - shared fields are read with atomic loads, records and strings are
 *     copied out with volatile loads before they are validated;
 *   - head is clamped (at most one ring ahead: the rest is counted lost).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim/ptgpu.h"
#include "gpuring.h"
#include "util/segment.h"
#include "util/sigbus.h"
#include "util/util.h"

_Static_assert((int)PT_GPU_KERNEL == PTGPU_REC_KERNEL && (int)PT_GPU_MEMCPY == PTGPU_REC_MEMCPY &&
		       (int)PT_GPU_MEMSET == PTGPU_REC_MEMSET && (int)PT_GPU_API == PTGPU_REC_API &&
		       (int)PT_GPU_SYNC == PTGPU_REC_SYNC,
	       "pt_gpu_kind mirrors ptgpu_rec_type");
_Static_assert((int)PT_GPU_API_LAUNCH == PTGPU_API_LAUNCH &&
		       (int)PT_GPU_API_COPY == PTGPU_API_COPY &&
		       (int)PT_GPU_API_SET == PTGPU_API_SET &&
		       (int)PT_GPU_API_WAIT == PTGPU_API_WAIT,
	       "pt_gpu_api_what mirrors ptgpu_api_what");

/* Segments bigger than this are not ours (the shim makes a few MiB). */
#define GR_MAX_SEGMENT (1ull << 30)

struct gr_name {
	uint32_t id_plus1; /* 0: empty */
	char *s;
};

struct pt_gpuring {
	int fd; /* -1 for open_mem */
	void *map;
	size_t map_len;
	struct ptgpu_header *hdr;

	/* Checked copies of the layout. */
	uint64_t total_size;
	const uint8_t *slots;
	uint64_t nslots;
	const char *strtab;
	uint64_t strtab_size;
	uint32_t version, cupti_version, shim_pid;

	uint64_t tail;
	uint64_t seq;
	bool attached;

	/* Shim counters at attach, for deltas. */
	uint64_t base[6];

	/* Copies of the strings we handed out, by id. */
	struct gr_name *names;
	uint32_t names_mask, names_used;
	uint64_t names_bytes, names_budget;

	uint64_t delivered, lost, skipped, bad_names, resyncs;

	/* Its file was truncated (by the target's user): never touched again;
	 * info() then gives what the last drain saw of the shim. */
	bool truncated;
	struct pt_gpuring_info shim_last;
};

static bool shrunk(struct pt_gpuring *r);
static void read_shim(const struct pt_gpuring *r, struct pt_gpuring_info *i);

#define LD(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define LD_ACQ(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define ST(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELAXED)
#define ST_REL(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Is [off, off + size) inside [lo, total)? Without overflow. */
static bool in_range(uint64_t off, uint64_t size, uint64_t lo, uint64_t total)
{
	return off >= lo && off <= total && size <= total - off;
}

static void snapshot(struct pt_gpuring *r)
{
	struct ptgpu_header *h = r->hdr;

	r->base[0] = LD(h->records_written);
	r->base[1] = LD(h->ring_dropped);
	r->base[2] = LD(h->cupti_dropped);
	r->base[3] = LD(h->strtab_full);
	r->base[4] = LD(h->unknown_kinds);
	r->base[5] = LD(h->bad_records);
}

static int setup(struct pt_gpuring *r, char *err, size_t errlen)
{
	struct ptgpu_header *h = r->hdr;
	/* Not h->magic: h may be misaligned until checked. */
	volatile const uint8_t *vm = r->map;
	uint64_t ring_off, ring_size, st_off, st_size, total;
	uint32_t header_size, slot_size;
	uint8_t magic[PTGPU_MAGIC_LEN];
	bool zero = true;
	size_t i;

	if ((uintptr_t)r->map % 8) {
		pt_seterr(err, errlen, "GPU segment: mapping not 8-byte aligned");
		return -EINVAL;
	}
	if (r->map_len < sizeof(*h)) {
		pt_seterr(err, errlen, "GPU segment: %zu bytes, smaller than its header (%zu)",
			  r->map_len, sizeof(*h));
		return -EPROTO;
	}
	for (i = 0; i < PTGPU_MAGIC_LEN; i++) {
		magic[i] = vm[i];
		zero &= !magic[i];
	}
	/* The shim writes the magic last. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (zero) {
		pt_seterr(err, errlen, "GPU segment: not initialised yet (try again)");
		return -EAGAIN;
	}
	if (memcmp(magic, PTGPU_MAGIC, PTGPU_MAGIC_LEN)) {
		pt_seterr(err, errlen, "GPU segment: bad magic");
		return -EPROTO;
	}
	r->version = LD(h->version);
	if (r->version != PTGPU_VERSION) {
		pt_seterr(err, errlen,
			  "GPU segment: ABI version %u, this proftrace reads %u (use matching shim "
			  "and proftrace builds)",
			  r->version, PTGPU_VERSION);
		return -EPROTONOSUPPORT;
	}
	header_size = LD(h->header_size);
	total = LD(h->total_size);
	ring_off = LD(h->ring_off);
	ring_size = LD(h->ring_size);
	slot_size = LD(h->slot_size);
	st_off = LD(h->strtab_off);
	st_size = LD(h->strtab_size);
	if (header_size < sizeof(*h) || total > r->map_len || header_size > total) {
		pt_seterr(err, errlen,
			  "GPU segment: header %u / total %llu bytes do not fit the %zu mapped",
			  header_size, (unsigned long long)total, r->map_len);
		return -EPROTO;
	}
	if (slot_size != PTGPU_SLOT_SIZE || ring_off % 8 || !ring_size || ring_size % slot_size ||
	    !is_pow2(ring_size / slot_size) || !in_range(ring_off, ring_size, header_size, total)) {
		pt_seterr(err, errlen,
			  "GPU segment: bad ring (offset %llu, %llu bytes, slot %u) in %llu bytes",
			  (unsigned long long)ring_off, (unsigned long long)ring_size, slot_size,
			  (unsigned long long)total);
		return -EPROTO;
	}
	if (st_size < PTGPU_STR_FIRST || st_size > (1ull << 32) ||
	    !in_range(st_off, st_size, header_size, total) ||
	    (st_off < ring_off + ring_size && ring_off < st_off + st_size)) {
		pt_seterr(err, errlen,
			  "GPU segment: bad string table (offset %llu, %llu bytes) in %llu bytes",
			  (unsigned long long)st_off, (unsigned long long)st_size,
			  (unsigned long long)total);
		return -EPROTO;
	}
	r->total_size = total;
	r->slots = (const uint8_t *)r->map + ring_off;
	r->nslots = ring_size / slot_size;
	r->strtab = (const char *)r->map + st_off;
	r->strtab_size = st_size;
	r->cupti_version = LD(h->cupti_version);
	r->shim_pid = LD(h->shim_pid);
	r->names_budget = 4 * st_size + (64 << 10);
	/* Where a previous reader left off; drain() checks it against head. */
	r->tail = LD(h->tail);
	snapshot(r);
	return 0;
}

int pt_gpuring__open_mem(struct pt_gpuring **out, void *base, size_t len, char *err, size_t errlen)
{
	struct pt_gpuring *r;
	int ret;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		pt_seterr(err, errlen, "GPU segment: out of memory");
		return -ENOMEM;
	}
	r->fd = -1;
	r->map = base;
	r->map_len = len;
	r->hdr = base;
	ret = setup(r, err, errlen);
	if (ret) {
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

static const struct pt_segment_kind gpu_segment = {
	.name = PTGPU_MEMFD_NAME,
	.magic = PTGPU_MAGIC,
	.magic_len = PTGPU_MAGIC_LEN,
	.pid_off = offsetof(struct ptgpu_header, shim_pid),
	.min = sizeof(struct ptgpu_header),
	.max = GR_MAX_SEGMENT,
	.what = "GPU segment",
	.hint = "start it with CUDA_INJECTION64_PATH=.../libproftrace_cupti.so, or attach with "
		"--inject; it appears once CUDA initialises",
};

int pt_gpuring__open(struct pt_gpuring **out, int pid, char *err, size_t errlen)
{
	struct pt_segment seg;
	struct pt_gpuring *r;
	int ret;

	*out = NULL;
	ret = pt_segment__open(&seg, pid, &gpu_segment, err, errlen);
	if (ret)
		return ret;
	/* the caller guards the mapping for as long as it reads (sigbus.h) */
	pt_sigbus__unguard(seg.guard);
	ret = pt_gpuring__open_mem(&r, seg.map, seg.len, err, errlen);
	if (ret) {
		munmap(seg.map, seg.len);
		close(seg.fd);
		return ret;
	}
	r->fd = seg.fd;
	*out = r;
	return 0;
}

static bool hb_fresh(uint64_t hb, uint64_t now)
{
	int64_t age = (int64_t)(now - hb);

	return hb && age < (int64_t)PTGPU_HEARTBEAT_TIMEOUT_NS &&
	       age > -(int64_t)PTGPU_HEARTBEAT_TIMEOUT_NS;
}

int pt_gpuring__attach(struct pt_gpuring *r, uint64_t now)
{
	struct ptgpu_header *h = r->hdr;
	uint32_t other;

	if (shrunk(r))
		return -EIO;
	other = LD(h->reader_pid);
	if (!r->attached && LD(h->attached) && other && other != (uint32_t)getpid() &&
	    hb_fresh(LD(h->heartbeat_ns), now))
		return -EBUSY;
	/* Start from now: what is in the ring is from an earlier session. */
	r->tail = LD_ACQ(h->head);
	ST_REL(h->tail, r->tail);
	ST(h->heartbeat_ns, now);
	ST(h->reader_pid, (uint32_t)getpid());
	r->seq = LD(h->attach_seq) + 1;
	ST(h->attach_seq, r->seq);
	snapshot(r);
	/* Last: the shim acts on attached with the fields above in place. */
	ST_REL(h->attached, 1);
	r->attached = true;
	return 0;
}

void pt_gpuring__heartbeat(struct pt_gpuring *r, uint64_t now)
{
	if (!r->truncated)
		ST_REL(r->hdr->heartbeat_ns, now);
}

void pt_gpuring__detach(struct pt_gpuring *r)
{
	if (!r->truncated)
		ST_REL(r->hdr->attached, 0);
	r->attached = false;
}

static uint32_t name_hash(uint32_t id)
{
	return id * 0x9e3779b1u;
}

static bool names_grow(struct pt_gpuring *r)
{
	uint32_t cap = r->names ? (r->names_mask + 1) * 2 : 256, i, j;
	struct gr_name *n = calloc(cap, sizeof(*n));

	if (!n)
		return false;
	for (i = 0; r->names && i <= r->names_mask; i++) {
		if (!r->names[i].id_plus1)
			continue;
		for (j = name_hash(r->names[i].id_plus1 - 1) & (cap - 1); n[j].id_plus1;
		     j = (j + 1) & (cap - 1))
			;
		n[j] = r->names[i];
	}
	free(r->names);
	r->names = n;
	r->names_mask = cap - 1;
	return true;
}

/* The name for a string id, copied out of the segment once: the producer
 * could rewrite the bytes after we checked them. NULL for a bad id. */
static const char *name_of(struct pt_gpuring *r, uint32_t id)
{
	volatile const char *src;
	uint64_t used, len, max;
	char *s;
	uint32_t i;

	if (id == PTGPU_NAME_FULL)
		return "[string table full]";
	if (id == PTGPU_NAME_NONE)
		return "[unnamed kernel]";
	if (id < PTGPU_STR_FIRST)
		return NULL;
	used = LD_ACQ(r->hdr->strtab_used);
	if (used > r->strtab_size)
		used = r->strtab_size;
	if (id >= used)
		return NULL;
	if (r->names) {
		for (i = name_hash(id) & r->names_mask; r->names[i].id_plus1;
		     i = (i + 1) & r->names_mask)
			if (r->names[i].id_plus1 == id + 1)
				return r->names[i].s;
	}
	max = used - id;
	if (max > PTGPU_NAME_MAX)
		max = PTGPU_NAME_MAX;
	src = r->strtab + id;
	for (len = 0; len < max && src[len]; len++)
		;
	if (len == max)
		return NULL; /* no NUL inside the table (or too long) */
	if (r->names_bytes + len + 1 > r->names_budget)
		return NULL; /* ids pointing into the middle of strings, en masse */
	if ((!r->names || (r->names_used + 1) * 2 > r->names_mask + 1) && !names_grow(r))
		return NULL;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	for (i = 0; i < len; i++)
		s[i] = src[i];
	s[len] = '\0';
	/* A byte that turned into NUL while we copied just shortens it. */
	for (i = name_hash(id) & r->names_mask; r->names[i].id_plus1; i = (i + 1) & r->names_mask)
		;
	r->names[i].id_plus1 = id + 1;
	r->names[i].s = s;
	r->names_used++;
	r->names_bytes += len + 1;
	return s;
}

/* Validate a copied slot and turn it into the caller's struct. */
static bool convert(struct pt_gpuring *r, const union ptgpu_rec *in, struct pt_gpu_rec *o)
{
	const char *name;

	/* CUPTI may leave both timestamps 0 (no device memory for them). */
	if (in->h.end_ns < in->h.start_ns)
		return false;
	memset(o, 0, sizeof(*o));
	o->correlation_id = in->h.correlation_id;
	o->start_ns = in->h.start_ns;
	o->end_ns = in->h.end_ns;
	switch (in->h.type) {
	case PTGPU_REC_KERNEL:
		name = name_of(r, in->kernel.name_id);
		if (!name) {
			r->bad_names++;
			return false;
		}
		o->kind = PT_GPU_KERNEL;
		o->kernel.name = name;
		o->kernel.graph_node_id = in->kernel.graph_node_id;
		o->kernel.device_id = in->kernel.device_id;
		o->kernel.context_id = in->kernel.context_id;
		o->kernel.stream_id = in->kernel.stream_id;
		o->kernel.graph_id = in->kernel.graph_id;
		o->kernel.grid[0] = in->kernel.grid_x;
		o->kernel.grid[1] = in->kernel.grid_y;
		o->kernel.grid[2] = in->kernel.grid_z;
		o->kernel.block[0] = in->kernel.block_x;
		o->kernel.block[1] = in->kernel.block_y;
		o->kernel.block[2] = in->kernel.block_z;
		o->kernel.device_launched = in->kernel.flags & PTGPU_KERNEL_DEVICE_LAUNCHED;
		return true;
	case PTGPU_REC_MEMCPY:
		o->kind = PT_GPU_MEMCPY;
		o->memcpy.bytes = in->memcpy.bytes;
		o->memcpy.graph_node_id = in->memcpy.graph_node_id;
		o->memcpy.device_id = in->memcpy.device_id;
		o->memcpy.context_id = in->memcpy.context_id;
		o->memcpy.stream_id = in->memcpy.stream_id;
		o->memcpy.graph_id = in->memcpy.graph_id;
		o->memcpy.copy_kind = in->memcpy.copy_kind;
		o->memcpy.src_kind = in->memcpy.src_kind;
		o->memcpy.dst_kind = in->memcpy.dst_kind;
		o->memcpy.flags = in->memcpy.flags;
		return true;
	case PTGPU_REC_MEMSET:
		o->kind = PT_GPU_MEMSET;
		o->memset.bytes = in->memset.bytes;
		o->memset.graph_node_id = in->memset.graph_node_id;
		o->memset.device_id = in->memset.device_id;
		o->memset.context_id = in->memset.context_id;
		o->memset.stream_id = in->memset.stream_id;
		o->memset.graph_id = in->memset.graph_id;
		o->memset.value = in->memset.value;
		o->memset.memory_kind = in->memset.memory_kind;
		o->memset.flags = in->memset.flags;
		return true;
	case PTGPU_REC_API:
		if (in->api.domain != PTGPU_API_RUNTIME && in->api.domain != PTGPU_API_DRIVER)
			return false;
		o->kind = PT_GPU_API;
		o->api.driver = in->api.domain == PTGPU_API_DRIVER;
		o->api.cbid = in->api.cbid;
		o->api.tid = in->api.tid;
		o->api.pid = in->api.pid;
		o->api.return_value = in->api.return_value;
		/* an unknown class is not a reason to drop the call */
		o->api.what = in->api.what <= PTGPU_API_WAIT ? in->api.what : 0;
		return true;
	case PTGPU_REC_SYNC:
		o->kind = PT_GPU_SYNC;
		o->sync.type = in->sync.sync_type;
		o->sync.context_id = in->sync.context_id;
		o->sync.stream_id = in->sync.stream_id;
		o->sync.cuda_event_id = in->sync.cuda_event_id;
		o->sync.return_value = in->sync.return_value;
		return true;
	default:
		return false;
	}
}

int pt_gpuring__drain(struct pt_gpuring *r, pt_gpuring_cb cb, void *ctx)
{
	struct ptgpu_header *h = r->hdr;
	struct pt_gpu_rec out;
	union ptgpu_rec rec;
	uint64_t head;
	int n = 0;
	size_t i;

	/* Touching a page past a shrunk file is SIGBUS: check first (a
	 * truncation after this check is the caller's guard's: sigbus.h) */
	if (shrunk(r))
		return -EIO;
	head = LD_ACQ(h->head);
	if (head < r->tail) {
		r->resyncs++;
		r->tail = head;
		ST_REL(h->tail, r->tail);
		return 0;
	}
	if (head - r->tail > r->nslots) {
		r->lost += head - r->tail - r->nslots;
		r->tail = head - r->nslots;
	}
	while (r->tail != head) {
		const volatile uint64_t *src =
			(const volatile uint64_t *)(r->slots +
						    (r->tail & (r->nslots - 1)) * PTGPU_SLOT_SIZE);

		for (i = 0; i < PTGPU_SLOT_SIZE / 8; i++)
			rec.raw[i] = src[i];
		r->tail++;
		if (!convert(r, &rec, &out)) {
			r->skipped++;
			continue;
		}
		r->delivered++;
		n++;
		if (cb && cb(ctx, &out))
			break;
		/* Give slots back as we go so a long drain frees room. */
		if (!(r->tail & 255))
			ST_REL(h->tail, r->tail);
	}
	ST_REL(h->tail, r->tail);
	read_shim(r, &r->shim_last);
	return n;
}

int pt_gpuring__finish(struct pt_gpuring *r, pt_gpuring_cb cb, void *ctx, unsigned int timeout_ms)
{
	uint64_t deadline = pt_now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000;
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	bool was = r->attached;
	int n, total = 0;

	pt_gpuring__detach(r);
	for (;;) {
		/* Acquire: after DORMANT, every record of the final flush is
		 * behind head. */
		bool dormant = !was || shrunk(r) || LD_ACQ(r->hdr->state) != PTGPU_STATE_ACTIVE ||
			       LD(r->hdr->active_seq) != r->seq;

		n = pt_gpuring__drain(r, cb, ctx);
		if (n < 0)
			return n;
		total += n;
		if (dormant || pt_now_ns(CLOCK_MONOTONIC) >= deadline)
			return total;
		nanosleep(&ts, NULL);
	}
}

static uint64_t delta(uint64_t now, uint64_t base)
{
	return now >= base ? now - base : 0;
}

/* What the shim says in the header, as deltas since our attach. */
static void read_shim(const struct pt_gpuring *r, struct pt_gpuring_info *i)
{
	struct ptgpu_header *h = r->hdr;

	memset(i, 0, sizeof(*i));
	i->version = r->version;
	i->cupti_version = r->cupti_version;
	i->shim_pid = r->shim_pid;
	i->state = LD_ACQ(h->state);
	i->active = r->attached && i->state == PTGPU_STATE_ACTIVE && LD(h->active_seq) == r->seq;
	i->dormant_reason = LD(h->dormant_reason);
	i->activations = LD(h->activations);
	i->enable_stall_ns = LD(h->enable_stall_ns);
	i->enable_stall_max_ns = LD(h->enable_stall_max_ns);
	i->conflict_seq = LD_ACQ(h->conflict_seq);
	i->conflict_call = LD(h->conflict_call);
	i->conflict_code = LD(h->conflict_code);
	i->conflict_arg = LD(h->conflict_arg);
	i->records = delta(LD(h->records_written), r->base[0]);
	i->ring_dropped = delta(LD(h->ring_dropped), r->base[1]);
	i->cupti_dropped = delta(LD(h->cupti_dropped), r->base[2]);
	i->strtab_full = delta(LD(h->strtab_full), r->base[3]);
	i->unknown_kinds = delta(LD(h->unknown_kinds), r->base[4]);
	i->bad_records = delta(LD(h->bad_records), r->base[5]);
	i->strtab_used = LD(h->strtab_used);
}

void pt_gpuring__info(const struct pt_gpuring *r, struct pt_gpuring_info *i)
{
	if (r->truncated) {
		*i = r->shim_last;
		i->active = false;
		i->truncated = true;
	} else {
		read_shim(r, i);
	}
	i->delivered = r->delivered;
	i->lost = r->lost;
	i->skipped = r->skipped;
	i->bad_names = r->bad_names;
	i->resyncs = r->resyncs;
	i->ring_slots = r->nslots;
	i->strtab_size = r->strtab_size;
}

void *pt_gpuring__mapping(const struct pt_gpuring *r, size_t *len)
{
	*len = r->fd >= 0 ? r->map_len : 0;
	return r->fd >= 0 ? r->map : NULL;
}

/* Shorter than what we mapped: a page past its end is SIGBUS. */
static bool shrunk(struct pt_gpuring *r)
{
	struct stat st;

	if (!r->truncated && r->fd >= 0 && (fstat(r->fd, &st) || (uint64_t)st.st_size < r->map_len))
		pt_gpuring__set_lost(r);
	return r->truncated;
}

bool pt_gpuring__lost(struct pt_gpuring *r)
{
	return shrunk(r);
}

void pt_gpuring__set_lost(struct pt_gpuring *r)
{
	r->truncated = true;
	r->attached = false;
}

void pt_gpuring__close(struct pt_gpuring *r)
{
	uint32_t i;

	if (!r)
		return;
	if (r->attached)
		pt_gpuring__detach(r);
	for (i = 0; r->names && i <= r->names_mask; i++)
		free(r->names[i].s);
	free(r->names);
	if (r->fd >= 0) {
		munmap(r->map, r->map_len);
		close(r->fd);
	}
	free(r);
}

const char *pt_gpuring__call_name(uint32_t call)
{
	return ptgpu_call_name(call);
}

/* The CUptiResult values a user is likely to meet, from cupti_result.h
 * (proftrace does not link CUPTI). */
const char *pt_gpuring__result_name(uint32_t code)
{
	switch (code) {
	case 0:
		return "CUPTI_SUCCESS";
	case 1:
		return "CUPTI_ERROR_INVALID_PARAMETER";
	case 7:
		return "CUPTI_ERROR_INVALID_OPERATION";
	case 14:
		return "CUPTI_ERROR_NOT_COMPATIBLE";
	case 15:
		return "CUPTI_ERROR_NOT_INITIALIZED";
	case 27:
		return "CUPTI_ERROR_NOT_SUPPORTED";
	case 35:
		return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
	case 39: /* the one users meet: say who it probably is */
		return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another CUPTI client: "
		       "torch.profiler, Nsight?)";
	case 999:
		return "CUPTI_ERROR_UNKNOWN";
	default:
		return "CUPTI error";
	}
}
