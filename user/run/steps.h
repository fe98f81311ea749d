/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * steps.c: the work of a session's phases but the loop (session.c calls
 * them): open (the targets file and the processes, probes resolved),
 * attach (BPF, the sampler, the GPU rings, the probes), report, free.
 */
#ifndef PT_RUN_STEPS_H
#define PT_RUN_STEPS_H

struct run;
struct pt_env;

/* Each 0 or -errno (-PT_EUSAGE: exit 2), its error said on stderr.
 * pt_run__free after any of them. */
int pt_run__open(struct run *r, const struct pt_env *env);
int pt_run__attach(struct run *r);
int pt_run__report(struct run *r);
void pt_run__free(struct run *r);

#endif
