// SPDX-License-Identifier: BSD-2-Clause
/*
 * summary.json over a real aggregator fed with synthetic records whose
 * durations are known to the ns, so every figure has an exact expected
 * value (percentiles of one or two samples are exact too: nearest rank 1
 * and n are the exact min and max in pt_dist).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "report/summary.h"
#include "report/emit.h"
#include "report/report_lines.h"
#include "aggregate/skew.h"

#define MS 1000000ULL
#define PID 100

enum { F_STEP, F_SCHED, F_FWD, F_ATTN, F_HELPER, F_IDLE, NFIDS };
enum { B_SCHED, B_FWD, B_ATTN, B_IDLE, NBUCKETS };

static const struct pt_report_bucket buckets[NBUCKETS] = {
	{ "engine.schedule", "engine" },
	{ "engine.forward", "engine" },
	{ "gpu.attn", "gpu" },
	{ "engine.idle", "engine" },
};

static const char *const sched_aliases[] = { "__sched_run", "sched_run_v2" };

/* Rows as main.c would give them: resolved functions in fid order, then a
 * probe that matched nothing. */
/* clang-format off */
static const struct pt_report_func funcs[] = {
	{ .fid = F_STEP, .probe = "native:exe:engine_step", .object = "/opt/llm/bin/llm",
	  .symbol = "engine_step", .file_offset = 0x1234, .probe_skip = 4,
	  .probe_insn = "emulated", .attached = true, .attached_after_s = 0.0123456789 },
	{ .fid = F_SCHED, .probe = "native:libengine.so*:sched_*",
	  .object = "/opt/llm/lib/libengine.so.1", .symbol = "sched_run",
	  .aliases = sched_aliases, .naliases = 2, .file_offset = 0x2000, .probe_insn = "nop5",
	  .attached = true, .attached_after_s = 1.5 },
	{ .fid = F_FWD, .probe = "native:exe:forward", .object = "/opt/llm/bin/llm",
	  .symbol = "forward", .file_offset = 0x3000, .probe_insn = "emulated", .attached = true },
	{ .fid = F_ATTN, .probe = "native:exe:attn", .object = "/opt/llm/bin/llm",
	  .symbol = "attn", .file_offset = 0x3100, .probe_insn = "emulated", .attached = true },
	{ .fid = F_HELPER, .probe = "native:exe:helper", .object = "/opt/llm/bin/llm",
	  .symbol = "helper", .file_offset = 0x3200, .probe_insn = "emulated", .attached = true },
	{ .fid = F_IDLE, .probe = "native:exe:idle", .object = "/opt/llm/bin/llm",
	  .symbol = "idle", .file_offset = 0x3300, .probe_insn = "single-step",
	  .attached = false, .attached_after_s = 9.9, .reason = "uprobe: -EINVAL" },
	{ .fid = -1, .probe = "native:libcuda.so*:cuLaunchKernel", .file_offset = 0x99,
	  .attached = false, .reason = "no mapped object matches libcuda.so*" },
};
/* clang-format on */
#define NFUNCS (sizeof(funcs) / sizeof(funcs[0]))

static struct pt_agg *new_agg(void)
{
	struct pt_agg_opts opts = {
		.nbuckets = NBUCKETS,
		.step_mode = PT_STEP_CALL,
		.warmup_steps = 1,
	};
	struct pt_agg *a = pt_agg__new(&opts);

	assert_non_null(a);
	assert_int_equal(pt_agg__set_func(a, F_STEP, true, 0), 0);
	assert_int_equal(pt_agg__set_func(a, F_SCHED, false, 1ULL << B_SCHED), 0);
	assert_int_equal(pt_agg__set_func(a, F_FWD, false, 1ULL << B_FWD), 0);
	assert_int_equal(pt_agg__set_func(a, F_ATTN, false, 1ULL << B_ATTN), 0);
	assert_int_equal(pt_agg__set_func(a, F_HELPER, false, 0), 0);
	assert_int_equal(pt_agg__set_func(a, F_IDLE, false, 1ULL << B_IDLE), 0);
	return a;
}

static void rec(struct pt_agg *a, uint32_t type, uint32_t fid, uint64_t t0, uint64_t t1,
		uint32_t depth)
{
	struct pt_rec r = {
		.type = type,
		.fid = fid,
		.pid = PID,
		.tid = PID,
		.t_entry = t0,
		.t_exit = t1,
		.depth = depth,
	};

	pt_agg__record(a, &r);
}

/* A whole call: ENTRY now, EXIT later (the caller interleaves nesting). */
#define ENTER(a, fid, t0, d) rec(a, PT_REC_ENTRY, fid, t0, 0, d)
#define LEAVE(a, fid, t0, t1, d) rec(a, PT_REC_EXIT, fid, t0, t1, d)

/*
 * warmup step  0.001 ms, with one 100 ns schedule call (not counted)
 * step 1      10..15 ms: schedule 10..11, forward 11..14 (attn 12..13 inside)
 * step 2      20..30 ms: schedule 20.5..22.5, forward 23..29
 * helper      40..40.5 ms, outside any step
 * step 3      opens at 50 ms and never returns: incomplete
 *
 * Counted: steps 5 and 10 ms; schedule 1+2, forward 3+6, attn 1,
 * step.other 1 (step 1) + 2 (step 2): attn nests in forward, so the
 * union of buckets in step 1 is 4 ms, not 5.
 */
static void feed(struct pt_agg *a)
{
	ENTER(a, F_STEP, 1000, 0);
	ENTER(a, F_SCHED, 1100, 1);
	LEAVE(a, F_SCHED, 1100, 1200, 1);
	LEAVE(a, F_STEP, 1000, 2000, 0);

	ENTER(a, F_STEP, 10 * MS, 0);
	ENTER(a, F_SCHED, 10 * MS, 1);
	LEAVE(a, F_SCHED, 10 * MS, 11 * MS, 1);
	ENTER(a, F_FWD, 11 * MS, 1);
	ENTER(a, F_ATTN, 12 * MS, 2);
	LEAVE(a, F_ATTN, 12 * MS, 13 * MS, 2);
	LEAVE(a, F_FWD, 11 * MS, 14 * MS, 1);
	LEAVE(a, F_STEP, 10 * MS, 15 * MS, 0);

	ENTER(a, F_STEP, 20 * MS, 0);
	ENTER(a, F_SCHED, 20 * MS + MS / 2, 1);
	LEAVE(a, F_SCHED, 20 * MS + MS / 2, 22 * MS + MS / 2, 1);
	ENTER(a, F_FWD, 23 * MS, 1);
	LEAVE(a, F_FWD, 23 * MS, 29 * MS, 1);
	LEAVE(a, F_STEP, 20 * MS, 30 * MS, 0);

	ENTER(a, F_HELPER, 40 * MS, 0);
	LEAVE(a, F_HELPER, 40 * MS, 40 * MS + MS / 2, 0);

	ENTER(a, F_STEP, 50 * MS, 0);
	pt_agg__finish(a);
}

static void fill_report(struct pt_report *r, const struct pt_agg *a)
{
	memset(r, 0, sizeof(*r));
	r->meta = (struct pt_report_meta){
		.tool = "proftrace",
		.version = "0.1.0",
		.pid = 4242,
		.comm = "llm",
		.exe = "/opt/llm/bin/llm",
		.start_unix_ns = 1700000000123456789ULL,
		.duration_s = 10.0000004,
		.targets_file = "targets/llm.conf",
		.kernel = "6.1.0-18-amd64",
		.warmup_steps = 1,
		.step_probe = "native:exe:engine_step",
		.step_mode = "call",
	};
	r->agg = a;
	r->buckets = buckets;
	r->nbuckets = NBUCKETS;
	r->funcs = funcs;
	r->nfuncs = NFUNCS;
	r->health = (struct pt_report_health){
		.events = 1001,
		.dropped_events = 7,
		.depth_overflow = 2,
		.unwound = 3,
		.orphan_returns = 4,
		.lost_calls = 5,
		.steps_incomplete = 6,
		.probes_requested = 7,
		.probes_attached = 5,
	};
}

struct fixture {
	struct pt_agg *agg;
	struct pt_report r;
	cJSON *doc;
};

static int setup_fed(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	fx->agg = new_agg();
	feed(fx->agg);
	fill_report(&fx->r, fx->agg);
	fx->doc = pt_summary__build(&fx->r);
	assert_non_null(fx->doc);
	*state = fx;
	return 0;
}

static int setup_empty(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	fx->agg = new_agg();
	pt_agg__finish(fx->agg);
	fill_report(&fx->r, fx->agg);
	fx->doc = pt_summary__build(&fx->r);
	assert_non_null(fx->doc);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	cJSON_Delete(fx->doc);
	pt_agg__free(fx->agg);
	free(fx);
	return 0;
}

/* ---- accessors that fail with the key's name ---- */

static const cJSON *item(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!it)
		fail_msg("key \"%s\" missing", k);
	return it;
}

static const cJSON *nth(const cJSON *arr, int i)
{
	const cJSON *it = cJSON_GetArrayItem(arr, i);

	if (!cJSON_IsArray(arr) || !it)
		fail_msg("no element %d", i);
	return it;
}

/* Exact: values are rounded to 6 decimals by dividing whole ns by 1e6,
 * which gives the same double as the decimal literal. */
static void check_num(const cJSON *o, const char *k, double want)
{
	const cJSON *it = item(o, k);

	if (!cJSON_IsNumber(it))
		fail_msg("\"%s\" is not a number", k);
	if (it->valuedouble != want)
		fail_msg("\"%s\" = %.9f, want %.9f", k, it->valuedouble, want);
}

static void check_near(const cJSON *o, const char *k, double want, double rel)
{
	const cJSON *it = item(o, k);

	if (!cJSON_IsNumber(it))
		fail_msg("\"%s\" is not a number", k);
	if (fabs(it->valuedouble - want) > want * rel)
		fail_msg("\"%s\" = %.9f, want %.9f within %g", k, it->valuedouble, want, rel);
}

static void check_null(const cJSON *o, const char *k)
{
	if (!cJSON_IsNull(item(o, k)))
		fail_msg("\"%s\" should be null", k);
}

static void check_str(const cJSON *o, const char *k, const char *want)
{
	const cJSON *it = item(o, k);

	if (!cJSON_IsString(it))
		fail_msg("\"%s\" is not a string", k);
	assert_string_equal(it->valuestring, want);
}

static void check_keys(const cJSON *o, const char *const *keys, size_t n)
{
	const cJSON *it = o->child;
	size_t i;

	for (i = 0; i < n; i++, it = it->next) {
		if (!it)
			fail_msg("key %zu (\"%s\") missing", i, keys[i]);
		if (strcmp(it->string, keys[i]))
			fail_msg("key %zu is \"%s\", want \"%s\"", i, it->string, keys[i]);
	}
	if (it)
		fail_msg("extra key \"%s\"", it->string);
}
#define CHECK_KEYS(o, ...)                                                                         \
	do {                                                                                       \
		static const char *const k_[] = { __VA_ARGS__ };                                   \
		check_keys(o, k_, sizeof(k_) / sizeof(k_[0]));                                     \
	} while (0)

/* ---- tests ---- */

