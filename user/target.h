/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What we need to know about the target process before attaching: that it
 * exists, its name, its executable, and how to reach its files (through
 * /proc/PID/root when it lives in another mount namespace, e.g. a container).
 */
#ifndef PT_TARGET_H
#define PT_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct pt_target {
	int pid;
	char comm[64];
	char exe[PATH_MAX];  /* as the target sees it */
	char root[64];       /* "" when it shares our root, else "/proc/PID/root" */
};

/* 0; -ESRCH (no such process) or -errno, with a one-line message. */
int pt_target__open(struct pt_target *t, int pid, char *err, size_t errlen);
/* pidfd that becomes readable when the process exits, or -errno. */
int pt_target__pidfd(const struct pt_target *t);
bool pt_target__alive(const struct pt_target *t);

#endif
