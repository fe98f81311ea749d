/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The output folder, safe for a tool that runs as root: it is created (or
 * checked) before anything is attached and held open, every file is
 * written relative to it (openat), to a new temporary file (O_CREAT |
 * O_EXCL | O_NOFOLLOW: never through a planted link, never into someone
 * else's file) that is renamed over its name once complete, so each output
 * appears whole or not at all. When a write still fails (disk full, folder
 * removed) pt_outdir__fallback() gives a fresh private folder elsewhere:
 * a profile that was taken is always written somewhere.
 */
#ifndef PT_OUTDIR_H
#define PT_OUTDIR_H

#include <stddef.h>
#include <stdio.h>

struct pt_outdir;

/*
 * path: the folder to write into. Missing folders are created (mode
 * 0755); an existing one must be a directory, not a symbolic link, and
 * writable (a test file is created and removed). unique: path names a new
 * run folder (the default proftrace_out/<comm>-<pid>-<time>): when it
 * exists, "-2", "-3", ... are appended, so an earlier run is never mixed
 * in. 0, or -errno with one line in err.
 */
int pt_outdir__open(struct pt_outdir **out, const char *path, int unique, char *err, size_t errlen);
/* A new folder of our own (mkdtemp, 0700) under $TMPDIR, /var/tmp, /tmp or
 * /dev/shm, the first that works, named after base. */
int pt_outdir__fallback(struct pt_outdir **out, const char *base, char *err, size_t errlen);
void pt_outdir__close(struct pt_outdir *d);
/* The folder as given (or made unique). */
const char *pt_outdir__path(const struct pt_outdir *d);

/* Write name in the folder through write(f, ctx): temporary file, then
 * rename. 0, or -errno (nothing left behind) with one line in err. */
int pt_outdir__write(struct pt_outdir *d, const char *name, int (*write)(FILE *f, const void *ctx),
		     const void *ctx, char *err, size_t errlen);

#endif
