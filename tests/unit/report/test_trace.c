// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_trace: events in, trace.json out, parsed back with cJSON. Times are
 * CLOCK_MONOTONIC ns around T0 so that every expected ts is exact.
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

#include "report/trace.h"
#include "aggregate/agg.h"
#include "gpu/gpuring.h"

#define PID 4242
#define TID 4243
#define T0 1000000000000ull

static const char *const bnames[] = { "engine.schedule", "engine.forward", "model.layer" };

static const struct pt_trace_proc one_proc = { .pid = PID, .name = "engine", .rank = -1 };

/* Write t for processes procs and parse it; *text keeps the file's bytes. */
static cJSON *render_procs(struct pt_trace *t, const struct pt_trace_proc *procs, size_t nprocs,
			   char **text)
{
	struct pt_trace_write_opts o = { .procs = procs,
					 .nprocs = nprocs,
					 .t0 = T0,
					 .start_unix_ns = 1700000000000000000ull,
					 .version = "test",
					 .bucket_names = bnames };
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	cJSON *doc;

	assert_non_null(f);
	assert_int_equal(pt_trace__write(t, f, &o), 0);
	assert_int_equal(fclose(f), 0);
	doc = cJSON_ParseWithLength(*text, len);
	if (!doc)
		fail_msg("not JSON near: %.80s", cJSON_GetErrorPtr());
	return doc;
}

static cJSON *render(struct pt_trace *t, char **text)
{
	return render_procs(t, &one_proc, 1, text);
}

static const cJSON *events(const cJSON *doc)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");

	assert_true(cJSON_IsArray(a));
	return a;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v))
		fail_msg("no number \"%s\"", k);
	return v->valuedouble;
}

static bool is(const cJSON *e, const char *ph)
{
	return str(e, "ph") && !strcmp(str(e, "ph"), ph);
}

static size_t count_ph(const cJSON *doc, const char *ph)
{
	const cJSON *e;
	size_t n = 0;

	cJSON_ArrayForEach(e, events(doc)) n += is(e, ph);
	return n;
}

/* The n-th (0-based) event of phase ph named name (NULL: any name). */
static const cJSON *find(const cJSON *doc, const char *ph, const char *name, int n)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events(doc))
	{
		if (!is(e, ph) || (name && (!str(e, "name") || strcmp(str(e, "name"), name))))
			continue;
		if (n-- == 0)
			return e;
	}
	return NULL;
}

/* The thread_name M event of (pid, tid). */
static const char *thread_name(const cJSON *doc, double pid, double tid)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events(doc))
	{
		if (is(e, "M") && !strcmp(str(e, "name"), "thread_name") && num(e, "pid") == pid &&
		    num(e, "tid") == tid)
			return str(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
	}
	return NULL;
}

static const cJSON *other(const cJSON *doc)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(doc, "otherData");

	assert_true(cJSON_IsObject(o));
	return o;
}

static void check_count(struct pt_trace *t, const cJSON *doc)
{
	struct pt_trace_stats st;

	pt_trace__stats(t, &st);
	assert_int_equal(cJSON_GetArraySize(events(doc)), st.events);
	assert_int_equal(num(other(doc), "events"), st.events);
}

static void test_empty(void **state)
{
	struct pt_trace *t = pt_trace__new(10, 0);
	char *text = NULL;
	cJSON *doc;

	assert_non_null(t);
	doc = render(t, &text);
	assert_string_equal(str(doc, "displayTimeUnit"), "ms");
	assert_int_equal(count_ph(doc, "M"), 1); /* the process name */
	assert_string_equal(
		str(cJSON_GetObjectItemCaseSensitive(find(doc, "M", "process_name", 0), "args"),
		    "name"),
		"engine");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(other(doc), "truncated")));
	assert_null(cJSON_GetObjectItemCaseSensitive(other(doc), "note"));
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
	pt_trace__free(NULL);
}

/* Calls arrive at their exit, inner first; the file has them by start
 * time, an enclosing slice before what it holds, with relative times. */
