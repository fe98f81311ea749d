/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Stack samples into their process's stacks (samples.c).
 */
#ifndef PT_RUN_SAMPLES_H
#define PT_RUN_SAMPLES_H

#include <stdint.h>

struct pt_sample;
struct pt_ustack;

/* samples.c: a stack sample into its process's stacks (the sampler's callback) */
int pt_run__on_sample(void *ctx, const struct pt_sample *s);
/* samples.c: a sample's native stack, unwound, kept for its sample (the
 * sampler's callback, native_frames on) */
int pt_run__on_ustack(void *ctx, const struct pt_ustack *u);

#endif
