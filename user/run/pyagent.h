/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's Python agent (p->agent, written by pyagent.c only).
 */
#ifndef PT_RUN_PYAGENT_H
#define PT_RUN_PYAGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;
struct run;

/* pyagent.c: a process's Python agent (p->agent) */
/* p's agent, if it has one: 0, or -errno with why in err, kept for the
 * report (-ENOENT: none; -EINPROGRESS: asked for through PEP 768, not up
 * yet: each tick looks again). */
int pt_run__agent_start(struct proc *p, char *err, size_t errlen);
void pt_run__agent_tick(struct proc *p, uint64_t now);
void pt_run__agent_stop(struct proc *p);
/* Heartbeat every started process's agent (while another is being started). */
void pt_run__agents_alive(struct run *r);
/* Are its named calls timed through the agent right now? */
bool pt_run__agent_ok(const struct proc *p);
void pt_run__agent_free(struct proc *p);

#endif
