// SPDX-License-Identifier: BSD-2-Clause
/*
 * targets.conf parser: valid files through fmemopen, every error with its
 * exact text (users grep for them and editors jump to file:line:col), and a
 * few fixtures through pt_config__load. Run from the repository root.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"

#define PYF "py:<module>.<Class>.<method> or py:<module>::<function>"

#define FIXTURES "tests/fixtures/conf/"

static int parse_str(struct pt_config *cfg, const char *text, char *err, size_t errlen)
{
	FILE *f;
	int ret;

	/* fmemopen wants a writable buffer type even in "r" mode */
	f = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(f);
	ret = pt_config__parse(cfg, f, "t.conf", err, errlen);
	fclose(f);
	return ret;
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

/* A failed parse must leave an exact message and a zeroed config. */
#define assert_parse_error(text, want)                                                             \
	do {                                                                                       \
		struct pt_config cfg_;                                                             \
		char err_[1024];                                                                   \
		memset(&cfg_, 0xab, sizeof(cfg_));                                                 \
		memset(err_, 'x', sizeof(err_));                                                   \
		assert_int_equal(parse_str(&cfg_, (text), err_, sizeof(err_)), -EINVAL);           \
		assert_string_equal(err_, (want));                                                 \
		assert_true(all_zero(&cfg_, sizeof(cfg_)));                                        \
		pt_config__free(&cfg_);                                                            \
	} while (0)

static void parse_ok(struct pt_config *cfg, const char *text)
{
	char err[1024] = "";
	int ret = parse_str(cfg, text, err, sizeof(err));

	if (ret)
		print_error("unexpected error: %s\n", err);
	assert_int_equal(ret, 0);
	assert_string_equal(err, "");
}

/* ---- valid files ---- */

static void test_step_only_defaults(void **state)
{
	struct pt_config cfg;

	parse_ok(&cfg, "step native:exe:main_loop\n");
	assert_string_equal(cfg.path, "t.conf");
	assert_int_equal(cfg.nprobes, 1);
	assert_int_equal(cfg.step_probe, 0);
	assert_int_equal(cfg.step_mode, PT_STEP_CALL);
	assert_int_equal(cfg.nbuckets, 0);
	assert_null(cfg.buckets);
	assert_int_equal(cfg.probes[0].kind, PT_PROBE_NATIVE);
	assert_string_equal(cfg.probes[0].text, "native:exe:main_loop");
	assert_string_equal(cfg.probes[0].object, "exe");
	assert_string_equal(cfg.probes[0].symbol, "main_loop");
	assert_true(cfg.probes[0].is_step);
	assert_int_equal(cfg.probes[0].bucket_mask, 0);
	assert_int_equal(cfg.probes[0].line, 1);
	assert_int_equal(cfg.probes[0].col, 6);
	/* defaults of every set key */
	assert_int_equal(cfg.warmup_steps, 0);
	assert_int_equal(cfg.ringbuf_mb, 16);
	assert_int_equal(cfg.poll_ms, 20);
	assert_true(cfg.prologue_skip);
	assert_false(cfg.ringbuf_wakeup);
	pt_config__free(&cfg);
	assert_true(all_zero(&cfg, sizeof(cfg)));
}

static void test_bucket_only_no_step(void **state)
{
	struct pt_config cfg;

	/* no trailing newline on the last line */
	parse_ok(&cfg, "bucket io.read native:libc.so*:read native:libc.so*:pread64");
	assert_int_equal(cfg.step_probe, -1);
	assert_int_equal(cfg.nbuckets, 1);
	assert_string_equal(cfg.buckets[0].name, "io.read");
	assert_string_equal(cfg.buckets[0].domain, "io");
	assert_int_equal(cfg.buckets[0].line, 1);
	assert_int_equal(cfg.nprobes, 2);
	assert_string_equal(cfg.probes[0].object, "libc.so*");
	assert_string_equal(cfg.probes[0].symbol, "read");
	assert_string_equal(cfg.probes[1].symbol, "pread64");
	assert_int_equal(cfg.probes[0].bucket_mask, 1);
	assert_int_equal(cfg.probes[1].bucket_mask, 1);
	assert_int_equal(cfg.probes[1].col, 37);
	assert_false(cfg.probes[0].is_step);
	pt_config__free(&cfg);
}

static void test_full_file_roles_and_comments(void **state)
{
	static const char text[] =
		"# proftrace targets\n"
		"\n"
		"   \t\n"
		"bucket engine.schedule native:exe:engine_* # all engine entry points\n"
		"\tstep\tnative:exe:engine_step   mode=iteration  # trailing comment\n"
		"bucket gpu.launch native:libcudart.so*:cudaLaunchKernel* native:exe:engine_step\n"
		"bucket engine.step_too native:exe:engine_step native:exe:engine_*\n"
		"  # indented comment\n"
		"set warmup_steps 3#comment right after a value\n";
	struct pt_config cfg;

	parse_ok(&cfg, text);
	assert_int_equal(cfg.step_mode, PT_STEP_ITERATION);
	assert_int_equal(cfg.warmup_steps, 3);
	assert_int_equal(cfg.nbuckets, 3);
	assert_string_equal(cfg.buckets[0].name, "engine.schedule");
	assert_string_equal(cfg.buckets[0].domain, "engine");
	assert_int_equal(cfg.buckets[0].line, 4);
	assert_string_equal(cfg.buckets[1].name, "gpu.launch");
	assert_string_equal(cfg.buckets[1].domain, "gpu");
	assert_int_equal(cfg.buckets[1].line, 6);
	assert_string_equal(cfg.buckets[2].name, "engine.step_too");
	assert_int_equal(cfg.buckets[2].line, 7);

	/* one entry per distinct text, in order of first appearance */
	assert_int_equal(cfg.nprobes, 3);
	assert_string_equal(cfg.probes[0].text, "native:exe:engine_*");
	assert_false(cfg.probes[0].is_step);
	assert_int_equal(cfg.probes[0].bucket_mask, (1ULL << 0) | (1ULL << 2));
	assert_int_equal(cfg.probes[0].line, 4);
	assert_int_equal(cfg.probes[0].col, 24);

	assert_string_equal(cfg.probes[1].text, "native:exe:engine_step");
	assert_true(cfg.probes[1].is_step);
	assert_int_equal(cfg.probes[1].bucket_mask, (1ULL << 1) | (1ULL << 2));
	assert_int_equal(cfg.probes[1].line, 5);
	assert_int_equal(cfg.probes[1].col, 7); /* a tab counts as one column */
	assert_int_equal(cfg.step_probe, 1);

	assert_string_equal(cfg.probes[2].text, "native:libcudart.so*:cudaLaunchKernel*");
	assert_string_equal(cfg.probes[2].object, "libcudart.so*");
	assert_string_equal(cfg.probes[2].symbol, "cudaLaunchKernel*");
	assert_int_equal(cfg.probes[2].bucket_mask, 1ULL << 1);
	assert_false(cfg.probes[2].is_step);
	pt_config__free(&cfg);
}

static void test_step_modes(void **state)
{
	struct pt_config cfg;

	parse_ok(&cfg, "step native:exe:f mode=call\n");
	assert_int_equal(cfg.step_mode, PT_STEP_CALL);
	pt_config__free(&cfg);
	parse_ok(&cfg, "step native:exe:f mode=iteration\n");
	assert_int_equal(cfg.step_mode, PT_STEP_ITERATION);
	pt_config__free(&cfg);
}

