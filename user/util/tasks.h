/* SPDX-License-Identifier: BSD-2-Clause */
/* The threads of a process, from /proc/PID/task. */
#ifndef PT_TASKS_H
#define PT_TASKS_H

#include <stdint.h>
#include <stdio.h>

/*
 * Call fn(ctx, tid) for each thread of pid listed now (threads may come
 * and go meanwhile). Stops at the first non-zero return of fn and returns
 * it; -errno when the list cannot be read (the process is gone: -ENOENT).
 */
int pt_tasks__each(int pid, int (*fn)(void *ctx, int tid), void *ctx);

/* Thread tid of pid's comm into comm (empty when it cannot be read). */
void pt_tasks__comm(int pid, uint32_t tid, char *comm, size_t len);

/* pid as the process sees itself in its own PID namespace (the last
 * NSpid of /proc/PID/status); pid itself when that cannot be read. */
int pt_tasks__ns_pid(int pid);

/*
 * The NSpid line of a /proc status file: *outer its first field (the id
 * as this /proc sees it), *inner its last (in the innermost namespace),
 * *depth how many. 0; -ENODATA when there is none (kernels before 4.1);
 * -EINVAL when malformed.
 */
int pt_tasks__parse_nspid(FILE *f, int *outer, int *inner, uint32_t *depth);

#endif