static void test_key_order(void **state)
{
	struct fixture *fx = *state;
	const cJSON *d = fx->doc;

	/* gpu is always there: {"source": "none", "why"} without a GPU stream */
	CHECK_KEYS(d, "meta", "stats", "buckets", "functions", "lines", "gpu", "health");
	CHECK_KEYS(item(d, "meta"), "tool", "version", "pid", "comm", "exe", "start_unix_ns",
		   "duration_s", "targets_file", "mode", "kernel", "warmup_steps", "step_probe",
		   "step_mode", "sampling", "python");
	CHECK_KEYS(item(d, "stats"), "steps", "mean_ms", "std_ms", "min_ms", "p50_ms", "p90_ms",
		   "p99_ms", "max_ms", "steps_per_s", "time_ms", "warmup_steps_skipped",
		   "incomplete_steps");
	CHECK_KEYS(nth(item(d, "buckets"), 0), "name", "domain", "calls", "total_ms",
		   "avg_ms_per_step", "share", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms");
	CHECK_KEYS(nth(item(d, "functions"), 0), "probe", "kind", "object", "symbol", "mangled",
		   "line", "timing", "aliases", "file_offset", "probe_skip", "probe_insn",
		   "attached", "attached_after_s", "reason", "dlopen_window_ms", "calls",
		   "total_ms", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms", "sampled");
	CHECK_KEYS(item(d, "health"), "events", "dropped_events", "depth_overflow", "unwound",
		   "orphan_returns", "py_unreadable_frames", "py_code_map_full",
		   "thread_exits_dropped", "py_calls_unresolved", "lost_calls", "steps_incomplete",
		   "threads", "threads_ended", "threads_held_max", "runs_late_steps",
		   "skew_steps_not_kept", "probes_requested", "probes_attached", "unattached");
	CHECK_KEYS(nth(item(item(d, "health"), "unattached"), 0), "probe", "object", "symbol",
		   "reason");
}

static void test_meta(void **state)
{
	struct fixture *fx = *state;
	const cJSON *m = item(fx->doc, "meta");
	const cJSON *start = item(m, "start_unix_ns");

	check_str(m, "tool", "proftrace");
	check_str(m, "version", "0.1.0");
	check_num(m, "pid", 4242);
	check_str(m, "comm", "llm");
	check_str(m, "exe", "/opt/llm/bin/llm");
	/* Exact integer text: a double would lose the last digits. */
	assert_true(cJSON_IsRaw(start) || cJSON_IsNumber(start));
	if (cJSON_IsRaw(start))
		assert_string_equal(start->valuestring, "1700000000123456789");
	check_num(m, "duration_s", 10.0);
	check_str(m, "targets_file", "targets/llm.conf");
	check_str(m, "mode", "targets");
	check_str(m, "kernel", "6.1.0-18-amd64");
	check_num(m, "warmup_steps", 1);
	check_str(m, "step_probe", "native:exe:engine_step");
	check_str(m, "step_mode", "call");
}

static void test_meta_nulls(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	cJSON *doc;
	const cJSON *m;

	r.meta.step_probe = NULL;
	r.meta.exe = NULL;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	m = item(doc, "meta");
	check_null(m, "step_probe");
	check_null(m, "exe");
	check_str(m, "comm", "llm");
	cJSON_Delete(doc);
}

static void test_stats(void **state)
{
	struct fixture *fx = *state;
	const cJSON *s = item(fx->doc, "stats");

	check_num(s, "steps", 2);
	check_num(s, "mean_ms", 7.5);
	check_num(s, "std_ms", 2.5);
	check_num(s, "min_ms", 5);
	check_num(s, "p50_ms", 5);
	check_num(s, "p90_ms", 10);
	check_num(s, "p99_ms", 10);
	check_num(s, "max_ms", 10);
	/* 2 steps over 10.0000004 s, rounded to 6 decimals. */
	check_num(s, "steps_per_s", 0.2);
	check_num(s, "time_ms", 15);
	check_num(s, "warmup_steps_skipped", 1);
	check_num(s, "incomplete_steps", 1);
}

static void test_buckets(void **state)
{
	struct fixture *fx = *state;
	const cJSON *arr = item(fx->doc, "buckets"), *b;

	assert_int_equal(cJSON_GetArraySize(arr), NBUCKETS + 1);

	b = nth(arr, B_SCHED);
	check_str(b, "name", "engine.schedule");
	check_str(b, "domain", "engine");
	check_num(b, "calls", 2);
	check_num(b, "total_ms", 3);
	check_num(b, "avg_ms_per_step", 1.5);
	check_num(b, "share", 0.2);
	check_num(b, "mean_ms", 1.5);
	check_num(b, "p50_ms", 1);
	check_num(b, "p90_ms", 2);
	check_num(b, "p99_ms", 2);
	check_num(b, "max_ms", 2);

	b = nth(arr, B_FWD);
	check_str(b, "name", "engine.forward");
	check_num(b, "calls", 2);
	check_num(b, "total_ms", 9);
	check_num(b, "avg_ms_per_step", 4.5);
	check_num(b, "share", 0.6);
	check_num(b, "mean_ms", 4.5);
	check_num(b, "p50_ms", 3);
	check_num(b, "max_ms", 6);

	/* 1 ms of 15: 0.0666..., rounded to 6 decimals. */
	b = nth(arr, B_ATTN);
	check_str(b, "name", "gpu.attn");
	check_str(b, "domain", "gpu");
	check_num(b, "calls", 1);
	check_num(b, "total_ms", 1);
	check_num(b, "avg_ms_per_step", 0.5);
	check_num(b, "share", 0.066667);
	check_num(b, "p99_ms", 1);

	/* Declared, never called: zero time is measured, per-call figures
	 * are not. */
	b = nth(arr, B_IDLE);
	check_str(b, "name", "engine.idle");
	check_num(b, "calls", 0);
	check_num(b, "total_ms", 0);
	check_num(b, "avg_ms_per_step", 0);
	check_num(b, "share", 0);
	check_null(b, "mean_ms");
	check_null(b, "p50_ms");
	check_null(b, "p90_ms");
	check_null(b, "p99_ms");
	check_null(b, "max_ms");
}

static void test_step_other(void **state)
{
	struct fixture *fx = *state;
	const cJSON *b = nth(item(fx->doc, "buckets"), NBUCKETS);

	check_str(b, "name", "step.other");
	check_str(b, "domain", "step");
	check_num(b, "calls", 2);
	check_num(b, "total_ms", 3);
	check_num(b, "avg_ms_per_step", 1.5);
	check_num(b, "share", 0.2);
	check_num(b, "mean_ms", 1.5);
	check_num(b, "p50_ms", 1);
	check_num(b, "p90_ms", 2);
	check_num(b, "max_ms", 2);
}

static void test_functions(void **state)
{
	struct fixture *fx = *state;
	const cJSON *arr = item(fx->doc, "functions"), *f, *al;

	assert_int_equal(cJSON_GetArraySize(arr), NFUNCS);

	/* 3 calls: warmup (1 us), 5 ms, 10 ms; the open step 3 never
	 * completed. mean = 15.001 / 3 rounded to whole ns. */
	f = nth(arr, 0);
	check_str(f, "probe", "native:exe:engine_step");
	check_str(f, "object", "/opt/llm/bin/llm");
	check_str(f, "symbol", "engine_step");
	check_null(f, "mangled"); /* not C++ */
	assert_int_equal(cJSON_GetArraySize(item(f, "aliases")), 0);
	check_num(f, "file_offset", 0x1234);
	check_num(f, "probe_skip", 4);
	check_str(f, "probe_insn", "emulated");
	assert_true(cJSON_IsTrue(item(f, "attached")));
	check_num(f, "attached_after_s", 0.012346);
	check_null(f, "reason");
	check_num(f, "calls", 3);
	check_num(f, "total_ms", 15.001);
	check_num(f, "mean_ms", 5.000333);
	check_near(f, "p50_ms", 5, 0.005);
	check_num(f, "p90_ms", 10);
	check_num(f, "p99_ms", 10);
	check_num(f, "max_ms", 10);

	/* Warmup calls count for functions: 100 ns + 1 ms + 2 ms. */
	f = nth(arr, 1);
	al = item(f, "aliases");
	assert_int_equal(cJSON_GetArraySize(al), 2);
	assert_string_equal(nth(al, 0)->valuestring, "__sched_run");
	assert_string_equal(nth(al, 1)->valuestring, "sched_run_v2");
	check_num(f, "probe_skip", 0);
	check_num(f, "attached_after_s", 1.5);
	check_num(f, "calls", 3);
	check_num(f, "total_ms", 3.0001);
	check_num(f, "mean_ms", 1.000033);
	check_near(f, "p50_ms", 1, 0.005);
	check_num(f, "max_ms", 2);

	f = nth(arr, 2);
	check_num(f, "calls", 2);
	check_num(f, "total_ms", 9);
	check_num(f, "p50_ms", 3);

	/* Outside every step, still a call. */
	f = nth(arr, 4);
	check_str(f, "symbol", "helper");
	check_num(f, "calls", 1);
	check_num(f, "total_ms", 0.5);
	check_num(f, "mean_ms", 0.5);

	/* Not attached: no time, no reason to invent one. */
	f = nth(arr, 5);
	assert_true(cJSON_IsFalse(item(f, "attached")));
	check_null(f, "attached_after_s");
	check_str(f, "reason", "uprobe: -EINVAL");
	check_num(f, "file_offset", 0x3300);
	check_num(f, "calls", 0);
	check_num(f, "total_ms", 0);
	check_null(f, "mean_ms");
	check_null(f, "p50_ms");
	check_null(f, "p90_ms");
	check_null(f, "p99_ms");
	check_null(f, "max_ms");

	/* Unresolved probe: no object, symbol, offset or insn. */
	f = nth(arr, 6);
	check_str(f, "probe", "native:libcuda.so*:cuLaunchKernel");
	check_null(f, "object");
	check_null(f, "symbol");
	check_null(f, "file_offset");
	check_null(f, "probe_insn");
	check_str(f, "reason", "no mapped object matches libcuda.so*");
	check_num(f, "calls", 0);
	check_null(f, "mean_ms");
}

static void test_health(void **state)
{
	struct fixture *fx = *state;
	const cJSON *h = item(fx->doc, "health"), *u, *e;

	check_num(h, "events", 1001);
	check_num(h, "dropped_events", 7);
	check_num(h, "depth_overflow", 2);
	check_num(h, "unwound", 3);
	check_num(h, "orphan_returns", 4);
	check_num(h, "lost_calls", 5);
	check_num(h, "steps_incomplete", 6);
	check_num(h, "probes_requested", 7);
	check_num(h, "probes_attached", 5);

	u = item(h, "unattached");
	assert_int_equal(cJSON_GetArraySize(u), 2);
	e = nth(u, 0);
	check_str(e, "probe", "native:exe:idle");
	check_str(e, "object", "/opt/llm/bin/llm");
	check_str(e, "symbol", "idle");
	check_str(e, "reason", "uprobe: -EINVAL");
	e = nth(u, 1);
	check_str(e, "probe", "native:libcuda.so*:cuLaunchKernel");
	check_null(e, "object");
	check_null(e, "symbol");
	check_str(e, "reason", "no mapped object matches libcuda.so*");
}

static void test_zero_steps(void **state)
{
	struct fixture *fx = *state;
	const cJSON *s = item(fx->doc, "stats"), *b, *f;
	static const char *const ms[] = { "mean_ms", "std_ms", "min_ms", "p50_ms",
					  "p90_ms",  "p99_ms", "max_ms", "time_ms" };
	size_t i;

	check_num(s, "steps", 0);
	for (i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
		check_null(s, ms[i]);
	/* 0 steps in a known 10 s window is a measured rate. */
	check_num(s, "steps_per_s", 0);
	check_num(s, "warmup_steps_skipped", 0);
	check_num(s, "incomplete_steps", 0);

	assert_int_equal(cJSON_GetArraySize(item(fx->doc, "buckets")), NBUCKETS + 1);
	for (i = 0; i <= NBUCKETS; i++) {
		b = nth(item(fx->doc, "buckets"), i);
		check_num(b, "calls", 0);
		check_num(b, "total_ms", 0);
		check_null(b, "avg_ms_per_step");
		check_null(b, "share");
		check_null(b, "mean_ms");
		check_null(b, "max_ms");
	}
	check_str(b, "name", "step.other");

	f = nth(item(fx->doc, "functions"), 0);
	check_num(f, "calls", 0);
	check_null(f, "p99_ms");
}

static void test_unknown_window(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	cJSON *doc;

	/* No window, no rate: dividing by 0 would print inf or garbage. */
	r.meta.duration_s = 0;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	check_null(item(doc, "stats"), "steps_per_s");
	cJSON_Delete(doc);
}

static void test_no_agg(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	cJSON *doc;

	r.agg = NULL;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	check_num(item(doc, "stats"), "steps", 0);
	check_null(item(doc, "stats"), "mean_ms");
	check_num(nth(item(doc, "functions"), 0), "calls", 0);
	check_null(nth(item(doc, "buckets"), 0), "share");
	cJSON_Delete(doc);
	assert_null(pt_summary__build(NULL));
}

/* Several processes: the merged document lists them, a process's own
 * says which it is and leaves the shared BPF counters to the top. */
static void test_processes_meta(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	const int pids[] = { 41, 42, 57 };
	const cJSON *m, *sk;
	cJSON *doc;

	r.meta.pids = pids;
	r.meta.npids = 3;
	r.meta.children = true;
	for (int i = 0; i < PT_REPORT_MAX_SKIPPED; i++)
		r.meta.skipped[i] = (struct pt_report_skipped){ 60 + i, "sh", "no CPython" };
	r.meta.nskipped = 70; /* more than kept: the total says so */
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	m = item(doc, "meta");
	assert_int_equal(cJSON_GetArraySize(item(m, "pids")), 3);
	assert_int_equal(nth(item(m, "pids"), 2)->valuedouble, 57);
	assert_true(cJSON_IsTrue(item(m, "children")));
	sk = item(m, "processes_skipped");
	assert_int_equal(cJSON_GetArraySize(sk), PT_REPORT_MAX_SKIPPED);
	check_num(nth(sk, 0), "pid", 60);
	check_num(nth(sk, 63), "pid", 123);
	check_str(nth(sk, 0), "why", "no CPython");
	check_num(m, "processes_skipped_total", 70);
	assert_null(cJSON_GetObjectItemCaseSensitive(m, "rank"));
	assert_non_null(cJSON_GetObjectItemCaseSensitive(item(doc, "health"), "dropped_events"));
	cJSON_Delete(doc);

	r = fx->r;
	r.meta.process = true;
	r.meta.rank = 3;
	r.meta.local_rank = -1;
	r.meta.added_s = 1.5;
	r.meta.ended = "exec";
	r.meta.ended_s = 2.25;
	r.health.process = true;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	m = item(doc, "meta");
	check_num(m, "rank", 3);
	check_null(m, "local_rank");
	check_num(m, "attached_at_s", 1.5);
	check_str(m, "ended", "exec");
	check_num(m, "ended_at_s", 2.25);
	assert_null(cJSON_GetObjectItemCaseSensitive(m, "pids"));
	/* the shared object's counters are not a process's */
	assert_null(cJSON_GetObjectItemCaseSensitive(item(doc, "health"), "dropped_events"));
	assert_null(cJSON_GetObjectItemCaseSensitive(item(doc, "health"), "unwound"));
	check_num(item(doc, "health"), "events", r.health.events);
	cJSON_Delete(doc);

	/* one process: none of these keys */
	doc = pt_summary__build(&fx->r);
	m = item(doc, "meta");
	assert_null(cJSON_GetObjectItemCaseSensitive(m, "pids"));
	assert_null(cJSON_GetObjectItemCaseSensitive(m, "rank"));
	assert_null(cJSON_GetObjectItemCaseSensitive(m, "ended"));
	cJSON_Delete(doc);
}

static void test_skew_object(void **state)
{
	struct pt_skew_steps a = { 0 }, b = { 0 };
	const struct pt_skew_steps *v[2] = { &a, &b };
	struct pt_report_skew_proc pp[2] = { { .pid = 41, .rank = 0, .steps = 10 },
					     { .pid = 42, .rank = -1, .steps = 10 } };
	const cJSON *k;
	struct pt_skew sk;
	cJSON *doc;

	for (int i = 0; i < 10; i++) {
		pt_skew__add(&a, 1000000ull * i * 3, 1000000ull * i * 3 + 1000000);
		pt_skew__add(&b, 1000000ull * i * 3 + 1000, 1000000ull * i * 3 + 1251000);
	}
	assert_int_equal(pt_skew__compute(v, 2, &sk), 0);
	for (int i = 0; i < 2; i++) {
		pp[i].first = sk.first[i];
		pp[i].slowest = sk.slowest[i];
		pp[i].fastest = sk.fastest[i];
	}
	doc = cJSON_CreateObject();
	assert_int_equal(pt_summary__add_skew(doc, &sk, pp, 2), 0);
	k = item(doc, "skew");
	check_num(k, "processes", 2);
	check_num(k, "steps_compared", 10);
	check_num(k, "steps_not_compared", 0);
	check_num(k, "mean_ms", 0.25);
	check_num(k, "max_ms", 0.25);
	check_num(k, "share_of_slowest", 0.2);
	check_num(nth(item(k, "per_process"), 1), "slowest", 10);
	check_num(nth(item(k, "per_process"), 0), "fastest", 10);
	check_null(nth(item(k, "per_process"), 1), "rank");
	assert_null(cJSON_GetObjectItemCaseSensitive(k, "why"));
	cJSON_Delete(doc);
	pt_skew__free_result(&sk);

	/* fewer than two processes with steps: said, no figures */
	doc = cJSON_CreateObject();
	assert_int_equal(pt_summary__add_skew(doc, NULL, pp, 1), 0);
	k = item(doc, "skew");
	check_num(k, "steps_compared", 0);
	check_str(k, "why", "fewer than two processes have counted steps");
	assert_null(cJSON_GetObjectItemCaseSensitive(k, "mean_ms"));
	assert_null(cJSON_GetObjectItemCaseSensitive(nth(item(k, "per_process"), 0), "slowest"));
	cJSON_Delete(doc);
	pt_skew__free(&a);
	pt_skew__free(&b);
}

/* py: rows and meta.python: file, qualname, line, timing label. */
static void test_python(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	struct pt_report_python py = {
		.version = "3.12.1",
		.path = "/usr/lib/libpython3.12.so.1.0",
		.mechanism = "evalframe",
		.perf_trampoline = false,
		.timing = "c-entry-only",
		.why = "the perf trampoline was not active",
		.advice = "restart with PYTHONPERFSUPPORT=1",
		.code_objects = 120,
		.matched = 3,
	};
	/* clang-format off */
	struct pt_report_func rows[2] = {
		{ .fid = F_STEP, .probe = "py:srv.engine.Engine.step", .object = "/srv/engine.py",
		  .symbol = "Engine.step", .py = true, .line = 42, .timing = "c-entry-only",
		  .attached = true },
		{ .fid = -1, .probe = "py:srv.engine::gone", .reason = "no code object" },
	};
	/* clang-format on */
	const cJSON *m, *f;
	cJSON *doc;

	r.meta.python = &py;
	r.funcs = rows;
	r.nfuncs = 2;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	m = item(item(doc, "meta"), "python");
	check_str(m, "version", "3.12.1");
	check_str(m, "mechanism", "evalframe");
	assert_true(cJSON_IsFalse(item(m, "perf_trampoline")));
	check_str(m, "timing", "c-entry-only");
	check_str(m, "advice", "restart with PYTHONPERFSUPPORT=1");
	check_num(m, "code_objects", 120);
	check_num(m, "matched", 3);
	check_null(m, "qualname_source_missing");
	f = nth(item(doc, "functions"), 0);
	check_str(f, "kind", "python");
	check_str(f, "object", "/srv/engine.py");
	check_str(f, "symbol", "Engine.step");
	check_num(f, "line", 42);
	check_str(f, "timing", "c-entry-only");
	check_null(f, "file_offset");
	check_null(f, "probe_skip");
	check_null(f, "probe_insn");
	check_num(f, "calls", 3); /* the step fid's calls in the fixture */
	f = nth(item(doc, "functions"), 1);
	check_null(f, "line");
	check_null(f, "timing");
	cJSON_Delete(doc);
}

/* The printed file and the document agree, raw integers included. */
static void assert_same(const cJSON *a, const cJSON *b, const char *path)
{
	const cJSON *x, *y;
	double va, vb;

	if (cJSON_IsRaw(a) || cJSON_IsRaw(b)) {
		va = cJSON_IsRaw(a) ? strtod(a->valuestring, NULL) : a->valuedouble;
		vb = cJSON_IsRaw(b) ? strtod(b->valuestring, NULL) : b->valuedouble;
		if (va != vb)
			fail_msg("%s: %f != %f", path, va, vb);
		return;
	}
	if ((a->type & 0xff) != (b->type & 0xff))
		fail_msg("%s: type %d != %d", path, a->type & 0xff, b->type & 0xff);
	if (cJSON_IsNumber(a) && a->valuedouble != b->valuedouble)
		fail_msg("%s: %.17g != %.17g", path, a->valuedouble, b->valuedouble);
	if (cJSON_IsString(a) && strcmp(a->valuestring, b->valuestring))
		fail_msg("%s: \"%s\" != \"%s\"", path, a->valuestring, b->valuestring);
	if (!cJSON_IsObject(a) && !cJSON_IsArray(a))
		return;
	if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
		fail_msg("%s: %d != %d children", path, cJSON_GetArraySize(a),
			 cJSON_GetArraySize(b));
	for (x = a->child, y = b->child; x && y; x = x->next, y = y->next) {
		char sub[512];

		if (x->string && (!y->string || strcmp(x->string, y->string)))
			fail_msg("%s: key %s != %s", path, x->string, y->string ? y->string : "");
		snprintf(sub, sizeof(sub), "%s.%s", path, x->string ? x->string : "[]");
		assert_same(x, y, sub);
	}
}

/* ---- stack sampling and lines ---- */

/* Given in this order (main.c sorts by wall; the builder must not). */
/* clang-format off */
static const struct pt_report_thread sthreads[] = {
	{ .tid = 4242, .name = "llm", .comm = "python3", .python = true, .samples = 1500,
	  .on_ns = 1500 * MS, .off_ns = 500 * MS },
	{ .tid = 4250, .name = NULL, .python = false, .samples = 3, .on_ns = 3 * MS,
	  .off_ns = 7654321 },
	{ .tid = 4243, .name = "pt_worker", .python = true, .samples = 10, .on_ns = 10 * MS,
	  .off_ns = 9000 * MS },
};
/* proftrace's own: the agent's thread */
static const struct pt_report_thread sown[] = {
	{ .tid = 4260, .name = "proftrace-py", .samples = 2, .on_ns = 2 * MS,
	  .off_ns = 9990 * MS },
};
/* clang-format on */

static const struct pt_report_sampling sampling = {
	.hz = 997,
	.period_ns = 1003009,
	.mechanism = "perf cpu-clock event per thread (on-CPU) + sched_switch (off-CPU)",
	.threads = sthreads,
	.nthreads = 3,
	.samples = 1513,
	.on_ns = 1513 * MS,
	.off_ns = 9507654321ULL,
	.intervals = 77,
	.python_samples = 1400,
	.no_frames = 100,
	.not_python = 13,
	.not_python_out = 21,
	.found_late = 3,
	.unseen_in = 4,
	.truncated = 2,
	.unreadable = 4,
	.unknown_frames = 5,
	.threads_merged = 7,
	.late_samples = 8,
	.late_ns = 9500000,
	.lost = 6,
	.threads_sampled = 3,
	.threads_failed = 1,
	.own = sown,
	.nown = 1,
	.own_samples = 2,
	.own_on_ns = 2 * MS,
	.own_off_ns = 9990 * MS,
	.names_python = 2,
	.names_comm = 1,
	.folded = "stacks.folded",
	.svg = NULL,
	.svg_wall = "flame-wall.svg",
	.steal_ok = true,
	.steal_ns = 123456789,
	.steal_share = 0.0617283945,
};

/*
 * Rows over the fixture's aggregator: F_STEP timed exactly (3 calls),
 * F_SCHED "sampled" (its 3 partial calls must not show), a native row, a
 * py row never sampled. Duration 10.0000004 s: shares round to 6 places.
 */
/* clang-format off */
static const struct pt_report_func srows[] = {
	{ .fid = F_STEP, .probe = "py:srv.engine.Engine.step", .object = "/srv/engine.py",
	  .symbol = "Engine.step", .py = true, .line = 42, .timing = "exact", .attached = true,
	  .sampled = true, .s_samples = 1500, .s_on_ns = 1500 * MS, .s_off_ns = 500 * MS },
	{ .fid = F_SCHED, .probe = "py:srv.sched::run", .object = "/srv/sched.py",
	  .symbol = "run", .py = true, .line = 10, .timing = "sampled", .attached = true,
	  .sampled = true, .s_samples = 10, .s_on_ns = 10 * MS, .s_off_ns = 9000 * MS },
	{ .fid = F_FWD, .probe = "native:exe:forward", .object = "/opt/llm/bin/llm",
	  .symbol = "forward", .file_offset = 0x3000, .probe_insn = "emulated",
	  .attached = true },
	{ .fid = F_ATTN, .probe = "py:srv.attn::attn", .object = "/srv/attn.py",
	  .symbol = "attn", .py = true, .line = 7, .timing = "c-entry-only", .attached = true,
	  .sampled = true },
};
/* clang-format on */

static const struct pt_report_line sched_lines[] = {
	{ .line = 10, .text = "def run():" },
	{ .line = 11, .text = "    x = 1", .samples = 10, .on_ns = 10 * MS },
	{ .line = 12, .text = "    sleep()", .samples = 5, .on_ns = 5 * MS, .off_ns = 10 * MS },
	{ .line = 13, .text = "    return x", .samples = 15, .on_ns = 15 * MS },
};

static const struct pt_report_line fwd_lines[] = {
	{ .line = 20, .samples = 1, .on_ns = 1 * MS },
	{ .line = 21 },
	{ .line = 22, .samples = 2, .on_ns = 2 * MS },
};

static const struct pt_report_line idle_lines[] = {
	{ .line = 5, .text = "    pass" },
};

/* clang-format off */
static const struct pt_report_lines_fn lfns[] = {
	{ .probe = "py:srv.sched::run", .file = "/srv/sched.py", .function = "run",
	  .first_line = 10, .last_line = 13, .exact = true, .fid = F_SCHED, .samples = 30,
	  .on_ns = 30 * MS, .off_ns = 10 * MS, .lines = sched_lines, .nlines = 4 },
	/* sampled: the aggregator's figures for F_FWD must not show */
	{ .probe = "py:srv.fwd::forward", .file = "/srv/gone.py", .function = "forward",
	  .first_line = 20, .last_line = 22, .exact = false, .fid = F_FWD, .samples = 3,
	  .on_ns = 3 * MS, .source_error = "/srv/gone.py: No such file or directory",
	  .lines = fwd_lines, .nlines = 3 },
	/* exact but not in the aggregator; never sampled */
	{ .probe = "py:srv.idle::idle", .file = "/srv/idle.py", .function = "idle",
	  .first_line = 5, .last_line = 5, .exact = true, .fid = -1, .lines = idle_lines,
	  .nlines = 1 },
};
/* clang-format on */

static cJSON *build_sampled(const struct fixture *fx, double duration_s)
{
	struct pt_report r = fx->r;
	cJSON *doc;

	r.meta.duration_s = duration_s;
	r.meta.sampling = &sampling;
	r.funcs = srows;
	r.nfuncs = sizeof(srows) / sizeof(srows[0]);
	r.lines = lfns;
	r.nlines = sizeof(lfns) / sizeof(lfns[0]);
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	return doc;
}

static void check_wall(const cJSON *o, double on_ms, double off_ms, double wall_ms)
{
	check_num(o, "on_cpu_ms", on_ms);
	check_num(o, "off_cpu_ms", off_ms);
	check_num(o, "wall_ms", wall_ms);
}

/* Sampling off: meta.sampling and every row's sampled are null, py rows
 * included; no lines directive, an empty lines array. */
static void test_sampling_off(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	const cJSON *arr;
	cJSON *doc;
	int i;

	check_null(item(fx->doc, "meta"), "sampling");
	arr = item(fx->doc, "functions");
	for (i = 0; i < cJSON_GetArraySize(arr); i++)
		check_null(nth(arr, i), "sampled");
	arr = item(fx->doc, "lines");
	assert_true(cJSON_IsArray(arr));
	assert_int_equal(cJSON_GetArraySize(arr), 0);

	r.funcs = srows;
	r.nfuncs = sizeof(srows) / sizeof(srows[0]);
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	check_null(item(doc, "meta"), "sampling");
	arr = item(doc, "functions");
	for (i = 0; i < cJSON_GetArraySize(arr); i++)
		check_null(nth(arr, i), "sampled");
	cJSON_Delete(doc);
}

/* native_frames on: how the native stacks went, the means per stack */
static void test_sampling_native(void **state)
{
	struct fixture *fx = *state;
	struct pt_report_sampling sp = sampling;
	struct pt_report r = fx->r;
	const cJSON *n;
	cJSON *doc;

	sp.native = true;
	sp.nat = (struct pt_report_native){ .stacks = 1000,
					    .offcpu = 200,
					    .whole = 990,
					    .partial = 7,
					    .mismatched = 3,
					    .missing = 4,
					    .frames = 12000,
					    .unnamed = 300,
					    .bytes = 14000000 + 999,
					    .unwind_ns = 97500000,
					    .offcpu_budget = 55,
					    .offcpu_moved = 6,
					    .pooled = 90,
					    .gil = 17,
					    .offcpu_via = "task_work",
					    .offcpu_work_missed = 2 };
	r.meta.sampling = &sp;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	n = item(item(item(doc, "meta"), "sampling"), "native_frames");
	CHECK_KEYS(n, "stacks", "offcpu_stacks", "whole", "partial", "mismatched", "missing",
		   "offcpu_budget", "offcpu_moved", "offcpu_via", "offcpu_work_missed",
		   "pooled_samples", "gil_stacks", "frames", "unnamed_frames", "stack_bytes_mean",
		   "unwind_us_mean");
	check_num(n, "stacks", 1000);
	check_num(n, "offcpu_stacks", 200);
	check_num(n, "offcpu_budget", 55);
	check_num(n, "offcpu_moved", 6);
	check_str(n, "offcpu_via", "task_work");
	check_num(n, "offcpu_work_missed", 2);
	check_num(n, "pooled_samples", 90);
	check_num(n, "gil_stacks", 17);
	check_num(n, "whole", 990);
	check_num(n, "partial", 7);
	check_num(n, "mismatched", 3);
	check_num(n, "missing", 4);
	check_num(n, "frames", 12000);
	check_num(n, "unnamed_frames", 300);
	check_num(n, "stack_bytes_mean", 14000);
	check_num(n, "unwind_us_mean", 97.5);
	cJSON_Delete(doc);
}

static void test_sampling_meta(void **state)
{
	struct fixture *fx = *state;
	cJSON *doc = build_sampled(fx, 10.0000004);
	const cJSON *s = item(item(doc, "meta"), "sampling"), *th, *t;

	assert_true(cJSON_IsObject(s));
	CHECK_KEYS(s, "hz", "period_ns", "mechanism", "threads", "samples", "on_cpu_ms",
		   "off_cpu_ms", "wall_ms", "off_cpu_intervals", "python_samples",
		   "no_python_frames", "not_python_thread", "off_cpu_not_python",
		   "off_cpu_found_late", "off_cpu_switch_in_unseen", "truncated_stacks",
		   "unreadable_stacks", "unknown_frames", "threads_merged", "late_samples",
		   "late_ms", "lost_samples", "threads_sampled", "threads_failed", "host_steal_ms",
		   "host_steal_share", "native_frames", "thread_names", "proftrace_threads",
		   "outputs");
	check_null(s, "native_frames"); /* native_frames off */
	check_num(s, "hz", 997);
	check_num(s, "period_ns", 1003009);
	check_str(s, "mechanism",
		  "perf cpu-clock event per thread (on-CPU) + sched_switch (off-CPU)");
	check_num(s, "samples", 1513);
	check_wall(s, 1513, 9507.654321, 11020.654321);
	check_num(s, "off_cpu_intervals", 77);
	check_num(s, "python_samples", 1400);
	check_num(s, "no_python_frames", 100);
	check_num(s, "not_python_thread", 13);
	check_num(s, "off_cpu_not_python", 21);
	check_num(s, "off_cpu_found_late", 3);
	check_num(s, "off_cpu_switch_in_unseen", 4);
	check_num(s, "truncated_stacks", 2);
	check_num(s, "unreadable_stacks", 4);
	check_num(s, "unknown_frames", 5);
	check_num(s, "threads_merged", 7);
	check_num(s, "late_samples", 8);
	check_num(s, "late_ms", 9.5);
	check_num(s, "lost_samples", 6);
	check_num(s, "threads_sampled", 3);
	check_num(s, "threads_failed", 1);
	check_num(s, "host_steal_ms", 123.456789);
	check_num(s, "host_steal_share", 0.061728);
	CHECK_KEYS(item(s, "outputs"), "folded", "svg", "svg_wall");
	check_str(item(s, "outputs"), "folded", "stacks.folded");
	check_null(item(s, "outputs"), "svg");
	check_str(item(s, "outputs"), "svg_wall", "flame-wall.svg");
	t = item(s, "thread_names");
	CHECK_KEYS(t, "python", "comm", "why");
	check_num(t, "python", 2);
	check_num(t, "comm", 1);
	check_null(t, "why");
	/* proftrace's own threads: apart, with their time */
	t = item(s, "proftrace_threads");
	CHECK_KEYS(t, "threads", "samples", "on_cpu_ms", "off_cpu_ms", "wall_ms");
	check_num(t, "samples", 2);
	check_wall(t, 2, 9990, 9992);
	assert_int_equal(cJSON_GetArraySize(item(t, "threads")), 1);
	t = nth(item(t, "threads"), 0);
	CHECK_KEYS(t, "tid", "name", "samples", "on_cpu_ms", "off_cpu_ms", "wall_ms");
	check_num(t, "tid", 4260);
	check_str(t, "name", "proftrace-py");
	check_wall(t, 2, 9990, 9992);

	th = item(s, "threads");
	assert_int_equal(cJSON_GetArraySize(th), 3);
	t = nth(th, 0);
	CHECK_KEYS(t, "tid", "name", "comm", "python", "samples", "on_cpu_ms", "off_cpu_ms",
		   "wall_ms");
	check_num(t, "tid", 4242);
	check_str(t, "name", "llm");
	check_str(t, "comm", "python3");
	assert_true(cJSON_IsTrue(item(t, "python")));
	check_num(t, "samples", 1500);
	check_wall(t, 1500, 500, 2000);
	t = nth(th, 1);
	check_num(t, "tid", 4250);
	check_null(t, "name");
	assert_true(cJSON_IsFalse(item(t, "python")));
	check_num(t, "samples", 3);
	check_wall(t, 3, 7.654321, 10.654321);
	t = nth(th, 2);
	check_num(t, "tid", 4243);
	check_str(t, "name", "pt_worker");
	assert_true(cJSON_IsTrue(item(t, "python")));
	check_num(t, "samples", 10);
	check_wall(t, 10, 9000, 9010);
	cJSON_Delete(doc);

	/* no thread sampled, both outputs written */
	{
		struct pt_report_sampling sp = sampling;
		struct pt_report r = fx->r;

		sp.nthreads = 0;
		sp.threads = NULL;
		sp.svg = "flame.svg";
		r.meta.sampling = &sp;
		doc = pt_summary__build(&r);
		assert_non_null(doc);
		s = item(item(doc, "meta"), "sampling");
		assert_true(cJSON_IsArray(item(s, "threads")));
		assert_int_equal(cJSON_GetArraySize(item(s, "threads")), 0);
		check_str(item(s, "outputs"), "svg", "flame.svg");
		cJSON_Delete(doc);
	}
}

static void test_sampling_functions(void **state)
{
	struct fixture *fx = *state;
	cJSON *doc = build_sampled(fx, 10.0000004);
	const cJSON *arr = item(doc, "functions"), *f, *s;
	static const char *const call_keys[] = { "calls",  "total_ms", "mean_ms", "p50_ms",
						 "p90_ms", "p99_ms",   "max_ms" };
	size_t i;

	assert_int_equal(cJSON_GetArraySize(arr), 4);

	/* exact py row: its calls and its sampled time */
	f = nth(arr, 0);
	check_str(f, "kind", "python");
	check_str(f, "timing", "exact");
	check_num(f, "calls", 3);
	check_num(f, "total_ms", 15.001);
	s = item(f, "sampled");
	CHECK_KEYS(s, "samples", "on_cpu_ms", "off_cpu_ms", "wall_ms", "share");
	check_num(s, "samples", 1500);
	check_wall(s, 1500, 500, 2000);
	/* 2 s of 10.0000004 s */
	check_num(s, "share", 0.2);

	/* sampled row: no call figure, though the aggregator has three */
	f = nth(arr, 1);
	check_str(f, "timing", "sampled");
	for (i = 0; i < sizeof(call_keys) / sizeof(call_keys[0]); i++)
		check_null(f, call_keys[i]);
	s = item(f, "sampled");
	check_num(s, "samples", 10);
	check_wall(s, 10, 9000, 9010);
	check_num(s, "share", 0.901);

	/* native: exact figures, nothing sampled */
	f = nth(arr, 2);
	check_str(f, "kind", "native");
	check_num(f, "calls", 2);
	check_null(f, "sampled");

	/* py, never sampled: zeros, not null; call figures shown */
	f = nth(arr, 3);
	check_str(f, "timing", "c-entry-only");
	check_num(f, "calls", 1);
	s = item(f, "sampled");
	check_num(s, "samples", 0);
	check_wall(s, 0, 0, 0);
	check_num(s, "share", 0);
	cJSON_Delete(doc);

	/* no window: no share; several threads: share may pass 1 */
	doc = build_sampled(fx, 0);
	check_null(item(nth(item(doc, "functions"), 0), "sampled"), "share");
	cJSON_Delete(doc);
	doc = build_sampled(fx, 1.0);
	check_num(item(nth(item(doc, "functions"), 1), "sampled"), "share", 9.01);
	cJSON_Delete(doc);
}

static void test_lines(void **state)
{
	struct fixture *fx = *state;
	cJSON *doc = build_sampled(fx, 10.0000004);
	const cJSON *arr = item(doc, "lines"), *l, *ls, *e;

	assert_int_equal(cJSON_GetArraySize(arr), 3);

	/* exact: calls and exact time from the aggregator (F_SCHED: 100 ns
	 * + 1 ms + 2 ms) */
	l = nth(arr, 0);
	CHECK_KEYS(l, "probe", "file", "function", "first_line", "last_line", "timing", "calls",
		   "exact_total_ms", "samples", "on_cpu_ms", "off_cpu_ms", "wall_ms", "share",
		   "source_error", "lines");
	check_str(l, "probe", "py:srv.sched::run");
	check_str(l, "file", "/srv/sched.py");
	check_str(l, "function", "run");
	check_num(l, "first_line", 10);
	check_num(l, "last_line", 13);
	check_str(l, "timing", "exact");
	check_num(l, "calls", 3);
	check_num(l, "exact_total_ms", 3.0001);
	check_num(l, "samples", 30);
	check_wall(l, 30, 10, 40);
	check_num(l, "share", 0.004);
	check_null(l, "source_error");
	ls = item(l, "lines");
	assert_int_equal(cJSON_GetArraySize(ls), 4);
	e = nth(ls, 0);
	CHECK_KEYS(e, "line", "text", "samples", "on_cpu_ms", "off_cpu_ms", "wall_ms", "share");
	check_num(e, "line", 10);
	check_str(e, "text", "def run():");
	check_num(e, "samples", 0);
	check_wall(e, 0, 0, 0);
	check_num(e, "share", 0);
	e = nth(ls, 1);
	check_num(e, "line", 11);
	check_str(e, "text", "    x = 1");
	check_num(e, "samples", 10);
	check_wall(e, 10, 0, 10);
	check_num(e, "share", 0.25);
	e = nth(ls, 2);
	check_num(e, "line", 12);
	check_str(e, "text", "    sleep()");
	check_num(e, "samples", 5);
	check_wall(e, 5, 10, 15);
	check_num(e, "share", 0.375);
	e = nth(ls, 3);
	check_num(e, "line", 13);
	check_str(e, "text", "    return x");
	check_wall(e, 15, 0, 15);
	check_num(e, "share", 0.375);

	/* sampled: no call figure even though the aggregator has F_FWD's;
	 * no source: text null, the error said once */
	l = nth(arr, 1);
	check_str(l, "timing", "sampled");
	check_null(l, "calls");
	check_null(l, "exact_total_ms");
	check_num(l, "samples", 3);
	check_wall(l, 3, 0, 3);
	check_num(l, "share", 0.0003);
	check_str(l, "source_error", "/srv/gone.py: No such file or directory");
	ls = item(l, "lines");
	assert_int_equal(cJSON_GetArraySize(ls), 3);
	e = nth(ls, 0);
	check_num(e, "line", 20);
	check_null(e, "text");
	check_num(e, "share", 0.333333);
	e = nth(ls, 1);
	check_num(e, "line", 21);
	check_null(e, "text");
	check_num(e, "samples", 0);
	check_num(e, "share", 0);
	e = nth(ls, 2);
	check_num(e, "line", 22);
	check_num(e, "samples", 2);
	check_num(e, "share", 0.666667);

	/* exact, absent from the aggregator: 0 calls; no wall: line shares
	 * null, the function's share a measured 0 */
	l = nth(arr, 2);
	check_str(l, "timing", "exact");
	check_num(l, "calls", 0);
	check_num(l, "exact_total_ms", 0);
	check_wall(l, 0, 0, 0);
	check_num(l, "share", 0);
	e = nth(item(l, "lines"), 0);
	check_num(e, "line", 5);
	check_str(e, "text", "    pass");
	check_null(e, "share");
	cJSON_Delete(doc);

	/* no window: function shares null, line shares still there */
	doc = build_sampled(fx, 0);
	l = nth(item(doc, "lines"), 0);
	check_null(l, "share");
	check_num(nth(item(l, "lines"), 1), "share", 0.25);
	cJSON_Delete(doc);

	/* no aggregator: an exact function shows 0 calls, not garbage */
	{
		struct pt_report r = fx->r;

		r.agg = NULL;
		r.lines = lfns;
		r.nlines = 1;
		doc = pt_summary__build(&r);
		assert_non_null(doc);
		l = nth(item(doc, "lines"), 0);
		check_num(l, "calls", 0);
		check_num(l, "exact_total_ms", 0);
		cJSON_Delete(doc);
	}
}

/* lines.txt is written only when there are lines; the document round
 * trips with them in it. */
static void test_lines_emitter_wanted(void **state)
{
	struct fixture *fx = *state;
	cJSON *doc = build_sampled(fx, 10.0000004), *empty = cJSON_CreateObject();
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	struct pt_outputs o_doc = { .doc = doc }, o_fx = { .doc = fx->doc },
			  o_empty = { .doc = empty };

	assert_non_null(pt_emitters[2].wanted);
	assert_true(pt_emitters[2].wanted(&o_doc));
	assert_false(pt_emitters[2].wanted(&o_fx));
	assert_non_null(empty);
	assert_false(pt_emitters[2].wanted(&o_empty));

	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(pt_summary__write_json(f, doc), 0);
	assert_int_equal(fclose(f), 0);
	{
		cJSON *back = cJSON_Parse(buf);

		assert_non_null(back);
		assert_same(doc, back, "$");
		struct pt_outputs o_back = { .doc = back };

		assert_true(pt_emitters[2].wanted(&o_back));
		cJSON_Delete(back);
	}
	free(buf);
	cJSON_Delete(empty);
	cJSON_Delete(doc);
}

/* A native function in `top` (native frames): no line, its library its
 * file; report.md names it without a line */
static void test_top_native(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	struct pt_top *top = pt_top__new();
	const struct pt_sframe fr[] = {
		{ .label = "sgemm_ (libblas.so.3)",
		  .fid = UINT32_MAX,
		  .key = 7,
		  .qualname = "sgemm_",
		  .filename = "libblas.so.3" },
		{ .label = "fwd (m.py:4)",
		  .fid = UINT32_MAX,
		  .line = 4,
		  .key = 8,
		  .qualname = "fwd",
		  .filename = "/srv/m.py",
		  .first_line = 3,
		  .last_line = 5 },
	};
	struct pt_stacks_sample on = { .tid = 1, .weight_ns = MS, .f = fr, .n = 2, .native = 1 };
	const cJSON *e;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	cJSON *doc;

	assert_non_null(top);
	assert_int_equal(pt_top__add(top, &on), 0);
	r.meta.sampling = &sampling;
	r.top = top;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	e = nth(item(item(doc, "top"), "functions"), 0);
	check_str(e, "function", "sgemm_");
	check_str(e, "file", "libblas.so.3");
	check_null(e, "first_line");
	check_null(e, "last_line");
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(pt_report_md__write(f, doc), 0);
	fclose(f);
	assert_non_null(strstr(buf, "| `sgemm_` (`libblas.so.3`) |"));
	free(buf);
	cJSON_Delete(doc);
	pt_top__free(top);
}

/* `top` from a pt_top fed two known stacks: ranked by self on-CPU time,
 * shares of all on-CPU time sampled (1513 ms here), self and total apart;
 * meta.mode "sampling" without a targets file, and what report.md,
 * lines.txt's emitter and lines.txt make of it. */
static void test_top(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	struct pt_top *top = pt_top__new();
	const struct pt_sframe hot[] = {
		{ .label = "hot",
		  .fid = UINT32_MAX,
		  .line = 31,
		  .key = 3,
		  .qualname = "Eng.hot",
		  .filename = "/srv/eng.py",
		  .first_line = 30,
		  .last_line = 33 },
		{ .label = "main",
		  .fid = UINT32_MAX,
		  .line = 5,
		  .key = 1,
		  .qualname = "main",
		  .filename = "/srv/eng.py",
		  .first_line = 1,
		  .last_line = 9 },
	};
	struct pt_stacks_sample on = { .tid = 1, .weight_ns = 1513 * MS / 2, .f = hot, .n = 2 };
	struct pt_stacks_sample off = {
		.tid = 1, .offcpu = true, .weight_ns = 7 * MS, .f = hot + 1, .n = 1
	};
	const cJSON *t, *e;
	struct pt_outputs o = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	cJSON *doc;

	assert_non_null(top);
	assert_int_equal(pt_top__add(top, &on), 0);
	assert_int_equal(pt_top__add(top, &on), 0);
	assert_int_equal(pt_top__add(top, &off), 0);
	r.meta.sampling = &sampling;
	r.top = top;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	t = item(doc, "top");
	CHECK_KEYS(t, "functions_seen", "frames_not_kept", "lines_not_kept", "functions", "lines");
	check_num(t, "functions_seen", 2);
	check_num(t, "frames_not_kept", 0);
	assert_int_equal(cJSON_GetArraySize(item(t, "functions")), 2);
	e = nth(item(t, "functions"), 0);
	CHECK_KEYS(e, "function", "file", "first_line", "last_line", "self", "total",
		   "self_cpu_share", "total_cpu_share");
	check_str(e, "function", "Eng.hot");
	check_str(e, "file", "/srv/eng.py");
	check_num(e, "first_line", 30);
	check_num(e, "last_line", 33);
	CHECK_KEYS(item(e, "self"), "samples", "on_cpu_ms", "off_cpu_ms", "wall_ms");
	check_num(item(e, "self"), "samples", 2);
	check_wall(item(e, "self"), 1513, 0, 1513);
	check_num(e, "self_cpu_share", 1);
	e = nth(item(t, "functions"), 1);
	check_str(e, "function", "main");
	check_wall(item(e, "self"), 0, 7, 7);
	check_wall(item(e, "total"), 1513, 7, 1520);
	check_num(e, "self_cpu_share", 0);
	check_num(e, "total_cpu_share", 1);
	/* lines with self time: hot:31 (on-CPU), then main:5 (off-CPU) */
	assert_int_equal(cJSON_GetArraySize(item(t, "lines")), 2);
	e = nth(item(t, "lines"), 0);
	CHECK_KEYS(e, "function", "file", "line", "self", "total", "self_cpu_share");
	check_str(e, "function", "Eng.hot");
	check_num(e, "line", 31);
	e = nth(item(t, "lines"), 1);
	check_num(e, "line", 5);
	check_wall(item(e, "self"), 0, 7, 7);
	check_wall(item(e, "total"), 1513, 7, 1520);
	check_str(item(doc, "meta"), "mode", "targets");

	/* report.md: the top sections after Host time, names and files */
	f = open_memstream(&buf, &len);
	assert_int_equal(pt_report_md__write(f, doc), 0);
	fclose(f);
	assert_non_null(strstr(buf, "## Top functions (sampled)"));
	assert_non_null(strstr(buf, "| `Eng.hot` (`eng.py`:30) | 1513.000 | 100.0% | 1513.000 | "
				    "100.0% | 1513.000 | 1513.000 |"));
	assert_non_null(strstr(buf, "| `eng.py`:5 | `main` | 0.000 | 0.0% | 7.000 | 1520.000 |"));
	assert_true(strstr(buf, "## Host time (sampled)") < strstr(buf, "## Top functions"));
	assert_non_null(strstr(buf, "## Steps"));
	free(buf);
	cJSON_Delete(doc);

	/* no targets file: meta.mode "sampling", report.md is the samples */
	r.meta.sampling_only = true;
	r.meta.targets_file = NULL;
	doc = pt_summary__build(&r);
	check_str(item(doc, "meta"), "mode", "sampling");
	check_null(item(doc, "meta"), "targets_file");
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(pt_report_md__write(f, doc), 0);
	fclose(f);
	assert_non_null(strstr(buf, "targets none (stacks sampled only)"));
	assert_non_null(strstr(buf, "No targets file: every Python thread's stack was sampled"));
	assert_true(strstr(buf, "## Top functions (sampled)") < strstr(buf, "## Host time"));
	assert_null(strstr(buf, "## Steps"));
	assert_null(strstr(buf, "## Functions"));
	assert_null(strstr(buf, "probes attached"));
	assert_non_null(strstr(buf, "## Health"));
	free(buf);
	/* lines.txt is written then, even with nothing in it */
	o.doc = doc;
	o.flame = (const struct pt_flame *)1; /* only looked at for NULL */
	assert_true(pt_emitters[2].wanted(&o));
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(pt_report_lines__write(f, doc), 0);
	fclose(f);
	assert_non_null(strstr(buf, "No line timings: no Python function was sampled."));
	free(buf);
	cJSON_Delete(doc);
	pt_top__free(top);
}

static void test_json_round_trip(void **state)
{
	struct fixture *fx = *state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cJSON *back;
	const char *at;

	assert_non_null(f);
	assert_int_equal(pt_summary__write_json(f, fx->doc), 0);
	assert_int_equal(fclose(f), 0);
	assert_true(len > 2);
	assert_int_equal(buf[len - 1], '\n');
	assert_int_equal(buf[len - 2], '}');
	/* An exact JSON integer, not 1.7000000001234568e+18. */
	at = strstr(buf, "\"start_unix_ns\":");
	assert_non_null(at);
	at += strlen("\"start_unix_ns\":");
	at += strspn(at, " \t");
	assert_int_equal(strncmp(at, "1700000000123456789,", 20), 0);
	assert_null(strstr(buf, "e+"));

	back = cJSON_Parse(buf);
	assert_non_null(back);
	assert_same(fx->doc, back, "$");
	check_num(item(back, "stats"), "mean_ms", 7.5);
	check_num(nth(item(back, "buckets"), B_ATTN), "share", 0.066667);
	check_num(nth(item(back, "functions"), 0), "mean_ms", 5.000333);
	check_null(nth(item(back, "functions"), 6), "file_offset");
	cJSON_Delete(back);
	free(buf);
}

static void test_write_errors(void **state)
{
	struct fixture *fx = *state;
	FILE *ro;

	assert_int_equal(pt_summary__write_json(NULL, fx->doc), -EINVAL);
	assert_int_equal(pt_summary__write_json(stdout, NULL), -EINVAL);
	ro = fopen("/dev/null", "r");
	assert_non_null(ro);
	assert_true(pt_summary__write_json(ro, fx->doc) < 0);
	fclose(ro);
}

/* Every output file is an entry of the one table; which are wanted
 * follows from what the run has. */
static void test_emitters(void **state)
{
	static const char *const names[] = { "summary.json",  "report.md",     "lines.txt",
					     "stacks.folded", "flame.svg",     "trace.json",
					     "profile.pb.gz", "flame-wall.svg" };
	struct fixture *fx = *state;
	struct pt_outputs o = { .doc = fx->doc };
	struct pt_flame *fl = pt_flame__new();
	struct pt_trace *tr = pt_trace__new(10, 1);
	size_t wanted = 0;

	assert_int_equal(pt_nemitters, 8);
	for (size_t i = 0; i < pt_nemitters; i++) {
		assert_string_equal(pt_emitters[i].filename, names[i]);
		assert_non_null(pt_emitters[i].write);
		wanted += !pt_emitters[i].wanted || pt_emitters[i].wanted(&o);
	}
	/* no lines, no samples, no --trace: summary.json and report.md */
	assert_int_equal(wanted, 2);
	assert_null(pt_emitters[0].wanted);
	assert_null(pt_emitters[1].wanted);
	o.flame = fl;
	o.flame_cpu = fl;
	o.trace = tr;
	assert_true(pt_emitters[3].wanted(&o) && pt_emitters[4].wanted(&o));
	assert_true(pt_emitters[5].wanted(&o));
	assert_true(pt_emitters[6].wanted(&o)); /* pprof: with the samples */
	assert_true(pt_emitters[7].wanted(&o)); /* the wall-time flame graph too */
	pt_flame__free(fl);
	pt_trace__free(tr);
}

/* report.md renders from the document: its step row shows the JSON's
 * numbers. */
static void test_report_md_agrees(void **state)
{
	struct fixture *fx = *state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(pt_report_md__write(f, fx->doc), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(buf, "\n| 2 | 7.500 | 2.500 | 5.000 | 5.000 | 10.000 | 10.000 | "
				    "10.000 | 0.200 |\n"));
	assert_non_null(strstr(buf, "\n| gpu.attn | gpu | 1 | 0.500 | 6.7% | 1.000 | 1.000 | "
				    "1.000 | 1.000 |\n"));
	assert_non_null(strstr(buf, "start 2023-11-14T22:13:20.123Z"));
	free(buf);
}

/* ---- tokens, kv_len and batch (values: stepvals) ---- */

static void vparse(struct pt_config *cfg, const char *text)
{
	char err[1024] = "";
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	assert_non_null(f);
	ret = pt_config__parse(cfg, f, "t.conf", err, sizeof(err));
	fclose(f);
	if (ret)
		fail_msg("config: %s", err);
}

static void vstep(struct pt_stepvals *sv, uint64_t t0_ms, uint64_t t1_ms, unsigned int vmask,
		  double tok, double kv, double batch)
{
	struct pt_step s = { .t_start = t0_ms * MS, .t_end = t1_ms * MS, .vmask = vmask };

	s.val[PT_VROLE_TOKENS] = tok;
	s.val[PT_VROLE_KVLEN] = kv;
	s.val[PT_VROLE_BATCH] = batch;
	pt_stepvals__step(sv, &s);
}

#define VT (1u << PT_VROLE_TOKENS)
#define VK (1u << PT_VROLE_KVLEN)
#define VB (1u << PT_VROLE_BATCH)

static const char vals_conf[] = "step native:exe:engine_step tokens=arg0 kv_len=arg1 batch=ret\n"
				"count tokens native:exe:sample ret\n"
				"set kv_bins 0,512,1024\n";

/*
 * Five counted steps (ms):
 *   [0,2]   tokens 100  kv 100   batch 4
 *   [10,14] tokens 290  kv 600   batch 8
 *   [20,21]             kv 2000  batch 6
 *   [30,33] tokens 60
 *   [40,46] tokens 450  kv 200
 * tokens 900 over 2+4+3+6 = 15 ms: 60000 tok/s; batch mean 18/3 = 6;
 * kv_len mean 2900/4 = 725. Bins: [0,512) 2 steps (2 and 6 ms, 550
 * tokens over 8 ms: 68750 tok/s), [512,1024) 1 step (4 ms, 290 tokens:
 * 72500 tok/s), [1024,) 1 step (1 ms, no tokens).
 */
static void feed_vals(struct pt_stepvals *sv)
{
	vstep(sv, 0, 2, VT | VK | VB, 100, 100, 4);
	vstep(sv, 10, 14, VT | VK | VB, 290, 600, 8);
	vstep(sv, 20, 21, VK | VB, 0, 2000, 6);
	vstep(sv, 30, 33, VT, 60, 0, 0);
	vstep(sv, 40, 46, VT | VK, 450, 200, 0);
	/* reads and misses, as the record path counts them */
	sv->role[PT_VROLE_TOKENS].read = 5;
	sv->role[PT_VROLE_TOKENS].outside = 1;
	sv->role[PT_VROLE_TOKENS].missing[PT_VST_FAULT] = 2;
	sv->role[PT_VROLE_KVLEN].read = 4;
	sv->role[PT_VROLE_BATCH].read = 3;
	pt_stepvals__missed(sv, 0, false, PT_VST_FIRST_CALL); /* tokens, kv_len */
	pt_stepvals__missed(sv, 0, true, PT_VST_LOST);	      /* batch */
	sv->counts[0].read = 9;
	sv->counts[0].outside = 2;
	sv->counts[0].tokens_sum_outside = 13;
	sv->counts[0].missing[PT_VST_TYPE] = 1;
	sv->bad_records = 3;
}

static cJSON *vals_doc(const struct fixture *fx, const char *conf, struct pt_config *cfg,
		       struct pt_stepvals *sv, bool feed)
{
	struct pt_report r = fx->r;
	cJSON *doc;

	vparse(cfg, conf);
	assert_int_equal(pt_stepvals__init(sv, cfg), 0);
	if (feed)
		feed_vals(sv);
	r.vals = sv;
	r.val_records_dropped = 7;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	return doc;
}

static void vals_free(cJSON *doc, struct pt_config *cfg, struct pt_stepvals *sv)
{
	cJSON_Delete(doc);
	pt_stepvals__free(sv);
	pt_config__free(cfg);
}

static void test_values_stats(void **state)
{
	struct fixture *fx = *state;
	struct pt_config cfg;
	struct pt_stepvals sv;
	cJSON *doc = vals_doc(fx, vals_conf, &cfg, &sv, true);
	const cJSON *s = item(doc, "stats");

	CHECK_KEYS(doc, "meta", "stats", "buckets", "functions", "lines", "values",
		   "decode_length_buckets", "gpu", "health");
	CHECK_KEYS(s, "steps", "mean_ms", "std_ms", "min_ms", "p50_ms", "p90_ms", "p99_ms",
		   "max_ms", "steps_per_s", "time_ms", "warmup_steps_skipped", "incomplete_steps",
		   "tokens", "steps_with_tokens", "tok_per_s", "batch_mean", "kv_len_mean");
	/* the step figures are the aggregator's, untouched */
	check_num(s, "steps", 2);
	check_num(s, "mean_ms", 7.5);
	check_num(s, "tokens", 900);
	check_num(s, "steps_with_tokens", 4);
	check_num(s, "tok_per_s", 60000);
	check_num(s, "batch_mean", 6);
	check_num(s, "kv_len_mean", 725);
	vals_free(doc, &cfg, &sv);
}

static void test_values_roles(void **state)
{
	struct fixture *fx = *state;
	struct pt_config cfg;
	struct pt_stepvals sv;
	cJSON *doc = vals_doc(fx, vals_conf, &cfg, &sv, true);
	const cJSON *v = item(doc, "values"), *e, *m;

	CHECK_KEYS(v, "tokens", "kv_len", "batch", "count_tokens", "records_dropped",
		   "bad_records");
	check_num(v, "records_dropped", 7);
	check_num(v, "bad_records", 3);

	e = item(v, "tokens");
	CHECK_KEYS(e, "probe", "expr", "read", "outside_step", "steps_with_value",
		   "steps_without_value", "missing", "missing_total");
	check_str(e, "probe", "native:exe:engine_step");
	check_str(e, "expr", "arg0");
	check_num(e, "read", 5);
	check_num(e, "outside_step", 1);
	check_num(e, "steps_with_value", 4);
	check_num(e, "steps_without_value", 1);
	check_num(e, "missing_total", 3);
	m = item(e, "missing");
	CHECK_KEYS(m, "unreadable", "first_call");
	check_num(m, "unreadable", 2);
	check_num(m, "first_call", 1);

	e = item(v, "kv_len");
	CHECK_KEYS(e, "probe", "expr", "reduce", "read", "outside_step", "steps_with_value",
		   "steps_without_value", "missing", "missing_total");
	check_str(e, "expr", "arg1");
	check_str(e, "reduce", "mean");
	check_num(e, "read", 4);
	check_num(e, "outside_step", 0);
	check_num(e, "steps_with_value", 4);
	check_num(e, "steps_without_value", 1);
	check_num(e, "missing_total", 1);
	CHECK_KEYS(item(e, "missing"), "first_call");

	e = item(v, "batch");
	check_str(e, "expr", "ret");
	check_num(e, "read", 3);
	check_num(e, "steps_with_value", 3);
	check_num(e, "steps_without_value", 2);
	check_num(e, "missing_total", 1);
	CHECK_KEYS(item(e, "missing"), "lost");
	check_num(item(e, "missing"), "lost", 1);

	assert_int_equal(cJSON_GetArraySize(item(v, "count_tokens")), 1);
	e = nth(item(v, "count_tokens"), 0);
	CHECK_KEYS(e, "probe", "expr", "read", "outside_step", "tokens_outside_step", "missing",
		   "missing_total");
	check_str(e, "probe", "native:exe:sample");
	check_str(e, "expr", "ret");
	check_num(e, "read", 9);
	check_num(e, "outside_step", 2);
	check_num(e, "tokens_outside_step", 13);
	check_num(e, "missing_total", 1);
	CHECK_KEYS(item(e, "missing"), "wrong_type");
	vals_free(doc, &cfg, &sv);
}

static void test_values_kv_bins(void **state)
{
	struct fixture *fx = *state;
	struct pt_config cfg;
	struct pt_stepvals sv;
	cJSON *doc = vals_doc(fx, vals_conf, &cfg, &sv, true);
	const cJSON *arr = item(doc, "decode_length_buckets"), *b;

	assert_int_equal(cJSON_GetArraySize(arr), 3);
	b = nth(arr, 0);
	CHECK_KEYS(b, "kv_min", "kv_max", "steps", "mean_ms", "p50_ms", "p90_ms", "p99_ms",
		   "steps_with_tokens", "tokens", "tok_per_s");
	check_num(b, "kv_min", 0);
	check_num(b, "kv_max", 512);
	check_num(b, "steps", 2);
	check_num(b, "mean_ms", 4);
	check_num(b, "p50_ms", 2);
	check_num(b, "p90_ms", 6);
	check_num(b, "p99_ms", 6);
	check_num(b, "steps_with_tokens", 2);
	check_num(b, "tokens", 550);
	check_num(b, "tok_per_s", 68750);

	b = nth(arr, 1);
	check_num(b, "kv_min", 512);
	check_num(b, "kv_max", 1024);
	check_num(b, "steps", 1);
	check_num(b, "mean_ms", 4);
	check_num(b, "p99_ms", 4);
	check_num(b, "steps_with_tokens", 1);
	check_num(b, "tokens", 290);
	check_num(b, "tok_per_s", 72500);

	/* the last bin is open-ended; a bin without token steps has no rate */
	b = nth(arr, 2);
	check_num(b, "kv_min", 1024);
	check_null(b, "kv_max");
	check_num(b, "steps", 1);
	check_num(b, "mean_ms", 1);
	check_num(b, "p50_ms", 1);
	check_num(b, "steps_with_tokens", 0);
	check_num(b, "tokens", 0);
	check_null(b, "tok_per_s");
	vals_free(doc, &cfg, &sv);
}

/* Configured, nothing measured: nulls, not 0, for what needs a step. */
static void test_values_no_steps(void **state)
{
	struct fixture *fx = *state;
	struct pt_config cfg;
	struct pt_stepvals sv;
	cJSON *doc = vals_doc(fx, vals_conf, &cfg, &sv, false);
	const cJSON *s = item(doc, "stats"), *b;

	check_num(s, "tokens", 0);
	check_num(s, "steps_with_tokens", 0);
	check_null(s, "tok_per_s");
	check_null(s, "batch_mean");
	check_null(s, "kv_len_mean");
	assert_int_equal(cJSON_GetArraySize(item(doc, "decode_length_buckets")), 3);
	for (int i = 0; i < 3; i++) {
		b = nth(item(doc, "decode_length_buckets"), i);
		check_num(b, "steps", 0);
		check_null(b, "mean_ms");
		check_null(b, "p50_ms");
		check_null(b, "p90_ms");
		check_null(b, "p99_ms");
		check_num(b, "tokens", 0);
		check_null(b, "tok_per_s");
	}
	b = item(item(doc, "values"), "tokens");
	check_num(b, "read", 0);
	check_num(b, "missing_total", 0);
	assert_null(item(b, "missing")->child); /* an empty object */
	vals_free(doc, &cfg, &sv);
}

/* Only the configured roles show; no kv_len: no bins. */
static void test_values_partial(void **state)
{
	struct fixture *fx = *state;
	struct pt_config cfg;
	struct pt_stepvals sv;
	cJSON *doc;
	const cJSON *s;

	/* built once empty, then again after one step */
	doc = vals_doc(fx, "step native:exe:engine_step tokens=arg0\n", &cfg, &sv, false);
	vstep(&sv, 0, 2, VT, 10, 0, 0);
	cJSON_Delete(doc);
	{
		struct pt_report r = fx->r;

		r.vals = &sv;
		doc = pt_summary__build(&r);
		assert_non_null(doc);
	}
	CHECK_KEYS(doc, "meta", "stats", "buckets", "functions", "lines", "values", "gpu",
		   "health");
	s = item(doc, "stats");
	check_num(s, "tokens", 10);
	check_num(s, "steps_with_tokens", 1);
	check_num(s, "tok_per_s", 5000);
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "batch_mean"));
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "kv_len_mean"));
	CHECK_KEYS(item(doc, "values"), "tokens", "count_tokens", "records_dropped", "bad_records");
	assert_int_equal(cJSON_GetArraySize(item(item(doc, "values"), "count_tokens")), 0);
	vals_free(doc, &cfg, &sv);

	/* batch alone: no token keys */
	doc = vals_doc(fx, "step native:exe:engine_step batch=arg2\n", &cfg, &sv, false);
	s = item(doc, "stats");
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "tokens"));
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "tok_per_s"));
	check_null(s, "batch_mean");
	CHECK_KEYS(item(doc, "values"), "batch", "count_tokens", "records_dropped", "bad_records");
	vals_free(doc, &cfg, &sv);

	/* count tokens alone is a token figure */
	doc = vals_doc(fx, "step native:exe:engine_step\ncount tokens native:exe:s ret\n", &cfg,
		       &sv, false);
	check_num(item(doc, "stats"), "tokens", 0);
	check_null(item(doc, "stats"), "tok_per_s");
	vals_free(doc, &cfg, &sv);

	/* a py kv_len shows its reduction */
	doc = vals_doc(fx, "step py:m.E.step kv_len=arg:seqs\nset kv_len_reduce p90\n", &cfg, &sv,
		       false);
	check_str(item(item(doc, "values"), "kv_len"), "reduce", "p90");
	assert_int_equal(cJSON_GetArraySize(item(doc, "decode_length_buckets")), 7);
	check_num(nth(item(doc, "decode_length_buckets"), 6), "kv_min", 16384);
	check_null(nth(item(doc, "decode_length_buckets"), 6), "kv_max");
	vals_free(doc, &cfg, &sv);
	doc = vals_doc(fx, "step py:m.E.step kv_len=max(arg:seqs)\nset kv_len_reduce p90\n", &cfg,
		       &sv, false);
	check_str(item(item(doc, "values"), "kv_len"), "reduce", "max");
	vals_free(doc, &cfg, &sv);
}

