// SPDX-License-Identifier: BSD-2-Clause
/*
 * The GPU join on rings of real runs: tests/fixtures/gpu holds what the
 * CUPTI shim wrote on an NVIDIA H200 (CUDA 13.0, CUPTI 130001, driver
 * 580.159.04; `make gpu-check` with PT_GPU_CAPTURE, read by gpuring_dump
 * through proftrace's reader) for three victims, with each victim's own
 * truth from the same run:
 *
 *   victim_gpu    30 steps: 8 runtime launches (cudaLaunchKernel), 2
 *                 driver launches (cuLaunchKernelEx), a CUDA graph of 4
 *                 kernels, a memset, a copy and an event wait each; the
 *                 truth has every host call's window and CUDA-event times
 *   torch         40 steps of the PyTorch decode loop (victim_torch.py):
 *                 cuBLAS (nvjet, driver launches), elementwise kernels,
 *                 softmax/argmax, a copy to the host, a Triton kernel
 *   torch_graph   the same with the forward pass one graph replay
 *
 * Each ring is replayed through pt_gpu with the victim's steps and bucket
 * calls, and every figure is checked against the victim's truth and an
 * oracle written here the plain way (each piece of work to its launch
 * record by correlation id, that record's thread and time to the
 * victim's own call windows): nothing a fake made up.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include <cmocka.h>

#include "aggregate/gpu.h"

#define DIR "tests/fixtures/gpu/"
#define MAXB 8
#define CBID_cuLaunchKernelEx 652
#define CBID_cuGraphLaunch 514

struct call {
	uint64_t s, e;
	int b;
};

struct fixture {
	struct pt_gpu_rec *r;
	size_t n;
	char **names;
	size_t nnames;
	uint64_t (*steps)[2];
	size_t nsteps;
	struct call *calls;
	size_t ncalls;
	uint32_t tid;
	cJSON *truth;
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long len;

	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

static uint64_t u64(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_true(cJSON_IsNumber(v));
	return (uint64_t)v->valuedouble;
}

/* One JSON line of gpuring_dump -o into a record. */
static void parse_rec(struct fixture *fx, const cJSON *o, struct pt_gpu_rec *r)
{
	const cJSON *name;

	memset(r, 0, sizeof(*r));
	r->kind = (enum pt_gpu_kind)u64(o, "kind");
	r->start_ns = u64(o, "start_ns");
	r->end_ns = u64(o, "end_ns");
	r->correlation_id = (uint32_t)u64(o, "corr");
	switch (r->kind) {
	case PT_GPU_KERNEL:
		name = cJSON_GetObjectItemCaseSensitive(o, "name");
		assert_true(cJSON_IsString(name));
		fx->names = realloc(fx->names, (fx->nnames + 1) * sizeof(*fx->names));
		fx->names[fx->nnames] = strdup(name->valuestring);
		r->kernel.name = fx->names[fx->nnames++];
		r->kernel.device_id = (uint32_t)u64(o, "device");
		r->kernel.stream_id = (uint32_t)u64(o, "stream");
		r->kernel.graph_id = (uint32_t)u64(o, "graph_id");
		r->kernel.graph_node_id = u64(o, "graph_node_id");
		break;
	case PT_GPU_MEMCPY:
		r->memcpy.bytes = u64(o, "bytes");
		r->memcpy.copy_kind = (uint8_t)u64(o, "copy_kind");
		r->memcpy.stream_id = (uint32_t)u64(o, "stream");
		break;
	case PT_GPU_MEMSET:
		r->memset.bytes = u64(o, "bytes");
		r->memset.stream_id = (uint32_t)u64(o, "stream");
		break;
	case PT_GPU_API:
		r->api.driver = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "driver"));
		r->api.cbid = (uint32_t)u64(o, "cbid");
		r->api.what = (uint32_t)u64(o, "what");
		r->api.tid = (uint32_t)u64(o, "tid");
		break;
	default:
		fail_msg("record kind %d", r->kind);
	}
}

static int bucket_of(const char *const *buckets, const char *name)
{
	for (int b = 0; buckets[b]; b++)
		if (!strcmp(buckets[b], name))
			return b;
	fail_msg("no bucket %s", name);
	return -1;
}

/* The calls of a victim_gpu truth are per step, by host function; those
 * of victim_torch are [bucket, start, end] at the top. */
