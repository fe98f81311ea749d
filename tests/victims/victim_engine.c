// SPDX-License-Identifier: BSD-2-Clause
/*
 * A native "inference engine" for integration tests: steps made of
 * schedule / prepare / forward (with model layers) / sample phases that spin
 * for known times, a recursive phase, optional threads and an optional
 * library dlopen'ed after proftrace attached. Every function measures
 * itself; the totals are written as JSON (--truth FILE) at exit.
 *
 * Protocol with the test driver (stdin/stdout, line based):
 *   victim prints "ready <pid>", waits for a line; runs; with --dlopen it
 *   prints "dlopened" after dlopen() and waits for another line before the
 *   steps (so the driver can wait for proftrace to attach the library).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "victim.h"

static struct vt_truth t_step, t_loop, t_sched, t_prep, t_fwd, t_layer, t_sample, t_recurse_outer,
	t_recurse_all, t_jump, t_idle;
static uint64_t iter_ns, iter_count; /* loop_top to loop_top, per thread summed */
static void (*dl_work)(void);
static struct vt_truth *dl_truth;
static int longjmp_every; /* 0: never */

#define US 1000ull

VT_FN void model_layer(void)
{
	uint64_t t0 = vt_now();

	vt_spin(100 * US);
	vt_add(&t_layer, t0);
}

VT_FN void engine_schedule(void)
{
	uint64_t t0 = vt_now();

	vt_spin(200 * US);
	vt_add(&t_sched, t0);
}

VT_FN void engine_prepare(void)
{
	uint64_t t0 = vt_now();

	vt_spin(150 * US);
	vt_add(&t_prep, t0);
}

VT_FN void engine_forward(void)
{
	uint64_t t0 = vt_now();

	for (int i = 0; i < 4; i++)
		VT_CALL(&t_layer, model_layer());
	vt_spin(50 * US);
	vt_add(&t_fwd, t0);
}

VT_FN void engine_sample(void)
{
	uint64_t t0 = vt_now();

	vt_spin(100 * US);
	vt_add(&t_sample, t0);
}

/* Recursion: a bucket must count only the outermost call. */
VT_FN void engine_recurse(int depth)
{
	uint64_t t0 = vt_now();

	vt_spin(20 * US);
	if (depth > 1)
		VT_CALL(&t_recurse_all, engine_recurse(depth - 1));
	VT_BARRIER();
	if (depth == 3) /* the outermost call, as engine_step makes it */
		vt_add(&t_recurse_outer, t0);
	vt_add(&t_recurse_all, t0);
}

static __thread jmp_buf jb;
static __thread uint64_t step_t0, step_t1;

/* Leaves through longjmp: its return probe never fires. */
VT_FN void engine_jump_inner(void)
{
	vt_spin(10 * US);
	longjmp(jb, 1);
}

VT_FN void engine_jump(void)
{
	uint64_t t0 = vt_now();

	if (setjmp(jb) == 0)
		engine_jump_inner(); /* never returns: no call to measure */
	vt_add(&t_jump, t0);
}

VT_FN void engine_step(int i)
{
	uint64_t t0 = vt_now(), r0;

	VT_CALL(&t_sched, engine_schedule());
	VT_CALL(&t_prep, engine_prepare());
	VT_CALL(&t_fwd, engine_forward());
	VT_CALL(&t_sample, engine_sample());
	r0 = vt_now();
	engine_recurse(3);
	vt_outer(&t_recurse_outer, r0);
	vt_outer(&t_recurse_all, r0);
	if (dl_work)
		VT_CALL(dl_truth, dl_work());
	if (longjmp_every && i % longjmp_every == 0)
		VT_CALL(&t_jump, engine_jump());
	vt_spin(30 * US); /* step.other */
	step_t0 = t0;
	step_t1 = vt_now();
	vt_add(&t_step, t0);
}

/* Top of the loop: the probe for step mode=iteration. */
static __thread uint64_t loop_t0;

VT_FN void loop_top(void)
{
	uint64_t t0 = vt_now();

	loop_t0 = t0;
	vt_spin(10 * US);
	vt_add(&t_loop, t0);
}

/* Called between steps, outside any step: counts in functions only. */
VT_FN void engine_idle(void)
{
	uint64_t t0 = vt_now();

	vt_spin(40 * US);
	vt_add(&t_idle, t0);
}

static int nsteps = 100;
/* iteration brackets (see test_iteration_mode): summed over threads */
static uint64_t iter_lower_ns, iter_upper_ns;
/* per-step durations of thread 0, inside and around engine_step */
static uint64_t *step_inner, *step_outer;

