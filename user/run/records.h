/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Routes each record to the process and part that owns it (records.c).
 */
#ifndef PT_RUN_RECORDS_H
#define PT_RUN_RECORDS_H

#include <stddef.h>

struct pt_gpu_rec;
struct pt_rec;
struct pt_step;

/* records.c: the record streams (on_* are the callbacks given to attach,
 * sampler, aggregators and GPU ring) */
int pt_run__on_rec(void *ctx, const struct pt_rec *rec, size_t size);
void pt_run__on_step(void *ctx, const struct pt_step *s);
void pt_run__on_merged_step(void *ctx, const struct pt_step *s);
int pt_run__on_gpu_rec(void *ctx, const struct pt_gpu_rec *g);

#endif
