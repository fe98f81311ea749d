// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_maps: saved /proc/PID/maps samples under tests/fixtures/maps (taken
 * from real processes on Debian 12: a library in a directory with spaces,
 * an unlinked library, memfd and named anonymous mappings), small inline
 * lines for the malformed cases, and this process's own maps.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "attach/maps.h"

/* Source fixtures live in the tree; tests run from the repo root. */
static FILE *open_fixture(const char *name)
{
	const char *dir = getenv("PT_SRC_FIXTURES");
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/maps/%s", dir ? dir : "tests/fixtures", name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s: %s (run from the repo root)", path, strerror(errno));
	return f;
}

static int parse_fixture(struct pt_maps *m, const char *name)
{
	FILE *f = open_fixture(name);
	int err = pt_maps__parse(m, f);

	fclose(f);
	return err;
}

static int parse_string(struct pt_maps *m, const char *s)
{
	FILE *f = fmemopen((void *)s, strlen(s), "r");
	int err;

	assert_non_null(f);
	err = pt_maps__parse(m, f);
	fclose(f);
	return err;
}

static size_t count_exec_files(const struct pt_maps *m)
{
	size_t i, n = 0;

	for (i = 0; i < m->n; i++)
		n += pt_mapping__is_exec_file(&m->v[i]);
	return n;
}

static const struct pt_mapping *find_path(const struct pt_maps *m, const char *path,
					  const char *perms)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->v[i].path && !strcmp(m->v[i].path, path) && !strcmp(m->v[i].perms, perms))
			return &m->v[i];
	return NULL;
}

static void test_normal(void **state)
{
	struct pt_maps m = { 0 };
	const struct pt_mapping *mp;

	assert_int_equal(parse_fixture(&m, "normal.txt"), 0);
	assert_int_equal(m.n, 38); /* wc -l */

	mp = &m.v[0];
	assert_int_equal(mp->start, 0x55d6f4b6b000ULL);
	assert_int_equal(mp->end, 0x55d6f4b6d000ULL);
	assert_string_equal(mp->perms, "r--p");
	assert_int_equal(mp->offset, 0);
	assert_int_equal(mp->dev_major, 0xfe);
	assert_int_equal(mp->dev_minor, 0);
	assert_int_equal(mp->inode, 247134);
	assert_string_equal(mp->path, "/usr/bin/cat");
	assert_false(mp->deleted);
	assert_false(pt_mapping__is_exec_file(mp));

	mp = &m.v[1];
	assert_string_equal(mp->perms, "r-xp");
	assert_int_equal(mp->offset, 0x2000);
	assert_true(pt_mapping__is_exec_file(mp));

	mp = find_path(&m, "/usr/lib/x86_64-linux-gnu/libc.so.6", "r-xp");
	assert_non_null(mp);
	assert_int_equal(mp->start, 0x7fde3868b000ULL);
	assert_int_equal(mp->end, 0x7fde387e1000ULL);
	assert_int_equal(mp->offset, 0x26000);
	assert_int_equal(mp->inode, 332835);

	/* Anonymous (line ends in "0 " with a trailing space). */
	mp = &m.v[6];
	assert_null(mp->path);
	assert_string_equal(mp->perms, "rw-p");
	assert_false(pt_mapping__is_exec_file(mp));

	assert_non_null(find_path(&m, "[heap]", "rw-p"));
	assert_non_null(
		find_path(&m, "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache", "r--s"));
	mp = find_path(&m, "[vdso]", "r-xp");
	assert_non_null(mp);
	assert_false(pt_mapping__is_exec_file(mp));

	mp = &m.v[m.n - 1];
	assert_string_equal(mp->path, "[vsyscall]");
	assert_int_equal(mp->start, 0xffffffffff600000ULL);
	assert_int_equal(mp->end, 0xffffffffff601000ULL);
	assert_false(pt_mapping__is_exec_file(mp));
	assert_string_equal(m.v[m.n - 2].path, "[stack]");

	/* cat, libc, ld.so: [vdso] and [vsyscall] are executable but not files. */
	assert_int_equal(count_exec_files(&m), 3);
	pt_maps__free(&m);
	assert_null(m.v);
	assert_int_equal(m.n, 0);
}

static void test_spaces(void **state)
{
	struct pt_maps m = { 0 };
	const struct pt_mapping *mp;

	assert_int_equal(parse_fixture(&m, "spaces.txt"), 0);
	assert_int_equal(m.n, 10);
	mp = &m.v[1];
	assert_string_equal(mp->path, "/tmp/pt dir/lib with space.so");
	assert_string_equal(mp->perms, "r-xp");
	assert_int_equal(mp->offset, 0x3000);
	assert_int_equal(mp->inode, 10952829);
	assert_false(mp->deleted);
	assert_true(pt_mapping__is_exec_file(mp));
	assert_int_equal(count_exec_files(&m), 2);
	pt_maps__free(&m);
}

static void test_deleted(void **state)
{
	struct pt_maps m = { 0 };
	size_t i;

	assert_int_equal(parse_fixture(&m, "deleted.txt"), 0);
	assert_int_equal(m.n, 10);
	for (i = 0; i < 5; i++) {
		assert_string_equal(m.v[i].path, "/tmp/libgone.so");
		assert_true(m.v[i].deleted);
		assert_false(pt_mapping__is_exec_file(&m.v[i]));
	}
	assert_string_equal(m.v[1].perms, "r-xp");
	for (i = 5; i < 10; i++) {
		assert_string_equal(m.v[i].path, "/usr/lib/x86_64-linux-gnu/libm.so.6");
		assert_false(m.v[i].deleted);
	}
	assert_int_equal(count_exec_files(&m), 1);
	pt_maps__free(&m);
}

