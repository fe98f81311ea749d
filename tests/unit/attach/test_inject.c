// SPDX-License-Identifier: BSD-2-Clause
/*
 * The injector's decisions made before anything is stopped
 * (attach/safepoint.c): /proc/PID/task/TID/syscall and stat lines,
 * /proc/PID/status, the refusals, and which threads may be borrowed.
 * Fixtures under tests/fixtures/inject were taken from live processes on
 * Debian 12 (kernel 6.x): a C program in poll(), Python 3.11 threads in
 * clock_nanosleep, futex (a Lock), epoll_wait and read of a pipe, a
 * running thread, a stopped, a traced (PTRACE_SEIZE) and a zombie process,
 * and a Python 3.11 process of one thread sent SIGSTOP while the injector
 * held that thread (status_stop_pending: the stop pending, nothing else
 * to take it).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "attach/inject.h"
#include "attach/safepoint.h"

static char *fixture(const char *name)
{
	const char *dir = getenv("PT_SRC_FIXTURES");
	static char buf[8192];
	char path[PATH_MAX];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/inject/%s", dir ? dir : "tests/fixtures", name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s: %s (run from the repo root)", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static struct pt_sysline sysline(const char *name)
{
	struct pt_sysline sl;

	assert_int_equal(pt_sysline__parse(fixture(name), &sl), 0);
	return sl;
}

static void test_sysline(void **state)
{
	struct pt_sysline sl = sysline("syscall_poll");

	assert_false(sl.running);
	assert_int_equal(sl.nr, 7);
	assert_int_equal(sl.args[2], 1); /* poll(NULL, 0, 1) */
	assert_true(sl.sp != 0 && sl.pc != 0);
	sl = sysline("syscall_read_pipe");
	assert_int_equal(sl.nr, 0);
	assert_int_equal(sl.args[0], 4);
	sl = sysline("syscall_running");
	assert_true(sl.running);
	assert_int_equal(pt_sysline__parse("-1 0x7ffd0000 0x7f0000001234\n", &sl), 0);
	assert_int_equal(sl.nr, -1);
	assert_int_equal(sl.pc, 0x7f0000001234ull);
	/* malformed: each is refused, never half-read */
	assert_int_equal(pt_sysline__parse("", &sl), -EINVAL);
	assert_int_equal(pt_sysline__parse("7 0x0 0x0\n", &sl), -EINVAL);
	assert_int_equal(pt_sysline__parse("7 0x0 0x0 0x1 0x0 0x0 0x64 0x1 0x2 0x3\n", &sl),
			 -EINVAL);
	assert_int_equal(pt_sysline__parse("x 0x0\n", &sl), -EINVAL);
	assert_int_equal(pt_sysline__parse("7 0xzz 0x0 0x1 0x0 0x0 0x64 0x1 0x2\n", &sl), -EINVAL);
	assert_int_equal(pt_sysline__parse("-1 0x1\n", &sl), -EINVAL);
	assert_int_equal(pt_sysline__parse("-5 0x1 0x2\n", &sl), -EINVAL);
}

static void test_stat_state(void **state)
{
	assert_int_equal(pt_stat__state(fixture("stat_sleeping")), 'S');
	assert_int_equal(pt_stat__state(fixture("stat_running")), 'R');
	assert_int_equal(pt_stat__state(fixture("stat_zombie")), 'Z');
	/* a comm may hold ") " itself: the last ')' ends it */
	assert_int_equal(pt_stat__state("42 (a) S (b)) T 1 2 3\n"), 'T');
	assert_int_equal(pt_stat__state("42 (x"), 0);
	assert_int_equal(pt_stat__state("42 (x)"), 0);
	assert_int_equal(pt_stat__state("42 (x) Sx"), 0);
}

static struct pt_procstatus status(const char *name)
{
	struct pt_procstatus st;

	assert_int_equal(pt_procstatus__parse(fixture(name), &st), 0);
	return st;
}