/* No values configured: none of their keys. */
static void test_values_absent(void **state)
{
	struct fixture *fx = *state;
	struct pt_config cfg;
	struct pt_stepvals sv;
	cJSON *doc = vals_doc(fx, "step native:exe:engine_step\n", &cfg, &sv, false);
	const cJSON *s = item(doc, "stats");

	CHECK_KEYS(doc, "meta", "stats", "buckets", "functions", "lines", "gpu", "health");
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "tokens"));
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "steps_with_tokens"));
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "tok_per_s"));
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "batch_mean"));
	assert_null(cJSON_GetObjectItemCaseSensitive(s, "kv_len_mean"));
	vals_free(doc, &cfg, &sv);
	/* and with no stepvals at all (the fixture's document) */
	CHECK_KEYS(fx->doc, "meta", "stats", "buckets", "functions", "lines", "gpu", "health");
}

/* report.md from the built document: the tokens section with its rows. */
static void test_values_report_md(void **state)
{
	struct fixture *fx = *state;
	struct pt_config cfg;
	struct pt_stepvals sv;
	cJSON *doc = vals_doc(fx, vals_conf, &cfg, &sv, true);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *tok, *steps, *bk;

	assert_non_null(f);
	assert_int_equal(pt_report_md__write(f, doc), 0);
	assert_int_equal(fclose(f), 0);
	tok = strstr(buf, "\n## Tokens and sequence lengths\n");
	steps = strstr(buf, "\n## Steps\n");
	bk = strstr(buf, "\n## Buckets\n");
	assert_non_null(tok);
	assert_true(steps && steps < tok && bk && tok < bk);
	assert_non_null(strstr(buf, "\n| 900 | 60000.0 | 4 | 6.00 | 725.0 |\n"));
	assert_non_null(strstr(buf, "\n| 0–512 | 2 | 4.000 | 2.000 | 6.000 | 6.000 | 550 | "
				    "68750.0 |\n"));
	assert_non_null(strstr(buf, "\n| 512–1024 | 1 | 4.000 | 4.000 | 4.000 | 4.000 | 290 | "
				    "72500.0 |\n"));
	assert_non_null(strstr(buf, "\n| 1024+ | 1 | 1.000 | 1.000 | 1.000 | 1.000 | 0 | – |\n"));
	assert_non_null(strstr(buf, "\n- tokens = `arg0` on `native:exe:engine_step`: read 5, 1 "
				    "counted step without it, 1 read outside any step (not used), "
				    "3 missing: unreadable 2 first_call 1\n"));
	assert_non_null(strstr(buf, "\n- count tokens = `ret` on `native:exe:sample`: read 9, 2 "
				    "read outside any step (not used), 1 missing: wrong_type 1\n"));
	assert_non_null(strstr(buf, "\n- 7 value records lost (ring buffer full): raise "
				    "`set ringbuf_mb`\n"));
	free(buf);
	vals_free(doc, &cfg, &sv);
}

