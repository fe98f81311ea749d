/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's GPU stream (p->gpu, written by gpustream.c only): the CUPTI
 * shim's ring opened (or the shim loaded by --inject), attached, drained
 * to the callback records.c hands it, joined for the documents.
 */
#ifndef PT_RUN_GPUSTREAM_H
#define PT_RUN_GPUSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/gpuring.h"

struct pt_gpu_result;
struct pt_rec;
struct pt_step;
struct proc;

/* gpustream.c: a process's GPU stream (p->gpu): the drains hand each
 * record to cb (records.c's pt_run__on_gpu_rec) */
/* Does pid run CUDA (the runtime or the driver library mapped)? */
bool pt_run__runs_cuda(int pid);
/* The CUPTI shim's ring, if p has one (before the clock starts:
 * attaching is what wakes the shim). 0, -ENOMEM, or -PT_EUSAGE when
 * --gpu on cannot be honoured. */
int pt_run__open_gpu(struct proc *p);
/* Its ring attached (p is attaching). 0, or -PT_EUSAGE (--gpu on). */
int pt_run__attach_gpu(struct proc *p);
/* The GPU ring's file was truncated (said once, not read again)? */
bool pt_run__gpu_lost(struct proc *p);
/* Drain p's GPU ring unless it was truncated. */
void pt_run__gpu_drain(struct proc *p, pt_gpuring_cb cb);
/* Each tick: the shim's heartbeat, new threads' ids, a drain. */
void pt_run__gpu_tick(struct proc *p, uint64_t now, pt_gpuring_cb cb);
/* p ended: what its ring holds is taken, and it is read no more. */
void pt_run__gpu_end(struct proc *p, pt_gpuring_cb cb);
/* The run stopped: the shim detached, its last records taken. */
void pt_run__gpu_finish(struct proc *p, pt_gpuring_cb cb);
const struct pt_gpu_rec *pt_run__gpu_record(struct proc *p, const struct pt_gpu_rec *g,
					    struct pt_gpu_rec *host);
/* A counted step, a bucket's call (its bucket_mask): into the join. */
void pt_run__gpu_step(struct proc *p, const struct pt_step *s);
void pt_run__gpu_call(struct proc *p, const struct pt_rec *rec, uint32_t bucket_mask);
/* Its records joined (once: the documents share it); NULL: out of memory. */
const struct pt_gpu_result *pt_run__gpu_result(struct proc *p);
void pt_run__gpu_free(struct proc *p);

#endif
