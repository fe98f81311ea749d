// SPDX-License-Identifier: BSD-2-Clause
/*
 * proftrace diff on hand-made summaries: which rows, changes, the noise
 * threshold (runs' std when both sides have runs, else the steps'), and
 * --fail-if conditions.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/diff.h"

static const char *A =
	"{\"stats\": {\"steps\": 100, \"mean_ms\": 10, \"std_ms\": 1, \"p50_ms\": 10,"
	" \"p90_ms\": 11, \"p99_ms\": 13, \"max_ms\": 14, \"steps_per_s\": 90},"
	" \"buckets\": [{\"name\": \"fwd\", \"calls\": 100, \"avg_ms_per_step\": 6,"
	" \"share\": 0.6, \"p50_ms\": 6, \"p90_ms\": 6.1, \"p99_ms\": 6.2},"
	" {\"name\": \"gone\", \"calls\": 100, \"avg_ms_per_step\": 1, \"share\": 0.1}],"
	" \"functions\": [{\"symbol\": \"f\", \"object\": \"/x/a\", \"calls\": 100,"
	" \"mean_ms\": 2, \"p50_ms\": 2, \"p90_ms\": 2, \"p99_ms\": 2}],"
	" \"gpu\": {\"source\": \"none\"}}";
static const char *B =
	"{\"stats\": {\"steps\": 100, \"mean_ms\": 11, \"std_ms\": 1, \"p50_ms\": 10.1,"
	" \"p90_ms\": 11, \"p99_ms\": 13, \"max_ms\": 14, \"steps_per_s\": 85},"
	" \"buckets\": [{\"name\": \"fwd\", \"calls\": 100, \"avg_ms_per_step\": 7,"
	" \"share\": 0.64, \"p50_ms\": 7, \"p90_ms\": 7.1, \"p99_ms\": 7.2},"
	" {\"name\": \"new\", \"calls\": 5, \"avg_ms_per_step\": 0.5, \"share\": 0.05}],"
	" \"functions\": [{\"symbol\": \"g\", \"object\": \"/x/a\", \"calls\": 3,"
	" \"mean_ms\": 1}, {\"symbol\": \"f\", \"object\": \"/x/a\", \"calls\": 100,"
	" \"mean_ms\": 2, \"p50_ms\": 2, \"p90_ms\": 2, \"p99_ms\": 2}],"
	" \"gpu\": {\"source\": \"none\"}}";

static const cJSON *row(const cJSON *d, const char *id)
{
	const cJSON *r;

	cJSON_ArrayForEach(
		r, cJSON_GetObjectItem(
			   d, "rows")) if (!strcmp(cJSON_GetObjectItem(r, "id")->valuestring,
						   id)) return r;
	fail_msg("no row %s", id);
	return NULL;
}

static double num(const cJSON *r, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(r, k);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_rows_and_steps_noise(void **state)
{
	cJSON *a = cJSON_Parse(A), *b = cJSON_Parse(B), *d;
	const cJSON *r;
	char err[256];

	d = pt_diff__build(a, b);
	assert_non_null(d);
	assert_string_equal(cJSON_GetObjectItem(d, "noise")->valuestring, "steps");
	r = row(d, "step.mean");
	assert_true(fabs(num(r, "change") - 1) < 1e-9);
	assert_true(fabs(num(r, "change_rel") - 0.1) < 1e-9);
	/* 2 * sqrt(1/100 + 1/100) */
	assert_true(fabs(num(r, "noise") - 2 * sqrt(0.02)) < 1e-9);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "beyond_noise")));
	/* the median's standard error is 1.2533 sigma/sqrt(n): 0.1 is noise */
	r = row(d, "step.p50");
	assert_true(fabs(num(r, "noise") - 2 * 1.2533 * sqrt(0.02)) < 1e-9);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r, "beyond_noise")));
	/* no threshold for the max */
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(row(d, "step.max"), "beyond_noise")));
	/* rows from either side; a missing side is null */
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(row(d, "bucket.gone"), "b")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(row(d, "bucket.new"), "a")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(row(d, "function.g"), "a")));
	r = row(d, "bucket.fwd");
	assert_true(fabs(num(r, "change") - 1) < 1e-9);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "beyond_noise")));
	assert_string_equal(cJSON_GetObjectItem(r, "noise_from")->valuestring, "calls");
	/* conditions */
	assert_int_equal(pt_diff__check(d, "step.mean > +5%", err, sizeof(err)), 1);
	assert_int_equal(pt_diff__check(d, "step.mean > +15%", err, sizeof(err)), 0);
	assert_int_equal(pt_diff__check(d, "step.mean >= 1", err, sizeof(err)), 1);
	assert_int_equal(pt_diff__check(d, "step.p50 > +0.5% significant", err, sizeof(err)), 0);
	assert_int_equal(pt_diff__check(d, "step.p50 > +0.5%", err, sizeof(err)), 1);
	assert_int_equal(pt_diff__check(d, "step.steps_per_s < -5%", err, sizeof(err)), 1);
	assert_int_equal(pt_diff__check(d, "bucket.fwd <= 0.5ms", err, sizeof(err)), 0);
	/* a figure missing on one side never holds */
	assert_int_equal(pt_diff__check(d, "bucket.new > -100%", err, sizeof(err)), 0);
	assert_int_equal(pt_diff__check(d, "step.p50 = 5", err, sizeof(err)), -EINVAL);
	assert_int_equal(pt_diff__check(d, "step.p50 > five", err, sizeof(err)), -EINVAL);
	assert_int_equal(pt_diff__check(d, "step.p50 > 5 maybe", err, sizeof(err)), -EINVAL);
	assert_int_equal(pt_diff__check(d, "nope > 5", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no figure 'nope'"));
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(d);
}

static void test_runs_noise(void **state)
{
	cJSON *a = cJSON_Parse(A), *b = cJSON_Parse(B), *d;
	const char *runs = "{\"runs\": 4, \"mean_ms\": {\"mean\": 10, \"std\": 2},"
			   " \"buckets\": [{\"name\": \"fwd\", \"avg_ms_per_step\": "
			   "{\"mean\": 6, \"std\": 2}}]}";
	const cJSON *r;

	cJSON_AddItemToObject(a, "runs_aggregate", cJSON_Parse(runs));
	cJSON_AddItemToObject(b, "runs_aggregate", cJSON_Parse(runs));
	d = pt_diff__build(a, b);
	assert_string_equal(cJSON_GetObjectItem(d, "noise")->valuestring, "runs");
	/* 2 * sqrt(4/4 + 4/4): the change of 1 ms is within run-to-run noise */
	r = row(d, "step.mean");
	assert_true(fabs(num(r, "noise") - 2 * sqrt(2)) < 1e-9);
	assert_string_equal(cJSON_GetObjectItem(r, "noise_from")->valuestring, "runs");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r, "beyond_noise")));
	r = row(d, "bucket.fwd");
	assert_string_equal(cJSON_GetObjectItem(r, "noise_from")->valuestring, "runs");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r, "beyond_noise")));
	/* a figure runs do not have falls back to the steps */
	r = row(d, "step.p50");
	assert_string_equal(cJSON_GetObjectItem(r, "noise_from")->valuestring, "steps");
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_int_equal(pt_diff__markdown(f, d, "a.json", "b.json"), 0);
		fclose(f);
		assert_non_null(strstr(buf, "| `step.mean` | ms | 10 | 11 | +1 | +10.00% |"));
		assert_non_null(strstr(buf, "runs' standard deviations"));
		free(buf);
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(d);
}

