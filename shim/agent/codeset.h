/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The set of code objects the agent hooks: the one test every Python call
 * passes through under the frame evaluator (3.8-3.11), so it is an
 * open-addressed table of addresses probed linearly from a multiplicative
 * hash, a handful of instructions for a miss. Built whole and swapped in
 * (the hooks read it under the GIL, the builder holds the GIL too).
 */
#ifndef PTAG_CODESET_H
#define PTAG_CODESET_H

#include <stdbool.h>
#include <stdint.h>

struct ptag_codeset {
	uint64_t *slot; /* 0: empty */
	uint32_t mask;	/* slots - 1 */
	uint32_t n;
};

/* A table holding codes[0..n) (zeros and duplicates skipped) at a load of
 * at most 1/4. 0 or -ENOMEM (s untouched). */
int ptag_codeset__build(struct ptag_codeset *s, const uint64_t *codes, uint32_t n);
void ptag_codeset__free(struct ptag_codeset *s);

static inline bool ptag_codeset__has(const struct ptag_codeset *s, uint64_t code)
{
	uint32_t i;

	if (!s->n)
		return false;
	/* code objects are 16-byte aligned: drop the zero bits first */
	i = (uint32_t)(((code >> 4) * 0x9e3779b97f4a7c15ull) >> 32) & s->mask;
	for (;;) {
		uint64_t v = s->slot[i];

		/* empty first: 0 (no code object) is never in the set */
		if (!v)
			return false;
		if (v == code)
			return true;
		i = (i + 1) & s->mask;
	}
}

#endif
