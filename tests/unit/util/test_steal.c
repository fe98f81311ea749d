// SPDX-License-Identifier: BSD-2-Clause
/*
 * util/steal: the steal field of /proc/stat's first line, from fixtures
 * (a VM's, an old kernel's without it, malformed ones) and from this
 * machine.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/steal.h"

static int parse(const char *text, uint64_t *ticks)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int e;

	assert_non_null(f);
	e = pt_steal__parse(f, ticks);
	fclose(f);
	return e;
}

static void test_parse(void **state)
{
	uint64_t t = 7;

	(void)state;
	/* this VM's, a moment ago: 10808 ticks stolen */
	assert_int_equal(parse("cpu  1089012 26046 158490 1841722 17305 0 16557 10808 0 0\n"
			       "cpu0 544506 13023 79245 920861 8652 0 8278 5404 0 0\n",
			       &t),
			 0);
	assert_int_equal(t, 10808);
	assert_int_equal(parse("cpu 1 2 3 4 5 6 7 0\n", &t), 0);
	assert_int_equal(t, 0);
	/* 2.6.x before steal: seven fields */
	assert_int_equal(parse("cpu  1 2 3 4 5 6 7\n", &t), -ENODATA);
	assert_int_equal(parse("cpu  1 2 3 4\n", &t), -ENODATA);
	/* not a cpu line, too short, a sign, a letter, a number too large */
	assert_int_equal(parse("intr 1 2 3\n", &t), -EINVAL);
	assert_int_equal(parse("cpu0 1 2 3 4 5 6 7 8\n", &t), -EINVAL);
	assert_int_equal(parse("cpu  1 2 3\n", &t), -EINVAL);
	assert_int_equal(parse("cpu  1 2 3 4 5 6 7 -8\n", &t), -EINVAL);
	assert_int_equal(parse("cpu  1 2 3 4 5 6 7 x\n", &t), -EINVAL);
	assert_int_equal(parse("cpu  1 2 3 4 5 6 7 99999999999999999999999\n", &t), -EINVAL);
	assert_int_equal(parse("", &t), -EINVAL);
	assert_int_equal(t, 0); /* untouched by the failures */
}

static void test_now(void **state)
{
	uint64_t a = 0, b = 0;

	(void)state;
	assert_int_equal(pt_steal__now(&a), 0);
	assert_int_equal(pt_steal__now(&b), 0);
	assert_true(b >= a); /* it only grows */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_now),
	};

	return cmocka_run_group_tests_name("steal", tests, NULL, NULL);
}
