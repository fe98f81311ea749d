/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's life: inspecting, probing, following children and execs,
 * ending; a stop asked for while attaching (procs.c; its moves:
 * procstate.h).
 */
#ifndef PT_RUN_PROCS_H
#define PT_RUN_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;
struct run;

/* procs.c: processes */
int pt_run__open_proc(struct run *r, int pid, bool strict, struct proc **out, char *err,
		      size_t errlen);
int pt_run__start_proc(struct proc *p);
void pt_run__end_proc(struct proc *p, const char *why);
void pt_run__free_proc(struct proc *p);
int pt_run__attach_new(struct proc *p, size_t from);
void pt_run__rescan(struct proc *p);
int pt_run__open_sampler(struct run *r, char *err, size_t errlen);
const char *pt_run__py_timing(const struct proc *p);
/* --children */
void pt_run__scan_children(struct run *r, uint64_t now);
void pt_run__add_cand(struct run *r, int pid, uint64_t now);
int pt_run__add_candidates(struct run *r, uint64_t now, bool at_start);
/* SIGINT or SIGTERM pending while attaching: taken, kept in r->stop_sig,
 * said once; the attach then ends with -PT_ESTOPPED. */
bool pt_run__stop_asked(struct run *r);

#endif
