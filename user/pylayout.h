/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where CPython keeps what proftrace reads, per minor version (x86-64).
 * Data, not #ifdefs: one row per version, checked with gdb against the
 * pyenv and Debian builds (../shared/notes/cpython.md). 3.13 carries its
 * own offsets in _Py_DebugOffsets at the start of _PyRuntime; those are
 * read and checked against the row.
 */
#ifndef PT_PYLAYOUT_H
#define PT_PYLAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_PY_MINOR_MIN 8
#define PT_PY_MINOR_MAX 13
#define PT_PY_SUPPORTED "3.8, 3.9, 3.10, 3.11, 3.12 and 3.13"

struct pt_py_layout {
	unsigned int minor;     /* 3.<minor> */
	unsigned int frame_arg; /* _PyEval_EvalFrameDefault's frame argument, 1-based */
	unsigned int frame_code; /* frame -> code object (f_code, f_executable) */
	unsigned int code_filename;
	unsigned int code_name;     /* == code_filename + 8 on every version */
	unsigned int code_qualname; /* 0: code objects have none (< 3.11) */
	unsigned int code_firstlineno;
	unsigned int code_flags; /* co_flags */
	unsigned int code_linetable; /* co_lnotab (< 3.10), co_linetable: a bytes object */
	/* 3.11+ run a short frame when a generator or coroutine is created
	 * (up to RETURN_GENERATOR); it is not an activation. It is the frame
	 * whose instruction pointer is still before (3.11, 3.12: one unit
	 * before) or at (3.13) the first instruction. 0: no such frame. */
	bool gen_frames;
	unsigned int code_adaptive; /* co_code_adaptive: the first instruction */
	unsigned int frame_ip;     /* prev_instr / instr_ptr */
	unsigned int gen_new_lim;  /* created iff ip - first < gen_new_lim (signed) */
	unsigned int ob_type;
	unsigned int bytes_size; /* PyBytesObject.ob_size */
	unsigned int bytes_sval; /* PyBytesObject.ob_sval: the data, NUL-terminated */
	unsigned int str_length; /* PyASCIIObject.length */
	unsigned int str_state;  /* PyASCIIObject.state bitfield */
	unsigned int ascii_size;   /* sizeof(PyASCIIObject): ASCII data follows */
	unsigned int compact_size; /* sizeof(PyCompactUnicodeObject): other data */
	unsigned int runtime_interp_head; /* _PyRuntime.interpreters.head */
	unsigned int interp_eval_frame;   /* PyInterpreterState.eval_frame (PEP 523) */
	/* The state walk of the stack sampler (bpf/pysample.bpf.c): runtime
	 * -> interpreter -> thread states -> current frame -> back links. */
	unsigned int interp_tstate_head; /* PyInterpreterState -> first PyThreadState */
	unsigned int tstate_next;
	unsigned int tstate_thread_id; /* pthread_self() of the thread */
	unsigned int tstate_frame;     /* frame (< 3.11), cframe (3.11, 3.12), current_frame */
	int cframe_frame;              /* >= 0: tstate_frame is a _PyCFrame, frame here */
	unsigned int frame_back;       /* f_back / previous */
	unsigned int frame_lasti;      /* int f_lasti (< 3.11), else 0: frame_ip */
	unsigned int frame_owner;      /* owner byte (3.11+), else 0 */
	unsigned int owner_cstack;     /* owner of C-stack shim frames (3.12+), else 256 */
	unsigned int frame_size;       /* bytes from the frame start that hold all of these */
	/* Every Python call enters _PyEval_EvalFrameDefault (< 3.11). Later
	 * versions inline Python-to-Python calls unless an eval_frame hook
	 * such as the perf trampoline is installed. */
	bool evalframe_all_calls;
	/* Values read at calls (issue 7): the frame's local slots, and the
	 * code object's tuple naming them (co_varnames < 3.11, else
	 * co_localsplusnames: arguments first in both). */
	unsigned int frame_localsplus;
	unsigned int code_varnames;
	bool long_tag; /* ints carry lv_tag (3.12+), not a signed ob_size */
};

/* The row for 3.<minor>, NULL when unsupported. */
const struct pt_py_layout *pt_py_layout__get(unsigned int minor);

/*
 * 3.13: fill L from the _Py_DebugOffsets bytes at the start of _PyRuntime
 * (buf, len bytes read from the target: untrusted). Checks the cookie, the
 * version (returned in *hexversion), that the build is not free-threaded
 * and that every offset is inside its struct's size. 0, or -EINVAL with a
 * one-line reason.
 */
#define PT_PY_DEBUG_OFFSETS_LEN 584
int pt_py_layout__from_debug_offsets(struct pt_py_layout *L, const void *buf, size_t len,
				     uint32_t *hexversion, char *err, size_t errlen);

#endif
