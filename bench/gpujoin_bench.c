// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpujoin_bench: what the end-of-run GPU join (aggregate/gpu.c) costs
 * proftrace, fold included: records fed per second, the longest a single
 * record's call took (a fold happens inside one: proftrace's loop pauses
 * that long), the final join, and the folds, late and dropped records.
 *
 * Synthetic streams in time order at the default bound (4,194,304 held
 * records) and lag (30 s), one thread of 1 ms steps, each with a bucket
 * call, launch calls and their kernels on one device:
 *   - 5 launches a step: 12,000 records per second of the target's time
 *     (a fold every ~5 minutes of it);
 *   - 80 launches a step: 162,000 a second (the bound fills within the
 *     lag: the shrunk lag of a fast stream).
 *
 * Usage: gpujoin_bench
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "aggregate/gpu.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void run(unsigned int launches, uint64_t steps)
{
	struct pt_gpu *g = pt_gpu__new(1);
	const struct pt_gpu_result *R;
	uint64_t records = 0;
	double t0, t1, worst = 0;
	uint32_t corr = 0;

	if (!g) {
		fprintf(stderr, "gpujoin_bench: out of memory\n");
		exit(1);
	}
	t0 = now();
	for (uint64_t st = 0; st < steps; st++) {
		uint64_t base = 1000000000ull + st * 1000000ull, gap = 900000 / launches;

		for (unsigned int j = 0; j < launches; j++) {
			struct pt_gpu_rec a = { .kind = PT_GPU_API,
						.correlation_id = ++corr,
						.start_ns = base + j * gap,
						.end_ns = base + j * gap + 2000 };
			struct pt_gpu_rec k = { .kind = PT_GPU_KERNEL,
						.correlation_id = corr,
						.start_ns = base + j * gap + 5000,
						.end_ns = base + j * gap + 5000 + gap * 8 / 10 };
			double c = now();

			a.api.tid = 7;
			k.kernel.name = j & 1 ? "gemm" : "attn";
			if (pt_gpu__record(g, &a) || pt_gpu__record(g, &k))
				exit(1);
			c = now() - c;
			if (c > worst)
				worst = c;
		}
		if (pt_gpu__bucket_call(g, 7, base + 1000, base + 950000, 1) ||
		    pt_gpu__step(g, 7, base, base + 990000))
			exit(1);
		records += 2ull * launches + 2;
	}
	t1 = now();
	R = pt_gpu__join(g, 0, UINT64_MAX);
	if (!R)
		exit(1);
	printf("| %u | %.0f | %llu | %.2f | %.0f | %.0f | %.2f | %llu | %llu | %llu |\n", launches,
	       (double)records / ((double)steps / 1000.0), (unsigned long long)records,
	       (double)records / (t1 - t0) / 1e6, worst * 1e3,
	       (double)(t1 - t0) * 1e9 / (double)records, now() - t1, (unsigned long long)R->folds,
	       (unsigned long long)R->late, (unsigned long long)R->not_held);
	pt_gpu__free(g);
}

int main(void)
{
	printf("| launches/step | records/s of target time | records | M records/s fed | "
	       "longest call ms (a fold) | ns/record | final join s | folds | late | not "
	       "held |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	run(5, 800000);
	run(80, 120000);
	return 0;
}
