// SPDX-License-Identifier: BSD-2-Clause
/*
 * The command line: no targets file (sampling only), --rate, --format and
 * -o FILE by its name, --version, and py-spy's flags and commands, each
 * working or answered with a one-line hint (what stderr says is read
 * back from a temporary file).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"

static char said[4096]; /* stderr and stdout of the last parse */

/* Parse argv (NULL-terminated) with stderr and stdout caught in said. */
static int parse(struct pt_env *env, const char *const *args)
{
	char *argv[32];
	int argc = 0, e, fd_err = dup(2), fd_out = dup(1);
	FILE *tmp = tmpfile();
	size_t n;

	assert_non_null(tmp);
	while (args[argc]) {
		argv[argc] = (char *)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	fflush(stderr);
	fflush(stdout);
	dup2(fileno(tmp), 2);
	dup2(fileno(tmp), 1);
	e = pt_cli__parse(env, argc, argv);
	fflush(stderr);
	fflush(stdout);
	dup2(fd_err, 2);
	dup2(fd_out, 1);
	close(fd_err);
	close(fd_out);
	rewind(tmp);
	n = fread(said, 1, sizeof(said) - 1, tmp);
	said[n] = 0;
	fclose(tmp);
	return e;
}

#define PARSE(env, ...) parse((env), (const char *const[]){ "proftrace", __VA_ARGS__, NULL })

/* One line, starting "proftrace: ", holding what. */
static void said_one_line(const char *what)
{
	assert_non_null(strstr(said, what));
	assert_int_equal(strncmp(said, "proftrace: ", 11), 0);
	assert_ptr_equal(strchr(said, '\n'), said + strlen(said) - 1);
}

static void test_no_targets(void **state)
{
	struct pt_env env;

	(void)state;
	assert_int_equal(PARSE(&env, "-p", "1234"), 0);
	assert_int_equal(env.pid, 1234);
	assert_null(env.targets);
	assert_int_equal(env.format, PT_FORMAT_NONE);
	assert_int_equal(env.rate_hz, 0);
	/* py-spy's spelling: record, --pid, --duration, --rate, --subprocesses */
	assert_int_equal(PARSE(&env, "record", "--pid", "77", "--duration", "5", "--rate", "250",
			       "--subprocesses", "--idle", "--nonblocking"),
			 0);
	assert_int_equal(env.pid, 77);
	assert_true(env.duration_s == 5);
	assert_int_equal(env.rate_hz, 250);
	assert_true(env.children);
	assert_true(env.idle); /* -o x.svg draws wall time */
	assert_int_equal(PARSE(&env, "-p", "7", "-r", "10000", "-s", "-i"), 0);
	assert_int_equal(env.rate_hz, 10000);
	assert_true(env.children);
	assert_true(env.idle);
	assert_int_equal(PARSE(&env, "-p", "7"), 0);
	assert_false(env.idle); /* on-CPU by default, as py-spy */
	assert_int_equal(PARSE(&env, "-p", "7", "--rate", "0"), -EINVAL);
	said_one_line("bad --rate '0': give samples per second from 1 to 10000");
	assert_int_equal(PARSE(&env, "-p", "7", "--rate", "10001"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "7", "--rate", "fast"), -EINVAL);
}

static void test_one_file(void **state)
{
	struct pt_env env;

	(void)state;
	assert_int_equal(PARSE(&env, "-p", "1", "-o", "x.svg"), 0);
	assert_int_equal(env.format, PT_FORMAT_FLAME);
	assert_string_equal(env.output, "x.svg");
	assert_int_equal(PARSE(&env, "-p", "1", "-o", "/tmp/a/x.folded"), 0);
	assert_int_equal(env.format, PT_FORMAT_FOLDED);
	assert_int_equal(PARSE(&env, "-p", "1", "-o", "p.pb.gz"), 0);
	assert_int_equal(env.format, PT_FORMAT_PPROF);
	/* a folder: every file */
	assert_int_equal(PARSE(&env, "-p", "1", "-o", "runs/one"), 0);
	assert_int_equal(env.format, PT_FORMAT_NONE);
	assert_int_equal(PARSE(&env, "-p", "1", "-o", "runs/.svg"), 0);
	assert_int_equal(env.format, PT_FORMAT_NONE);
	/* --format names the file whatever it is called */
	assert_int_equal(PARSE(&env, "-p", "1", "--format", "raw", "-o", "out.txt"), 0);
	assert_int_equal(env.format, PT_FORMAT_FOLDED);
	assert_int_equal(PARSE(&env, "-p", "1", "-f", "flamegraph"), 0);
	assert_int_equal(env.format, PT_FORMAT_FLAME);
	assert_null(env.output);
	assert_int_equal(PARSE(&env, "-p", "1", "-f", "pprof", "-o", "dir/"), -EINVAL);
	said_one_line("-o 'dir/' is a folder, but --format writes one file");
	assert_int_equal(PARSE(&env, "-p", "1", "-f", "speedscope"), -EINVAL);
	said_one_line("speedscope opens folded stacks: use --format raw");
	assert_int_equal(PARSE(&env, "-p", "1", "-f", "chrometrace"), -EINVAL);
	said_one_line("--trace writes trace.json");
	/* a file of a kind proftrace does not write: not made a folder */
	assert_int_equal(PARSE(&env, "-p", "1", "-o", "profile.txt"), -EINVAL);
	said_one_line("-o 'profile.txt' names a kind of file proftrace does not write");
	assert_int_equal(PARSE(&env, "-p", "1", "-o", "run.json"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--format", "raw", "-o", "profile.txt"), 0);
	assert_int_equal(PARSE(&env, "-p", "1", "-f", "png"), -EINVAL);
	said_one_line("bad --format 'png': flamegraph (flame.svg), raw (stacks.folded) or pprof");
}

/* py-spy's flags proftrace has no use for: a hint each, exit 2. */
static void test_pyspy_hints(void **state)
{
	static const struct {
		const char *arg, *hint;
	} cases[] = {
		{ "--gil", "time waiting for the GIL is off-CPU time" },
		{ "-g", "py-spy's -g (--gil)" },
		{ "--threads", "each thread is a root of flame.svg" },
		{ "--function", "report.md's top functions are summed by function" },
		{ "-F", "py-spy's -F (--function)" },
		{ "--nolineno", "report.md's top functions are summed by function" },
		{ "--full-filenames", "full file name (co_filename)" },
	};
	struct pt_env env;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(PARSE(&env, "-p", "1", cases[i].arg), -EINVAL);
		said_one_line(cases[i].hint);
	}
	/* inside a group of short options */
	assert_int_equal(PARSE(&env, "-p", "1", "-qg"), -EINVAL);
	said_one_line("py-spy's -g (--gil)");
	/* py-spy's -n, --native: native frames, as there (on by default:
	 * over a targets file's off); --no-native: Python frames only */
	assert_int_equal(PARSE(&env, "-p", "1", "--native"), 0);
	assert_int_equal(env.native, 1);
	assert_int_equal(PARSE(&env, "-p", "1", "-qn"), 0);
	assert_int_equal(env.native, 1);
	assert_int_equal(PARSE(&env, "-p", "1", "--no-native"), 0);
	assert_int_equal(env.native, -1);
	assert_int_equal(PARSE(&env, "-p", "1"), 0);
	assert_int_equal(env.native, 0);
	assert_int_equal(PARSE(&env, "top", "-p", "1"), -EINVAL);
	said_one_line("py-spy's top: proftrace has no live view");
	assert_int_equal(PARSE(&env, "dump", "--pid", "1"), -EINVAL);
	said_one_line("py-spy's dump");
	assert_int_equal(PARSE(&env, "-p", "1", "--", "python", "app.py"), -EINVAL);
	said_one_line("'-- python': proftrace attaches to a running process");
	/* not py-spy's either: said plainly */
	assert_int_equal(PARSE(&env, "-p", "1", "--bogus"), -EINVAL);
	said_one_line("unknown option '--bogus'");
}

static void test_version_and_help(void **state)
{
	struct pt_env env;

	(void)state;
	assert_int_equal(PARSE(&env, "--version"), 1);
	assert_string_equal(said, "proftrace " PT_VERSION "\n");
	assert_int_equal(PARSE(&env, "--help"), 1);
	assert_non_null(strstr(said, "-r, --rate HZ"));
	assert_non_null(strstr(said, "Without\n--targets it samples every Python thread"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_targets),
		cmocka_unit_test(test_one_file),
		cmocka_unit_test(test_pyspy_hints),
		cmocka_unit_test(test_version_and_help),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
