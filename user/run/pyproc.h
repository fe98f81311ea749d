/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pyproc.c: a process's Python part (p->python, written there only).
 */
#ifndef PT_RUN_PYPROC_H
#define PT_RUN_PYPROC_H

#include <stdbool.h>
#include <stddef.h>

struct run;
struct proc;
struct pt_maps;

/* p's CPython in its maps, when py: probes or sampling want one, and the
 * reader of its memory (p->python.mem). 0: p->python.have says whether
 * there is one (why not said with -v); -EINVAL or -ENOMEM with err (and
 * what to do) when strict and py: probes or lines need it. */
int pt_run__py_find(struct proc *p, const struct pt_maps *maps, bool strict, char *err,
		    size_t errlen);
/* Is every Python call seen? Looked at when found and on each rescan:
 * the 3.12+ perf trampoline can be switched on and off at run time. */
void pt_run__py_recheck(struct proc *p);
bool pt_run__py_exact(const struct proc *p);
/* Probe the frame evaluator? Only when asked (python_mode evalframe): it
 * traps on every Python call, named or not (the agent costs only the
 * named ones). */
bool pt_run__want_py_probe(const struct run *r, const struct proc *p);
/* Code objects -> py: functions (p->python.probe), for the agent, the
 * probe and the sampler; once. 0 or -ENOMEM. */
int pt_run__py_start(struct proc *p);
/* Sample p too: 0, or -ENOMEM. Not fatal when the sampler refuses it
 * (said): its probes still give true figures. */
int pt_run__py_sample(struct proc *p);
/* The frame evaluator's probe in p, where python_mode wants it: 0, or
 * -errno with err (for the caller to say; why_not set). */
int pt_run__py_probe(struct proc *p, char *err, size_t errlen);
void pt_run__py_free(struct proc *p);

#endif
