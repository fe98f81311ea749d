/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where to put a function's entry uprobe.
 *
 * The kernel emulates a few x86 instructions at a uprobe (push reg, nops,
 * relative jmp/jcc/call) and single-steps all others, which costs ~5-40x
 * more on this machine kind (../shared/notes/toolchain.md). Many functions
 * start with a few single-stepped instructions (endbr64, mov, sub, cmp)
 * before the first emulated one. Probing that first emulated instruction
 * instead keeps the exact entry semantics when every instruction skipped
 * is straight-line, leaves %rsp alone (the uretprobe hijacks the return
 * address at *(%rsp), and proftrace matches entry and return by %rsp), and
 * is no branch target: the probe is then hit exactly once per call, with
 * the return address still on top of the stack.
 */
#ifndef PT_PROLOGUE_H
#define PT_PROLOGUE_H

#include <stddef.h>
#include <stdint.h>

enum pt_insn_class {
	PT_INSN_UNKNOWN = 0, /* could not read the code */
	PT_INSN_EMULATED,    /* push reg: emulated by the kernel */
	PT_INSN_NOP5,	     /* 0f 1f 44 00 00: optimised into a call */
	PT_INSN_SINGLESTEP,  /* anything else: single-stepped */
	PT_INSN_BRANCH,	     /* jmp/jcc rel8/rel32, call rel32: emulated */
	PT_INSN_NOP,	     /* the kernel's other nops (x86_nops[], 90): emulated */
};

struct pt_probe_site {
	unsigned int skip;	/* bytes from the symbol to the probe */
	enum pt_insn_class cls; /* class of the probed instruction */
};

/* How far pt_prologue__site() may move the probe from the symbol. */
enum pt_prologue_skip {
	PT_PROLOGUE_SKIP_NONE = 0, /* probe the symbol itself (benchmarks) */
	/* code[] is only the start of the function (size unknown or too big to
	 * read): skip a leading endbr64 only, as before the walk existed */
	PT_PROLOGUE_SKIP_ENDBR = 1,
	/* code[] is the whole function: skip up to PT_PROLOGUE_MAX_INSNS
	 * instructions when that keeps the entry semantics exact */
	PT_PROLOGUE_SKIP_WALK = 2,
};

#define PT_PROLOGUE_MAX_INSNS 8	 /* instructions skipped at most */
#define PT_PROLOGUE_MAX_BYTES 64 /* probe at most this far into the function */

/*
 * Analyse a function's code (code[0] at the symbol, len bytes: the whole
 * function, st_size, for PT_PROLOGUE_SKIP_WALK) and choose the probe site.
 * skip is an enum pt_prologue_skip. Always succeeds; when in doubt the
 * answer is the symbol itself.
 */
struct pt_probe_site pt_prologue__site(const uint8_t *code, size_t len, int skip);
/*
 * Does a direct branch in code[] (len bytes of the same file, code[0] at
 * offset at from the symbol, negative before it) land in (lo, hi]? For the
 * code around a function whose probe was moved: hand-written asm enters
 * other functions past their first instruction (glibc's mempcpy jumps to
 * memmove+3), and a probe there would fire for those calls too. Linear
 * sweep; undecodable bytes are stepped over one at a time.
 */
int pt_prologue__entered(const uint8_t *code, size_t len, int64_t at, int64_t lo, int64_t hi);
const char *pt_insn_class__str(enum pt_insn_class c);

/* An instruction of this class is emulated (or optimised) at a uprobe. */
static inline int pt_insn_class__is_cheap(enum pt_insn_class c)
{
	return c == PT_INSN_EMULATED || c == PT_INSN_NOP5 || c == PT_INSN_BRANCH ||
	       c == PT_INSN_NOP;
}

#endif
