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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "report/summary.h"
#include "report/emit.h"

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
		fail_msg("cannot open %s: %s (run from the repository root or set PT_SRCDIR)", path,
			 strerror(errno));
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

#define assert_line(text, line)                                                                    \
	do {                                                                                       \
		if (count_line(text, line) != 1) {                                                 \
			/* cmocka cuts long messages: the report goes to stderr. */                \
			fprintf(stderr, "report:\n%s", text);                                      \
			fail_msg("expected exactly one line\n  %s", line);                         \
		}                                                                                  \
	} while (0)

#define assert_no_substr(text, s)                                                                  \
	do {                                                                                       \
		if (strstr(text, s))                                                               \
			fail_msg("unexpected \"%s\" in report:\n%s", s, text);                     \
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
			"perf trampoline off · py: function timing **c-entry-only**: the perf "
			"trampoline was not active. To fix: restart with PYTHONPERFSUPPORT=1.");
	assert_line(md, "> **Warning:** the source of 2 code objects could not be read (first: "
			"`gen.py`), so their class is unknown and only "
			"`py:<module>::<function>` probes can match them.");
	assert_line(md, "| `Engine.step` *(c-entry-only)* | `engine.py`:42 | 3 | 15.001 | 5.000 | "
			"5.000 | 10.000 | 10.000 | 10.000 | python frame | yes +0.01s |");
	assert_non_null(strstr(md, "one call per activation"));
	free(md);
	cJSON_Delete(doc);
}

/* The agent loaded with --inject: the header says what it cost. */
static void test_python_injected(void **state)
{
	cJSON *doc = load_fixture("full.json");
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "meta");
	cJSON *py = cJSON_CreateObject(), *agent = cJSON_CreateObject();
	cJSON *inj = cJSON_CreateObject();
	char *md;

	cJSON_AddStringToObject(py, "version", "3.11.2");
	cJSON_AddStringToObject(py, "path", "/usr/bin/python3.11");
	cJSON_AddStringToObject(py, "mechanism", "agent");
	cJSON_AddFalseToObject(py, "perf_trampoline");
	cJSON_AddStringToObject(py, "timing", "exact");
	cJSON_AddStringToObject(py, "why", "the agent hooked the named code objects");
	cJSON_AddStringToObject(agent, "loaded_by", "inject");
	cJSON_AddNumberToObject(inj, "pause_ms", 1.234);
	cJSON_AddNumberToObject(inj, "tid", 4242);
	cJSON_AddStringToObject(inj, "syscall", "read");
	cJSON_AddItemToObject(agent, "inject", inj);
	cJSON_AddItemToObject(py, "agent", agent);
	cJSON_AddItemToObject(meta, "python", py);
	md = render(doc);
	assert_line(md,
		    "Python 3.11.2 (`/usr/bin/python3.11`) · mechanism agent · perf trampoline "
		    "off · py: function timing **exact**: the agent hooked the named code "
		    "objects. The agent was loaded at attach (`--inject`): thread 4242, waiting "
		    "in `read`, was held 1.23 ms for it.");
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
			"The step probe `native:exe:do_step` (mode iteration) attached at +0.00s, "
			"but no call of it completed during the 2.500 s window: did the target run "
			"a step? 1 step started but did not complete.");
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

/* Zero steps said by what the step probe's rows say: it matched nothing
 * (and why), or its calls are sampled only (no agent). */
static void test_zero_steps_why(void **state)
{
	cJSON *doc = load_fixture("zero_steps.json");
	cJSON *fn = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "functions"), 0);
	char *md;

	cJSON_ReplaceItemInObjectCaseSensitive(fn, "attached", cJSON_CreateFalse());
	cJSON_ReplaceItemInObjectCaseSensitive(
		fn, "reason", cJSON_CreateString("no function of module m matches (closest: x)"));
	md = render(doc);
	assert_line(md, "No complete step was seen: steps, buckets and step.other have no figures. "
			"The step probe `native:exe:do_step` (mode iteration) matched no function: "
			"no function of module m matches (closest: x) (see Functions). 1 step "
			"started but did not complete.");
	free(md);
	cJSON_ReplaceItemInObjectCaseSensitive(fn, "attached", cJSON_CreateTrue());
	cJSON_AddStringToObject(fn, "timing", "sampled");
	md = render(doc);
	assert_non_null(strstr(md, "The step probe `native:exe:do_step` (mode iteration) was "
				   "found, but its calls are only sampled here"));
	assert_no_substr(md, "did it attach");
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

/* ---- Host time (sampled) ---- */

static void add_thread(cJSON *arr, const char *name, int tid, bool py, int samples, double on,
		       double off)
{
	cJSON *t = cJSON_CreateObject();

	cJSON_AddNumberToObject(t, "tid", tid);
	cJSON_AddStringToObject(t, "name", name);
	cJSON_AddBoolToObject(t, "python", py);
	cJSON_AddNumberToObject(t, "samples", samples);
	cJSON_AddNumberToObject(t, "on_cpu_ms", on);
	cJSON_AddNumberToObject(t, "off_cpu_ms", off);
	cJSON_AddNumberToObject(t, "wall_ms", on + off);
	cJSON_AddItemToArray(arr, t);
}

static cJSON *add_figures(cJSON *o, int samples, double on, double off, double share)
{
	cJSON_AddNumberToObject(o, "samples", samples);
	cJSON_AddNumberToObject(o, "wall_ms", on + off);
	cJSON_AddNumberToObject(o, "on_cpu_ms", on);
	cJSON_AddNumberToObject(o, "off_cpu_ms", off);
	cJSON_AddNumberToObject(o, "share", share);
	return o;
}

/* A Python row of functions[]: timed exactly, or sampled only (every
 * exact figure null). */
static void add_py_function(cJSON *fns, const char *qualname, int line, bool exact, int samples,
			    double on, double off, double share)
{
	static const char *const exact_keys[] = { "mean_ms", "p50_ms", "p90_ms", "p99_ms",
						  "max_ms" };
	cJSON *fn = cJSON_CreateObject();

	cJSON_AddStringToObject(fn, "probe", "py:engine.Engine.*");
	cJSON_AddStringToObject(fn, "kind", "python");
	cJSON_AddStringToObject(fn, "object", "/srv/engine.py");
	cJSON_AddStringToObject(fn, "symbol", qualname);
	cJSON_AddNumberToObject(fn, "line", line);
	cJSON_AddStringToObject(fn, "timing", exact ? "exact" : "sampled");
	cJSON_AddItemToObject(fn, "aliases", cJSON_CreateArray());
	cJSON_AddTrueToObject(fn, "attached");
	cJSON_AddNumberToObject(fn, "attached_after_s", 0.5);
	cJSON_AddNullToObject(fn, "reason");
	if (exact) {
		cJSON_AddNumberToObject(fn, "calls", 4);
		cJSON_AddNumberToObject(fn, "total_ms", 8);
		for (size_t i = 0; i < sizeof(exact_keys) / sizeof(exact_keys[0]); i++)
			cJSON_AddNumberToObject(fn, exact_keys[i], 2);
	} else {
		cJSON_AddNullToObject(fn, "calls");
		cJSON_AddNullToObject(fn, "total_ms");
		for (size_t i = 0; i < sizeof(exact_keys) / sizeof(exact_keys[0]); i++)
			cJSON_AddNullToObject(fn, exact_keys[i]);
	}
	add_figures(cJSON_AddObjectToObject(fn, "sampled"), samples, on, off, share);
	cJSON_AddItemToArray(fns, fn);
}

