// SPDX-License-Identifier: BSD-2-Clause
/*
 * targets_list: listing a directory of targets files (sorted, one line
 * each, description from the first comment line, "(no description)"
 * without one, only regular *.conf files), describing one file, and
 * `--targets NAME` resolution (by directory and through
 * $PROFTRACE_TARGETS_DIR; an existing file of that name wins).
 * The fixture directory is made under $TMPDIR by the group setup.
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
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "config/targets_list.h"

static char dir[256]; /* short, so every path built from it fits PATH_MAX */

static void put(const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Written in an order that is not the listing order. */
static int setup(void **state)
{
	char sub[PATH_MAX];
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/pt-targets-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	put("vllm.conf",
	    "# vllm.conf: vLLM V1 engine core\nstep py:vllm.v1.engine.core.EngineCore.step\n");
	put("cuda.conf", "# cuda.conf: host-side CUDA runtime calls\nbucket cuda.sync "
			 "native:libcudart.so*:cudaStreamSynchronize\n");
	put("a-b.conf", "\n  \n\t# a-b.conf:   leading blank lines, padded, CRLF  \t\r\n");
	put("Zed.conf", "#no space, no name prefix\n");
	put("nodesc.conf", "step native:exe:main # not a comment line\n# too late\n");
	put("empty.conf", "");
	put("blank.conf", "#\n# the first comment line is empty\n");
	put("other.conf", "# vllm.conf: a prefix naming another file stays\n");
	put("README.md", "# not a config\n");
	put("notes.conf.bak", "# not a config either\n");
	put(".hidden.conf", "# hidden\n");
	snprintf(sub, sizeof(sub), "%s/subdir.conf", dir);
	if (mkdir(sub, 0755))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *list_of(const char *d, int *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	*n = pt_targets__list(d, out);
	fclose(out);
	return buf;
}

static void test_list_sorted_with_descriptions(void **state)
{
	/* strcmp order: upper case before lower case, '-' before letters */
	static const char want[] = "Zed     no space, no name prefix\n"
				   "a-b     leading blank lines, padded, CRLF\n"
				   "blank   (no description)\n"
				   "cuda    host-side CUDA runtime calls\n"
				   "empty   (no description)\n"
				   "nodesc  (no description)\n"
				   "other   vllm.conf: a prefix naming another file stays\n"
				   "vllm    vLLM V1 engine core\n";
	int n;
	char *got = list_of(dir, &n);

	assert_string_equal(got, want);
	assert_int_equal(n, 8);
	free(got);
}

static void test_list_missing_dir(void **state)
{
	char missing[PATH_MAX];
	int n;
	char *got;

	snprintf(missing, sizeof(missing), "%s/nope", dir);
	got = list_of(missing, &n);
	assert_int_equal(n, -ENOENT);
	assert_string_equal(got, "");
	free(got);
}

static void test_list_empty_dir(void **state)
{
	char empty[PATH_MAX];
	int n;
	char *got;

	snprintf(empty, sizeof(empty), "%s/subdir.conf", dir);
	got = list_of(empty, &n);
	assert_int_equal(n, 0);
	assert_string_equal(got, "");
	free(got);
}

static void test_describe(void **state)
{
	char path[PATH_MAX], desc[64];

	snprintf(path, sizeof(path), "%s/vllm.conf", dir);
	assert_int_equal(pt_targets__describe(path, desc, sizeof(desc)), 0);
	assert_string_equal(desc, "vLLM V1 engine core");
	/* truncated to the buffer, still terminated */
	assert_int_equal(pt_targets__describe(path, desc, 5), 0);
	assert_string_equal(desc, "vLLM");
	snprintf(path, sizeof(path), "%s/nodesc.conf", dir);
	assert_int_equal(pt_targets__describe(path, desc, sizeof(desc)), -ENODATA);
	snprintf(path, sizeof(path), "%s/empty.conf", dir);
	assert_int_equal(pt_targets__describe(path, desc, sizeof(desc)), -ENODATA);
	snprintf(path, sizeof(path), "%s/none.conf", dir);
	assert_int_equal(pt_targets__describe(path, desc, sizeof(desc)), -ENOENT);
}

static void test_resolve_by_name(void **state)
{
	char buf[PATH_MAX], want[PATH_MAX];

	snprintf(want, sizeof(want), "%s/vllm.conf", dir);
	assert_int_equal(pt_targets__resolve_in(dir, "vllm", buf, sizeof(buf)), 1);
	assert_string_equal(buf, want);
	assert_int_equal(pt_targets__resolve_in(dir, "vllm.conf", buf, sizeof(buf)), 1);
	assert_string_equal(buf, want);
	/* not bundled, a path, empty, a directory named *.conf */
	assert_int_equal(pt_targets__resolve_in(dir, "sglang", buf, sizeof(buf)), 0);
	assert_int_equal(pt_targets__resolve_in(dir, "./vllm", buf, sizeof(buf)), 0);
	assert_int_equal(pt_targets__resolve_in(dir, "targets/vllm", buf, sizeof(buf)), 0);
	assert_int_equal(pt_targets__resolve_in(dir, "", buf, sizeof(buf)), 0);
	assert_int_equal(pt_targets__resolve_in(dir, "subdir", buf, sizeof(buf)), 0);
	/* the path does not fit */
	assert_int_equal(pt_targets__resolve_in(dir, "vllm", buf, 8), -ENAMETOOLONG);
}

static void test_resolve_existing_file_wins(void **state)
{
	char cwd[PATH_MAX], buf[PATH_MAX];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	/* ./vllm.conf exists here: "vllm.conf" is that file, "vllm" is not */
	assert_int_equal(pt_targets__resolve_in(dir, "vllm.conf", buf, sizeof(buf)), 0);
	assert_int_equal(pt_targets__resolve_in(dir, "vllm", buf, sizeof(buf)), 1);
	assert_int_equal(chdir(cwd), 0);
}

static void test_env_dir(void **state)
{
	char buf[PATH_MAX], want[PATH_MAX];
	char *got;
	int n;

	assert_int_equal(setenv(PT_TARGETS_DIR_ENV, dir, 1), 0);
	assert_int_equal(pt_targets__dir(buf, sizeof(buf)), 0);
	assert_string_equal(buf, dir);
	snprintf(want, sizeof(want), "%s/cuda.conf", dir);
	assert_int_equal(pt_targets__resolve("cuda", buf, sizeof(buf)), 1);
	assert_string_equal(buf, want);
	got = list_of(NULL, &n);
	assert_int_equal(n, 8);
	assert_non_null(strstr(got, "\nvllm    vLLM V1 engine core\n"));
	free(got);
	assert_int_equal(pt_targets__dir(buf, 4), -ENAMETOOLONG);
	/* empty: falls back to the directories next to the binary */
	assert_int_equal(setenv(PT_TARGETS_DIR_ENV, "", 1), 0);
	n = pt_targets__dir(buf, sizeof(buf));
	assert_true(n == 0 || n == -ENOENT);
	assert_non_null(strstr(buf, "targets"));
	unsetenv(PT_TARGETS_DIR_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_sorted_with_descriptions),
		cmocka_unit_test(test_list_missing_dir),
		cmocka_unit_test(test_list_empty_dir),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_resolve_by_name),
		cmocka_unit_test(test_resolve_existing_file_wins),
		cmocka_unit_test(test_env_dir),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
