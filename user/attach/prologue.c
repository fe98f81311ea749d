// SPDX-License-Identifier: BSD-2-Clause
/*
 * Probe-site choice from a function's code.
 *
 * Landing instructions are recognised byte for byte exactly as the kernel
 * sets them up (arch/x86/kernel/uprobes.c, 6.18): branch_setup_xol_ops()
 * emulates x86_nops[1..8] (9..11 carry a CS prefix, which
 * uprobe_init_insn() refuses outright), "prefix* 90", jmp rel8/rel32,
 * jcc rel8/rel32 and call rel32; push_setup_xol_ops() emulates "push reg"
 * with no prefix or with exactly REX.B (0x41); can_optimize() turns a
 * 5-byte nop into a call to a trampoline after its first hit. Measured on
 * this machine kind with bpftrace (ns per call, empty uprobe): nop5 ~720,
 * other nops/jmp/jcc/pause ~900, push/call ~1,000, single-stepped ~4,300
 * (~23,000 on a busier host). We only land on the forms we measured and
 * take the prefixes narrowly (no 66 on branches: refused by the kernel;
 * no REX on 90: "41 90" is xchg %eax,%r8d, not a nop).
 *
 * Capstone decodes the instructions we skip (their length, whether they
 * branch or write %rsp) and the whole function, to find the direct branch
 * targets that must not fall between the symbol and the probe.
 */
#include <string.h>

#include <capstone/capstone.h>

#include "prologue.h"

static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