static void add_src_line(cJSON *arr, int line, const char *text, int samples, double on, double off,
			 double share)
{
	cJSON *l = cJSON_CreateObject();

	cJSON_AddNumberToObject(l, "line", line);
	if (text)
		cJSON_AddStringToObject(l, "text", text);
	else
		cJSON_AddNullToObject(l, "text");
	add_figures(l, samples, on, off, share);
	cJSON_AddItemToArray(arr, l);
}

static const char long_line[] =
	"        return self.kernel(x) | self.mask  # a very long comment that goes on and on "
	"until the end";

/* Engine.decode, lines 60-64: a line with a pipe and over 80 characters,
 * a line blocked off-CPU only, a line never sampled. */
static cJSON *add_lines_fn(cJSON *lines)
{
	cJSON *fn = cJSON_CreateObject(), *rows;

	cJSON_AddStringToObject(fn, "probe", "py:engine.Engine.decode");
	cJSON_AddStringToObject(fn, "file", "/srv/engine.py");
	cJSON_AddStringToObject(fn, "function", "Engine.decode");
	cJSON_AddNumberToObject(fn, "first_line", 60);
	cJSON_AddNumberToObject(fn, "last_line", 64);
	cJSON_AddStringToObject(fn, "timing", "sampled");
	cJSON_AddNullToObject(fn, "calls");
	cJSON_AddNullToObject(fn, "exact_total_ms");
	add_figures(fn, 30, 300, 200, 0.05);
	cJSON_AddNullToObject(fn, "source_error");
	rows = cJSON_AddArrayToObject(fn, "lines");
	add_src_line(rows, 60, "    def decode(self, x):", 0, 0, 0, 0);
	add_src_line(rows, 61, "        y = prep(x)", 5, 50, 0, 0.1);
	add_src_line(rows, 62, long_line, 25, 250, 0, 0.5);
	add_src_line(rows, 63, "        time.sleep(0.2)", 0, 0, 200, 0.4);
	add_src_line(rows, 64, "        return y", 0, 0, 0, 0);
	cJSON_AddItemToArray(lines, fn);
	return fn;
}

/* full.json with sampling on: two threads (given in the wrong order),
 * Engine.step timed exactly, Engine.decode sampled only, and lines of
 * Engine.decode. */
static cJSON *load_sampled(unsigned int lost)
{
	cJSON *doc = load_fixture("full.json");
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "meta");
	cJSON *fns = cJSON_GetObjectItemCaseSensitive(doc, "functions");
	cJSON *s = cJSON_AddObjectToObject(meta, "sampling"), *threads, *out;

	cJSON_AddNumberToObject(s, "hz", 99);
	cJSON_AddNumberToObject(s, "period_ns", 10101010);
	cJSON_AddStringToObject(s, "mechanism",
				"perf cpu-clock per thread + sched_switch (off-CPU)");
	threads = cJSON_AddArrayToObject(s, "threads");
	add_thread(threads, "cuda_worker", 4250, false, 10, 100, 100);
	add_thread(threads, "python3", 4242, true, 140, 1400, 400);
	cJSON_AddNumberToObject(s, "samples", 150);
	cJSON_AddNumberToObject(s, "on_cpu_ms", 1500);
	cJSON_AddNumberToObject(s, "off_cpu_ms", 500);
	cJSON_AddNumberToObject(s, "off_cpu_intervals", 7);
	cJSON_AddNumberToObject(s, "wall_ms", 2000);
	cJSON_AddNumberToObject(s, "python_samples", 130);
	cJSON_AddNumberToObject(s, "no_python_frames", 10);
	cJSON_AddNumberToObject(s, "not_python_thread", 10);
	cJSON_AddNumberToObject(s, "truncated_stacks", 1);
	cJSON_AddNumberToObject(s, "unreadable_stacks", 2);
	cJSON_AddNumberToObject(s, "unknown_frames", 3);
	cJSON_AddNumberToObject(s, "lost_samples", lost);
	cJSON_AddNumberToObject(s, "threads_sampled", 2);
	cJSON_AddNumberToObject(s, "threads_failed", 0);
	{
		/* proftrace's own: the agent's and the shim's threads */
		cJSON *own = cJSON_AddObjectToObject(s, "proftrace_threads"), *t, *arr;

		arr = cJSON_AddArrayToObject(own, "threads");
		t = cJSON_CreateObject();
		cJSON_AddNumberToObject(t, "tid", 4260);
		cJSON_AddStringToObject(t, "name", "proftrace-py");
		cJSON_AddNumberToObject(t, "on_cpu_ms", 0.4);
		cJSON_AddNumberToObject(t, "off_cpu_ms", 1999.6);
		cJSON_AddItemToArray(arr, t);
		t = cJSON_CreateObject();
		cJSON_AddNumberToObject(t, "tid", 4261);
		cJSON_AddStringToObject(t, "name", "proftrace-cupti");
		cJSON_AddNumberToObject(t, "on_cpu_ms", 0);
		cJSON_AddNumberToObject(t, "off_cpu_ms", 2000);
		cJSON_AddItemToArray(arr, t);
		cJSON_AddNumberToObject(own, "on_cpu_ms", 0.4);
		cJSON_AddNumberToObject(own, "off_cpu_ms", 3999.6);
	}
	out = cJSON_AddObjectToObject(s, "outputs");
	cJSON_AddStringToObject(out, "folded", "stacks.folded");
	cJSON_AddStringToObject(out, "svg", "flame.svg");
	cJSON_AddStringToObject(out, "svg_wall", "flame-wall.svg");

	add_py_function(fns, "Engine.decode", 60, false, 30, 300, 200, 0.05);
	add_py_function(fns, "Engine.step", 42, true, 100, 1000, 100, 0.11);
	add_lines_fn(cJSON_AddArrayToObject(doc, "lines"));
	return doc;
}

