// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>

#include "codeset.h"

int ptag_codeset__build(struct ptag_codeset *s, const uint64_t *codes, uint32_t n)
{
	struct ptag_codeset t = { 0 };
	uint32_t size = 16;

	while (size < 4ull * n && size < (1u << 30))
		size <<= 1;
	t.slot = calloc(size, sizeof(*t.slot));
	if (!t.slot)
		return -ENOMEM;
	t.mask = size - 1;
	for (uint32_t k = 0; k < n; k++) {
		uint64_t c = codes[k];
		uint32_t i;

		if (!c || ptag_codeset__has(&t, c))
			continue;
		i = (uint32_t)(((c >> 4) * 0x9e3779b97f4a7c15ull) >> 32) & t.mask;
		while (t.slot[i])
			i = (i + 1) & t.mask;
		t.slot[i] = c;
		t.n++;
	}
	*s = t;
	return 0;
}

void ptag_codeset__free(struct ptag_codeset *s)
{
	free(s->slot);
	s->slot = NULL;
	s->mask = 0;
	s->n = 0;
}
