/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /proc/PID/maps reader. Takes a FILE* so tests feed saved fixtures.
 */
#ifndef PT_MAPS_H
#define PT_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pt_mapping {
	uint64_t start, end, offset;
	uint64_t inode;
	unsigned int dev_major, dev_minor;
	char perms[5]; /* "r-xp" */
	bool deleted;  /* path ended in " (deleted)"; stripped from path */
	char *path;    /* NULL for anonymous mappings; "[vdso]" etc. kept */
};

struct pt_maps {
	struct pt_mapping *v;
	size_t n;
};

/* Parse a whole maps file. 0 or -errno (-EINVAL on a malformed line). */
int pt_maps__parse(struct pt_maps *m, FILE *f);
/* Convenience: open /proc/<pid>/maps and parse it. */
int pt_maps__read_pid(struct pt_maps *m, int pid);
void pt_maps__free(struct pt_maps *m);

/* Is this mapping an executable mapping of a regular file (not [vdso])? */
bool pt_mapping__is_exec_file(const struct pt_mapping *mp);

#endif
