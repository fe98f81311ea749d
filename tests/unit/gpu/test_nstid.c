// SPDX-License-Identifier: BSD-2-Clause
/*
 * CUPTI thread ids (a container's) to host ones: the NSpid parser on
 * status texts, the map over a /proc tree of our own (threads coming,
 * going, an inner tid taken again), and once over the real /proc with a
 * child in a new PID namespace.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpu/nstid.h"
#include "util/tasks.h"

static int parse(const char *text, int *outer, int *inner, uint32_t *depth)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int e;

	assert_non_null(f);
	e = pt_tasks__parse_nspid(f, outer, inner, depth);
	fclose(f);
	return e;
}

static void test_parse(void **state)
{
	int o = 0, i = 0;
	uint32_t d = 0;

	assert_int_equal(parse("Name:\tx\nTgid:\t5\nNSpid:\t4242\t17\t3\nPPid:\t1\n", &o, &i, &d),
			 0);
	assert_int_equal(o, 4242);
	assert_int_equal(i, 3);
	assert_int_equal(d, 3);
	assert_int_equal(parse("NSpid:\t77\n", &o, &i, &d), 0);
	assert_int_equal(o, 77);
	assert_int_equal(i, 77);
	assert_int_equal(d, 1);
	assert_int_equal(parse("Name:\tx\nPid:\t5\n", &o, &i, &d), -ENODATA);
	assert_int_equal(parse("NSpid:\t\n", &o, &i, &d), -EINVAL);
	assert_int_equal(parse("NSpid:\t12 x\n", &o, &i, &d), -EINVAL);
	assert_int_equal(parse("NSpid:\t12\t-3\n", &o, &i, &d), -EINVAL);
	assert_int_equal(parse("NSpid:\t99999999999999999999\n", &o, &i, &d), -EINVAL);
	assert_int_equal(parse("NSpid:\t0\n", &o, &i, &d), -EINVAL);
}

/* A /proc of our own: ROOT/PID/status, ROOT/PID/task/TID/status. */
struct tree {
	char root[64];
};

static void put_status(struct tree *t, int pid, int tid, const char *nspid)
{
	char path[256];
	FILE *f;

	if (tid) {
		snprintf(path, sizeof(path), "%s/%d/task/%d", t->root, pid, tid);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/%d/task/%d/status", t->root, pid, tid);
	} else {
		snprintf(path, sizeof(path), "%s/%d", t->root, pid);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/%d/task", t->root, pid);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/%d/status", t->root, pid);
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "Name:\tserver\nNSpid:\t%s\nPPid:\t0\n", nspid);
	fclose(f);
}

static void drop_thread(struct tree *t, int pid, int tid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%d/task/%d/status", t->root, pid, tid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d/task/%d", t->root, pid, tid);
	rmdir(path);
}

static void tree_new(struct tree *t)
{
	snprintf(t->root, sizeof(t->root), "/tmp/pt-nstid-XXXXXX");
	assert_non_null(mkdtemp(t->root));
}

static void tree_free(struct tree *t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	assert_int_equal(system(cmd), 0);
}

#define MS 1000000ull

static void test_same_namespace(void **state)
{
	struct pt_nstid *m = (void *)1;
	struct tree t;

	tree_new(&t);
	put_status(&t, 500, 0, "500");
	put_status(&t, 500, 500, "500");
	assert_int_equal(pt_nstid__open(&m, t.root, 500), 0);
	assert_null(m); /* nothing to map */
	assert_int_equal(pt_nstid__open(&m, t.root, 501), -ENOENT);
	assert_null(m);
	assert_int_equal(pt_nstid__open(&m, t.root, 0), -EINVAL);
	pt_nstid__free(NULL);
	assert_int_equal(pt_nstid__refresh(NULL), 0);
	assert_int_equal(pt_nstid__host_tid(NULL, 5, 0), 0);
	tree_free(&t);
}