/* ---- gpu: the CUPTI shim's records joined with steps and buckets ---- */

static void grec(struct pt_gpu *g, enum pt_gpu_kind kind, uint32_t corr, uint64_t s, uint64_t e,
		 const char *name, uint64_t bytes, uint32_t tid)
{
	struct pt_gpu_rec r = { .kind = kind, .correlation_id = corr, .start_ns = s, .end_ns = e };

	if (kind == PT_GPU_KERNEL) {
		r.kernel.name = name;
	} else if (kind == PT_GPU_MEMCPY) {
		r.memcpy.bytes = bytes;
	} else if (kind == PT_GPU_API) {
		r.api.tid = tid;
		r.api.pid = PID;
	}
	assert_int_equal(pt_gpu__record(g, &r), 0);
}

#define HALF (MS / 2)

/* A C++ kernel as CUPTI names it, and as summary.json shows it. */
#define FILL                                                                                       \
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"                                    \
	"11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"                                                 \
	"T1_"
#define FILL_DEMANGLED                                                                             \
	"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "       \
	"std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"

/*
 * The fixture's steps and bucket calls (10..15 ms, 20..30 ms) on the GPU,
 * in the window 0..100 ms, all on device 0:
 *   corr 1 launched at 11.5 (forward)        sgemm 12..14
 *   corr 2 launched at 12.5 (forward, attn)  FILL 13..14.5 (a C++ kernel, mangled)
 *   corr 3 launched at 24.5 (forward)        sgemm 25..28
 *   corr 4 launched at 21 (schedule)         copy 21..22, 1 MiB
 *   corr 5 no launch record                  sgemm 40..41
 * busy 2.5 + 1 + 3 + 1 = 7.5 ms; per step busy 2.5 and 4, idle 2.5 and 6;
 * every launch delay 0.5 ms.
 */