static void test_sampling_absent(void **state)
{
	cJSON *doc = load_fixture("full.json");
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "meta");
	char *md = render(doc), *md_null;

	assert_no_substr(md, "Host time");
	assert_no_substr(md, "Stack sampling");
	assert_no_substr(md, "(sampled)");
	/* null reads as absent: the report is byte for byte the same. */
	cJSON_AddNullToObject(meta, "sampling");
	cJSON_AddArrayToObject(doc, "lines");
	md_null = render(doc);
	assert_string_equal(md, md_null);
	free(md_null);
	free(md);
	cJSON_Delete(doc);
}

static void test_sampling_section(void **state)
{
	cJSON *doc = load_sampled(0);
	char *md = render(doc);
	const char *sec;

	sec = strstr(md, "\n## Host time (sampled)\n");
	assert_non_null(sec);
	/* After Functions, before Health. */
	assert_true(sec > strstr(md, "## Functions"));
	assert_true(sec < strstr(md, "## Health"));
	assert_line(md, "Sampled at 99 Hz (perf cpu-clock per thread + sched\\_switch (off-CPU)): "
			"150 on-CPU samples · on-CPU 1500.000 ms · off-CPU 500.000 ms in 7 "
			"intervals · wall 2000.000 ms (on-CPU + off-CPU, summed over threads)");
	assert_line(md, "On-CPU samples: 130 with Python frames, 10 of Python threads with no "
			"Python frame, 10 of threads without a Python thread state.");
	assert_line(md, "| thread | tid | Python | samples | on-CPU ms | off-CPU ms | wall ms |");
	assert_line(md, "| python3 | 4242 | yes | 140 | 1400.000 | 400.000 | 1800.000 |");
	assert_line(md, "| cuda\\_worker | 4250 | no | 10 | 100.000 | 100.000 | 200.000 |");
	/* Largest wall first, whatever the array order. */
	assert_true(strstr(md, "| python3 |") < strstr(md, "| cuda\\_worker |"));

	assert_line(md,
		    "| function | timing | wall ms | share | on-CPU ms | off-CPU ms | samples |");
	assert_line(md, "| `Engine.step` (`engine.py`:42) | exact | 1100.000 | 11.0% | 1000.000 | "
			"100.000 | 100 |");
	assert_line(md, "| `Engine.decode` (`engine.py`:60) | sampled | 500.000 | 5.0% | 300.000 | "
			"200.000 | 30 |");
	assert_true(strstr(md, "| `Engine.step` (") < strstr(md, "| `Engine.decode` ("));
	assert_line(md, "Sampled times are inclusive: a function's time is every sample with it "
			"anywhere on the stack, once per sample even when it recurses. Share is "
			"wall time over the 10.000 s window, summed over threads, so it can exceed "
			"100%.");

	assert_line(md, "### Top lines of `Engine.decode` (`engine.py`:60–64)");
	assert_line(md, "wall 500.000 ms (5.0% of the window) · on-CPU 300.000 ms · off-CPU "
			"200.000 ms · 30 samples · calls not counted (sampled)");
	assert_line(md, "| line | wall ms | % of function | on-CPU ms | off-CPU ms | source |");
	/* Indentation dropped, '|' escaped, cut at 80 characters. */
	assert_line(md, "| 62 | 250.000 | 50.0% | 250.000 | 0.000 | `return self.kernel(x) \\| "
			"self.mask  # a very long comment that goes on and on unt…` |");
	/* Off-CPU only is still time; never-sampled lines are not top lines. */
	assert_line(md, "| 63 | 200.000 | 40.0% | 0.000 | 200.000 | `time.sleep(0.2)` |");
	assert_line(md, "| 61 | 50.000 | 10.0% | 50.000 | 0.000 | `y = prep(x)` |");
	assert_true(strstr(md, "| 62 |") < strstr(md, "| 63 |"));
	assert_true(strstr(md, "| 63 |") < strstr(md, "| 61 |"));
	assert_no_substr(md, "| 60 |");
	assert_no_substr(md, "| 64 |");
	assert_line(md, "Also written next to summary.json: `lines.txt` (time per source line, in "
			"line\\_profiler's layout), `stacks.folded` (folded stacks, for "
			"flamegraph.pl or speedscope), `flame.svg` (flame graph of on-CPU time), "
			"`flame-wall.svg` (flame graph of wall time: off-CPU stacks under "
			"`[off-cpu]`).");
	/* proftrace's own threads: in Health, with their time, in no table */
	assert_line(md, "proftrace's own threads in the target, left out of every figure, table "
			"and flame graph above: `proftrace-py` (tid 4260) 0.4 ms on the CPU, "
			"1999.6 ms off it; `proftrace-cupti` (tid 4261) 0.0 ms on the CPU, 2000.0 "
			"ms off it (together 0.4 ms on the CPU, 3999.6 ms off it).");
	assert_true(strstr(md, "proftrace's own threads") > strstr(md, "## Health"));
	assert_no_substr(md, "| proftrace-py |");

	/* Health: the sampling counts, no warning without lost samples. */
	assert_line(md, "Stack sampling:");
	assert_line(md, "| lost samples | unreadable stacks | truncated stacks | unknown frames "
			"| threads sampled | threads failed |");
	assert_line(md, "| 0 | 2 | 1 | 3 | 2 | 0 |");
	assert_true(strstr(md, "| 0 | 2 | 1 | 3 | 2 | 0 |") > strstr(md, "## Health"));
	assert_no_substr(md, "were lost");
	free(md);
	cJSON_Delete(doc);
}

/* Sampled-only rows: no exact figure pretends to be one. */
static void test_sampled_timing_rows(void **state)
{
	cJSON *doc = load_sampled(0);
	char *md = render(doc);

	assert_line(md, "| `Engine.decode` *(sampled)* | `engine.py`:60 | – | – | – | – | – | – "
			"| – | python frame | yes +0.50s |");
	assert_line(md, "| `Engine.step` | `engine.py`:42 | 4 | 8.000 | 2.000 | 2.000 | 2.000 | "
			"2.000 | 2.000 | python frame | yes +0.50s |");
	assert_non_null(strstr(md, " Rows marked *(sampled)* were not timed exactly: their calls "
				   "and times are not counted (–), and their sampled time is "
				   "under Host time (sampled).\n"));
	free(md);
	cJSON_Delete(doc);
}

