// SPDX-License-Identifier: BSD-2-Clause
/*
 * A session's phases (session.h), one function each, and the switch that
 * takes a session from one to the next. The work of each phase is in the
 * file named for it: steps.c opens, attaches and reports, loop.c runs.
 */
#include <errno.h>
#include <stdlib.h>

#include "run.h"
#include "report.h"
#include "loop.h"
#include "steps.h"
#include "session.h"

#include "util/log.h"
#include "util/util.h"

struct pt_session {
	enum pt_session_phase phase;
	struct run r;
};

int pt_session__open(struct pt_session **out, const struct pt_env *env)
{
	struct pt_session *s = calloc(1, sizeof(*s));
	int e;

	*out = s;
	if (!s) {
		pt_msg("proftrace: out of memory\n");
		return -ENOMEM;
	}
	e = pt_run__open(&s->r, env);
	s->phase = e ? PT_SESSION_DONE : PT_SESSION_OPEN;
	return e;
}

void pt_session__dry_run(struct pt_session *s)
{
	if (!s || s->phase != PT_SESSION_OPEN)
		return;
	pt_run__print_dry_run(&s->r);
	s->phase = PT_SESSION_DONE;
}

/* open -> attached; a failed or stopped attach is done (nothing taken) */
static int do_attach(struct pt_session *s)
{
	int e = pt_run__attach(&s->r);

	s->phase = e ? PT_SESSION_DONE : PT_SESSION_ATTACHED;
	return e;
}

/* attached -> stopped, also when the loop failed: what it took is in */
static int do_run(struct pt_session *s)
{
	int e = pt_run__loop(&s->r);

	s->phase = PT_SESSION_STOPPED;
	return e;
}

/* stopped -> done: the documents written */
static int do_report(struct pt_session *s)
{
	int e = pt_run__report(&s->r);

	s->phase = PT_SESSION_DONE;
	return e;
}

int pt_session__run(struct pt_session *s)
{
	int e = 0, e2;

	if (!s || s->phase != PT_SESSION_OPEN)
		return -EINVAL;
	while (s->phase != PT_SESSION_DONE) {
		switch (s->phase) {
		case PT_SESSION_OPEN:
			e = do_attach(s);
			break;
		case PT_SESSION_ATTACHED:
			e = do_run(s);
			break;
		case PT_SESSION_STOPPED:
			e2 = do_report(s);
			e = e ? e : e2; /* the loop's failure first */
			break;
		case PT_SESSION_DONE:
			break;
		}
	}
	return e;
}

enum pt_session_phase pt_session__phase(const struct pt_session *s)
{
	return s ? s->phase : PT_SESSION_DONE;
}

int pt_session__exit_code(const struct pt_session *s, int e)
{
	if (e == -PT_ESTOPPED && s) /* a stop while attaching: undone, nothing taken */
		return 128 + s->r.stop_sig;
	return pt_exit_code(e);
}

void pt_session__free(struct pt_session *s)
{
	if (!s)
		return;
	pt_run__free(&s->r);
	free(s);
}
