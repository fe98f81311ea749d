// SPDX-License-Identifier: BSD-2-Clause
/*
 * report/outdir: the output folder is checked before use, files are never
 * written through a planted link or over someone else's file, each appears
 * whole or not at all, and a fallback folder is always there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/outdir.h"

static char base[64];

static int setup(void **state)
{
	snprintf(base, sizeof(base), "/tmp/pt-outdir-XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	return system(cmd) == 0 ? 0 : -1;
}

static int put_text(FILE *f, const void *ctx)
{
	return fputs(ctx, f) == EOF ? -EIO : 0;
}

static int fail_midway(FILE *f, const void *ctx)
{
	fputs("half", f);
	return -ENOSPC;
}

/* As report_md.c and trace.c do: fprintf()s, then -EIO on ferror(). */
static int put_big(FILE *f, const void *ctx)
{
	for (int i = 0; i < 4096; i++)
		fprintf(f, "%0255d\n", i);
	return ferror(f) ? -EIO : 0;
}

static char *slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void test_creates_and_writes(void **state)
{
	char path[PATH_MAX], file[PATH_MAX + 32], err[512];
	struct pt_outdir *d;
	struct stat st;

	snprintf(path, sizeof(path), "%s/a/b/run", base);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_string_equal(pt_outdir__path(d), path);
	assert_int_equal(pt_outdir__write(d, "summary.json", put_text, "{}\n", err, sizeof(err)),
			 0);
	snprintf(file, sizeof(file), "%s/summary.json", path);
	assert_string_equal(slurp(file), "{}\n");
	/* no temporary file left beside it, no check file either */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_nlink, 2);
	pt_outdir__close(d);
	assert_int_equal(stat(file, &st), 0); /* written: the folder stays */
}

static void test_unique_never_mixes_runs(void **state)
{
	char path[PATH_MAX], want[PATH_MAX + 8], err[512];
	struct pt_outdir *a, *b;

	snprintf(path, sizeof(path), "%s/proftrace_out/x-1-2", base);
	assert_int_equal(pt_outdir__open(&a, path, 1, err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__open(&b, path, 1, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s-2", path);
	assert_string_equal(pt_outdir__path(b), want);
	pt_outdir__close(a);
	pt_outdir__close(b);
	/* nothing written: both removed */
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(want, F_OK), -1);
}

static void test_symlinked_folder_refused(void **state)
{
	char path[PATH_MAX], target[PATH_MAX], err[512];
	struct pt_outdir *d;

	snprintf(target, sizeof(target), "%s/elsewhere", base);
	snprintf(path, sizeof(path), "%s/out", base);
	assert_int_equal(mkdir(target, 0755), 0);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), -ELOOP);
	assert_null(d);
	assert_non_null(strstr(err, "symbolic link"));
}

/* A link planted where an output goes is replaced, never followed: the
 * file it points at (any file on the machine, for a root tool) is intact. */
static void test_planted_file_link_not_followed(void **state)
{
	char path[PATH_MAX], victim[PATH_MAX], link[PATH_MAX + 32], err[512];
	struct pt_outdir *d;
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/out", base);
	snprintf(victim, sizeof(victim), "%s/precious", base);
	snprintf(link, sizeof(link), "%s/summary.json", path);
	assert_int_equal(mkdir(path, 0755), 0);
	f = fopen(victim, "we");
	assert_non_null(f);
	fputs("keep me", f);
	fclose(f);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__write(d, "summary.json", put_text, "{}\n", err, sizeof(err)),
			 0);
	pt_outdir__close(d);
	assert_string_equal(slurp(victim), "keep me");
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_string_equal(slurp(link), "{}\n");
}