static void test_probe_forms(void **state)
{
	static const char text[] =
		"bucket a.b native:libc.so.6:memcpy@@GLIBC_2.14 native:libm.so*:sin@GLIBC_2.2.5\n"
		"bucket a.c native:/usr/lib/x86_64-linux-gnu/libc.so.6:malloc\n"
		"bucket a.d native:exe:_ZN6Engine4stepEv native:exe:*::*\n"
		"bucket a.e native:lib[cC]uda.so.[0-9]:cu[[:alpha:]]?* native:exe:x[]]y\n"
		"bucket a.f native:exe:\\[literal native:lib*:[!_]*\n";
	struct pt_config cfg;

	parse_ok(&cfg, text);
	assert_int_equal(cfg.nprobes, 9);
	/* version suffix cut from the symbol only, text kept as written */
	assert_string_equal(cfg.probes[0].text, "native:libc.so.6:memcpy@@GLIBC_2.14");
	assert_string_equal(cfg.probes[0].object, "libc.so.6");
	assert_string_equal(cfg.probes[0].symbol, "memcpy");
	assert_string_equal(cfg.probes[1].symbol, "sin");
	assert_string_equal(cfg.probes[2].object, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_string_equal(cfg.probes[2].symbol, "malloc");
	assert_string_equal(cfg.probes[3].symbol, "_ZN6Engine4stepEv");
	/* everything after the second ':' is the symbol */
	assert_string_equal(cfg.probes[4].object, "exe");
	assert_string_equal(cfg.probes[4].symbol, "*::*");
	assert_string_equal(cfg.probes[5].object, "lib[cC]uda.so.[0-9]");
	assert_string_equal(cfg.probes[5].symbol, "cu[[:alpha:]]?*");
	assert_string_equal(cfg.probes[6].symbol, "x[]]y");
	assert_string_equal(cfg.probes[7].symbol, "\\[literal");
	assert_string_equal(cfg.probes[8].symbol, "[!_]*");
	pt_config__free(&cfg);
}

static void test_py_probe_forms(void **state)
{
	static const char text[] =
		"step   py:vllm.v1.engine.core.EngineCore.step\n"
		"bucket a.b py:pyengine::postprocess py:pkg.mod.Sched*.forward_*\n"
		"bucket a.c py:m::* py:m.*.* native:exe:f\n";
	struct pt_config cfg;

	parse_ok(&cfg, text);
	assert_int_equal(cfg.nprobes, 6);
	assert_int_equal(cfg.probes[0].kind, PT_PROBE_PY);
	assert_string_equal(cfg.probes[0].object, "vllm/v1/engine/core");
	assert_string_equal(cfg.probes[0].cls, "EngineCore");
	assert_string_equal(cfg.probes[0].symbol, "step");
	assert_true(cfg.probes[0].is_step);
	assert_string_equal(cfg.probes[1].object, "pyengine");
	assert_null(cfg.probes[1].cls);
	assert_string_equal(cfg.probes[1].symbol, "postprocess");
	assert_string_equal(cfg.probes[2].object, "pkg/mod");
	assert_string_equal(cfg.probes[2].cls, "Sched*");
	assert_string_equal(cfg.probes[2].symbol, "forward_*");
	assert_null(cfg.probes[3].cls);
	assert_string_equal(cfg.probes[3].symbol, "*");
	assert_string_equal(cfg.probes[4].cls, "*");
	assert_int_equal(cfg.probes[5].kind, PT_PROBE_NATIVE);
	assert_null(cfg.probes[5].cls);
	pt_config__free(&cfg);
}

/* Dotted only: py:m.f is function f of m; py:a.b.c is method c of class
 * b in a and, b being a plain name, function c of module a.b too; a glob
 * in the class part leaves one reading. */
static void test_py_dotted(void **state)
{
	static const char text[] = "step py:engine.step\n"
				   "bucket a.b py:pkg.mod.func py:pkg.Mod*.run py:pkg.mod::g\n";
	struct pt_config cfg;

	(void)state;
	parse_ok(&cfg, text);
	assert_int_equal(cfg.nprobes, 4);
	assert_string_equal(cfg.probes[0].object, "engine");
	assert_null(cfg.probes[0].cls);
	assert_string_equal(cfg.probes[0].symbol, "step");
	assert_true(cfg.probes[0].dotted);
	assert_null(cfg.probes[0].alt_object);
	assert_string_equal(cfg.probes[1].object, "pkg");
	assert_string_equal(cfg.probes[1].cls, "mod");
	assert_string_equal(cfg.probes[1].symbol, "func");
	assert_string_equal(cfg.probes[1].alt_object, "pkg/mod");
	assert_true(cfg.probes[1].dotted);
	assert_string_equal(cfg.probes[2].cls, "Mod*");
	assert_null(cfg.probes[2].alt_object);
	assert_false(cfg.probes[3].dotted);
	assert_null(cfg.probes[3].alt_object);
	pt_config__free(&cfg);
}

static void test_every_set_key(void **state)
{
	static const char text[] = "set warmup_steps 4294967295\n"
				   "set ringbuf_mb 1024\n"
				   "set poll_ms 1000\n"
				   "set prologue_skip off\n"
				   "set ringbuf_wakeup on\n"
				   "set py_session off\n"
				   "set py_trampolines off\n"
				   "step native:exe:f\n";
	struct pt_config cfg;

	parse_ok(&cfg, text);
	assert_int_equal(cfg.warmup_steps, 4294967295u);
	assert_int_equal(cfg.ringbuf_mb, 1024);
	assert_int_equal(cfg.poll_ms, 1000);
	assert_false(cfg.prologue_skip);
	assert_true(cfg.ringbuf_wakeup);
	assert_false(cfg.py_session);
	assert_false(cfg.py_trampolines);
	pt_config__free(&cfg);

	parse_ok(&cfg, "set ringbuf_mb 1\nset poll_ms 1\nset prologue_skip on\n"
		       "set ringbuf_wakeup off\nset warmup_steps 0\nstep native:exe:f\n");
	assert_int_equal(cfg.ringbuf_mb, 1);
	assert_int_equal(cfg.poll_ms, 1);
	assert_true(cfg.prologue_skip);
	assert_false(cfg.ringbuf_wakeup);
	assert_true(cfg.py_session);	 /* default */
	assert_true(cfg.py_trampolines); /* default */
	assert_int_equal(cfg.warmup_steps, 0);
	pt_config__free(&cfg);

	parse_ok(&cfg, "set ringbuf_mb 64\nset poll_ms 007\nstep native:exe:f\n");
	assert_int_equal(cfg.ringbuf_mb, 64);
	assert_int_equal(cfg.poll_ms, 7); /* decimal, not octal */
	pt_config__free(&cfg);
}

static void test_bucket_names(void **state)
{
	struct pt_config cfg;

	parse_ok(&cfg, "bucket a.b.c native:exe:f\nbucket x-1_Y.z-2 native:exe:g\n"
		       "bucket d..e native:exe:h\n");
	assert_string_equal(cfg.buckets[0].domain, "a");
	assert_string_equal(cfg.buckets[0].name, "a.b.c");
	assert_string_equal(cfg.buckets[1].domain, "x-1_Y");
	assert_string_equal(cfg.buckets[2].domain, "d");
	pt_config__free(&cfg);
}

static char *many_buckets(int n, const char *extra)
{
	size_t cap = 64 * (size_t)(n + 2) + strlen(extra);
	char *s = malloc(cap);
	size_t off = 0;
	int i;

	assert_non_null(s);
	for (i = 0; i < n; i++)
		off += snprintf(s + off, cap - off, "bucket d.b%d native:exe:f%d native:exe:all\n",
				i, i);
	snprintf(s + off, cap - off, "%s", extra);
	return s;
}

static void test_max_buckets(void **state)
{
	char *text = many_buckets(PT_MAX_BUCKETS, "");
	struct pt_config cfg;

	parse_ok(&cfg, text);
	assert_int_equal(cfg.nbuckets, PT_MAX_BUCKETS);
	assert_string_equal(cfg.buckets[63].name, "d.b63");
	/* "native:exe:all" is in all 64: every bit of the mask */
	assert_string_equal(cfg.probes[1].text, "native:exe:all");
	assert_true(cfg.probes[1].bucket_mask == ~0ULL);
	assert_int_equal(cfg.nprobes, PT_MAX_BUCKETS + 1);
	assert_true(cfg.probes[PT_MAX_BUCKETS].bucket_mask == 1ULL << 63);
	pt_config__free(&cfg);
	free(text);
}

static void test_crlf_and_long_line_limit(void **state)
{
	struct pt_config cfg;
	char *text;
	size_t len;

	parse_ok(&cfg, "# windows\r\nstep native:exe:f mode=iteration\r\n");
	assert_string_equal(cfg.probes[0].symbol, "f");
	assert_int_equal(cfg.step_mode, PT_STEP_ITERATION);
	pt_config__free(&cfg);

	/* exactly 4096 characters is allowed */
	text = malloc(4096 + 64);
	assert_non_null(text);
	strcpy(text, "step native:exe:f #");
	len = strlen(text);
	memset(text + len, 'c', 4096 - len);
	strcpy(text + 4096, "\n");
	parse_ok(&cfg, text);
	pt_config__free(&cfg);

	/* one more is not */
	text[4096] = 'c';
	strcpy(text + 4097, "\nstep native:exe:g\n");
	/* the hint fits the line (issue 27: a step line was told to split
	 * "the bucket") */
	assert_parse_error(text, "t.conf:1:4097: error: line longer than 4096 characters "
				 "(hint: a step line names one probe (and tokens=, kv_len=, "
				 "batch=): is a name that long? a glob can shorten it)");
	memcpy(text, "bucket a.b native:exe:f", 23);
	assert_parse_error(text, "t.conf:1:4097: error: line longer than 4096 characters "
				 "(hint: split the bucket into several, or cover symbols "
				 "with one glob)");
	memcpy(text, "  # a comment ..........", 23);
	assert_parse_error(text, "t.conf:1:4097: error: line longer than 4096 characters "
				 "(hint: shorten the comment, or split it over several lines)");
	free(text);
}

/* ---- errors: exact text, line and column ---- */

static void test_err_keywords(void **state)
{
	assert_parse_error("# c\nstpe native:exe:f\n",
			   "t.conf:2:1: error: unknown keyword 'stpe' (hint: did you mean step? "
			   "a line is step, bucket, lines, count, set or a # comment)");
	/* keywords are case-sensitive */
	assert_parse_error("  Step native:exe:f\n",
			   "t.conf:1:3: error: unknown keyword 'Step' (hint: did you mean step? "
			   "a line is step, bucket, lines, count, set or a # comment)");
	assert_parse_error("step native:exe:f\nbuckets a.b native:exe:g\n",
			   "t.conf:2:1: error: unknown keyword 'buckets' (hint: did you mean "
			   "bucket? a line is step, bucket, lines, count, set or a # comment)");
	assert_parse_error("probe native:exe:f\n",
			   "t.conf:1:1: error: unknown keyword 'probe' "
			   "(hint: a line is step, bucket, lines, count, set or a # comment)");
}

static void test_err_step(void **state)
{
	assert_parse_error("step native:exe:a\n\nbucket x.y native:exe:b\nstep native:exe:b\n",
			   "t.conf:4:1: error: second step line 'step' "
			   "(hint: only one step per file; the first is at line 1)");
	assert_parse_error("step\n",
			   "t.conf:1:1: error: step has no probe 'step' (hint: step "
			   "<probe> [mode=call|iteration] [tokens=<v>] [kv_len=<v>] [batch=<v>])");
	assert_parse_error("step # no probe here\n",
			   "t.conf:1:1: error: step has no probe 'step' (hint: step "
			   "<probe> [mode=call|iteration] [tokens=<v>] [kv_len=<v>] [batch=<v>])");
	/* tabs count as one column */
	assert_parse_error("\tstep\tnative:exe:f\tmode=loop\n",
			   "t.conf:1:20: error: unknown step mode 'mode=loop' (hint: mode=call "
			   "(entry to return) or mode=iteration (entry to the next entry))");
	assert_parse_error("step native:exe:f mode=Call\n",
			   "t.conf:1:19: error: unknown step mode 'mode=Call' (hint: mode=call "
			   "(entry to return) or mode=iteration (entry to the next entry))");
	assert_parse_error(
		"step native:exe:f iteration\n",
		"t.conf:1:19: error: unexpected token on step line 'iteration' "
		"(hint: step <probe> [mode=call|iteration] [tokens=<v>] [kv_len=<v>] [batch=<v>])");
	assert_parse_error(
		"step native:exe:f mode=call mode=iteration\n",
		"t.conf:1:29: error: unexpected token on step line 'mode=iteration' "
		"(hint: step <probe> [mode=call|iteration] [tokens=<v>] [kv_len=<v>] [batch=<v>])");
}

static void test_err_probes(void **state)
{
	assert_parse_error(
		"step py:train.py:step\n",
		"t.conf:1:6: error: Python probe with a single ':' 'py:train.py:step' "
		"(hint: name the module as imported (dots, no .py) and put '::' before a "
		"module-level function: py:pkg.mod::func, or py:pkg.mod.Class.method)");
	assert_parse_error("step py:step\n",
			   "t.conf:1:6: error: Python probe needs a module and a name "
			   "'py:step' (hint: " PYF " (or py:<module>.<function>), e.g. "
			   "py:vllm.v1.engine.core.EngineCore.step)");
	assert_parse_error("step py:::step\n",
			   "t.conf:1:6: error: empty module in Python probe 'py:::step' (hint: "
			   "name the module as imported, e.g. py:pkg.sub.mod::func)");
	assert_parse_error("step py:a.b::\n",
			   "t.conf:1:6: error: empty class or function in Python probe "
			   "'py:a.b::' (hint: " PYF ")");
	assert_parse_error("step py:a.B..m\n",
			   "t.conf:1:6: error: empty class or function in Python probe "
			   "'py:a.B..m' (hint: " PYF ")");
	assert_parse_error("step py:a*.B.m\n",
			   "t.conf:1:10: error: bad module name in Python probe 'py:a*.B.m' "
			   "(hint: a dotted module name without globs, e.g. pkg.sub.mod)");
	assert_parse_error("step py:a.B[.m\n",
			   "t.conf:1:6: error: bad glob in Python probe 'py:a.B[.m' (hint: "
			   "unbalanced '['; fnmatch(3) syntax: * ? [abc] [!a-z], '\\' escapes)");
	assert_parse_error("bucket a.b native:exe:f uprobe:libc:malloc\n",
			   "t.conf:1:25: error: unknown probe kind 'uprobe:libc:malloc' (hint: "
			   "supported: native:<object>:<symbol> and " PYF
			   ", e.g. native:libc.so*:malloc)");
	assert_parse_error("step main_loop\n",
			   "t.conf:1:6: error: not a probe 'main_loop' (hint: write "
			   "native:<object>:<symbol> or " PYF ", e.g. native:exe:main_loop)");
	/* the prefix is case-sensitive too */
	assert_parse_error("step Native:exe:f\n",
			   "t.conf:1:6: error: unknown probe kind 'Native:exe:f' (hint: "
			   "supported: native:<object>:<symbol> and " PYF
			   ", e.g. native:libc.so*:malloc)");
	assert_parse_error("step native:exe\n",
			   "t.conf:1:6: error: probe has no symbol 'native:exe' (hint: write "
			   "native:<object>:<symbol>, e.g. native:exe:main_loop)");
	assert_parse_error("step native:exe:\n",
			   "t.conf:1:6: error: empty symbol in probe 'native:exe:' (hint: name a "
			   "symbol or a glob after the second ':', e.g. native:exe:engine_*)");
	/* nothing left once the version suffix is cut */
	assert_parse_error(
		"step native:libc.so.6:@@GLIBC_2.2.5\n",
		"t.conf:1:6: error: empty symbol in probe 'native:libc.so.6:@@GLIBC_2.2.5' "
		"(hint: name a symbol or a glob after the second ':', e.g. "
		"native:exe:engine_*)");
	assert_parse_error("step native::malloc\n",
			   "t.conf:1:6: error: empty object in probe 'native::malloc' (hint: name "
			   "a library glob (libfoo.so*) or 'exe' for the main executable)");
}

static void test_err_globs(void **state)
{
	assert_parse_error(
		"bucket a.b native:libcuda[.so:cuInit\n",
		"t.conf:1:12: error: bad object glob in probe 'native:libcuda[.so:cuInit' "
		"(hint: unbalanced '['; fnmatch(3) syntax: * ? [abc] [!a-z], '\\' escapes)");
	assert_parse_error(
		"step native:exe:engine_[step\n",
		"t.conf:1:6: error: bad symbol glob in probe 'native:exe:engine_[step' "
		"(hint: unbalanced '['; fnmatch(3) syntax: * ? [abc] [!a-z], '\\' escapes)");
	/* "[]" and "[!]" do not close: a leading ']' is a member */
	assert_parse_error(
		"step native:exe:f[]\n",
		"t.conf:1:6: error: bad symbol glob in probe 'native:exe:f[]' "
		"(hint: unbalanced '['; fnmatch(3) syntax: * ? [abc] [!a-z], '\\' escapes)");
	assert_parse_error(
		"step native:exe:f[[:alpha:]\n",
		"t.conf:1:6: error: bad symbol glob in probe 'native:exe:f[[:alpha:]' "
		"(hint: unbalanced '['; fnmatch(3) syntax: * ? [abc] [!a-z], '\\' escapes)");
	assert_parse_error("step native:exe:f[[:letter:]]\n",
			   "t.conf:1:6: error: bad symbol glob in probe 'native:exe:f[[:letter:]]' "
			   "(hint: unknown character class; fnmatch(3) syntax: * ? [abc] [!a-z], "
			   "'\\' escapes)");
	assert_parse_error("step native:exe:f\\\n",
			   "t.conf:1:6: error: bad symbol glob in probe 'native:exe:f\\' "
			   "(hint: trailing '\\' escapes nothing; fnmatch(3) syntax: * ? [abc] "
			   "[!a-z], '\\' escapes)");
}

static void test_err_buckets(void **state)
{
	assert_parse_error("bucket engine.a native:exe:f\n#\nbucket engine.a native:exe:g\n",
			   "t.conf:3:8: error: duplicate bucket 'engine.a' (hint: first defined at "
			   "line 1; list all its probes on that line)");
	assert_parse_error("step native:exe:f\nbucket  engine.a\n",
			   "t.conf:2:9: error: bucket has no probes 'engine.a' (hint: bucket "
			   "engine.a native:<object>:<symbol> [<probe> ...])");
	assert_parse_error("bucket\n",
			   "t.conf:1:1: error: bucket has no name 'bucket' (hint: bucket "
			   "<domain.name> <probe> [<probe> ...])");
	assert_parse_error("bucket schedule native:exe:f\n",
			   "t.conf:1:8: error: bucket name has no domain 'schedule' (hint: name it "
			   "<domain>.<name>, e.g. engine.schedule; the domain groups buckets in "
			   "the report)");
	/* a probe in the name's place is caught as a bad name, not a missing dot */
	assert_parse_error("bucket native:exe:f\n",
			   "t.conf:1:8: error: bad character in bucket name 'native:exe:f' (hint: "
			   "use letters, digits, '_', '-' and '.', as in engine.schedule)");
	assert_parse_error("bucket .schedule native:exe:f\n",
			   "t.conf:1:8: error: empty domain in bucket name '.schedule' (hint: put "
			   "the domain before the first '.', e.g. engine.schedule)");
	assert_parse_error(
		"bucket engine. native:exe:f\n",
		"t.conf:1:8: error: empty name after the domain in bucket name 'engine.' "
		"(hint: put a name after the first '.', e.g. engine.schedule)");
	assert_parse_error("bucket a.b native:exe:f native:exe:g native:exe:f\n",
			   "t.conf:1:38: error: probe listed twice in bucket 'native:exe:f' "
			   "(hint: remove the repeat from bucket a.b)");
}

static void test_err_too_many_buckets(void **state)
{
	char *text = many_buckets(PT_MAX_BUCKETS, "bucket d.extra native:exe:f0\n");

	assert_parse_error(text, "t.conf:65:8: error: too many buckets 'd.extra' (hint: at most "
				 "64 buckets; merge some, a bucket takes several probes)");
	free(text);
}

static void test_err_set(void **state)
{
	assert_parse_error("step native:exe:f\nset warmup_step 10\n",
			   "t.conf:2:5: error: unknown key 'warmup_step' (hint: did you mean "
			   "warmup_steps? known keys: warmup_steps, ringbuf_mb, poll_ms, "
			   "prologue_skip, ringbuf_wakeup, py_session, py_trampolines, sample_hz, "
			   "python_mode, "
			   "kv_len_reduce, kv_bins, run_gap_ms, warmup_runs, native_frames)");
	assert_parse_error("set POLL_MS 10\n",
			   "t.conf:1:5: error: unknown key 'POLL_MS' (hint: did you mean "
			   "poll_ms? known keys: warmup_steps, ringbuf_mb, poll_ms, "
			   "prologue_skip, ringbuf_wakeup, py_session, py_trampolines, sample_hz, "
			   "python_mode, "
			   "kv_len_reduce, kv_bins, run_gap_ms, warmup_runs, native_frames)");
	assert_parse_error(
		"set verbosity 3\n",
		"t.conf:1:5: error: unknown key 'verbosity' (hint: known keys: "
		"warmup_steps, ringbuf_mb, poll_ms, prologue_skip, ringbuf_wakeup, "
		"py_session, py_trampolines, sample_hz, python_mode, kv_len_reduce, kv_bins, "
		"run_gap_ms, warmup_runs, native_frames)");
	assert_parse_error("set poll_ms 10\nstep native:exe:f\nset poll_ms 10\n",
			   "t.conf:3:5: error: key set twice 'poll_ms' "
			   "(hint: first set at line 1; keep one)");
	assert_parse_error(
		"set\n",
		"t.conf:1:1: error: set has no key 'set' (hint: set <key> <value>; "
		"keys: warmup_steps, ringbuf_mb, poll_ms, prologue_skip, "
		"ringbuf_wakeup, py_session, py_trampolines, sample_hz, "
		"python_mode, kv_len_reduce, kv_bins, run_gap_ms, warmup_runs, native_frames)");
	assert_parse_error("set poll_ms\n", "t.conf:1:5: error: missing value for key 'poll_ms' "
					    "(hint: set poll_ms <value>)");
	assert_parse_error("set poll_ms 10 ms\n",
			   "t.conf:1:16: error: unexpected token on set line 'ms' "
			   "(hint: set takes one key and one value)");
}

static void test_err_set_values(void **state)
{
	static const char rb_hint[] = "(hint: a power of two from 1 to 1024 (MiB), e.g. 16)";
	char want[256];

	snprintf(want, sizeof(want), "t.conf:1:16: error: bad value for ringbuf_mb '3' %s",
		 rb_hint);
	assert_parse_error("set ringbuf_mb 3\n", want);
	snprintf(want, sizeof(want), "t.conf:1:16: error: bad value for ringbuf_mb '0' %s",
		 rb_hint);
	assert_parse_error("set ringbuf_mb 0\n", want);
	snprintf(want, sizeof(want), "t.conf:1:16: error: bad value for ringbuf_mb '2048' %s",
		 rb_hint);
	assert_parse_error("set ringbuf_mb 2048\n", want);
	snprintf(want, sizeof(want), "t.conf:1:16: error: bad value for ringbuf_mb '0x10' %s",
		 rb_hint);
	assert_parse_error("set ringbuf_mb 0x10\n", want);

	assert_parse_error("set poll_ms 0\n", "t.conf:1:13: error: bad value for poll_ms '0' "
					      "(hint: milliseconds, 1..1000)");
	assert_parse_error("set poll_ms 1001\n", "t.conf:1:13: error: bad value for poll_ms "
						 "'1001' (hint: milliseconds, 1..1000)");
	assert_parse_error("set poll_ms 20ms\n", "t.conf:1:13: error: bad value for poll_ms "
						 "'20ms' (hint: milliseconds, 1..1000)");

	assert_parse_error("set warmup_steps -1\n",
			   "t.conf:1:18: error: bad value for warmup_steps '-1' "
			   "(hint: a whole number of steps, 0..4294967295)");
	assert_parse_error("set warmup_steps 4294967296\n",
			   "t.conf:1:18: error: bad value for warmup_steps '4294967296' "
			   "(hint: a whole number of steps, 0..4294967295)");
	assert_parse_error("set prologue_skip yes\n",
			   "t.conf:1:19: error: bad value for prologue_skip 'yes' "
			   "(hint: on or off)");
	assert_parse_error("set ringbuf_wakeup ON\n",
			   "t.conf:1:20: error: bad value for ringbuf_wakeup 'ON' "
			   "(hint: on or off)");
}

static void test_err_nothing_to_profile(void **state)
{
	static const char want[] =
		"t.conf:1:1: error: nothing to profile: no step, bucket or lines line (hint: add "
		"'step native:<object>:<symbol>', 'bucket <domain.name> <probe>...' or "
		"'lines py:<module>::<function>')";

	assert_parse_error("", want);
	assert_parse_error("# only comments\n\n\t\n", want);
	assert_parse_error("set poll_ms 5\nset ringbuf_mb 4\n", want);
}

static void test_err_first_error_wins(void **state)
{
	/* line 2 is bad, line 3 too: only line 2 is reported */
	assert_parse_error("step native:exe:f\nset poll_ms 0\nstep native:exe:g\n",
			   "t.conf:2:13: error: bad value for poll_ms '0' "
			   "(hint: milliseconds, 1..1000)");
}

static void test_err_nul_byte(void **state)
{
	static const char text[] = "step native:exe:f\nstep\0x\n";
	struct pt_config cfg;
	char err[256];
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");

	assert_non_null(f);
	assert_int_equal(pt_config__parse(&cfg, f, "t.conf", err, sizeof(err)), -EINVAL);
	fclose(f);
	assert_string_equal(err, "t.conf:2:5: error: NUL byte in line "
				 "(hint: targets files are plain text)");
	assert_true(all_zero(&cfg, sizeof(cfg)));
}

static void test_long_token_is_cut(void **state)
{
	char text[300], want[400];

	memset(text, 'x', 200);
	strcpy(text + 200, " native:exe:f\n");
	memset(want, 0, sizeof(want));
	strcpy(want, "t.conf:1:1: error: unknown keyword '");
	memset(want + strlen(want), 'x', 97);
	strcat(want, "...' (hint: a line is step, bucket, lines, count, set or a # comment)");
	assert_parse_error(text, want);
}

static void test_err_buffer_limits(void **state)
{
	struct pt_config cfg;
	char err[16];

	memset(err, 'x', sizeof(err));
	assert_int_equal(parse_str(&cfg, "stpe native:exe:f\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.conf:1:1: err");
	/* no message wanted: still an error, nothing written */
	assert_int_equal(parse_str(&cfg, "stpe native:exe:f\n", NULL, 0), -EINVAL);
	assert_int_equal(parse_str(&cfg, "step native:exe:f\n", NULL, 0), 0);
	pt_config__free(&cfg);
}

/* ---- lines directive, sampling keys ---- */

static void test_lines_directive(void **state)
{
	struct pt_config cfg;

	/* a file with only a lines line is something to profile */
	parse_ok(&cfg, "lines py:engine.Sched.schedule  py:engine::helper\tpy:pkg.mod.C*.run_*\n");
	assert_int_equal(cfg.step_probe, -1);
	assert_int_equal(cfg.nbuckets, 0);
	assert_int_equal(cfg.nprobes, 3);
	assert_int_equal(cfg.nlines, 3);
	assert_int_equal(cfg.probes[0].kind, PT_PROBE_PY);
	assert_string_equal(cfg.probes[0].text, "py:engine.Sched.schedule");
	assert_string_equal(cfg.probes[0].object, "engine");
	assert_string_equal(cfg.probes[0].cls, "Sched");
	assert_string_equal(cfg.probes[0].symbol, "schedule");
	assert_int_equal(cfg.probes[0].line, 1);
	assert_int_equal(cfg.probes[0].col, 7);
	assert_string_equal(cfg.probes[1].text, "py:engine::helper");
	assert_null(cfg.probes[1].cls);
	assert_string_equal(cfg.probes[1].symbol, "helper");
	assert_int_equal(cfg.probes[1].col, 33);
	assert_string_equal(cfg.probes[2].object, "pkg/mod");
	assert_string_equal(cfg.probes[2].cls, "C*");
	assert_string_equal(cfg.probes[2].symbol, "run_*");
	assert_int_equal(cfg.probes[2].col, 51);
	for (size_t i = 0; i < cfg.nprobes; i++) {
		assert_true(cfg.probes[i].is_lines);
		assert_false(cfg.probes[i].is_step);
		assert_int_equal(cfg.probes[i].bucket_mask, 0);
	}
	/* defaults hold with lines */
	assert_int_equal(cfg.sample_hz, 1000);
	assert_int_equal(cfg.python_mode, PT_PYMODE_AUTO);
	pt_config__free(&cfg);
	assert_true(all_zero(&cfg, sizeof(cfg)));

	/* no trailing newline, a comment after the probe */
	parse_ok(&cfg, "lines py:m::f # per line");
	assert_int_equal(cfg.nprobes, 1);
	assert_int_equal(cfg.nlines, 1);
	assert_true(cfg.probes[0].is_lines);
	pt_config__free(&cfg);
}

/* A probe that is also the step or in a bucket is one spec with every
 * role; probes on no lines line are not is_lines. */
static void test_lines_shared_spec(void **state)
{
	static const char text[] = "step py:srv.engine.Engine.step\n"
				   "bucket eng.sched py:srv.sched::run native:exe:f\n"
				   "lines py:srv.engine.Engine.step py:srv.sched::run\n"
				   "lines py:srv.other::g\n";
	struct pt_config cfg;

	parse_ok(&cfg, text);
	assert_int_equal(cfg.nprobes, 4);
	assert_int_equal(cfg.nlines, 3);
	assert_int_equal(cfg.step_probe, 0);
	assert_string_equal(cfg.probes[0].text, "py:srv.engine.Engine.step");
	assert_true(cfg.probes[0].is_step);
	assert_true(cfg.probes[0].is_lines);
	assert_int_equal(cfg.probes[0].bucket_mask, 0);
	/* where it was first written */
	assert_int_equal(cfg.probes[0].line, 1);
	assert_int_equal(cfg.probes[0].col, 6);
	assert_string_equal(cfg.probes[1].text, "py:srv.sched::run");
	assert_false(cfg.probes[1].is_step);
	assert_true(cfg.probes[1].is_lines);
	assert_int_equal(cfg.probes[1].bucket_mask, 1);
	assert_int_equal(cfg.probes[1].line, 2);
	assert_string_equal(cfg.probes[2].text, "native:exe:f");
	assert_false(cfg.probes[2].is_lines);
	assert_string_equal(cfg.probes[3].text, "py:srv.other::g");
	assert_true(cfg.probes[3].is_lines);
	assert_int_equal(cfg.probes[3].line, 4);
	pt_config__free(&cfg);

	/* no lines line: nothing is_lines */
	parse_ok(&cfg, "step py:m::f\n");
	assert_int_equal(cfg.nlines, 0);
	assert_false(cfg.probes[0].is_lines);
	pt_config__free(&cfg);
}

static void test_err_lines(void **state)
{
	static const char no_probe[] =
		"(hint: lines py:<module>.<Class>.<method> or py:<module>::<function>)";
	/* clang-format off */
	static const char py_only[] =
		"(hint: per-line times come from sampled Python stacks, e.g. "
		"lines py:engine.Scheduler.schedule)";
	/* clang-format on */
	char want[512];

	snprintf(want, sizeof(want), "t.conf:1:1: error: lines has no probe 'lines' %s", no_probe);
	assert_parse_error("lines\n", want);
	assert_parse_error("lines   # nothing here\n", want);
	snprintf(want, sizeof(want), "t.conf:2:3: error: lines has no probe 'lines' %s", no_probe);
	assert_parse_error("step native:exe:f\n  lines\n", want);

	snprintf(want, sizeof(want),
		 "t.conf:1:7: error: lines takes py: probes only 'native:exe:f' %s", py_only);
	assert_parse_error("lines native:exe:f\n", want);
	/* the first py: probe is fine; the native one after it is not */
	snprintf(want, sizeof(want),
		 "t.conf:2:15: error: lines takes py: probes only 'native:libc.so*:read' %s",
		 py_only);
	assert_parse_error("step native:exe:f\nlines py:m::f native:libc.so*:read\n", want);
	/* even when the native probe is already known from the step */
	snprintf(want, sizeof(want),
		 "t.conf:2:7: error: lines takes py: probes only 'native:exe:f' %s", py_only);
	assert_parse_error("step native:exe:f\nlines native:exe:f\n", want);
	/* not a probe at all: the same message */
	snprintf(want, sizeof(want),
		 "t.conf:1:7: error: lines takes py: probes only 'engine.step' %s", py_only);
	assert_parse_error("lines engine.step\n", want);
	/* keyword prefix is case-sensitive */
	snprintf(want, sizeof(want), "t.conf:1:7: error: lines takes py: probes only 'PY:m::f' %s",
		 py_only);
	assert_parse_error("lines PY:m::f\n", want);
	/* a malformed py: probe gets the py: probe message */
	assert_parse_error(
		"lines py:train.py:step\n",
		"t.conf:1:7: error: Python probe with a single ':' 'py:train.py:step' "
		"(hint: name the module as imported (dots, no .py) and put '::' before a "
		"module-level function: py:pkg.mod::func, or py:pkg.mod.Class.method)");
	/* "line" is close to "lines" */
	assert_parse_error("line py:m::f\n",
			   "t.conf:1:1: error: unknown keyword 'line' (hint: did you mean lines? "
			   "a line is step, bucket, lines, count, set or a # comment)");
}

static void test_sample_hz(void **state)
{
	static const char hint[] =
		"(hint: samples per second per thread, 0 (off) to 10000, e.g. 1000)";
	static const char *const bad[] = {
		"10001", "-1", "abc", "1e3", "0x10", "100hz", "99999999999999999999999"
	};
	struct pt_config cfg;
	char text[128], want[256];
	size_t i;

	parse_ok(&cfg, "step native:exe:f\n");
	assert_int_equal(cfg.sample_hz, 1000);
	assert_int_equal(cfg.python_mode, PT_PYMODE_AUTO);
	assert_int_equal(cfg.nlines, 0);
	pt_config__free(&cfg);

	parse_ok(&cfg, "set sample_hz 0\nstep native:exe:f\n");
	assert_int_equal(cfg.sample_hz, 0);
	pt_config__free(&cfg);
	parse_ok(&cfg, "set sample_hz 10000\nlines py:m::f\n");
	assert_int_equal(cfg.sample_hz, 10000);
	pt_config__free(&cfg);
	parse_ok(&cfg, "set sample_hz 1\nstep native:exe:f\n");
	assert_int_equal(cfg.sample_hz, 1);
	pt_config__free(&cfg);
	parse_ok(&cfg, "set sample_hz 0099\nstep native:exe:f\n");
	assert_int_equal(cfg.sample_hz, 99); /* decimal, not octal */
	pt_config__free(&cfg);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "step native:exe:f\nset sample_hz %s\n", bad[i]);
		snprintf(want, sizeof(want), "t.conf:2:15: error: bad value for sample_hz '%s' %s",
			 bad[i], hint);
		assert_parse_error(text, want);
	}
	assert_parse_error("set sample_hz 100\nset sample_hz 100\nstep native:exe:f\n",
			   "t.conf:2:5: error: key set twice 'sample_hz' "
			   "(hint: first set at line 1; keep one)");
	assert_parse_error("set sample_hz\n", "t.conf:1:5: error: missing value for key "
					      "'sample_hz' (hint: set sample_hz <value>)");
	assert_parse_error("set sample_Hz 100\n",
			   "t.conf:1:5: error: unknown key 'sample_Hz' (hint: did you mean "
			   "sample_hz? known keys: warmup_steps, ringbuf_mb, poll_ms, "
			   "prologue_skip, ringbuf_wakeup, py_session, py_trampolines, sample_hz, "
			   "python_mode, "
			   "kv_len_reduce, kv_bins, run_gap_ms, warmup_runs, native_frames)");
}

