/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --metrics, the Prometheus exposition while attached (metrics.c).
 */
#ifndef PT_RUN_METRICS_H
#define PT_RUN_METRICS_H

struct pt_gpu_rec;
struct pt_step;
struct proc;
struct run;

/* metrics.c: --metrics, Prometheus text exposition while attached */
int pt_run__metrics_open(struct run *r);
void pt_run__metrics_step(struct proc *p, const struct pt_step *s);
void pt_run__metrics_gpu(struct proc *p, const struct pt_gpu_rec *g);
/* Its listening socket, for the event loop to wait on; -1: no --metrics. */
int pt_run__metrics_fd(const struct run *r);
void pt_run__metrics_serve(struct run *r);
void pt_run__metrics_free(struct run *r);
/* What --metrics kept of p (p->metrics). */
void pt_run__metrics_free_proc(struct proc *p);

#endif
