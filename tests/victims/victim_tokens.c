// SPDX-License-Identifier: BSD-2-Clause
/*
 * A decode loop whose steps pass known token counts, KV lengths and batch
 * sizes in their arguments (targets: step native:exe:engine_step
 * tokens=arg0 kv_len=arg1 batch=arg2; count tokens
 * native:exe:sampler_accept ret). It records the truth itself: per step
 * the values, its own duration, and the KV-length bin it falls in.
 *
 * usage: victim_tokens [--steps N] [--truth FILE] [--bursts K --gap-ms G]
 * With --bursts, the steps come in K bursts of N/K steps (the last takes
 * the rest) with G ms of sleep between bursts: K runs.
 * Waits for a line on stdin after printing "ready PID".
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "victim.h"

static const long bins[] = { 0, 512, 1024, 2048, 4096, 8192, 16384 };
#define NBINS (sizeof(bins) / sizeof(bins[0]))

static long bin_steps[NBINS], bin_tokens[NBINS];
static long tok_total, acc_total, batch_total, kv_total, reject_total;
static uint64_t step_ns_total;

/* Accepted tokens of one step: returned, for `count tokens ... ret`. */
VT_FN long sampler_accept(long batch, long step)
{
	VT_BARRIER();
	return batch + step % 3; /* some sequences accept a draft token */
}

/* A 32-bit int argument: tokens rejected by the scheduler, negative so a
 * read of the whole register (upper half not sign-extended) would show. */
VT_FN void engine_reject(int delta)
{
	VT_BARRIER();
	(void)delta;
}

VT_FN void engine_step(long tokens, long kv_len, long batch, long step)
{
	long acc;

	/* longer contexts take longer, as attention does */
	vt_spin(100000 + (uint64_t)kv_len * 20);
	acc = sampler_accept(batch, step);
	acc_total += acc;
	engine_reject(-(int)(step % 5));
	VT_BARRIER();
	(void)tokens;
}

int main(int argc, char **argv)
{
	const char *truth = NULL;
	int steps = 200, bursts = 1, gap_ms = 0, hold = 0;
	char line[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else if (!strcmp(argv[i], "--bursts") && i + 1 < argc)
			bursts = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--gap-ms") && i + 1 < argc)
			gap_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hold")) /* after the steps, wait for a line */
			hold = 1;
		else
			return 2;
	}
	if (bursts < 1 || bursts > steps)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	for (int i = 0; i < steps; i++) {
		long kv = (i * 797L) % 20000; /* every bin, the open one too */
		long batch = 1 + i % 64;
		long tokens = batch;
		uint64_t t0 = vt_now();
		size_t b;

		if (i && i % (steps / bursts) == 0 && i / (steps / bursts) < bursts)
			usleep((useconds_t)gap_ms * 1000); /* idle: the next burst is a new run */
		engine_step(tokens, kv, batch, i);
		reject_total -= i % 5;
		step_ns_total += vt_now() - t0;
		for (b = NBINS; b-- > 1 && kv < bins[b];)
			;
		bin_steps[b]++;
		bin_tokens[b] += tokens;
		tok_total += tokens;
		batch_total += batch;
		kv_total += kv;
	}
	if (truth) {
		FILE *f = fopen(truth, "w");

		if (!f)
			return 1;
		fprintf(f, "{\"bursts\": %d, \"burst_steps\": %d, ", bursts, steps / bursts);
		fprintf(f,
			"\"rejected\": %ld, \"steps\": %d, \"tokens\": %ld, \"accepted\": %ld, "
			"\"batch_sum\": %ld, \"kv_sum\": %ld, \"step_ns\": %llu, \"bins\": [",
			reject_total, steps, tok_total, acc_total, batch_total, kv_total,
			(unsigned long long)step_ns_total);
		for (size_t b = 0; b < NBINS; b++)
			fprintf(f, "%s{\"lo\": %ld, \"steps\": %ld, \"tokens\": %ld}",
				b ? ", " : "", bins[b], bin_steps[b], bin_tokens[b]);
		fprintf(f, "]}\n");
		fclose(f);
	}
	if (hold) {
		printf("steps done\n");
		if (!fgets(line, sizeof(line), stdin))
			return 3;
	}
	return 0;
}
