// SPDX-License-Identifier: BSD-2-Clause
/*
 * A traced process's states and the moves allowed between them
 * (procstate.h draws them): the one place that changes p->state.
 */
#include <errno.h>

#include "run.h"

#include "util/log.h"
#include "util/util.h"

static const char *const names[] = {
	[PT_PROC_FOUND] = "found",	 [PT_PROC_ATTACHING] = "attaching",
	[PT_PROC_ATTACHED] = "attached", [PT_PROC_FAILED] = "failed",
	[PT_PROC_EXECED] = "execed",	 [PT_PROC_ENDED] = "ended",
};

#define TO(s) (1u << (s))
#define LIVE_END (TO(PT_PROC_EXECED) | TO(PT_PROC_ENDED))

/* The states each one may move to. */
static const unsigned int moves[] = {
	[PT_PROC_FOUND] = TO(PT_PROC_ATTACHING) | LIVE_END,
	[PT_PROC_ATTACHING] = TO(PT_PROC_ATTACHED) | TO(PT_PROC_FAILED) | LIVE_END,
	[PT_PROC_ATTACHED] = LIVE_END,
	[PT_PROC_FAILED] = LIVE_END,
	[PT_PROC_EXECED] = TO(PT_PROC_ENDED),
	[PT_PROC_ENDED] = 0,
};

const char *pt_proc__state_str(enum pt_proc_state s)
{
	return (unsigned int)s < ARRAY_SIZE(names) && names[s] ? names[s] : "?";
}

bool pt_proc__can_move(enum pt_proc_state from, enum pt_proc_state to)
{
	return (unsigned int)from < ARRAY_SIZE(moves) && (unsigned int)to < 32 &&
	       (moves[from] & TO(to));
}

int pt_proc__set_state(struct proc *p, enum pt_proc_state to)
{
	if (p->state == to)
		return 0;
	if (!pt_proc__can_move(p->state, to)) {
		pt_msg("proftrace: internal error: pid %d: %s -> %s is not a move a process "
		       "makes: refused\n",
		       p->tracee.pid, pt_proc__state_str(p->state), pt_proc__state_str(to));
		return -EINVAL;
	}
	p->state = to;
	return 0;
}
