// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a system call costs in a process proftrace does not trace: the
 * best of ROUNDS rounds of N getppid() calls, ns per call. bench/run.py
 * ("machine") runs it while proftrace samples another process, to see
 * what proftrace costs the rest of the machine (a tracepoint on the
 * system call exit path would show here).
 *
 * usage: syscall_bench [N [ROUNDS]]   prints "ns_per_call X".
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300000, rounds = argc > 2 ? atol(argv[2]) : 7;
	double best = 1e30;

	if (n <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: syscall_bench [N [ROUNDS]]\n");
		return 2;
	}
	for (long r = 0; r < rounds; r++) {
		double t0 = now_ns(), d;

		for (long i = 0; i < n; i++)
			syscall(SYS_getppid); /* not cached by libc */
		d = (now_ns() - t0) / (double)n;
		if (d < best)
			best = d;
	}
	printf("ns_per_call %.1f\n", best);
	return 0;
}