static void add_call(struct fixture *fx, const cJSON *c, const char *const *buckets,
		     const char *const *fns)
{
	const char *what = cJSON_GetArrayItem(c, 0)->valuestring;
	int b = -1;

	for (int i = 0; fns && fns[i]; i++)
		if (!strcmp(fns[i], what))
			b = i;
	if (b < 0)
		b = bucket_of(buckets, what);
	fx->calls = realloc(fx->calls, (fx->ncalls + 1) * sizeof(*fx->calls));
	fx->calls[fx->ncalls++] =
		(struct call){ (uint64_t)cJSON_GetArrayItem(c, 1)->valuedouble,
			       (uint64_t)cJSON_GetArrayItem(c, 2)->valuedouble, b };
}

static void load(struct fixture *fx, const char *name, const char *const *buckets,
		 const char *const *fns)
{
	char path[256], *text, *line, *save = NULL;
	const cJSON *steps, *st, *calls, *c;

	memset(fx, 0, sizeof(*fx));
	snprintf(path, sizeof(path), DIR "%s.records.jsonl", name);
	text = slurp(path);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);

		assert_non_null(o);
		fx->r = realloc(fx->r, (fx->n + 1) * sizeof(*fx->r));
		parse_rec(fx, o, &fx->r[fx->n++]);
		cJSON_Delete(o);
	}
	free(text);
	snprintf(path, sizeof(path), DIR "%s.truth.json", name);
	text = slurp(path);
	fx->truth = cJSON_Parse(text);
	free(text);
	assert_non_null(fx->truth);
	fx->tid = (uint32_t)u64(fx->truth, "tid");
	steps = cJSON_GetObjectItemCaseSensitive(fx->truth, "steps");
	cJSON_ArrayForEach(st, steps)
	{
		fx->steps = realloc(fx->steps, (fx->nsteps + 1) * sizeof(*fx->steps));
		fx->steps[fx->nsteps][0] = u64(st, "host_start_ns");
		fx->steps[fx->nsteps++][1] = u64(st, "host_end_ns");
		calls = cJSON_GetObjectItemCaseSensitive(st, "calls");
		cJSON_ArrayForEach(c, calls) add_call(fx, c, buckets, fns);
	}
	calls = cJSON_GetObjectItemCaseSensitive(fx->truth, "calls");
	cJSON_ArrayForEach(c, calls) add_call(fx, c, buckets, fns);
}

static void unload(struct fixture *fx)
{
	for (size_t i = 0; i < fx->nnames; i++)
		free(fx->names[i]);
	free(fx->names);
	free(fx->r);
	free(fx->steps);
	free(fx->calls);
	cJSON_Delete(fx->truth);
}

/* Replay into a new join: the records in ring order, then the calls and
 * steps (all under the memory bound: no fold). */
static struct pt_gpu *replay(const struct fixture *fx, size_t nb, const struct pt_gpu_result **res)
{
	struct pt_gpu *g = pt_gpu__new(nb);
	uint64_t t0 = UINT64_MAX, t1 = 0;
	size_t i;

	assert_non_null(g);
	for (i = 0; i < fx->n; i++) {
		assert_int_equal(pt_gpu__record(g, &fx->r[i]), 0);
		if (fx->r[i].start_ns < t0)
			t0 = fx->r[i].start_ns;
		if (fx->r[i].end_ns > t1)
			t1 = fx->r[i].end_ns;
	}
	for (i = 0; i < fx->ncalls; i++)
		assert_int_equal(pt_gpu__bucket_call(g, fx->tid, fx->calls[i].s, fx->calls[i].e,
						     1ull << fx->calls[i].b),
				 0);
	for (i = 0; i < fx->nsteps; i++) {
		assert_int_equal(pt_gpu__step(g, fx->tid, fx->steps[i][0], fx->steps[i][1]), 0);
		if (fx->steps[i][0] < t0)
			t0 = fx->steps[i][0];
		if (fx->steps[i][1] > t1)
			t1 = fx->steps[i][1];
	}
	*res = pt_gpu__join(g, t0, t1 + 1);
	return g;
}

struct oracle {
	uint64_t work, kernels, copies, memsets, waits, unmatched, outside;
	uint64_t per_step_min, per_step_max;
	uint64_t b_work[MAXB], b_ns[MAXB];
	uint64_t b_not_cbid[MAXB]; /* work of the bucket not launched by want_cbid[b] */
	uint64_t b_not_graph[MAXB];
};

/* The plain join: for each piece of work, its launch record (linear
 * search by correlation id), the step and the call window containing the
 * record's start on the victim's thread. */
