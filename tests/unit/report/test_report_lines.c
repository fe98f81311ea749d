// SPDX-License-Identifier: BSD-2-Clause
/*
 * lines.txt from summaries built by hand: exact text, so that a moved
 * column, an invented hit count or a lost header line shows up as a
 * failure. The column layout is line_profiler 4's show_func
 * ('%6s %9s %12s %8s %8s' + our Samples '%8s' + '  %-s').
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

#include "report/report_lines.h"

static char *render(const cJSON *doc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(pt_report_lines__write(f, doc), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(buf);
	return buf;
}

#define assert_text(got, want)                                                                     \
	do {                                                                                       \
		if (strcmp(got, want)) {                                                           \
			/* cmocka cuts long messages: the texts go to stderr. */                   \
			fprintf(stderr, "--- got:\n%s--- want:\n%s", got, want);                   \
			fail_msg("lines.txt differs");                                             \
		}                                                                                  \
	} while (0)

#define assert_substr(text, s)                                                                     \
	do {                                                                                       \
		if (!strstr(text, s))                                                              \
			fail_msg("expected \"%s\" in:\n%s", s, text);                              \
	} while (0)

#define assert_no_substr(text, s)                                                                  \
	do {                                                                                       \
		if (strstr(text, s))                                                               \
			fail_msg("unexpected \"%s\" in:\n%s", s, text);                            \
	} while (0)

static void add_line(cJSON *arr, int line, const char *text, int samples, double wall, double on,
		     double off, double share)
{
	cJSON *l = cJSON_CreateObject();

	cJSON_AddNumberToObject(l, "line", line);
	if (text)
		cJSON_AddStringToObject(l, "text", text);
	else
		cJSON_AddNullToObject(l, "text");
	cJSON_AddNumberToObject(l, "samples", samples);
	cJSON_AddNumberToObject(l, "wall_ms", wall);
	cJSON_AddNumberToObject(l, "on_cpu_ms", on);
	cJSON_AddNumberToObject(l, "off_cpu_ms", off);
	cJSON_AddNumberToObject(l, "share", share);
	cJSON_AddItemToArray(arr, l);
}

/* work() of /srv/work.py, lines 3-8: two lines sampled on-CPU, one only
 * off-CPU (sleeping in a call made from it), three never sampled. */
static cJSON *add_work(cJSON *lines, const char *timing, bool source)
{
	cJSON *fn = cJSON_CreateObject(), *rows;

	cJSON_AddStringToObject(fn, "probe", "py:work::work");
	cJSON_AddStringToObject(fn, "file", "/srv/work.py");
	cJSON_AddStringToObject(fn, "function", "work");
	cJSON_AddNumberToObject(fn, "first_line", 3);
	cJSON_AddNumberToObject(fn, "last_line", 8);
	cJSON_AddStringToObject(fn, "timing", timing);
	if (!strcmp(timing, "exact")) {
		cJSON_AddNumberToObject(fn, "calls", 10);
		cJSON_AddNumberToObject(fn, "exact_total_ms", 1234.5);
	} else {
		cJSON_AddNullToObject(fn, "calls");
		cJSON_AddNullToObject(fn, "exact_total_ms");
	}
	cJSON_AddNumberToObject(fn, "samples", 12);
	cJSON_AddNumberToObject(fn, "wall_ms", 170);
	cJSON_AddNumberToObject(fn, "on_cpu_ms", 120);
	cJSON_AddNumberToObject(fn, "off_cpu_ms", 50);
	cJSON_AddNumberToObject(fn, "share", 0.085);
	if (source)
		cJSON_AddNullToObject(fn, "source_error");
	else
		cJSON_AddStringToObject(fn, "source_error",
					"cannot open /srv/work.py: No such file or directory");
	rows = cJSON_AddArrayToObject(fn, "lines");
	add_line(rows, 3, source ? "def work(n):" : NULL, 0, 0, 0, 0, 0);
	add_line(rows, 4, source ? "    s = 0" : NULL, 0, 0, 0, 0, 0);
	add_line(rows, 5, source ? "" : NULL, 0, 0, 0, 0, 0);
	add_line(rows, 6, source ? "    for i in range(n):" : NULL, 2, 20, 20, 0, 0.117647);
	add_line(rows, 7, source ? "        s += i * i" : NULL, 10, 100, 100, 0, 0.588235);
	add_line(rows, 8, source ? "    time.sleep(0.05)" : NULL, 0, 50, 0, 50, 0.294118);
	cJSON_AddItemToArray(lines, fn);
	return fn;
}

