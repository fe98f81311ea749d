// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for proftrace's side of the Python agent
 * (user/python/agent.c): the segment is shared memory the profiled
 * process writes, so every byte of it is untrusted. The input is the
 * start of a segment (the rest zero), copied into a page-aligned image of
 * PTAG_SIZE; then everything proftrace does with one: check, open, attach,
 * take candidates, arm, detach, info. Build and run with `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct pt_agent_spec spec = { "pkg/mod", "Cls.*" };
	struct pt_py_layout L = { .stackref_tag = 3 };
	struct pt_agent_info in;
	struct pt_agent *a;
	uint64_t *codes;
	uint32_t n;
	char err[256];
	void *mem;

	if (posix_memalign(&mem, 4096, PTAG_SIZE))
		return 0;
	memset(mem, 0, PTAG_SIZE);
	memcpy(mem, data, size < PTAG_SIZE ? size : PTAG_SIZE);
	if (pt_agent__check(mem, PTAG_SIZE, &in, err, sizeof(err)) == 0) {
		if (strlen(in.conflict_text) >= sizeof(in.conflict_text) ||
		    in.ncand > PTAG_MAX_CODES)
			__builtin_trap();
	}
	if (pt_agent__open_mem(&a, mem, PTAG_SIZE, err, sizeof(err)) == 0) {
		pt_agent__attach(a, &spec, 1, &L, 1);
		/* the target moves its sequence: whatever count it claims */
		((struct ptag_header *)mem)->cand_seq++;
		if (pt_agent__candidates(a, &codes, &n) == 1) {
			if (n > PTAG_MAX_CODES)
				__builtin_trap();
			pt_agent__arm(a, codes, n);
			free(codes);
		}
		pt_agent__info(a, &in);
		pt_agent__detach(a, 0);
		pt_agent__close(a);
	}
	free(mem);
	return 0;
}
