/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Each function's probe cost, and the overhead section of a document
 * (probecost.c).
 */
#ifndef PT_RUN_PROBECOST_H
#define PT_RUN_PROBECOST_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "aggregate/overhead.h"

struct pt_func;
struct pt_report;
struct proc;
struct run;
struct view;

/* probecost.c: what the probes cost, into a view's document */
enum pt_site_kind pt_run__site_kind(const struct proc *p, const struct pt_func *f);
int pt_run__declare_cost(struct proc *p, const struct pt_func *f, struct pt_ovh *o, uint32_t fid);
void pt_run__overhead_doc(const struct run *r, const struct view *v, const struct pt_report *rep,
			  cJSON *doc);

#endif