static struct pt_gpu *gpu_feed(void)
{
	struct pt_gpu *g = pt_gpu__new(NBUCKETS);

	assert_non_null(g);
	assert_int_equal(pt_gpu__step(g, PID, 10 * MS, 15 * MS), 0);
	assert_int_equal(pt_gpu__step(g, PID, 20 * MS, 30 * MS), 0);
	assert_int_equal(pt_gpu__bucket_call(g, PID, 10 * MS, 11 * MS, 1ULL << B_SCHED), 0);
	assert_int_equal(pt_gpu__bucket_call(g, PID, 12 * MS, 13 * MS, 1ULL << B_ATTN), 0);
	assert_int_equal(pt_gpu__bucket_call(g, PID, 11 * MS, 14 * MS, 1ULL << B_FWD), 0);
	assert_int_equal(
		pt_gpu__bucket_call(g, PID, 20 * MS + HALF, 22 * MS + HALF, 1ULL << B_SCHED), 0);
	assert_int_equal(pt_gpu__bucket_call(g, PID, 23 * MS, 29 * MS, 1ULL << B_FWD), 0);
	grec(g, PT_GPU_API, 1, 11 * MS + HALF, 11 * MS + HALF + 5000, NULL, 0, PID);
	grec(g, PT_GPU_KERNEL, 1, 12 * MS, 14 * MS, "sgemm_128x64_nn", 0, 0);
	grec(g, PT_GPU_API, 2, 12 * MS + HALF, 12 * MS + HALF + 5000, NULL, 0, PID);
	grec(g, PT_GPU_KERNEL, 2, 13 * MS, 14 * MS + HALF, FILL, 0, 0);
	grec(g, PT_GPU_API, 3, 24 * MS + HALF, 24 * MS + HALF + 5000, NULL, 0, PID);
	grec(g, PT_GPU_KERNEL, 3, 25 * MS, 28 * MS, "sgemm_128x64_nn", 0, 0);
	grec(g, PT_GPU_API, 4, 21 * MS, 21 * MS + 5000, NULL, 0, PID);
	grec(g, PT_GPU_MEMCPY, 4, 21 * MS, 22 * MS, NULL, 1048576, 0);
	grec(g, PT_GPU_KERNEL, 5, 40 * MS, 41 * MS, "sgemm_128x64_nn", 0, 0);
	grec(g, PT_GPU_SYNC, 0, 29 * MS, 30 * MS, NULL, 0, 0);
	return g;
}