static cJSON *sampled_doc(unsigned int lost)
{
	cJSON *doc = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(doc, "meta");
	cJSON *s = cJSON_AddObjectToObject(meta, "sampling"), *out;

	cJSON_AddNumberToObject(meta, "duration_s", 2);
	cJSON_AddNumberToObject(s, "hz", 100);
	cJSON_AddNumberToObject(s, "period_ns", 10000000);
	cJSON_AddStringToObject(s, "mechanism",
				"perf cpu-clock per thread + sched_switch (off-CPU)");
	cJSON_AddArrayToObject(s, "threads");
	cJSON_AddNumberToObject(s, "samples", 150);
	cJSON_AddNumberToObject(s, "on_cpu_ms", 1500);
	cJSON_AddNumberToObject(s, "off_cpu_ms", 500);
	cJSON_AddNumberToObject(s, "off_cpu_intervals", 7);
	cJSON_AddNumberToObject(s, "wall_ms", 2000);
	cJSON_AddNumberToObject(s, "python_samples", 140);
	cJSON_AddNumberToObject(s, "no_python_frames", 4);
	cJSON_AddNumberToObject(s, "not_python_thread", 6);
	cJSON_AddNumberToObject(s, "truncated_stacks", 1);
	cJSON_AddNumberToObject(s, "unreadable_stacks", 2);
	cJSON_AddNumberToObject(s, "unknown_frames", 3);
	cJSON_AddNumberToObject(s, "lost_samples", lost);
	cJSON_AddNumberToObject(s, "threads_sampled", 2);
	cJSON_AddNumberToObject(s, "threads_failed", 0);
	out = cJSON_AddObjectToObject(s, "outputs");
	cJSON_AddStringToObject(out, "folded", "stacks.folded");
	cJSON_AddStringToObject(out, "svg", "flame.svg");
	cJSON_AddArrayToObject(doc, "lines");
	return doc;
}

static cJSON *lines_of(cJSON *doc)
{
	return cJSON_GetObjectItemCaseSensitive(doc, "lines");
}

#define HEADER                                                                                     \
	"Line #      Hits         Time  Per Hit   % Time  Samples  Line Contents\n"                \
	"=======================================================================\n"

#define FOOTER                                                                                     \
	"Sampling: 100 Hz, perf cpu-clock per thread + sched_switch (off-CPU); 150 on-CPU "        \
	"samples, 7 off-CPU intervals; 2 threads sampled, 0 failed\n"                              \
	"Lost samples: 0, unreadable stacks: 2, truncated stacks: 1, unknown frames: 3\n"

#define TIME_LINE                                                                                  \
	"Time = sampled wall time (on-CPU + off-CPU) at 100 Hz, 12 samples; on-CPU 0.12 s, "       \
	"off-CPU 0.05 s\n"

/* Hits and Per Hit blank on every row; unsampled lines blank throughout;
 * the off-CPU-only line keeps its time with 0 samples. */
#define WORK_ROWS                                                                                  \
	"     3                                                    def work(n):\n"                 \
	"     4                                                        s = 0\n"                    \
	"     5                                                    \n"                             \
	"     6                20000.0              11.8        2      for i in range(n):\n"       \
	"     7               100000.0              58.8       10          s += i * i\n"           \
	"     8                50000.0              29.4        0      time.sleep(0.05)\n"

static void test_exact(void **state)
{
	cJSON *doc = sampled_doc(0);
	char *txt;

	add_work(lines_of(doc), "exact", true);
	txt = render(doc);
	assert_text(txt, "Timer unit: 1e-06 s\n"
			 "\n"
			 "Total time: 0.17 s\n"
			 "File: /srv/work.py\n"
			 "Function: work at line 3\n" TIME_LINE
			 "Calls: 10 (exact), exact total 1.2345 s\n"
			 "\n" HEADER WORK_ROWS "\n" FOOTER);
	free(txt);
	cJSON_Delete(doc);
}

