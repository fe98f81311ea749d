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

#include "bpf/proftrace.h"

#define PT_PY_MINOR_MIN 8
#define PT_PY_MINOR_MAX 14
#define PT_PY_SUPPORTED "3.8 to 3.14"

struct pt_py_layout {
	unsigned int minor;	 /* 3.<minor> */
	unsigned int frame_arg;	 /* _PyEval_EvalFrameDefault's frame argument, 1-based */
	unsigned int frame_code; /* frame -> code object (f_code, f_executable) */
	/* Bits of a frame slot (f_executable, localsplus[]) that tag a 3.14
	 * _PyStackRef: the object is slot & ~stackref_tag. 0 before 3.14. */
	uint64_t stackref_tag;
	unsigned int code_filename;
	unsigned int code_name;	    /* == code_filename + 8 on every version */
	unsigned int code_qualname; /* 0: code objects have none (< 3.11) */
	unsigned int code_firstlineno;
	unsigned int code_flags;     /* co_flags */
	unsigned int code_linetable; /* co_lnotab (< 3.10), co_linetable: a bytes object */
	/* 3.11+ run a short frame when a generator or coroutine is created
	 * (up to RETURN_GENERATOR); it is not an activation. It is the frame
	 * whose instruction pointer is still before (3.11, 3.12: one unit
	 * before) or at (3.13) the first instruction. 0: no such frame. */
	bool gen_frames;
	unsigned int code_adaptive; /* co_code_adaptive: the first instruction */
	unsigned int frame_ip;	    /* prev_instr / instr_ptr */
	unsigned int gen_new_lim;   /* created iff ip - first < gen_new_lim (signed) */
	unsigned int ob_type;
	unsigned int bytes_size;	  /* PyBytesObject.ob_size */
	unsigned int bytes_sval;	  /* PyBytesObject.ob_sval: the data, NUL-terminated */
	unsigned int str_length;	  /* PyASCIIObject.length */
	unsigned int str_state;		  /* PyASCIIObject.state bitfield */
	unsigned int ascii_size;	  /* sizeof(PyASCIIObject): ASCII data follows */
	unsigned int compact_size;	  /* sizeof(PyCompactUnicodeObject): other data */
	unsigned int runtime_interp_head; /* _PyRuntime.interpreters.head */
	unsigned int interp_eval_frame;	  /* PyInterpreterState.eval_frame (PEP 523) */
	/* PyInterpreterState.modules (imports.modules on 3.12+): sys.modules,
	 * where the threading module's thread names are found (pythreads.c).
	 * 0: not known (3.14: its threads carry their names as comm) */
	unsigned int interp_modules;
	/* The state walk of the stack sampler (bpf/pysample.bpf.c): runtime
	 * -> interpreter -> thread states -> current frame -> back links. */
	unsigned int interp_tstate_head; /* PyInterpreterState -> first PyThreadState */
	unsigned int tstate_next;
	unsigned int tstate_thread_id; /* pthread_self() of the thread */
	unsigned int tstate_frame;     /* frame (< 3.11), cframe (3.11, 3.12), current_frame */
	int cframe_frame;	       /* >= 0: tstate_frame is a _PyCFrame, frame here */
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

