/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lines.txt: sampled time per source line of the Python functions named by
 * `lines` directives, in line_profiler's layout (docs/summary.md). Renders
 * summary.json's document only, like every other emitter (report.h).
 */
#ifndef PT_REPORT_LINES_H
#define PT_REPORT_LINES_H

#include <stdio.h>

struct cJSON;

/* 0, -EINVAL (NULL argument) or -EIO (the stream failed). */
int pt_report_lines__write(FILE *f, const struct cJSON *summary);

#endif
