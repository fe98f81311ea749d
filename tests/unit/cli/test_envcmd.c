// SPDX-License-Identifier: BSD-2-Clause
/*
 * `proftrace env` over helper folders made here ($PROFTRACE_LIBDIR): the
 * exports with the agent alone and with the shim, `--docker`'s run
 * options (the folder mounted read-only at the same path, the two
 * variables), a missing agent or a path LD_PRELOAD cannot hold said on
 * stderr (exit 2), and the arguments. The installed layout
 * (PREFIX/lib/proftrace found from PREFIX/bin): tests/integration/
 * test_install.py.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/envcmd.h"
#include "util/helpers.h"
#include "util/util.h"

static char out[8192], err[8192];

static void slurp(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
}

/* pt_envcmd__print with stderr caught in err */
static int print(bool docker)
{
	FILE *o = tmpfile(), *e = tmpfile();
	int fd = dup(2), ret;

	assert_non_null(o);
	assert_non_null(e);
	fflush(stderr);
	dup2(fileno(e), 2);
	ret = pt_envcmd__print(o, docker);
	fflush(stderr);
	dup2(fd, 2);
	close(fd);
	slurp(o, out, sizeof(out));
	slurp(e, err, sizeof(err));
	return ret;
}

/* pt_envcmd__main with stdout and stderr caught */
static int run(int argc, const char **argv)
{
	FILE *o = tmpfile(), *e = tmpfile();
	int fo = dup(1), fe = dup(2), ret;

	fflush(stdout);
	fflush(stderr);
	dup2(fileno(o), 1);
	dup2(fileno(e), 2);
	ret = pt_envcmd__main(argc, (char **)argv);
	fflush(stdout);
	fflush(stderr);
	dup2(fo, 1);
	dup2(fe, 2);
	close(fo);
	close(fe);
	slurp(o, out, sizeof(out));
	slurp(e, err, sizeof(err));
	return ret;
}

static void touch(const char *dir, const char *name)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
}

static void test_env(void **state)
{
	char dir[] = "/tmp/pt-envcmd-XXXXXX", want[2048], spaced[600];

	assert_non_null(mkdtemp(dir));
	setenv(PT_LIBDIR_ENV, dir, 1);

	/* nothing there: said, with where to look and what to do */
	assert_int_equal(print(false), -PT_EUSAGE);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, "proftrace: env: no libproftrace_agent.so in "));
	assert_non_null(strstr(err, "make install"));
	assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);

	/* the agent alone */
	touch(dir, PT_AGENT_LIB);
	assert_int_equal(print(false), 0);
	snprintf(want, sizeof(want),
		 "# proftrace's helpers (%s), dormant until proftrace attaches: eval \"$(proftrace "
		 "env)\" before starting a server\n",
		 dir);
	assert_int_equal(strncmp(out, want, strlen(want)), 0);
	snprintf(want, sizeof(want), "\nexport LD_PRELOAD=%s/%s${LD_PRELOAD:+:$LD_PRELOAD}\n", dir,
		 PT_AGENT_LIB);
	assert_non_null(strstr(out, want));
	assert_null(strstr(out, "CUDA_INJECTION64_PATH"));
	assert_non_null(strstr(out, "# no CUPTI shim was built"));
	assert_int_equal(print(true), 0);
	snprintf(want, sizeof(want), "-v %s:%s:ro -e LD_PRELOAD=%s/%s\n", dir, dir, dir,
		 PT_AGENT_LIB);
	assert_string_equal(out, want);

	/* and the shim */
	touch(dir, PT_CUPTI_LIB);
	assert_int_equal(print(false), 0);
	snprintf(want, sizeof(want), "\nexport CUDA_INJECTION64_PATH=%s/%s\n", dir, PT_CUPTI_LIB);
	assert_non_null(strstr(out, want));
	assert_int_equal(print(true), 0);
	snprintf(want, sizeof(want),
		 "-v %s:%s:ro -e LD_PRELOAD=%s/%s -e CUDA_INJECTION64_PATH=%s/%s\n", dir, dir, dir,
		 PT_AGENT_LIB, dir, PT_CUPTI_LIB);
	assert_string_equal(out, want);

	/* a folder LD_PRELOAD cannot name */
	snprintf(spaced, sizeof(spaced), "%s/a b", dir);
	assert_int_equal(mkdir(spaced, 0755), 0);
	touch(spaced, PT_AGENT_LIB);
	setenv(PT_LIBDIR_ENV, spaced, 1);
	assert_int_equal(print(true), -PT_EUSAGE);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, "LD_PRELOAD cannot name it"));

	/* the arguments */
	setenv(PT_LIBDIR_ENV, dir, 1);
	{
		const char *a[] = { "env", "--docker", NULL }, *h[] = { "env", "--help", NULL };
		const char *bad[] = { "env", "--dokcer", NULL }, *none[] = { "env", NULL };

		assert_int_equal(run(2, a), 0);
		assert_string_equal(out, want);
		assert_int_equal(run(1, none), 0);
		assert_non_null(strstr(out, "export LD_PRELOAD="));
		assert_int_equal(run(2, h), 0);
		assert_non_null(strstr(out, "Usage: proftrace env [--docker]"));
		assert_int_equal(run(2, bad), PT_EXIT_USAGE);
		assert_string_equal(err,
				    "proftrace: env: unknown argument '--dokcer' (proftrace env "
				    "[--docker])\n");
	}
	unsetenv(PT_LIBDIR_ENV);
	snprintf(want, sizeof(want), "rm -rf '%s'", dir);
	assert_int_equal(system(want), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
