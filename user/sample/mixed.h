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

/* What a ref of the merged stack is (its `native`: 0 for a Python frame,
 * so that it reads as a truth value). */
enum {
	PT_MIXED_PY,	   /* the Python frame f[i] */
	PT_MIXED_NATIVE,   /* the native frame nat[i] */
	PT_MIXED_GIL,	   /* the interpreter's GIL code (its frames from nat[i] on,
			    * left out): "[GIL]" */
	PT_MIXED_GIL_WAIT, /* ... waiting in a condition variable: "[GIL wait]" */
};

/* One frame of the merged stack. */
struct pt_mixed_ref {
	uint32_t i;
	uint8_t native; /* PT_MIXED_* */
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
 *
 * The interpreter's frames are left out, save one case said by a pseudo
 * frame: a thread in the GIL's code (take_gil, drop_gil). CPython 3.8 to
 * 3.13 waits on condition variables for the GIL only (its locks are
 * semaphores on Linux), and distro builds do not name take_gil (a static
 * function, .symtab stripped): so libc's frames at the leaf, one of them a
 * pthread_cond_* function, right under the interpreter's frames are the
 * GIL; so is an interpreter frame named take_gil or drop_gil right above
 * the leaf's libc frames. Without it a thread waiting for the GIL reads
 * as its Python line waiting in pthread_cond_timedwait.
 */
size_t pt_mixed__merge(unsigned int minor, const struct pt_sample_frame *f, size_t n,
		       const struct pt_unwind_frame *nat, size_t nn, enum pt_unwind_end end,
		       struct pt_mixed_ref *out, size_t max, enum pt_mixed_how *how);

#define PT_MIXED_GIL_LABEL "[GIL]"
#define PT_MIXED_GIL_WAIT_LABEL "[GIL wait]"

/* A native frame's label: "sym (module)", "module+0xOFF" when no symbol
 * covers its pc, "[unknown]" when no mapped file does. */
void pt_mixed__label(const struct pt_unwind_frame *nf, char *buf, size_t len);
/* Its identity for the top tables (never 0): a hash of its label. */
uint64_t pt_mixed__key(const char *label);

#endif
