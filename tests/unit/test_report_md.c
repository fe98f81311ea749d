// SPDX-License-Identifier: BSD-2-Clause
/*
 * report.md from hand-written summaries (tests/fixtures/summary/): exact
 * lines, so a changed column or a lost warning shows up as a failure.
 * Fixture paths are relative to the repository root (where `make unit`
 * runs); PT_SRCDIR overrides it.
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
#include <cjson/cJSON.h>

#include "report.h"

static cJSON *load_fixture(const char *name)
{
	const char *dir = getenv("PT_SRCDIR");
	char path[4096], *buf;
	long len;
	FILE *f;
	cJSON *doc;

	snprintf(path, sizeof(path), "%s/tests/fixtures/summary/%s", dir ? dir : ".", name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s: %s (run from the repository root or set PT_SRCDIR)",
			 path, strerror(errno));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	buf = malloc(len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	doc = cJSON_Parse(buf);
	free(buf);
	if (!doc)
		fail_msg("%s is not valid JSON", path);
	return doc;
}

static char *render(const cJSON *doc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(pt_report_md__write(f, doc), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(buf);
	return buf;
}

/* Number of lines of text exactly equal to line. */
static int count_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;
	int hits = 0;

	while ((p = strstr(p, line))) {
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			hits++;
		p += n ? n : 1;
	}
	return hits;
}

#define assert_line(text, line)                                                                \
	do {                                                                                   \
		if (count_line(text, line) != 1)                                               \
			fail_msg("expected exactly one line\n  %s\nin report:\n%s", line, text); \
	} while (0)

#define assert_no_substr(text, s)                                                             \
	do {                                                                                  \
		if (strstr(text, s))                                                          \
			fail_msg("unexpected \"%s\" in report:\n%s", s, text);                \
	} while (0)

static const char dropped_warning[] =
	"**7 records were dropped: figures are incomplete; raise `set ringbuf_mb`**";

static void test_full_header_and_steps(void **state)
{
	cJSON *doc = load_fixture("full.json");
	char *md = render(doc);

	/* The title is the first line. */
	assert_int_equal(strncmp(md, "# proftrace report: llm\\_server (pid 4242)\n", 43), 0);
	assert_line(md, "exe `/opt/llm/bin/llm_server` · duration 10.000 s · start "
			"2023-11-14T22:13:20.123Z · targets `targets/llm.conf` · kernel "
			"6.1.0-18-amd64 · step `native:exe:engine_step` (mode call) · warmup 1 "
			"step · proftrace 0.1.0");
	assert_line(md, "## Steps");
	assert_line(md, "| steps | mean ms | std ms | min ms | p50 ms | p90 ms | p99 ms "
			"| max ms | steps/s |");
	assert_line(md, "| 2 | 7.500 | 2.500 | 5.000 | 5.012 | 9.980 | 10.000 | 10.000 | 0.200 |");
	assert_line(md, "Counted step time 15.000 ms; 1 warmup step skipped; 1 incomplete step "
			"not counted.");
	assert_no_substr(md, "No complete step");
	free(md);
	cJSON_Delete(doc);
}

static void test_full_buckets(void **state)
{
	cJSON *doc = load_fixture("full.json");
	char *md = render(doc);

	assert_line(md, "| bucket | domain | calls | avg ms/step | share | mean ms | p50 ms "
			"| p99 ms | max ms |");
	assert_line(md, "| engine.schedule | engine | 2 | 1.500 | 20.0% | 1.500 | 1.000 | 2.000 | "
			"2.000 |");
	assert_line(md, "| engine.forward | engine | 2 | 4.500 | 60.0% | 4.500 | 3.000 | 6.000 | "
			"6.000 |");
	assert_line(md, "| gpu.attn\\_kernel | gpu | 1 | 0.500 | 6.7% | 1.000 | 1.000 | 1.000 | "
			"1.000 |");
	/* No calls: per-call figures are unknown, not 0. */
	assert_line(md, "| engine.idle | engine | 0 | 0.000 | 0.0% | – | – | – | – |");
	assert_line(md, "| step.other | step | 2 | 1.500 | 20.0% | 1.500 | 1.000 | 2.000 | "
			"2.000 |");
	/* step.other comes last, after the configured buckets. */
	assert_true(strstr(md, "| step.other |") > strstr(md, "| engine.idle |"));
	assert_line(md, "Shares add up to 106.7%: buckets nest or overlap, and time inside "
			"several buckets counts in each of them.");
	free(md);
	cJSON_Delete(doc);
}

