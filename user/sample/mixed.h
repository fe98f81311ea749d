/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One sample's Python frames and its native frames, merged into one
 * stack (native_frames on): the interpreter's own C frames are left out,
 * and each C call of _PyEval_EvalFrameDefault is replaced by the Python
 * frames it runs. Pure: tests feed it frames of their own.
 *
 * Which Python frames one eval call runs (the sampled frames, innermost
 * first):
 * - before 3.11, one frame each (every Python call is a C call);
 * - 3.11, the frames down to the first marked PT_SFRAME_ENTRY (a call
 *   inlined into its caller's eval loop is not an entry);
 * - 3.12+, the frames down to the next C-stack shim frame (code 0),
 *   which the eval call pushed below them.
 */
#ifndef PT_MIXED_H
#define PT_MIXED_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"
#include "unwind.h"

/* One frame of the merged stack: the Python frame py[i], or the native
 * frame nat[i]. */
struct pt_mixed_ref {
	uint32_t i;
	uint8_t native;
};

/* How the two stacks met. */
enum pt_mixed_how {
	PT_MIXED_WHOLE,	   /* every eval call matched a group of Python frames */
	PT_MIXED_PARTIAL,  /* the native unwind stopped early: the Python frames
			    * past its last eval call follow, without the native
			    * frames between them */
	PT_MIXED_MISMATCH, /* a whole native stack whose eval calls and Python
			    * frames do not pair up (counted; frames kept) */
};

/*
 * Merge n Python frames f (as sampled, innermost first, shim frames
 * included) of a CPython 3.<minor> with nn native frames nat (innermost
 * first, the unwind ended by end) into out (innermost first), at most max
 * refs. Returns how many; *how says how they met.
 */
size_t pt_mixed__merge(unsigned int minor, const struct pt_sample_frame *f, size_t n,
		       const struct pt_unwind_frame *nat, size_t nn, enum pt_unwind_end end,
		       struct pt_mixed_ref *out, size_t max, enum pt_mixed_how *how);

/* A native frame's label: "sym (module)", "module+0xOFF" when no symbol
 * covers its pc, "[unknown]" when no mapped file does. */
void pt_mixed__label(const struct pt_unwind_frame *nf, char *buf, size_t len);
/* Its identity for the top tables (never 0): a hash of its label. */
uint64_t pt_mixed__key(const char *label);

#endif