static void test_lost_samples_warning(void **state)
{
	static const char warning[] =
		"**3 samples were lost (ring buffer full): sampled figures "
		"are too low; raise `set ringbuf_mb` or lower `set sample_hz`**";
	cJSON *doc = load_sampled(3);
	char *md = render(doc);

	/* In the section and again in Health. */
	assert_int_equal(count_line(md, warning), 2);
	assert_true(strstr(md, warning) > strstr(md, "## Host time (sampled)"));
	assert_non_null(strstr(strstr(md, "## Health"), warning));
	assert_line(md, "| 3 | 2 | 1 | 3 | 2 | 0 |");
	free(md);
	cJSON_Delete(doc);
}

/* The host held the VM's CPUs for 2% of the run: said in Health, with the
 * samples that came late for it; under 1%, or unknown, nothing. */
static void test_host_steal_said(void **state)
{
	cJSON *doc = load_sampled(0);
	cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"),
						    "sampling");
	char *md;

	cJSON_AddNumberToObject(s, "host_steal_ms", 80.5);
	cJSON_AddNumberToObject(s, "host_steal_share", 0.02);
	md = render(doc);
	assert_line(md, "**Host steal:** the hypervisor held this machine's CPUs for 80.5 ms "
			"during the run (2.0% of them); no sample came late for it. Probed "
			"times are exact wall time: steal inside a call is in them, as the "
			"program lived it.");
	assert_non_null(strstr(strstr(md, "## Health"), "**Host steal:**"));
	free(md);
	cJSON_AddNumberToObject(s, "late_samples", 12);
	cJSON_AddNumberToObject(s, "late_ms", 30.0);
	md = render(doc);
	assert_line(md, "**Host steal:** the hypervisor held this machine's CPUs for 80.5 ms "
			"during the run (2.0% of them). 12 on-CPU samples came late for it: "
			"the 30.0 ms of periods they missed count off the CPU at their stacks, "
			"so sampled wall times hold it and on-CPU times are what the threads "
			"ran. Probed times are exact wall time: steal inside a call is in them, "
			"as the program lived it.");
	free(md);
	cJSON_ReplaceItemInObject(s, "host_steal_share", cJSON_CreateNumber(0.009));
	md = render(doc);
	assert_null(strstr(md, "Host steal"));
	free(md);
	cJSON_ReplaceItemInObject(s, "host_steal_share", cJSON_CreateNull());
	md = render(doc);
	assert_null(strstr(md, "Host steal"));
	free(md);
	cJSON_Delete(doc);
}

/* Many threads and lines: top 10 by wall, and where the rest is. */
static void test_top_tens(void **state)
{
	cJSON *doc = load_sampled(0);
	cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"),
						    "sampling");
	cJSON *threads = cJSON_GetObjectItemCaseSensitive(s, "threads");
	cJSON *fn = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "lines"), 0);
	cJSON *rows = cJSON_GetObjectItemCaseSensitive(fn, "lines");
	char name[32], text[32];
	char *md;

	for (int i = 0; i < 11; i++) {
		snprintf(name, sizeof(name), "worker-%d", i);
		add_thread(threads, name, 5000 + i, false, 1, 1 + i, 0);
		snprintf(text, sizeof(text), "x%d = %d", i, i);
		add_src_line(rows, 65 + i, text, 1, 1 + i, 0, 0.001);
	}
	md = render(doc);
	/* 13 threads: the 10 with most wall time; 16 lines, 14 with time. */
	assert_non_null(strstr(md, "| worker-10 |"));
	assert_non_null(strstr(md, "| worker-3 |"));
	assert_no_substr(md, "| worker-2 |");
	assert_no_substr(md, "| worker-0 |");
	assert_line(md, "3 more threads in summary.json.");
	assert_non_null(strstr(md, "| 69 | 5.000 |"));
	assert_no_substr(md, "| 68 |");
	assert_line(md, "4 more lines with time in lines.txt.");
	free(md);
	cJSON_Delete(doc);
}

static void test_lines_source_error_and_no_outputs(void **state)
{
	cJSON *doc = load_sampled(0);
	cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"),
						    "sampling");
	cJSON *fn = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "lines"), 0);
	cJSON *rows = cJSON_GetObjectItemCaseSensitive(fn, "lines"), *row;
	char *md;

	cJSON_ReplaceItemInObjectCaseSensitive(fn, "source_error",
					       cJSON_CreateString("cannot open /srv/engine.py"));
	cJSON_ArrayForEach(row, rows)
	{
		cJSON_ReplaceItemInObjectCaseSensitive(row, "text", cJSON_CreateNull());
	}
	cJSON_ReplaceItemInObjectCaseSensitive(fn, "timing", cJSON_CreateString("exact"));
	cJSON_ReplaceItemInObjectCaseSensitive(fn, "calls", cJSON_CreateNumber(7));
	cJSON_ReplaceItemInObjectCaseSensitive(fn, "exact_total_ms", cJSON_CreateNumber(480.5));
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "outputs"),
					       "svg", cJSON_CreateNull());
	md = render(doc);
	assert_line(md, "wall 500.000 ms (5.0% of the window) · on-CPU 300.000 ms · off-CPU "
			"200.000 ms · 30 samples · calls 7 (exact, 480.500 ms total)");
	assert_line(md, "Source unavailable: cannot open /srv/engine.py.");
	assert_line(md, "| 62 | 250.000 | 50.0% | 250.000 | 0.000 | – |");
	assert_line(md, "Also written next to summary.json: `lines.txt` (time per source line, in "
			"line\\_profiler's layout), `stacks.folded` (folded stacks, for "
			"flamegraph.pl or speedscope), `flame-wall.svg` (flame graph of wall time: "
			"off-CPU stacks under `[off-cpu]`).");
	free(md);

	/* No lines, no folded, no svg: no note; no sampled rows: no table. */
	cJSON_DeleteItemFromObjectCaseSensitive(doc, "lines");
	cJSON_DeleteItemFromObjectCaseSensitive(s, "outputs");
	cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(doc, "functions"), 5);
	cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(doc, "functions"), 4);
	md = render(doc);
	assert_line(md, "## Host time (sampled)");
	assert_no_substr(md, "Also written");
	assert_no_substr(md, "| function | timing |");
	assert_no_substr(md, "Top lines");
	free(md);
	cJSON_Delete(doc);
}

/* A function no sample fell in says so instead of an empty table. */
static void test_lines_never_sampled(void **state)
{
	cJSON *doc = load_sampled(0);
	cJSON *fn = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "lines"), 0);
	char *md;

	cJSON_ReplaceItemInObjectCaseSensitive(fn, "lines", cJSON_CreateArray());
	md = render(doc);
	assert_line(md, "No sample fell in this function.");
	assert_no_substr(md, "| line | wall ms |");
	free(md);
	cJSON_Delete(doc);
}