static const struct pt_gpuring_info gpu_info = {
	.version = 1,
	.cupti_version = 24,
	.state = 1,
	.active = true,
	.activations = 2,
	.enable_stall_ns = 1500000,
	.records = 10,
	.delivered = 10,
	.ring_dropped = 2,
	.cupti_dropped = 3,
	.lost = 4,
	.skipped = 5,
	.unknown_kinds = 6,
	.strtab_full = 7,
};

static void test_gpu_section(void **state)
{
	struct fixture *fx = *state;
	struct pt_gpu *g = gpu_feed();
	struct pt_report r = fx->r;
	const cJSON *o, *x, *st;
	cJSON *doc;

	r.gpu = pt_gpu__join(g, 0, 100 * MS);
	assert_non_null(r.gpu);
	r.gpu_info = &gpu_info;
	r.gpu_why = "ignored when there is a stream";
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	o = item(doc, "gpu");
	CHECK_KEYS(o, "source", "shim", "records", "segment_lost", "kernels", "copies", "memsets",
		   "copy_bytes", "api_calls", "syncs", "unmatched", "outside_steps", "folds",
		   "records_late", "records_not_held", "busy_ms", "busy_share", "devices", "steps",
		   "launch_delay", "buckets", "top_kernels", "kernel_names");
	check_str(o, "source", "cupti-shim");
	check_null(o, "segment_lost"); /* the ring's file was not truncated */
	x = item(o, "shim");
	CHECK_KEYS(x, "version", "cupti_version", "active", "activations", "enable_stall_ms",
		   "conflict");
	check_num(x, "version", 1);
	check_num(x, "cupti_version", 24);
	assert_true(cJSON_IsTrue(item(x, "active")));
	check_num(x, "activations", 2);
	check_num(x, "enable_stall_ms", 1.5);
	check_null(x, "conflict");
	x = item(o, "records");
	check_num(x, "delivered", 10);
	check_num(x, "ring_dropped", 2);
	check_num(x, "cupti_dropped", 3);
	check_num(x, "lost", 4);
	check_num(x, "invalid", 5);
	check_num(x, "unknown_kinds", 6);
	check_num(x, "names_lost", 7);

	check_num(o, "kernels", 4);
	check_num(o, "copies", 1);
	check_num(o, "memsets", 0);
	check_num(o, "copy_bytes", 1048576);
	check_num(o, "api_calls", 4);
	check_num(o, "syncs", 1);
	check_num(o, "unmatched", 1);
	check_num(o, "outside_steps", 0);
	check_num(o, "folds", 0);
	check_num(o, "records_late", 0);
	check_num(o, "records_not_held", 0);
	check_num(o, "busy_ms", 7.5);
	check_num(o, "busy_share", 0.075);

	assert_int_equal(cJSON_GetArraySize(item(o, "devices")), 1);
	x = nth(item(o, "devices"), 0);
	check_num(x, "device", 0);
	check_num(x, "kernels", 4);
	check_num(x, "copies", 1);
	check_num(x, "memsets", 0);
	check_num(x, "busy_ms", 7.5);
	check_num(x, "busy_share", 0.075);

	st = item(o, "steps");
	CHECK_KEYS(st, "steps", "steps_with_gpu", "work_launched", "busy_ms", "idle_ms",
		   "host_bound_share", "busy", "idle");
	check_num(st, "steps", 2);
	check_num(st, "steps_with_gpu", 2);
	check_num(st, "work_launched", 4);
	check_num(st, "busy_ms", 6.5);
	check_num(st, "idle_ms", 8.5);
	check_num(st, "host_bound_share", 0.566667); /* 8.5 / 15 */
	x = item(st, "busy");
	check_num(x, "count", 2);
	check_num(x, "mean_ms", 3.25);
	check_num(x, "max_ms", 4);
	x = item(st, "idle");
	check_num(x, "count", 2);
	check_num(x, "mean_ms", 4.25);
	check_num(x, "max_ms", 6);
	/* the copy has no launch delay; the three kernels 0.5 ms each */
	x = item(o, "launch_delay");
	check_num(x, "count", 3);
	check_num(x, "mean_ms", 0.5);
	check_num(x, "p50_ms", 0.5);
	check_num(x, "max_ms", 0.5);

	assert_int_equal(cJSON_GetArraySize(item(o, "buckets")), NBUCKETS);
	x = nth(item(o, "buckets"), B_SCHED);
	CHECK_KEYS(x, "name", "work_launched", "gpu_ms");
	check_str(x, "name", "engine.schedule");
	check_num(x, "work_launched", 1);
	check_num(x, "gpu_ms", 1);
	x = nth(item(o, "buckets"), B_FWD);
	check_str(x, "name", "engine.forward");
	check_num(x, "work_launched", 3);
	check_num(x, "gpu_ms", 6.5);
	x = nth(item(o, "buckets"), B_ATTN);
	check_str(x, "name", "gpu.attn");
	check_num(x, "work_launched", 1);
	check_num(x, "gpu_ms", 1.5);
	x = nth(item(o, "buckets"), B_IDLE);
	check_num(x, "work_launched", 0);
	check_num(x, "gpu_ms", 0);

	assert_int_equal(cJSON_GetArraySize(item(o, "top_kernels")), 2);
	x = nth(item(o, "top_kernels"), 0);
	CHECK_KEYS(x, "name", "count", "total_ms", "mean_ms", "max_ms", "share_of_busy");
	check_str(x, "name", "sgemm_128x64_nn");
	check_num(x, "count", 3);
	check_num(x, "total_ms", 6);
	check_num(x, "mean_ms", 2);
	check_num(x, "max_ms", 3);
	check_num(x, "share_of_busy", 0.8);
	/* demangled, and the name CUPTI gave; a plain name has no mangled */
	x = nth(item(o, "top_kernels"), 1);
	CHECK_KEYS(x, "name", "mangled", "count", "total_ms", "mean_ms", "max_ms", "share_of_busy");
	check_str(x, "name", FILL_DEMANGLED);
	check_str(x, "mangled", FILL);
	check_num(x, "count", 1);
	check_num(x, "total_ms", 1.5);
	check_num(x, "mean_ms", 1.5);
	check_num(x, "max_ms", 1.5);
	check_num(x, "share_of_busy", 0.2);
	check_num(o, "kernel_names", 2);
	cJSON_Delete(doc);
	pt_gpu__free(g);
}

