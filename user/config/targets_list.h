/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The bundled targets files (the *.conf in targets/): where they are installed,
 * what each one is for (`proftrace --list-targets`), and `--targets NAME`
 * as a short name for one of them (`--targets vllm`).
 *
 * A bundled file describes itself in its first comment line:
 *   # <name>.conf: <one-line description>
 * The "<name>.conf:" prefix is dropped from the description when present.
 */
#ifndef PT_TARGETS_LIST_H
#define PT_TARGETS_LIST_H

#include <stddef.h>
#include <stdio.h>

/* Environment variable that overrides where the bundled files are. */
#define PT_TARGETS_DIR_ENV "PROFTRACE_TARGETS_DIR"

/*
 * The directory of the bundled files: $PROFTRACE_TARGETS_DIR when set and
 * not empty, else the first existing directory of <exe dir>/targets (build
 * tree), <exe dir>/../share/proftrace/targets (install) and
 * <exe dir>/../targets (a binary built in a subdirectory of the tree, as
 * `make asan` does), where <exe dir> is the directory of /proc/self/exe.
 * 0, or -ENOENT when none exists (buf then holds the first candidate, for
 * messages), -ENAMETOOLONG, or -errno of readlink.
 */
int pt_targets__dir(char *buf, size_t len);

/*
 * Print one line per bundled file of dir (NULL: pt_targets__dir()) to out,
 * sorted by name: the name without ".conf", padded, then its description
 * ("(no description)" when the first non-blank line is not a comment).
 * Only regular files named *.conf count; names starting with '.' do not.
 * Returns the number of files listed, or -errno when the directory cannot
 * be read (a one-line message with a hint is then printed to stderr).
 */
int pt_targets__list(const char *dir, FILE *out);

/*
 * The description of one file (first comment line, see above) into buf.
 * 0, -ENODATA when the file has none, -errno when it cannot be read.
 */
int pt_targets__describe(const char *path, char *buf, size_t len);

/*
 * `--targets NAME`: when name is not an existing file, has no '/', and
 * dir/NAME.conf (or dir/NAME, when NAME already ends in ".conf") is a
 * bundled file, its path goes to buf and 1 is returned. 0: use name as
 * given (it exists, is a path, or names no bundled file; the config loader
 * reports a missing file). -ENAMETOOLONG when the path does not fit.
 * dir NULL: pt_targets__dir().
 */
int pt_targets__resolve_in(const char *dir, const char *name, char *buf, size_t len);
int pt_targets__resolve(const char *name, char *buf, size_t len);

#endif