static void oracle(const struct fixture *fx, const uint32_t *want_cbid, struct oracle *o)
{
	uint64_t *per = calloc(fx->nsteps, sizeof(*per));

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < fx->n; i++) {
		const struct pt_gpu_rec *w = &fx->r[i], *a = NULL;
		size_t j, k;

		if (w->kind == PT_GPU_API) {
			o->waits += w->api.what == PT_GPU_API_WAIT;
			continue;
		}
		o->work++;
		o->kernels += w->kind == PT_GPU_KERNEL;
		o->copies += w->kind == PT_GPU_MEMCPY;
		o->memsets += w->kind == PT_GPU_MEMSET;
		for (j = 0; j < fx->n && !a; j++)
			if (fx->r[j].kind == PT_GPU_API &&
			    fx->r[j].correlation_id == w->correlation_id)
				a = &fx->r[j];
		if (!a) {
			o->unmatched++;
			continue;
		}
		for (k = 0; k < fx->nsteps; k++)
			if (fx->steps[k][0] <= a->start_ns && a->start_ns < fx->steps[k][1])
				break;
		if (k == fx->nsteps || a->api.tid != fx->tid) {
			o->outside++;
			continue;
		}
		per[k]++;
		for (j = 0; j < fx->ncalls; j++) {
			const struct call *c = &fx->calls[j];

			if (c->s <= a->start_ns && a->start_ns < c->e) {
				o->b_work[c->b]++;
				o->b_ns[c->b] += w->end_ns - w->start_ns;
				o->b_not_cbid[c->b] += want_cbid && want_cbid[c->b] &&
						       a->api.cbid != want_cbid[c->b];
				o->b_not_graph[c->b] +=
					w->kind == PT_GPU_KERNEL && !w->kernel.graph_id;
			}
		}
	}
	o->per_step_min = UINT64_MAX;
	for (size_t k = 0; k < fx->nsteps; k++) {
		if (per[k] < o->per_step_min)
			o->per_step_min = per[k];
		if (per[k] > o->per_step_max)
			o->per_step_max = per[k];
	}
	free(per);
}

/* Every figure of the join against the oracle. */
static void check_against(const struct fixture *fx, const struct pt_gpu_result *R,
			  const struct oracle *o, size_t nb)
{
	assert_int_equal(o->unmatched, 0);
	assert_int_equal(o->outside, 0);
	assert_int_equal(R->unmatched, 0);
	assert_int_equal(R->outside_steps, 0);
	assert_int_equal(R->late, 0);
	assert_int_equal(R->not_held, 0);
	assert_int_equal(R->kernels, o->kernels);
	assert_int_equal(R->copies, o->copies);
	assert_int_equal(R->memsets, o->memsets);
	assert_int_equal(R->syncs, o->waits);
	assert_int_equal(R->steps, fx->nsteps);
	assert_int_equal(R->steps_with_gpu, fx->nsteps);
	assert_int_equal(R->step_items, o->work);
	assert_int_equal(R->launch_delay.count, o->kernels);
	/* the same work in every step, as the victim launches it */
	assert_int_equal(o->per_step_min, o->per_step_max);
	assert_int_equal(o->per_step_min * fx->nsteps, o->work);
	for (size_t b = 0; b < nb; b++) {
		assert_int_equal(R->buckets[b].kernels, o->b_work[b]);
		assert_int_equal(R->buckets[b].gpu_ns, o->b_ns[b]);
	}
}

/* victim_gpu: CUDA-event truth for every kernel name, the bucket of each
 * launch path, and the oracle. */