/* A failed write leaves neither a partial file nor its temporary. */
static void test_failed_write_leaves_nothing(void **state)
{
	char path[PATH_MAX], file[PATH_MAX + 32], err[512];
	struct pt_outdir *d;
	struct stat st;

	snprintf(path, sizeof(path), "%s/out", base);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__write(d, "report.md", fail_midway, NULL, err, sizeof(err)),
			 -ENOSPC);
	assert_non_null(strstr(err, "report.md"));
	snprintf(file, sizeof(file), "%s/report.md", path);
	assert_int_equal(access(file, F_OK), -1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_nlink, 2);
	/* an earlier version of the file stays whole */
	assert_int_equal(pt_outdir__write(d, "report.md", put_text, "v1", err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__write(d, "report.md", fail_midway, NULL, err, sizeof(err)),
			 -ENOSPC);
	assert_string_equal(slurp(file), "v1");
	pt_outdir__close(d);
}

static void test_unwritable_folder_refused(void **state)
{
	char path[PATH_MAX], err[512];
	struct pt_outdir *d;

	/* root ignores mode bits: a read-only bind would do, a file does too */
	snprintf(path, sizeof(path), "%s/file", base);
	assert_int_equal(close(open(path, O_CREAT | O_WRONLY, 0644)), 0);
	assert_int_not_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/file/sub", base);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "file/sub"));
	snprintf(path, sizeof(path), "/proc/version/out");
	assert_int_not_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
}

/* A folder named by where it is ("/", ".", "a/.."): used as it is. */
static void test_dot_and_root(void **state)
{
	char path[PATH_MAX], err[512], cwd[PATH_MAX];
	struct pt_outdir *d;

	snprintf(path, sizeof(path), "%s/x", base);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/x/..", base);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__write(d, "f", put_text, "1", err, sizeof(err)), 0);
	pt_outdir__close(d);
	snprintf(path, sizeof(path), "%s/f", base);
	assert_string_equal(slurp(path), "1");
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(base), 0);
	assert_int_equal(pt_outdir__open(&d, ".", 0, err, sizeof(err)), 0);
	pt_outdir__close(d);
	assert_int_equal(chdir(cwd), 0);
	if (geteuid() == 0) {
		assert_int_equal(pt_outdir__open(&d, "/", 0, err, sizeof(err)), 0);
		assert_string_equal(pt_outdir__path(d), "/");
		pt_outdir__close(d);
	}
}

static void test_fallback(void **state)
{
	char err[512];
	struct pt_outdir *d;
	struct stat st;

	setenv("TMPDIR", base, 1);
	assert_int_equal(pt_outdir__fallback(&d, "proftrace-42", err, sizeof(err)), 0);
	assert_memory_equal(pt_outdir__path(d), base, strlen(base));
	assert_int_equal(stat(pt_outdir__path(d), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(pt_outdir__write(d, "summary.json", put_text, "{}", err, sizeof(err)), 0);
	pt_outdir__close(d);
	/* a TMPDIR that cannot be used: the next candidate */
	setenv("TMPDIR", "/proc", 1);
	assert_int_equal(pt_outdir__fallback(&d, "proftrace-42", err, sizeof(err)), 0);
	pt_outdir__close(d); /* empty: removed */
	unsetenv("TMPDIR");
}

/*
 * Issue 27: with a world-writable sticky folder on the way, another user
 * makes a middle component a link to a root-only folder. Root does not
 * follow it (anyone could have planted it) and says whose it is; a link
 * root made is followed; under sudo, the invoking user's too.
 */
static void test_planted_middle_link_refused(void **state)
{
	char pub[PATH_MAX], link[PATH_MAX + 16], rootonly[PATH_MAX], path[PATH_MAX + 32], err[1024];
	struct pt_outdir *d;
	struct stat st;

	if (geteuid() != 0)
		skip(); /* a link of another user */
	snprintf(pub, sizeof(pub), "%s/pubtmp", base);
	snprintf(rootonly, sizeof(rootonly), "%s/rootonly", base);
	snprintf(link, sizeof(link), "%s/results", pub);
	snprintf(path, sizeof(path), "%s/run1", link);
	assert_int_equal(mkdir(pub, 01777), 0);
	assert_int_equal(chmod(pub, 01777), 0);
	assert_int_equal(mkdir(rootonly, 0700), 0);
	assert_int_equal(symlink(rootonly, link), 0);
	assert_int_equal(lchown(link, 65534, 65534), 0);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), -ELOOP);
	assert_null(d);
	assert_non_null(strstr(err, "results is a symbolic link made by uid 65534"));
	assert_null(strchr(err, '\n'));
	snprintf(path, sizeof(path), "%s/run1", rootonly);
	assert_int_equal(access(path, F_OK), -1); /* nothing made there */
	/* the same through a path with more after it, and unique */
	snprintf(path, sizeof(path), "%s/a/b", link);
	assert_int_equal(pt_outdir__open(&d, path, 1, err, sizeof(err)), -ELOOP);

	/* a link root made is root's choice: followed */
	assert_int_equal(lchown(link, 0, 0), 0);
	snprintf(path, sizeof(path), "%s/run1", link);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	pt_outdir__close(d);

	/* under sudo, the invoking user's links are theirs to follow */
	assert_int_equal(lchown(link, 65534, 65534), 0);
	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65534", 1);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__write(d, "summary.json", put_text, "{}", err, sizeof(err)), 0);
	pt_outdir__close(d);
	snprintf(path, sizeof(path), "%s/run1/summary.json", rootonly);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	/* another user's link still is not */
	assert_int_equal(lchown(link, 1, 1), 0);
	snprintf(path, sizeof(path), "%s/run2", link);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "root or you"));
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
}

