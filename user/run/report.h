/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The documents (one per process and a merged one) and the output files
 * (report.c).
 */
#ifndef PT_RUN_REPORT_H
#define PT_RUN_REPORT_H

#include <cjson/cJSON.h>

struct proc;
struct run;
struct view;

/* report.c */
void pt_run__print_dry_run(struct run *r);
/* The output folder (-o, or a new default one), before attaching: -PT_EUSAGE
 * when it cannot be created or written. */
int pt_run__open_output(struct run *r);
int pt_run__write_outputs(struct run *r);
/* The summary document of process p from view v (window.c). */
cJSON *pt_run__view_doc(struct run *r, struct proc *p, struct view *v);

#endif
