// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for a sample's native stack: its registers and stack
 * bytes are the target's (struct pt_ustack), so any values may reach the
 * unwinder (user/sample/unwind.c) and then the merge with the sample's
 * Python frames (user/sample/mixed.c), whose flags and code slots are the
 * target's too. The unwinder works on this process's own mappings (the
 * fuzzer, libc, libdw: real .eh_frame), the stack is the input's. Checks
 * what both promise whatever they are given: the walk ends within max
 * frames with a known end, every frame's strings are NUL-terminated, the
 * merge refers only to frames that exist, each Python frame at most once
 * and in order. Build and run with `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sample/mixed.h"
#include "sample/unwind.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define MAXN 64

static struct pt_unwind *u;
static uint8_t stk[PT_USTACK_MAX];

/* Input: the registers (PT_UREGS words), a byte of CPython minor version,
 * a byte of Python frame count, that many frames' code (nonzero bit) and
 * entry flag, then the stack. Where the input has too few bytes, zeros. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t regs[PT_UREGS] = { 0 };
	struct pt_sample_frame f[PT_SAMPLE_MAX_FRAMES];
	struct pt_unwind_frame nat[MAXN];
	struct pt_mixed_ref out[2 * MAXN + PT_SAMPLE_MAX_FRAMES];
	enum pt_unwind_end end;
	enum pt_mixed_how how;
	size_t at = 0, nn, nf = 0, k, nr;
	unsigned int minor = 0;
	int64_t last = -1;
	char label[256];
	uint64_t code = (uint64_t)(uintptr_t)&LLVMFuzzerTestOneInput;

	if (!u) {
		struct pt_unwind_opts o = { .pid = getpid() };
		char err[256];

		if (pt_unwind__new(&u, &o, err, sizeof(err)))
			abort();
	}
	k = size < sizeof(regs) ? size : sizeof(regs);
	memcpy(regs, data, k);
	at = k;
	if (at < size)
		minor = data[at++] % 16;
	if (at < size)
		nf = data[at++] % (PT_SAMPLE_MAX_FRAMES + 1);
	for (size_t i = 0; i < nf; i++) {
		uint8_t b = at < size ? data[at++] : 0;

		f[i] = (struct pt_sample_frame){ .code = b & 1 ? 0x1000 + i : 0,
						 .flags = b & 2 ? PT_SFRAME_ENTRY : 0 };
	}
	/* the stack: the rest, read where the registers say it starts; an
	 * ip, or a stack word, whose top byte is 0xaa is an offset into this
	 * program's code (its addresses move with ASLR): real CFI to walk */
	if (size - at > sizeof(stk))
		size = at + sizeof(stk);
	memcpy(stk, data + at, size - at);
	for (size_t i = 0; i + 8 <= size - at; i += 8) {
		uint64_t w;

		memcpy(&w, stk + i, 8);
		if (w >> 56 == 0xaa) {
			w = code + (w & 0xffff);
			memcpy(stk + i, &w, 8);
		}
	}
	if (regs[PT_UREG_IP] >> 56 == 0xaa)
		regs[PT_UREG_IP] = code + (regs[PT_UREG_IP] & 0xffff);
	nn = pt_unwind__stack(u, 1, regs, stk, size - at, nat, MAXN, &end);
	CHECK(nn <= MAXN);
	CHECK(end <= PT_UNWIND_END_ERROR);
	for (size_t i = 0; i < nn; i++) {
		CHECK(nat[i].kind <= PT_UNWIND_OWN);
		if (nat[i].sym)
			CHECK(strlen(nat[i].sym) < 4096);
		if (nat[i].module)
			CHECK(strlen(nat[i].module) < 4096);
		pt_mixed__label(&nat[i], label, sizeof(label));
		CHECK(strlen(label) < sizeof(label));
	}
	/* the merge, on those frames and on the input's kinds */
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			for (size_t i = 0; i < nn; i++)
				nat[i].kind = (enum pt_unwind_kind)(nat[i].pc % 4);
		nr = pt_mixed__merge(minor, f, nf, nat, nn, end, out, sizeof(out) / sizeof(out[0]),
				     &how);
		CHECK(nr <= sizeof(out) / sizeof(out[0]));
		CHECK(how <= PT_MIXED_MISMATCH);
		last = -1;
		for (size_t i = 0; i < nr; i++) {
			if (out[i].native) {
				CHECK(out[i].i < nn);
				CHECK(nat[out[i].i].kind == PT_UNWIND_NATIVE);
				continue;
			}
			CHECK(out[i].i < nf);
			CHECK(f[out[i].i].code);	 /* shim frames are never shown */
			CHECK((int64_t)out[i].i > last); /* once each, in order */
			last = out[i].i;
		}
	}
	return 0;
}
