/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `proftrace merge [NAME=]DIR...`: the summaries of one job from several
 * hosts (one proftrace per node) as one document: every process with its
 * host and rank, pooled steps and buckets, and the skew across processes
 * (docs/fleet.md).
 */
#ifndef PT_MERGE_H
#define PT_MERGE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* docs[i] from host names[i] (NULL: its meta.host). NULL when out of
 * memory or n is 0. */
cJSON *pt_merge__build(const cJSON *const *docs, const char *const *names, size_t n);
/* argv[0] is "merge". Returns the exit code. */
int pt_merge__main(int argc, char **argv);

#endif
