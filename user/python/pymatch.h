/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Does a Python code object (its file and qualified name) fall under a
 * py: probe? Pure string logic, unit-tested.
 *
 *   py:a.b.c.Class.method   co_filename ends in a/b/c.py or a/b/c/__init__.py
 *                           (at a '/' or the start), and the qualname is
 *                           <Class>.<method>: everything before its last
 *                           dot matches the class glob ("Outer.Inner" for
 *                           a nested class: py:a.b.c.*Inner.m), the last
 *                           part the method
 *   py:a.b.c::func          same file, a module-level function: the
 *                           qualname has no dot
 *   py:a.b.c.func           (written with dots only) both: method func of
 *                           class c in module a.b, and function func of
 *                           module a.b.c (its alt_object); py:m.func (one
 *                           dot) is function func of module m
 *
 * Functions local to other functions ("f.<locals>.g") and anonymous code
 * (<lambda>, <genexpr>, comprehensions) are matched only by globs that
 * name them ('<' in the pattern), so wildcards select what a user means.
 */
#ifndef PT_PYMATCH_H
#define PT_PYMATCH_H

#include <stdbool.h>

#include "config/config.h"

/* The file part only: cheap, checked before a qualname is worked out
 * (either reading's file). */
bool pt_pymatch__file(const struct pt_probe_spec *s, const char *filename);
/* The name under the probe's first reading (its module, class, name). */
bool pt_pymatch__name(const struct pt_probe_spec *s, const char *qualname);

/* Which readings of s a code object (its file, qualname) falls under:
 * PT_PYMATCH_FIRST (module, class and name as written) | PT_PYMATCH_ALT
 * (function of module alt_object), 0: none. */
enum { PT_PYMATCH_FIRST = 1, PT_PYMATCH_ALT = 2 };
unsigned int pt_pymatch__code(const struct pt_probe_spec *s, const char *filename,
			      const char *qualname);

#endif