static void test_python_mode(void **state)
{
	static const char hint[] = "(hint: auto (the agent where the process has it, else "
				   "sampled), agent, evalframe or sampled)";
	static const char *const bad[] = { "Auto", "exact", "sample", "evalframe,sampled", "0" };
	static const struct {
		const char *v;
		enum pt_python_mode mode;
	} ok[] = {
		{ "auto", PT_PYMODE_AUTO },
		{ "evalframe", PT_PYMODE_EVALFRAME },
		{ "sampled", PT_PYMODE_SAMPLED },
		{ "agent", PT_PYMODE_AGENT },
	};
	struct pt_config cfg;
	char text[128], want[512];
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text), "set python_mode %s\nstep py:m::f\n", ok[i].v);
		parse_ok(&cfg, text);
		assert_int_equal(cfg.python_mode, ok[i].mode);
		assert_int_equal(cfg.sample_hz, 1000);
		pt_config__free(&cfg);
	}
	assert_parse_error(
		"set python_mode usdt\nstep py:m::f\n",
		"t.conf:1:17: error: python_mode usdt is not offered 'usdt' (hint: where "
		"an interpreter's USDT probes time every call, the agent times only the "
		"named calls, exactly (docs/targets.md); use auto or agent)");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "step py:m::f\nset  python_mode\t%s\n", bad[i]);
		snprintf(want, sizeof(want),
			 "t.conf:2:18: error: bad value for python_mode '%s' %s", bad[i], hint);
		assert_parse_error(text, want);
	}
	assert_parse_error("set python_mode auto\nset python_mode sampled\nstep py:m::f\n",
			   "t.conf:2:5: error: key set twice 'python_mode' "
			   "(hint: first set at line 1; keep one)");
	assert_parse_error("set python_mode sampled evalframe\n",
			   "t.conf:1:25: error: unexpected token on set line 'evalframe' "
			   "(hint: set takes one key and one value)");
}