static void test_slices_nesting(void **state)
{
	struct pt_trace *t = pt_trace__new(100, 3);
	char *text = NULL;
	const cJSON *e, *a;
	cJSON *doc;

	/* step [1000, 9000) holds forward [1000, 8000) holds layer x2; the
	 * first layer starts with forward (equal bounds) */
	pt_trace__thread_name(t, TID, PID, "worker");
	assert_true(pt_trace__has_thread_name(t, TID));
	assert_false(pt_trace__has_thread_name(t, TID + 1));
	assert_int_equal(pt_trace__slice(t, TID, T0 + 1000, T0 + 3000, "model_layer", false, 4), 0);
	assert_int_equal(pt_trace__slice(t, TID, T0 + 4000, T0 + 7999, "model_layer", false, 4), 0);
	assert_int_equal(pt_trace__slice(t, TID, T0 + 1000, T0 + 8000, "engine_forward", false, 2),
			 0);
	assert_int_equal(pt_trace__slice(t, TID, T0 + 1000, T0 + 9000, "Engine.step", true, 0), 0);
	/* before t0: a negative ts */
	assert_int_equal(pt_trace__slice(t, TID + 1, T0 - 1500, T0 - 1, "early", false, 0), 0);
	doc = render(t, &text);

	assert_int_equal(count_ph(doc, "X"), 5);
	e = find(doc, "X", NULL, 0);
	assert_string_equal(str(e, "name"), "early");
	assert_true(num(e, "ts") == -1.5);
	assert_true(num(e, "dur") == 1.499);
	assert_int_equal(num(e, "tid"), TID + 1);
	assert_null(cJSON_GetObjectItemCaseSensitive(e, "args")); /* in no bucket */
	/* then by start, longest first among equal starts */
	assert_string_equal(str(find(doc, "X", NULL, 1), "name"), "Engine.step");
	assert_string_equal(str(find(doc, "X", NULL, 2), "name"), "engine_forward");
	assert_string_equal(str(find(doc, "X", NULL, 3), "name"), "model_layer");
	assert_string_equal(str(find(doc, "X", NULL, 4), "name"), "model_layer");
	e = find(doc, "X", "Engine.step", 0);
	assert_string_equal(str(e, "cat"), "python");
	assert_int_equal(num(e, "pid"), PID);
	assert_int_equal(num(e, "tid"), TID);
	assert_true(num(e, "ts") == 1.0);
	assert_true(num(e, "dur") == 8.0);
	e = find(doc, "X", "engine_forward", 0);
	assert_string_equal(str(e, "cat"), "native");
	a = cJSON_GetObjectItemCaseSensitive(e, "args");
	a = cJSON_GetObjectItemCaseSensitive(a, "buckets");
	assert_int_equal(cJSON_GetArraySize(a), 1);
	assert_string_equal(cJSON_GetArrayItem(a, 0)->valuestring, "engine.forward");
	e = find(doc, "X", "model_layer", 1);
	assert_true(num(e, "ts") == 4.0);
	assert_true(num(e, "dur") == 3.999);
	/* the text has 3 decimals, not a float's noise */
	assert_non_null(strstr(text, "\"ts\":4.000,\"dur\":3.999"));
	assert_non_null(strstr(text, "\"ts\":-1.500,\"dur\":1.499"));

	assert_string_equal(thread_name(doc, PID, TID), "worker");
	assert_string_equal(thread_name(doc, PID, TID + 1), "thread 4244"); /* never named */
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

static void test_escaping(void **state)
{
	static const struct {
		const char *in, *out;
	} names[] = {
		{ "say \"hi\"", "say \"hi\"" },
		{ "C:\\path\\x", "C:\\path\\x" },
		{ "tab\there\nnl\x01\x1f\x7f", "tab\there\nnl\x01\x1f\x7f" },
		{ "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\xa5",
		  "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\xa5" },
		/* not UTF-8: a lone continuation, a cut sequence, an overlong
		 * '/', a surrogate: each bad byte becomes U+FFFD */
		{ "a\x80z", "a\xef\xbf\xbdz" },
		{ "cut\xe6\x97", "cut\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "", "" },
	};
	size_t n = sizeof(names) / sizeof(names[0]);
	struct pt_trace *t = pt_trace__new(100, 0);
	char *text = NULL;
	cJSON *doc;

	for (size_t i = 0; i < n; i++)
		pt_trace__slice(t, TID, T0 + 1000 * (i + 1), T0 + 1000 * (i + 1) + 10, names[i].in,
				false, 0);
	pt_trace__thread_name(t, TID, PID, "we\"ird\\\n");
	doc = render(t, &text);
	for (size_t i = 0; i < n; i++) {
		const cJSON *e = find(doc, "X", NULL, (int)i);

		assert_non_null(e);
		assert_string_equal(str(e, "name"), names[i].out);
	}
	assert_string_equal(thread_name(doc, PID, TID), "we\"ird\\\n");
	assert_string_equal(thread_name(doc, PID, PT_TRACE_STEPS_TID + TID) ?: "none", "none");
	/* control characters never appear raw in the file */
	for (const char *p = text; *p; p++)
		assert_false((unsigned char)*p < 0x20 && *p != '\n');
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

static void test_steps(void **state)
{
	struct pt_trace *t = pt_trace__new(100, 3);
	uint64_t bns[3] = { 100, 700, 600 };
	struct pt_step s = { .index = 7,
			     .pid = PID,
			     .tid = TID,
			     .t_start = T0 + 2000,
			     .t_end = T0 + 3000,
			     .bucket_ns = bns,
			     .other_ns = 200,
			     .vmask = 1u << PT_VROLE_TOKENS | 1u << PT_VROLE_BATCH,
			     .val = { 16, 0, 4 } };
	const cJSON *e, *a, *b;
	char *text = NULL;
	cJSON *doc;

	pt_trace__thread_name(t, TID, PID, "engine");
	assert_int_equal(pt_trace__step(t, &s), 0);
	bns[1] = 0; /* copied: the aggregator reuses its array */
	s.index = 8;
	s.t_start = T0 + 3000;
	s.t_end = T0 + 5000;
	s.vmask = 0;
	assert_int_equal(pt_trace__step(t, &s), 0);
	doc = render(t, &text);
	e = find(doc, "X", "step 7", 0);
	assert_non_null(e);
	assert_string_equal(str(e, "cat"), "step");
	assert_int_equal(num(e, "tid"), PT_TRACE_STEPS_TID + TID);
	assert_true(num(e, "ts") == 2.0 && num(e, "dur") == 1.0);
	a = cJSON_GetObjectItemCaseSensitive(e, "args");
	assert_int_equal(num(a, "index"), 7);
	b = cJSON_GetObjectItemCaseSensitive(a, "bucket_ns");
	assert_int_equal(cJSON_GetArraySize(b), 4);
	assert_int_equal(num(b, "engine.schedule"), 100);
	assert_int_equal(num(b, "engine.forward"), 700);
	assert_int_equal(num(b, "model.layer"), 600);
	assert_int_equal(num(b, "step.other"), 200);
	assert_int_equal(num(a, "tokens"), 16);
	assert_int_equal(num(a, "batch"), 4);
	assert_null(cJSON_GetObjectItemCaseSensitive(a, "kv_len"));
	e = find(doc, "X", "step 8", 0);
	a = cJSON_GetObjectItemCaseSensitive(e, "args");
	b = cJSON_GetObjectItemCaseSensitive(a, "bucket_ns");
	assert_int_equal(num(b, "engine.forward"), 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(a, "tokens"));
	assert_string_equal(thread_name(doc, PID, PT_TRACE_STEPS_TID + TID), "engine steps");
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

static struct pt_gpu_rec api(uint32_t corr, uint64_t s, uint64_t e, uint32_t cbid)
{
	struct pt_gpu_rec r = {
		.kind = PT_GPU_API, .correlation_id = corr, .start_ns = s, .end_ns = e
	};

	r.api.cbid = cbid;
	r.api.tid = TID;
	r.api.pid = PID;
	return r;
}

static struct pt_gpu_rec kernel(uint32_t corr, uint64_t s, uint64_t e, const char *name)
{
	struct pt_gpu_rec r = {
		.kind = PT_GPU_KERNEL, .correlation_id = corr, .start_ns = s, .end_ns = e
	};

	r.kernel.name = name;
	r.kernel.device_id = 1;
	r.kernel.stream_id = 7;
	return r;
}

/* Every s has one f with its id and the other way round; s sits at its
 * API slice's start on the API track, f at its work's start. */
static void check_flows(const cJSON *doc, size_t want)
{
	const cJSON *s, *f, *e;
	size_t n = 0;

	cJSON_ArrayForEach(s, events(doc))
	{
		const cJSON *api = NULL, *work = NULL;

		if (!is(s, "s"))
			continue;
		n++;
		f = NULL;
		cJSON_ArrayForEach(e, events(doc))
		{
			if (is(e, "f") && num(e, "id") == num(s, "id")) {
				assert_null(f);
				f = e;
			}
		}
		assert_non_null(f);
		assert_string_equal(str(s, "cat"), str(f, "cat"));
		assert_string_equal(str(f, "bp"), "e");
		cJSON_ArrayForEach(e, events(doc))
		{
			if (!is(e, "X"))
				continue;
			if (num(e, "pid") == num(s, "pid") && num(e, "tid") == num(s, "tid") &&
			    num(e, "ts") == num(s, "ts"))
				api = e;
			if (num(e, "pid") == num(f, "pid") && num(e, "tid") == num(f, "tid") &&
			    num(e, "ts") == num(f, "ts"))
				work = e;
		}
		assert_non_null(api);
		assert_non_null(work);
		assert_string_equal(str(api, "cat"), "cuda_api");
		/* the id's low half: the correlation id, in every process */
		assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(api, "args"), "correlation"),
				 (uint64_t)num(s, "id") & 0xffffffffu);
		assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(work, "args"), "correlation"),
				 (uint64_t)num(s, "id") & 0xffffffffu);
	}
	assert_int_equal(n, want);
	assert_int_equal(count_ph(doc, "f"), want);
}

