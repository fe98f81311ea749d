/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where to put a function's entry uprobe.
 *
 * The kernel emulates a few x86 instructions at a uprobe (push reg, the
 * 5-byte nop) and single-steps all others, which costs ~40x more on this
 * machine kind (../shared/notes/toolchain.md). An endbr64 at the function
 * start is single-stepped but is a no-op at entry and leaves %rsp alone, so
 * probing the instruction after it keeps the exact entry semantics (hit once
 * per call, return address still on top of the stack for the uretprobe).
 */
#ifndef PT_PROLOGUE_H
#define PT_PROLOGUE_H

#include <stddef.h>
#include <stdint.h>

enum pt_insn_class {
	PT_INSN_UNKNOWN = 0,  /* could not read the code */
	PT_INSN_EMULATED,     /* push reg: emulated by the kernel */
	PT_INSN_NOP5,         /* 0f 1f 44 00 00: optimised path */
	PT_INSN_SINGLESTEP,   /* anything else: single-stepped */
};

struct pt_probe_site {
	unsigned int skip;        /* bytes from the symbol to the probe */
	enum pt_insn_class cls;   /* class of the probed instruction */
};

/* Analyse the first len bytes of a function. skip_endbr=0 disables the
 * endbr64 skip (for benchmarks). Always succeeds. */
struct pt_probe_site pt_prologue__site(const uint8_t *code, size_t len, int skip_endbr);
const char *pt_insn_class__str(enum pt_insn_class c);

#endif