/* ---- pt_config__load and fixtures ---- */

static void test_load_fixture_valid(void **state)
{
	struct pt_config cfg;
	char err[512] = "";
	int ret;

	ret = pt_config__load(&cfg, FIXTURES "engine.conf", err, sizeof(err));
	if (ret)
		print_error("%s\n", err);
	assert_int_equal(ret, 0);
	assert_string_equal(cfg.path, FIXTURES "engine.conf");
	assert_int_equal(cfg.step_mode, PT_STEP_ITERATION);
	assert_string_equal(cfg.probes[cfg.step_probe].text, "native:exe:engine_step");
	assert_int_equal(cfg.nbuckets, 4);
	assert_string_equal(cfg.buckets[0].name, "engine.schedule");
	assert_string_equal(cfg.buckets[2].name, "gpu.launch");
	assert_string_equal(cfg.buckets[2].domain, "gpu");
	assert_string_equal(cfg.buckets[3].name, "alloc.malloc");
	assert_int_equal(cfg.warmup_steps, 5);
	assert_int_equal(cfg.ringbuf_mb, 32);
	assert_int_equal(cfg.poll_ms, 10);
	assert_true(cfg.prologue_skip);
	assert_false(cfg.ringbuf_wakeup);
	assert_int_equal(cfg.nprobes, 6);
	/* engine_step is the step and in the engine.step bucket */
	assert_true(cfg.probes[cfg.step_probe].is_step);
	assert_int_equal(cfg.probes[cfg.step_probe].bucket_mask, 1ULL << 1);
	pt_config__free(&cfg);
}