static void test_gpu_and_flows(void **state)
{
	struct pt_trace *t = pt_trace__new(100, 0);
	struct pt_gpu_rec r;
	const cJSON *e, *a;
	char *text = NULL;
	struct pt_trace_stats st;
	cJSON *doc;

	pt_trace__thread_name(t, TID, PID, "engine");
	/* 1: launch then kernel (the usual order: activity comes late) */
	r = api(1, T0 + 1000, T0 + 2000, 211);
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	r = kernel(1, T0 + 3000, T0 + 9000, "attn_fwd<\"half\">");
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	/* 2: a launch whose kernel never came */
	r = api(2, T0 + 10000, T0 + 11000, 211);
	pt_trace__api(t, &r, PID);
	/* 3: a kernel whose launch was not seen */
	r = kernel(3, T0 + 12000, T0 + 13000, NULL);
	pt_trace__gpu(t, &r, PID);
	/* 4: a copy first, then its call (a driver call, named) */
	r = (struct pt_gpu_rec){ .kind = PT_GPU_MEMCPY,
				 .correlation_id = 4,
				 .start_ns = T0 + 15000,
				 .end_ns = T0 + 16000 };
	r.memcpy.bytes = 1 << 20;
	r.memcpy.copy_kind = 1;
	r.memcpy.device_id = 1;
	r.memcpy.stream_id = 7;
	pt_trace__gpu(t, &r, PID);
	r = api(4, T0 + 14000, T0 + 14500, 279);
	r.api.driver = true;
	pt_trace__gpu(t, &r, PID);
	/* 5: a runtime call and the driver call under it share the id: the
	 * arrow starts at the outer one; an unknown cbid gets a number */
	r = api(5, T0 + 20000, T0 + 21000, 99999);
	r.api.driver = true;
	pt_trace__gpu(t, &r, PID);
	r = api(5, T0 + 19000, T0 + 22000, 211);
	pt_trace__gpu(t, &r, PID);
	r = (struct pt_gpu_rec){ .kind = PT_GPU_MEMSET,
				 .correlation_id = 5,
				 .start_ns = T0 + 23000,
				 .end_ns = T0 + 24000 };
	r.memset.bytes = 4096;
	r.memset.device_id = 0;
	r.memset.stream_id = 3;
	pt_trace__gpu(t, &r, PID);
	/* sync records are not drawn */
	r = (struct pt_gpu_rec){ .kind = PT_GPU_SYNC, .start_ns = T0, .end_ns = T0 + 1 };
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	pt_trace__stats(t, &st);
	assert_int_equal(st.flows, 3);
	assert_int_equal(st.kept, 9 + 6);
	doc = render(t, &text);

	check_flows(doc, 3);
	e = find(doc, "s", NULL, 2);
	assert_int_equal(num(e, "id"), 5);
	assert_true(num(e, "ts") == 19.0); /* the runtime call, not the driver call in it */
	e = find(doc, "X", "attn_fwd<\"half\">", 0);
	assert_non_null(e);
	assert_string_equal(str(e, "cat"), "kernel");
	assert_int_equal(num(e, "pid"), PT_TRACE_GPU_PID + 1);
	assert_int_equal(num(e, "tid"), 7);
	assert_non_null(find(doc, "X", "[unnamed kernel]", 0));
	e = find(doc, "X", "memcpy HtoD", 0);
	a = cJSON_GetObjectItemCaseSensitive(e, "args");
	assert_int_equal(num(a, "bytes"), 1 << 20);
	assert_string_equal(str(a, "kind"), "HtoD");
	assert_non_null(find(doc, "X", "memset", 0));
	assert_non_null(find(doc, "X", "cuMemcpyDtoHAsync_v2", 0));
	assert_non_null(find(doc, "X", "cuda driver cbid 99999", 0));
	e = find(doc, "X", "cudaLaunchKernel", 0);
	assert_int_equal(num(e, "tid"), PT_TRACE_API_TID + TID);
	assert_string_equal(thread_name(doc, PID, PT_TRACE_API_TID + TID), "engine CUDA API");
	assert_string_equal(thread_name(doc, PT_TRACE_GPU_PID + 1, 7), "stream 7");
	assert_string_equal(thread_name(doc, PT_TRACE_GPU_PID + 0, 3), "stream 3");
	e = find(doc, "M", "process_name", 1);
	assert_int_equal(num(e, "pid"), PT_TRACE_GPU_PID + 1);
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(e, "args"), "name"), "GPU 1");
	e = find(doc, "M", "process_name", 2);
	assert_int_equal(num(e, "pid"), PT_TRACE_GPU_PID + 0);
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(e, "args"), "name"), "GPU 0");
	assert_null(find(doc, "M", "process_name", 3));
	/* one process: flow ids are the correlation ids, no sort indices */
	assert_null(find(doc, "M", "process_sort_index", 0));
	assert_int_equal(num(find(doc, "s", NULL, 0), "id"), 1);
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	/* written twice: the same arrows */
	doc = render(t, &text);
	check_flows(doc, 3);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* The first max events are kept, the rest counted, and the file says so. */