static void test_share_note_only_above_100(void **state)
{
	cJSON *doc = load_fixture("full.json");
	cJSON *buckets = cJSON_GetObjectItemCaseSensitive(doc, "buckets");
	char *md;

	/* Without the nested bucket the shares sum to exactly 100%. */
	cJSON_DeleteItemFromArray(buckets, 2);
	md = render(doc);
	assert_no_substr(md, "Shares add up");
	assert_no_substr(md, "attn");
	free(md);
	cJSON_Delete(doc);
}

static void test_full_functions(void **state)
{
	cJSON *doc = load_fixture("full.json");
	char *md = render(doc);

	assert_line(md, "| function | object | calls | total ms | mean ms | p50 ms | p90 ms "
			"| p99 ms | max ms | probe | attached |");
	assert_line(md, "| `engine_step` | `llm_server` | 3 | 15.001 | 5.000 | 5.000 | 10.000 | "
			"10.000 | 10.000 | emulated +4 | yes +0.01s |");
	assert_line(md, "| `sched_run` (`__sched_run`, `sched_run_v2`) | `libengine.so.1` | 3 | "
			"3.000 | 1.000 | 1.000 | 2.000 | 2.000 | 2.000 | nop5 | yes +1.50s |");
	assert_line(md, "| `engine_idle` | `llm_server` | 0 | 0.000 | – | – | – | – | – | "
			"single-step | no: uprobe attach failed: -EINVAL |");
	/* Unresolved: the probe text names the row; '|' must not split the cell
	 * and '*' must not start emphasis. */
	assert_line(md, "| `native:libcuda.so*:cuLaunch\\|Kernel` | – | 0 | 0.000 | – | – | – | – "
			"| – | – | no: no mapped object matches libcuda.so\\* |");
	assert_no_substr(md, "activation"); /* no Python rows */
	free(md);
	cJSON_Delete(doc);
}

/* Python rows: file:line, the shared frame probe, a non-exact timing is
 * said in the row and the header says why and what to do. */
static void test_python_rows(void **state)
{
	cJSON *doc = load_fixture("full.json");
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "meta");
	cJSON *fn = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "functions"), 0);
	cJSON *py = cJSON_CreateObject();
	char *md;

	cJSON_AddStringToObject(py, "version", "3.12.1");
	cJSON_AddStringToObject(py, "path", "/usr/lib/libpython3.12.so.1.0");
	cJSON_AddStringToObject(py, "mechanism", "evalframe");
	cJSON_AddFalseToObject(py, "perf_trampoline");
	cJSON_AddStringToObject(py, "timing", "c-entry-only");
	cJSON_AddStringToObject(py, "why", "the perf trampoline was not active");
	cJSON_AddStringToObject(py, "advice", "restart with PYTHONPERFSUPPORT=1");
	cJSON_AddNumberToObject(py, "qualname_from_co_name", 2);
	cJSON_AddStringToObject(py, "qualname_source_missing", "gen.py");
	cJSON_AddItemToObject(meta, "python", py);
	cJSON_AddStringToObject(fn, "kind", "python");
	cJSON_ReplaceItemInObject(fn, "object", cJSON_CreateString("/srv/engine.py"));
	cJSON_ReplaceItemInObject(fn, "symbol", cJSON_CreateString("Engine.step"));
	cJSON_AddNumberToObject(fn, "line", 42);
	cJSON_AddStringToObject(fn, "timing", "c-entry-only");
	md = render(doc);
	assert_line(md, "Python 3.12.1 (`/usr/lib/libpython3.12.so.1.0`) · mechanism evalframe · "
			"perf trampoline off · timing **c-entry-only**: the perf trampoline was "
			"not active. To fix: restart with PYTHONPERFSUPPORT=1.");
	assert_line(md, "> **Warning:** the source of 2 code objects could not be read (first: "
			"`gen.py`), so their class is unknown and only "
			"`py:<module>::<function>` probes can match them.");
	assert_line(md, "| `Engine.step` *(c-entry-only)* | `engine.py`:42 | 3 | 15.001 | 5.000 | "
			"5.000 | 10.000 | 10.000 | 10.000 | python frame | yes +0.01s |");
	assert_non_null(strstr(md, "one call per activation"));
	free(md);
	cJSON_Delete(doc);
}