static void test_load_fixture_errors(void **state)
{
	struct pt_config cfg;
	char err[512];

	assert_int_equal(pt_config__load(&cfg, FIXTURES "bad_second_step.conf", err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, FIXTURES "bad_second_step.conf:7:1: error: second step line "
					  "'step' (hint: only one step per file; the first is at "
					  "line 3)");
	assert_true(all_zero(&cfg, sizeof(cfg)));

	assert_int_equal(pt_config__load(&cfg, FIXTURES "bad_key.conf", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, FIXTURES
			    "bad_key.conf:4:6: error: unknown key 'ringbuf_MB' "
			    "(hint: did you mean ringbuf_mb? known keys: warmup_steps, "
			    "ringbuf_mb, poll_ms, prologue_skip, ringbuf_wakeup, "
			    "py_session, py_trampolines, sample_hz, python_mode, "
			    "kv_len_reduce, kv_bins, run_gap_ms, warmup_runs, native_frames)");
	assert_true(all_zero(&cfg, sizeof(cfg)));

	assert_int_equal(pt_config__load(&cfg, FIXTURES "bad_py.conf", err, sizeof(err)), -EINVAL);
	assert_string_equal(err,
			    FIXTURES "bad_py.conf:2:25: error: Python probe with a single "
				     "':' 'py:model.py:forward' (hint: name the module as "
				     "imported (dots, no .py) and put '::' before a module-level "
				     "function: py:pkg.mod::func, or py:pkg.mod.Class.method)");
	pt_config__free(&cfg);
}

static void test_load_missing_and_unreadable(void **state)
{
	struct pt_config cfg;
	char err[512];

	memset(&cfg, 0xab, sizeof(cfg));
	assert_int_equal(pt_config__load(&cfg, FIXTURES "no-such.conf", err, sizeof(err)), -ENOENT);
	assert_string_equal(err, FIXTURES "no-such.conf: cannot read targets file: "
					  "No such file or directory");
	assert_true(all_zero(&cfg, sizeof(cfg)));
	pt_config__free(&cfg);

	/* a directory opens but cannot be read */
	assert_int_equal(pt_config__load(&cfg, FIXTURES, err, sizeof(err)), -EISDIR);
	assert_string_equal(err, FIXTURES ": cannot read targets file: Is a directory");
	assert_true(all_zero(&cfg, sizeof(cfg)));
}

static void test_free_is_safe(void **state)
{
	struct pt_config cfg;

	pt_config__free(NULL);
	memset(&cfg, 0, sizeof(cfg));
	pt_config__free(&cfg);
	pt_config__free(&cfg);
	assert_true(all_zero(&cfg, sizeof(cfg)));

	parse_ok(&cfg, "step native:exe:f\nbucket a.b native:exe:g\n");
	pt_config__free(&cfg);
	assert_true(all_zero(&cfg, sizeof(cfg)));
	pt_config__free(&cfg); /* twice */
}

/* ---- tokens, kv_len and batch (issue 7) ---- */

#define STEPF "step <probe> [mode=call|iteration] [tokens=<v>] [kv_len=<v>] [batch=<v>]"
#define COUNTF "count tokens <probe> <value>, e.g. count tokens py:engine.Sampler.sample len(ret)"
#define NATIVE_VALS                                                                                \
	"argN (integer argument N, 0..5) or ret (integer return value), with :i32 or :u32 "        \
	"for a 32-bit int"
#define KV_BINS_HINT                                                                               \
	"(hint: increasing lower bounds starting at 0, comma-separated, at most 32, e.g. "         \
	"0,512,1024,2048 (the last bin is open-ended))"
/* the error points at the second percentile and names the first */
#define TWO_PCT_HINT(first)                                                                        \
	"(hint: one list per call can be kept for a percentile, and '" first "' is one; use "      \
	"mean, min, max or sum for the other)"

/* 1-based column of the first s in a one-line text */
static int colof(const char *text, const char *s)
{
	const char *at = strstr(text, s);

	assert_non_null(at);
	return (int)(at - text) + 1;
}

static void check_vexpr(const struct pt_vexpr *e, enum pt_vrole role, enum pt_vfn fn,
			unsigned int src, unsigned int argn, const char *name, const char *text,
			int col)
{
	assert_int_equal(e->role, role);
	assert_int_equal(e->fn, fn);
	assert_int_equal(e->src, src);
	assert_int_equal(e->argn, argn);
	if (name)
		assert_string_equal(e->name, name);
	else
		assert_null(e->name);
	assert_string_equal(e->text, text);
	assert_int_equal(e->col, col);
}

static void test_step_values_any_order(void **state)
{
	static const char py[] = "step py:engine.core.Engine.step kv_len=arg:seq_lens "
				 "mode=iteration tokens=len(ret) batch=len(arg:reqs)\n";
	static const char nat[] = "step native:exe:engine_step batch=ret mode=call tokens=arg2\n";
	struct pt_config cfg;
	const struct pt_probe_spec *ps;

	parse_ok(&cfg, py);
	assert_int_equal(cfg.nprobes, 1);
	assert_int_equal(cfg.step_probe, 0);
	assert_int_equal(cfg.step_mode, PT_STEP_ITERATION);
	assert_int_equal(cfg.nvals, 3);
	ps = &cfg.probes[0];
	assert_true(ps->is_step);
	assert_int_equal(ps->kind, PT_PROBE_PY);
	assert_int_equal(ps->nvals, 3);
	/* in the order written, each at the column of its expression (after
	 * the role's "name=") */
	check_vexpr(&ps->vals[0], PT_VROLE_KVLEN, PT_VFN_NONE, PT_VSRC_PYARG, 0, "seq_lens",
		    "arg:seq_lens", colof(py, "arg:seq_lens"));
	check_vexpr(&ps->vals[1], PT_VROLE_TOKENS, PT_VFN_LEN, PT_VSRC_PYRET, 0, NULL, "len(ret)",
		    colof(py, "len(ret)"));
	check_vexpr(&ps->vals[2], PT_VROLE_BATCH, PT_VFN_LEN, PT_VSRC_PYARG, 0, "reqs",
		    "len(arg:reqs)", colof(py, "len(arg:reqs)"));
	assert_int_equal(ps->vals[0].col, 40);
	/* defaults of the value keys */
	assert_int_equal(cfg.kv_reduce, PT_VFN_MEAN);
	pt_config__free(&cfg);
	assert_true(all_zero(&cfg, sizeof(cfg)));

	parse_ok(&cfg, nat);
	assert_int_equal(cfg.step_mode, PT_STEP_CALL);
	assert_int_equal(cfg.nvals, 2);
	ps = &cfg.probes[0];
	assert_int_equal(ps->nvals, 2);
	check_vexpr(&ps->vals[0], PT_VROLE_BATCH, PT_VFN_NONE, PT_VSRC_RET, 0, NULL, "ret",
		    colof(nat, "ret mode"));
	check_vexpr(&ps->vals[1], PT_VROLE_TOKENS, PT_VFN_NONE, PT_VSRC_ARG, 2, NULL, "arg2",
		    colof(nat, "arg2"));
	pt_config__free(&cfg);

	/* the step probe shared with a bucket keeps both roles and its values */
	parse_ok(&cfg, "bucket engine.step native:exe:engine_step\n"
		       "step native:exe:engine_step kv_len=arg1\n");
	assert_int_equal(cfg.nprobes, 1);
	assert_int_equal(cfg.probes[0].bucket_mask, 1);
	assert_true(cfg.probes[0].is_step);
	assert_int_equal(cfg.probes[0].nvals, 1);
	check_vexpr(&cfg.probes[0].vals[0], PT_VROLE_KVLEN, PT_VFN_NONE, PT_VSRC_ARG, 1, NULL,
		    "arg1", 36);
	pt_config__free(&cfg);

	/* no values: nvals 0 */
	parse_ok(&cfg, "step native:exe:f mode=iteration\n");
	assert_int_equal(cfg.nvals, 0);
	assert_int_equal(cfg.probes[0].nvals, 0);
	pt_config__free(&cfg);
}

static void test_count_tokens(void **state)
{
	struct pt_config cfg;

	parse_ok(&cfg, "step native:exe:engine_step kv_len=arg0\n"
		       "count tokens py:engine.Sampler.sample len(ret)\n"
		       "count  tokens\tnative:exe:engine_step arg1 # on the step probe too\n");
	assert_int_equal(cfg.nprobes, 2);
	assert_int_equal(cfg.nvals, 3);
	assert_int_equal(cfg.step_probe, 0);
	assert_int_equal(cfg.probes[0].nvals, 2);
	check_vexpr(&cfg.probes[0].vals[0], PT_VROLE_KVLEN, PT_VFN_NONE, PT_VSRC_ARG, 0, NULL,
		    "arg0", 36);
	check_vexpr(&cfg.probes[0].vals[1], PT_VROLE_COUNT, PT_VFN_NONE, PT_VSRC_ARG, 1, NULL,
		    "arg1", 38);
	assert_int_equal(cfg.probes[1].kind, PT_PROBE_PY);
	assert_string_equal(cfg.probes[1].text, "py:engine.Sampler.sample");
	assert_false(cfg.probes[1].is_step);
	assert_int_equal(cfg.probes[1].bucket_mask, 0);
	assert_int_equal(cfg.probes[1].line, 2);
	assert_int_equal(cfg.probes[1].col, 14);
	assert_int_equal(cfg.probes[1].nvals, 1);
	check_vexpr(&cfg.probes[1].vals[0], PT_VROLE_COUNT, PT_VFN_LEN, PT_VSRC_PYRET, 0, NULL,
		    "len(ret)", 39);
	pt_config__free(&cfg);

	/* a count line may come before the step line */
	parse_ok(&cfg, "count tokens native:exe:sample ret\nstep native:exe:s\n");
	assert_int_equal(cfg.nvals, 1);
	assert_int_equal(cfg.step_probe, 1);
	assert_int_equal(cfg.probes[0].vals[0].role, PT_VROLE_COUNT);
	pt_config__free(&cfg);
}

static void test_err_count_tokens(void **state)
{
	assert_parse_error("count\n", "t.conf:1:1: error: count needs what it counts 'count' "
				      "(hint: count tokens <probe> <value>)");
	assert_parse_error("step native:exe:s\ncount batch native:exe:f arg0\n",
			   "t.conf:2:7: error: count needs what it counts 'batch' "
			   "(hint: count tokens <probe> <value>)");
	assert_parse_error("step native:exe:s\ncount Tokens native:exe:f arg0\n",
			   "t.conf:2:7: error: count needs what it counts 'Tokens' "
			   "(hint: count tokens <probe> <value>)");
	/* no probe, no value */
	assert_parse_error("step native:exe:s\ncount tokens\n",
			   "t.conf:2:7: error: count tokens needs a probe and a value 'tokens' "
			   "(hint: " COUNTF ")");
	assert_parse_error("step native:exe:s\ncount tokens native:exe:f\n",
			   "t.conf:2:7: error: count tokens needs a probe and a value 'tokens' "
			   "(hint: " COUNTF ")");
	assert_parse_error("step native:exe:s\ncount tokens native:exe:f arg0 arg1\n",
			   "t.conf:2:32: error: unexpected token on count line 'arg1' "
			   "(hint: " COUNTF ")");
	assert_parse_error("step native:exe:s\ncount tokens engine_step arg0\n",
			   "t.conf:2:14: error: not a probe 'engine_step' (hint: write "
			   "native:<object>:<symbol> or " PYF ", e.g. native:exe:main_loop)");
	assert_parse_error("step native:exe:s\ncount tokens native:exe:f arg7\n",
			   "t.conf:2:27: error: bad value expression: argument index out of "
			   "range 'arg7' (hint: arg0..arg5, the integer arguments passed in "
			   "registers)");
	assert_parse_error("step native:exe:s\ncount tokens native:exe:f len(ret)\n",
			   "t.conf:2:27: error: bad value expression: len() reads a Python "
			   "object 'len(ret)' (hint: a native probe takes " NATIVE_VALS ")");
}

static void test_err_tokens_twice(void **state)
{
	struct pt_config cfg;
	char err[1024];

	/* step tokens= then count on the same probe, and the other way round */
	assert_parse_error("step native:exe:s tokens=arg0\ncount tokens native:exe:s arg1\n",
			   "t.conf:2:27: error: tokens of this probe given twice 'arg1' "
			   "(hint: native:exe:s already reads tokens 'arg0'; keep one)");
	assert_parse_error("count tokens native:exe:s arg1\nstep native:exe:s tokens=arg0\n",
			   "t.conf:2:19: error: tokens of this probe given twice 'tokens=arg0' "
			   "(hint: native:exe:s already reads count tokens 'arg1'; keep one)");
	assert_parse_error("step native:exe:s\ncount tokens native:exe:f arg0\n"
			   "count tokens native:exe:f ret\n",
			   "t.conf:3:27: error: tokens of this probe given twice 'ret' "
			   "(hint: native:exe:f already reads count tokens 'arg0'; keep one)");
	/* Any role twice. (The message says "tokens" for kv_len too: only
	 * the parts that name the right role are checked here.) */
	assert_int_equal(
		parse_str(&cfg, "step native:exe:s kv_len=arg0 kv_len=arg1\n", err, sizeof(err)),
		-EINVAL);
	assert_int_equal(strncmp(err, "t.conf:1:31: error: ", 20), 0);
	assert_non_null(strstr(err, " of this probe given twice 'kv_len=arg1' (hint: "
				    "native:exe:s already reads kv_len 'arg0'; keep one)"));
	assert_int_equal(parse_str(&cfg, "step native:exe:s batch=ret mode=call batch=arg0\n", err,
				   sizeof(err)),
			 -EINVAL);
	assert_int_equal(strncmp(err, "t.conf:1:39: error: ", 20), 0);
	assert_non_null(strstr(err, " of this probe given twice 'batch=arg0' (hint: "
				    "native:exe:s already reads batch 'ret'; keep one)"));
}

static void test_values_per_probe_limit(void **state)
{
	struct pt_config cfg;

	/* three roles is all a probe can have (PT_MAX_VALS): tokens and count
	 * tokens exclude each other, so a fourth is always a role twice */
	parse_ok(&cfg, "step native:exe:s tokens=arg0 kv_len=arg1 batch=arg2\n");
	assert_int_equal(cfg.probes[0].nvals, PT_MAX_VALS);
	assert_int_equal(cfg.nvals, 3);
	pt_config__free(&cfg);
	assert_parse_error("step native:exe:s tokens=arg0 kv_len=arg1 batch=arg2\n"
			   "count tokens native:exe:s ret\n",
			   "t.conf:2:27: error: tokens of this probe given twice 'ret' "
			   "(hint: native:exe:s already reads tokens 'arg0'; keep one)");
	parse_ok(&cfg, "step native:exe:s kv_len=arg1 batch=arg2\ncount tokens native:exe:s ret\n");
	assert_int_equal(cfg.probes[0].nvals, PT_MAX_VALS);
	pt_config__free(&cfg);
}

static void test_two_percentiles(void **state)
{
	struct pt_config cfg;

	assert_parse_error(
		"step py:m::f tokens=p90(arg:a) kv_len=p50(arg:b)\n",
		"t.conf:1:39: error: two percentiles on one probe 'p50(arg:b)' " TWO_PCT_HINT(
			"p90(arg:a)"));
	assert_parse_error(
		"step py:m::f kv_len=p90(arg:a)\ncount tokens py:m::f p50(ret)\n",
		"t.conf:2:22: error: two percentiles on one probe 'p50(ret)' " TWO_PCT_HINT(
			"p90(arg:a)"));
	/* a percentile next to aggregates is fine; so are percentiles on two
	 * probes */
	parse_ok(&cfg, "step py:m::f kv_len=p90(arg:a) tokens=sum(arg:b) batch=len(arg:c)\n"
		       "count tokens py:m::g p50(ret)\n");
	assert_int_equal(cfg.nvals, 4);
	assert_int_equal(cfg.probes[0].vals[0].fn, PT_VFN_P90);
	assert_int_equal(cfg.probes[1].vals[0].fn, PT_VFN_P50);
	pt_config__free(&cfg);
	/* a bare kv_len with the default reduction is no percentile */
	parse_ok(&cfg, "step py:m::f kv_len=arg:kv tokens=p50(arg:t)\n");
	pt_config__free(&cfg);
}

/*
 * Regression: the two-percentile check must use kv_len_reduce, wherever
 * it is set: with `set kv_len_reduce p90` a bare kv_len= keeps its
 * elements, and a second percentile on the same probe would share the
 * record's one element tail.
 */
static void test_two_percentiles_with_kv_len_reduce(void **state)
{
	static const char *const texts[] = {
		"set kv_len_reduce p90\nstep py:m::f kv_len=arg:kv tokens=p50(arg:t)\n",
		"step py:m::f kv_len=arg:kv tokens=p50(arg:t)\nset kv_len_reduce p50\n",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct pt_config cfg;
		char err[1024] = "";
		int ret = parse_str(&cfg, texts[i], err, sizeof(err));

		if (!ret)
			pt_config__free(&cfg);
		if (ret != -EINVAL || !strstr(err, "two percentiles on one probe"))
			fail_msg("accepted two element reads on one probe:\n%s", texts[i]);
	}
}

static void test_err_value_columns(void **state)
{
	assert_parse_error("step py:m::f tokens=len(arg:x\n",
			   "t.conf:1:21: error: bad value expression: unbalanced parentheses "
			   "'len(arg:x' (hint: len(arg:<name>))");
	assert_parse_error("step native:exe:s mode=call batch=arg:n\n",
			   "t.conf:1:35: error: bad value expression: arg:<name> reads a Python "
			   "argument 'arg:n' (hint: a native probe takes " NATIVE_VALS ")");
	assert_parse_error("step native:exe:s tokens=\n",
			   "t.conf:1:26: error: bad value expression: empty value '' "
			   "(hint: " NATIVE_VALS ")");
	/* a reason without a hint */
	assert_parse_error("step py:m::f kv_len=arg:x)\n",
			   "t.conf:1:21: error: bad value expression: unbalanced parentheses "
			   "'arg:x)'");
	/* tabs count as one column */
	assert_parse_error("\tstep\tpy:m::f\tkv_len=arg:a.b.c\n",
			   "t.conf:1:22: error: bad value expression: one attribute level at most "
			   "'arg:a.b.c' (hint: read an object nearer the value, e.g. arg:a.b)");
	assert_parse_error("# c\n\n   step py:m::f   tokens=foo(ret)\n",
			   "t.conf:3:26: error: bad value expression: unknown function 'foo' "
			   "'foo(ret)' (hint: len, sum, mean, min, max, p50 or p90)");
	assert_parse_error("step py:m::f batch=arg0\n",
			   "t.conf:1:20: error: bad value expression: a Python probe names its "
			   "argument 'arg0' (hint: arg:<name>)");
	/* not a role */
	assert_parse_error("step native:exe:s token=arg0\n",
			   "t.conf:1:19: error: unexpected token on step line 'token=arg0' "
			   "(hint: " STEPF ")");
	/* an error after a value was added: nothing leaks (asan build) */
	assert_parse_error("step py:m::f tokens=len(ret) mode=bogus\n",
			   "t.conf:1:30: error: unknown step mode 'mode=bogus' (hint: mode=call "
			   "(entry to return) or mode=iteration (entry to the next entry))");
	assert_parse_error(
		"step py:m::f tokens=len(ret) kv_len=p90(arg:a) batch=p50(ret)\n",
		"t.conf:1:54: error: two percentiles on one probe 'p50(ret)' " TWO_PCT_HINT(
			"p90(arg:a)"));
}

static void test_kv_len_reduce(void **state)
{
	static const struct {
		const char *v;
		enum pt_vfn fn;
	} ok[] = {
		{ "mean", PT_VFN_MEAN }, { "max", PT_VFN_MAX }, { "min", PT_VFN_MIN },
		{ "sum", PT_VFN_SUM },	 { "p50", PT_VFN_P50 }, { "p90", PT_VFN_P90 },
	};
	static const char *const bad[] = { "median", "len", "P90", "none", "p99", "mean," };
	char text[128], want[512];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct pt_config cfg;

		snprintf(text, sizeof(text), "step native:exe:s\nset kv_len_reduce %s\n", ok[i].v);
		parse_ok(&cfg, text);
		assert_int_equal(cfg.kv_reduce, ok[i].fn);
		pt_config__free(&cfg);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "step native:exe:s\nset kv_len_reduce %s\n", bad[i]);
		snprintf(want, sizeof(want),
			 "t.conf:2:19: error: bad value for kv_len_reduce '%s' (hint: mean, max, "
			 "min, sum, p50 or p90: how a kv_len list becomes one number per step)",
			 bad[i]);
		assert_parse_error(text, want);
	}
	assert_parse_error("step native:exe:s\nset kv_len_reduce max\nset kv_len_reduce p90\n",
			   "t.conf:3:5: error: key set twice 'kv_len_reduce' "
			   "(hint: first set at line 2; keep one)");
	assert_parse_error("step native:exe:s\nset kv_len_reduce\n",
			   "t.conf:2:5: error: missing value for key 'kv_len_reduce' "
			   "(hint: set kv_len_reduce <value>)");
}

