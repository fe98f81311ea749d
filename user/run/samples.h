/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Stack samples into their process's stacks (samples.c).
 */
#ifndef PT_RUN_SAMPLES_H
#define PT_RUN_SAMPLES_H

struct pt_sample;

/* samples.c: a stack sample into its process's stacks (the sampler's callback) */
int pt_run__on_sample(void *ctx, const struct pt_sample *s);

#endif