/* The kernel's x86_nops[] (arch/x86/include/asm/nops.h, 64-bit), 1..8. */
static const uint8_t x86_nops[9][8] = {
	[1] = { 0x90 },
	[2] = { 0x66, 0x90 },
	[3] = { 0x0f, 0x1f, 0x00 },
	[4] = { 0x0f, 0x1f, 0x40, 0x00 },
	[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 },
	[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
	[7] = { 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
	[8] = { 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
};

/* Do the len bytes we have agree with the start of pat? */
static int is_prefix_of(const uint8_t *code, size_t len, const uint8_t *pat, size_t plen)
{
	return !memcmp(code, pat, len < plen ? len : plen);
}

/* What the kernel does with the instruction at c. PT_INSN_UNKNOWN when the
 * len bytes we have are too few to tell. */
static enum pt_insn_class classify(const uint8_t *c, size_t len)
{
	int cut = 0;
	size_t i;

	if (!len)
		return PT_INSN_UNKNOWN;
	if (c[0] >= 0x50 && c[0] <= 0x57)
		return PT_INSN_EMULATED;
	if (c[0] == 0x41) {
		if (len < 2)
			return PT_INSN_UNKNOWN;
		return c[1] >= 0x50 && c[1] <= 0x57 ? PT_INSN_EMULATED : PT_INSN_SINGLESTEP;
	}
	for (i = 1; i < sizeof(x86_nops) / sizeof(x86_nops[0]); i++) {
		if (!is_prefix_of(c, len, x86_nops[i], i))
			continue;
		if (len >= i)
			return i == 5 ? PT_INSN_NOP5 : PT_INSN_NOP;
		cut = 1;
	}
	if (cut)
		return PT_INSN_UNKNOWN;
	/* 66/f3 prefixes + 90: xchg %ax,%ax, pause: the kernel's "nop" case */
	for (i = 0; i < len && (c[i] == 0x66 || c[i] == 0xf3); i++)
		;
	if (i == len)
		return PT_INSN_UNKNOWN;
	if (c[i] == 0x90)
		return PT_INSN_NOP;
	/* Relative branches, no prefix. */
	if (c[0] == 0xeb || (c[0] >= 0x70 && c[0] <= 0x7f))
		return len >= 2 ? PT_INSN_BRANCH : PT_INSN_UNKNOWN;
	if (c[0] == 0xe9 || c[0] == 0xe8)
		return len >= 5 ? PT_INSN_BRANCH : PT_INSN_UNKNOWN;
	if (c[0] == 0x0f) {
		if (len < 2)
			return PT_INSN_UNKNOWN;
		if (c[1] >= 0x80 && c[1] <= 0x8f)
			return len >= 6 ? PT_INSN_BRANCH : PT_INSN_UNKNOWN;
	}
	return PT_INSN_SINGLESTEP;
}

static int is_sp_or_ip(uint16_t r)
{
	return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP || r == X86_REG_SPL ||
	       r == X86_REG_RIP || r == X86_REG_EIP || r == X86_REG_IP;
}

/*
 * May insn run before the probe? It must fall through to the next
 * instruction (no branch, call, return, trap, system call, transaction)
 * and leave %rsp and the return address at (%rsp) alone.
 */
static int can_skip(csh cs, const cs_insn *insn)
{
	const cs_detail *d = insn->detail;
	cs_regs rd, wr;
	uint8_t nrd, nwr, i;

	for (i = 0; i < d->groups_count; i++) {
		switch (d->groups[i]) {
		case CS_GRP_JUMP:
		case CS_GRP_CALL:
		case CS_GRP_RET:
		case CS_GRP_INT:
		case CS_GRP_IRET:
		case CS_GRP_BRANCH_RELATIVE:
			return 0;
		}
	}
	switch (insn->id) {
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_SYSEXIT:
	case X86_INS_SYSRET:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
	case X86_INS_UD2:
	case X86_INS_UD0:
	case X86_INS_HLT:
	case X86_INS_XBEGIN:
	case X86_INS_XEND:
	case X86_INS_XABORT:
	case X86_INS_ENTER:
	case X86_INS_LEAVE:
		return 0;
	}
	if (cs_regs_access(cs, insn, rd, &nrd, wr, &nwr))
		return 0;
	for (i = 0; i < nwr; i++)
		if (is_sp_or_ip(wr[i]))
			return 0;
	for (i = 0; i < d->x86.op_count; i++) {
		const cs_x86_op *op = &d->x86.operands[i];

		if (op->type == X86_OP_MEM && (op->access & CS_AC_WRITE) &&
		    (op->mem.base == X86_REG_RSP || op->mem.base == X86_REG_ESP))
			return 0;
	}
	return 1;
}

/* Direct branch target of insn, or -1 when it has none. */
static int64_t branch_target(const cs_insn *insn)
{
	const cs_detail *d = insn->detail;
	int is_branch = 0;
	uint8_t i;

	for (i = 0; i < d->groups_count; i++)
		if (d->groups[i] == CS_GRP_JUMP || d->groups[i] == CS_GRP_CALL ||
		    d->groups[i] == CS_GRP_BRANCH_RELATIVE)
			is_branch = 1;
	if (insn->id == X86_INS_XBEGIN)
		is_branch = 1; /* aborts jump to its operand */
	if (!is_branch)
		return -1;
	for (i = 0; i < d->x86.op_count; i++)
		if (d->x86.operands[i].type == X86_OP_IMM)
			return d->x86.operands[i].imm;
	return -1;
}

/*
 * Does any direct branch in the function land in (0, landing]? Then the
 * moved probe could fire more than once per call. Code we cannot decode
 * hides branches: answer yes, unless code[] is only the start of the
 * function anyway (whole=0: check what we have).
 */
static int targets_prologue(csh cs, cs_insn *insn, const uint8_t *code, size_t len,
			    unsigned int landing, int whole)
{
	const uint8_t *p = code;
	uint64_t addr = 0;
	size_t left = len;

	while (left) {
		int64_t t;

		if (!cs_disasm_iter(cs, &p, &left, &addr, insn))
			return whole;
		t = branch_target(insn);
		if (t > 0 && t <= (int64_t)landing)
			return 1;
	}
	return 0;
}

struct pt_probe_site pt_prologue__site(const uint8_t *code, size_t len, int skip)
{
	struct pt_probe_site s = { 0, PT_INSN_UNKNOWN };
	enum pt_insn_class first, cls = PT_INSN_UNKNOWN;
	unsigned int off = 0, n = 0;
	cs_insn *insn = NULL;
	csh cs;

	if (!code || !len)
		return s;
	first = classify(code, len);
	s.cls = first;
	if (skip == PT_PROLOGUE_SKIP_NONE || first == PT_INSN_UNKNOWN ||
	    pt_insn_class__is_cheap(first))
		return s;
	if (skip == PT_PROLOGUE_SKIP_ENDBR) {
		/* Only a leading endbr64; keep the old answer for a cut one. */
		if (!is_prefix_of(code, len, endbr64, sizeof(endbr64)))
			return s;
		if (len < sizeof(endbr64)) {
			s.cls = PT_INSN_UNKNOWN;
			return s;
		}
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return s;
	if (cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK)
		goto out;
	insn = cs_malloc(cs);
	if (!insn)
		goto out;

	/* Walk straight-line, %rsp-preserving code to the first cheap insn. */
	for (;;) {
		const uint8_t *p = code + off;
		size_t left = len - off;
		uint64_t addr = off;

		if (n == PT_PROLOGUE_MAX_INSNS || !cs_disasm_iter(cs, &p, &left, &addr, insn) ||
		    !can_skip(cs, insn))
			goto out;
		if (skip == PT_PROLOGUE_SKIP_ENDBR && insn->id != X86_INS_ENDBR64)
			goto out;
		off += insn->size;
		n++;
		if (off > PT_PROLOGUE_MAX_BYTES || off >= len)
			goto out;
		cls = classify(code + off, len - off);
		if (pt_insn_class__is_cheap(cls))
			break;
		if (skip == PT_PROLOGUE_SKIP_ENDBR)
			goto out;
	}
	if (targets_prologue(cs, insn, code, len, off, skip == PT_PROLOGUE_SKIP_WALK))
		goto out;
	s.skip = off;
	s.cls = cls;
out:
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
	return s;
}

int pt_prologue__entered(const uint8_t *code, size_t len, int64_t at, int64_t lo, int64_t hi)
{
	const uint8_t *p = code;
	uint64_t addr = (uint64_t)at;
	size_t left = len;
	cs_insn *insn;
	int hit = 0;
	csh cs;

	if (!code || !len)
		return 0;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 1;
	if (cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK || !(insn = cs_malloc(cs))) {
		cs_close(&cs);
		return 1;
	}
	while (left && !hit) {
		int64_t t;

		if (!cs_disasm_iter(cs, &p, &left, &addr, insn)) {
			/* data or an opcode capstone 4 lacks: resynchronise */
			p++;
			left--;
			addr++;
			continue;
		}
		t = branch_target(insn);
		hit = t != -1 && t > lo && t <= hi;
	}
	cs_free(insn, 1);
	cs_close(&cs);
	return hit;
}

const char *pt_insn_class__str(enum pt_insn_class c)
{
	switch (c) {
	case PT_INSN_EMULATED:
		return "emulated";
	case PT_INSN_NOP5:
		return "nop5";
	case PT_INSN_BRANCH:
		return "branch";
	case PT_INSN_NOP:
		return "nop";
	case PT_INSN_SINGLESTEP:
		return "single-step";
	case PT_INSN_UNKNOWN:
	default:
		return "unknown";
	}
}