static void test_kv_bins(void **state)
{
	static const uint64_t def[] = { 0, 512, 1024, 2048, 4096, 8192, 16384 };
	struct pt_config cfg;
	char text[256];
	size_t off;

	parse_ok(&cfg, "step native:exe:s\n");
	assert_int_equal(cfg.nkv_bins, 7);
	assert_memory_equal(cfg.kv_bins, def, sizeof(def));
	pt_config__free(&cfg);

	parse_ok(&cfg, "step native:exe:s\nset kv_bins 0,100,1000\n");
	assert_int_equal(cfg.nkv_bins, 3);
	assert_int_equal(cfg.kv_bins[0], 0);
	assert_int_equal(cfg.kv_bins[1], 100);
	assert_int_equal(cfg.kv_bins[2], 1000);
	pt_config__free(&cfg);

	parse_ok(&cfg, "step native:exe:s\nset kv_bins 0\n");
	assert_int_equal(cfg.nkv_bins, 1);
	assert_int_equal(cfg.kv_bins[0], 0);
	pt_config__free(&cfg);

	parse_ok(&cfg, "step native:exe:s\nset kv_bins 0,9223372036854775807\n");
	assert_int_equal(cfg.nkv_bins, 2);
	assert_int_equal(cfg.kv_bins[1], 9223372036854775807ULL);
	pt_config__free(&cfg);

	/* 32 bins: the most */
	off = (size_t)snprintf(text, sizeof(text), "step native:exe:s\nset kv_bins 0");
	for (int i = 1; i < PT_MAX_KV_BINS; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, ",%d", i * 10);
	snprintf(text + off, sizeof(text) - off, "\n");
	parse_ok(&cfg, text);
	assert_int_equal(cfg.nkv_bins, PT_MAX_KV_BINS);
	assert_int_equal(cfg.kv_bins[31], 310);
	pt_config__free(&cfg);
}

