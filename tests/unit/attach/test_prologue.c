// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_prologue: hand-written byte sequences for every case, then the real
 * first bytes of the fx_asm_* functions in the fixture binaries (read
 * through pt_elf, so a wrong file offset shows up here too). Those
 * functions are top-level asm in tests/fixtures/elf_fixture.c, so their
 * encodings below are known without running a disassembler.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "attach/elfsyms.h"
#include "attach/prologue.h"

#define ENDBR 0xf3, 0x0f, 0x1e, 0xfa
#define NOP5 0x0f, 0x1f, 0x44, 0x00, 0x00
#define MOV 0x48, 0x89, 0xf8			  /* mov %rdi,%rax */
#define MOVABS 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 /* movabs $imm64,%rax */

/* skip modes */
#define OFF PT_PROLOGUE_SKIP_NONE
#define EB PT_PROLOGUE_SKIP_ENDBR
#define W PT_PROLOGUE_SKIP_WALK

struct case_ {
	const char *what;
	uint8_t code[80];
	size_t len;
	int mode;
	unsigned int skip;
	enum pt_insn_class cls;
};

/* clang-format off */
static const struct case_ cases[] = {
	/* What the first instruction is, in every mode. */
	{ "push rbp", { 0x55, 0x48, 0x89, 0xe5 }, 4, W, 0, PT_INSN_EMULATED },
	{ "push rax", { 0x50 }, 1, EB, 0, PT_INSN_EMULATED },
	{ "push rdi", { 0x57 }, 1, W, 0, PT_INSN_EMULATED },
	{ "push rbx", { 0x53, 0xc3 }, 2, OFF, 0, PT_INSN_EMULATED },
	{ "push r12", { 0x41, 0x54, 0x55 }, 3, W, 0, PT_INSN_EMULATED },
	{ "push r15", { 0x41, 0x57 }, 2, EB, 0, PT_INSN_EMULATED },
	/* REX.W or an empty REX on push: not what the kernel emulates. */
	{ "rex.w push", { 0x48, 0x55 }, 2, EB, 0, PT_INSN_SINGLESTEP },
	{ "rex 40 push", { 0x40, 0x55 }, 2, OFF, 0, PT_INSN_SINGLESTEP },
	{ "41 non-push", { 0x41, 0x89, 0xf8 }, 3, EB, 0, PT_INSN_SINGLESTEP },
	{ "pop rbp", { 0x5d, 0xc3 }, 2, W, 0, PT_INSN_SINGLESTEP },
	{ "mov rdi,rax", { MOV, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "sub rsp", { 0x48, 0x83, 0xec, 0x08 }, 4, EB, 0, PT_INSN_SINGLESTEP },
	{ "ret", { 0xc3 }, 1, W, 0, PT_INSN_SINGLESTEP },
	{ "xor eax,eax", { 0x31, 0xc0 }, 2, OFF, 0, PT_INSN_SINGLESTEP },
	{ "nop5", { NOP5, 0x55 }, 6, W, 0, PT_INSN_NOP5 },
	{ "nop5 exact", { NOP5 }, 5, OFF, 0, PT_INSN_NOP5 },
	{ "nop1", { 0x90 }, 1, OFF, 0, PT_INSN_NOP },
	{ "nop2", { 0x66, 0x90 }, 2, OFF, 0, PT_INSN_NOP },
	{ "nop3", { 0x0f, 0x1f, 0x00 }, 3, OFF, 0, PT_INSN_NOP },
	{ "nop4", { 0x0f, 0x1f, 0x40, 0x00 }, 4, EB, 0, PT_INSN_NOP },
	{ "nop6", { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 6, EB, 0, PT_INSN_NOP },
	{ "nop7", { 0x0f, 0x1f, 0x80, 0, 0, 0, 0 }, 7, OFF, 0, PT_INSN_NOP },
	{ "nop8", { 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 }, 8, OFF, 0, PT_INSN_NOP },
	{ "66 66 90", { 0x66, 0x66, 0x90 }, 3, OFF, 0, PT_INSN_NOP },
	{ "f3 90 (pause)", { 0xf3, 0x90 }, 2, EB, 0, PT_INSN_NOP },
	/* cs prefix: the kernel refuses to probe it at all */
	{ "cs nop10", { 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 }, 10, OFF, 0,
	  PT_INSN_SINGLESTEP },
	/* not x86_nops[]: single-stepped */
	{ "nopl 5 other", { 0x0f, 0x1f, 0x44, 0x00, 0x01 }, 5, OFF, 0, PT_INSN_SINGLESTEP },
	/* 41 90 is xchg %eax,%r8d */
	{ "41 90", { 0x41, 0x90 }, 2, OFF, 0, PT_INSN_SINGLESTEP },
	{ "jmp8", { 0xeb, 0x00 }, 2, OFF, 0, PT_INSN_BRANCH },
	{ "jmp32", { 0xe9, 0, 0, 0, 0 }, 5, OFF, 0, PT_INSN_BRANCH },
	{ "jne8", { 0x75, 0x00 }, 2, OFF, 0, PT_INSN_BRANCH },
	{ "jg32", { 0x0f, 0x8f, 0, 0, 0, 0 }, 6, OFF, 0, PT_INSN_BRANCH },
	{ "call32", { 0xe8, 0, 0, 0, 0 }, 5, OFF, 0, PT_INSN_BRANCH },
	/* 66 on a branch: refused by the kernel */
	{ "66 jmp", { 0x66, 0xe9, 0, 0 }, 4, OFF, 0, PT_INSN_SINGLESTEP },
	{ "jmp *rax", { 0xff, 0xe0 }, 2, OFF, 0, PT_INSN_SINGLESTEP },

	/* The endbr64-only rule (EB: code is the start of a big function). */
	{ "endbr push", { ENDBR, 0x55, 0x48, 0x89, 0xe5 }, 7, EB, 4, PT_INSN_EMULATED },
	{ "endbr push r12", { ENDBR, 0x41, 0x54 }, 6, EB, 4, PT_INSN_EMULATED },
	{ "endbr nop5", { ENDBR, NOP5 }, 9, EB, 4, PT_INSN_NOP5 },
	{ "endbr jmp", { ENDBR, 0xe9, 0, 0, 0, 0 }, 9, EB, 4, PT_INSN_BRANCH },
	{ "endbr mov", { ENDBR, MOV }, 7, EB, 0, PT_INSN_SINGLESTEP },
	{ "endbr sub", { ENDBR, 0x48, 0x83, 0xec, 0x08 }, 8, EB, 0, PT_INSN_SINGLESTEP },
	{ "endbr endbr push (EB)", { ENDBR, ENDBR, 0x55 }, 9, EB, 0, PT_INSN_SINGLESTEP },
	{ "endbr mov push (EB)", { ENDBR, MOV, 0x55 }, 8, EB, 0, PT_INSN_SINGLESTEP },
	{ "mov push (EB)", { MOV, 0x55 }, 4, EB, 0, PT_INSN_SINGLESTEP },
	{ "endbr32 push (EB)", { 0xf3, 0x0f, 0x1e, 0xfb, 0x55 }, 5, EB, 0, PT_INSN_SINGLESTEP },
	/* ...and what it can see of a jump back to the push: stays put */
	{ "endbr push, jmp back (EB)", { ENDBR, 0x55, 0x5d, 0xeb, 0xfc }, 8, EB, 0,
	  PT_INSN_SINGLESTEP },
	{ "endbr, skip off", { ENDBR, 0x55 }, 5, OFF, 0, PT_INSN_SINGLESTEP },

	/* The walk (W: code is the whole function). */
	{ "mov push", { MOV, 0x55, 0x5d, 0xc3 }, 6, W, 3, PT_INSN_EMULATED },
	{ "mov push r12", { MOV, 0x41, 0x54, 0x41, 0x5c, 0xc3 }, 8, W, 3, PT_INSN_EMULATED },
	{ "endbr mov push", { ENDBR, MOV, 0x55, 0x5d, 0xc3 }, 10, W, 7, PT_INSN_EMULATED },
	{ "endbr endbr push", { ENDBR, ENDBR, 0x55, 0x5d, 0xc3 }, 11, W, 8, PT_INSN_EMULATED },
	{ "endbr32 push", { 0xf3, 0x0f, 0x1e, 0xfb, 0x55, 0x5d, 0xc3 }, 7, W, 4, PT_INSN_EMULATED },
	{ "endbr push", { ENDBR, 0x55, 0x5d, 0xc3 }, 7, W, 4, PT_INSN_EMULATED },
	{ "mov nop5", { MOV, NOP5, 0xc3 }, 9, W, 3, PT_INSN_NOP5 },
	{ "xor nop2", { 0x31, 0xc0, 0x66, 0x90, 0xc3 }, 5, W, 2, PT_INSN_NOP },
	{ "mov pause", { MOV, 0xf3, 0x90, 0xc3 }, 6, W, 3, PT_INSN_NOP },
	{ "cmp jne", { 0x48, 0x39, 0xfe, 0x75, 0x00, 0xc3 }, 6, W, 3, PT_INSN_BRANCH },
	{ "cmpb rip jne", { 0x80, 0x3d, 1, 2, 3, 4, 0x00, 0x75, 0x00, 0xc3 }, 10, W, 7,
	  PT_INSN_BRANCH },
	{ "test jle32", { 0x48, 0x85, 0xff, 0x0f, 0x8e, 0, 0, 0, 0, 0xc3 }, 10, W, 3,
	  PT_INSN_BRANCH },
	{ "mov jmp (tail call)", { MOV, 0xe9, 0x10, 0, 0, 0 }, 8, W, 3, PT_INSN_BRANCH },
	{ "test call", { 0x48, 0x85, 0xff, 0xe8, 0, 0, 0, 0, 0xc3 }, 9, W, 3, PT_INSN_BRANCH },
	/* reading the stack, even the return address, is fine */
	{ "mov (rsp) push", { 0x48, 0x8b, 0x04, 0x24, 0x55, 0x5d, 0xc3 }, 7, W, 4,
	  PT_INSN_EMULATED },
	{ "lea 8(rsp) push", { 0x48, 0x8d, 0x44, 0x24, 0x08, 0x55, 0x5d, 0xc3 }, 8, W, 5,
	  PT_INSN_EMULATED },
	{ "mov fs:0x28 push", { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0, 0x55, 0x5d, 0xc3 }, 12,
	  W, 9, PT_INSN_EMULATED },
	/* 41 90 (xchg %eax,%r8d) is skipped over, not landed on */
	{ "mov xchg r8 push", { MOV, 0x41, 0x90, 0x55, 0x5d, 0xc3 }, 8, W, 5, PT_INSN_EMULATED },
	/* a cs nop is no landing (refused) but straight-line */
	{ "mov cs-nop10 push", { MOV, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0, 0x55, 0x5d, 0xc3 },
	  16, W, 13, PT_INSN_EMULATED },

	/* Anything that moves %rsp or the return address stops the walk. */
	{ "sub rsp push", { 0x48, 0x83, 0xec, 0x08, 0x53, 0x5b, 0xc3 }, 7, W, 0, PT_INSN_SINGLESTEP },
	{ "add rsp push", { 0x48, 0x83, 0xc4, 0x08, 0x53, 0xc3 }, 6, W, 0, PT_INSN_SINGLESTEP },
	{ "and rsp push", { 0x48, 0x83, 0xe4, 0xf0, 0x55, 0xc3 }, 6, W, 0, PT_INSN_SINGLESTEP },
	{ "lea rsp push", { 0x48, 0x8d, 0x64, 0x24, 0xf8, 0x55, 0xc3 }, 7, W, 0, PT_INSN_SINGLESTEP },
	{ "mov rbp,rsp push", { 0x48, 0x89, 0xec, 0x55, 0xc3 }, 5, W, 0, PT_INSN_SINGLESTEP },
	{ "mov esp push", { 0x89, 0xc4, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "xchg rsp push", { 0x48, 0x87, 0xe0, 0x55, 0xc3 }, 5, W, 0, PT_INSN_SINGLESTEP },
	{ "rex.w push push", { 0x48, 0x55, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "pushf push", { 0x9c, 0x55, 0xc3 }, 3, W, 0, PT_INSN_SINGLESTEP },
	{ "pop push", { 0x5d, 0x55, 0xc3 }, 3, W, 0, PT_INSN_SINGLESTEP },
	{ "leave push", { 0xc9, 0x55, 0xc3 }, 3, W, 0, PT_INSN_SINGLESTEP },
	{ "enter push", { 0xc8, 0x08, 0x00, 0x00, 0x55, 0xc3 }, 6, W, 0, PT_INSN_SINGLESTEP },
	{ "mov to (rsp) push", { 0x48, 0x89, 0x04, 0x24, 0x55, 0xc3 }, 6, W, 0, PT_INSN_SINGLESTEP },
	{ "add to (rsp) push", { 0x48, 0x83, 0x04, 0x24, 0x01, 0x55, 0xc3 }, 7, W, 0,
	  PT_INSN_SINGLESTEP },

	/* Nor is anything skipped that does not fall through. */
	{ "ret push", { 0xc3, 0x55, 0xc3 }, 3, W, 0, PT_INSN_SINGLESTEP },
	{ "jmp *rax push", { 0xff, 0xe0, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "notrack jmp *rax push", { 0x3e, 0xff, 0xe0, 0x55, 0xc3 }, 5, W, 0, PT_INSN_SINGLESTEP },
	{ "call *rax push", { 0xff, 0xd0, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "66 jmp push", { 0x66, 0xe9, 0, 0, 0x55, 0xc3 }, 6, W, 0, PT_INSN_SINGLESTEP },
	{ "syscall push", { 0x0f, 0x05, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "int3 push", { 0xcc, 0x55, 0xc3 }, 3, W, 0, PT_INSN_SINGLESTEP },
	{ "int 0x80 push", { 0xcd, 0x80, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "ud2 push", { 0x0f, 0x0b, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "hlt push", { 0xf4, 0x55, 0xc3 }, 3, W, 0, PT_INSN_SINGLESTEP },
	{ "loop push", { 0xe2, 0x00, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "jrcxz push", { 0xe3, 0x00, 0x55, 0xc3 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "xbegin push", { 0xc7, 0xf8, 0, 0, 0, 0, 0x55, 0xc3 }, 8, W, 0, PT_INSN_SINGLESTEP },
	{ "xend push", { 0x0f, 0x01, 0xd5, 0x55, 0xc3 }, 5, W, 0, PT_INSN_SINGLESTEP },
	{ "rep stosb push", { 0xf3, 0xaa, 0x55, 0xc3 }, 4, W, 2, PT_INSN_EMULATED },

	/* A branch into (start, landing]: the probe would fire twice. */
	/* mov; 1: add; push; pop; sub; jg 1b; ret */
	{ "loop back to 2nd insn", { MOV, 0x48, 0x83, 0xc2, 0x01, 0x53, 0x5b, 0x48, 0x83, 0xe8, 0x01,
	  0x7f, 0xf4, 0xc3 }, 16, W, 0, PT_INSN_SINGLESTEP },
	{ "loop back to landing", { MOV, 0x48, 0x83, 0xc2, 0x01, 0x53, 0x5b, 0x48, 0x83, 0xe8, 0x01,
	  0x7f, 0xf8, 0xc3 }, 16, W, 0, PT_INSN_SINGLESTEP },
	{ "loop back to start", { MOV, 0x48, 0x83, 0xc2, 0x01, 0x53, 0x5b, 0x48, 0x83, 0xe8, 0x01,
	  0x7f, 0xf1, 0xc3 }, 16, W, 7, PT_INSN_EMULATED },
	{ "loop back past landing", { MOV, 0x48, 0x83, 0xc2, 0x01, 0x53, 0x5b, 0x48, 0x83, 0xe8,
	  0x01, 0x7f, 0xf9, 0xc3 }, 16, W, 7, PT_INSN_EMULATED },
	{ "jg32 back to 2nd insn", { MOV, 0x48, 0x83, 0xc2, 0x01, 0x53, 0x5b, 0x0f, 0x8f, 0xf4, 0xff,
	  0xff, 0xff, 0xc3 }, 16, W, 0, PT_INSN_SINGLESTEP },
	{ "loop insn back", { MOV, 0x48, 0x83, 0xc2, 0x01, 0x53, 0x5b, 0xe2, 0xf8, 0xc3 }, 12, W, 0,
	  PT_INSN_SINGLESTEP },
	{ "je to after landing", { 0x48, 0x85, 0xff, 0x74, 0x00, 0xc3 }, 6, W, 3, PT_INSN_BRANCH },
	{ "recursive call to 2nd insn", { MOV, 0x55, 0xe8, 0xfa, 0xff, 0xff, 0xff, 0x5d, 0xc3 }, 11,
	  W, 0, PT_INSN_SINGLESTEP },
	/* the jne at 3 itself is jumped to from 5 */
	{ "branch to branch landing", { 0x48, 0x39, 0xfe, 0x75, 0x02, 0xeb, 0xfc, 0xc3 }, 8, W, 0,
	  PT_INSN_SINGLESTEP },

	/* Limits: 8 instructions, 64 bytes. */
	{ "8 movs push", { MOV, MOV, MOV, MOV, MOV, MOV, MOV, MOV, 0x55, 0x5d, 0xc3 }, 27, W, 24,
	  PT_INSN_EMULATED },
	{ "9 movs push", { MOV, MOV, MOV, MOV, MOV, MOV, MOV, MOV, MOV, 0x55, 0x5d, 0xc3 }, 30, W, 0,
	  PT_INSN_SINGLESTEP },
	{ "60 bytes push", { MOVABS, MOVABS, MOVABS, MOVABS, MOVABS, MOVABS, 0x55, 0xc3 }, 62, W, 60,
	  PT_INSN_EMULATED },
	{ "70 bytes push", { MOVABS, MOVABS, MOVABS, MOVABS, MOVABS, MOVABS, MOVABS, 0x55, 0xc3 },
	  72, W, 0, PT_INSN_SINGLESTEP },

	/* Undecodable code: in the walk, or later in the function. */
	{ "mov bad push", { MOV, 0xd6, 0x55, 0xc3 }, 5, W, 0, PT_INSN_SINGLESTEP },
	{ "mov push ... bad", { MOV, 0x55, 0x5d, 0xc3, 0xd6 }, 7, W, 0, PT_INSN_SINGLESTEP },
	{ "mov, cut", { MOV }, 3, W, 0, PT_INSN_SINGLESTEP },
	{ "mov, cut push r12", { MOV, 0x41 }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "mov, cut jmp", { MOV, 0xe9, 0 }, 5, W, 0, PT_INSN_SINGLESTEP },

	/* prologue_skip off */
	{ "mov push, off", { MOV, 0x55, 0x5d, 0xc3 }, 6, OFF, 0, PT_INSN_SINGLESTEP },
	{ "cmp jne, off", { 0x48, 0x39, 0xfe, 0x75, 0x00, 0xc3 }, 6, OFF, 0, PT_INSN_SINGLESTEP },

	/* Too short to know. */
	{ "empty", { 0 }, 0, W, 0, PT_INSN_UNKNOWN },
	{ "41 alone", { 0x41 }, 1, W, 0, PT_INSN_UNKNOWN },
	{ "half nop5", { 0x0f, 0x1f, 0x44 }, 3, W, 0, PT_INSN_UNKNOWN },
	{ "0f 1f 40 (nop4?)", { 0x0f, 0x1f, 0x40 }, 3, W, 0, PT_INSN_UNKNOWN },
	{ "half endbr", { 0xf3, 0x0f }, 2, EB, 0, PT_INSN_UNKNOWN },
	{ "half jmp32", { 0xe9, 0x00 }, 2, W, 0, PT_INSN_UNKNOWN },
	{ "66 alone", { 0x66 }, 1, W, 0, PT_INSN_UNKNOWN },
	/* ...but not when what we have already rules the pattern out. */
	{ "f3 0f 1e fb..", { 0xf3, 0x0f, 0x1e }, 3, W, 0, PT_INSN_SINGLESTEP },
	/* endbr64 and nothing after it: probe the endbr64 itself. */
	{ "endbr only", { ENDBR }, 4, W, 0, PT_INSN_SINGLESTEP },
	{ "endbr 41", { ENDBR, 0x41 }, 5, EB, 0, PT_INSN_SINGLESTEP },
	{ "endbr half nop5", { ENDBR, 0x0f, 0x1f }, 6, W, 0, PT_INSN_SINGLESTEP },
	/* Shorter len than the bytes present: only len counts. */
	{ "len cuts push r12", { 0x41, 0x54 }, 1, W, 0, PT_INSN_UNKNOWN },
	{ "len cuts after endbr", { ENDBR, 0x55 }, 4, EB, 0, PT_INSN_SINGLESTEP },
	{ "len cuts after mov", { MOV, 0x55 }, 3, W, 0, PT_INSN_SINGLESTEP },
};
/* clang-format on */

static void test_cases(void **state)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *c = &cases[i];
		struct pt_probe_site s = pt_prologue__site(c->code, c->len, c->mode);

		if (s.skip != c->skip || s.cls != c->cls) {
			print_error("%s: got skip=%u %s, want skip=%u %s\n", c->what, s.skip,
				    pt_insn_class__str(s.cls), c->skip, pt_insn_class__str(c->cls));
			bad++;
		}
	}
	if (bad)
		fail_msg("%d of %zu cases wrong", bad, sizeof(cases) / sizeof(cases[0]));
}

/*
 * glibc's pattern: mempcpy (no symbol in a stripped libc) jumps to
 * memmove+3, past memmove's first instruction.
 *   0: mempcpy: mov %rdi,%rax; add %rdx,%rax; jmp 11
 *   8: memmove: mov %rdi,%rax
 *  11:          cmp $16,%rdx; jb 18; ret; 18: ret
 */
static const uint8_t two_entries[] = { MOV,  0x48, 0x01, 0xd0, 0xeb, 0x03, MOV, 0x48,
				       0x83, 0xfa, 0x10, 0x72, 0x01, 0xc3, 0xc3 };

static void test_entered(void **state)
{
	const uint8_t *memmove = two_entries + 8;
	struct pt_probe_site s = pt_prologue__site(memmove, 11, PT_PROLOGUE_SKIP_WALK);
	uint8_t junk[sizeof(two_entries) + 3] = { 0xd6, 0xd6, 0xd6 };

	/* memmove alone would move its probe onto the jb... */
	assert_int_equal(s.skip, 7);
	assert_int_equal(s.cls, PT_INSN_BRANCH);
	/* ...but the code before it jumps to +3. */
	assert_true(pt_prologue__entered(two_entries, sizeof(two_entries), -8, 0, 7));
	assert_true(pt_prologue__entered(two_entries, sizeof(two_entries), -8, 2, 3));
	assert_false(pt_prologue__entered(two_entries, sizeof(two_entries), -8, 3, 7));
	assert_false(pt_prologue__entered(two_entries, sizeof(two_entries), -8, 0, 2));
	/* mempcpy alone: its jmp lands past the window asked about */
	assert_false(pt_prologue__entered(two_entries, 8, 0, 0, 7));
	/* undecodable bytes in front are stepped over */
	memcpy(junk + 3, two_entries, sizeof(two_entries));
	assert_true(pt_prologue__entered(junk, sizeof(junk), -11, 0, 7));
	assert_false(pt_prologue__entered(NULL, 0, 0, 0, 7));
}

static void test_null(void **state)
{
	struct pt_probe_site s = pt_prologue__site(NULL, 0, PT_PROLOGUE_SKIP_WALK);

	assert_int_equal(s.skip, 0);
	assert_int_equal(s.cls, PT_INSN_UNKNOWN);
}

static void test_str(void **state)
{
	assert_string_equal(pt_insn_class__str(PT_INSN_EMULATED), "emulated");
	assert_string_equal(pt_insn_class__str(PT_INSN_NOP5), "nop5");
	assert_string_equal(pt_insn_class__str(PT_INSN_BRANCH), "branch");
	assert_string_equal(pt_insn_class__str(PT_INSN_NOP), "nop");
	assert_string_equal(pt_insn_class__str(PT_INSN_SINGLESTEP), "single-step");
	assert_string_equal(pt_insn_class__str(PT_INSN_UNKNOWN), "unknown");
	assert_string_equal(pt_insn_class__str((enum pt_insn_class)77), "unknown");
}

/* ---- real code in the fixture binaries ---- */

struct real {
	const char *sym;
	uint8_t bytes[8]; /* the encoding the assembler must have produced */
	size_t nbytes;
	unsigned int skip; /* whole function, walk */
	enum pt_insn_class cls;
	unsigned int skip_eb; /* first 64 bytes, endbr64 rule only */
	enum pt_insn_class cls_eb;
	enum pt_insn_class cls_off; /* skip off: always at the symbol */
};

/* clang-format off */
static const struct real reals[] = {
	{ "fx_asm_push_rbp", { 0x55, 0x48, 0x89, 0xe5 }, 4, 0, PT_INSN_EMULATED, 0,
	  PT_INSN_EMULATED, PT_INSN_EMULATED },
	{ "fx_asm_push_r12", { 0x41, 0x54, 0x48, 0x89, 0xf8 }, 5, 0, PT_INSN_EMULATED, 0,
	  PT_INSN_EMULATED, PT_INSN_EMULATED },
	/* mov then ret: nothing to land on */
	{ "fx_asm_mov_first", { MOV, 0xc3 }, 4, 0, PT_INSN_SINGLESTEP, 0, PT_INSN_SINGLESTEP,
	  PT_INSN_SINGLESTEP },
	{ "fx_asm_endbr_push", { ENDBR, 0x55, MOV }, 8, 4, PT_INSN_EMULATED, 4, PT_INSN_EMULATED,
	  PT_INSN_SINGLESTEP },
	{ "fx_asm_endbr_mov", { ENDBR, MOV, 0xc3 }, 8, 0, PT_INSN_SINGLESTEP, 0,
	  PT_INSN_SINGLESTEP, PT_INSN_SINGLESTEP },
	{ "fx_asm_nop5", { NOP5, MOV }, 8, 0, PT_INSN_NOP5, 0, PT_INSN_NOP5, PT_INSN_NOP5 },
	{ "fx_asm_mov_push", { MOV, 0x55, 0x48, 0x89, 0xe5 }, 7, 3, PT_INSN_EMULATED, 0,
	  PT_INSN_SINGLESTEP, PT_INSN_SINGLESTEP },
	{ "fx_asm_cmp_jne", { 0x80, 0x3d }, 2, 7, PT_INSN_BRANCH, 0, PT_INSN_SINGLESTEP,
	  PT_INSN_SINGLESTEP },
	{ "fx_asm_sub_rsp", { 0x48, 0x83, 0xec, 0x08, 0x53 }, 5, 0, PT_INSN_SINGLESTEP, 0,
	  PT_INSN_SINGLESTEP, PT_INSN_SINGLESTEP },
	/* jg back to +3: stays on the mov */
	{ "fx_asm_loop_back", { MOV, 0x48, 0x83, 0xc2, 0x01, 0x53 }, 8, 0, PT_INSN_SINGLESTEP, 0,
	  PT_INSN_SINGLESTEP, PT_INSN_SINGLESTEP },
};
/* clang-format on */

static const struct pt_sym *find_sym(const struct pt_elf *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->nsyms; i++)
		if (!strcmp(e->syms[i].name, name))
			return &e->syms[i];
	return NULL;
}

static void check_real(const char *file)
{
	const char *dir = getenv("PT_FIXTURES");
	char path[PATH_MAX];
	struct pt_elf *e;
	size_t i;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".output/fixtures", file);
	err = pt_elf__open(&e, path);
	if (err)
		fail_msg("pt_elf__open(%s): %s (make the fixtures first)", path, strerror(-err));

	for (i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
		const struct real *r = &reals[i];
		const struct pt_sym *s = find_sym(e, r->sym);
		struct pt_probe_site site;
		uint8_t code[4096];
		size_t len;

		if (!s)
			fail_msg("%s: no symbol %s", file, r->sym);
		/* As resolve.c does: the whole function, or its first bytes. */
		assert_true(s->size > 0 && s->size <= sizeof(code));
		len = (size_t)s->size;
		assert_int_equal(pt_elf__read(e, s->file_off, code, len), len);
		if (memcmp(code, r->bytes, r->nbytes))
			fail_msg("%s: %s does not start with the expected bytes", file, r->sym);

		site = pt_prologue__site(code, len, PT_PROLOGUE_SKIP_WALK);
		if (site.skip != r->skip || site.cls != r->cls)
			fail_msg("%s: %s: skip=%u %s, want skip=%u %s", file, r->sym, site.skip,
				 pt_insn_class__str(site.cls), r->skip, pt_insn_class__str(r->cls));
		len = pt_elf__read(e, s->file_off, code, PT_PROLOGUE_MAX_BYTES);
		assert_int_equal(len, PT_PROLOGUE_MAX_BYTES);
		site = pt_prologue__site(code, len, PT_PROLOGUE_SKIP_ENDBR);
		if (site.skip != r->skip_eb || site.cls != r->cls_eb)
			fail_msg("%s: %s (endbr64 rule): skip=%u %s, want skip=%u %s", file, r->sym,
				 site.skip, pt_insn_class__str(site.cls), r->skip_eb,
				 pt_insn_class__str(r->cls_eb));
		site = pt_prologue__site(code, len, PT_PROLOGUE_SKIP_NONE);
		assert_int_equal(site.skip, 0);
		assert_int_equal(site.cls, r->cls_off);
	}
	pt_elf__free(e);
}

static void test_real_pie(void **state)
{
	check_real("elf_pie");
}

static void test_real_nopie(void **state)
{
	check_real("elf_nopie");
}

static void test_real_stripped(void **state)
{
	check_real("elf_stripped");
}

static void test_real_lib(void **state)
{
	check_real("libelf_fixture.so");
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_entered),
		cmocka_unit_test(test_null),
		cmocka_unit_test(test_str),
		cmocka_unit_test(test_real_pie),
		cmocka_unit_test(test_real_nopie),
		cmocka_unit_test(test_real_stripped),
		cmocka_unit_test(test_real_lib),
	};
	/* clang-format on */

	return cmocka_run_group_tests_name("prologue", tests, NULL, NULL);
}
