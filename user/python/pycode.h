/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Read a code object and its strings out of a target. The reader is a
 * callback, so tests and the fuzzer feed fixed memory images; everything
 * read is untrusted: types are checked, lengths bounded.
 */
#ifndef PT_PYCODE_H
#define PT_PYCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pylayout.h"

struct pt_tmem {
	/* 0, or -errno when [addr, addr+len) cannot be read entirely */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

/* Interpreter addresses the checks need. */
struct pt_pytypes {
	uint64_t code_type;    /* &PyCode_Type */
	uint64_t unicode_type; /* &PyUnicode_Type */
};

#define PT_PYSTR_MAX 4096 /* longest string read, in code points */

/* co_flags of a function's code (not a module or class body) */
#define PT_CO_OPTIMIZED 0x1
#define PT_CO_NEWLOCALS 0x2

struct pt_pycode {
	uint64_t filename_obj; /* the fingerprint BPF checks: co_filename and */
	uint64_t name_obj;     /* co_name addresses, co_firstlineno */
	uint32_t firstlineno;
	uint32_t flags;	       /* co_flags */
	uint64_t qualname_obj; /* co_qualname's address (3.11+), else 0 */
	bool has_qualname;     /* co_qualname was read (3.11+) */
	char filename[PT_PYSTR_MAX + 1];
	char name[256];
	char qualname[1024];
};

/*
 * Read the code object at addr. 0; -EINVAL when it is not a code object
 * (wrong type: freed and reused, a 3.13 shim frame's Py_None) or a string
 * is malformed; -ENAMETOOLONG when a name does not fit; -EFAULT/-errno
 * when memory cannot be read.
 */
int pt_pycode__read(const struct pt_tmem *m, const struct pt_py_layout *L,
		    const struct pt_pytypes *t, uint64_t addr, struct pt_pycode *out);

/* The same in two halves: the type check and the fixed fields (the
 * fingerprint, flags, string addresses), then the strings. */
int pt_pycode__read_head(const struct pt_tmem *m, const struct pt_py_layout *L,
			 const struct pt_pytypes *t, uint64_t addr, struct pt_pycode *out);
int pt_pycode__read_names(const struct pt_tmem *m, const struct pt_py_layout *L,
			  const struct pt_pytypes *t, struct pt_pycode *c);

/*
 * The code object's line table (co_lnotab < 3.10, co_linetable: decode it
 * with pyline.h) into *tab, malloc()ed, *len bytes; free() it. The code
 * object's type is not checked again (read it with pt_pycode__read_head()
 * first); the bytes object's NUL terminator is, as a sanity check. 0;
 * -E2BIG beyond PT_PYLINETAB_MAX bytes; -EINVAL for a negative size or a
 * missing terminator; -EFAULT/-errno when memory cannot be read; -ENOMEM.
 * On error *tab is NULL and *len 0.
 */
#define PT_PYLINETAB_MAX (1u << 20) /* the stdlib's largest: 84 KiB (3.10 html.entities) */
int pt_pycode__read_linetable(const struct pt_tmem *m, const struct pt_py_layout *L,
			      uint64_t code_addr, uint8_t **tab, size_t *len);

/*
 * Frame slots of names[0..n) (arguments or locals) in the code object at
 * code_addr: slots[k] = its localsplus index, -1 when it has no such name
 * (or names[k] is NULL). 0, -E2BIG for an implausible tuple, -errno when
 * memory cannot be read.
 */
int pt_pycode__slots(const struct pt_tmem *m, const struct pt_py_layout *L,
		     const struct pt_pytypes *t, uint64_t code_addr, const char *const *names,
		     size_t n, int16_t *slots);

/* A str object as UTF-8 (NUL-terminated). Same errors. */
int pt_pystr__read(const struct pt_tmem *m, const struct pt_py_layout *L,
		   const struct pt_pytypes *t, uint64_t addr, char *out, size_t outlen);

#endif