/* The value, as written, where the last element is the bad one. */
static void test_err_kv_bins(void **state)
{
	/* clang-format off */
	static const char *const bad[] = {
		"0,512,512",  /* not increasing */
		"0,512,256",  /* decreasing */
		"0,abc",      /* not a number */
		"0,-5",       /* negative */
		"0,0x10",     /* decimal only */
		"0,512,",     /* empty last element */
		"0,9223372036854775808", /* beyond UINT64_MAX / 2 */
		"1",          /* not starting at 0 */
	};
	/* clang-format on */
	char text[512], want[1024], v[256];
	size_t off;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "step native:exe:s\nset kv_bins %s\n", bad[i]);
		snprintf(want, sizeof(want),
			 "t.conf:2:13: error: bad value for kv_bins '%s' " KV_BINS_HINT, bad[i]);
		assert_parse_error(text, want);
	}
	/* 33 bins */
	off = (size_t)snprintf(v, sizeof(v), "0");
	for (int i = 1; i <= PT_MAX_KV_BINS; i++)
		off += (size_t)snprintf(v + off, sizeof(v) - off, ",%d", i);
	snprintf(text, sizeof(text), "step native:exe:s\nset kv_bins %s\n", v);
	snprintf(want, sizeof(want), "t.conf:2:13: error: bad value for kv_bins '%s' " KV_BINS_HINT,
		 v);
	assert_parse_error(text, want);
}

