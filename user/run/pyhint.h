/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * py: probes that match nothing, why, and the closest names (pyhint.c).
 */
#ifndef PT_RUN_PYHINT_H
#define PT_RUN_PYHINT_H

#include <stddef.h>
#include <stdint.h>

struct proc;
struct run;

/* pyhint.c: py: probes that match nothing, why, and the closest names */
struct pt_agent_spec;
/* The (module path, name glob) pairs the agent walks for: each py: probe,
 * and the function reading of a dotted one (py:a.b.c: module a.b); spec_of
 * is each pair's probe. 0 or -ENOMEM (free both). */
int pt_run__py_pairs(const struct run *r, struct pt_agent_spec **pairs, size_t **spec_of,
		     size_t *n);
/* The agent's candidates codes[0..n) were resolved: what matches nothing
 * now is said (once per reason). */
void pt_run__py_hint_agent(struct proc *p, const uint64_t *codes, uint32_t n);
/* Without the agent (p has none: the caller checks), once a second of
 * samples is in: the same from them. */
void pt_run__py_hint_samples(struct proc *p);
/* Why py: probe spec matched nothing in p (for the report), NULL when it
 * matched or nothing can be said. */
const char *pt_run__py_hint_why(struct proc *p, size_t spec);
void pt_run__py_hint_free(struct proc *p);
/* --dry-run: the functions p's Python agent would have hooked for each
 * py: probe now (and why a probe has none), on stdout. */
void pt_run__py_dry_run(struct proc *p);

#endif