/* A gate cannot trust a run that counted no step though it has a step
 * probe, or lost records or samples: each reason is said. */
static void test_unfit(void **state)
{
	cJSON *ok = cJSON_Parse("{\"meta\": {\"step_probe\": \"py:m.E.step\"},"
				" \"stats\": {\"steps\": 10}, \"health\": {\"dropped_events\": 0,"
				" \"lost_calls\": 0}}");
	cJSON *nostep = cJSON_Parse("{\"meta\": {}, \"stats\": {\"steps\": 0}}");
	cJSON *zero = cJSON_Parse("{\"meta\": {\"step_probe\": \"py:m.E.stepp\"},"
				  " \"stats\": {\"steps\": 0}}");
	cJSON *lossy =
		cJSON_Parse("{\"stats\": {\"steps\": 5}, \"health\": {\"dropped_events\": 12,"
			    " \"lost_calls\": 1}, \"meta\": {\"sampling\": {\"lost_samples\": 3}},"
			    " \"gpu\": {\"records\": {\"ring_dropped\": 0, \"lost\": 2}}}");
	char why[512];

	(void)state;
	assert_int_equal(pt_diff__unfit(ok, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* no step line: 0 steps is what it counts */
	assert_int_equal(pt_diff__unfit(nostep, why, sizeof(why)), 0);
	assert_int_equal(pt_diff__unfit(zero, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "counted 0 steps though it has a step probe (py:m.E.stepp"));
	assert_int_equal(pt_diff__unfit(lossy, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "12 records dropped (ring buffer full"));
	assert_non_null(strstr(why, "; 1 call lost"));
	assert_non_null(strstr(why, "; 3 stack samples lost"));
	assert_non_null(strstr(why, "; 2 GPU records lost"));
	assert_null(strstr(why, "dropped (the shim")); /* 0 is not a loss */
	/* a short buffer is cut, not overrun */
	assert_int_equal(pt_diff__unfit(lossy, why, 10), 1);
	assert_int_equal(strlen(why), 9);
	cJSON_Delete(ok);
	cJSON_Delete(nostep);
	cJSON_Delete(zero);
	cJSON_Delete(lossy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_and_steps_noise),
		cmocka_unit_test(test_runs_noise),
		cmocka_unit_test(test_unfit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