/*
 * Regression: a bad kv_bins value is quoted whole in the error, not cut
 * at the element that failed.
 */
static void test_err_kv_bins_quotes_whole_value(void **state)
{
	static const char *const bad[] = { "512,1024", "0,,512", "0,abc,2048", "0,512,100,4096" };
	char text[256], want[1024];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "step native:exe:s\nset kv_bins %s\n", bad[i]);
		snprintf(want, sizeof(want),
			 "t.conf:2:13: error: bad value for kv_bins '%s' " KV_BINS_HINT, bad[i]);
		assert_parse_error(text, want);
	}
}

static void test_err_count_without_step(void **state)
{
	static const char want[] = "t.conf:1:1: error: count tokens without a step line "
				   "(hint: tokens are counted per step: add 'step <probe>')";

	assert_parse_error("count tokens native:exe:f arg0\n", want);
	assert_parse_error("bucket a.b native:exe:f\ncount tokens native:exe:f arg0\n", want);
	assert_parse_error("# c\nlines py:m::f\n\ncount tokens py:m::f len(ret)\n", want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_only_defaults),
		cmocka_unit_test(test_bucket_only_no_step),
		cmocka_unit_test(test_full_file_roles_and_comments),
		cmocka_unit_test(test_step_modes),
		cmocka_unit_test(test_probe_forms),
		cmocka_unit_test(test_py_probe_forms),
		cmocka_unit_test(test_py_dotted),
		cmocka_unit_test(test_every_set_key),
		cmocka_unit_test(test_bucket_names),
		cmocka_unit_test(test_max_buckets),
		cmocka_unit_test(test_crlf_and_long_line_limit),
		cmocka_unit_test(test_err_keywords),
		cmocka_unit_test(test_err_step),
		cmocka_unit_test(test_err_probes),
		cmocka_unit_test(test_err_globs),
		cmocka_unit_test(test_err_buckets),
		cmocka_unit_test(test_err_too_many_buckets),
		cmocka_unit_test(test_err_set),
		cmocka_unit_test(test_err_set_values),
		cmocka_unit_test(test_err_nothing_to_profile),
		cmocka_unit_test(test_err_first_error_wins),
		cmocka_unit_test(test_err_nul_byte),
		cmocka_unit_test(test_long_token_is_cut),
		cmocka_unit_test(test_err_buffer_limits),
		cmocka_unit_test(test_load_fixture_valid),
		cmocka_unit_test(test_load_fixture_errors),
		cmocka_unit_test(test_load_missing_and_unreadable),
		cmocka_unit_test(test_free_is_safe),
		cmocka_unit_test(test_lines_directive),
		cmocka_unit_test(test_lines_shared_spec),
		cmocka_unit_test(test_err_lines),
		cmocka_unit_test(test_sample_hz),
		cmocka_unit_test(test_python_mode),
		cmocka_unit_test(test_step_values_any_order),
		cmocka_unit_test(test_count_tokens),
		cmocka_unit_test(test_err_count_tokens),
		cmocka_unit_test(test_err_tokens_twice),
		cmocka_unit_test(test_values_per_probe_limit),
		cmocka_unit_test(test_two_percentiles),
		cmocka_unit_test(test_two_percentiles_with_kv_len_reduce),
		cmocka_unit_test(test_err_value_columns),
		cmocka_unit_test(test_kv_len_reduce),
		cmocka_unit_test(test_kv_bins),
		cmocka_unit_test(test_err_kv_bins),
		cmocka_unit_test(test_err_kv_bins_quotes_whole_value),
		cmocka_unit_test(test_err_count_without_step),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