/* Another CUPTI client held it: the failed call and result by name. */
static void test_gpu_conflict(void **state)
{
	struct fixture *fx = *state;
	struct pt_gpu *g = pt_gpu__new(NBUCKETS);
	struct pt_gpuring_info in = gpu_info;
	struct pt_report r = fx->r;
	const cJSON *o, *c;
	cJSON *doc;

	assert_non_null(g);
	/* BUG (user/gpu.c:440-442, 372, 405): joining no records at all calls
	 * qsort(NULL, 0, ...), undefined; the asan build aborts here. */
	in.active = false;
	in.conflict_call = 4;  /* PTGPU_CALL_SUBSCRIBE */
	in.conflict_code = 39; /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
	r.gpu = pt_gpu__join(g, 0, 100 * MS);
	assert_non_null(r.gpu);
	r.gpu_info = &in;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	o = item(doc, "gpu");
	check_str(o, "source", "cupti-shim");
	assert_true(cJSON_IsFalse(item(item(o, "shim"), "active")));
	c = item(item(o, "shim"), "conflict");
	CHECK_KEYS(c, "call", "result", "code");
	check_str(c, "call", "cuptiSubscribe");
	check_str(c, "call", pt_gpuring__call_name(4));
	check_str(c, "result",
		  "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another CUPTI "
		  "client: torch.profiler, Nsight?)");
	check_str(c, "result", pt_gpuring__result_name(39));
	check_num(c, "code", 39);
	/* nothing recorded: zeros, and no figure from nothing */
	check_num(o, "kernels", 0);
	check_num(o, "busy_ms", 0);
	check_num(o, "busy_share", 0);
	assert_int_equal(cJSON_GetArraySize(item(o, "devices")), 0);
	assert_int_equal(cJSON_GetArraySize(item(o, "top_kernels")), 0);
	check_null(item(o, "steps"), "host_bound_share");
	check_null(item(item(o, "steps"), "idle"), "mean_ms");
	check_num(item(o, "launch_delay"), "count", 0);
	check_null(item(o, "launch_delay"), "p50_ms");
	check_num(nth(item(o, "buckets"), B_FWD), "work_launched", 0);
	cJSON_Delete(doc);

	/* without the shim's info: no shim or records keys */
	r.gpu_info = NULL;
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	o = item(doc, "gpu");
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "shim"));
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "records"));
	check_str(o, "source", "cupti-shim");
	cJSON_Delete(doc);
	pt_gpu__free(g);
}

