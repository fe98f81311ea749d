// SPDX-License-Identifier: BSD-2-Clause
/*
 * ptgpu segment writer: see ptgpu.h for the protocol. Runs inside the CUDA
 * process, so it never blocks and never trusts what proftrace wrote (tail).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

size_t ptg_ring__size(uint64_t nslots, uint64_t strtab_size)
{
	return align_up(PTG_HEADER_RESERVE + nslots * PTGPU_SLOT_SIZE + strtab_size, 4096);
}

int ptg_ring__init(struct ptg_ring *r, void *mem, size_t len, const struct ptg_ring_params *p)
{
	struct ptgpu_header *h = mem;
	uint64_t idx_cap;

	memset(r, 0, sizeof(*r));
	if (!p->nslots || p->nslots < 2 || (p->nslots & (p->nslots - 1)) ||
	    p->nslots > (1ull << 32) || p->strtab_size < 64 || p->strtab_size > (1ull << 31))
		return -EINVAL;
	if (len < ptg_ring__size(p->nslots, p->strtab_size))
		return -ENOSPC;

	/* One index entry per 32 bytes of table is more than kernel names
	 * (tens to hundreds of bytes) ever need; kept under 3/4 full. */
	idx_cap = 64;
	while (idx_cap < p->strtab_size / 32)
		idx_cap <<= 1;
	r->idx = calloc(idx_cap, sizeof(*r->idx));
	if (!r->idx)
		return -ENOMEM;
	r->idx_mask = (uint32_t)(idx_cap - 1);

	r->hdr = h;
	r->nslots = p->nslots;
	r->slots = (uint8_t *)mem + PTG_HEADER_RESERVE;
	r->strtab = (char *)r->slots + p->nslots * PTGPU_SLOT_SIZE;
	r->strtab_size = p->strtab_size;
	r->strtab_used = PTGPU_STR_FIRST;
	r->head = 0;

	h->version = PTGPU_VERSION;
	h->header_size = sizeof(*h);
	h->total_size = ptg_ring__size(p->nslots, p->strtab_size);
	h->ring_off = PTG_HEADER_RESERVE;
	h->ring_size = p->nslots * PTGPU_SLOT_SIZE;
	h->slot_size = PTGPU_SLOT_SIZE;
	h->shim_pid = p->pid;
	h->strtab_off = h->ring_off + h->ring_size;
	h->strtab_size = p->strtab_size;
	h->cupti_version = p->cupti_version;
	h->created_ns = p->created_ns;
	h->strtab_used = r->strtab_used;
	/* A reader that sees the magic sees every field above. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, PTGPU_MAGIC, PTGPU_MAGIC_LEN);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

void ptg_ring__free(struct ptg_ring *r)
{
	free(r->idx);
	r->idx = NULL;
}

int ptg_ring__write(struct ptg_ring *r, const union ptgpu_rec *rec)
{
	/* Acquire: the consumer's release of tail says it is done with the
	 * slots before it. A tail beyond head (a confused reader) makes the
	 * difference huge, so it reads as full: drop rather than overwrite. */
	uint64_t tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);

	if (r->head - tail >= r->nslots) {
		PTG_COUNT(r, ring_dropped, 1);
		return -ENOSPC;
	}
	memcpy(r->slots + (r->head & (r->nslots - 1)) * PTGPU_SLOT_SIZE, rec, PTGPU_SLOT_SIZE);
	r->head++;
	__atomic_store_n(&r->hdr->head, r->head, __ATOMIC_RELEASE);
	PTG_COUNT(r, records_written, 1);
	return 0;
}

/* FNV-1a; never 0, which marks an empty index entry. */
static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

uint32_t ptg_ring__intern(struct ptg_ring *r, const char *s)
{
	struct ptg_str_ent *e;
	size_t len;
	uint64_t h;
	uint32_t i, pc;

	if (!s)
		return PTGPU_NAME_NONE;
	pc = (uint32_t)((uintptr_t)s >> 4) & 63;
	/* checked, not trusted: the address could hold another name now;
	 * strncmp stops at s's end, where memcmp could read past it */
	if (r->pcache[pc].p == s &&
	    !strncmp(r->strtab + r->pcache[pc].off, s, (size_t)r->pcache[pc].len + 1))
		return r->pcache[pc].off;
	/* Cut very long (template-heavy) names rather than fill the table. */
	len = strnlen(s, PTGPU_NAME_MAX - 1);
	h = str_hash(s, len);
	for (i = (uint32_t)h & r->idx_mask;; i = (i + 1) & r->idx_mask) {
		e = &r->idx[i];
		if (!e->hash)
			break;
		if (e->hash == h && e->len == len && !memcmp(r->strtab + e->off, s, len))
			goto found;
	}
	if (r->idx_used + 1 > (r->idx_mask + 1) / 4 * 3 ||
	    len + 1 > r->strtab_size - r->strtab_used) {
		PTG_COUNT(r, strtab_full, 1);
		return PTGPU_NAME_FULL;
	}
	memcpy(r->strtab + r->strtab_used, s, len);
	r->strtab[r->strtab_used + len] = '\0';
	e->hash = h;
	e->off = (uint32_t)r->strtab_used;
	e->len = (uint32_t)len;
	r->idx_used++;
	r->strtab_used += len + 1;
	/* The bytes are visible before any record naming them (that record
	 * is published by a later release of head). */
	__atomic_store_n(&r->hdr->strtab_used, r->strtab_used, __ATOMIC_RELEASE);
found:
	/* a cut name (no NUL at len) is never a cache hit: it is hashed */
	if (len < PTGPU_NAME_MAX - 1) {
		r->pcache[pc].p = s;
		r->pcache[pc].off = e->off;
		r->pcache[pc].len = (uint32_t)len;
	}
	return e->off;
}