static void test_status(void **state)
{
	struct pt_procstatus st = status("status_sleeping");

	assert_int_equal(st.state, 'S');
	assert_int_equal(st.tracer, 0);
	assert_true(st.have_uid);
	assert_int_equal(st.uid[3], 0);
	assert_false(st.shstk);
	assert_int_equal(status("status_stopped").state, 'T');
	assert_true(status("status_traced").tracer > 0);
	assert_int_equal(status("status_zombie").state, 'Z');
	assert_int_equal(pt_procstatus__parse("Name:\tx\nUid:\t1000\t1001\t1002\t1003\n"
					      "Gid:\t5\t6\t7\t8\nGroups:\t4 24 27 \n"
					      "State:\tS (sleeping)\nSigBlk:\t0000000000000400\n"
					      "x86_Thread_features:\tshstk wrss\n",
					      &st),
			 0);
	assert_int_equal(st.uid[0], 1000);
	assert_int_equal(st.uid[3], 1003);
	assert_int_equal(st.gid[3], 8);
	assert_int_equal(st.ngroups, 3);
	assert_int_equal(st.groups[2], 27);
	assert_int_equal(st.sigblk, 0x400);
	assert_true(st.shstk);
	assert_int_equal(pt_procstatus__parse("x86_Thread_features:\t\nState:\tR\n", &st), 0);
	assert_false(st.shstk);
	assert_int_equal(pt_procstatus__parse("Name:\tno state\n", &st), -EINVAL);
}

static void test_refusals(void **state)
{
	struct pt_procstatus st;
	char err[256];

	st = status("status_sleeping");
	assert_int_equal(pt_safepoint__check_proc(&st, 7, -1, err, sizeof(err)), 0);
	assert_int_equal(pt_safepoint__check_proc(&st, 7, 1, err, sizeof(err)), 0);
	st = status("status_traced");
	assert_int_equal(pt_safepoint__check_proc(&st, 7, -1, err, sizeof(err)), -EBUSY);
	{
		char want[64];

		snprintf(want, sizeof(want), "already traced by pid %d", st.tracer);
		assert_non_null(strstr(err, want));
	}
	st = status("status_stopped");
	assert_int_equal(pt_safepoint__check_proc(&st, 7, -1, err, sizeof(err)), -EAGAIN);
	assert_non_null(strstr(err, "stopped"));
	assert_non_null(strstr(err, "kill -CONT 7"));
	st = status("status_zombie");
	assert_int_equal(pt_safepoint__check_proc(&st, 7, -1, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "zombie"));
	st = status("status_sleeping");
	assert_int_equal(pt_safepoint__check_proc(&st, 7, 3, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "ptrace_scope 3"));
	st.shstk = true;
	assert_int_equal(pt_safepoint__check_proc(&st, 7, -1, err, sizeof(err)), -ENOTSUP);
	/* one line each */
	assert_null(strchr(err, '\n'));
}

static enum pt_safe classify(const char *sysfix, char state, const char *fdlink, bool epoll,
			     const char **why)
{
	struct pt_safe_opts o = { .allow_epoll = epoll };
	struct pt_sysline sl = sysline(sysfix);

	return pt_safepoint__classify(&sl, state, fdlink, &o, why);
}

