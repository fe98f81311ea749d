// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/procstate.c: a process made by pt_run__open_proc (a child of this
 * test, waiting) is found; it moves forward only (attaching, then
 * attached or failed), an exec or an exit ends any live state, and
 * ended is final. A move not allowed is refused and the state kept.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "run/run.h"
#include "run/procstate.h"
#include "run/procs.h"
#include "runfx.h"

/* What the targets file names in the child (this binary): noinline with
 * a body, so the symbol is there to resolve. */
RUNFX_VICTIM(procstate_victim);

static const char conf[] = "step native:exe:procstate_victim\n";

struct fx {
	struct run r;
	pid_t child;
	struct proc *p;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	char err[512];

	if (!x || runfx__config(&x->r, conf))
		return -1;
	x->child = runfx__child();
	if (x->child < 0 || pt_run__open_proc(&x->r, x->child, true, &x->p, err, sizeof(err))) {
		fprintf(stderr, "open_proc: %s\n", err);
		return -1;
	}
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	pt_run__free_proc(x->p);
	runfx__reap(x->child);
	pt_config__free(&x->r.cfg);
	free(x);
	return 0;
}

static void test_found_then_attached(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;

	assert_int_equal(p->tracee.pid, x->child);
	assert_int_equal(p->state, PT_PROC_FOUND);
	assert_true(pt_proc__live(p));
	/* not attached before attaching */
	assert_int_equal(pt_proc__set_state(p, PT_PROC_ATTACHED), -EINVAL);
	assert_int_equal(p->state, PT_PROC_FOUND);
	assert_int_equal(pt_proc__set_state(p, PT_PROC_ATTACHING), 0);
	/* no way back */
	assert_int_equal(pt_proc__set_state(p, PT_PROC_FOUND), -EINVAL);
	assert_int_equal(pt_proc__set_state(p, PT_PROC_ATTACHED), 0);
	assert_int_equal(pt_proc__set_state(p, PT_PROC_FAILED), -EINVAL);
	assert_int_equal(pt_proc__set_state(p, PT_PROC_ATTACHED), 0); /* there already */
	assert_string_equal(pt_proc__state_str(p->state), "attached");
	assert_true(pt_proc__live(p));
}

static void test_exec_then_ended(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;

	assert_int_equal(pt_proc__set_state(p, PT_PROC_ATTACHING), 0);
	assert_int_equal(pt_proc__set_state(p, PT_PROC_FAILED), 0);
	/* an exec record is routed by pid: it comes whatever the state */
	assert_int_equal(pt_proc__set_state(p, PT_PROC_EXECED), 0);
	assert_true(pt_proc__live(p));
	/* the loop ends it; it does not attach again */
	assert_int_equal(pt_proc__set_state(p, PT_PROC_ATTACHED), -EINVAL);
	assert_int_equal(pt_proc__set_state(p, PT_PROC_ENDED), 0);
	assert_false(pt_proc__live(p));
	/* final */
	for (int s = PT_PROC_FOUND; s < PT_PROC_ENDED; s++) {
		assert_false(pt_proc__can_move(PT_PROC_ENDED, s));
		assert_int_equal(pt_proc__set_state(p, s), -EINVAL);
	}
	assert_int_equal(p->state, PT_PROC_ENDED);
}

/* A process may exit in any live state, before it was attached too. */
static void test_exit_from_any_live_state(void **state)
{
	(void)state;
	for (int s = PT_PROC_FOUND; s < PT_PROC_ENDED; s++)
		assert_true(pt_proc__can_move(s, PT_PROC_ENDED));
	assert_false(pt_proc__can_move(PT_PROC_EXECED, PT_PROC_FAILED));
	assert_false(pt_proc__can_move(PT_PROC_FOUND, PT_PROC_FAILED));
	assert_string_equal(pt_proc__state_str((enum pt_proc_state)99), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_found_then_attached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_then_ended, setup, teardown),
		cmocka_unit_test(test_exit_from_any_live_state),
	};

	return cmocka_run_group_tests_name("procstate", tests, NULL, NULL);
}
