/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libraries named by probes and not loaded yet, found and resolved
 * ahead of their mapping: the dlopen race (prearm.c).
 */
#ifndef PT_RUN_PREARM_H
#define PT_RUN_PREARM_H

#include <stddef.h>

struct proc;

/* prearm.c: the libraries named by probes and not mapped yet whose file
 * can be found now, resolved ahead of their mapping: the number of
 * functions p's resolver gained (the caller attaches them), *nlibs the
 * libraries; or -ENOMEM. */
int pt_run__prearm(struct proc *p, size_t *nlibs);

#endif
