/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The records of py: functions: code objects, attributes, calls that
 * began before their code was known (pyrec.c).
 */
#ifndef PT_RUN_PYREC_H
#define PT_RUN_PYREC_H

#include <stdbool.h>
#include <stdint.h>

struct pt_rec;
struct pt_rec_attr;
struct pt_rec_pycode;
struct proc;

/* pyrec.c: records of py: functions */
void pt_run__on_pycode(struct proc *p, const struct pt_rec_pycode *rec);
void pt_run__on_attr(struct proc *p, const struct pt_rec_attr *a);
bool pt_run__py_pending_fid(struct proc *p, const struct pt_rec *rec, uint32_t *fid);
/* Attribute locations not found yet: BPF asks again once they are due. */
void pt_run__attr_retries(struct proc *p, uint64_t now);

#endif