static void test_gpu_none(void **state)
{
	struct fixture *fx = *state;
	struct pt_report r = fx->r;
	const char *why = "no CUPTI shim in pid 4242 (start the server with "
			  "CUDA_INJECTION64_PATH)";
	const cJSON *o;
	cJSON *doc;

	/* the fixture's document: nothing said, "not read" */
	o = item(fx->doc, "gpu");
	CHECK_KEYS(o, "source", "why");
	check_str(o, "source", "none");
	check_str(o, "why", "not read");

	r.gpu_why = why;
	r.gpu_info = &gpu_info; /* ignored without records */
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	o = item(doc, "gpu");
	CHECK_KEYS(o, "source", "why");
	check_str(o, "source", "none");
	check_str(o, "why", why);
	cJSON_Delete(doc);

	r.gpu_why = "";
	doc = pt_summary__build(&r);
	assert_non_null(doc);
	check_str(item(doc, "gpu"), "why", "not read");
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_key_order, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_meta, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_meta_nulls, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_stats, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_buckets, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_step_other, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_functions, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_health, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_zero_steps, setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_window, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_no_agg, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_python, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_json_round_trip, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_write_errors, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_emitters, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_report_md_agrees, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_sampling_off, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_sampling_native, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_sampling_meta, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_sampling_functions, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_lines, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_lines_emitter_wanted, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_top, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_top_native, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_values_stats, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_values_roles, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_values_kv_bins, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_values_no_steps, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_values_partial, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_values_absent, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_values_report_md, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_section, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_conflict, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_none, setup_fed, teardown),
		cmocka_unit_test_setup_teardown(test_processes_meta, setup_fed, teardown),
		cmocka_unit_test(test_skew_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
