// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for python/agent.c: the agent's segment is written by
 * the profiled process (shim/ptagent.h), so every byte of it may be
 * anything. Build and run with `make fuzz`.
 *
 * Input: [0] flags (bit 0: stamp a valid magic, version and areas, so
 * most inputs get past the identity checks to the fields behind them),
 * the rest over the segment's start (its header, then the file table and
 * the candidates); the remainder of the PTAG_SIZE segment is zero.
 * Beyond sanitizer findings, it traps when an accepted segment reports
 * more candidates or hooked code objects than the areas hold, or a
 * conflict text that is not printable and terminated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/agent.h"
#include "shim/ptagent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t seg[PTAG_SIZE] __attribute__((aligned(64)));
	struct ptag_header *h = (struct ptag_header *)seg;
	struct pt_agent_info in;
	struct pt_agent *a;
	uint64_t *codes = NULL, arm[3] = { 1, 2, 3 };
	uint32_t n = 0;
	char err[256];

	if (!size)
		return 0;
	memset(seg, 0, sizeof(seg));
	memcpy(seg, data + 1, size - 1 < sizeof(seg) ? size - 1 : sizeof(seg));
	if (data[0] & 1) {
		memcpy(h->magic, PTAG_MAGIC, PTAG_MAGIC_LEN);
		h->version = PTAG_VERSION;
		h->header_size = PTAG_HEADER_SIZE;
		h->total_size = PTAG_SIZE;
		h->files_off = PTAG_FILES_OFF;
		h->files_size = PTAG_FILES_SIZE;
		h->cand_off = PTAG_CAND_OFF;
		h->cand_cap = PTAG_MAX_CODES;
		h->arm_off = PTAG_ARM_OFF;
		h->arm_cap = PTAG_MAX_CODES;
	}
	/* short images too: the reader is told the length */
	if (pt_agent__check(seg, (data[0] & 2) ? size : sizeof(seg), &in, err, sizeof(err)))
		return 0;
	if (in.ncand > PTAG_MAX_CODES || in.narmed > PTAG_MAX_CODES)
		__builtin_trap();
	if (!memchr(in.conflict_text, 0, sizeof(in.conflict_text)))
		__builtin_trap();
	for (const char *p = in.conflict_text; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			__builtin_trap();
	if (pt_agent__open_mem(&a, seg, sizeof(seg), err, sizeof(err)))
		return 0;
	/* the agent publishes new candidates while we read */
	h->cand_seq++;
	/* 1: new candidates in codes (the caller frees them), 0: none */
	if (pt_agent__candidates(a, &codes, &n) == 1) {
		if (n > PTAG_MAX_CODES)
			__builtin_trap();
		free(codes);
	}
	pt_agent__info(a, &in);
	pt_agent__arm(a, arm, 3);
	(void)pt_agent__armed(a);
	pt_agent__close(a);
	return 0;
}
