// SPDX-License-Identifier: BSD-2-Clause
/*
 * The process table of a run (proctable.h): its processes in the order
 * added, the live one of a pid, and the BPF process slots.
 */
#include <errno.h>
#include <stdlib.h>

#include "run.h"

int pt_proctable__add(struct proctable *t, struct proc *p)
{
	struct proc **v = realloc(t->v, (t->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	t->v = v;
	p->pos = (unsigned int)t->n;
	t->v[t->n++] = p;
	return 0;
}

/* The newest first: a pid's new image is added after its old one. */
struct proc *pt_proctable__find(struct proctable *t, uint32_t pid)
{
	if (t->last && (uint32_t)t->last->tracee.pid == pid && pt_proc__live(t->last))
		return t->last;
	for (size_t i = t->n; i-- > 0;)
		if ((uint32_t)t->v[i]->tracee.pid == pid && pt_proc__live(t->v[i]))
			return t->last = t->v[i];
	return NULL;
}

bool pt_proctable__traced(const struct proctable *t, int pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i]->tracee.pid == pid && pt_proc__live(t->v[i]))
			return true;
	return false;
}

bool pt_proctable__all_ended(const struct proctable *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (pt_proc__live(t->v[i]))
			return false;
	return true;
}

int pt_proctable__nslots(void)
{
	/* PT_TEST_MAX_PROCS: fewer slots, so the tests can run out of them
	 * and reuse them in seconds (test_faults.py) */
	const char *lim = getenv("PT_TEST_MAX_PROCS");

	return lim && atoi(lim) > 0 && atoi(lim) < PT_MAX_PROCS ? atoi(lim) : PT_MAX_PROCS;
}

/*
 * A run may see any number of processes (--children: workers come and
 * go all day); PT_MAX_PROCS bounds those traced at once. The slot of a
 * process that exited is free at once: its records were drained and its
 * BPF entry zeroed when it ended, and its probes cannot fire again (their
 * task is gone). An exec'ed image's slot is never reused: its old probes
 * are still coming out (in a thread) and the new image may hit them.
 * Never-used slots go first, then the one freed longest ago.
 */
int pt_proctable__take_slot(struct proctable *t)
{
	int n = pt_proctable__nslots();
	int best = -1;

	for (int i = 0; i < n; i++) {
		if (t->slot_busy[i])
			continue;
		if (!t->slot_freed[i]) {
			best = i;
			break;
		}
		if (best < 0 || t->slot_freed[i] < t->slot_freed[best])
			best = i;
	}
	if (best >= 0)
		t->slot_busy[best] = true;
	return best;
}

void pt_proctable__put_slot(struct proctable *t, unsigned int slot)
{
	if (slot < PT_MAX_PROCS)
		t->slot_busy[slot] = false;
}

void pt_proctable__ended(struct proctable *t, struct proc *p, bool reuse, uint64_t now)
{
	if (reuse) {
		t->slot_freed[p->idx] = now;
		t->slot_busy[p->idx] = false;
	}
	if (t->last == p)
		t->last = NULL;
}

void pt_proctable__free(struct proctable *t)
{
	free(t->v);
	t->v = NULL;
	t->n = 0;
	t->last = NULL;
}
