/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The processes of a run (struct run's procs): added, found by pid,
 * their BPF slots taken and recycled. One process's life (inspected,
 * attached, ended) is procs.c's; the table only keeps them, in the order
 * added (p->pos), and is the one writer of what it holds. Readers walk
 * v[0..n) directly.
 */
#ifndef PT_RUN_PROCTABLE_H
#define PT_RUN_PROCTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"

struct proc;

struct proctable {
	struct proc **v; /* every process of the run, ended ones too */
	size_t n;
	struct proc *last; /* of the last record found: most come in runs */
	/* BPF process slots: busy, and when each was freed (ns) */
	bool slot_busy[PT_MAX_PROCS];
	uint64_t slot_freed[PT_MAX_PROCS];
};

/* p joins the table (p->pos set). 0 or -ENOMEM. */
int pt_proctable__add(struct proctable *t, struct proc *p);
/* The live process of pid (its records go there), NULL: none (it ended,
 * or an exec'ed image's records in flight, which belong to no process). */
struct proc *pt_proctable__find(struct proctable *t, uint32_t pid);
/* Is pid a live process of the table? */
bool pt_proctable__traced(const struct proctable *t, int pid);
bool pt_proctable__all_ended(const struct proctable *t);

/* How many processes can be traced at once: PT_MAX_PROCS, fewer with
 * PT_TEST_MAX_PROCS (tests run out of slots with it). */
int pt_proctable__nslots(void);
/* A free BPF slot, taken (busy until given back), or -1 when none is. */
int pt_proctable__take_slot(struct proctable *t);
/* A slot given back unused (its process never traced, or freed before
 * it ended): free at once. */
void pt_proctable__put_slot(struct proctable *t, unsigned int slot);
/* p ended (procs.c): no record is its own from now; exited (reuse), its
 * slot serves another, the one freed longest ago first; exec'ed, never. */
void pt_proctable__ended(struct proctable *t, struct proc *p, bool reuse, uint64_t now);
/* The table itself (its processes are freed by their owner first). */
void pt_proctable__free(struct proctable *t);

#endif
