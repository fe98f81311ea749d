// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_pep768__parse: 3.14's _Py_DebugOffsets as the target's memory gives
 * them, then broken: no cookie, short, another version, a free-threaded
 * build, every offset pushed past its struct, absurd sizes. Each one must
 * be refused before a word of it is used as an address.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "python/pep768.h"

/* the words pep768.c reads, at their 3.14.7 indices, with the values a
 * 3.14.7 x86-64 build has (sizes and offsets of its structs) */
static void good(uint64_t *w)
{
	memset(w, 0, PT_PEP768_OFFSETS_LEN);
	memcpy(w, "xdebugpy", 8);
	w[1] = 0x030e07f0; /* 3.14.7 final */
	w[3] = 0x1000;	   /* _PyRuntimeState size (smaller than real: bounds only) */
	w[4] = 0x18;	   /* _finalizing */
	w[5] = 0x30;	   /* interpreters.head */
	w[6] = 0x8000;	   /* PyInterpreterState size */
	w[10] = 0x68;	   /* threads.main */
	w[22] = 0x1400;	   /* PyThreadState size */
	w[89] = 0x18;	   /* eval_breaker */
	w[90] = 0x1000;	   /* remote_debugger_support */
	w[91] = 0x7f00;	   /* config.remote_debug */
	w[92] = 0;	   /* debugger_pending_call */
	w[93] = 4;	   /* debugger_script_path */
	w[94] = 512;	   /* MAX_SCRIPT_PATH_SIZE */
}

static int parse(const uint64_t *w, size_t len, struct pt_pep768 *o, char *err)
{
	return pt_pep768__parse(w, len, o, err, 256);
}

static void test_good(void **state)
{
	uint64_t w[PT_PEP768_OFFSETS_LEN / 8];
	struct pt_pep768 o;
	char err[256] = "";

	(void)state;
	good(w);
	assert_int_equal(parse(w, sizeof(w), &o, err), 0);
	assert_int_equal(o.hexversion, 0x030e07f0);
	assert_int_equal(o.interpreters_head, 0x30);
	assert_int_equal(o.finalizing, 0x18);
	assert_int_equal(o.threads_main, 0x68);
	assert_int_equal(o.enabled, 0x7f00);
	assert_int_equal(o.eval_breaker, 0x18);
	assert_int_equal(o.support, 0x1000);
	assert_int_equal(o.pending, 0);
	assert_int_equal(o.path, 4);
	assert_int_equal(o.path_size, 512);
}

static void test_refused(void **state)
{
	/* word index, value that must be refused, errno */
	static const struct {
		int word;
		uint64_t v;
		int e;
	} bad[] = {
		{ 1, 0x030d00f0, -ENOTSUP }, /* 3.13 */
		{ 1, 0x030f00a1, -ENOTSUP }, /* 3.15: not known */
		{ 1, 0x020e0000, -ENOTSUP },
		{ 2, 1, -ENOTSUP },   /* free-threaded */
		{ 3, 0x20, -EINVAL }, /* runtime smaller than its fields */
		{ 4, 0xffffffffffffff00ull, -EINVAL },
		{ 5, 0x1000, -EINVAL },
		{ 10, 0x8000, -EINVAL },
		{ 91, 0x7ffd, -EINVAL }, /* an int past the struct */
		{ 89, 0x13f9, -EINVAL },
		{ 90, 0x1300, -EINVAL }, /* path runs past the thread state */
		{ 92, 0x3fd, -EINVAL },
		{ 94, 0, -EINVAL },
		{ 94, 1u << 20, -EINVAL },
		{ 94, 0xffffffffffffffffull, -EINVAL },
		{ 93, 0xfffffffffffffff0ull, -EINVAL }, /* wraps */
		{ 22, 1u << 30, -EINVAL },		/* absurd sizes */
		{ 6, 1ull << 40, -EINVAL },
	};
	uint64_t w[PT_PEP768_OFFSETS_LEN / 8];
	struct pt_pep768 o;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		good(w);
		w[bad[i].word] = bad[i].v;
		err[0] = 0;
		assert_int_equal(parse(w, sizeof(w), &o, err), bad[i].e);
		assert_true(err[0]);
	}
	good(w);
	memcpy(w, "xdebugpz", 8);
	assert_int_equal(parse(w, sizeof(w), &o, err), -EINVAL);
	good(w);
	assert_int_equal(parse(w, sizeof(w) - 8, &o, err), -EINVAL);
	assert_int_equal(parse(w, 0, &o, err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
