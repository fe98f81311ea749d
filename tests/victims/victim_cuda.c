// SPDX-License-Identifier: BSD-2-Clause
/*
 * A host loop that drives the real CUDA runtime (libcudart, dlopen'ed like
 * torch does) for targets/cuda.conf. With no GPU or driver every call
 * returns an error at once, but each is a real call through the library's
 * exported entry point, which is all the fallback config probes: the counts
 * are exact either way.
 *
 * usage: victim_cuda LIBCUDART [--steps N] [--truth FILE]
 * Per step: 8 cudaLaunchKernel, 2 cudaMemcpyAsync, 1 cudaStreamSynchronize.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "victim.h"

#define LAUNCHES 8
#define COPIES 2

typedef int (*launch_fn)(const void *, unsigned long long, unsigned long long, void **, size_t,
			 void *);
typedef int (*copy_fn)(void *, const void *, size_t, int, void *);
typedef int (*sync_fn)(void *);

static launch_fn launch;
static copy_fn copy_async;
static sync_fn stream_sync;
static struct vt_truth t_step;
static long n_launch, n_copy, n_sync;

VT_FN void cuda_step(void)
{
	uint64_t t0 = vt_now();
	char buf[64];

	for (int i = 0; i < LAUNCHES; i++) {
		launch((const void *)cuda_step, 1, 1, NULL, 0, NULL);
		n_launch++;
	}
	for (int i = 0; i < COPIES; i++) {
		copy_async(buf, buf + 32, 32, 4 /* cudaMemcpyDefault */, NULL);
		n_copy++;
	}
	stream_sync(NULL);
	n_sync++;
	vt_spin(200000);
	vt_add(&t_step, t0);
}

int main(int argc, char **argv)
{
	const char *truth = NULL;
	int steps = 100;
	char line[64];
	void *h;

	if (argc < 2)
		return 2;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else
			return 2;
	}
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	launch = (launch_fn)dlsym(h, "cudaLaunchKernel");
	copy_async = (copy_fn)dlsym(h, "cudaMemcpyAsync");
	stream_sync = (sync_fn)dlsym(h, "cudaStreamSynchronize");
	if (!launch || !copy_async || !stream_sync)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	for (int i = 0; i < steps; i++)
		VT_CALL(&t_step, cuda_step());
	if (truth) {
		FILE *f = fopen(truth, "w");

		if (!f)
			return 1;
		fprintf(f,
			"{\"steps\": %d, \"launches\": %ld, \"copies\": %ld, \"syncs\": %ld, "
			"\"functions\": {\"cuda_step\": {\"calls\": %llu, \"total_ns\": %llu, "
			"\"outer_ns\": %llu}}}\n",
			steps, n_launch, n_copy, n_sync, (unsigned long long)t_step.calls,
			(unsigned long long)t_step.total_ns, (unsigned long long)t_step.outer_ns);
		fclose(f);
	}
	return 0;
}
