// SPDX-License-Identifier: BSD-2-Clause
/* Regions into trace.json and summary.json: kernels found, regions on
 * their kernel's stream track (lanes for overlapping ones), clamped when
 * outside, an earlier import replaced, big integers kept exact. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report/regions_out.h"

/* Two kernels on stream 7 of GPU 0, one on stream 9; t0_mono past 2^53. */
/* clang-format off */
static const char TRACE[] =
	"{\"traceEvents\":[\n"
	"{\"ph\":\"M\",\"pid\":1500000000,\"name\":\"process_name\",\"args\":{\"name\":\"GPU 0\"}},\n"
	"{\"ph\":\"X\",\"pid\":1500000000,\"tid\":7,\"ts\":10.000,\"dur\":100.000,\"name\":\"gemm\","
	"\"cat\":\"kernel\",\"args\":{\"correlation\":5,\"device\":0,\"stream\":7}},\n"
	"{\"ph\":\"X\",\"pid\":1500000000,\"tid\":9,\"ts\":-5.500,\"dur\":10.000,\"name\":\"attn\","
	"\"cat\":\"kernel\",\"args\":{\"correlation\":6,\"device\":0,\"stream\":9}},\n"
	"{\"ph\":\"X\",\"pid\":1500000000,\"tid\":7,\"ts\":200.000,\"dur\":100.000,\"name\":\"gemm\","
	"\"cat\":\"kernel\",\"args\":{\"correlation\":8,\"device\":0,\"stream\":7}},\n"
	"{\"ph\":\"X\",\"pid\":44,\"tid\":44,\"ts\":1.000,\"dur\":400.000,\"name\":\"step\","
	"\"cat\":\"native\"}\n"
	"],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"tool\":\"proftrace\","
	"\"t0_mono_ns\":12345678901234567,\"start_unix_ns\":1764115200123456789}}\n";
/* clang-format on */

static cJSON *parse(void)
{
	cJSON *j = pt_regions_out__parse_json(TRACE, strlen(TRACE), true);

	assert_non_null(j);
	return j;
}

static void set_init(struct pt_region_set *s)
{
	pt_regionfile__init(s);
	s->tags = calloc(3, sizeof(*s->tags));
	s->tags[0] = strdup("load");
	s->tags[1] = strdup("mma");
	s->tags[2] = strdup("whole");
	s->ntags = 3;
}

static struct pt_region_launch *add(struct pt_region_set *s, const char *kernel, int64_t launch)
{
	struct pt_region_launch *l;

	s->l = realloc(s->l, (s->nl + 1) * sizeof(*s->l));
	l = &s->l[s->nl++];
	memset(l, 0, sizeof(*l));
	l->kernel = strdup(kernel);
	l->launch = launch;
	l->source = strdup("f.bin");
	l->clock = PT_REGIONS_GPU_CLOCK;
	return l;
}

static void ev(struct pt_region_launch *l, uint64_t start, uint64_t dur, uint32_t tag, int64_t tid)
{
	l->ev = realloc(l->ev, (l->nev + 1) * sizeof(*l->ev));
	l->ev[l->nev++] = (struct pt_region){ start, dur, tag, tid };
}

#define G 7000000000ull /* GPU ns at trace ts 0 */

static const cJSON *find(const cJSON *evs, const char *cat, const char *name, double ts)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, evs)
	{
		const cJSON *c = cJSON_GetObjectItem(e, "cat"), *n = cJSON_GetObjectItem(e, "name");
		const cJSON *t = cJSON_GetObjectItem(e, "ts");
		double tv = cJSON_IsRaw(t) ? strtod(t->valuestring, NULL) : t ? t->valuedouble : -1;

		if (c && !strcmp(c->valuestring, cat) && !strcmp(n->valuestring, name) && tv == ts)
			return e;
	}
	return NULL;
}

static double numv(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItem(o, k);

	return cJSON_IsRaw(it) ? strtod(it->valuestring, NULL) : it->valuedouble;
}

