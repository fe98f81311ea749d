// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/session.c: a session goes through its phases in order only. Opened
 * on a process (a child of this test, waiting), it is open; a dry run
 * makes it done, and a done session cannot be run. An open that fails
 * (a dead pid, a bad targets file) leaves it done, with exit code 2, and
 * it frees. Attaching needs BPF: tests/integration covers run and report.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "run/env.h"
#include "run/session.h"
#include "util/util.h"
#include "runfx.h"

/* What the targets file names in the child (this binary): noinline with
 * a body, so the symbol is there to resolve. */
RUNFX_VICTIM(session_victim);

/* A targets file with text in it: its path (static), or NULL. */
static const char *targets(const char *text)
{
	static char path[64];

	snprintf(path, sizeof(path), "/tmp/pt-test-session-XXXXXX");
	return runfx__targets(path, text) ? NULL : path;
}

static void env_for(struct pt_env *env, int pid, const char *path)
{
	memset(env, 0, sizeof(*env));
	env->pid = pid;
	env->pids[0] = pid;
	env->npids = 1;
	env->targets = path;
	env->quiet = true;
}

static void test_open_dry_run_done(void **state)
{
	const char *path = targets("step native:exe:session_victim\n");
	pid_t child = runfx__child();
	struct pt_session *s = NULL;
	struct pt_env env;

	assert_non_null(path);
	assert_true(child > 0);
	env_for(&env, child, path);
	env.dry_run = true;
	assert_int_equal(pt_session__open(&s, &env), 0);
	assert_non_null(s);
	assert_int_equal(pt_session__phase(s), PT_SESSION_OPEN);
	pt_session__dry_run(s);
	assert_int_equal(pt_session__phase(s), PT_SESSION_DONE);
	/* done: no attach after it, nor a second dry run */
	assert_int_equal(pt_session__run(s), -EINVAL);
	pt_session__dry_run(s);
	assert_int_equal(pt_session__phase(s), PT_SESSION_DONE);
	assert_int_equal(pt_session__exit_code(s, 0), PT_EXIT_OK);
	pt_session__free(s);
	runfx__reap(child);
	unlink(path);
}

static void test_open_dead_pid(void **state)
{
	const char *path = targets("step native:exe:session_victim\n");
	pid_t child = runfx__child();
	struct pt_session *s = NULL;
	struct pt_env env;
	int e;

	assert_non_null(path);
	runfx__reap(child);
	env_for(&env, child, path);
	e = pt_session__open(&s, &env);
	assert_int_not_equal(e, 0);
	assert_non_null(s);
	assert_int_equal(pt_session__phase(s), PT_SESSION_DONE);
	assert_int_equal(pt_session__run(s), -EINVAL);
	assert_int_equal(pt_session__exit_code(s, e), PT_EXIT_USAGE);
	pt_session__free(s);
	unlink(path);
}

static void test_open_bad_targets(void **state)
{
	const char *path = targets("step native:exe:session_victim\nbucket\n");
	pid_t child = runfx__child();
	struct pt_session *s = NULL;
	struct pt_env env;
	int e;

	assert_non_null(path);
	env_for(&env, child, path);
	e = pt_session__open(&s, &env);
	assert_int_equal(e, -PT_EUSAGE);
	assert_int_equal(pt_session__phase(s), PT_SESSION_DONE);
	assert_int_equal(pt_session__exit_code(s, e), PT_EXIT_USAGE);
	pt_session__free(s);
	runfx__reap(child);
	unlink(path);
}

/* No session (out of memory at open): every call is safe. */
static void test_no_session(void **state)
{
	assert_int_equal(pt_session__run(NULL), -EINVAL);
	assert_int_equal(pt_session__phase(NULL), PT_SESSION_DONE);
	pt_session__dry_run(NULL);
	assert_int_equal(pt_session__exit_code(NULL, -ENOMEM), PT_EXIT_FAIL);
	pt_session__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_dry_run_done),
		cmocka_unit_test(test_open_dead_pid),
		cmocka_unit_test(test_open_bad_targets),
		cmocka_unit_test(test_no_session),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