static void test_truncation(void **state)
{
	struct pt_trace *t = pt_trace__new(5, 0);
	struct pt_trace_stats st;
	const cJSON *o, *e;
	char *text = NULL;
	cJSON *doc;

	for (int i = 0; i < 12; i++)
		assert_int_equal(pt_trace__slice(t, TID, T0 + 1000 * (uint64_t)i,
						 T0 + 1000 * (uint64_t)i + 500, "f", false, 0),
				 i < 5 ? 0 : -ENOSPC);
	pt_trace__stats(t, &st);
	assert_int_equal(st.kept, 5);
	assert_int_equal(st.dropped, 7);
	assert_int_equal(st.max_events, 5);
	assert_true(st.truncated);
	doc = render(t, &text);
	assert_int_equal(count_ph(doc, "X"), 5);
	o = other(doc);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "truncated")));
	assert_int_equal(num(o, "dropped"), 7);
	assert_int_equal(num(o, "max_events"), 5);
	assert_non_null(strstr(str(o, "note"), "--trace-max-events 5"));
	/* a global instant where the trace stops being whole */
	e = find(doc, "i", NULL, 0);
	assert_non_null(e);
	assert_string_equal(str(e, "s"), "g");
	assert_true(num(e, "ts") == 5.0);
	assert_non_null(strstr(str(e, "name"), "cut at 5 events"));
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* The bound keeps a time window: a record that arrives late (a GPU kernel
 * drained after later host slices) but started before the first event
 * dropped is still kept, in the bound's eighth more; events that started
 * after that are left out even if they had fit, so every kind is whole
 * up to the window's end. */