static void test_classify(void **state)
{
	const char *why;

	assert_int_equal(classify("syscall_poll", 'S', NULL, false, &why), PT_SAFE_YES);
	assert_string_equal(why, "poll");
	assert_int_equal(classify("syscall_clock_nanosleep", 'S', NULL, false, &why), PT_SAFE_YES);
	assert_string_equal(why, "clock_nanosleep");
	/* a lock wait: it may hold a lock dlopen wants */
	assert_int_equal(classify("syscall_futex", 'S', NULL, false, &why), PT_SAFE_NOT_NOW);
	assert_non_null(strstr(why, "futex"));
	assert_int_equal(classify("syscall_futex", 'S', NULL, true, &why), PT_SAFE_NOT_NOW);
	/* epoll_wait would see EINTR: only when asked */
	assert_int_equal(classify("syscall_epoll", 'S', NULL, false, &why), PT_SAFE_NOT_NOW);
	assert_non_null(strstr(why, "epoll"));
	assert_int_equal(classify("syscall_epoll", 'S', NULL, true, &why), PT_SAFE_YES);
	/* reads: of a pipe, socket or tty only */
	assert_int_equal(classify("syscall_read_pipe", 'S', "pipe:[114488]", false, &why),
			 PT_SAFE_YES);
	assert_int_equal(classify("syscall_read_pipe", 'S', "socket:[9]", false, &why),
			 PT_SAFE_YES);
	assert_int_equal(classify("syscall_read_pipe", 'S', "/dev/pts/3", false, &why),
			 PT_SAFE_YES);
	assert_int_equal(classify("syscall_read_pipe", 'S', "/etc/passwd", false, &why),
			 PT_SAFE_NOT_NOW);
	assert_int_equal(classify("syscall_read_pipe", 'S', NULL, false, &why), PT_SAFE_NOT_NOW);
	/* the state letter: running, uninterruptible, stopped, exiting */
	assert_int_equal(classify("syscall_running", 'R', NULL, false, &why), PT_SAFE_NOT_NOW);
	assert_string_equal(why, "running");
	assert_int_equal(classify("syscall_poll", 'R', NULL, false, &why), PT_SAFE_NOT_NOW);
	assert_int_equal(classify("syscall_poll", 'D', NULL, false, &why), PT_SAFE_NOT_NOW);
	assert_int_equal(classify("syscall_poll", 't', NULL, false, &why), PT_SAFE_NOT_NOW);
	assert_int_equal(classify("syscall_poll", 'Z', NULL, false, &why), PT_SAFE_NEVER);
	/* blocked outside a syscall (a page fault), or in one that is no wait */
	{
		struct pt_sysline sl;

		assert_int_equal(pt_sysline__parse("-1 0x7ffd0000 0x7f0000001234", &sl), 0);
		assert_int_equal(pt_safepoint__classify(&sl, 'S', NULL, NULL, &why),
				 PT_SAFE_NOT_NOW);
		assert_int_equal(pt_sysline__parse("61 0x1 0x0 0x0 0x0 0x0 0x0 0x1 0x2", &sl), 0);
		assert_int_equal(pt_safepoint__classify(&sl, 'S', NULL, NULL, &why), PT_SAFE_YES);
		assert_string_equal(why, "wait4");
		assert_int_equal(pt_sysline__parse("1 0x1 0x0 0x0 0x0 0x0 0x0 0x1 0x2", &sl), 0);
		assert_int_equal(pt_safepoint__classify(&sl, 'S', "pipe:[1]", NULL, &why),
				 PT_SAFE_NOT_NOW); /* write: not a wait we take */
	}
}

static void test_regs(void **state)
{
	struct pt_safe_opts epoll = { .allow_epoll = true };
	char buf[24];

	assert_true(pt_safepoint__regs_ok(7, NULL));	/* poll */
	assert_true(pt_safepoint__regs_ok(0, NULL));	/* read */
	assert_true(pt_safepoint__regs_ok(230, NULL));	/* clock_nanosleep */
	assert_false(pt_safepoint__regs_ok(202, NULL)); /* futex */
	assert_false(pt_safepoint__regs_ok(-1, NULL));	/* user code */
	assert_false(pt_safepoint__regs_ok(232, NULL));
	assert_true(pt_safepoint__regs_ok(232, &epoll));
	assert_string_equal(pt_safepoint__sysname(35, buf, sizeof(buf)), "nanosleep");
	assert_string_equal(pt_safepoint__sysname(999, buf, sizeof(buf)), "syscall 999");
	assert_true(pt_safepoint__waits_on_fd(45));
	assert_false(pt_safepoint__waits_on_fd(7));
}