/* Not counted exactly: no call count is shown, and the header says why. */
static void test_sampled_header(void **state)
{
	cJSON *doc = sampled_doc(0), *py;
	char *txt;

	add_work(lines_of(doc), "sampled", true);
	txt = render(doc);
	assert_substr(txt, "\nFunction: work at line 3\n" TIME_LINE
			   "Calls: not counted (this function is not timed exactly; its time is "
			   "sampled only)\n\n" HEADER);
	assert_substr(txt, WORK_ROWS);
	assert_no_substr(txt, "(exact)");
	free(txt);

	/* The interpreter's reason, when there is one. */
	py = cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(doc, "meta"), "python");
	cJSON_AddStringToObject(py, "timing", "c-entry-only");
	cJSON_AddStringToObject(py, "why", "the perf trampoline was not active");
	txt = render(doc);
	assert_substr(txt, "\nCalls: not counted (Python calls are timed c-entry-only here: the "
			   "perf trampoline was not active; its time is sampled only)\n");
	free(txt);
	cJSON_Delete(doc);
}

static void test_source_error(void **state)
{
	cJSON *doc = sampled_doc(0);
	char *txt;

	add_work(lines_of(doc), "exact", false);
	txt = render(doc);
	assert_substr(txt, "Calls: 10 (exact), exact total 1.2345 s\n"
			   "Source unavailable: cannot open /srv/work.py: No such file or "
			   "directory\n"
			   "\n" HEADER "     3                                                    "
			   "<source unavailable>\n"
			   "     4                                                    "
			   "<source unavailable>\n"
			   "     5                                                    "
			   "<source unavailable>\n"
			   "     6                20000.0              11.8        2  "
			   "<source unavailable>\n"
			   "     7               100000.0              58.8       10  "
			   "<source unavailable>\n"
			   "     8                50000.0              29.4        0  "
			   "<source unavailable>\n"
			   "\n");
	free(txt);
	cJSON_Delete(doc);
}

/* One "Timer unit" for the file, one block per function, then the footer. */
static void test_two_functions(void **state)
{
	cJSON *doc = sampled_doc(0), *fn;
	char *txt;
	const char *second;

	add_work(lines_of(doc), "exact", true);
	fn = add_work(lines_of(doc), "sampled", true);
	cJSON_ReplaceItemInObjectCaseSensitive(fn, "function", cJSON_CreateString("Work.again"));
	txt = render(doc);
	assert_int_equal(strncmp(txt, "Timer unit: 1e-06 s\n\nTotal time: 0.17 s\n", 40), 0);
	assert_ptr_equal(strstr(txt + 1, "Timer unit"), NULL);
	second = strstr(txt, "\n\nTotal time: 0.17 s\nFile: /srv/work.py\nFunction: Work.again "
			     "at line 3\n");
	assert_non_null(second);
	assert_non_null(strstr(second, WORK_ROWS));
	assert_int_equal(strcmp(txt + strlen(txt) - strlen("\n" FOOTER), "\n" FOOTER), 0);
	free(txt);
	cJSON_Delete(doc);
}

static void test_lost_samples_warning(void **state)
{
	cJSON *doc = sampled_doc(5);
	char *txt;

	add_work(lines_of(doc), "exact", true);
	txt = render(doc);
	assert_substr(txt, "\nLost samples: 5, unreadable stacks: 2, truncated stacks: 1, unknown "
			   "frames: 3\n"
			   "Warning: 5 samples were lost (ring buffer full): sampled times are too "
			   "low; raise `set ringbuf_mb` or lower `set sample_hz`.\n");
	free(txt);
	cJSON_Delete(doc);
}

static void test_no_lines(void **state)
{
	cJSON *doc = sampled_doc(0);
	char *txt = render(doc);

	assert_text(txt, "No line timings: no `lines` directive in the targets file selected a "
			 "function.\n\n" FOOTER);
	free(txt);

	/* Missing altogether reads the same. */
	cJSON_DeleteItemFromObjectCaseSensitive(doc, "lines");
	txt = render(doc);
	assert_text(txt, "No line timings: no `lines` directive in the targets file selected a "
			 "function.\n\n" FOOTER);
	free(txt);
	cJSON_Delete(doc);
}

