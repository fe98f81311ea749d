// SPDX-License-Identifier: BSD-2-Clause
/*
 * report/mdtable: report.md's ranked tables, written to memory: the header
 * from the columns, the ranking (largest first, ties and unkeyed elements
 * in array order, elements the key refuses left out), the cut after max
 * rows and its line, and what an empty table writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "report/mdtable.h"
#include "util/util.h"

static const struct pt_mdtable_col cols[] = { { "name" }, { "ms", true } };

static void row(FILE *f, const cJSON *o, const void *arg)
{
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "ms");

	fprintf(f, "%s%s | ", arg ? (const char *)arg : "",
		cJSON_GetObjectItemCaseSensitive(o, "name")->valuestring);
	if (cJSON_IsNumber(ms))
		fprintf(f, "%g", ms->valuedouble);
	else
		fputs("-", f);
}

/* ms, largest first; no ms: last; "skip": no row */
static bool key(const cJSON *o, double *k)
{
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "ms");

	if (!strcmp(cJSON_GetObjectItemCaseSensitive(o, "name")->valuestring, "skip"))
		return false;
	*k = cJSON_IsNumber(ms) ? ms->valuedouble : -1e300;
	return true;
}

/* The table of the JSON array text as written, and its row count. */
static char *table(const struct pt_mdtable *t, const char *json, const void *arg, size_t *rows)
{
	cJSON *arr = json ? cJSON_Parse(json) : NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(pt_mdtable__write(f, t, arr, arg, rows), 0);
	fclose(f);
	cJSON_Delete(arr);
	return buf;
}

static const char five[] =
	"[{\"name\":\"a\",\"ms\":1},{\"name\":\"b\"},{\"name\":\"skip\",\"ms\":9},"
	"{\"name\":\"c\",\"ms\":3},{\"name\":\"d\",\"ms\":1},{\"name\":\"e\"}]";

static void test_ranked(void **state)
{
	struct pt_mdtable t = { .cols = cols, .ncols = 2, .row = row, .key = key };
	size_t n = 0;
	char *md;

	(void)state;
	md = table(&t, five, NULL, &n);
	assert_int_equal(n, 5);
	assert_string_equal(md, "| name | ms |\n|---|---:|\n"
				"| c | 3 |\n| a | 1 |\n| d | 1 |\n| b | - |\n| e | - |\n\n");
	free(md);
	/* cut: the line says how many were left out, in the plural or not */
	t.max = 3;
	t.more = "%zu more row%s.\n\n";
	md = table(&t, five, NULL, &n);
	assert_string_equal(md, "| name | ms |\n|---|---:|\n"
				"| c | 3 |\n| a | 1 |\n| d | 1 |\n\n2 more rows.\n\n");
	free(md);
	t.max = 4;
	md = table(&t, five, NULL, &n);
	assert_non_null(strstr(md, "| b | - |\n\n1 more row.\n\n"));
	free(md);
	t.max = 5; /* all fit: no line */
	md = table(&t, five, NULL, &n);
	assert_null(strstr(md, "more"));
	free(md);
}

static void test_array_order(void **state)
{
	const struct pt_mdtable t = {
		.cols = cols, .ncols = 2, .row = row, .max = 2, .intro = "intro\n\n"
	};
	size_t n = 0;
	char *md;

	(void)state;
	/* no key: every element, "skip" too, in array order; arg reaches rows */
	md = table(&t, five, ">", &n);
	assert_int_equal(n, 6);
	assert_string_equal(md, "intro\n\n| name | ms |\n|---|---:|\n| >a | 1 |\n| >b | - |\n\n");
	free(md);
}

static void test_empty(void **state)
{
	struct pt_mdtable t = {
		.cols = cols, .ncols = 2, .row = row, .key = key, .intro = "intro\n\n"
	};
	size_t n = 7;
	char *md;

	(void)state;
	md = table(&t, NULL, NULL, &n);
	assert_int_equal(n, 0);
	assert_string_equal(md, "");
	free(md);
	/* rows there, all refused by the key: as empty */
	t.none = "none\n\n";
	md = table(&t, "[{\"name\":\"skip\"}]", NULL, &n);
	assert_int_equal(n, 0);
	assert_string_equal(md, "none\n\n");
	free(md);
	t.head_alone = true;
	md = table(&t, "[]", NULL, NULL);
	assert_string_equal(md, "intro\n\n| name | ms |\n|---|---:|\n\n");
	free(md);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranked),
		cmocka_unit_test(test_array_order),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests_name("mdtable", tests, NULL, NULL);
}