static void test_map_and_fresh(void **state)
{
	struct pt_nstid_stats st;
	struct pt_nstid *m = NULL;
	struct tree t;
	uint64_t now = 1000 * MS;

	tree_new(&t);
	put_status(&t, 4000, 0, "4000\t1");
	put_status(&t, 4000, 4000, "4000\t1");
	put_status(&t, 4000, 4003, "4003\t7");
	assert_int_equal(pt_nstid__open(&m, t.root, 4000), 0);
	assert_non_null(m);
	assert_int_equal(pt_nstid__host_tid(m, 1, now), 4000);
	assert_int_equal(pt_nstid__host_tid(m, 7, now), 4003);
	pt_nstid__stats(m, &st);
	assert_int_equal(st.ns_pid, 1);
	assert_int_equal(st.depth, 2);
	assert_int_equal(st.threads, 2);

	/* a thread started since: found by the lookup that misses */
	put_status(&t, 4000, 4010, "4010\t9");
	assert_int_equal(pt_nstid__host_tid(m, 9, now), 4010);
	/* unknown: 0, and no second read before PT_NSTID_MISS_REFRESH_NS */
	assert_int_equal(pt_nstid__host_tid(m, 11, now + MS), 0);
	put_status(&t, 4000, 4011, "4011\t11");
	assert_int_equal(pt_nstid__host_tid(m, 11, now + 2 * MS), 0);
	assert_int_equal(pt_nstid__host_tid(m, 11, now + 40 * MS), 4011);

	/* a thread that ended stays mapped (its records may be in the ring) */
	drop_thread(&t, 4000, 4003);
	assert_int_equal(pt_nstid__refresh(m), 0);
	assert_int_equal(pt_nstid__host_tid(m, 7, now + 50 * MS), 4003);
	/* its inner tid taken by a new thread: remapped when read */
	put_status(&t, 4000, 4020, "4020\t7");
	assert_int_equal(pt_nstid__refresh(m), 0);
	assert_int_equal(pt_nstid__host_tid(m, 7, now + 60 * MS), 4020);

	/* a thread in a namespace nested twice: outer to innermost */
	put_status(&t, 4000, 4030, "4030\t30\t3");
	assert_int_equal(pt_nstid__host_tid(m, 3, now + 100 * MS), 4030);
	/* malformed status files are skipped, not fatal */
	put_status(&t, 4000, 4040, "garbage");
	assert_int_equal(pt_nstid__refresh(m), 0);
	pt_nstid__stats(m, &st);
	assert_int_equal(st.threads, 5); /* inner tids 1, 7 (remapped), 9, 11, 3 */
	pt_nstid__free(m);
	tree_free(&t);
}

/* Many threads: the map grows. */
static void test_many(void **state)
{
	struct pt_nstid *m = NULL;
	struct tree t;
	char ns[32];

	tree_new(&t);
	put_status(&t, 9000, 0, "9000\t1");
	for (int i = 0; i < 300; i++) {
		snprintf(ns, sizeof(ns), "%d\t%d", 9000 + i, 1 + i);
		put_status(&t, 9000, 9000 + i, ns);
	}
	assert_int_equal(pt_nstid__open(&m, t.root, 9000), 0);
	for (int i = 0; i < 300; i++)
		assert_int_equal(pt_nstid__host_tid(m, 1 + (uint32_t)i, 0), 9000 + i);
	pt_nstid__free(m);
	tree_free(&t);
}

/* The real /proc: a child in a new PID namespace (pid 1 there) with a
 * second thread. Needs CAP_SYS_ADMIN: skipped without. */
static void *idle_thread(void *arg)
{
	int *fd = arg;
	pid_t t = gettid();

	if (write(fd[1], &t, sizeof(t)) != sizeof(t))
		_exit(5);
	pause();
	return NULL;
}

static void test_real_namespace(void **state)
{
	int up[2], tids[2], status;
	pid_t child, target = 0, inner_tid = 0;
	bool got;
	struct pt_nstid *m = NULL;

	/* one pipe per message: the thread's tid may come before the child's
	 * pid and must not be read as part of it */
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(tids), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		pid_t gc;

		if (unshare(CLONE_NEWPID))
			_exit(77);
		gc = fork();
		if (gc < 0)
			_exit(1);
		if (!gc) {
			pthread_t th;

			if (pthread_create(&th, NULL, idle_thread, tids))
				_exit(2);
			pause();
			_exit(0);
		}
		if (write(up[1], &gc, sizeof(gc)) != sizeof(gc))
			_exit(3);
		waitpid(gc, &status, 0);
		_exit(0);
	}
	close(up[1]);
	close(tids[1]);
	got = read(up[0], &target, sizeof(target)) == sizeof(target);
	if (!got || read(tids[0], &inner_tid, sizeof(inner_tid)) != sizeof(inner_tid)) {
		if (got)
			kill(target, SIGKILL); /* the namespace's init: all of it ends */
		waitpid(child, &status, 0);
		close(up[0]);
		close(tids[0]);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
			skip();
		fail_msg("child: status %d", status);
	}
	close(up[0]);
	close(tids[0]);
	assert_int_equal(pt_nstid__open(&m, "/proc", target), 0);
	kill(target, SIGKILL); /* pid 1 of its namespace: the child then reaps */
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_non_null(m);
	assert_true(inner_tid > 1 && inner_tid < target);
	assert_int_equal(pt_nstid__host_tid(m, 1, 0), target);
	/* the second thread: host tid unknown to us, but not 0 nor inner */
	{
		uint32_t h = pt_nstid__host_tid(m, (uint32_t)inner_tid, 0);

		assert_true(h != 0 && h != (uint32_t)inner_tid && h != (uint32_t)target);
	}
	pt_nstid__free(m);
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_same_namespace),
		cmocka_unit_test(test_map_and_fresh),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_real_namespace),
	};
	/* clang-format on */

	return cmocka_run_group_tests_name("nstid", tests, NULL, NULL);
}