static void test_special(void **state)
{
	struct pt_maps m = { 0 };

	assert_int_equal(parse_fixture(&m, "special.txt"), 0);
	assert_int_equal(m.n, 7);

	/* 32-bit-wide addresses and a 3-digit hex major. */
	assert_int_equal(m.v[0].start, 0x400000);
	assert_int_equal(m.v[0].dev_major, 0x103);
	assert_int_equal(m.v[0].dev_minor, 2);
	assert_int_equal(m.v[0].inode, 1573389);
	assert_true(pt_mapping__is_exec_file(&m.v[0]));

	assert_null(m.v[1].path);

	/* JIT code in a memfd: looks like a file, but there is nothing to probe. */
	assert_string_equal(m.v[2].path, "/memfd:jit-code");
	assert_true(m.v[2].deleted);
	assert_false(pt_mapping__is_exec_file(&m.v[2]));

	assert_string_equal(m.v[3].path, "[anon:glibc malloc arena]");
	assert_string_equal(m.v[4].path, "[vdso]");
	assert_false(pt_mapping__is_exec_file(&m.v[4]));
	assert_string_equal(m.v[5].path, "[stack]");
	assert_string_equal(m.v[6].perms, "--xp");
	assert_int_equal(count_exec_files(&m), 1);
	pt_maps__free(&m);
}

static void test_malformed_fixture(void **state)
{
	struct pt_maps m = { 0 };

	assert_int_equal(parse_fixture(&m, "malformed.txt"), -EINVAL);
	/* Nothing half-parsed is left behind. */
	assert_null(m.v);
	assert_int_equal(m.n, 0);
	pt_maps__free(&m);
}

static void test_malformed_lines(void **state)
{
	static const char *const bad[] = {
		"zz-1000 r-xp 00000000 00:00 0\n",
		"1000 r-xp 00000000 00:00 0\n",
		"1000-2000 r-xp 00000000 00:00 0x1 /a\n",
		"1000-2000 r-x 00000000 00:00 0 /a\n",
		"1000-2000 r-xp 00000000 0000 0 /a\n",
		"1000-2000 r-xp 00000000 00:00\n",
		"1000-2000 r-xp -0000001 00:00 0 /a\n",
		"1000-2000  r-xp 00000000 00:00 0 /a\n",
		"2000-1000 r-xp 00000000 00:00 0 /a\n",
		"10000000000000000-10000000000000001 r-xp 00000000 00:00 0 /a\n",
		"1000-2000 r-xp 00000000 00:00 12a /a\n",
		"garbage\n",
	};
	struct pt_maps m = { 0 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = parse_string(&m, bad[i]);

		if (err != -EINVAL)
			fail_msg("accepted (%d): %s", err, bad[i]);
		assert_null(m.v);
	}
	/* One bad line anywhere fails the whole parse. */
	assert_int_equal(parse_string(&m, "1000-2000 r-xp 00000000 00:00 0 /a\nbad\n"), -EINVAL);
	assert_null(m.v);
}

static void test_edge_lines(void **state)
{
	struct pt_maps m = { 0 };

	assert_int_equal(parse_string(&m, ""), 0);
	assert_int_equal(m.n, 0);
	pt_maps__free(&m);

	/* No newline at EOF; blank lines (hand-edited fixtures) are skipped;
	 * anonymous with and without the trailing padding. */
	assert_int_equal(parse_string(&m, "1000-2000 r-xp 00001000 08:01 42 /bin/x\n"
					  "\n"
					  "3000-4000 rw-p 00000000 00:00 0\n"
					  "5000-6000 r-xp 00000000 08:01 43 /a b (deleted) c"),
			 0);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.v[0].offset, 0x1000);
	assert_int_equal(m.v[0].dev_major, 8);
	assert_int_equal(m.v[0].dev_minor, 1);
	assert_string_equal(m.v[0].path, "/bin/x");
	assert_null(m.v[1].path);
	/* " (deleted)" only counts as a suffix. */
	assert_string_equal(m.v[2].path, "/a b (deleted) c");
	assert_false(m.v[2].deleted);
	pt_maps__free(&m);
}

static void test_free_safe(void **state)
{
	struct pt_maps m = { 0 };

	pt_maps__free(NULL);
	pt_maps__free(&m);
	assert_int_equal(parse_fixture(&m, "special.txt"), 0);
	pt_maps__free(&m);
	pt_maps__free(&m); /* twice: zeroed by the first */
}

static void test_read_self(void **state)
{
	uintptr_t here = (uintptr_t)test_read_self;
	struct pt_maps m = { 0 };
	char exe[PATH_MAX];
	ssize_t n;
	size_t i;
	int found = 0;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';

	assert_int_equal(pt_maps__read_pid(&m, getpid()), 0);
	assert_true(m.n > 5);
	for (i = 0; i < m.n; i++) {
		if (here < m.v[i].start || here >= m.v[i].end)
			continue;
		found = 1;
		assert_string_equal(m.v[i].path, exe);
		assert_true(pt_mapping__is_exec_file(&m.v[i]));
	}
	assert_true(found);
	pt_maps__free(&m);

	/* pid_max is at most 4194304. */
	assert_int_equal(pt_maps__read_pid(&m, 99999999), -ENOENT);
	assert_null(m.v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normal),
		cmocka_unit_test(test_spaces),
		cmocka_unit_test(test_deleted),
		cmocka_unit_test(test_special),
		cmocka_unit_test(test_malformed_fixture),
		cmocka_unit_test(test_malformed_lines),
		cmocka_unit_test(test_edge_lines),
		cmocka_unit_test(test_free_safe),
		cmocka_unit_test(test_read_self),
	};

	return cmocka_run_group_tests_name("maps", tests, NULL, NULL);
}