static void test_sampling_off(void **state)
{
	static const char off[] = "No line timings: they come from stack sampling, which was off "
				  "in this run (`set sample_hz 0`).\n";
	cJSON *doc = sampled_doc(0), *empty = cJSON_CreateObject();
	char *txt;

	add_work(lines_of(doc), "exact", true);
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "meta"),
					       "sampling", cJSON_CreateNull());
	txt = render(doc);
	assert_text(txt, off);
	free(txt);
	txt = render(empty);
	assert_text(txt, off);
	free(txt);
	cJSON_Delete(empty);
	cJSON_Delete(doc);
}

/* Wrong types and missing keys: "–" where a figure is missing, elements
 * that are not objects skipped, never a crash or a made-up 0. */
static void test_wrong_types(void **state)
{
	static const char text[] =
		"{\"meta\": {\"sampling\": {\"hz\": \"100\", \"lost_samples\": null}}, "
		"\"lines\": [1, null, {\"function\": 7, \"lines\": [null, 3, {}, "
		"{\"line\": 9, \"samples\": 2, \"text\": 5}, {\"line\": 10, \"samples\": 0}]}, "
		"{\"timing\": \"exact\", \"lines\": {}}]}";
	cJSON *doc = cJSON_Parse(text);
	char *txt;

	assert_non_null(doc);
	txt = render(doc);
	assert_text(txt,
		    "Timer unit: 1e-06 s\n"
		    "\n"
		    "Total time: – s\n"
		    "File: –\n"
		    "Function: – at line –\n"
		    "Time = sampled wall time (on-CPU + off-CPU) at – Hz, – samples; on-CPU – s, "
		    "off-CPU – s\n"
		    "Calls: –\n"
		    "\n" HEADER "     –                      –                 –        –  "
		    "<source unavailable>\n"
		    "     9                      –                 –        2  "
		    "<source unavailable>\n"
		    "    10                                                    "
		    "<source unavailable>\n"
		    "\n"
		    "Total time: – s\n"
		    "File: –\n"
		    "Function: – at line –\n"
		    "Time = sampled wall time (on-CPU + off-CPU) at – Hz, – samples; on-CPU – s, "
		    "off-CPU – s\n"
		    "Calls: – (exact), exact total – s\n"
		    "\n" HEADER "\n"
		    "Sampling: – Hz, –; – on-CPU samples, – off-CPU intervals; – threads sampled, "
		    "– failed\n"
		    "Lost samples: –, unreadable stacks: –, truncated stacks: –, unknown frames: "
		    "–\n");
	free(txt);
	cJSON_Delete(doc);
}

/* Builders write exact integers as raw text (summary.c). */
static void test_raw_numbers(void **state)
{
	cJSON *doc = sampled_doc(0), *fn;
	char *txt;

	fn = add_work(lines_of(doc), "exact", true);
	cJSON_ReplaceItemInObjectCaseSensitive(fn, "calls", cJSON_CreateRaw("18446744073709551"));
	txt = render(doc);
	assert_substr(txt, "\nCalls: 18446744073709551 (exact), exact total 1.2345 s\n");
	free(txt);
	cJSON_Delete(doc);
}

static void test_bad_args_and_write_error(void **state)
{
	cJSON *doc = sampled_doc(0);
	FILE *ro;

	assert_int_equal(pt_report_lines__write(NULL, doc), -EINVAL);
	assert_int_equal(pt_report_lines__write(stdout, NULL), -EINVAL);
	ro = fopen("/dev/null", "r");
	assert_non_null(ro);
	assert_int_equal(pt_report_lines__write(ro, doc), -EIO);
	fclose(ro);
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_sampled_header),
		cmocka_unit_test(test_source_error),
		cmocka_unit_test(test_two_functions),
		cmocka_unit_test(test_lost_samples_warning),
		cmocka_unit_test(test_no_lines),
		cmocka_unit_test(test_sampling_off),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_raw_numbers),
		cmocka_unit_test(test_bad_args_and_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
