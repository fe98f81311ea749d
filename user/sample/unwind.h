/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Native frames of a sample: the registers and the top of the user stack
 * the stack sampler copied (struct pt_ustack), unwound with elfutils'
 * dwfl unwinder from the mapped files' .eh_frame / .debug_frame (distro
 * builds have no frame pointers). Only the copy is read for stack
 * contents, never the target's memory: what lies beyond it ends the
 * stack (PT_UNWIND_END_COPY).
 *
 * One struct pt_unwind per process, used from one thread at a time:
 * libdw's Dwfl is not thread-safe.
 */
#ifndef PT_UNWIND_H
#define PT_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"

enum pt_unwind_kind {
	PT_UNWIND_NATIVE, /* any other code: C extensions, libtorch, libc, ... */
	PT_UNWIND_EVAL,	  /* _PyEval_EvalFrameDefault: a C call that runs Python frames */
	PT_UNWIND_INTERP, /* other code of the ELF that defines _PyEval_EvalFrameDefault
			   * (the python executable, or libpython3.x.so) */
	PT_UNWIND_OWN,	  /* proftrace's own helpers mapped in the target: an ELF whose
			   * basename starts with "libproftrace_" (agent, CUPTI shim) */
};

enum pt_unwind_end {
	PT_UNWIND_END_BOTTOM, /* reached the outermost frame (no caller: _start, clone, pc 0) */
	PT_UNWIND_END_COPY,   /* a caller's frame lies beyond the copied stack bytes */
	PT_UNWIND_END_NOINFO, /* a pc with no unwind info, or in no mapped file */
	PT_UNWIND_END_MAX,    /* out of room in the caller's array */
	PT_UNWIND_END_ERROR,  /* anything else libdw reported */
};

struct pt_unwind_frame {
	uint64_t pc;	    /* the instruction: the leaf's ip; for callers return address - 1 */
	const char *sym;    /* demangled function name; NULL: no symbol covers pc */
	const char *module; /* basename of the mapped ELF file; NULL: in no mapped file */
	uint64_t modoff;    /* pc as the module's ELF addresses it (addr2line, objdump) */
	enum pt_unwind_kind kind;
};

struct pt_unwind_opts {
	int pid;
	/* prefix for the module paths of /proc/PID/maps, for a target in another
	 * mount namespace: "/proc/PID/root"; NULL: none */
	const char *root;
	/* every stack through libdw's own walk, none through the fast one
	 * (unwind.c): what the fast walk is tested against */
	bool libdw_only;
};

struct pt_unwind_stats {
	uint64_t stacks;  /* pt_unwind__stack calls */
	uint64_t frames;  /* frames given out */
	uint64_t nosym;	  /* of them, with no symbol covering the pc */
	uint64_t reports; /* times /proc/PID/maps was read (the first included) */
	uint64_t hits;	  /* frames named from the per-pc cache */
	uint64_t fast;	  /* stacks walked with cached rules only (no libdw walk) */
	uint64_t ends[PT_UNWIND_END_ERROR + 1]; /* stacks by how they ended */
};

struct pt_unwind;

/* 0, or -errno with a one-line message in err. */
int pt_unwind__new(struct pt_unwind **out, const struct pt_unwind_opts *o, char *err,
		   size_t errlen);

/*
 * Unwind one copy: regs[PT_UREGS] as the sample saw them, stack = len
 * bytes copied from regs[PT_UREG_SP] up. Fills up to max frames,
 * innermost first; returns how many; *end says why it stopped. Strings
 * stay valid until pt_unwind__free.
 */
size_t pt_unwind__stack(struct pt_unwind *u, uint32_t tid, const uint64_t *regs,
			const uint8_t *stack, size_t len, struct pt_unwind_frame *out, size_t max,
			enum pt_unwind_end *end);

void pt_unwind__stats(const struct pt_unwind *u, struct pt_unwind_stats *st);

/* NULL-safe. */
void pt_unwind__free(struct pt_unwind *u);

/* An Itanium C++ name demangled into buf; returns buf, or name itself when
 * it is not mangled or does not demangle. */
const char *pt_unwind__demangle(const char *name, char *buf, size_t len);

#endif
