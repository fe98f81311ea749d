/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `proftrace diff A B`: two summaries (summary.json files or output
 * folders) side by side, with each change and whether it is beyond
 * run-to-run noise; `--fail-if` conditions set the exit code for CI
 * performance gates (docs/diff.md).
 */
#ifndef PT_DIFF_H
#define PT_DIFF_H

#include <stdio.h>

#include <cjson/cJSON.h>

/* The comparison of a and b as a document (docs/diff.md#json); NULL when
 * out of memory. */
cJSON *pt_diff__build(const cJSON *a, const cJSON *b);
/* The document as Markdown. 0 or -errno. */
int pt_diff__markdown(FILE *f, const cJSON *diff, const char *name_a, const char *name_b);
/*
 * Does condition cond ("step.p50 > +5%", "bucket.engine.forward >= 0.2",
 * "function.engine_step < -10% significant") hold in diff? 1 yes, 0 no,
 * -EINVAL with a message in err when it cannot be read or names no row.
 */
int pt_diff__check(const cJSON *diff, const char *cond, char *err, size_t errlen);
/*
 * Can a gate trust the run in summary doc? 0 yes; 1 no, with the reason in
 * why ("counted 0 steps though it has a step probe", "lost 12 records
 * (ring buffer full)", ...): a broken step probe or a lossy run would
 * otherwise pass every --fail-if.
 */
int pt_diff__unfit(const cJSON *doc, char *why, size_t whylen);
/* A summary.json, or an output folder holding one; NULL with a message
 * in err when it cannot be read or is no summary. */
cJSON *pt_diff__load(const char *path, char *err, size_t errlen);
/* argv[0] is "diff". Returns the exit code. */
int pt_diff__main(int argc, char **argv);

#endif
