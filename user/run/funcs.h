/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The function table: each function's state, its fid in the merged view,
 * declared to the views, marked attached, its values' spec (funcs.c).
 */
#ifndef PT_RUN_FUNCS_H
#define PT_RUN_FUNCS_H

#include <stddef.h>

struct pt_func;
struct proc;

/* funcs.c: the function table (p->fs, p->mfid, r->merged_funcs) */
/* Room for every function p's resolver has now. 0 or -ENOMEM. */
int pt_run__grow_fstate(struct proc *p);
/* Function i of p is known to the aggregators (merged view too). */
int pt_run__declare_func(struct proc *p, size_t i);
/* Function i of p has its probes now (or was found, for py:). */
void pt_run__mark_attached(struct proc *p, size_t i);
/* What BPF reads at f's calls, when its probe has values. */
void pt_run__set_val_spec(struct proc *p, const struct pt_func *f);
/* Python functions found at run time (by a PYCODE record or in samples):
 * the aggregators and the report learn of them. */
void pt_run__sync_py_funcs(struct proc *p);

#endif
