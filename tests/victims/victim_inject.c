// SPDX-License-Identifier: BSD-2-Clause
/*
 * A victim for the injector (tests/integration/test_inject.py): while it
 * is injected into again and again, its threads hammer the locks an
 * injected dlopen() could deadlock on, and its main thread (the one a
 * safe point is found in: it waits in libc's poll) checks that nothing of
 * its own state changed across each wait.
 *
 *   victim_inject malloc          4 threads malloc/free, checking their blocks
 *   victim_inject dlopen LIB      3 threads dlopen/dlsym/dlclose LIB
 *
 * The main thread loops: xmm0-15 loaded with a fresh pattern and errno set
 * to a sentinel, poll(NULL, 0, 1) called through libc with them live, then
 * both checked: it aborts on any change (an injector that did not put the
 * xstate or errno back). SIGUSR1: prints "counts MAIN W0 W1 ..." (each
 * thread's iterations so far); SIGTERM: prints the counts and exits 0.
 * Prints "ready PID" first.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_WORKERS 4

/* xmm_poll(in, out): xmm0-15 = in[0..15], poll(NULL, 0, 1) through libc,
 * out[0..15] = xmm0-15 after it; returns poll's result. In assembly: C
 * could not keep values in vector registers across a call. */
__asm__(".text\n"
	".globl xmm_poll\n"
	".type xmm_poll,@function\n"
	"xmm_poll:\n"
	"	push %r12\n"
	"	push %r13\n"
	"	push %rbx\n" /* 3 pushes: the call below is 16-byte aligned */
	"	mov %rdi, %r12\n"
	"	mov %rsi, %r13\n"
	"	movdqu 0(%r12), %xmm0\n	movdqu 16(%r12), %xmm1\n"
	"	movdqu 32(%r12), %xmm2\n	movdqu 48(%r12), %xmm3\n"
	"	movdqu 64(%r12), %xmm4\n	movdqu 80(%r12), %xmm5\n"
	"	movdqu 96(%r12), %xmm6\n	movdqu 112(%r12), %xmm7\n"
	"	movdqu 128(%r12), %xmm8\n	movdqu 144(%r12), %xmm9\n"
	"	movdqu 160(%r12), %xmm10\n	movdqu 176(%r12), %xmm11\n"
	"	movdqu 192(%r12), %xmm12\n	movdqu 208(%r12), %xmm13\n"
	"	movdqu 224(%r12), %xmm14\n	movdqu 240(%r12), %xmm15\n"
	"	xor %edi, %edi\n"
	"	xor %esi, %esi\n"
	"	mov $1, %edx\n"
	"	call poll@PLT\n"
	"	movdqu %xmm0, 0(%r13)\n	movdqu %xmm1, 16(%r13)\n"
	"	movdqu %xmm2, 32(%r13)\n	movdqu %xmm3, 48(%r13)\n"
	"	movdqu %xmm4, 64(%r13)\n	movdqu %xmm5, 80(%r13)\n"
	"	movdqu %xmm6, 96(%r13)\n	movdqu %xmm7, 112(%r13)\n"
	"	movdqu %xmm8, 128(%r13)\n	movdqu %xmm9, 144(%r13)\n"
	"	movdqu %xmm10, 160(%r13)\n	movdqu %xmm11, 176(%r13)\n"
	"	movdqu %xmm12, 192(%r13)\n	movdqu %xmm13, 208(%r13)\n"
	"	movdqu %xmm14, 224(%r13)\n	movdqu %xmm15, 240(%r13)\n"
	"	pop %rbx\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	ret\n"
	".size xmm_poll, .-xmm_poll\n");
int xmm_poll(const uint8_t *in, uint8_t *out);

static volatile sig_atomic_t want_counts, want_stop;
static uint64_t counts[1 + MAX_WORKERS];
static int nworkers;
static const char *dl_lib;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_counts = 1;
	else
		want_stop = 1;
}

static void *malloc_worker(void *arg)
{
	uint64_t *n = arg;
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	unsigned char *p[32];
	size_t len[32];

	while (!want_stop) {
		for (int i = 0; i < 32; i++) {
			len[i] = 1 + (size_t)(rand_r(&seed) % 8192);
			p[i] = malloc(len[i]);
			if (!p[i])
				abort();
			memset(p[i], i, len[i]);
		}
		for (int i = 0; i < 32; i++) {
			for (size_t k = 0; k < len[i]; k += 97)
				if (p[i][k] != (unsigned char)i) {
					fprintf(stderr, "victim_inject: heap block corrupted\n");
					abort();
				}
			free(p[i]);
		}
		__atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *dlopen_worker(void *arg)
{
	uint64_t *n = arg;

	while (!want_stop) {
		void *h = dlopen(dl_lib, RTLD_NOW);

		if (!h || !dlsym(h, "dl_work")) {
			fprintf(stderr, "victim_inject: %s\n", dlerror());
			abort();
		}
		dlclose(h);
		__atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void print_counts(void)
{
	printf("counts");
	for (int i = 0; i <= nworkers; i++)
		printf(" %llu", (unsigned long long)__atomic_load_n(&counts[i], __ATOMIC_RELAXED));
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	pthread_t thr[MAX_WORKERS];
	void *(*fn)(void *);
	struct sigaction sa = { .sa_handler = on_signal };
	uint8_t in[256], out[256];
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();

	if (argc >= 2 && !strcmp(argv[1], "malloc")) {
		fn = malloc_worker;
		nworkers = 4;
	} else if (argc >= 3 && !strcmp(argv[1], "dlopen")) {
		fn = dlopen_worker;
		nworkers = 3;
		dl_lib = argv[2];
	} else {
		fprintf(stderr, "usage: victim_inject malloc | dlopen LIB\n");
		return 2;
	}
	sigaction(SIGUSR1, &sa, NULL); /* no SA_RESTART: poll sees EINTR */
	sigaction(SIGTERM, &sa, NULL);
	for (int i = 0; i < nworkers; i++)
		pthread_create(&thr[i], NULL, fn, &counts[1 + i]);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!want_stop) {
		int r;

		for (int i = 0; i < 32; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			memcpy(in + 8 * i, &x, 8);
		}
		errno = 4321;
		r = xmm_poll(in, out);
		if (memcmp(in, out, sizeof(in))) {
			for (int i = 0; i < 16; i++)
				if (memcmp(in + 16 * i, out + 16 * i, 16))
					fprintf(stderr,
						"victim_inject: xmm%d changed across poll\n", i);
			abort();
		}
		if (r == 0 && errno != 4321) {
			fprintf(stderr, "victim_inject: errno changed across poll: %d\n", errno);
			abort();
		}
		counts[0]++;
		if (want_counts) {
			want_counts = 0;
			print_counts();
		}
	}
	for (int i = 0; i < nworkers; i++)
		pthread_join(thr[i], NULL);
	print_counts();
	return 0;
}
