/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Qualified names for CPython 3.8-3.10 code objects, which have no
 * co_qualname: recomputed from the module's source text so they read like
 * 3.11+'s ("Class.method", "outer.<locals>.inner", "C.<listcomp>").
 *
 * Pure function over a buffer: the caller reads co_filename itself (and
 * should cache results per code object, each call scans the file from the
 * top). Sources in an encoding other than UTF-8 or ASCII only match names
 * that are ASCII.
 */
#ifndef PT_PYSRC_H
#define PT_PYSRC_H

#include <stddef.h>

/*
 * Qualified name of the code object named co_name whose co_firstlineno is
 * firstlineno, computed from the module source src[0..len) (not necessarily
 * NUL-terminated). Writes a NUL-terminated name to out.
 *
 * co_name is a def/class name, "<lambda>", "<listcomp>", "<setcomp>",
 * "<dictcomp>", "<genexpr>" or "<module>" (always "<module>"). A def or class
 * is matched at its first decorator's line (co_firstlineno since 3.8) or at
 * its def/class line. A lambda or comprehension is matched at the line of its
 * `lambda` keyword or opening bracket; when that line holds several of the
 * same kind, the first one is taken (co_name and co_firstlineno cannot tell
 * them apart, see pysrc.c).
 *
 * Returns 0; -ENOENT when no def/class/lambda/comprehension of that name
 * starts at that line (source changed since import, or not Python);
 * -ENAMETOOLONG when out is too small; -E2BIG when the source nests deeper
 * than CPython itself accepts (100 indentation levels, 200 brackets) before
 * reaching that line; -EINVAL on bad arguments. out is "" on error.
 */
int pt_pysrc__qualname(const char *src, size_t len, unsigned int firstlineno, const char *co_name,
		       char *out, size_t outlen);

#endif
