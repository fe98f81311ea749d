/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Views (a process's figures, or all of them merged) and the window view
 * of --interval (view.c).
 */
#ifndef PT_RUN_VIEW_H
#define PT_RUN_VIEW_H

#include <stdint.h>

struct pt_func;
struct pt_rec;
struct pt_step;
struct proc;
struct run;
struct view;

/* view.c: a view's aggregators (steps counted reach step_cb). 0 or -ENOMEM. */
int pt_run__new_view(struct run *r, struct view *v,
		     void (*step_cb)(void *ctx, const struct pt_step *s), void *ctx);
void pt_run__free_view(struct view *v);
/* --interval: p's window view (none without), with every function p
 * knows; fed like p's own view */
int pt_run__window_open(struct proc *p);
int pt_run__window_declare(struct proc *p, const struct pt_func *f);
/* A thread ended: the window view forgets it too. */
void pt_run__window_thread_exit(struct proc *p, uint32_t tid);
void pt_run__window_record(struct proc *p, const struct pt_rec *rec);

#endif