/* Issue 27: what proftrace creates is private (0700 folders, 0600 files)
 * and, under sudo, the invoking user's; a folder it did not create keeps
 * its owner and mode. */
static void test_private_and_the_invokers(void **state)
{
	char path[PATH_MAX], file[PATH_MAX + 32], err[512];
	struct pt_outdir *d;
	struct stat st;

	if (geteuid() != 0)
		skip();
	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65533", 1);
	snprintf(path, sizeof(path), "%s/made/run", base);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__write(d, "report.md", put_text, "x", err, sizeof(err)), 0);
	pt_outdir__close(d);
	for (int i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s/made%s", base, i ? "/run" : "");
		assert_int_equal(stat(file, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
		assert_int_equal(st.st_uid, 65534);
		assert_int_equal(st.st_gid, 65533);
	}
	snprintf(file, sizeof(file), "%s/report.md", path);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, 65534);
	/* an existing folder is not ours to change */
	snprintf(path, sizeof(path), "%s/theirs", base);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	pt_outdir__close(d);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, 0);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	/* without sudo: root's, still private */
	snprintf(path, sizeof(path), "%s/mine", base);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__write(d, "summary.json", put_text, "{}", err, sizeof(err)), 0);
	pt_outdir__close(d);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, 0);
}

/* Issue 27: a full disk is said as such, not as the "Input/output error"
 * of an emitter that only sees ferror(); so is a file size limit. */
static void test_write_error_said(void **state)
{
	char path[PATH_MAX], small[256], err[512];
	struct rlimit old, lim;
	struct pt_outdir *d;

	snprintf(path, sizeof(path), "%s/out", base);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 64 << 10;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(pt_outdir__write(d, "report.md", put_big, NULL, err, sizeof(err)), -EFBIG);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);
	assert_non_null(strstr(err, strerror(EFBIG)));
	pt_outdir__close(d);

	snprintf(small, sizeof(small), "%s/small", base);
	assert_int_equal(mkdir(small, 0700), 0);
	if (mount("tmpfs", small, "tmpfs", 0, "size=64k"))
		skip(); /* not root */
	snprintf(path, sizeof(path), "%s/out", small);
	assert_int_equal(pt_outdir__open(&d, path, 0, err, sizeof(err)), 0);
	assert_int_equal(pt_outdir__write(d, "report.md", put_big, NULL, err, sizeof(err)),
			 -ENOSPC);
	assert_non_null(strstr(err, "No space left on device (the disk is full)"));
	assert_null(strstr(err, "Input/output"));
	pt_outdir__close(d);
	umount2(small, MNT_DETACH);
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_creates_and_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unique_never_mixes_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinked_folder_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planted_file_link_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable_folder_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dot_and_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planted_middle_link_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_private_and_the_invokers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error_said, setup, teardown),
	};
	/* clang-format on */

	return cmocka_run_group_tests_name("outdir", tests, NULL, NULL);
}