static void test_sampling_wrong_types(void **state)
{
	static const char text[] =
		"{\"meta\": {\"sampling\": {\"threads\": [1, {\"name\": 2}], \"outputs\": 3}}, "
		"\"functions\": [{\"symbol\": \"f\", \"sampled\": {}}, {\"sampled\": 1}], "
		"\"lines\": [2, {\"lines\": [null, {\"samples\": 1}]}]}";
	cJSON *doc = cJSON_Parse(text);
	char *md;

	assert_non_null(doc);
	md = render(doc);
	assert_line(md, "Sampled at – Hz (–): – on-CPU samples · on-CPU – ms · off-CPU – ms in – "
			"intervals · wall – ms (on-CPU + off-CPU, summed over threads)");
	assert_line(md, "| – | – | – | – | – | – | – |");
	assert_line(md, "| `f` (–) | – | – | – | – | – | – |");
	assert_line(md, "### Top lines of – (–)");
	/* A line with samples and nothing else, and the Health row. */
	assert_int_equal(count_line(md, "| – | – | – | – | – | – |"), 2);
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

/* ---- tokens and sequence lengths (values) ---- */

static cJSON *add_value(cJSON *vals, const char *role, const char *probe, const char *expr,
			double read, double outside, double without, double fault,
			double first_call)
{
	cJSON *e = role ? cJSON_AddObjectToObject(vals, role) : cJSON_CreateObject();
	cJSON *m;

	cJSON_AddStringToObject(e, "probe", probe);
	cJSON_AddStringToObject(e, "expr", expr);
	cJSON_AddNumberToObject(e, "read", read);
	cJSON_AddNumberToObject(e, "outside_step", outside);
	if (without >= 0)
		cJSON_AddNumberToObject(e, "steps_without_value", without);
	m = cJSON_AddObjectToObject(e, "missing");
	if (fault)
		cJSON_AddNumberToObject(m, "unreadable", fault);
	if (first_call)
		cJSON_AddNumberToObject(m, "first_call", first_call);
	cJSON_AddNumberToObject(e, "missing_total", fault + first_call);
	return e;
}

static void add_kv_bin(cJSON *arr, double lo, double hi, double steps, double mean, double p50,
		       double p90, double p99, double tokens, double tok_per_s)
{
	cJSON *b = cJSON_CreateObject();

	cJSON_AddNumberToObject(b, "kv_min", lo);
	if (hi >= 0)
		cJSON_AddNumberToObject(b, "kv_max", hi);
	else
		cJSON_AddNullToObject(b, "kv_max");
	cJSON_AddNumberToObject(b, "steps", steps);
	if (steps) {
		cJSON_AddNumberToObject(b, "mean_ms", mean);
		cJSON_AddNumberToObject(b, "p50_ms", p50);
		cJSON_AddNumberToObject(b, "p90_ms", p90);
		cJSON_AddNumberToObject(b, "p99_ms", p99);
	} else {
		cJSON_AddNullToObject(b, "mean_ms");
		cJSON_AddNullToObject(b, "p50_ms");
		cJSON_AddNullToObject(b, "p90_ms");
		cJSON_AddNullToObject(b, "p99_ms");
	}
	cJSON_AddNumberToObject(b, "tokens", tokens);
	if (tok_per_s >= 0)
		cJSON_AddNumberToObject(b, "tok_per_s", tok_per_s);
	else
		cJSON_AddNullToObject(b, "tok_per_s");
	cJSON_AddItemToArray(arr, b);
}

/* full.json with tokens, kv_len and batch read per step (as summary.c
 * writes them: docs/summary.md). */
static cJSON *load_tokens(bool bins, double dropped)
{
	cJSON *doc = load_fixture("full.json");
	cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "stats");
	cJSON *vals, *arr, *health;

	cJSON_AddNumberToObject(st, "tokens", 12345);
	cJSON_AddNumberToObject(st, "steps_with_tokens", 2);
	cJSON_AddNumberToObject(st, "tok_per_s", 823000.04);
	cJSON_AddNumberToObject(st, "batch_mean", 7.5);
	cJSON_AddNumberToObject(st, "kv_len_mean", 1536.25);

	vals = cJSON_CreateObject();
	add_value(vals, "tokens", "py:engine.Engine.step", "len(arg:reqs)", 3, 0, 0, 0, 1);
	cJSON_AddStringToObject(
		add_value(vals, "kv_len", "py:engine.Engine.step", "arg:seq_lens", 2, 1, 1, 2, 0),
		"reduce", "mean");
	add_value(vals, "batch", "native:exe:engine_step", "ret|x", 3, 0, 2, 0, 0);
	arr = cJSON_AddArrayToObject(vals, "count_tokens");
	cJSON_AddItemToArray(arr, add_value(NULL, NULL, "py:engine.Sampler.sample", "len(ret)", 40,
					    3, -1, 0, 0));
	cJSON_AddNumberToObject(vals, "records_dropped", dropped);
	cJSON_AddNumberToObject(vals, "bad_records", 0);
	/* before "health", where summary.c puts them */
	health = cJSON_DetachItemFromObjectCaseSensitive(doc, "health");
	assert_non_null(health);
	cJSON_AddItemToObject(doc, "values", vals);
	if (bins) {
		arr = cJSON_CreateArray();
		add_kv_bin(arr, 0, 512, 1, 5, 5, 5, 5, 345, 69000);
		add_kv_bin(arr, 512, 1024, 0, 0, 0, 0, 0, 0, -1);
		add_kv_bin(arr, 1024, -1, 1, 10, 10, 10, 10, 12000, 1200000);
		cJSON_AddItemToObject(doc, "decode_length_buckets", arr);
	}
	cJSON_AddItemToObject(doc, "health", health);
	return doc;
}

