/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --interval, each window's document (window.c).
 */
#ifndef PT_RUN_WINDOW_H
#define PT_RUN_WINDOW_H

#include <stdint.h>

struct run;

/* window.c: --interval, a summary of each window of SEC seconds */
void pt_run__window_tick(struct run *r, uint64_t now);

#endif
