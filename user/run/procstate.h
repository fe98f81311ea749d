/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A traced process's life: the states of struct proc (run.h) and the
 * moves allowed between them. procs.c makes the moves of attaching and
 * ending, records.c that of an exec seen; each is checked here.
 *
 *   FOUND ──start──> ATTACHING ──done──> ATTACHED
 *                        └──BPF refused it, or a part failed──> FAILED
 *   FOUND, ATTACHING, ATTACHED, FAILED ──an exec record──> EXECED
 *   any state but ENDED ──exited, or the loop ends an EXECED──> ENDED
 *
 * ENDED is final. Every other state is live: its records are routed to
 * it (proctable.c), the loop ticks and rescans it. An exec record can
 * come at any time (it is routed by pid), an exit too (a process may die
 * while it is attached, or before, if its start failed).
 */
#ifndef PT_RUN_PROCSTATE_H
#define PT_RUN_PROCSTATE_H

#include <stdbool.h>

enum pt_proc_state {
	/* pt_run__open_proc: inspected (probes resolved, interpreter found,
	 * views made), a BPF slot held; nothing in BPF yet */
	PT_PROC_FOUND,
	/* pt_run__start_proc: BPF knows it; its probes, frame probe,
	 * sampler, agent and GPU ring going in (a stop asked for meanwhile
	 * leaves it here: the run ends) */
	PT_PROC_ATTACHING,
	/* traced: pt_run__start_proc returned 0 (its pidfd is the loop's) */
	PT_PROC_ATTACHED,
	/* BPF would not take it ("cannot trace pid", said), or its start
	 * failed: what went in stays, it is watched until it ends */
	PT_PROC_FAILED,
	/* an exec record of its pid: the loop ends it (ending drains the
	 * ring: not from a ring callback) */
	PT_PROC_EXECED,
	/* exited or exec'ed (end_why): its probes are off; an exited one's
	 * slot serves another, an exec'ed one's never (proctable.c) */
	PT_PROC_ENDED,
};

struct proc;

/* "found", "attaching", ...; "?" for no state. */
const char *pt_proc__state_str(enum pt_proc_state s);
/* Is the move from one state to another allowed (the table above)? */
bool pt_proc__can_move(enum pt_proc_state from, enum pt_proc_state to);
/* p moves to state to: 0 (also when it is there already), or -EINVAL when
 * the move is not allowed: refused, p's state kept, and said (a bug). */
int pt_proc__set_state(struct proc *p, enum pt_proc_state to);

#endif