static void test_tokens_section(void **state)
{
	cJSON *doc = load_tokens(true, 1);
	char *md = render(doc);

	assert_line(md, "## Tokens and sequence lengths");
	/* after the steps, before the buckets */
	assert_true(strstr(md, "## Steps") < strstr(md, "## Tokens and sequence lengths"));
	assert_true(strstr(md, "## Tokens and sequence lengths") < strstr(md, "## Buckets"));
	assert_line(md, "| tokens | tok/s | steps with tokens | batch mean | kv_len mean |");
	assert_line(md, "| 12345 | 823000.0 | 2 | 7.50 | 1536.2 |");
	assert_line(md, "tok/s: tokens over the summed time of the counted steps that have a "
			"token count.");
	assert_line(md, "| kv_len | steps | mean ms | p50 ms | p90 ms | p99 ms | tokens | tok/s |");
	assert_line(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
	assert_line(md, "| 0–512 | 1 | 5.000 | 5.000 | 5.000 | 5.000 | 345 | 69000.0 |");
	assert_line(md, "| 512–1024 | 0 | – | – | – | – | 0 | – |");
	assert_line(md, "| 1024+ | 1 | 10.000 | 10.000 | 10.000 | 10.000 | 12000 | 1200000.0 |");
	/* the table keeps the bins' order */
	assert_true(strstr(md, "| 0–512 |") < strstr(md, "| 512–1024 |"));
	assert_true(strstr(md, "| 512–1024 |") < strstr(md, "| 1024+ |"));
	/* one line per value: coverage and why some are missing */
	assert_line(md, "- tokens = `len(arg:reqs)` on `py:engine.Engine.step`: read 3, "
			"1 missing: first_call 1");
	assert_line(md, "- kv_len = `arg:seq_lens` on `py:engine.Engine.step`: read 2, 1 counted "
			"step without it, 1 read outside any step (not used), 2 missing: "
			"unreadable 2");
	assert_line(md, "- batch = `ret\\|x` on `native:exe:engine_step`: read 3, 2 counted steps "
			"without it");
	assert_line(md, "- count tokens = `len(ret)` on `py:engine.Sampler.sample`: read 40, 3 "
			"read outside any step (not used)");
	assert_line(md, "- 1 value record lost (ring buffer full): raise `set ringbuf_mb`");
	free(md);
	cJSON_Delete(doc);
}

static void test_tokens_without_bins(void **state)
{
	cJSON *doc = load_tokens(false, 0);
	cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "stats");
	char *md;

	/* figures not measured: a dash */
	cJSON_ReplaceItemInObjectCaseSensitive(st, "tok_per_s", cJSON_CreateNull());
	cJSON_DeleteItemFromObjectCaseSensitive(st, "batch_mean");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "kv_len_mean");
	md = render(doc);
	assert_line(md, "## Tokens and sequence lengths");
	assert_line(md, "| 12345 | – | 2 | – | – |");
	assert_no_substr(md, "| kv_len |");
	assert_no_substr(md, "value record");
	free(md);
	cJSON_Delete(doc);
}

static void test_tokens_absent(void **state)
{
	cJSON *doc = load_fixture("full.json");
	char *md = render(doc);

	assert_no_substr(md, "Tokens and sequence lengths");
	assert_no_substr(md, "tok/s");
	assert_no_substr(md, "| kv_len |");
	free(md);
	/* bins without values: still nothing */
	cJSON_AddItemToObject(doc, "decode_length_buckets", cJSON_CreateArray());
	md = render(doc);
	assert_no_substr(md, "Tokens and sequence lengths");
	free(md);
	cJSON_Delete(doc);
}

/* ---- GPU: from a pt_gpu__join result through summary.json's builder ---- */

#define MS 1000000ULL
#define HALF (MS / 2)
#define GTID 100

enum { GB_SCHED, GB_FWD, GB_ATTN, GB_IDLE, GNB };

static const struct pt_report_bucket gbuckets[GNB] = {
	{ "engine.schedule", "engine" },
	{ "engine.forward", "engine" },
	{ "gpu.attn_kernel", "gpu" },
	{ "engine.idle", "engine" },
};

static void grec(struct pt_gpu *g, enum pt_gpu_kind kind, uint32_t corr, uint64_t s, uint64_t e,
		 const char *name, uint64_t bytes)
{
	struct pt_gpu_rec r = { .kind = kind, .correlation_id = corr, .start_ns = s, .end_ns = e };

	if (kind == PT_GPU_KERNEL)
		r.kernel.name = name;
	else if (kind == PT_GPU_MEMCPY)
		r.memcpy.bytes = bytes;
	else if (kind == PT_GPU_API)
		r.api.tid = GTID;
	assert_int_equal(pt_gpu__record(g, &r), 0);
}

static void gcall(struct pt_gpu *g, uint64_t s, uint64_t e, int bucket)
{
	assert_int_equal(pt_gpu__bucket_call(g, GTID, s, e, 1ULL << bucket), 0);
}

/* A C++ kernel as CUPTI names it (demangled: 440 characters). */
#define REDUCE                                                                                     \
	"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_"        \
	"11sum_functorIfffEclERNS_18TensorIteratorBaseEEUlffE_EEjfLi4ELi4EEEEEvT1_"

/*
 * Steps 10..15 and 20..30 ms, window 0..100 ms, device 0:
 *   launched at 11.5 (forward)        sgemm 12..14
 *   launched at 12.5 (forward, attn)  REDUCE 13..14.5 (a C++ kernel, mangled)
 *   launched at 24.5 (forward)        sgemm 25..28
 *   launched at 21 (schedule)         copy 21..22
 *   no launch record                  sgemm 40..41
 * busy 7.5 ms (7.5%); steps busy 2.5 and 4, idle 2.5 and 6 of 15 ms
 * (56.7% host-bound); launch delays 0.5 ms.
 */
static struct pt_gpu *gpu_feed(bool work)
{
	struct pt_gpu *g = pt_gpu__new(GNB);

	assert_non_null(g);
	if (!work)
		return g;
	assert_int_equal(pt_gpu__step(g, GTID, 10 * MS, 15 * MS), 0);
	assert_int_equal(pt_gpu__step(g, GTID, 20 * MS, 30 * MS), 0);
	gcall(g, 10 * MS, 11 * MS, GB_SCHED);
	gcall(g, 12 * MS, 13 * MS, GB_ATTN);
	gcall(g, 11 * MS, 14 * MS, GB_FWD);
	gcall(g, 20 * MS + HALF, 22 * MS + HALF, GB_SCHED);
	gcall(g, 23 * MS, 29 * MS, GB_FWD);
	grec(g, PT_GPU_API, 1, 11 * MS + HALF, 11 * MS + HALF + 5000, NULL, 0);
	grec(g, PT_GPU_KERNEL, 1, 12 * MS, 14 * MS, "sgemm_128x64_nn", 0);
	grec(g, PT_GPU_API, 2, 12 * MS + HALF, 12 * MS + HALF + 5000, NULL, 0);
	grec(g, PT_GPU_KERNEL, 2, 13 * MS, 14 * MS + HALF, REDUCE, 0);
	grec(g, PT_GPU_API, 3, 24 * MS + HALF, 24 * MS + HALF + 5000, NULL, 0);
	grec(g, PT_GPU_KERNEL, 3, 25 * MS, 28 * MS, "sgemm_128x64_nn", 0);
	grec(g, PT_GPU_API, 4, 21 * MS, 21 * MS + 5000, NULL, 0);
	grec(g, PT_GPU_MEMCPY, 4, 21 * MS, 22 * MS, NULL, 1048576);
	grec(g, PT_GPU_KERNEL, 5, 40 * MS, 41 * MS, "sgemm_128x64_nn", 0);
	return g;
}