static void test_replay_victim_gpu(void **state)
{
	static const char *const buckets[] = { "gpu.launch", "gpu.driver", "gpu.graph",
					       "gpu.memset", "gpu.sync",   NULL };
	static const char *const fns[] = { "gpu_launch", "gpu_launch_drv", "gpu_launch_graph",
					   "gpu_memset", "gpu_sync",	   NULL };
	static const char *const kn[] = { "ptv_spin", "ptv_spin_short", "ptv_spin_drv",
					  "ptv_spin_graph" };
	const struct pt_gpu_result *R;
	double want_ms[4] = { 0 }, got_ms[4] = { 0 };
	uint64_t want_n[4] = { 0 }, got_n[4] = { 0 };
	struct fixture fx;
	struct oracle o;
	struct pt_gpu *g;
	const cJSON *st, *k;
	size_t steps, i;
	int j;

	load(&fx, "victim_gpu", buckets, fns);
	steps = fx.nsteps;
	assert_int_equal(steps, 30);
	g = replay(&fx, 5, &R);
	oracle(&fx, NULL, &o);
	check_against(&fx, R, &o, 5);
	/* what the victim launched, by its own count */
	assert_int_equal(R->kernels, steps * (8 + 2 + 4));
	assert_int_equal(R->copies, steps);
	assert_int_equal(R->memsets, steps);
	assert_int_equal(R->syncs, steps); /* cudaEventSynchronize */
	assert_int_equal(R->buckets[0].kernels, steps * 8);
	assert_int_equal(R->buckets[1].kernels, steps * 2);
	assert_int_equal(R->buckets[2].kernels, steps * 4);
	assert_int_equal(R->buckets[3].kernels, steps);
	assert_int_equal(R->buckets[4].kernels, 0);
	/* GPU time per name against the victim's CUDA events: 3% (events
	 * around each kernel also hold the launch gaps between them; a
	 * graph's are around the whole graph) */
	cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(fx.truth, "steps"))
	{
		cJSON_ArrayForEach(
			k,
			cJSON_GetObjectItemCaseSensitive(
				st,
				"kernels")) for (j = 0; j < 4;
						 j++) if (!strcmp(kn[j],
								  cJSON_GetObjectItemCaseSensitive(
									  k, "name")
									  ->valuestring))
		{
			want_n[j]++;
			want_ms[j] += cJSON_GetObjectItemCaseSensitive(k, "gpu_ms")->valuedouble;
		}
		k = cJSON_GetObjectItemCaseSensitive(st, "graph");
		want_n[3] += u64(k, "kernels");
		want_ms[3] += cJSON_GetObjectItemCaseSensitive(k, "gpu_ms")->valuedouble;
	}
	for (i = 0; i < R->ntop; i++)
		for (j = 0; j < 4; j++)
			if (!strcmp(R->top[i].name, kn[j])) {
				got_n[j] = R->top[i].count;
				got_ms[j] = (double)R->top[i].total_ns / 1e6;
			}
	for (j = 0; j < 4; j++) {
		assert_int_equal(got_n[j], want_n[j]);
		if (got_ms[j] < want_ms[j] * 0.97 || got_ms[j] > want_ms[j] * 1.03)
			fail_msg("%s: %.3f ms, CUDA events %.3f ms", kn[j], got_ms[j], want_ms[j]);
	}
	pt_gpu__free(g);
	unload(&fx);
}

/* The PyTorch loop, eager and with the forward pass a graph: every piece
 * of work joined, the oracle's buckets to the ns; the Triton kernel
 * launched by cuLaunchKernelEx in model.post; the graph's kernels in
 * model.forward, launched by cuGraphLaunch. */
static void replay_torch(const char *name, bool graph)
{
	static const char *const buckets[] = { "host.schedule", "model.forward", "model.sample",
					       "model.post", NULL };
	uint32_t want_cbid[4] = { 0, graph ? CBID_cuGraphLaunch : 0, 0, CBID_cuLaunchKernelEx };
	const struct pt_gpu_result *R;
	struct pt_gpu *g;
	struct fixture fx;
	struct oracle o;

	load(&fx, name, buckets, NULL);
	assert_int_equal(fx.nsteps, 40);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fx.truth, "triton")));
	assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fx.truth, "graph")), graph);
	g = replay(&fx, 4, &R);
	oracle(&fx, want_cbid, &o);
	check_against(&fx, R, &o, 4);
	assert_int_equal(R->buckets[0].kernels, 0); /* the scheduler is pure Python */
	assert_true(R->buckets[1].kernels >= fx.nsteps * 16);
	assert_int_equal(R->buckets[3].kernels, fx.nsteps); /* one Triton kernel a step */
	assert_int_equal(o.b_not_cbid[3], 0);
	if (graph) {
		assert_int_equal(o.b_not_cbid[1], 0);
		assert_int_equal(o.b_not_graph[1], 0);
	}
	pt_gpu__free(g);
	unload(&fx);
}

static void test_replay_torch(void **state)
{
	replay_torch("torch", false);
}

static void test_replay_torch_graph(void **state)
{
	replay_torch("torch_graph", true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_victim_gpu),
		cmocka_unit_test(test_replay_torch),
		cmocka_unit_test(test_replay_torch_graph),
	};

	return cmocka_run_group_tests_name("gpu_replay", tests, NULL, NULL);
}