static void test_truncation_window(void **state)
{
	struct pt_trace *t = pt_trace__new(16, 0);
	struct pt_trace_stats st;
	struct pt_gpu_rec r;
	char *text = NULL;
	cJSON *doc;

	/* 16 host slices at 0, 1000, ... 15000: the bound */
	for (int i = 0; i < 16; i++)
		assert_int_equal(pt_trace__slice(t, TID, T0 + 1000 * (uint64_t)i,
						 T0 + 1000 * (uint64_t)i + 500, "f", false, 0),
				 0);
	/* the 17th, at 16000: dropped, the window ends there */
	assert_int_equal(pt_trace__slice(t, TID, T0 + 16000, T0 + 16500, "f", false, 0), -ENOSPC);
	/* a kernel from 2500 arrives late: inside the window, kept */
	r = kernel(1, T0 + 2500, T0 + 2600, "k");
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	/* one from 17000: after the window's end, dropped */
	r = kernel(2, T0 + 17000, T0 + 17100, "k");
	assert_int_equal(pt_trace__gpu(t, &r, PID), -ENOSPC);
	/* a long slice that started at 15500 and ends late: in the window */
	assert_int_equal(pt_trace__slice(t, TID + 1, T0 + 15500, T0 + 30000, "g", false, 0), 0);
	pt_trace__stats(t, &st);
	assert_int_equal(st.kept, 18);
	assert_int_equal(st.dropped, 2);
	assert_true(st.window_end_ns == T0 + 16000);
	doc = render(t, &text);
	assert_int_equal(count_ph(doc, "X"), 18);
	assert_true(num(other(doc), "window_end_us") == 16.0);
	assert_true(num(find(doc, "i", NULL, 0), "ts") == 16.0);
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* An arrow counts against the bound; with no room for it, none is drawn
 * (and none points at a slice that was dropped). */
static void test_flow_bound(void **state)
{
	struct pt_trace *t = pt_trace__new(3, 0);
	struct pt_trace_stats st;
	struct pt_gpu_rec r;
	char *text = NULL;
	cJSON *doc;

	r = api(1, T0 + 1000, T0 + 2000, 211);
	pt_trace__gpu(t, &r, PID);
	r = kernel(1, T0 + 3000, T0 + 4000, "k");
	pt_trace__gpu(t, &r, PID); /* kept, but the arrow does not fit: 2 + 2 > 3 */
	r = api(2, T0 + 5000, T0 + 6000, 211);
	pt_trace__gpu(t, &r, PID); /* kept: the third */
	r = kernel(2, T0 + 7000, T0 + 8000, "k");
	assert_int_equal(pt_trace__gpu(t, &r, PID), -ENOSPC);
	pt_trace__stats(t, &st);
	assert_int_equal(st.flows, 0);
	assert_int_equal(st.kept, 3);
	assert_int_equal(st.dropped, 3); /* the arrow (2 events) and the kernel */
	doc = render(t, &text);
	check_flows(doc, 0);
	assert_int_equal(count_ph(doc, "X"), 3);
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);

	/* room for exactly one slice pair and its arrow */
	t = pt_trace__new(4, 0);
	r = api(1, T0 + 1000, T0 + 2000, 211);
	pt_trace__gpu(t, &r, PID);
	r = kernel(1, T0 + 3000, T0 + 4000, "k");
	pt_trace__gpu(t, &r, PID);
	r = kernel(9, T0 + 5000, T0 + 6000, "k");
	assert_int_equal(pt_trace__gpu(t, &r, PID), -ENOSPC);
	pt_trace__stats(t, &st);
	assert_int_equal(st.flows, 1);
	assert_int_equal(st.kept, 4);
	doc = render(t, &text);
	check_flows(doc, 1);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* Many threads and many events: the tables grow, nothing is lost. */
static void test_many(void **state)
{
	struct pt_trace *t = pt_trace__new(100000, 0);
	struct pt_trace_stats st;
	char name[32];
	char *text = NULL;
	cJSON *doc;

	for (uint32_t tid = 1; tid <= 300; tid++) {
		snprintf(name, sizeof(name), "w%u", tid);
		if (tid % 2)
			pt_trace__thread_name(t, tid, PID, name);
		for (int i = 0; i < 50; i++)
			pt_trace__slice(t, tid, T0 + 100 * (uint64_t)i, T0 + 100 * (uint64_t)i + 50,
					"f", false, 0);
	}
	for (uint32_t c = 1; c <= 2000; c++) {
		struct pt_gpu_rec r = kernel(c, T0 + c * 10, T0 + c * 10 + 5, "k");

		pt_trace__gpu(t, &r, PID);
		r = api(c, T0 + c * 10 - 3, T0 + c * 10 - 1, 211);
		pt_trace__gpu(t, &r, PID);
	}
	pt_trace__stats(t, &st);
	assert_int_equal(st.flows, 2000);
	assert_int_equal(st.dropped, 0);
	doc = render(t, &text);
	assert_int_equal(count_ph(doc, "X"), 300 * 50 + 4000);
	assert_string_equal(thread_name(doc, PID, 299), "w299");
	assert_string_equal(thread_name(doc, PID, 298), "thread 298");
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* ---- several processes in one file ---- */

#define PID2 5151
#define TID2 5152

/* args.name of the process_name M event of pid (there is at most one). */
static const char *proc_name(const cJSON *doc, double pid)
{
	const char *name = NULL;
	const cJSON *e;

	cJSON_ArrayForEach(e, events(doc))
	{
		if (!is(e, "M") || strcmp(str(e, "name"), "process_name") || num(e, "pid") != pid)
			continue;
		assert_null(name);
		name = str(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
	}
	return name;
}

/* args.sort_index of the process_sort_index M event of pid, -1: none. */
static double sort_index(const cJSON *doc, double pid)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events(doc))
	{
		if (is(e, "M") && !strcmp(str(e, "name"), "process_sort_index") &&
		    num(e, "pid") == pid)
			return num(cJSON_GetObjectItemCaseSensitive(e, "args"), "sort_index");
	}
	return -1;
}

static size_t count_meta(const cJSON *doc, const char *name)
{
	const cJSON *e;
	size_t n = 0;

	cJSON_ArrayForEach(e, events(doc)) n += is(e, "M") && !strcmp(str(e, "name"), name);
	return n;
}

/* Threads of two processes: each thread's tracks under its own pid. */
static void test_procs_threads(void **state)
{
	static const struct pt_trace_proc procs[] = { { PID, "engine", 0 }, { PID2, "engine", 1 } };
	static const struct pt_trace_proc rev[] = { { PID2, "rank1", -1 }, { PID, NULL, 3 } };
	struct pt_trace *t = pt_trace__new(100, 0);
	struct pt_step st = {
		.index = 1, .pid = PID2, .tid = TID2, .t_start = T0 + 1000, .t_end = T0 + 4000
	};
	struct pt_gpu_rec r;
	const cJSON *e;
	char *text = NULL;
	cJSON *doc;

	assert_int_equal(pt_trace__thread_name(t, TID, PID, "w0"), 0);
	assert_int_equal(pt_trace__thread_name(t, TID2, PID2, "w1"), 0);
	assert_int_equal(pt_trace__slice(t, TID, T0 + 1000, T0 + 2000, "f0", false, 0), 0);
	assert_int_equal(pt_trace__slice(t, TID2, T0 + 1500, T0 + 2500, "f1", false, 0), 0);
	assert_int_equal(pt_trace__step(t, &st), 0);
	r = api(1, T0 + 1600, T0 + 1700, 211);
	r.api.tid = TID2;
	assert_int_equal(pt_trace__api(t, &r, PID2), 0);
	/* a thread seen only in a CUDA call goes under that call's pid, and
	 * is still to be named */
	r = api(2, T0 + 1800, T0 + 1900, 211);
	r.api.tid = 6000;
	assert_int_equal(pt_trace__gpu(t, &r, PID2), 0);
	assert_false(pt_trace__has_thread_name(t, 6000));
	/* named again without a pid: the new name, the pid known so far */
	assert_int_equal(pt_trace__thread_name(t, TID2, 0, "w1b"), 0);
	doc = render_procs(t, procs, 2, &text);

	e = find(doc, "X", "f0", 0);
	assert_int_equal(num(e, "pid"), PID);
	assert_int_equal(num(e, "tid"), TID);
	e = find(doc, "X", "f1", 0);
	assert_int_equal(num(e, "pid"), PID2);
	assert_int_equal(num(e, "tid"), TID2);
	e = find(doc, "X", "step 1", 0);
	assert_int_equal(num(e, "pid"), PID2);
	assert_int_equal(num(e, "tid"), PT_TRACE_STEPS_TID + TID2);
	e = find(doc, "X", "cudaLaunchKernel", 0);
	assert_int_equal(num(e, "pid"), PID2);
	assert_int_equal(num(e, "tid"), PT_TRACE_API_TID + TID2);
	e = find(doc, "X", "cudaLaunchKernel", 1);
	assert_int_equal(num(e, "pid"), PID2);
	assert_int_equal(num(e, "tid"), PT_TRACE_API_TID + 6000);

	assert_int_equal(count_meta(doc, "process_name"), 2);
	assert_string_equal(proc_name(doc, PID), "engine rank 0");
	assert_string_equal(proc_name(doc, PID2), "engine rank 1");
	assert_int_equal(count_meta(doc, "process_sort_index"), 2);
	assert_true(sort_index(doc, PID) == 0 && sort_index(doc, PID2) == 1);
	assert_string_equal(thread_name(doc, PID, TID), "w0");
	assert_string_equal(thread_name(doc, PID2, TID2), "w1b");
	assert_string_equal(thread_name(doc, PID2, PT_TRACE_STEPS_TID + TID2), "w1b steps");
	assert_string_equal(thread_name(doc, PID2, PT_TRACE_API_TID + TID2), "w1b CUDA API");
	assert_string_equal(thread_name(doc, PID2, PT_TRACE_API_TID + 6000),
			    "thread 6000 CUDA API");
	assert_null(thread_name(doc, PID, TID2));
	assert_int_equal(num(other(doc), "pid"), PID);
	assert_string_equal(str(other(doc), "comm"), "engine");
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);

	/* the order given is the sort order; no comm: "process" */
	doc = render_procs(t, rev, 2, &text);
	assert_string_equal(proc_name(doc, PID2), "rank1");
	assert_string_equal(proc_name(doc, PID), "process rank 3");
	assert_true(sort_index(doc, PID2) == 0 && sort_index(doc, PID) == 1);
	assert_int_equal(num(other(doc), "pid"), PID2);
	assert_int_equal(num(find(doc, "X", "f0", 0), "pid"), PID);
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

static struct pt_gpu_rec api_of(uint32_t corr, uint64_t s, uint32_t tid)
{
	struct pt_gpu_rec r = api(corr, s, s + 100, 211);

	r.api.tid = tid;
	return r;
}

static struct pt_gpu_rec kernel_on(uint32_t corr, uint64_t s, uint32_t dev, const char *name)
{
	struct pt_gpu_rec r = kernel(corr, s, s + 200, name);

	r.kernel.device_id = dev;
	return r;
}

/*
 * Two processes on their device 0, with the same correlation ids: two GPU
 * pseudo processes, and every arrow stays within its process.
 */
static void test_procs_gpu(void **state)
{
	static const struct pt_trace_proc procs[] = { { PID, "engine", 0 }, { PID2, "engine", 1 } };
	const double gpu1 = PT_TRACE_GPU_PID + 256, gpu2 = PT_TRACE_GPU_PID; /* PID2's came first */
	struct pt_trace *t = pt_trace__new(100, 0);
	const double want_ids[] = { 1, 2, 4294967297.0, 4294967298.0 };
	struct pt_trace_stats st;
	struct pt_gpu_rec r;
	const cJSON *s, *e;
	char *text = NULL;
	size_t nids = 0;
	double ids[8];
	cJSON *doc;

	pt_trace__thread_name(t, TID, PID, "r0");
	pt_trace__thread_name(t, TID2, PID2, "r1");
	/* correlation 1 in both; PID2's GPU work comes first */
	r = api_of(1, T0 + 1000, TID2);
	assert_int_equal(pt_trace__gpu(t, &r, PID2), 0);
	r = kernel_on(1, T0 + 1500, 0, "k1 of r1");
	assert_int_equal(pt_trace__gpu(t, &r, PID2), 0);
	r = api_of(1, T0 + 1100, TID);
	assert_int_equal(pt_trace__api(t, &r, PID), 0);
	r = kernel_on(1, T0 + 1600, 0, "k1 of r0");
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	/* correlation 2 in both, the kernels before their launches */
	r = kernel_on(2, T0 + 3500, 0, "k2 of r0");
	pt_trace__gpu(t, &r, PID);
	r = kernel_on(2, T0 + 3600, 0, "k2 of r1");
	pt_trace__gpu(t, &r, PID2);
	r = api_of(2, T0 + 3000, TID);
	pt_trace__gpu(t, &r, PID);
	r = api_of(2, T0 + 3100, TID2);
	pt_trace__gpu(t, &r, PID2);
	/* correlation 3: a launch in one, a kernel in the other: no arrow */
	r = api_of(3, T0 + 5000, TID);
	pt_trace__gpu(t, &r, PID);
	r = kernel_on(3, T0 + 5500, 0, "k3 of r1");
	pt_trace__gpu(t, &r, PID2);
	pt_trace__stats(t, &st);
	assert_int_equal(st.flows, 4);
	doc = render_procs(t, procs, 2, &text);

	check_flows(doc, 4);
	/* each arrow from a process's launch to its own GPU's work */
	cJSON_ArrayForEach(s, events(doc))
	{
		const cJSON *f = NULL, *work = NULL;
		char want[32];

		if (!is(s, "s"))
			continue;
		cJSON_ArrayForEach(e, events(doc))
		{
			if (is(e, "f") && num(e, "id") == num(s, "id"))
				f = e;
		}
		assert_non_null(f);
		assert_true(num(s, "pid") == PID || num(s, "pid") == PID2);
		assert_true(num(f, "pid") == (num(s, "pid") == PID ? gpu1 : gpu2));
		cJSON_ArrayForEach(e, events(doc))
		{
			if (is(e, "X") && num(e, "pid") == num(f, "pid") &&
			    num(e, "ts") == num(f, "ts"))
				work = e;
		}
		assert_non_null(work);
		snprintf(want, sizeof(want), "k%u of r%d",
			 (unsigned int)((uint64_t)num(s, "id") & 0xffffffffu),
			 num(s, "pid") == PID ? 0 : 1);
		assert_string_equal(str(work, "name"), want);
		for (size_t i = 0; i < nids; i++)
			assert_true(ids[i] != num(s, "id")); /* unique across processes */
		ids[nids++] = num(s, "id");
	}
	assert_int_equal(nids, 4);
	for (size_t i = 0; i < 4; i++) {
		bool found = false;

		for (size_t j = 0; j < nids; j++)
			found |= ids[j] == want_ids[i];
		assert_true(found);
	}
	/* the kernel without its launch is there, with no arrow */
	e = find(doc, "X", "k3 of r1", 0);
	assert_non_null(e);
	assert_true(num(e, "pid") == gpu2);

	/* a pseudo process per (process, device), named with its pid */
	assert_true(num(find(doc, "X", "k1 of r0", 0), "pid") == gpu1);
	assert_true(num(find(doc, "X", "k1 of r1", 0), "pid") == gpu2);
	assert_int_equal(num(find(doc, "X", "k1 of r1", 0), "tid"), 7);
	assert_int_equal(count_meta(doc, "process_name"), 4);
	assert_string_equal(proc_name(doc, gpu1), "GPU 0 (pid 4242)");
	assert_string_equal(proc_name(doc, gpu2), "GPU 0 (pid 5151)");
	assert_string_equal(thread_name(doc, gpu1, 7), "stream 7");
	assert_string_equal(thread_name(doc, gpu2, 7), "stream 7");
	/* the GPUs after the hosts, in the hosts' order */
	assert_true(sort_index(doc, PID) == 0 && sort_index(doc, PID2) == 1);
	assert_true(sort_index(doc, gpu1) > 1);
	assert_true(sort_index(doc, gpu2) > sort_index(doc, gpu1));
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* Two processes, one with GPU work: its GPUs are named as for one. */
static void test_procs_one_gpu(void **state)
{
	static const struct pt_trace_proc procs[] = { { PID, "a", -1 }, { PID2, "b", -1 } };
	struct pt_trace *t = pt_trace__new(100, 0);
	struct pt_gpu_rec r;
	char *text = NULL;
	cJSON *doc;

	pt_trace__thread_name(t, TID, PID, "a");
	pt_trace__thread_name(t, TID2, PID2, "b");
	pt_trace__slice(t, TID, T0 + 100, T0 + 200, "f", false, 0);
	r = kernel_on(1, T0 + 1000, 2, "k");
	pt_trace__gpu(t, &r, PID2);
	r = kernel_on(2, T0 + 2000, 3, "k");
	pt_trace__gpu(t, &r, PID2);
	doc = render_procs(t, procs, 2, &text);
	assert_string_equal(proc_name(doc, PT_TRACE_GPU_PID + 2), "GPU 2");
	assert_string_equal(proc_name(doc, PT_TRACE_GPU_PID + 3), "GPU 3");
	assert_int_equal(count_meta(doc, "process_name"), 4);
	assert_true(sort_index(doc, PT_TRACE_GPU_PID + 2) > 1);
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* Threads whose pid never came, and records with pid 0: procs[0]. */
static void test_unnamed_thread(void **state)
{
	static const struct pt_trace_proc procs[] = { { PID2, "b", -1 }, { PID, "a", -1 } };
	struct pt_trace *t = pt_trace__new(100, 0);
	struct pt_step st = { .index = 4, .tid = 7777, .t_start = T0 + 100, .t_end = T0 + 900 };
	struct pt_gpu_rec r;
	const cJSON *e;
	char *text = NULL;
	cJSON *doc;

	pt_trace__thread_name(t, TID, PID, "a0");
	pt_trace__thread_name(t, PID2, PID2, "b"); /* its main thread: counted */
	pt_trace__slice(t, TID, T0 + 100, T0 + 200, "of a", false, 0);
	pt_trace__slice(t, 7777, T0 + 300, T0 + 400, "never named", false, 0);
	pt_trace__step(t, &st);
	pt_trace__thread_name(t, 7778, 0, "no pid");
	pt_trace__slice(t, 7778, T0 + 500, T0 + 600, "named, no pid", false, 0);
	r = api_of(5, T0 + 700, 7779);
	pt_trace__api(t, &r, 0);
	r = kernel_on(5, T0 + 800, 1, "k");
	pt_trace__gpu(t, &r, 0);
	doc = render_procs(t, procs, 2, &text);

	assert_int_equal(num(find(doc, "X", "of a", 0), "pid"), PID);
	e = find(doc, "X", "never named", 0);
	assert_int_equal(num(e, "pid"), PID2);
	assert_int_equal(num(e, "tid"), 7777);
	assert_int_equal(num(find(doc, "X", "step 4", 0), "pid"), PID2);
	assert_int_equal(num(find(doc, "X", "named, no pid", 0), "pid"), PID2);
	assert_int_equal(num(find(doc, "X", "cudaLaunchKernel", 0), "pid"), PID2);
	assert_string_equal(thread_name(doc, PID2, 7777), "thread 7777");
	assert_string_equal(thread_name(doc, PID2, PT_TRACE_STEPS_TID + 7777), "thread 7777 steps");
	assert_string_equal(thread_name(doc, PID2, 7778), "no pid");
	assert_string_equal(thread_name(doc, PID, TID), "a0");
	/* pid 0's GPU is procs[0]'s, the only one with GPU work */
	assert_int_equal(num(find(doc, "X", "k", 0), "pid"), PT_TRACE_GPU_PID + 1);
	assert_string_equal(proc_name(doc, PT_TRACE_GPU_PID + 1), "GPU 1");
	check_flows(doc, 1);
	assert_int_equal(count_meta(doc, "process_name"), 3);
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* C++ kernels come mangled: slices are named by the demangled name with
 * CUPTI's in args.mangled (every launch, wherever the name lives); C
 * names and broken manglings as they came, without it. */
static void test_kernel_names(void **state)
{
	static const char fill[] = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
				   "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
	static const char dem[] = "void at::native::vectorized_elementwise_kernel<4, "
				  "at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
				  "at::native::FillFunctor<float>, std::array<char*, 1ul>)";
	struct pt_trace *t = pt_trace__new(100, 0);
	char fill2[sizeof(fill)], *text = NULL;
	struct pt_gpu_rec r;
	const cJSON *e, *a;
	cJSON *doc;

	memcpy(fill2, fill, sizeof(fill));
	r = kernel(1, T0 + 1000, T0 + 2000, fill);
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	r = kernel(2, T0 + 3000, T0 + 4000, "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN");
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	r = kernel(3, T0 + 5000, T0 + 6000, fill);
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	r = kernel(4, T0 + 7000, T0 + 8000, fill2);
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	r = kernel(5, T0 + 9000, T0 + 9500, "_Zjunk");
	assert_int_equal(pt_trace__gpu(t, &r, PID), 0);
	doc = render(t, &text);
	for (int i = 0; i < 3; i++) {
		e = find(doc, "X", dem, i);
		assert_non_null(e);
		assert_string_equal(str(e, "cat"), "kernel");
		a = cJSON_GetObjectItemCaseSensitive(e, "args");
		assert_string_equal(str(a, "mangled"), fill);
		assert_int_equal(num(a, "stream"), 7);
	}
	assert_null(find(doc, "X", dem, 3));
	assert_null(find(doc, "X", fill, 0));
	e = find(doc, "X", "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", 0);
	assert_non_null(e);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"),
						     "mangled"));
	e = find(doc, "X", "_Zjunk", 0);
	assert_non_null(e);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"),
						     "mangled"));
	cJSON_Delete(doc);
	free(text);
	pt_trace__free(t);
}