static const struct pt_gpuring_info ginfo = {
	.version = 1,
	.cupti_version = 24,
	.active = true,
	.activations = 1,
	.delivered = 9,
	.ring_dropped = 2,
	.cupti_dropped = 3,
	.lost = 4,
	.skipped = 5,
	.unknown_kinds = 6,
	.strtab_full = 7,
};

/* report.md of a report with no aggregator: meta, buckets and the GPU. */
/* gpu.segment_lost of the next render_gpu() (the ring truncated under us) */
static const char *glost;

static char *render_gpu(const struct pt_gpu_result *res, const struct pt_gpuring_info *info,
			const char *why)
{
	struct pt_report r;
	cJSON *doc;
	char *md;

	memset(&r, 0, sizeof(r));
	r.meta = (struct pt_report_meta){
		.tool = "proftrace",
		.version = "0.1.0",
		.pid = 4242,
		.comm = "llm",
		.exe = "/opt/llm/bin/llm",
		.duration_s = 0.1,
		.step_mode = "call",
		.step_probe = "native:exe:engine_step",
	};
	r.buckets = gbuckets;
	r.nbuckets = GNB;
	r.gpu = res;
	r.gpu_info = info;
	r.gpu_why = why;
	r.gpu_lost = glost;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	md = render(doc);
	cJSON_Delete(doc);
	return md;
}

static void test_gpu_section(void **state)
{
	struct pt_gpu *g = gpu_feed(true);
	const struct pt_gpu_result *res = pt_gpu__join(g, 0, 100 * MS);
	char *md, *gpu, *fns, *bks;

	assert_non_null(res);
	md = render_gpu(res, &ginfo, NULL);
	assert_line(md, "## GPU");
	gpu = strstr(md, "\n## GPU\n");
	bks = strstr(md, "\n## Buckets\n");
	fns = strstr(md, "\n## Functions\n");
	assert_true(gpu && bks && bks < gpu && (!fns || gpu < fns));
	assert_line(md, "| kernels | copies | memsets | GPU busy ms | busy share | step time GPU "
			"idle (host-bound) | launch to start p50 ms |");
	assert_line(md, "| 4 | 1 | 0 | 7.500 | 7.5% | 56.7% | 0.500 |");
	assert_line(md, "Per counted step: GPU busy 3.250 ms, idle 4.250 ms (p90 6.000 ms) on "
			"average; 2 steps launched GPU work.");
	assert_line(md, "| bucket | GPU work launched | GPU ms |");
	assert_line(md, "| engine.schedule | 1 | 1.000 |");
	assert_line(md, "| engine.forward | 3 | 6.500 |");
	assert_line(md, "| gpu.attn\\_kernel | 1 | 1.500 |");
	/* no GPU work launched in it: no row in the GPU table */
	assert_no_substr(gpu, "| engine.idle | 0 |");
	assert_line(md, "| kernel | count | total ms | mean ms | max ms | share of busy |");
	assert_line(md, "| `sgemm_128x64_nn` | 3 | 6.000 | 2.000 | 3.000 | 80.0% |");
	/* demangled and shortened to the table's width (docs/gpu.md): never
	 * the mangled name, nor the whole template */
	assert_line(md, "| `at::native::reduce_kernel<512, 1, at::native::ReduceOp<...> >(...)` | "
			"1 | 1.500 | 1.500 | 1.500 | 20.0% |");
	assert_true(strstr(md, "| `sgemm_128x64_nn` |") < strstr(md, "| `at::native::reduce"));
	assert_no_substr(md, "_ZN2at6native");
	assert_no_substr(md, "sum_functor");
	assert_line(md,
		    "GPU records not in these figures: ring_dropped 2, cupti_dropped 3, lost 4, "
		    "invalid 5, unknown_kinds 6, names_lost 7.");
	assert_line(md, "1 piece of GPU work had no launch call record: counted in busy time, in "
			"no step or bucket.");
	assert_no_substr(md, "CUPTI conflict");
	assert_no_substr(md, "No GPU stream");
	assert_no_substr(md, "memory bound");
	free(md);
	pt_gpu__free(g);
}

/* The memory bound's records late and not held are said, never silent. */
static void test_gpu_bound_said(void **state)
{
	struct pt_gpu *g = gpu_feed(true);
	struct pt_gpu_result r;
	char *md;

	r = *pt_gpu__join(g, 0, 100 * MS);
	r.folds = 3;
	r.late = 2;
	r.not_held = 1;
	md = render_gpu(&r, &ginfo, NULL);
	assert_line(md, "2 GPU records came after the memory bound's fold had settled their "
			"time: in the counts, in no step or bucket.");
	assert_line(md, "1 GPU record was not held (the memory bound, no fold could free any): "
			"in no figure.");
	free(md);
	pt_gpu__free(g);
}

static void test_gpu_conflict(void **state)
{
	struct pt_gpu *g = gpu_feed(false);
	const struct pt_gpu_result *res = pt_gpu__join(g, 0, 100 * MS);
	struct pt_gpuring_info in = ginfo;
	char *md;

	/* BUG (user/gpu.c:440-442, 372, 405): joining no records at all calls
	 * qsort(NULL, 0, ...), undefined; the asan build aborts above. */
	assert_non_null(res);
	in.active = false;
	in.conflict_call = 4;  /* cuptiSubscribe */
	in.conflict_code = 39; /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
	in.ring_dropped = in.cupti_dropped = in.lost = in.skipped = in.unknown_kinds = 0;
	in.strtab_full = 0;
	md = render_gpu(res, &in, NULL);
	assert_line(md, "## GPU");
	/* nothing measured in steps: host-bound unknown, not 0 */
	assert_line(md, "| 0 | 0 | 0 | 0.000 | 0.0% | – | – |");
	assert_no_substr(md, "Per counted step");
	assert_line(md, "**CUPTI conflict:** cuptiSubscribe failed with CUPTI\\_ERROR\\_MULTIPLE\\_"
			"SUBSCRIBERS\\_NOT\\_SUPPORTED (another CUPTI client: torch.profiler, "
			"Nsight?) (another profiler such as Nsight Systems or torch.profiler holds "
			"CUPTI); the server ran on without GPU records.");
	assert_no_substr(md, "GPU records not in these figures");
	assert_no_substr(md, "had no launch call record");
	free(md);
	pt_gpu__free(g);
}

/* Issue 27: the ring's file truncated by the target's user is said, with
 * the figures of what was read before it. */