/* A job-control stop on its way, or in effect: what --inject keeps. */
static void test_stop_signal(void **state)
{
	struct pt_procstatus st = status("status_stop_pending");

	assert_int_equal(st.state, 't');
	assert_int_equal(st.shdpnd, 1ull << (SIGSTOP - 1));
	assert_int_equal(pt_safepoint__stop_signal(&st), SIGSTOP);
	assert_int_equal(pt_safepoint__stop_signal(&(struct pt_procstatus){ .state = 'S' }), 0);
	assert_int_equal(pt_safepoint__stop_signal(&(struct pt_procstatus){ .state = 't' }), 0);
	st = status("status_stopped");
	assert_int_equal(pt_safepoint__stop_signal(&st), -1);
	st = status("status_sleeping");
	assert_int_equal(pt_safepoint__stop_signal(&st), 0);
	/* the tty stops stop only when neither caught nor ignored */
	assert_int_equal(
		pt_procstatus__parse("State:\tS (sleeping)\nSigPnd:\t0000000000080000\n"
				     "ShdPnd:\t0000000000000000\nSigIgn:\t0000000000000000\n"
				     "SigCgt:\t0000000000000000\n",
				     &st),
		0);
	assert_int_equal(st.sigpnd, 1ull << (SIGTSTP - 1));
	assert_int_equal(pt_safepoint__stop_signal(&st), SIGTSTP);
	st.sigcgt = 1ull << (SIGTSTP - 1);
	assert_int_equal(pt_safepoint__stop_signal(&st), 0);
	st.sigcgt = 0;
	st.sigign = 1ull << (SIGTSTP - 1);
	assert_int_equal(pt_safepoint__stop_signal(&st), 0);
	st.shdpnd = 1ull << (SIGTTOU - 1);
	assert_int_equal(pt_safepoint__stop_signal(&st), SIGTTOU);
	st.shdpnd |= 1ull << (SIGSTOP - 1);
	st.sigign = ~0ull; /* SIGSTOP cannot be */
	assert_int_equal(pt_safepoint__stop_signal(&st), SIGSTOP);
	/* other signals pending are no stop */
	st = (struct pt_procstatus){ .state = 'S',
				     .sigpnd = 1ull << (SIGCONT - 1) | 1ull << (SIGUSR1 - 1) };
	assert_int_equal(pt_safepoint__stop_signal(&st), 0);
}

/* kernel-internal errno values (include/linux/errno.h) */
#define ERESTARTSYS 512
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

static void test_resume_regs(void **state)
{
	uint64_t rax, rip;

	/* read interrupted (SA_RESTART-like): the kernel restarts it at a
	 * stop; the hand-off frame must do it itself */
	rax = (uint64_t)-ERESTARTSYS, rip = 0x1002;
	pt_inject__resume_regs(0, &rax, &rip, false, false);
	assert_int_equal((int64_t)rax, -ERESTARTSYS);
	assert_int_equal(rip, 0x1002);
	pt_inject__resume_regs(0, &rax, &rip, true, false);
	assert_int_equal(rax, 0); /* read's number: issued again */
	assert_int_equal(rip, 0x1000);
	rax = (uint64_t)-ERESTARTNOHAND, rip = 0x2002;
	pt_inject__resume_regs(7, &rax, &rip, true, false);
	assert_int_equal(rax, 7);
	assert_int_equal(rip, 0x2000);
	/* a sleep's restart needs its restart block: EINTR when it is not
	 * there (hand-off) or may have been replaced (lost) */
	rax = (uint64_t)-ERESTART_RESTARTBLOCK, rip = 0x3002;
	pt_inject__resume_regs(230, &rax, &rip, false, false);
	assert_int_equal((int64_t)rax, -ERESTART_RESTARTBLOCK);
	pt_inject__resume_regs(230, &rax, &rip, false, true);
	assert_int_equal((int64_t)rax, -EINTR);
	assert_int_equal(rip, 0x3002);
	rax = (uint64_t)-ERESTART_RESTARTBLOCK;
	pt_inject__resume_regs(230, &rax, &rip, true, false);
	assert_int_equal((int64_t)rax, -EINTR);
	/* just back from it, or not in one: as it is */
	rax = 5, rip = 0x4002;
	pt_inject__resume_regs(0, &rax, &rip, true, true);
	assert_int_equal(rax, 5);
	assert_int_equal(rip, 0x4002);
	rax = (uint64_t)-ERESTARTSYS;
	pt_inject__resume_regs(-1, &rax, &rip, true, true);
	assert_int_equal((int64_t)rax, -ERESTARTSYS);
	assert_int_equal(rip, 0x4002);
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysline),  cmocka_unit_test(test_stat_state),
		cmocka_unit_test(test_status),   cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_classify), cmocka_unit_test(test_regs),
		cmocka_unit_test(test_resume_regs), cmocka_unit_test(test_stop_signal),
	};
	/* clang-format on */

	return cmocka_run_group_tests_name("inject", tests, NULL, NULL);
}
