// SPDX-License-Identifier: BSD-2-Clause
/*
 * The probes' own cost, seen from inside: steps of one longer phase and
 * many short probed calls, run twice by the same process, first with
 * nothing attached (the figures proftrace's corrected times should come
 * back to) and then while proftrace is attached. Each step and each call
 * measures itself on CLOCK_MONOTONIC (victim.h).
 *
 * Protocol: prints "ready <pid>"; at a line on stdin runs --steps steps
 * unattached and prints "unattached done"; at the next line runs them
 * again (attached), writes --truth FILE, and with --linger SEC stays
 * SEC seconds more before it exits (scrapes after the last step).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "victim.h"

#define US 1000ull

static struct vt_truth t_step, t_tiny, t_phase;
/* each tiny call's own time, for medians: a loaded machine preempts a
 * few 20 us calls for whole time slices, which moves the mean by more
 * than the probes do, and not by the same in both phases */
static uint64_t *tiny_each;
static size_t ntiny_each, tiny_cap;

VT_FN void ovh_tiny(void)
{
	uint64_t t0 = vt_now();

	vt_spin(20 * US);
	if (ntiny_each < tiny_cap)
		tiny_each[ntiny_each++] = vt_now() - t0;
	vt_add(&t_tiny, t0);
}

VT_FN void ovh_phase(void)
{
	uint64_t t0 = vt_now();

	vt_spin(400 * US);
	vt_add(&t_phase, t0);
}

static int ntiny = 10;

VT_FN void ovh_step(void)
{
	uint64_t t0 = vt_now();

	for (int i = 0; i < ntiny; i++)
		VT_CALL(&t_tiny, ovh_tiny());
	VT_CALL(&t_phase, ovh_phase());
	vt_spin(200 * US);
	vt_add(&t_step, t0);
}

static void run(uint64_t *dur, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t t0 = vt_now();

		ovh_step();
		dur[i] = vt_now() - t0;
	}
}

static void dump_u64s(FILE *f, const char *name, const uint64_t *v, int n, const char *end)
{
	fprintf(f, "  \"%s\": [", name);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	fprintf(f, "]%s\n", end);
}

int main(int argc, char **argv)
{
	const char *truth = NULL;
	int nsteps = 200, linger = 0;
	uint64_t *un, *at, *tiny_un, *tiny_at, tiny_un_ns, tiny_un_calls;
	size_t ntiny_un;
	char buf[64];
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			nsteps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--tiny") && i + 1 < argc)
			ntiny = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else if (!strcmp(argv[i], "--linger") && i + 1 < argc)
			linger = atoi(argv[++i]);
		else
			return 2;
	}
	un = calloc((size_t)nsteps, sizeof(*un));
	at = calloc((size_t)nsteps, sizeof(*at));
	tiny_cap = (size_t)nsteps * (size_t)(ntiny > 0 ? ntiny : 0);
	tiny_un = calloc(tiny_cap + 1, sizeof(*tiny_un));
	tiny_at = calloc(tiny_cap + 1, sizeof(*tiny_at));
	if (!un || !at || !tiny_un || !tiny_at)
		return 1;
	tiny_each = tiny_un;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(buf, sizeof(buf), stdin))
		return 3;
	run(un, nsteps);
	tiny_un_ns = t_tiny.total_ns;
	tiny_un_calls = t_tiny.calls;
	ntiny_un = ntiny_each;
	tiny_each = tiny_at;
	ntiny_each = 0;
	memset(&t_tiny, 0, sizeof(t_tiny));
	memset(&t_step, 0, sizeof(t_step));
	memset(&t_phase, 0, sizeof(t_phase));
	printf("unattached done\n");
	if (!fgets(buf, sizeof(buf), stdin))
		return 3;
	run(at, nsteps);
	if (linger)
		sleep((unsigned int)linger);
	if (!truth)
		return 0;
	f = fopen(truth, "w");
	if (!f)
		return 1;
	fprintf(f, "{\n  \"steps\": %d,\n  \"tiny_per_step\": %d,\n", nsteps, ntiny);
	fprintf(f, "  \"unattached_tiny_ns\": %llu,\n  \"unattached_tiny_calls\": %llu,\n",
		(unsigned long long)tiny_un_ns, (unsigned long long)tiny_un_calls);
	fprintf(f, "  \"attached_tiny_ns\": %llu,\n  \"attached_step_ns\": %llu,\n",
		(unsigned long long)t_tiny.total_ns, (unsigned long long)t_step.total_ns);
	dump_u64s(f, "unattached_tiny_ns_each", tiny_un, (int)ntiny_un, ",");
	dump_u64s(f, "attached_tiny_ns_each", tiny_at, (int)ntiny_each, ",");
	dump_u64s(f, "unattached_step_ns", un, nsteps, ",");
	dump_u64s(f, "attached_step_ns_each", at, nsteps, "");
	fprintf(f, "}\n");
	fclose(f);
	return 0;
}