static void *worker(void *arg)
{
	uint64_t prev = 0, before_first = 0, inner_first = 0, before_last = 0, inner_last = 0;
	int id = (int)(long)arg;

	for (int i = 0; i < nsteps; i++) {
		uint64_t t = vt_now();

		if (prev) {
			__atomic_fetch_add(&iter_ns, t - prev, __ATOMIC_RELAXED);
			__atomic_fetch_add(&iter_count, 1, __ATOMIC_RELAXED);
		}
		prev = t;
		VT_CALL(&t_loop, loop_top());
		if (i == 0) {
			before_first = t;
			inner_first = loop_t0;
		}
		before_last = t;
		inner_last = loop_t0;
		t = vt_now();
		VT_CALL(&t_step, engine_step(i));
		if (id == 0) {
			step_outer[i] = vt_now() - t;
			step_inner[i] = step_t1 - step_t0;
		}
		VT_CALL(&t_idle, engine_idle());
	}
	/* proftrace's iterations span loop_top entry to loop_top entry; each
	 * entry lies between the time before the call and the first statement
	 * inside it. */
	__atomic_fetch_add(&iter_lower_ns, before_last - inner_first, __ATOMIC_RELAXED);
	__atomic_fetch_add(&iter_upper_ns, inner_last - before_first, __ATOMIC_RELAXED);
	return NULL;
}

static void dump_u64s(FILE *f, const char *name, const uint64_t *v, int n)
{
	fprintf(f, "  \"%s\": [", name);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	fprintf(f, "],\n");
}

static void dump(FILE *f, const char *name, const struct vt_truth *t, int last)
{
	fprintf(f, "    \"%s\": {\"calls\": %llu, \"total_ns\": %llu, \"outer_ns\": %llu}%s\n",
		name, (unsigned long long)t->calls, (unsigned long long)t->total_ns,
		(unsigned long long)t->outer_ns, last ? "" : ",");
}

static void wait_line(void)
{
	char buf[64];

	if (!fgets(buf, sizeof(buf), stdin))
		exit(3);
}

int main(int argc, char **argv)
{
	const char *truth = NULL, *lib = NULL;
	int nthreads = 1;
	pthread_t th[64];
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			nsteps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else if (!strcmp(argv[i], "--dlopen") && i + 1 < argc)
			lib = argv[++i];
		else if (!strcmp(argv[i], "--longjmp-every") && i + 1 < argc)
			longjmp_every = atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: %s [--steps N] [--threads T] [--truth FILE] "
				"[--dlopen LIB] [--longjmp-every K]\n",
				argv[0]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 64)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	wait_line();
	if (lib) {
		void *h = dlopen(lib, RTLD_NOW);

		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		dl_work = (void (*)(void))dlsym(h, "dl_work");
		dl_truth = dlsym(h, "dl_truth");
		if (!dl_work || !dl_truth)
			return 1;
		printf("dlopened\n");
		wait_line();
	}
	step_inner = calloc((size_t)nsteps, sizeof(*step_inner));
	step_outer = calloc((size_t)nsteps, sizeof(*step_outer));
	if (!step_inner || !step_outer)
		return 1;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);

	if (truth) {
		f = fopen(truth, "w");
		if (!f)
			return 1;
		fprintf(f, "{\n  \"pid\": %d,\n  \"threads\": %d,\n  \"steps\": %d,\n",
			(int)getpid(), nthreads, nthreads * nsteps);
		fprintf(f, "  \"iterations\": %llu,\n  \"iteration_total_ns\": %llu,\n",
			(unsigned long long)iter_count, (unsigned long long)iter_ns);
		fprintf(f, "  \"iteration_lower_ns\": %llu,\n  \"iteration_upper_ns\": %llu,\n",
			(unsigned long long)iter_lower_ns, (unsigned long long)iter_upper_ns);
		dump_u64s(f, "thread0_step_inner_ns", step_inner, nsteps);
		dump_u64s(f, "thread0_step_outer_ns", step_outer, nsteps);
		fprintf(f, "  \"functions\": {\n");
		dump(f, "engine_step", &t_step, 0);
		dump(f, "loop_top", &t_loop, 0);
		dump(f, "engine_schedule", &t_sched, 0);
		dump(f, "engine_prepare", &t_prep, 0);
		dump(f, "engine_forward", &t_fwd, 0);
		dump(f, "model_layer", &t_layer, 0);
		dump(f, "engine_sample", &t_sample, 0);
		dump(f, "engine_recurse", &t_recurse_all, 0);
		dump(f, "engine_recurse_outer", &t_recurse_outer, 0);
		dump(f, "engine_jump", &t_jump, 0);
		dump(f, "engine_idle", &t_idle, !dl_truth);
		if (dl_truth)
			dump(f, "dl_work", dl_truth, 1);
		fprintf(f, "  }\n}\n");
		fclose(f);
	}
	return 0;
}