	/*
	 * Attributes of objects (pyattr.c, docs/pyattr-notes.md). Checked
	 * with gdb on the pyenv builds and against live interpreters by
	 * tests/integration/test_pyattr.py (Debian's 3.11.2 included).
	 *
	 * PyTypeObject: the same offsets on 3.8-3.13.
	 */
	unsigned int type_name;	     /* tp_name: const char * */
	unsigned int type_basicsize; /* tp_basicsize: Py_ssize_t */
	unsigned int type_itemsize;  /* tp_itemsize: != 0 for var-sized instances */
	unsigned int type_getattro;  /* tp_getattro: PyObject_GenericGetAttr unless customised */
	unsigned int type_flags;     /* tp_flags: unsigned long */
	unsigned int type_methods;   /* tp_methods: PyMethodDef[] ({name, meth, flags, doc}) */
	unsigned int type_members;   /* tp_members: PyMemberDef[] (see pyattr.c) */
	unsigned int type_getset;    /* tp_getset: PyGetSetDef[] ({name, get, set, doc, closure}) */
	unsigned int type_dict;	     /* tp_dict; NULL for static builtin types on 3.12+
				      * (their dict lives in the interpreter state) */
	unsigned int type_descr_set; /* tp_descr_set: non-NULL makes a data descriptor */
	unsigned int type_dictoffset; /* tp_dictoffset: Py_ssize_t; > 0 the dict pointer's
				       * offset, < 0 counted from the end of a var-sized
				       * object (3.8-3.11) or -1 with a managed dict (3.12+) */
	unsigned int type_mro;	      /* tp_mro: a tuple, the type itself first */
	/* PyHeapTypeObject.ht_cached_keys: the keys instances share
	 * (872, 864, 872, 872, 880, 880 on 3.8..3.13) */
	unsigned int ht_cached_keys;
	unsigned int descr_type;   /* PyDescrObject.d_type: the type it applies to */
	unsigned int descr_member; /* PyMemberDescrObject.d_member: its PyMemberDef * */
	unsigned int func_code;	   /* PyFunctionObject.func_code (16 < 3.10, else 48) */
	unsigned int code_names;   /* co_names tuple (64 < 3.11, else 32) */
	unsigned int code_consts;  /* co_consts tuple (56 < 3.11, else 24) */
	unsigned int str_hash;	   /* PyASCIIObject.hash: Py_hash_t, -1 until computed */
	unsigned int tuple_size;   /* PyTupleObject.ob_size */
	unsigned int tuple_item;   /* PyTupleObject.ob_item[0] (24; 32 on 3.14: a cached hash) */
	unsigned int dict_keys;	   /* PyDictObject.ma_keys */
	unsigned int dict_values;  /* PyDictObject.ma_values: NULL for a combined table */
	/*
	 * PyDictKeysObject. < 3.11: dk_size (Py_ssize_t, a power of 2) at
	 * keys_size, entries {hash, key, value} (24 bytes) after dk_size
	 * indices of 1, 2, 4 or 8 bytes. 3.11+ (keys_size 0): u8
	 * dk_log2_size, u8 dk_log2_index_bytes, u8 dk_kind (0 general:
	 * {hash, key, value}; 1 unicode, 2 split: {key, value}, 16 bytes);
	 * entries after 1 << dk_log2_index_bytes bytes of indices.
	 */
	unsigned int keys_size;	     /* dk_size (< 3.11), else 0 */
	unsigned int keys_log2_size; /* dk_log2_size (3.11+), else 0 */
	unsigned int keys_log2_index_bytes;
	unsigned int keys_kind;
	unsigned int keys_nentries; /* dk_nentries: entries used (live or deleted) */
	unsigned int keys_indices;  /* dk_indices: also the header's size */
	/* PyDictValues: values[0] at values_items (3.13 puts a header
	 * {u8 capacity, size, embedded, valid} first) */
	unsigned int values_items;
	bool values_header; /* 3.13: capacity at +0, valid at +3 */
	/* Where instances of a type with a managed dict keep it
	 * (Py_TPFLAGS_MANAGED_DICT, 3.11+): relative to the object. */
	enum pt_py_idict {
		PT_PY_IDICT_OFFSET = 0, /* < 3.11: only tp_dictoffset > 0 */
		PT_PY_IDICT_VALUES,	/* 3.11: PyDictValues * at managed_values,
					 * else the dict * at managed_dict */
		PT_PY_IDICT_TAGGED,	/* 3.12: one word at managed_dict: low bit
					 * set: values pointer - 1, else the dict */
		PT_PY_IDICT_INLINE,	/* 3.13: with Py_TPFLAGS_INLINE_VALUES the
					 * PyDictValues at obj + tp_basicsize (used
					 * while valid), else the dict * at managed_dict */
	} idict;
	int managed_dict;	    /* -24 (3.11+), 0 */
	int managed_values;	    /* -32 (3.11), 0 */
	uint64_t tpf_managed_dict;  /* Py_TPFLAGS_MANAGED_DICT (1 << 4, 3.11+), 0 */
	uint64_t tpf_inline_values; /* Py_TPFLAGS_INLINE_VALUES (1 << 2, 3.13), 0 */
};

/* What the BPF programs read (bpf/proftrace.h), from L: the one place
 * where a layout becomes BPF's offsets. */
void pt_py_layout__offsets(const struct pt_py_layout *L, struct pt_py_offsets *o);

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
