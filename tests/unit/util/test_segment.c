// SPDX-License-Identifier: BSD-2-Clause
/*
 * util/sigbus, util/segment, util/users: a file mapping truncated under us
 * is zeros, not SIGBUS, inside a guarded range, and the default SIGBUS
 * (death) outside one, for a sent SIGBUS, and once unguarded; a segment
 * whose file shrank is lost; squatters at a segment's name are refused
 * with what they are and whose; stale segments (no helper holds them) are
 * removed and nothing else is; SUDO_UID/SUDO_GID are read strictly.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/ptagent.h"
#include "shim/ptgpu.h"
#include "util/segment.h"
#include "util/sigbus.h"
#include "util/users.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/pt-segment-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A file of n pages, each page filled with its number + 1, mapped shared. */
static volatile uint8_t *map_file(const char *path, size_t n, int *fdp)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	void *m;

	assert_true(fd >= 0);
	for (size_t i = 0; i < n; i++) {
		uint8_t buf[4096];

		memset(buf, (int)i + 1, sizeof(buf));
		assert_int_equal(pwrite(fd, buf, pg, (off_t)(i * pg)), (ssize_t)pg);
	}
	m = mmap(NULL, n * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	*fdp = fd;
	return m;
}

/* How a child that touched page 1 of a truncated mapping ended. */
static int child_touch(void (*fn)(volatile uint8_t *m, int fd))
{
	char path[96];
	int status, fd;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/child", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		volatile uint8_t *m;

		/* as proftrace starts (cmocka catches SIGBUS in its tests) */
		signal(SIGBUS, SIG_DFL);
		m = map_file(path, 3, &fd);

		fn(m, fd);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void truncate_and_read(volatile uint8_t *m, int fd)
{
	(void)!ftruncate(fd, 0);
	(void)m[4096];
}

static void guard_truncate_and_read(volatile uint8_t *m, int fd)
{
	pt_sigbus__guard((void *)m, 3 * 4096);
	truncate_and_read(m, fd);
}

static void guard_unguard_read(volatile uint8_t *m, int fd)
{
	pt_sigbus__unguard(pt_sigbus__guard((void *)m, 3 * 4096));
	truncate_and_read(m, fd);
}

static void guard_then_kill(volatile uint8_t *m, int fd)
{
	pt_sigbus__guard((void *)m, 3 * 4096);
	kill(getpid(), SIGBUS);
}

/* The attack, in one process: the file shrinks to nothing while
 * mapped; each page read after is zeros, counted, and writes land in
 * private memory (the target's file is not grown back). */
static void test_guarded_truncation_is_zeros(void **state)
{
	char path[96];
	volatile uint8_t *m;
	struct stat st;
	int fd, g;

	if (sysconf(_SC_PAGESIZE) != 4096)
		skip();
	snprintf(path, sizeof(path), "%s/seg", dir);
	m = map_file(path, 3, &fd);
	g = pt_sigbus__guard((void *)m, 3 * 4096);
	assert_true(g >= 0);
	assert_int_equal(m[4096], 2);
	assert_int_equal(pt_sigbus__faults(g), 0);
	assert_int_equal(ftruncate(fd, 4096), 0); /* page 0 stays */
	assert_int_equal(m[4096 + 7], 0);
	assert_int_equal(pt_sigbus__faults(g), 1);
	m[4096 + 8] = 9; /* the same page: no new fault */
	assert_int_equal(m[4096 + 8], 9);
	assert_int_equal(m[2 * 4096], 0);
	assert_int_equal(pt_sigbus__faults(g), 2);
	assert_int_equal(m[0], 1);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 4096);
	pt_sigbus__unguard(g);
	assert_int_equal(pt_sigbus__faults(g), 0);
	munmap((void *)m, 3 * 4096);
	close(fd);
}

/* Unguarded, unguarded again, or sent with kill: SIGBUS kills as before. */
static void test_default_elsewhere(void **state)
{
	int st;

	st = child_touch(truncate_and_read);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS);
	st = child_touch(guard_unguard_read);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS);
	st = child_touch(guard_then_kill);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS);
	st = child_touch(guard_truncate_and_read);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_guard_slots(void **state)
{
	static int ids[PT_SIGBUS_MAX];
	char x;

	for (int i = 0; i < PT_SIGBUS_MAX; i++) {
		ids[i] = pt_sigbus__guard(&x, 1);
		assert_true(ids[i] >= 0);
	}
	assert_int_equal(pt_sigbus__guard(&x, 1), -ENOSPC);
	for (int i = 0; i < PT_SIGBUS_MAX; i++)
		pt_sigbus__unguard(ids[i]);
	assert_true(pt_sigbus__guard(&x, 1) >= 0);
	pt_sigbus__unguard(0);
	pt_sigbus__unguard(-1);
	assert_int_equal(pt_sigbus__faults(-1), 0);
}

