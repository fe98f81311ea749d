/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A shared-memory segment one of our helpers made inside a traced process
 * (the CUPTI shim's ring, the Python agent's control page):
 * /dev/shm/<prefix><pid as the target sees it>, found through the target's
 * root (containers), opened without following a link, checked (a plain
 * file with one link, owned by the target's user, a size in range, and a
 * live helper still holding its flock), and mapped shared. Its content is
 * the target's: the caller validates every byte it reads. Its size is the
 * target's too: the mapping is guarded (util/sigbus.h), and
 * pt_segment__lost() says when its file was truncated.
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
	char path[128];
};

/*
 * 0; -ENOENT (none: err says what to start the target with, from hint),
 * -ESTALE (left by a process that is gone: pt_segment__sweep() removes
 * it once it is old enough), -EPERM (not the helper's: a link, a FIFO,
 * a file with other links or of another user; err says what and whose),
 * -EPROTO (a size out of [min, max]), -errno.
 */
int pt_segment__open(struct pt_segment *s, int pid, const char *prefix, size_t min, size_t max,
		     const char *what, const char *hint, char *err, size_t errlen);
/* Its file was truncated (a fault was turned into zeros, or it is shorter
 * than the mapping now): stop using it. Once true, stays true. */
bool pt_segment__lost(struct pt_segment *s);
void pt_segment__close(struct pt_segment *s);

/*
 * Remove name in dir (an O_PATH or O_DIRECTORY fd) when it is a segment
 * whose helper is gone: a plain file with one link, no flock held on it,
 * not modified for min_age_s (a helper between creating and locking it is
 * not taken for gone), starting with magic (magic_len bytes), or with
 * zeros or nothing (a helper that died before publishing it, a truncated
 * one). 1: removed, 0: left (live, not ours, too young), -errno.
 */
int pt_segment__remove_stale(int dir, const char *name, const char *magic, size_t magic_len,
			     unsigned int min_age_s);
/* Every stale segment of either helper in dir (/dev/shm): the number
 * removed, or -errno when dir cannot be read. */
int pt_segment__sweep(const char *dir, unsigned int min_age_s);

#endif