static void test_full_health(void **state)
{
	cJSON *doc = load_fixture("full.json");
	char *md = render(doc);

	assert_line(md, "## Health");
	assert_line(md, "| events | dropped | depth overflow | unwound | orphan returns "
			"| lost calls | incomplete steps | probes attached |");
	assert_line(md, "| 1234 | 7 | 2 | 3 | 4 | 5 | 1 | 2/4 |");
	/* Loud at the top and again in Health. */
	assert_int_equal(count_line(md, dropped_warning), 2);
	assert_true(strstr(md, dropped_warning) < strstr(md, "## Steps"));
	assert_true(strstr(strstr(md, "## Health"), dropped_warning) != NULL);
	assert_line(md, "Unattached probes:");
	assert_line(md, "- `native:exe:engine_idle` (`engine_idle` in `llm_server`): uprobe attach "
			"failed: -EINVAL");
	assert_line(md, "- `native:libcuda.so*:cuLaunch\\|Kernel`: no mapped object matches "
			"libcuda.so\\*");
	assert_no_substr(md, "All probes attached.");
	free(md);
	cJSON_Delete(doc);
}

static void test_no_dropped_no_warning(void **state)
{
	cJSON *doc = load_fixture("full.json");
	cJSON *h = cJSON_GetObjectItemCaseSensitive(doc, "health");
	char *md;

	cJSON_ReplaceItemInObjectCaseSensitive(h, "dropped_events", cJSON_CreateNumber(0));
	md = render(doc);
	assert_no_substr(md, "were dropped");
	assert_line(md, "| 1234 | 0 | 2 | 3 | 4 | 5 | 1 | 2/4 |");
	free(md);
	cJSON_Delete(doc);
}

static void test_zero_steps(void **state)
{
	cJSON *doc = load_fixture("zero_steps.json");
	char *md = render(doc);

	assert_line(md, "No complete step was seen: steps, buckets and step.other have no figures. "
			"Check the step probe `native:exe:do_step` (mode iteration): did it attach "
			"(see Health), and did the target run a step during the 2.500 s window? 1 "
			"step started but did not complete.");
	assert_line(md, "Buckets are timed inside counted steps only, and none was counted.");
	/* No table of dashes pretending to be a measurement. */
	assert_no_substr(md, "| steps |");
	assert_no_substr(md, "| bucket |");
	assert_no_substr(md, "Counted step time");
	assert_line(md, "| `do_step` | `victim` | 0 | 0.000 | – | – | – | – | – | emulated | yes "
			"+0.00s |");
	assert_line(md, "| 1 | 0 | 0 | 0 | 0 | 0 | 1 | 1/1 |");
	assert_line(md, "All probes attached.");
	assert_no_substr(md, "were dropped");
	free(md);
	cJSON_Delete(doc);
}

