// SPDX-License-Identifier: BSD-2-Clause
/*
 * victim_ranks: a launcher and its worker processes, like a server with
 * one worker per tensor-parallel rank. The launcher starts --ranks
 * workers (fork + exec, RANK and LOCAL_RANK in their environment), prints
 * "ready <its pid>" and "pids <worker pids...>", and on "go" runs --steps
 * steps in lockstep: it tells every worker to start step i and waits until
 * all are done (the collective at the end of a real step), so step i of
 * every rank starts together.
 *
 * Step i of rank r spins (rank_compute) for 1 ms + r * 0.4 ms + (i % 4) *
 * 0.1 ms, then sleeps 0.2 ms (rank_comm): ranks differ by a known amount,
 * so the skew across them is known. Each worker measures every call
 * itself (victim.h) and writes its truth to <truth>.<rank>: steps,
 * per-function totals and each step's own duration.
 *
 * --late K: after go, the launcher also starts one more worker (rank
 * --ranks) that sets itself up for 0.5 s (as a real worker loads its
 * model), runs K steps on its own, without the lockstep, and exits: a
 * child started after proftrace attached. Its pid is printed as
 * "late <pid>". --late-exec: the late worker runs half its steps, writes
 * that truth to <truth>.<rank>.pre and exec's itself (the same pid, a new
 * image) to run the other half after another 0.5 s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "victim.h"

#define MAX_RANKS 8
#define MAX_STEPS 4096

static struct vt_truth t_step, t_compute, t_comm;
static uint64_t step_ns[MAX_STEPS]; /* inside rank_step, per step */
static uint64_t step_t0[MAX_STEPS]; /* when it began (CLOCK_MONOTONIC ns) */
static uint64_t step_outer_ns[MAX_STEPS];

VT_FN void rank_compute(int rank, int i)
{
	uint64_t t0 = vt_now();

	vt_spin(1000000ull + (uint64_t)rank * 400000ull + (uint64_t)(i % 4) * 100000ull);
	vt_add(&t_compute, t0);
}

VT_FN void rank_comm(void)
{
	uint64_t t0 = vt_now();
	struct timespec ts = { 0, 200000 };

	nanosleep(&ts, NULL);
	vt_add(&t_comm, t0);
}

VT_FN void rank_step(int rank, int i)
{
	uint64_t t0 = vt_now(), c;

	c = vt_now();
	rank_compute(rank, i);
	vt_outer(&t_compute, c);
	c = vt_now();
	rank_comm();
	vt_outer(&t_comm, c);
	step_ns[i] = vt_now() - t0;
	step_t0[i] = t0;
	vt_add(&t_step, t0);
}

static void put_truth(FILE *f, const char *name, const struct vt_truth *t, int last)
{
	fprintf(f, "\"%s\":{\"calls\":%llu,\"total_ns\":%llu,\"outer_ns\":%llu}%s", name,
		(unsigned long long)t->calls, (unsigned long long)t->total_ns,
		(unsigned long long)t->outer_ns, last ? "" : ",");
}

/* A worker: one step per "g" line on stdin, "d" on stdout after each. */
static int worker(int rank, int steps, const char *truth, int alone, int reexec)
{
	char path[4096], line[16];
	FILE *f;
	int n = 0;

	if (reexec)
		steps /= 2;

	if (!alone) {
		printf("ready %d\n", getpid());
		fflush(stdout);
	} else {
		struct timespec ts = { 0, 500000000 };

		nanosleep(&ts, NULL);
	}
	while (n < steps && n < MAX_STEPS) {
		uint64_t c;

		if (!alone && !fgets(line, sizeof(line), stdin))
			break;
		c = vt_now();
		rank_step(rank, n);
		step_outer_ns[n] = vt_now() - c;
		vt_outer(&t_step, c);
		n++;
		if (!alone) {
			printf("d\n");
			fflush(stdout);
		} else {
			struct timespec ts = { 0, 500000 };

			nanosleep(&ts, NULL);
		}
	}
	snprintf(path, sizeof(path), "%s.%d%s", truth, rank, reexec ? ".pre" : "");
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "{\"pid\":%d,\"rank\":%d,\"steps\":%d,", getpid(), rank, n);
	put_truth(f, "rank_step", &t_step, 0);
	put_truth(f, "rank_compute", &t_compute, 0);
	put_truth(f, "rank_comm", &t_comm, 0);
	fprintf(f, "\"step_ns\":[");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)step_ns[i]);
	fprintf(f, "],\"step_t0\":[");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)step_t0[i]);
	fprintf(f, "],\"step_outer_ns\":[");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)step_outer_ns[i]);
	fprintf(f, "]}\n");
	if (fclose(f))
		return 1;
	if (reexec) {
		char r[16], st[16];

		snprintf(r, sizeof(r), "%d", rank);
		snprintf(st, sizeof(st), "%d", steps);
		execl("/proc/self/exe", "victim_ranks", "--worker", r, "--steps", st, "--truth",
		      truth, "--alone", (char *)NULL);
		return 1;
	}
	return 0;
}

struct child {
	pid_t pid;
	FILE *to, *from;
};

static int spawn(struct child *c, int rank, int steps, const char *truth, int alone, int reexec)
{
	int in[2], out[2];
	char r[16], s[16];

	if (pipe(in) || pipe(out))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		snprintf(r, sizeof(r), "%d", rank);
		snprintf(s, sizeof(s), "%d", steps);
		setenv("RANK", r, 1);
		setenv("LOCAL_RANK", r, 1);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl("/proc/self/exe", "victim_ranks", "--worker", r, "--steps", s, "--truth",
		      truth, alone ? "--alone" : "--lockstep", reexec ? "--reexec" : NULL,
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->to = fdopen(in[1], "w");
	c->from = fdopen(out[0], "r");
	return c->to && c->from ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *truth = NULL;
	int ranks = 2, steps = 200, rank = -1, late = 0, alone = 0, nk = 0, reexec = 0;
	struct child k[MAX_RANKS + 1];
	char line[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			ranks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--worker") && i + 1 < argc)
			rank = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--late") && i + 1 < argc)
			late = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--alone"))
			alone = 1;
		else if (!strcmp(argv[i], "--reexec") || !strcmp(argv[i], "--late-exec"))
			reexec = 1;
	}
	if (!truth || ranks < 1 || ranks > MAX_RANKS || steps < 1 || steps > MAX_STEPS) {
		fprintf(stderr, "usage: victim_ranks --truth PATH [--ranks N<=8] [--steps N] "
				"[--late K]\n");
		return 2;
	}
	if (rank >= 0)
		return worker(rank, steps, truth, alone, reexec);

	for (int r = 0; r < ranks; r++, nk++)
		if (spawn(&k[r], r, steps, truth, 0, 0) || !fgets(line, sizeof(line), k[r].from))
			return 1;
	printf("ready %d\npids", getpid());
	for (int r = 0; r < ranks; r++)
		printf(" %d", k[r].pid);
	printf("\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (late) {
		if (spawn(&k[nk], ranks, late, truth, 1, reexec))
			return 1;
		printf("late %d\n", k[nk].pid);
		fflush(stdout);
		nk++;
	}
	for (int i = 0; i < steps; i++) {
		for (int r = 0; r < ranks; r++) {
			fputs("g\n", k[r].to);
			fflush(k[r].to);
		}
		for (int r = 0; r < ranks; r++)
			if (!fgets(line, sizeof(line), k[r].from))
				return 1;
	}
	for (int r = 0; r < nk; r++) {
		int st;

		fclose(k[r].to);
		if (waitpid(k[r].pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	return 0;
}
