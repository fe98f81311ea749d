// SPDX-License-Identifier: BSD-2-Clause
/*
 * util/sigbus, util/segment, util/users: a file mapping truncated under us
 * is zeros, not SIGBUS, inside a guarded range, and the default SIGBUS
 * (death) outside one, for a sent SIGBUS, and once unguarded; a helper's
 * segment is found among a process's open files, sealed so nobody can
 * shrink it; memfds of its name the helper did not make are refused with
 * what they are and whose, a parent's held across fork is not taken for
 * the child's; SUDO_UID/SUDO_GID are read strictly.
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/memseg.h"
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

/* A helper's segment for the tests: name, magic, where its pid is. */
#define SEG_NAME "pt-test-seg"
#define SEG_MAGIC "PTTESTSG"
static const struct pt_segment_kind kind = {
	.name = SEG_NAME,
	.magic = SEG_MAGIC,
	.magic_len = 8,
	.pid_off = 8,
	.min = 4096,
	.max = 1 << 20,
	.what = "test segment",
	.hint = "start it with the helper",
};

/* A segment of len bytes as a helper makes it (shim/memseg.h), published
 * with magic and pid unless pid is 0: its fd. */
static int make_seg(size_t len, uint32_t pid)
{
	void *mem = NULL;
	int fd = -1;

	assert_int_equal(pt_memseg__create(SEG_NAME, len, &mem, &fd), 0);
	if (pid) {
		memcpy((char *)mem + 8, &pid, sizeof(pid));
		memcpy(mem, SEG_MAGIC, 8);
	}
	munmap(mem, len);
	return fd;
}

/* Found among our own open files, mapped, the helper's bytes there; sealed,
 * so no opener can shrink it under us (the SIGBUS of issue 27): nothing to
 * lose. */
static void test_segment_found(void **state)
{
	char err[512], path[64];
	struct pt_segment s;
	int fd, other;

	fd = make_seg(3 * 4096, (uint32_t)getpid());
	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), 0);
	assert_int_equal(s.len, 3 * 4096);
	assert_memory_equal(s.map, SEG_MAGIC, 8);
	assert_non_null(strstr(s.path, "/fd/"));
	assert_non_null(strstr(s.path, "memfd:" SEG_NAME));
	/* what the target's user could do: reopen it, resize it */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), fd);
	other = open(path, O_RDWR);
	assert_true(other >= 0);
	assert_int_equal(ftruncate(other, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(other, 1 << 20), -1);
	assert_int_equal(fcntl(other, F_ADD_SEALS, F_SEAL_WRITE), -1); /* nor seal it further */
	close(other);
	assert_int_equal(((volatile uint8_t *)s.map)[3 * 4096 - 1], 0);
	assert_false(pt_segment__lost(&s));
	pt_segment__close(&s);
	/* a helper that has not published yet: returned, the caller waits */
	close(fd);
	fd = make_seg(4096, 0);
	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), 0);
	pt_segment__close(&s);
	close(fd);
}

/* A program that closes every fd it did not open (a daemon's start) closes
 * the helper's too; its mapping keeps the memfd, found through map_files.
 * A reused fd number is not taken for it. */
static void test_segment_fd_closed(void **state)
{
	char err[512];
	struct pt_segment s;
	void *mem = NULL;
	int fd = -1, other;

	assert_int_equal(pt_memseg__create(SEG_NAME, 2 * 4096, &mem, &fd), 0);
	memcpy((char *)mem + 8, &(uint32_t){ (uint32_t)getpid() }, 4);
	memcpy(mem, SEG_MAGIC, 8);
	close(fd);
	other = open("/dev/null", O_RDONLY); /* the number, reused */
	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), 0);
	assert_non_null(strstr(s.path, "/map_files/"));
	assert_int_equal(s.len, 2 * 4096);
	assert_memory_equal(s.map, SEG_MAGIC, 8);
	assert_ptr_not_equal(s.map, mem);
	((volatile char *)s.map)[100] = 7; /* one memory: the helper sees it */
	assert_int_equal(((volatile char *)mem)[100], 7);
	pt_segment__close(&s);
	munmap(mem, 2 * 4096);
	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "open files or mappings"));
	close(other);
}

/* None: what to do; a dead process: said. */
static void test_segment_none(void **state)
{
	char err[512];
	struct pt_segment s;
	int status;
	pid_t pid;

	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no memfd \"" SEG_NAME "\""));
	assert_non_null(strstr(err, "start it with the helper"));
	pid = fork();
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(pt_segment__open(&s, pid, &kind, err, sizeof(err)), -ENOENT);
	assert_int_equal(pt_segment__open(&s, 0, &kind, err, sizeof(err)), -EINVAL);
}

/* A memfd of the helper's name that the helper did not make: not sealed,
 * of another user (one could be handed in over a socket), of a size no
 * segment has. Refused with what it is, and left alone. */
static void test_segment_not_ours(void **state)
{
	char err[512];
	struct pt_segment s;
	int fd;

	fd = (int)syscall(SYS_memfd_create, SEG_NAME, MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not sealed"));
	assert_non_null(strstr(err, "left alone"));
	close(fd);
	/* sealable, not sealed yet: a helper between making and sealing it
	 * (seen on a GPU: --inject's first look); asked again */
	fd = (int)syscall(SYS_memfd_create, SEG_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), -EAGAIN);
	assert_non_null(strstr(err, "yet"));
	close(fd);

	fd = make_seg(2 << 20, (uint32_t)getpid());
	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "2097152 bytes"));
	close(fd);

	if (geteuid() == 0) {
		fd = make_seg(4096, (uint32_t)getpid());
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "made by uid 65534"));
		assert_non_null(strstr(err, "not by the process's user (uid 0"));
		close(fd);
	}
	/* a good one beside a bad one: the good one */
	fd = (int)syscall(SYS_memfd_create, SEG_NAME, MFD_CLOEXEC);
	assert_int_equal(ftruncate(fd, 4096), 0);
	int good = make_seg(4096, (uint32_t)getpid());
	assert_int_equal(pt_segment__open(&s, getpid(), &kind, err, sizeof(err)), 0);
	pt_segment__close(&s);
	close(good);
	close(fd);
}

/* fork() without exec: the child holds its parent's segment, which is not
 * its own (a forked worker of a server); its own, once its helper makes
 * one, is. */
static void test_segment_parent(void **state)
{
	int fd = make_seg(4096, (uint32_t)getpid()), status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		char err[512];
		struct pt_segment s;
		int mine;

		if (pt_segment__open(&s, getpid(), &kind, err, sizeof(err)) != -ENOENT ||
		    !strstr(err, "its parent's"))
			_exit(1);
		mine = make_seg(4096, (uint32_t)getpid());
		if (pt_segment__open(&s, getpid(), &kind, err, sizeof(err)) ||
		    memcmp((char *)s.map + 8, &(uint32_t){ (uint32_t)getpid() }, 4))
			_exit(2);
		pt_segment__close(&s);
		close(mine);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(fd);
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
		cmocka_unit_test(test_segment_found),
		cmocka_unit_test(test_segment_none),
		cmocka_unit_test(test_segment_fd_closed),
		cmocka_unit_test(test_segment_not_ours),
		cmocka_unit_test(test_segment_parent),
		cmocka_unit_test(test_invoker),
		cmocka_unit_test(test_denied_hint),
	};
	/* clang-format on */

	return cmocka_run_group_tests_name("segment", tests, NULL, NULL);
}
