/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A shared-memory segment one of our helpers made inside a traced process
 * (the CUPTI shim's ring, the Python agent's control page): a sealed memfd
 * of a known name (shim/memseg.h), found among the target's open files
 * (/proc/PID/fd) and reopened there. Nothing in the file system holds its
 * name, so no other user can squat it, and it goes with the process.
 * Checked (a plain memory file of the target's user, sealed against
 * resizing, a size in range, not a parent's held across fork) and mapped
 * shared. Its content is the target's: the caller validates every byte it
 * reads. The mapping is guarded all the same (util/sigbus.h), and
 * pt_segment__lost() says when a fault was turned into zeros.
 */
#ifndef PT_SEGMENT_H
#define PT_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>

struct pt_segment {
	int fd;
	void *map;
	size_t len;
	int guard; /* util/sigbus.h id, -1: none */
	bool lost;
	char path[176];
};

/* Which helper's segment to look for. */
struct pt_segment_kind {
	const char *name;  /* the memfd's name */
	const char *magic; /* what its header starts with once published */
	size_t magic_len;
	size_t pid_off;	  /* a u32: the helper's getpid() in its namespace */
	size_t min, max;  /* its size */
	const char *what; /* "Python agent", for messages */
	const char *hint; /* what to do when there is none */
};

/*
 * 0; -ENOENT (none; or only a parent's, held across fork: err says which
 * and what to start the target with, from k->hint), -EPERM (a memfd of
 * that name that is not a helper's: of another user, never to be sealed;
 * err says what), -EAGAIN (one not sealed yet: a helper between making
 * and sealing it; look again), -errno (the process is gone, or
 * /proc/PID/fd is closed to us).
 * A segment whose helper has not published its header yet is returned:
 * the caller reads the magic.
 */
int pt_segment__open(struct pt_segment *s, int pid, const struct pt_segment_kind *k, char *err,
		     size_t errlen);
/*
 * After --inject loaded a helper: its thread makes the segment, then seals
 * and publishes it; until it has, it may be missing, unsealed or
 * unpublished. open(ctx, why, len) is tried every 10 ms for up to ms: its
 * last result; at once on success, -ENOMEM, or -EPERM (a memfd of the
 * helper's name that is not its does not go away by waiting).
 */
int pt_segment__wait(int (*open)(void *ctx, char *why, size_t len), void *ctx, unsigned int ms,
		     char *why, size_t len);
/* A fault in its mapping was turned into zeros, or it is shorter than the
 * mapping now (neither can happen to a sealed segment): stop using it.
 * Once true, stays true. */
bool pt_segment__lost(struct pt_segment *s);
void pt_segment__close(struct pt_segment *s);

#endif
