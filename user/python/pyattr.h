/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One attribute of a Python object, read from outside (`arg:req.num_tokens`).
 *
 * Two halves, as BPF will use them:
 *  - pt_pyattr__resolve(), in user space, once per (type, name): follows
 *    Python's own lookup order (data descriptors in the MRO, then the
 *    instance dict, then the rest of the MRO) to find where instances of
 *    the type keep the attribute, and fills a struct pt_pyattr_loc (fixed
 *    size, fixed-width fields: a BPF map value).
 *  - pt_pyattr__read(), the reference read path: a fixed, short sequence
 *    of small reads with every loop bounded by a constant, no allocation,
 *    no string comparison, no recursion; bpf/ ports it line by line.
 *
 * Everything read is untrusted: sizes and log2 values are checked,
 * indices bounded, loops never run on a count read from the target.
 * docs/pyattr-notes.md has the per-version facts this relies on.
 */
#ifndef PT_PYATTR_H
#define PT_PYATTR_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"
#include "pycode.h"
#include "pylayout.h"

/* struct pt_pyattr_loc, its kinds and flags: bpf/proftrace.h (a BPF map
 * value). */

/* Outcome of a read (pt_pyattr__read()). */
enum pt_pyattr_status {
	PT_PYATTR_OK = 0,  /* *value is the attribute's object */
	PT_PYATTR_UNSET,   /* slot empty: AttributeError */
	PT_PYATTR_NONE,	   /* T_OBJECT member empty: Python reads None */
	PT_PYATTR_MISSING, /* not in the instance (no dict, or not in it): AttributeError */
	PT_PYATTR_CLASS,   /* not in the instance: the class's attribute applies
			    * (a method, a class variable); not read */
	PT_PYATTR_GETATTR, /* not in the instance: __getattr__ decides */
	PT_PYATTR_FAULT,   /* a read failed (freed, unmapped, NULL) */
	PT_PYATTR_NOTDICT, /* the dict pointer's object is not an exact dict */
	PT_PYATTR_CORRUPT, /* implausible dict keys: sizes, kind, an index */
	PT_PYATTR_KEYCMP,  /* a key with the name's hash that is another object
			    * (a str that is not interned): equality not decided */
	PT_PYATTR_PROBES,  /* PT_PYATTR_PROBE_MAX probes gave no answer */
	PT_PYATTR_BADLOC,  /* loc is not usable */
	PT_PYATTR_NSTATUS
};

/* Bounds. The read path's only loop is the dict probe: a dict is at
 * most 2/3 full, so 32 probes fail for about 1 lookup in 2^18 with
 * uniform hashes; the failure is PT_PYATTR_PROBES, never a guess. */
/* PT_PYATTR_PROBE_MAX (32) and PT_PYATTR_LOG2_MAX (30): bpf/proftrace.h */
/* Reads of one pt_pyattr__read(), at most: locating the dict (4: 3.13's
 * valid byte, the dict pointer, the dict, its values' header), the keys
 * header, the shared-index check, per probe the index, the entry and a
 * colliding key's hash, the value. */
#define PT_PYATTR_READS_MAX (4 + 1 + 1 + 3 * PT_PYATTR_PROBE_MAX + 1)
#define PT_PYATTR_MRO_MAX 32	/* resolve: types in an MRO */
#define PT_PYATTR_SCAN_MAX 4096 /* resolve: entries of one dict, items of one tuple */
#define PT_PYATTR_NAME_MAX 255	/* attribute names (ASCII) */

/*
 * Where instances of the type at type_addr keep attribute `name` (ASCII).
 * 0 with *loc filled and a one-line description in why. Else why says
 * what, on one line, and:
 *  -EOPNOTSUPP  not readable: a property or other data descriptor that is
 *               not an object member (computed, not stored), a member of
 *               a C type, a custom __getattribute__ or C tp_getattro, a
 *               var-sized object's dict (tp_dictoffset < 0), a class
 *               attribute of a type whose instances have no dict
 *  -ENOENT      instances cannot have it: no such member and no dict
 *  -EAGAIN      instances have a dict but no interned str `name` was
 *               found yet (not a class attribute, not in the shared keys,
 *               not named in the code of the class's functions): retry
 *               later, or use pt_pyattr__resolve_obj() with an instance
 *  -EINVAL      a bad name, or implausible type data
 *  -E2BIG       gave up: over 200000 reads (a huge or looping type)
 *  -EFAULT, -errno  memory could not be read
 */
int pt_pyattr__resolve(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t type_addr,
		       const char *name, struct pt_pyattr_loc *loc, char *why, size_t whylen);

/*
 * The same for the type of the object at obj; when the type alone gives
 * no key (-EAGAIN), the instance's own dict is searched for it.
 */
int pt_pyattr__resolve_obj(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t obj,
			   const char *name, struct pt_pyattr_loc *loc, char *why, size_t whylen);

/*
 * The read path: the attribute of the object at obj (whose ob_type the
 * caller found to be loc->type). PT_PYATTR_OK with *value the attribute's
 * object address, else the status why not (*value 0).
 */
enum pt_pyattr_status pt_pyattr__read(const struct pt_tmem *m, const struct pt_py_layout *L,
				      const struct pt_pyattr_loc *loc, uint64_t obj,
				      uint64_t *value);

/* "ok", "unset", "missing", ... */
const char *pt_pyattr__status_str(enum pt_pyattr_status st);

/*
 * Reads of objects that are not attributes (sys.modules, a module's
 * globals, an int: python/pythreads.c), with the same care: exact
 * builtin types checked, every loop bounded by max or a constant, and
 * -E2BIG past a read budget.
 *
 * pt_pyattr__dict_get: the value of the str key `name` (1-255 ASCII
 * characters, compared by content: no hash needed) among the first max
 * entries of the exact dict at dict. 1 with *value; 0 when absent;
 * -EINVAL when dict is no dict or its keys are implausible; -EFAULT.
 */
int pt_pyattr__dict_get(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t dict,
			const char *name, size_t max, uint64_t *value);

/* The values of the exact dict at dict (combined or split), in entry
 * order, at most max: 0 with *n of them in values[]; errors as above. */
int pt_pyattr__dict_values(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t dict,
			   uint64_t *values, size_t max, size_t *n);

/* The exact int at obj, when it fits in 62 bits: 0 with *v; -EINVAL when
 * obj is no int (None, a subclass) or larger; -EFAULT. */
int pt_pyattr__int(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t obj, int64_t *v);

#endif
