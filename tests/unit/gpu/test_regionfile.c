// SPDX-License-Identifier: BSD-2-Clause
/* Readers of intra-kernel region traces: raw buffers with their tag
 * tables, Chrome-trace JSON; overflow; malformed input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/regionfile.h"

/* A raw buffer: count, then n events of 4 int64. */
static size_t raw(unsigned char *buf, int64_t count, const int64_t (*ev)[4], size_t n)
{
	size_t off = 0;

	for (int b = 0; b < 8; b++)
		buf[off++] = (unsigned char)((uint64_t)count >> (8 * b));
	for (size_t i = 0; i < n; i++)
		for (int f = 0; f < 4; f++)
			for (int b = 0; b < 8; b++)
				buf[off++] = (unsigned char)((uint64_t)ev[i][f] >> (8 * b));
	return off;
}

static const int64_t EV[3][4] = {
	{ 1000, 50, 0, 7 },
	{ 1060, 20, 1, 7 },
	{ 1010, 30, 2, -1 },
};

static void test_raw(void **state)
{
	unsigned char buf[8 + 32 * 3];
	const char *tags = "{\"tags\": [\"load\", \"compute\", null], \"kernel\": \"gemm\", "
			   "\"launch\": 4}";
	struct pt_region_set s;
	char err[256];
	size_t len = raw(buf, 3, EV, 3);

	pt_regionfile__init(&s);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, tags, strlen(tags), "a.bin", err,
						 sizeof(err)),
			 0);
	assert_int_equal(s.nl, 1);
	assert_string_equal(s.l[0].kernel, "gemm");
	assert_int_equal(s.l[0].launch, 4);
	assert_int_equal(s.l[0].nev, 3);
	assert_false(s.l[0].overflow);
	assert_string_equal(s.l[0].clock, PT_REGIONS_GPU_CLOCK);
	assert_string_equal(s.tags[s.l[0].ev[0].tag], "load");
	assert_string_equal(s.tags[s.l[0].ev[1].tag], "compute");
	assert_string_equal(s.tags[s.l[0].ev[2].tag], "tag 2"); /* null in the table */
	assert_int_equal(s.l[0].ev[2].tid, -1);
	assert_int_equal(s.l[0].ev[1].start_ns, 1060);
	/* a second file with the same names shares the tag indices */
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, "[\"compute\", \"load\"]", 19,
						 "b.bin", err, sizeof(err)),
			 0);
	assert_int_equal(s.nl, 2);
	assert_null(s.l[1].kernel);
	assert_int_equal(s.l[1].launch, -1);
	assert_int_equal(s.l[1].ev[0].tag, s.l[0].ev[1].tag);
	assert_int_equal(s.ntags, 3);
	/* no tag table: tags by number */
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, NULL, 0, "c.bin", err, sizeof(err)),
			 0);
	assert_string_equal(s.tags[s.l[2].ev[0].tag], "tag 0");
	pt_regionfile__free(&s);
	pt_regionfile__free(&s);
}

static void test_raw_overflow(void **state)
{
	unsigned char buf[8 + 32 * 3];
	struct pt_region_set s;
	char err[256];
	size_t len;

	pt_regionfile__init(&s);
	/* the profiler counted 10, its buffer held 3 */
	len = raw(buf, 10, EV, 3);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, NULL, 0, "o.bin", err, sizeof(err)),
			 0);
	assert_true(s.l[0].overflow);
	assert_int_equal(s.l[0].recorded, 10);
	assert_int_equal(s.l[0].nev, 3);
	/* capacity 2 in the table: the third is past the buffer */
	len = raw(buf, 3, EV, 3);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, "{\"tags\": [], \"capacity\": 2}",
						 27, "p.bin", err, sizeof(err)),
			 0);
	assert_true(s.l[1].overflow);
	assert_int_equal(s.l[1].nev, 2);
	/* count below what the file holds: the rest is unused buffer */
	len = raw(buf, 1, EV, 3);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, NULL, 0, "q.bin", err, sizeof(err)),
			 0);
	assert_false(s.l[2].overflow);
	assert_int_equal(s.l[2].nev, 1);
	/* a truncated last event is not read */
	len = raw(buf, 3, EV, 3) - 5;
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, NULL, 0, "r.bin", err, sizeof(err)),
			 0);
	assert_true(s.l[3].overflow);
	assert_int_equal(s.l[3].nev, 2);
	pt_regionfile__free(&s);
}