static void test_zero_steps_without_step_probe(void **state)
{
	cJSON *doc = load_fixture("zero_steps.json");
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "meta");
	char *md;

	cJSON_ReplaceItemInObjectCaseSensitive(meta, "step_probe", cJSON_CreateNull());
	md = render(doc);
	assert_line(md, "No complete step was seen: there is no step probe (no `step` line in the "
			"targets file), so only per-function figures follow.");
	assert_true(strstr(md, " · step none · warmup 0 steps · ") != NULL);
	free(md);
	cJSON_Delete(doc);
}

static void test_exact_start_time_from_raw(void **state)
{
	cJSON *doc = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(doc, "meta");
	char *md;

	/* As a double this would round up to the next second; the builder
	 * writes it as raw text and the renderer must read it exactly. */
	cJSON_AddRawToObject(meta, "start_unix_ns", "1700000000999999999");
	md = render(doc);
	assert_true(strstr(md, " · start 2023-11-14T22:13:20.999Z · ") != NULL);
	free(md);
	cJSON_Delete(doc);
}

static void test_missing_keys(void **state)
{
	cJSON *doc = cJSON_CreateObject();
	char *md = render(doc);

	assert_line(md, "# proftrace report: – (pid –)");
	assert_line(md, "exe – · duration – s · start – · targets – · kernel – · step none · "
			"warmup – · – –");
	/* Unknown step count is not zero steps: the table stays, with dashes. */
	assert_line(md, "| – | – | – | – | – | – | – | – | – |");
	assert_line(md, "Counted step time – ms; – warmup steps skipped; – incomplete steps not "
			"counted.");
	assert_line(md, "## Buckets");
	assert_line(md, "## Functions");
	assert_line(md, "| – | – | – | – | – | – | – | –/– |");
	free(md);
	cJSON_Delete(doc);
}

static void test_wrong_types(void **state)
{
	static const char text[] =
		"{\"meta\": 5, \"stats\": \"x\", \"buckets\": [1, {\"name\": 3}], "
		"\"functions\": [null, {\"symbol\": \"f\", \"aliases\": [1, \"g\"], "
		"\"attached\": \"yes\"}], \"health\": {\"unattached\": [{}, 2]}}";
	cJSON *doc = cJSON_Parse(text);
	char *md;

	assert_non_null(doc);
	md = render(doc);
	/* The stats row and both bucket rows. */
	assert_int_equal(count_line(md, "| – | – | – | – | – | – | – | – | – |"), 3);
	assert_int_equal(count_line(md, "| – | – | – | – | – | – | – | – | – | – | – |"), 1);
	assert_line(md, "| `f` (`g`) | – | – | – | – | – | – | – | – | – | – |");
	assert_int_equal(count_line(md, "- –: –"), 2);
	free(md);
	cJSON_Delete(doc);
}

static void test_bad_args_and_write_error(void **state)
{
	cJSON *doc = load_fixture("full.json");
	FILE *ro;

	assert_int_equal(pt_report_md__write(NULL, doc), -EINVAL);
	assert_int_equal(pt_report_md__write(stdout, NULL), -EINVAL);
	/* A stream that cannot be written must not report success. */
	ro = fopen("/dev/null", "r");
	assert_non_null(ro);
	assert_int_equal(pt_report_md__write(ro, doc), -EIO);
	fclose(ro);
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_header_and_steps),
		cmocka_unit_test(test_full_buckets),
		cmocka_unit_test(test_share_note_only_above_100),
		cmocka_unit_test(test_full_functions),
		cmocka_unit_test(test_python_rows),
		cmocka_unit_test(test_full_health),
		cmocka_unit_test(test_no_dropped_no_warning),
		cmocka_unit_test(test_zero_steps),
		cmocka_unit_test(test_zero_steps_without_step_probe),
		cmocka_unit_test(test_exact_start_time_from_raw),
		cmocka_unit_test(test_missing_keys),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_bad_args_and_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
