/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A shared-memory segment one of our helpers made inside a traced process
 * (the CUPTI shim's ring, the Python agent's control page):
 * /dev/shm/<prefix><pid as the target sees it>, found through the target's
 * root (containers), opened without following a link, checked (a plain
 * file with one link, owned by the target's user, a size in range, and a
 * live helper still holding its flock), and mapped shared. Its content is
 * the target's: the caller validates every byte it reads.
 */
#ifndef PT_SEGMENT_H
#define PT_SEGMENT_H

#include <stddef.h>

struct pt_segment {
	int fd;
	void *map;
	size_t len;
	char path[128];
};

/*
 * 0; -ENOENT (none: err says what to start the target with, from hint),
 * -ESTALE (left by a process that is gone), -EPERM (not a plain file, or
 * another user's), -EPROTO (a size out of [min, max]), -errno.
 */
int pt_segment__open(struct pt_segment *s, int pid, const char *prefix, size_t min, size_t max,
		     const char *what, const char *hint, char *err, size_t errlen);
void pt_segment__close(struct pt_segment *s);

#endif
