// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pylayout.h"
#include "util/util.h"

/* Offsets the same on 3.8-3.14 (gdb ptype/o): PyTypeObject, descriptors,
 * str hash, tuple size, PyDictObject. */
#define TYPE_ATTR_COMMON                                                                           \
	.type_name = 24, .type_basicsize = 32, .type_itemsize = 40, .type_getattro = 144,          \
	.type_flags = 168, .type_methods = 232, .type_members = 240, .type_getset = 248,           \
	.type_dict = 264, .type_descr_set = 280, .type_dictoffset = 288, .type_mro = 344,          \
	.descr_type = 16, .descr_member = 40, .str_hash = 24, .tuple_size = 16, .dict_keys = 32,   \
	.dict_values = 40
/* PyDictKeysObject < 3.11: dk_refcnt, dk_size, dk_lookup, dk_usable,
 * dk_nentries, dk_indices */
#define KEYS_V1 .keys_size = 8, .keys_nentries = 32, .keys_indices = 40
/* 3.11+: dk_refcnt, u8 dk_log2_size, u8 dk_log2_index_bytes, u8 dk_kind,
 * u32 dk_version, dk_usable, dk_nentries, dk_indices */
#define KEYS_V2                                                                                    \
	.keys_log2_size = 8, .keys_log2_index_bytes = 9, .keys_kind = 10, .keys_nentries = 24,     \
	.keys_indices = 32

/* Byte offsets on x86-64; see tests/fixtures/cpython/offsets-x86_64.txt.
 * eval_frame: gdb `&((PyInterpreterState *)0)->eval_frame` (3.8.18: 568,
 * 3.9.18: 1400, ..., 3.14.7: 8520): the perf trampoline check (3.12+) and
 * the agent's frame evaluator on 3.8 (no setter there). interp_modules:
 * gdb `&((PyInterpreterState *)0)->modules` (imports.modules 3.12+) on
 * the pyenv builds; 3.14's is not known here (0).
 * Attribute fields: docs/pyattr-notes.md. */
