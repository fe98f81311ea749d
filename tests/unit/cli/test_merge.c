// SPDX-License-Identifier: BSD-2-Clause
/*
 * proftrace merge on hand-made summaries: a run of one process and a run
 * of two (processes[]) from two hosts; rows by rank, pooled moments and
 * buckets, the skew across hosts.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/merge.h"

#define PROC(pid, rank, steps, mean, std, p50, fwd)                                                \
	"{\"meta\": {\"pid\": " #pid ", \"comm\": \"w\", \"rank\": " #rank ", \"host\": \"h\"},"   \
	" \"stats\": {\"steps\": " #steps ", \"mean_ms\": " #mean ", \"std_ms\": " #std            \
	", \"p50_ms\": " #p50 ", \"p99_ms\": " #p50 ", \"max_ms\": " #p50 ", \"time_ms\": 0},"     \
	" \"buckets\": [{\"name\": \"fwd\", \"total_ms\": " #fwd "}]}"

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_merge(void **state)
{
	cJSON *one = cJSON_Parse(PROC(10, 2, 100, 10, 1, 10, 500));
	cJSON *two = cJSON_Parse("{\"meta\": {\"pid\": 1, \"host\": \"b\"}, \"stats\": {},"
				 " \"processes\": [" PROC(20, 1, 100, 12, 2, 12, 700) "," PROC(
					 21, 0, 200, 11, 0, 11, 1000) "]}");
	const cJSON *docs[2];
	const char *names[] = { "node-a", NULL };
	cJSON *m, *procs, *st, *sk, *b;

	assert_non_null(one);
	assert_non_null(two);
	docs[0] = one;
	docs[1] = two;
	m = pt_merge__build(docs, names, 2);
	assert_non_null(m);
	procs = cJSON_GetObjectItem(m, "processes");
	assert_int_equal(cJSON_GetArraySize(procs), 3);
	/* by rank: 0 and 1 from the second run, 2 from node-a */
	assert_true(num(cJSON_GetArrayItem(procs, 0), "pid") == 21);
	assert_true(num(cJSON_GetArrayItem(procs, 1), "pid") == 20);
	assert_true(num(cJSON_GetArrayItem(procs, 2), "pid") == 10);
	/* a run's host: its meta.host unless named */
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(procs, 0), "host")->valuestring,
			    "b");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(procs, 2), "host")->valuestring,
			    "node-a");
	assert_true(num(cJSON_GetObjectItem(m, "merged"), "hosts") == 2);
	assert_true(num(cJSON_GetObjectItem(m, "merged"), "processes") == 3);
	/* pooled moments: mean (1000 + 1200 + 2200) / 400 = 11; E[x^2] =
	 * (100 * 101 + 100 * 148 + 200 * 121) / 400 = 122.75 */
	st = cJSON_GetObjectItem(m, "stats");
	assert_true(num(st, "steps") == 400);
	assert_true(fabs(num(st, "mean_ms") - 11) < 1e-9);
	assert_true(fabs(num(st, "std_ms") - sqrt(122.75 - 121)) < 1e-6);
	assert_true(num(st, "p50_ms_min") == 10 && num(st, "p50_ms_max") == 12);
	b = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "buckets"), 0);
	assert_true(num(b, "total_ms") == 2200);
	assert_true(fabs(num(b, "avg_ms_per_step") - 5.5) < 1e-9);
	assert_true(fabs(num(b, "share") - 0.5) < 1e-9);
	/* skew: slowest p50 12 (pid 20), fastest 10 (pid 10, node-a) */
	sk = cJSON_GetObjectItem(m, "skew");
	assert_true(num(cJSON_GetObjectItem(sk, "slowest"), "pid") == 20);
	assert_true(num(cJSON_GetObjectItem(sk, "fastest"), "pid") == 10);
	assert_true(fabs(num(sk, "spread_ms") - 2) < 1e-9);
	assert_true(fabs(num(sk, "spread_rel") - 0.2) < 1e-9);
	/* per host: node-a 10, b (1200 + 2200) / 300 */
	assert_true(fabs(num(sk, "host_spread_ms") - (3400.0 / 300 - 10)) < 1e-6);
	assert_null(pt_merge__build(docs, names, 0));
	cJSON_Delete(m);
	cJSON_Delete(one);
	cJSON_Delete(two);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
