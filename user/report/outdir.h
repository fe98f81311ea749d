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
 *
 * The path is walked one folder at a time from / (or the current folder),
 * each opened without following a link (O_NOFOLLOW), as systemd's chase()
 * does: a link in it is followed only when root or the user who ran us
 * through sudo made it; anyone else's could have been planted in a
 * world-writable folder on the way to send root's files elsewhere, and is
 * refused with whose it is. What proftrace creates is private (folders
 * 0700, files 0600: profiles hold source lines, argument values, paths)
 * and, under sudo, the invoking user's (SUDO_UID, SUDO_GID).
 */
#ifndef PT_OUTDIR_H
#define PT_OUTDIR_H

#include <stddef.h>
#include <stdio.h>

struct pt_outdir;

/*
 * path: the folder to write into. Missing folders are created (mode
 * 0700); an existing one must be a directory, not a symbolic link, and
 * writable (a test file is created and removed); a link on the way to it
 * must be root's or the invoking user's (-ELOOP, said, otherwise). unique: path names a new
 * run folder (the default proftrace_out/<comm>-<pid>-<time>): when it
 * exists, "-2", "-3", ... are appended, so an earlier run is never mixed
 * in. 0, or -errno with one line in err.
 */
int pt_outdir__open(struct pt_outdir **out, const char *path, int unique, char *err, size_t errlen);
/* A new folder of our own (base-XXXXXX, 0700) under $TMPDIR, /var/tmp, /tmp
 * or /dev/shm, the first that works, walked as above. */
int pt_outdir__fallback(struct pt_outdir **out, const char *base, char *err, size_t errlen);
void pt_outdir__close(struct pt_outdir *d);
/* The folder as given (or made unique). */
const char *pt_outdir__path(const struct pt_outdir *d);

/* Write name in the folder through write(f, ctx): temporary file (0600),
 * then rename. 0, or -errno (nothing left behind) with one line in err;
 * the cause of a failed write (ENOSPC) even when write() saw only
 * ferror() and said -EIO. */
int pt_outdir__write(struct pt_outdir *d, const char *name, int (*write)(FILE *f, const void *ctx),
		     const void *ctx, char *err, size_t errlen);

#endif