#define PREFIX "/dev/shm/pt-test-segment-"

/* Our segment, len bytes, locked as a live helper holds it: its fd. */
static int make_seg(size_t len)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), PREFIX "%d", (int)getpid());
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -1;
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	return fd;
}

/* A segment truncated by its user: lost by its size, and by a fault. */
static void test_segment_lost(void **state)
{
	struct pt_segment s;
	char err[512], path[96];
	int fd;

	snprintf(path, sizeof(path), PREFIX "%d", (int)getpid());
	fd = make_seg(3 * 4096);
	if (fd < 0)
		skip(); /* no /dev/shm */
	assert_int_equal(pt_segment__open(&s, getpid(), PREFIX, 4096, 1 << 20, "test", NULL, err,
					  sizeof(err)),
			 0);
	assert_false(pt_segment__lost(&s));
	assert_int_equal(ftruncate(fd, 0), 0);
	/* read before anyone looked: zeros, not death */
	assert_int_equal(((volatile uint8_t *)s.map)[3 * 4096 - 1], 0);
	assert_true(pt_segment__lost(&s));
	assert_int_equal(ftruncate(fd, 3 * 4096), 0); /* grown back: still lost */
	assert_true(pt_segment__lost(&s));
	pt_segment__close(&s);
	/* by its size alone, before any fault */
	assert_int_equal(pt_segment__open(&s, getpid(), PREFIX, 4096, 1 << 20, "test", NULL, err,
					  sizeof(err)),
			 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_true(pt_segment__lost(&s));
	pt_segment__close(&s);
	close(fd);
	unlink(path);
}

/* What holds a segment's name and is not the helper's: refused, with what
 * it is and whose. */
static void test_segment_squatters(void **state)
{
	char err[512], path[96], other[96];
	struct pt_segment s;
	int fd;

	snprintf(path, sizeof(path), PREFIX "%d", (int)getpid());
	snprintf(other, sizeof(other), "%s/target", dir);
	unlink(path);
	if (symlink(other, path))
		skip();
	assert_int_equal(pt_segment__open(&s, getpid(), PREFIX, 4096, 1 << 20, "test", NULL, err,
					  sizeof(err)),
			 -EPERM);
	assert_non_null(strstr(err, "a symbolic link"));
	assert_non_null(strstr(err, "uid 0"));
	assert_int_equal(access(other, F_OK), -1); /* not created through it */
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(pt_segment__open(&s, getpid(), PREFIX, 4096, 1 << 20, "test", NULL, err,
					  sizeof(err)),
			 -EPERM);
	assert_non_null(strstr(err, "a FIFO"));
	unlink(path);
	/* another user's file, in a process of ours (we are root here) */
	if (geteuid() == 0) {
		fd = make_seg(4096);
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		assert_int_equal(pt_segment__open(&s, getpid(), PREFIX, 4096, 1 << 20, "test", NULL,
						  err, sizeof(err)),
				 -EPERM);
		assert_non_null(strstr(err, "made by uid 65534"));
		assert_non_null(strstr(err, "not by the process's user (uid 0"));
		close(fd);
		unlink(path);
	}
}

static void put(const char *name, const void *data, size_t len, time_t age)
{
	char path[160];
	struct timespec ts[2];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= age;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static bool there(const char *name)
{
	char path[160];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !lstat(path, &st);
}

/* Segments of helpers that are gone are removed; live, young, foreign
 * and oddly named ones stay. */
static void test_sweep(void **state)
{
	char path[160], lnk[160], zeros[64] = { 0 };
	int fd;

	put("proftrace-py-101", PTAG_MAGIC "rest", 12, 60);
	put("proftrace-102", PTGPU_MAGIC "rest", 12, 60);
	put("proftrace-py-103", zeros, sizeof(zeros), 60); /* died before publishing */
	put("proftrace-104", "", 0, 60);		   /* truncated */
	put("proftrace-py-105", PTAG_MAGIC, 8, 0);	   /* just made: its helper locks it next */
	put("proftrace-py-106", "not ours", 8, 60);
	put("proftrace-py-107", PTGPU_MAGIC, 8, 60); /* the other helper's magic */
	put("proftrace-py-10x", PTAG_MAGIC, 8, 60);
	put("proftrace-py-", PTAG_MAGIC, 8, 60);
	put("proftrace-108", PTGPU_MAGIC, 8, 60); /* live: locked below */
	put("other-109", PTGPU_MAGIC, 8, 60);
	put("proftrace-py-110", PTAG_MAGIC, 8, 60); /* two names */
	snprintf(path, sizeof(path), "%s/proftrace-py-110", dir);
	snprintf(lnk, sizeof(lnk), "%s/hardlink", dir);
	assert_int_equal(link(path, lnk), 0);
	snprintf(lnk, sizeof(lnk), "%s/proftrace-py-111", dir);
	assert_int_equal(symlink(path, lnk), 0);
	snprintf(path, sizeof(path), "%s/proftrace-108", dir);
	fd = open(path, O_RDWR);
	assert_int_equal(flock(fd, LOCK_EX), 0);

	assert_int_equal(pt_segment__sweep(dir, 2), 4);
	assert_false(there("proftrace-py-101"));
	assert_false(there("proftrace-102"));
	assert_false(there("proftrace-py-103"));
	assert_false(there("proftrace-104"));
	assert_true(there("proftrace-py-105"));
	assert_true(there("proftrace-py-106"));
	assert_true(there("proftrace-py-107"));
	assert_true(there("proftrace-py-10x"));
	assert_true(there("proftrace-py-"));
	assert_true(there("proftrace-108"));
	assert_true(there("other-109"));
	assert_true(there("proftrace-py-110"));
	assert_true(there("proftrace-py-111"));
	close(fd);
	assert_int_equal(pt_segment__sweep(dir, 2), 1); /* its helper went: 108 */
	assert_int_equal(pt_segment__sweep("/nonexistent-pt", 2), -ENOENT);
}

static void test_invoker(void **state)
{
	uid_t u;
	gid_t g;
	char buf[64];

	if (geteuid() != 0)
		skip();
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	assert_int_equal(pt_users__invoker(&u, &g), -ENOENT);
	assert_int_equal(u, 0);
	setenv("SUDO_UID", "1000", 1);
	setenv("SUDO_GID", "1001", 1);
	assert_int_equal(pt_users__invoker(&u, &g), 0);
	assert_int_equal(u, 1000);
	assert_int_equal(g, 1001);
	assert_true(pt_users__trusted(1000));
	assert_true(pt_users__trusted(0));
	assert_false(pt_users__trusted(65534));
	/* not numbers, out of range, or root: nobody else */
	static const char *const bad[] = { "", "x", "-1", "10x", " 7", "4294967295", "0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("SUDO_UID", bad[i], 1);
		assert_int_equal(pt_users__invoker(&u, &g), -ENOENT);
	}
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	assert_false(pt_users__trusted(1000));
	assert_string_equal(pt_users__name(0, buf, sizeof(buf)), "uid 0 (root)");
	assert_string_equal(pt_users__name(4000000, buf, sizeof(buf)), "uid 4000000");
}

/* Issue 27: refused as root, the hint never says "run as root". */
static void test_denied_hint(void **state)
{
	char buf[512];
	int status;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	pt_users__denied_hint(1, buf, sizeof(buf));
	assert_null(strstr(buf, "run as root, e.g."));
	assert_non_null(strstr(buf, "we run as root"));
	/* not root: that is the hint */
	pid = fork();
	if (!pid) {
		if (setresuid(65534, 65534, 65534))
			_exit(2);
		pt_users__denied_hint(1, buf, sizeof(buf));
		_exit(strstr(buf, "run as root, e.g. `sudo") ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_guarded_truncation_is_zeros, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_elsewhere, setup, teardown),
		cmocka_unit_test(test_guard_slots),
		cmocka_unit_test(test_segment_lost),
		cmocka_unit_test_setup_teardown(test_segment_squatters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
		cmocka_unit_test(test_invoker),
		cmocka_unit_test(test_denied_hint),
	};
	/* clang-format on */

	return cmocka_run_group_tests_name("segment", tests, NULL, NULL);
}