/* A pid that came here but is not listed still gets its name; no
 * processes to write: -EINVAL. */
static void test_procs_unlisted(void **state)
{
	struct pt_trace_write_opts o = { .procs = &one_proc, .nprocs = 0 };
	struct pt_trace *t = pt_trace__new(100, 0);
	char *text = NULL;
	cJSON *doc;

	pt_trace__thread_name(t, TID, PID, "main");
	pt_trace__thread_name(t, TID2, PID2, "child");
	pt_trace__slice(t, TID2, T0 + 100, T0 + 200, "f", false, 0);
	doc = render(t, &text);
	assert_int_equal(num(find(doc, "X", "f", 0), "pid"), PID2);
	assert_string_equal(proc_name(doc, PID), "engine");
	assert_string_equal(proc_name(doc, PID2), "process");
	assert_true(sort_index(doc, PID) == 0 && sort_index(doc, PID2) == 1);
	check_count(t, doc);
	cJSON_Delete(doc);
	free(text);
	assert_int_equal(pt_trace__write(t, stdout, &o), -EINVAL);
	o.nprocs = 1;
	o.procs = NULL;
	assert_int_equal(pt_trace__write(t, stdout, &o), -EINVAL);
	pt_trace__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_slices_nesting),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_gpu_and_flows),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_truncation_window),
		cmocka_unit_test(test_flow_bound),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_procs_threads),
		cmocka_unit_test(test_procs_gpu),
		cmocka_unit_test(test_procs_one_gpu),
		cmocka_unit_test(test_unnamed_thread),
		cmocka_unit_test(test_kernel_names),
		cmocka_unit_test(test_procs_unlisted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
