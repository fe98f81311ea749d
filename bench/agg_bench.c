// SPDX-License-Identifier: BSD-2-Clause
/*
 * agg_bench: how many records per second pt_agg__record takes.
 *
 * A synthetic stream, generated in memory batch by batch so only the
 * aggregator is timed: 4 threads, each running steps (call mode) that hold
 * nested bucket calls and leaf calls, interleaved in runs of 32 records the
 * way ring-buffer batches interleave threads.
 *
 * Usage: agg_bench [records]   (default 10M)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "aggregate/agg.h"

enum { F_STEP, F_A, F_B, F_LEAF, NFIDS };

#define NTHREADS 4
#define RUN 32
#define BATCH 65536

/* One step's records, times relative to its start (before jitter). */
struct tmpl {
	uint32_t type, fid, depth;
	uint64_t t_entry, t_exit;
};

static struct tmpl tmpl[256];
static size_t ntmpl;
static uint64_t tmpl_len;

static size_t open_stack[PT_MAX_DEPTH];
static uint32_t open_depth;

static void t_in(uint32_t fid, uint64_t t)
{
	tmpl[ntmpl] = (struct tmpl){ PT_REC_ENTRY, fid, open_depth, t, 0 };
	open_stack[open_depth++] = ntmpl++;
}

static void t_out(uint64_t t)
{
	const struct tmpl *e = &tmpl[open_stack[--open_depth]];

	tmpl[ntmpl++] = (struct tmpl){ PT_REC_EXIT, e->fid, open_depth, e->t_entry, t };
}

static void t_call(uint32_t fid, uint64_t t0, uint64_t t1)
{
	t_in(fid, t0);
	t_out(t1);
}

/* step { 8 x (A { L L } B { L }) , 4 x L }: 90 records */
static void build_template(void)
{
	uint64_t t = 0;
	int i;

	t_in(F_STEP, t);
	for (i = 0; i < 8; i++) {
		t_in(F_A, t += 100);
		t_call(F_LEAF, t + 50, t + 300);
		t_call(F_LEAF, t + 400, t + 900);
		t_out(t += 1000);
		t_in(F_B, t += 50);
		t_call(F_LEAF, t + 10, t + 200);
		t_out(t += 400);
	}
	for (i = 0; i < 4; i++, t += 300)
		t_call(F_LEAF, t + 100, t + 250);
	t_out(t += 100);
	tmpl_len = t + 1000;
}

struct gen {
	uint32_t tid;
	size_t pos;	/* next template record */
	uint64_t base;	/* start of the current step */
	uint32_t scale; /* jitter: offsets * scale / 64 */
	uint64_t rng;
};

static uint32_t gen_rand(struct gen *g)
{
	g->rng = g->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(g->rng >> 33);
}

static void gen_next(struct gen *g, struct pt_rec *r)
{
	const struct tmpl *e = &tmpl[g->pos];

	r->type = e->type;
	r->fid = e->fid;
	r->pid = 1000;
	r->tid = g->tid;
	r->depth = e->depth;
	r->flags = 0;
	r->t_entry = g->base + e->t_entry * g->scale / 64;
	r->t_exit = e->type == PT_REC_EXIT ? g->base + e->t_exit * g->scale / 64 : 0;
	if (++g->pos == ntmpl) {
		g->pos = 0;
		g->base += tmpl_len * g->scale / 64;
		g->scale = 64 + gen_rand(g) % 32;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct pt_agg_opts opts = {
		.nbuckets = 2,
		.step_mode = PT_STEP_CALL,
		.warmup_steps = 10,
	};
	uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000000, done = 0;
	struct gen gens[NTHREADS];
	struct pt_rec *batch;
	struct pt_agg *a;
	double secs = 0, t0;
	size_t n, i, k;

	build_template();
	batch = malloc(BATCH * sizeof(*batch));
	a = pt_agg__new(&opts);
	if (!batch || !a) {
		fprintf(stderr, "agg_bench: out of memory\n");
		return 1;
	}
	pt_agg__set_func(a, F_STEP, true, 0);
	pt_agg__set_func(a, F_A, false, 1);
	pt_agg__set_func(a, F_B, false, 2);
	pt_agg__set_func(a, F_LEAF, false, 0);
	for (k = 0; k < NTHREADS; k++)
		gens[k] = (struct gen){
			.tid = 2000 + k, .base = 1000000 * (k + 1), .scale = 64, .rng = k + 1
		};

	k = 0;
	while (done < total) {
		n = total - done < BATCH ? total - done : BATCH;
		for (i = 0; i < n; i++) {
			if (i % RUN == 0)
				k = (k + 1) % NTHREADS;
			gen_next(&gens[k], &batch[i]);
		}
		t0 = now();
		for (i = 0; i < n; i++)
			pt_agg__record(a, &batch[i]);
		secs += now() - t0;
		done += n;
	}
	t0 = now();
	pt_agg__finish(a);
	secs += now() - t0;

	printf("agg_bench: %llu records in %.3f s: %.1fM records/s\n", (unsigned long long)done,
	       secs, done / secs / 1e6);
	/* Keep the work observable (and a sanity figure for whoever reads). */
	fprintf(stderr, "agg_bench: %llu steps counted, %llu bad records\n",
		(unsigned long long)pt_agg__steps(a)->dur.count,
		(unsigned long long)pt_agg__health(a)->bad_records);
	pt_agg__free(a);
	free(batch);
	return 0;
}