static void test_gpu_ring_lost(void **state)
{
	struct pt_gpu *g = gpu_feed(true);
	const struct pt_gpu_result *res = pt_gpu__join(g, 0, 100 * MS);
	char *md;

	glost = "a read of the CUPTI shim's ring faulted at +1.500s (its memory went from under "
		"us): proftrace stopped reading it, GPU records after that are missing";
	md = render_gpu(res, &ginfo, NULL);
	glost = NULL;
	assert_line(md, "**GPU ring lost:** a read of the CUPTI shim's ring faulted at +1.500s "
			"(its memory went from under us): proftrace stopped reading it, GPU "
			"records after that are missing.");
	assert_line(md, "## GPU");
	free(md);
	md = render_gpu(res, &ginfo, NULL);
	assert_no_substr(md, "GPU ring lost");
	free(md);
	pt_gpu__free(g);
}

static void test_gpu_none(void **state)
{
	char *md = render_gpu(NULL, NULL,
			      "no CUPTI shim in pid 4242 (start the server with "
			      "CUDA_INJECTION64_PATH)");

	assert_line(md, "## GPU");
	assert_line(md, "No GPU stream: no CUPTI shim in pid 4242 (start the server with "
			"CUDA\\_INJECTION64\\_PATH).");
	assert_no_substr(md, "| kernels |");
	assert_no_substr(md, "CUPTI conflict");
	free(md);
	md = render_gpu(NULL, NULL, NULL);
	assert_line(md, "No GPU stream: not read.");
	free(md);
	/* a summary without the gpu key (older files): no section */
	{
		cJSON *doc = load_fixture("full.json");

		md = render(doc);
		assert_no_substr(md, "## GPU");
		free(md);
		cJSON_Delete(doc);
	}
}

/* Several processes: the pooled line, the Processes table, the skew. */
static void test_processes_section(void **state)
{
	cJSON *doc = cJSON_Parse(
		"{\"meta\":{\"comm\":\"python3\",\"pid\":41,\"pids\":[41,42],"
		"\"children\":true,\"processes_skipped_total\":1},"
		"\"processes\":[{\"meta\":{\"pid\":41,\"rank\":0,\"comm\":\"python3\","
		"\"attached_at_s\":0,\"ended\":null},\"stats\":{\"steps\":10,"
		"\"steps_per_s\":5.5,\"mean_ms\":1.5,\"p50_ms\":1.25,\"p99_ms\":2}},"
		"{\"meta\":{\"pid\":42,\"rank\":null,\"comm\":\"w\",\"attached_at_s\":1.5,"
		"\"ended\":\"exec\",\"ended_at_s\":3},\"stats\":{\"steps\":4,"
		"\"steps_per_s\":2,\"mean_ms\":2,\"p50_ms\":2,\"p99_ms\":2}}],"
		"\"skew\":{\"processes\":2,\"steps_compared\":9,\"steps_not_compared\":1,"
		"\"mean_ms\":0.4,\"p50_ms\":0.4,\"p90_ms\":0.45,\"p99_ms\":0.5,"
		"\"max_ms\":0.5,\"share_of_slowest\":0.2,\"per_process\":[{\"pid\":41,"
		"\"rank\":0,\"steps\":10,\"slowest\":0,\"fastest\":9},{\"pid\":42,"
		"\"rank\":null,\"steps\":4,\"slowest\":9,\"fastest\":0}]}}");
	char *md;

	assert_non_null(doc);
	md = render(doc);
	assert_line(md, "**2 processes (--children: the named ones and their descendants)**: "
			"pids 41 42. The figures below pool them all (steps, buckets and "
			"functions of every process together); each one's own are under "
			"Processes and in summary.json `processes[]`. 1 descendant not traced "
			"(nothing the targets file names in it; see `meta.processes_skipped`).");
	assert_line(md, "## Processes");
	assert_line(md, "| 41 | 0 | `python3` | 0.000 | no | 10 | 5.500 | 1.500 | 1.250 | 2.000 |");
	assert_line(md, "| 42 | – | `w` | 1.500 | exec at 3.000 s | 4 | 2.000 | 2.000 | 2.000 | "
			"2.000 |");
	assert_line(md, "### Step-time skew across processes");
	assert_line(md, "Per step index where the processes' steps line up in time (9 compared, "
			"1 not): slowest minus fastest step time. Mean 0.400 ms · p50 0.400 · "
			"p90 0.450 · p99 0.500 · max 0.500 ms · 20.0% of the slowest process's "
			"step time.");
	assert_line(md, "| 42 | – | 4 | 9 | 0 |");
	free(md);
	/* no figures: why */
	cJSON_ReplaceItemInObject(doc, "skew",
				  cJSON_Parse("{\"processes\":2,\"steps_compared\":0,\"why\":"
					      "\"they do not run in lockstep\"}"));
	md = render(doc);
	assert_line(md, "Not measured: they do not run in lockstep.");
	free(md);
	cJSON_Delete(doc);
	/* one process: no such section */
	doc = load_fixture("full.json");
	md = render(doc);
	assert_no_substr(md, "## Processes");
	assert_no_substr(md, "pool them all");
	free(md);
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
		cmocka_unit_test(test_python_injected),
		cmocka_unit_test(test_full_health),
		cmocka_unit_test(test_no_dropped_no_warning),
		cmocka_unit_test(test_zero_steps),
		cmocka_unit_test(test_zero_steps_why),
		cmocka_unit_test(test_zero_steps_without_step_probe),
		cmocka_unit_test(test_exact_start_time_from_raw),
		cmocka_unit_test(test_missing_keys),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_sampling_absent),
		cmocka_unit_test(test_sampling_section),
		cmocka_unit_test(test_sampled_timing_rows),
		cmocka_unit_test(test_lost_samples_warning),
		cmocka_unit_test(test_host_steal_said),
		cmocka_unit_test(test_top_tens),
		cmocka_unit_test(test_lines_source_error_and_no_outputs),
		cmocka_unit_test(test_lines_never_sampled),
		cmocka_unit_test(test_sampling_wrong_types),
		cmocka_unit_test(test_bad_args_and_write_error),
		cmocka_unit_test(test_tokens_section),
		cmocka_unit_test(test_tokens_without_bins),
		cmocka_unit_test(test_tokens_absent),
		cmocka_unit_test(test_gpu_section),
		cmocka_unit_test(test_gpu_bound_said),
		cmocka_unit_test(test_gpu_conflict),
		cmocka_unit_test(test_gpu_ring_lost),
		cmocka_unit_test(test_gpu_none),
		cmocka_unit_test(test_processes_section),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