/* clang-format off */
static const struct pt_py_layout layouts[] = {
	{ .minor = 8, .frame_arg = 1, .frame_code = 32, .code_filename = 104, .code_name = 112,
	  .code_firstlineno = 40, .code_flags = 36, .ob_type = 8, .str_length = 16, .str_state = 32,
	  .code_linetable = 120, .bytes_size = 16, .bytes_sval = 32,
	  .ascii_size = 48, .compact_size = 72, .runtime_interp_head = 32,
	  .interp_eval_frame = 568, .interp_modules = 56, .evalframe_all_calls = true,
	  .interp_tstate_head = 8, .tstate_next = 8, .tstate_thread_id = 176, .tstate_frame = 24,
	  .cframe_frame = -1, .frame_back = 24, .frame_lasti = 104, .owner_cstack = 256,
	  .frame_size = 112,
	  .frame_localsplus = 360, .code_varnames = 72, .long_tag = false,
	  TYPE_ATTR_COMMON, .tuple_item = 24,
	  KEYS_V1, .ht_cached_keys = 872, .func_code = 16, .code_names = 64,
	  .code_consts = 56, .idict = PT_PY_IDICT_OFFSET },
	{ .minor = 9, .frame_arg = 2, .frame_code = 32, .code_filename = 104, .code_name = 112,
	  .code_firstlineno = 40, .code_flags = 36, .ob_type = 8, .str_length = 16, .str_state = 32,
	  .code_linetable = 120, .bytes_size = 16, .bytes_sval = 32,
	  .ascii_size = 48, .compact_size = 72, .runtime_interp_head = 32,
	  .interp_eval_frame = 1400, .interp_modules = 856, .evalframe_all_calls = true,
	  .interp_tstate_head = 8, .tstate_next = 8, .tstate_thread_id = 176, .tstate_frame = 24,
	  .cframe_frame = -1, .frame_back = 24, .frame_lasti = 104, .owner_cstack = 256,
	  .frame_size = 112,
	  .frame_localsplus = 360, .code_varnames = 72, .long_tag = false,
	  TYPE_ATTR_COMMON, .tuple_item = 24,
	  KEYS_V1, .ht_cached_keys = 864, .func_code = 16, .code_names = 64,
	  .code_consts = 56, .idict = PT_PY_IDICT_OFFSET },
	{ .minor = 10, .frame_arg = 2, .frame_code = 32, .code_filename = 104, .code_name = 112,
	  .code_firstlineno = 40, .code_flags = 36, .ob_type = 8, .str_length = 16, .str_state = 32,
	  .code_linetable = 120, .bytes_size = 16, .bytes_sval = 32,
	  .ascii_size = 48, .compact_size = 72, .runtime_interp_head = 32,
	  .interp_eval_frame = 1368, .interp_modules = 856, .evalframe_all_calls = true,
	  .interp_tstate_head = 8, .tstate_next = 8, .tstate_thread_id = 176, .tstate_frame = 24,
	  .cframe_frame = -1, .frame_back = 24, .frame_lasti = 96, .owner_cstack = 256,
	  .frame_size = 104,
	  .frame_localsplus = 352, .code_varnames = 72, .long_tag = false,
	  TYPE_ATTR_COMMON, .tuple_item = 24,
	  KEYS_V1, .ht_cached_keys = 872, .func_code = 48, .code_names = 64,
	  .code_consts = 56, .idict = PT_PY_IDICT_OFFSET },
	{ .minor = 11, .frame_arg = 2, .frame_code = 32, .code_filename = 112, .code_name = 120,
	  .code_qualname = 128, .code_firstlineno = 72, .code_flags = 48, .gen_frames = true,
	  .code_linetable = 136, .bytes_size = 16, .bytes_sval = 32,
	  .code_adaptive = 184, .frame_ip = 56, .gen_new_lim = 0, .ob_type = 8, .str_length = 16,
	  .str_state = 32, .ascii_size = 48, .compact_size = 72, .runtime_interp_head = 40,
	  .interp_eval_frame = 1424, .interp_modules = 888,
	  .interp_tstate_head = 16, .tstate_next = 8, .tstate_thread_id = 152, .tstate_frame = 56,
	  .cframe_frame = 8, .frame_back = 48, .frame_owner = 69, .owner_cstack = 256,
	  .frame_size = 72,
	  .frame_localsplus = 72, .code_varnames = 96, .long_tag = false,
	  TYPE_ATTR_COMMON, .tuple_item = 24,
	  KEYS_V2, .ht_cached_keys = 872, .func_code = 48, .code_names = 32,
	  .code_consts = 24, .idict = PT_PY_IDICT_VALUES, .managed_dict = -24, .managed_values = -32,
	  .tpf_managed_dict = 1u << 4 },
	{ .minor = 12, .frame_arg = 2, .frame_code = 0, .code_filename = 112, .code_name = 120,
	  .code_qualname = 128, .code_firstlineno = 68, .code_flags = 48, .gen_frames = true,
	  .code_linetable = 136, .bytes_size = 16, .bytes_sval = 32,
	  .code_adaptive = 192, .frame_ip = 56, .gen_new_lim = 0, .ob_type = 8, .str_length = 16,
	  .str_state = 32, .ascii_size = 40, .compact_size = 56, .runtime_interp_head = 40,
	  .interp_eval_frame = 1744, .interp_modules = 944,
	  .interp_tstate_head = 72, .tstate_next = 8, .tstate_thread_id = 136, .tstate_frame = 56,
	  .cframe_frame = 0, .frame_back = 8, .frame_owner = 70, .owner_cstack = 3,
	  .frame_size = 72,
	  .frame_localsplus = 72, .code_varnames = 96, .long_tag = true,
	  TYPE_ATTR_COMMON, .tuple_item = 24,
	  KEYS_V2, .ht_cached_keys = 880, .func_code = 48, .code_names = 32,
	  .code_consts = 24, .idict = PT_PY_IDICT_TAGGED, .managed_dict = -24,
	  .tpf_managed_dict = 1u << 4 },
	{ .minor = 13, .frame_arg = 2, .frame_code = 0, .code_filename = 112, .code_name = 120,
	  .code_qualname = 128, .code_firstlineno = 68, .code_flags = 48, .gen_frames = true,
	  .code_linetable = 136, .bytes_size = 16, .bytes_sval = 32,
	  .code_adaptive = 200, .frame_ip = 56, .gen_new_lim = 1, .ob_type = 8, .str_length = 16,
	  .str_state = 32, .ascii_size = 40, .compact_size = 56, .runtime_interp_head = 632,
	  .interp_eval_frame = 8472, .interp_modules = 7656,
	  .interp_tstate_head = 7344, .tstate_next = 8, .tstate_thread_id = 152, .tstate_frame = 72,
	  .cframe_frame = -1, .frame_back = 8, .frame_owner = 70, .owner_cstack = 3,
	  .frame_size = 72,
	  .frame_localsplus = 72, .code_varnames = 96, .long_tag = true,
	  TYPE_ATTR_COMMON, .tuple_item = 24,
	  KEYS_V2, .ht_cached_keys = 880, .func_code = 48, .code_names = 32,
	  .code_consts = 24, .values_items = 8, .values_header = true, .idict = PT_PY_IDICT_INLINE,
	  .managed_dict = -24, .tpf_managed_dict = 1u << 4, .tpf_inline_values = 1u << 2 },
	/* 3.14: from its _Py_DebugOffsets and gdb on a 3.14.7 build (owner 3
	 * is the interpreter's entry frame, 4 a C-stack one: both skipped) */
	{ .minor = 14, .frame_arg = 2, .frame_code = 0, .stackref_tag = 3, .code_filename = 112,
	  .code_name = 120, .code_qualname = 128, .code_firstlineno = 68, .code_flags = 48,
	  .gen_frames = true, .code_linetable = 136, .bytes_size = 16, .bytes_sval = 32,
	  .code_adaptive = 208, .frame_ip = 56, .gen_new_lim = 1, .ob_type = 8, .str_length = 16,
	  .str_state = 32, .ascii_size = 40, .compact_size = 56, .runtime_interp_head = 808,
	  .interp_eval_frame = 8520,
	  .interp_tstate_head = 7344, .tstate_next = 8, .tstate_thread_id = 152, .tstate_frame = 72,
	  .cframe_frame = -1, .frame_back = 8, .frame_owner = 74, .owner_cstack = 3,
	  .frame_size = 80,
	  .frame_localsplus = 80, .code_varnames = 96, .long_tag = true,
	  TYPE_ATTR_COMMON, .tuple_item = 32,
	  KEYS_V2, .ht_cached_keys = 880, .func_code = 48, .code_names = 32,
	  .code_consts = 24, .values_items = 8, .values_header = true, .idict = PT_PY_IDICT_INLINE,
	  .managed_dict = -24, .tpf_managed_dict = 1u << 4, .tpf_inline_values = 1u << 2 },
};
/* clang-format on */

