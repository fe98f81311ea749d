// SPDX-License-Identifier: BSD-2-Clause
/*
 * Cost of one probed call: call a function N times and print ns per call.
 * The functions are written in assembly so their first instruction is known
 * exactly: that instruction decides whether the kernel can emulate the
 * uprobe (cheap) or must single-step it (~40x dearer).
 *
 * usage: probe_bench FUNC N   prints "ready PID", waits for a line on
 * stdin, runs, prints "ns_per_call X".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* push first: emulated by the kernel */
__asm__(".text\n.globl pb_push\n.type pb_push,@function\npb_push:\n"
	"\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n.size pb_push,.-pb_push\n");
/* endbr64 first (CET builds), then push: proftrace probes the push */
__asm__(".globl pb_endbr_push\n.type pb_endbr_push,@function\npb_endbr_push:\n"
	"\tendbr64\n\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n"
	".size pb_endbr_push,.-pb_endbr_push\n");
/* mov first, then push (63% of Debian's libc starts with a single-stepped
 * instruction): proftrace walks over the mov and probes the push */
__asm__(".globl pb_mov_push\n.type pb_mov_push,@function\npb_mov_push:\n"
	"\tmov %rdi,%rax\n\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n"
	".size pb_mov_push,.-pb_mov_push\n");
/* sub first (a leaf with a stack frame and no saved registers): no probe
 * site keeps the return address on top, single-stepped */
__asm__(".globl pb_sub\n.type pb_sub,@function\npb_sub:\n"
	"\tsub $8,%rsp\n\tadd $8,%rsp\n\tret\n.size pb_sub,.-pb_sub\n");

void pb_push(void);
void pb_endbr_push(void);
void pb_sub(void);
void pb_mov_push(void);

static const struct {
	const char *name;
	void (*fn)(void);
} fns[] = {
	{ "pb_push", pb_push },
	{ "pb_endbr_push", pb_endbr_push },
	{ "pb_mov_push", pb_mov_push },
	{ "pb_sub", pb_sub },
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	void (*fn)(void) = NULL;
	char line[64];
	long n;
	double t0;

	if (argc != 3)
		return 2;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (!strcmp(argv[1], fns[i].name))
			fn = fns[i].fn;
	n = atol(argv[2]);
	if (!fn || n <= 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	t0 = now();
	for (long i = 0; i < n; i++)
		fn();
	printf("ns_per_call %.1f\n", (now() - t0) / (double)n);
	return 0;
}