static void test_raw_malformed(void **state)
{
	/* clang-format off */
	const int64_t bad[4][4] = {
		{ -5, 10, 0, 0 },            /* negative start */
		{ 10, -1, 0, 0 },            /* negative duration */
		{ INT64_MAX - 3, 10, 0, 0 }, /* end overflows */
		{ 10, 10, -2, 0 },           /* negative tag */
	};
	/* clang-format on */
	unsigned char buf[8 + 32 * 4];
	struct pt_region_set s;
	char err[256];
	size_t len = raw(buf, 4, bad, 4);

	pt_regionfile__init(&s);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, NULL, 0, "m.bin", err, sizeof(err)),
			 0);
	assert_int_equal(s.l[0].nev, 0);
	assert_int_equal(s.l[0].invalid, 4);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, 7, NULL, 0, "s.bin", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "no event count"));
	len = raw(buf, -1, bad, 0);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, NULL, 0, "n.bin", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "negative event count"));
	len = raw(buf, 1, EV, 1);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, "{", 1, "t.bin", err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, "[1]", 3, "t.bin", err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, "{\"tags\": [], \"launch\": -1}", 25,
						 "t.bin", err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, "{\"tags\": [], \"kernel\": 5}", 24,
						 "t.bin", err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(pt_regionfile__read_raw(&s, buf, len, "{\"tags\": 3}", 11, "t.bin", err,
						 sizeof(err)),
			 -EINVAL);
	assert_int_equal(s.nl, 1); /* failures add nothing */
	pt_regionfile__free(&s);
}

static const char CHROME[] =
	"{\"traceEvents\": ["
	"{\"ph\": \"X\", \"pid\": 1, \"tid\": 3, \"name\": \"load\", \"ts\": 10.5, \"dur\": 2.25},"
	"{\"ph\": \"X\", \"pid\": 1, \"tid\": 4, \"name\": \"store\", \"ts\": 13, \"dur\": 1},"
	"{\"ph\": \"X\", \"pid\": 2, \"tid\": 3, \"name\": \"load\", \"ts\": 30, \"dur\": 1},"
	"{\"ph\": \"X\", \"pid\": 9, \"tid\": 0, \"name\": \"load\", \"ts\": 50, \"dur\": 1,"
	" \"args\": {\"kernel\": \"attn\", \"launch\": 7}},"
	"{\"ph\": \"X\", \"pid\": 9, \"tid\": 0, \"name\": \"load\", \"ts\": -1, \"dur\": 1},"
	"{\"ph\": \"i\", \"pid\": 1, \"tid\": 3, \"name\": \"mark\", \"ts\": 11},"
	"{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": \"gemm\"}}"
	"], \"otherData\": {\"overflow\": true}}";

static void test_chrome(void **state)
{
	struct pt_region_set s;
	char err[256];

	pt_regionfile__init(&s);
	assert_true(pt_regionfile__is_tag_table("[\"a\"]", 5));
	assert_true(pt_regionfile__is_tag_table("{\"tags\": []}", 12));
	assert_false(pt_regionfile__is_tag_table(CHROME, strlen(CHROME)));
	assert_int_equal(
		pt_regionfile__read_chrome(&s, CHROME, strlen(CHROME), "x.json", err, sizeof(err)),
		0);
	/* pid 1 (gemm, by process_name), pid 2 (unnamed), attn launch 7, pid 9 */
	assert_int_equal(s.nl, 4);
	assert_string_equal(s.l[0].kernel, "gemm");
	assert_int_equal(s.l[0].launch, -1);
	assert_int_equal(s.l[0].nev, 2);
	assert_int_equal(s.l[0].ev[0].start_ns, 10500);
	assert_int_equal(s.l[0].ev[0].dur_ns, 2250);
	assert_int_equal(s.l[0].ev[1].tid, 4);
	assert_true(s.l[0].overflow);
	assert_string_equal(s.l[0].clock, "x.json");
	assert_null(s.l[1].kernel);
	assert_string_equal(s.l[2].kernel, "attn");
	assert_int_equal(s.l[2].launch, 7);
	assert_null(s.l[3].kernel);
	assert_int_equal(s.l[3].nev, 0);
	assert_int_equal(s.l[3].invalid, 1); /* negative ts */
	assert_int_equal(s.ntags, 2);
	pt_regionfile__free(&s);
}

static void test_chrome_malformed(void **state)
{
	/* clang-format off */
	static const char *const bad[] = {
		"", "{", "[]", "{\"traceEvents\": 5}", "{\"traceEvents\": []}",
		"{\"traceEvents\": [{\"ph\": \"M\"}]}",
		"{\"traceEvents\": [], \"otherData\": {\"tool\": \"proftrace\"}}",
	};
	/* clang-format on */
	struct pt_region_set s;
	char err[256];

	pt_regionfile__init(&s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(pt_regionfile__read_chrome(&s, bad[i], strlen(bad[i]), "b.json",
							    err, sizeof(err)),
				 -EINVAL);
		assert_true(err[0]);
	}
	assert_int_equal(s.nl, 0);
	pt_regionfile__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw),
		cmocka_unit_test(test_raw_overflow),
		cmocka_unit_test(test_raw_malformed),
		cmocka_unit_test(test_chrome),
		cmocka_unit_test(test_chrome_malformed),
	};

	return cmocka_run_group_tests_name("regions", tests, NULL, NULL);
}
