/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shim's side of the ptgpu segment: layout, the single-producer record
 * writer, string interning, counters. No CUPTI here, so unit tests and the
 * fuzz seed generator build segments with the real writer.
 */
#ifndef PTG_RING_H
#define PTG_RING_H

#include <stddef.h>
#include <stdint.h>

#include "ptgpu.h"

/* Where the ring starts: the header gets a page of its own, so the shim
 * and proftrace do not share a cache line with record slots. */
#define PTG_HEADER_RESERVE 4096

struct ptg_str_ent {
	uint64_t hash; /* 0: empty */
	uint32_t off;
	uint32_t len; /* without the NUL */
};

struct ptg_ring {
	struct ptgpu_header *hdr;
	uint8_t *slots;
	uint64_t nslots; /* power of two */
	char *strtab;
	uint64_t strtab_size;
	uint64_t strtab_used; /* private copy of hdr->strtab_used */
	uint64_t head;	      /* private copy of hdr->head */
	/* Interning index, in the shim's private memory: proftrace never
	 * needs it, and a reader cannot corrupt it. */
	struct ptg_str_ent *idx;
	uint32_t idx_mask;
	uint32_t idx_used;
	/* CUPTI hands the same kernel's name at the same address in every
	 * record: remember the last ids by address, so a hit is one compare
	 * of the bytes instead of hashing the (often long) name. */
	struct {
		const char *p;
		uint32_t off, len;
	} pcache[64];
};

struct ptg_ring_params {
	uint64_t nslots;      /* power of two, >= 2 */
	uint64_t strtab_size; /* >= 64 */
	uint32_t pid;
	uint32_t cupti_version;
	uint64_t created_ns;
};

/* Bytes a segment with these parameters needs (page multiple). */
size_t ptg_ring__size(uint64_t nslots, uint64_t strtab_size);
/* Lay out and publish a segment in mem (zeroed by the caller, as a fresh
 * tmpfs file is). 0, -EINVAL (bad parameters), -ENOSPC (len too small),
 * -ENOMEM. */
int ptg_ring__init(struct ptg_ring *r, void *mem, size_t len, const struct ptg_ring_params *p);
/* Frees the private index; the segment itself belongs to the caller. */
void ptg_ring__free(struct ptg_ring *r);

/* Copy one record into the ring. 0, or -ENOSPC when full (counted in
 * ring_dropped). One producer: callers serialize. */
int ptg_ring__write(struct ptg_ring *r, const union ptgpu_rec *rec);
/* The string id of s (added to the table if new). PTGPU_NAME_NONE for
 * NULL, PTGPU_NAME_FULL (counted) when there is no room. */
uint32_t ptg_ring__intern(struct ptg_ring *r, const char *s);

/* Counters are bumped from the CUPTI worker and the control thread. */
#define PTG_COUNT(r, field, n) __atomic_fetch_add(&(r)->hdr->field, (uint64_t)(n), __ATOMIC_RELAXED)

#endif
