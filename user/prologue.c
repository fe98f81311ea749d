// SPDX-License-Identifier: BSD-2-Clause
/*
 * Probe-site choice from a function's first bytes.
 *
 * Only what the kernel treats specially is recognised (arch/x86/kernel/
 * uprobes.c): push_setup_xol_ops() emulates "push reg" with no prefix or
 * with exactly REX.B (0x41), and 6.x optimises the 5-byte nop. Anything we
 * do not recognise is reported as single-stepped, which is the slow but
 * always-correct answer.
 */
#include <string.h>

#include "prologue.h"

static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
static const uint8_t nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* Do the len bytes we have agree with the start of pat? */
static int is_prefix_of(const uint8_t *code, size_t len, const uint8_t *pat, size_t plen)
{
	return !memcmp(code, pat, len < plen ? len : plen);
}

static enum pt_insn_class classify(const uint8_t *c, size_t len)
{
	if (!len)
		return PT_INSN_UNKNOWN;
	if (c[0] >= 0x50 && c[0] <= 0x57)
		return PT_INSN_EMULATED;
	if (c[0] == 0x41) {
		if (len < 2)
			return PT_INSN_UNKNOWN;
		return c[1] >= 0x50 && c[1] <= 0x57 ? PT_INSN_EMULATED : PT_INSN_SINGLESTEP;
	}
	if (is_prefix_of(c, len, nop5, sizeof(nop5)))
		return len < sizeof(nop5) ? PT_INSN_UNKNOWN : PT_INSN_NOP5;
	return PT_INSN_SINGLESTEP;
}

struct pt_probe_site pt_prologue__site(const uint8_t *code, size_t len, int skip_endbr)
{
	struct pt_probe_site s = { 0, PT_INSN_UNKNOWN };
	enum pt_insn_class next;

	if (!code || !len)
		return s;
	if (!skip_endbr || !is_prefix_of(code, len, endbr64, sizeof(endbr64))) {
		s.cls = classify(code, len);
		return s;
	}
	if (len < sizeof(endbr64))
		return s; /* might be endbr64, might not: cannot tell */

	/*
	 * Moving the probe past endbr64 only pays when it lands on something
	 * the kernel does not single-step; otherwise probe the symbol itself.
	 * Never go further than endbr64: the next instruction may move %rsp
	 * (breaking the uretprobe's return address) or be a jump target that
	 * makes the probe fire more than once per call.
	 */
	next = classify(code + sizeof(endbr64), len - sizeof(endbr64));
	if (next == PT_INSN_EMULATED || next == PT_INSN_NOP5) {
		s.skip = sizeof(endbr64);
		s.cls = next;
	} else {
		s.cls = PT_INSN_SINGLESTEP;
	}
	return s;
}

const char *pt_insn_class__str(enum pt_insn_class c)
{
	switch (c) {
	case PT_INSN_EMULATED:
		return "emulated";
	case PT_INSN_NOP5:
		return "nop5";
	case PT_INSN_SINGLESTEP:
		return "single-step";
	case PT_INSN_UNKNOWN:
	default:
		return "unknown";
	}
}
