/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What we need to know about the target process before attaching: that it
 * exists, its name and its executable (as its maps show it).
 */
#ifndef PT_TRACEE_H
#define PT_TRACEE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct pt_tracee {
	int pid;
	char comm[64];
	char exe[PATH_MAX];  /* as /proc/PID/maps shows it (our view) */
	char root[PATH_MAX]; /* its root as we see it ("" for ours): a chroot */
};

/* 0; -ESRCH (no such process) or -errno, with a one-line message. */
int pt_tracee__open(struct pt_tracee *t, int pid, char *err, size_t errlen);
/* pidfd that becomes readable when the process exits, or -errno. */
int pt_tracee__pidfd(const struct pt_tracee *t);
bool pt_tracee__alive(const struct pt_tracee *t);
/* A path from our view as the target sees it (strips a chroot prefix). */
const char *pt_tracee__view(const char *root, const char *path);

#endif