const struct pt_py_layout *pt_py_layout__get(unsigned int minor)
{
	for (size_t i = 0; i < ARRAY_SIZE(layouts); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* _Py_DebugOffsets of 3.13 as 8-byte words (gdb `ptype/o`, 3.13.0). */
enum {
	DO_VERSION = 1,
	DO_FREE_THREADED = 2,
	DO_RUNTIME_SIZE = 3,
	DO_RUNTIME_INTERP_HEAD = 5,
	DO_INTERP_SIZE = 6,
	DO_INTERP_THREADS_HEAD = 9,
	DO_INTERP_IMPORTS_MODULES = 11,
	DO_TSTATE_SIZE = 19,
	DO_TSTATE_NEXT = 21,
	DO_TSTATE_CURRENT_FRAME = 23,
	DO_TSTATE_THREAD_ID = 24,
	DO_FRAME_SIZE = 28,
	DO_FRAME_PREVIOUS = 29,
	DO_FRAME_EXECUTABLE = 30,
	DO_FRAME_INSTR_PTR = 31,
	DO_FRAME_LOCALSPLUS = 32,
	DO_FRAME_OWNER = 33,
	DO_CODE_SIZE = 34,
	DO_CODE_FILENAME = 35,
	DO_CODE_NAME = 36,
	DO_CODE_QUALNAME = 37,
	DO_CODE_LINETABLE = 38,
	DO_CODE_FIRSTLINENO = 39,
	DO_CODE_LOCALSPLUSNAMES = 41,
	DO_CODE_ADAPTIVE = 43,
	DO_PYOBJECT_OB_TYPE = 45,
	DO_TYPE_SIZE = 46,
	DO_TYPE_TP_NAME = 47,
	DO_TYPE_TP_FLAGS = 49,
	DO_TUPLE_SIZE = 50,
	DO_TUPLE_OB_ITEM = 51,
	DO_TUPLE_OB_SIZE = 52,
	DO_DICT_SIZE = 56,
	DO_DICT_MA_KEYS = 57,
	DO_DICT_MA_VALUES = 58,
	DO_BYTES_SIZE = 64,
	DO_BYTES_OB_SIZE = 65,
	DO_BYTES_OB_SVAL = 66,
	DO_UNICODE_STATE = 68,
	DO_UNICODE_LENGTH = 69,
	DO_UNICODE_ASCII_SIZE = 70,
	DO_NWORDS = 73,
};

/* [off, off + width) inside a struct of size bytes */
static bool fits(uint64_t off, uint64_t width, uint64_t size)
{
	return width <= size && off <= size - width;
}

int pt_py_layout__from_debug_offsets(struct pt_py_layout *L, const void *buf, size_t len,
				     uint32_t *hexversion, char *err, size_t errlen)
{
	uint64_t w[DO_NWORDS];
	const struct pt_py_layout *row;

	if (len < sizeof(w)) {
		snprintf(err, errlen, "_Py_DebugOffsets: %zu bytes, want %zu", len, sizeof(w));
		return -EINVAL;
	}
	memcpy(w, buf, sizeof(w));
	if (memcmp(buf, "xdebugpy", 8) != 0) {
		snprintf(err, errlen, "_PyRuntime does not start with the \"xdebugpy\" cookie");
		return -EINVAL;
	}
	*hexversion = (uint32_t)w[DO_VERSION];
	if ((w[DO_VERSION] >> 16) != 0x030d) {
		snprintf(err, errlen,
			 "_Py_DebugOffsets of version 0x%llx: only 3.13's layout is known",
			 (unsigned long long)w[DO_VERSION]);
		return -EINVAL;
	}
	if (w[DO_FREE_THREADED]) {
		snprintf(err, errlen, "free-threaded (no-GIL) builds are not supported");
		return -EINVAL;
	}
	/* Each offset must leave room for what is read there (compared
	 * without overflow: the words come from the target). */
	if (w[DO_RUNTIME_SIZE] > (1u << 24) || w[DO_CODE_SIZE] > 4096 || w[DO_FRAME_SIZE] > 4096 ||
	    !fits(w[DO_RUNTIME_INTERP_HEAD], 8, w[DO_RUNTIME_SIZE]) ||
	    !fits(w[DO_FRAME_EXECUTABLE], 8, w[DO_FRAME_SIZE]) ||
	    !fits(w[DO_FRAME_INSTR_PTR], 8, w[DO_FRAME_SIZE]) ||
	    !fits(w[DO_CODE_FILENAME], 16, w[DO_CODE_SIZE]) ||
	    w[DO_CODE_NAME] != w[DO_CODE_FILENAME] + 8 ||
	    !fits(w[DO_CODE_QUALNAME], 8, w[DO_CODE_SIZE]) ||
	    !fits(w[DO_CODE_FIRSTLINENO], 4, w[DO_CODE_SIZE]) ||
	    !fits(w[DO_CODE_LINETABLE], 8, w[DO_CODE_SIZE]) || w[DO_BYTES_SIZE] > 4096 ||
	    !fits(w[DO_BYTES_OB_SIZE], 8, w[DO_BYTES_SIZE]) ||
	    !fits(w[DO_BYTES_OB_SVAL], 1, w[DO_BYTES_SIZE]) ||
	    !fits(w[DO_CODE_ADAPTIVE], 0, w[DO_CODE_SIZE]) || w[DO_PYOBJECT_OB_TYPE] != 8 ||
	    w[DO_UNICODE_STATE] > 64 || w[DO_UNICODE_LENGTH] > 64 ||
	    w[DO_UNICODE_ASCII_SIZE] > 64 || w[DO_INTERP_SIZE] > (1u << 24) ||
	    w[DO_TSTATE_SIZE] > 4096 || !fits(w[DO_INTERP_THREADS_HEAD], 8, w[DO_INTERP_SIZE]) ||
	    !fits(w[DO_INTERP_IMPORTS_MODULES], 8, w[DO_INTERP_SIZE]) ||
	    !fits(w[DO_TSTATE_NEXT], 8, w[DO_TSTATE_SIZE]) ||
	    !fits(w[DO_TSTATE_CURRENT_FRAME], 8, w[DO_TSTATE_SIZE]) ||
	    !fits(w[DO_TSTATE_THREAD_ID], 8, w[DO_TSTATE_SIZE]) ||
	    !fits(w[DO_FRAME_PREVIOUS], 8, w[DO_FRAME_SIZE]) ||
	    !fits(w[DO_FRAME_OWNER], 1, w[DO_FRAME_SIZE]) || w[DO_FRAME_OWNER] == 0 ||
	    !fits(w[DO_FRAME_LOCALSPLUS], 0, w[DO_FRAME_SIZE]) ||
	    !fits(w[DO_CODE_LOCALSPLUSNAMES], 8, w[DO_CODE_SIZE]) ||
	    /* what pyattr.c reads of types, tuples and dicts */
	    w[DO_TYPE_SIZE] > 4096 || !fits(w[DO_TYPE_TP_NAME], 8, w[DO_TYPE_SIZE]) ||
	    !fits(w[DO_TYPE_TP_FLAGS], 8, w[DO_TYPE_SIZE]) || w[DO_TUPLE_SIZE] > 4096 ||
	    !fits(w[DO_TUPLE_OB_SIZE], 8, w[DO_TUPLE_SIZE]) ||
	    !fits(w[DO_TUPLE_OB_ITEM], 0, w[DO_TUPLE_SIZE]) || w[DO_DICT_SIZE] > 4096 ||
	    !fits(w[DO_DICT_MA_KEYS], 8, w[DO_DICT_SIZE]) ||
	    !fits(w[DO_DICT_MA_VALUES], 8, w[DO_DICT_SIZE])) {
		snprintf(err, errlen, "_Py_DebugOffsets holds implausible offsets");
		return -EINVAL;
	}
	row = pt_py_layout__get(13);
	*L = *row;
	L->frame_code = (unsigned int)w[DO_FRAME_EXECUTABLE];
	L->code_filename = (unsigned int)w[DO_CODE_FILENAME];
	L->code_name = (unsigned int)w[DO_CODE_NAME];
	L->code_qualname = (unsigned int)w[DO_CODE_QUALNAME];
	L->code_firstlineno = (unsigned int)w[DO_CODE_FIRSTLINENO];
	L->code_linetable = (unsigned int)w[DO_CODE_LINETABLE];
	L->bytes_size = (unsigned int)w[DO_BYTES_OB_SIZE];
	L->bytes_sval = (unsigned int)w[DO_BYTES_OB_SVAL];
	L->frame_ip = (unsigned int)w[DO_FRAME_INSTR_PTR];
	L->code_adaptive = (unsigned int)w[DO_CODE_ADAPTIVE];
	L->str_state = (unsigned int)w[DO_UNICODE_STATE];
	L->str_length = (unsigned int)w[DO_UNICODE_LENGTH];
	L->ascii_size = (unsigned int)w[DO_UNICODE_ASCII_SIZE];
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject. */
	L->compact_size = L->ascii_size + 16;
	L->runtime_interp_head = (unsigned int)w[DO_RUNTIME_INTERP_HEAD];
	L->interp_tstate_head = (unsigned int)w[DO_INTERP_THREADS_HEAD];
	L->interp_modules = (unsigned int)w[DO_INTERP_IMPORTS_MODULES];
	L->tstate_next = (unsigned int)w[DO_TSTATE_NEXT];
	L->tstate_thread_id = (unsigned int)w[DO_TSTATE_THREAD_ID];
	L->tstate_frame = (unsigned int)w[DO_TSTATE_CURRENT_FRAME];
	L->frame_back = (unsigned int)w[DO_FRAME_PREVIOUS];
	L->frame_owner = (unsigned int)w[DO_FRAME_OWNER];
	L->frame_localsplus = (unsigned int)w[DO_FRAME_LOCALSPLUS];
	L->code_varnames = (unsigned int)w[DO_CODE_LOCALSPLUSNAMES];
	/* The rest of PyTypeObject and the dict internals pyattr.c reads
	 * are not in _Py_DebugOffsets: they come from the row (the same
	 * values as these on 3.13.0). */
	L->type_name = (unsigned int)w[DO_TYPE_TP_NAME];
	L->type_flags = (unsigned int)w[DO_TYPE_TP_FLAGS];
	L->tuple_size = (unsigned int)w[DO_TUPLE_OB_SIZE];
	L->tuple_item = (unsigned int)w[DO_TUPLE_OB_ITEM];
	L->dict_keys = (unsigned int)w[DO_DICT_MA_KEYS];
	L->dict_values = (unsigned int)w[DO_DICT_MA_VALUES];
	/* The sampler reads one frame prefix holding every field it uses. */
	L->frame_size = 0;
	if (L->frame_size < L->frame_code + 8)
		L->frame_size = L->frame_code + 8;
	if (L->frame_size < L->frame_back + 8)
		L->frame_size = L->frame_back + 8;
	if (L->frame_size < L->frame_ip + 8)
		L->frame_size = L->frame_ip + 8;
	if (L->frame_size < L->frame_owner + 1)
		L->frame_size = L->frame_owner + 1;
	L->frame_size = (L->frame_size + 7) & ~7u;
	return 0;
}

void pt_py_layout__offsets(const struct pt_py_layout *L, struct pt_py_offsets *o)
{
	*o = (struct pt_py_offsets){
		.minor = L->minor,
		.frame_arg = L->frame_arg,
		.frame_code = L->frame_code,
		.frame_back = L->frame_back,
		.frame_lasti = L->frame_lasti,
		.frame_ip = L->frame_ip,
		.frame_owner = L->frame_owner,
		.owner_cstack = L->owner_cstack,
		.frame_size = L->frame_size,
		.frame_localsplus = L->frame_localsplus,
		.code_mask = ~L->stackref_tag,
		.tuple_item = L->tuple_item,
		.code_filename = L->code_filename,
		.code_firstlineno = L->code_firstlineno,
		.code_flags = L->gen_frames ? L->code_flags : 0,
		.code_adaptive = L->code_adaptive,
		.gen_new_lim = (int32_t)L->gen_new_lim,
		.runtime_interp_head = L->runtime_interp_head,
		.interp_tstate_head = L->interp_tstate_head,
		.tstate_next = L->tstate_next,
		.tstate_thread_id = L->tstate_thread_id,
		.tstate_frame = L->tstate_frame,
		.cframe_frame = L->cframe_frame,
		.type_flags = L->type_flags,
		.long_tag = L->long_tag,
		.str_hash = L->str_hash,
		.dict_keys = L->dict_keys,
		.dict_values = L->dict_values,
		.keys_hdr = L->keys_indices,
		.keys_size = L->keys_size,
		.keys_log2 = L->keys_log2_size,
		.keys_log2ix = L->keys_log2_index_bytes,
		.keys_kind = L->keys_kind,
		.keys_nentries = L->keys_nentries,
		.values_items = L->values_items,
		.values_hdr = L->values_header,
		.managed_dict = L->managed_dict,
		.managed_values = L->managed_values,
	};
}
