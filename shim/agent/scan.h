/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Finding the code objects a targets file may name, in a live interpreter:
 * the modules of sys.modules whose file matches a py: probe's module, and
 * in them every function, method (static, class, property accessors),
 * nested function and lambda (through co_consts), and the functions that
 * decorators wrap (functools.wraps' __wrapped__, a closure's cells,
 * lru_cache, partial), whose co_name matches the probe's name glob. These
 * are candidates only: proftrace reads each one itself and decides.
 *
 * Nothing here runs Python code: module and class namespaces are read as
 * dicts, attributes only of builtin types (function, code, staticmethod,
 * classmethod, property, partial, lru_cache wrapper), so a module's
 * __getattr__ or a metaclass never runs. Call with the GIL held.
 */
#ifndef PTAG_SCAN_H
#define PTAG_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "pyapi.h"

struct ptag_spec {
	const char *path; /* module as a path: "vllm/v1/engine/core" */
	const char *glob; /* the function or method name glob */
};

/* A function object found whose code object is a candidate. */
struct ptag_fn {
	PyObject *func; /* references held on both */
	PyObject *code;
};

struct ptag_scan {
	const struct pt_pyapi *api;
	uint32_t type_dict, type_flags; /* PyTypeObject offsets */
	const struct ptag_spec *specs;
	uint32_t nspecs;
	/* out: candidates, a reference held on each */
	PyObject **out;
	uint32_t cap, n, dropped;
	uint64_t modules; /* modules walked */
	/* out, when fns_cap: the function objects of the candidates (a
	 * function's code seen through unwrap first, when set: our own
	 * wrapper stands for the code it wraps) */
	struct ptag_fn *fns;
	uint32_t fns_cap, nfns;
	PyObject *(*unwrap)(void *ctx, PyObject *code);
	void *unwrap_ctx;
	/* out, when near is set: every code object of a module walked for a
	 * probe whose name glob has matched nothing so far (the names that
	 * are there, for proftrace to suggest), a reference held on each */
	PyObject **near;
	uint32_t near_cap, nnear, near_dropped;
	/* private */
	uint64_t *seen;
	uint32_t seen_mask, seen_n;
	void *partial_type, *lru_type;
	bool *match;	/* per spec: the module being walked matches it */
	bool *found;	/* per spec: some module walked matched it */
	uint32_t *hits; /* per spec: candidates its glob matched */
	PyObject **mod; /* the code objects of the module being walked */
	uint32_t nmod, mod_cap;
};

/* Was spec i's module walked (is it in sys.modules)? */
bool ptag_scan__found(const struct ptag_scan *s, uint32_t i);

/* Has every probe's module been walked? (Else imports are watched.) */
bool ptag_scan__all_found(const struct ptag_scan *s);

/* Walk sys.modules. 0, or -ENOMEM (what was found so far is kept). */
int ptag_scan__run(struct ptag_scan *s);
/* Walk one module (a new import): candidates are added to out[], after
 * those found before (an object already seen is not found twice). */
int ptag_scan__module(struct ptag_scan *s, PyObject *module);
/* Drop the references and the private tables. */
void ptag_scan__free(struct ptag_scan *s);

/* Does the file name a module of path ("a/b/c": .../a/b/c.py,
 * .../a/b/c/__init__.py, or the same .pyc)? At a '/' boundary, as
 * proftrace matches co_filename. Pure: unit-tested. */
bool ptag_scan__file_matches(const char *file, const char *path);

#endif