static void test_merge(void **state)
{
	struct pt_regions_result res;
	struct pt_rtrace_stats st;
	struct pt_region_set s;
	struct pt_region_launch *l;
	struct pt_rtrace t;
	cJSON *doc = parse(), *evs;
	const cJSON *e, *prev = NULL;
	char err[128];

	set_init(&s);
	/* gemm launch 0 [10, 110] us: "whole" pins the offset, two warps
	 * whose loads overlap (a second lane), mma nested in a load */
	l = add(&s, "gemm", -1);
	ev(l, G + 10000, 100000, 2, 0);
	ev(l, G + 20000, 30000, 0, 0);
	ev(l, G + 25000, 30000, 0, 1);
	ev(l, G + 30000, 5000, 1, 0);
	/* attn (ts -5.5 us, before attach) */
	l = add(&s, "attn", -1);
	ev(l, G - 5500, 10000, 2, 0);
	/* gemm launch 1: nothing fits it on the offset the others want: its
	 * own offset, and still 1 us longer than the kernel (clamped) */
	l = add(&s, "gemm", 1);
	ev(l, G + 500000, 101000, 2, 0);
	assert_int_equal(pt_rtrace__open(&t, doc, err, sizeof(err)), 0);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.t0_mono_ns, 12345678901234567ll);
	assert_int_equal(pt_regionmatch__match(&s, NULL, t.spans, t.n, &res), 0);
	assert_int_equal(res.launches_matched, 3);
	assert_false(res.global);
	assert_int_equal(res.residual_max_ns, 500);
	assert_int_equal(pt_rtrace__merge(&t, &s, &res, &st), 0);
	assert_int_equal(st.written, 6);
	assert_int_equal(st.lanes, 2);
	assert_int_equal(st.clamped, 1);
	evs = cJSON_GetObjectItem(doc, "traceEvents");
	/* lane 0: the stream track; the second warp's load on lane 1 */
	e = find(evs, "region", "load", 20.0);
	assert_non_null(e);
	assert_int_equal(numv(e, "tid"), 7);
	assert_int_equal(numv(e, "pid"), 1500000000);
	assert_int_equal(numv(cJSON_GetObjectItem(e, "args"), "lane"), 0);
	assert_int_equal(numv(cJSON_GetObjectItem(e, "args"), "correlation"), 5);
	e = find(evs, "region", "load", 25.0);
	assert_non_null(e);
	assert_int_equal(numv(e, "tid"), 1000000000 + 1000000 + 7);
	e = find(evs, "region_kernel", "gemm", 10.0);
	assert_non_null(e);
	assert_int_equal(numv(e, "tid"), 1000000000 + 1000000 + 7);
	assert_int_equal(numv(e, "dur"), 100.0);
	e = find(evs, "region", "mma", 30.0);
	assert_non_null(e);
	assert_int_equal(numv(e, "tid"), 7);
	e = find(evs, "region", "whole", -5.5);
	assert_non_null(e);
	assert_int_equal(numv(e, "tid"), 9);
	/* clamped into [200, 300] */
	e = find(evs, "region", "whole", 200.0);
	assert_non_null(e);
	assert_int_equal(numv(e, "dur"), 100.0);
	assert_int_equal(numv(cJSON_GetObjectItem(e, "args"), "outside_ns"), 500);
	/* sorted: metadata first, then by ts, the enclosing first */
	cJSON_ArrayForEach(e, evs)
	{
		const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;

		if (!strcmp(ph, "M")) {
			assert_null(prev);
			continue;
		}
		if (prev)
			assert_true(numv(prev, "ts") < numv(e, "ts") ||
				    (numv(prev, "ts") == numv(e, "ts") &&
				     numv(prev, "dur") >= numv(e, "dur")));
		prev = e;
	}
	/* summary: offsets on CLOCK_MONOTONIC */
	{
		cJSON *sum = cJSON_Parse("{\"gpu\": {\"regions\": 1}}"), *g;
		const char *files[] = { "f.bin" };
		const cJSON *al, *c;

		assert_int_equal(
			pt_regions_out__add_summary(sum, &s, &res, &st, t.t0_mono_ns, files, 1), 0);
		g = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "gpu"), "regions");
		assert_int_equal(numv(g, "launches_matched"), 3);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "tags")), 4);
		al = cJSON_GetObjectItem(g, "alignment");
		assert_string_equal(cJSON_GetObjectItem(al, "mode")->valuestring, "per_launch");
		c = cJSON_GetArrayItem(cJSON_GetObjectItem(al, "clocks"), 0);
		assert_string_equal(cJSON_GetObjectItem(c, "mode")->valuestring, "per_launch");
		/* the median offset is -G; on CLOCK_MONOTONIC: t0 - G */
		assert_string_equal(cJSON_GetObjectItem(c, "offset_ns")->valuestring,
				    "12345671901234567");
		assert_int_equal(pt_regions_out__add_summary(evs, &s, &res, &st, 0, files, 1),
				 -EINVAL);
		cJSON_Delete(sum);
	}
	pt_regionmatch__result_free(&res);
	pt_rtrace__free(&t);

	/* again: the earlier import is taken out, nothing doubles */
	assert_int_equal(pt_rtrace__open(&t, doc, err, sizeof(err)), 0);
	assert_int_equal(t.removed, 6 + 1 + 1); /* regions, the lane's kernel and its name */
	assert_int_equal(t.n, 3);
	pt_rtrace__free(&t);
	cJSON_Delete(doc);
	pt_regionfile__free(&s);
}

