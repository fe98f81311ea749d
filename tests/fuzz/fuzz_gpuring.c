// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_gpuring__open_mem() + drain(): the GPU segment
 * is written by the profiled process (the CUPTI shim inside it), so every
 * byte of it is untrusted. The input is the whole segment.
 * Build and run with `make fuzz`.
 *
 * Built with -DPTG_GEN_SEEDS (and shim/ring.c) it is instead the seed
 * generator: `make fuzz-gpuring-seeds` writes tests/fuzz/corpus/gpuring/
 * from segments made by the shim's real writer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PTG_GEN_SEEDS

#include "gpu/gpuring.h"

static int touch(void *ctx, const struct pt_gpu_rec *rec)
{
	size_t *n = ctx;

	if (rec->end_ns < rec->start_ns)
		__builtin_trap();
	/* Read every byte of the name so ASan sees a bad pointer. */
	if (rec->kind == PT_GPU_KERNEL)
		*n += strlen(rec->kernel.name);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_gpuring_info info;
	struct pt_gpuring *r;
	char err[256];
	size_t n = 0;
	void *mem;

	/* The reader writes tail/attach fields: give it its own copy, exactly
	 * size bytes so ASan catches any read past the end (malloc aligns to
	 * 16, the reader wants 8). */
	mem = malloc(size ? size : 1);
	if (!mem)
		return 0;
	memcpy(mem, data, size);
	if (!pt_gpuring__open_mem(&r, mem, size, err, sizeof(err))) {
		pt_gpuring__drain(r, touch, &n);
		/* Again, with strings cached and head re-read. */
		pt_gpuring__drain(r, touch, &n);
		pt_gpuring__info(r, &info);
		if (info.delivered > info.ring_slots * 2)
			__builtin_trap();
		pt_gpuring__attach(r, 1000000000ull);
		pt_gpuring__heartbeat(r, 1000000001ull);
		pt_gpuring__drain(r, touch, &n);
		pt_gpuring__detach(r);
		pt_gpuring__close(r);
	} else if (!err[0]) {
		__builtin_trap(); /* every failure has a message */
	}
	free(mem);
	return 0;
}

#else /* PTG_GEN_SEEDS */

#include "ring.h"

static union ptgpu_rec kernel(struct ptg_ring *w, const char *name, uint32_t corr)
{
	union ptgpu_rec r = { 0 };

	r.kernel.type = PTGPU_REC_KERNEL;
	r.kernel.device_id = 0;
	r.kernel.correlation_id = corr;
	r.kernel.start_ns = 1000 + corr * 100;
	r.kernel.end_ns = 1050 + corr * 100;
	r.kernel.stream_id = 7;
	r.kernel.name_id = ptg_ring__intern(w, name);
	r.kernel.grid_x = 128;
	r.kernel.grid_y = r.kernel.grid_z = 1;
	r.kernel.block_x = 256;
	r.kernel.block_y = r.kernel.block_z = 1;
	return r;
}

static void fill(struct ptg_ring *w, int n)
{
	static const char *const names[] = { "vectorAdd", "ampere_sgemm_128x64_nn",
					     "_ZN7cutlass6KernelINS_4gemm6kernel", "" };
	union ptgpu_rec r;
	int i;

	for (i = 0; i < n; i++) {
		switch (i % 5) {
		case 0:
			r = kernel(w, names[i % 4], (uint32_t)i);
			break;
		case 1:
			memset(&r, 0, sizeof(r));
			r.memcpy.type = PTGPU_REC_MEMCPY;
			r.memcpy.correlation_id = (uint32_t)i;
			r.memcpy.start_ns = 10;
			r.memcpy.end_ns = 20;
			r.memcpy.bytes = 4096;
			r.memcpy.copy_kind = 1;
			break;
		case 2:
			memset(&r, 0, sizeof(r));
			r.memset.type = PTGPU_REC_MEMSET;
			r.memset.start_ns = 30;
			r.memset.end_ns = 31;
			r.memset.bytes = 64;
			break;
		case 3:
			memset(&r, 0, sizeof(r));
			r.api.type = PTGPU_REC_API;
			r.api.domain = 1 + (i & 1);
			r.api.start_ns = 5;
			r.api.end_ns = 9;
			r.api.cbid = 211;
			r.api.tid = 1234;
			break;
		default:
			memset(&r, 0, sizeof(r));
			r.sync.type = PTGPU_REC_SYNC;
			r.sync.sync_type = 3;
			r.sync.start_ns = 40;
			r.sync.end_ns = 90;
			r.sync.stream_id = 0xffffffffu;
			break;
		}
		ptg_ring__write(w, &r);
	}
}

/* Moves the ring and table right after the header: the shim reserves a
 * page for the header, which a fuzzer would mostly spend mutating zeros.
 * The reader accepts any layout that fits. */
static size_t compact(uint8_t *mem)
{
	struct ptgpu_header *h = (void *)mem;
	uint64_t ring_off = 512, st_off = ring_off + h->ring_size;

	memmove(mem + ring_off, mem + h->ring_off, h->ring_size);
	memmove(mem + st_off, mem + h->strtab_off, h->strtab_size);
	h->ring_off = ring_off;
	h->strtab_off = st_off;
	h->total_size = st_off + h->strtab_size;
	memset(mem + sizeof(*h), 0, ring_off - sizeof(*h));
	return h->total_size;
}

static void emit(const char *dir, const char *name, const void *mem, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(mem, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

static void *seg(struct ptg_ring *w, uint64_t nslots, uint64_t strtab, size_t *len)
{
	struct ptg_ring_params p = {
		.nslots = nslots,
		.strtab_size = strtab,
		.pid = 4242,
		.cupti_version = 130001,
	};
	void *mem;

	*len = ptg_ring__size(nslots, strtab);
	mem = aligned_alloc(4096, *len);
	memset(mem, 0, *len);
	if (ptg_ring__init(w, mem, *len, &p))
		exit(1);
	return mem;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	struct ptgpu_header *h;
	struct ptg_ring w;
	size_t len;
	void *mem;

	/* One of each record, as the shim lays it out (page header). */
	mem = seg(&w, 8, 128, &len);
	fill(&w, 5);
	emit(dir, "page_layout", mem, len);
	ptg_ring__free(&w);
	free(mem);

	/* Compact, full ring, partly consumed, names repeated. */
	mem = seg(&w, 16, 128, &len);
	fill(&w, 20);
	h = mem;
	h->tail = 3;
	emit(dir, "compact_full", mem, compact(mem));
	ptg_ring__free(&w);
	free(mem);

	/* Compact, wrapped around: head and tail past one lap; table full. */
	mem = seg(&w, 8, 64, &len);
	fill(&w, 8);
	h = mem;
	h->tail = 8;
	fill(&w, 6);
	emit(dir, "compact_wrapped", mem, compact(mem));
	ptg_ring__free(&w);
	free(mem);

	/* Compact, attached and active, with a conflict recorded. */
	mem = seg(&w, 4, 64, &len);
	fill(&w, 3);
	h = mem;
	h->attached = 1;
	h->attach_seq = 2;
	h->active_seq = 2;
	h->state = 1;
	h->heartbeat_ns = 999999999ull;
	h->conflict_call = 4;
	h->conflict_code = 39;
	emit(dir, "compact_active", mem, compact(mem));
	ptg_ring__free(&w);
	free(mem);
	return 0;
}

#endif