static void test_write_exact(void **state)
{
	cJSON *doc = parse();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cJSON *back;

	assert_int_equal(pt_rtrace__write(f, doc), 0);
	fclose(f);
	assert_non_null(strstr(buf, "\"start_unix_ns\":1764115200123456789"));
	assert_non_null(strstr(buf, "\"ts\":-5.500,")); /* as it was */
	assert_non_null(strstr(buf, "{\"traceEvents\":[\n{"));
	back = cJSON_Parse(buf);
	assert_non_null(back);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(back, "traceEvents")), 5);
	cJSON_Delete(back);
	free(buf);
	cJSON_Delete(doc);
	/* strings that look like numbers, escapes, numbers in strings */
	{
		static const char txt[] = "{\"a\":\"x\\\"1234567890123456789\",\"b\":"
					  "-1234567890123456789,\"c\":1.5e300,\"d\":"
					  "[12345678901234567]}";

		doc = pt_regions_out__parse_json(txt, strlen(txt), false);
	}
	assert_non_null(doc);
	assert_string_equal(cJSON_GetObjectItem(doc, "a")->valuestring, "x\"1234567890123456789");
	assert_true(cJSON_IsRaw(cJSON_GetObjectItem(doc, "b")));
	assert_string_equal(cJSON_GetObjectItem(doc, "b")->valuestring, "-1234567890123456789");
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(doc, "c")));
	assert_true(cJSON_IsRaw(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "d"), 0)));
	cJSON_Delete(doc);
	assert_null(pt_regions_out__parse_json("{", 1, false));
}

/* A C++ kernel: trace.json's name is demangled, args.mangled CUPTI's
 * name; the span has both for matching. */
static void test_mangled_span(void **state)
{
	cJSON *doc = cJSON_Parse(
		"{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 1500000000, \"tid\": 7, "
		"\"ts\": 1, \"dur\": 2, \"name\": \"void ns::k<4>(float*)\", \"cat\": \"kernel\", "
		"\"args\": {\"correlation\": 5, \"mangled\": \"_ZN2ns1kILi4EEEvPf\"}}, "
		"{\"ph\": \"X\", \"pid\": 1500000000, \"tid\": 7, \"ts\": 5, \"dur\": 2, "
		"\"name\": \"gemm\", \"cat\": \"kernel\", \"args\": {\"correlation\": 6}}], "
		"\"otherData\": {\"tool\": \"proftrace\"}}");
	struct pt_rtrace t;
	char err[128] = "";

	assert_non_null(doc);
	assert_int_equal(pt_rtrace__open(&t, doc, err, sizeof(err)), 0);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.spans[0].name, "void ns::k<4>(float*)");
	assert_string_equal(t.spans[0].mangled, "_ZN2ns1kILi4EEEvPf");
	assert_null(t.spans[1].mangled);
	pt_rtrace__free(&t);
	cJSON_Delete(doc);
}

static void test_not_ours(void **state)
{
	cJSON *doc = cJSON_Parse("{\"traceEvents\": [], \"otherData\": {\"tool\": \"other\"}}");
	struct pt_rtrace t;
	char err[128] = "";

	assert_int_equal(pt_rtrace__open(&t, doc, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "proftrace"));
	pt_rtrace__free(&t);
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_write_exact),
		cmocka_unit_test(test_mangled_span),
		cmocka_unit_test(test_not_ours),
	};

	return cmocka_run_group_tests_name("regions_out", tests, NULL, NULL);
}
