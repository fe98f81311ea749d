// SPDX-License-Identifier: BSD-2-Clause
/*
 * launch_bench: host ns per CUDA call, for the shim's cost table
 * (docs/gpu.md, "What a call costs"). Needs a GPU.
 *
 * Each case times batches of calls with CLOCK_MONOTONIC around the batch
 * (the stream is drained between batches, untimed, so launches never wait
 * for a full launch queue) and prints the median ns per call over the
 * batches:
 *
 *   cudaLaunchKernel      an empty kernel, <<<1, 1>>>        (recorded)
 *   cuLaunchKernel        the same kernel through the driver (recorded)
 *   cuLaunchKernelEx      the same, as cuBLAS/Triton launch  (recorded)
 *   cudaGraphLaunch       a graph of one empty kernel        (recorded)
 *   cudaMemcpyAsync       8 bytes device to pinned host      (recorded)
 *   cudaStreamSynchronize on an idle stream                  (recorded)
 *   cudaGetDevice                                            (not recorded)
 *   cudaEventQuery        on a completed event               (not recorded)
 *
 * The shim is whatever the environment gives (CUDA_INJECTION64_PATH or
 * nothing). --wait-active S: before timing, wait up to S seconds until
 * the shim's segment says ACTIVE (a reader such as gpuring_dump attached);
 * exit 3 if it does not.
 *
 * --ab R: the shim dormant and active in this one process, R rounds of
 * both, interleaved: the program is its own reader (proftrace's, from
 * user/gpu/gpuring.c, on a thread of its own: heartbeat and drain every
 * 20 ms) and attaches and detaches between the halves of each round. The
 * main thread stays on one CPU. Costs from one process leave out what
 * differs from one process to the next (placement, memory layout: a
 * few hundred ns per launch on the H200 VM).
 *
 * Output: "launch_bench: pid N" on the first line (as soon as CUDA is
 * up), then one JSON object.
 *
 * Usage: launch_bench [--batches B] [--batch N] [--wait-active S] [--ab R] [--label L]
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

extern "C" {
#include "gpu/gpuring.h"
}

/* From shim/ptgpu.h (C, not C++: not included here): the segment's memfd
 * name and where struct ptgpu_header keeps `state` (its static asserts pin
 * 192). */
#define PTGPU_MEMFD_NAME "proftrace-gpu"
#define PTGPU_STATE_OFF 192
#define PTGPU_STATE_ACTIVE 1

#define CK(call)                                                                        \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess) {                                                \
			fprintf(stderr, "launch_bench: %s: %s\n", #call,                \
				cudaGetErrorString(e_));                                \
			exit(1);                                                        \
		}                                                                       \
	} while (0)
#define CKD(call)                                                                       \
	do {                                                                            \
		CUresult r_ = (call);                                                   \
		if (r_ != CUDA_SUCCESS) {                                               \
			fprintf(stderr, "launch_bench: %s: %d\n", #call, (int)r_);      \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

extern "C" __global__ void ptb_empty(void)
{
}

enum { K_RT, K_DRV, K_DRVEX, K_GRAPH, K_COPY, K_SYNC, K_GETDEV, K_QUERY, K_NR };
static const char *const names[K_NR] = {
	"cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx",      "cudaGraphLaunch",
	"cudaMemcpyAsync",  "cudaStreamSynchronize", "cudaGetDevice", "cudaEventQuery",
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct bench {
	cudaStream_t st;
	CUfunction fn;
	cudaGraphExec_t graph;
	cudaEvent_t ev;
	unsigned long long *d, *h;
};

static void one(struct bench *b, int k)
{
	CUlaunchConfig cfg;
	int dev;

	switch (k) {
	case K_RT:
		ptb_empty<<<1, 1, 0, b->st>>>();
		break;
	case K_DRV:
		CKD(cuLaunchKernel(b->fn, 1, 1, 1, 1, 1, 1, 0, (CUstream)b->st, NULL, NULL));
		break;
	case K_DRVEX:
		memset(&cfg, 0, sizeof(cfg));
		cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.hStream = (CUstream)b->st;
		CKD(cuLaunchKernelEx(&cfg, b->fn, NULL, NULL));
		break;
	case K_GRAPH:
		CK(cudaGraphLaunch(b->graph, b->st));
		break;
	case K_COPY:
		CK(cudaMemcpyAsync(b->h, b->d, 8, cudaMemcpyDeviceToHost, b->st));
		break;
	case K_SYNC:
		CK(cudaStreamSynchronize(b->st));
		break;
	case K_GETDEV:
		CK(cudaGetDevice(&dev));
		break;
	case K_QUERY:
		if (cudaEventQuery(b->ev) != cudaSuccess)
			exit(1);
		break;
	}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median ns per call of `batches` batches of n calls of case k. */
static double run_case(struct bench *b, int k, int batches, int n)
{
	uint64_t *v = (uint64_t *)calloc(batches, sizeof(*v));
	double med;
	int i, j;

	for (i = 0; i < n; i++) /* warm-up */
		one(b, k);
	CK(cudaStreamSynchronize(b->st));
	for (i = 0; i < batches; i++) {
		uint64_t t0 = now_ns();

		for (j = 0; j < n; j++)
			one(b, k);
		v[i] = now_ns() - t0;
		CK(cudaStreamSynchronize(b->st));
	}
	qsort(v, batches, sizeof(*v), cmp_u64);
	med = (double)v[batches / 2] / n;
	free(v);
	return med;
}

/* The shim's state from its own segment (-1: none): the memfd the shim
 * keeps open in this process, found among our open files as proftrace
 * finds it (there is no name in /dev/shm). */
static int shim_state(void)
{
	char path[300], link[128];
	struct dirent *de;
	int st = -1;
	ssize_t n;
	DIR *d;
	void *m;

	d = opendir("/proc/self/fd");
	while (d && st < 0 && (de = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0 || (link[n] = 0, strcmp(link, "/memfd:" PTGPU_MEMFD_NAME " (deleted)")))
			continue;
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, atoi(de->d_name), 0);
		if (m == MAP_FAILED)
			continue;
		st = (int)__atomic_load_n((uint32_t *)((char *)m + PTGPU_STATE_OFF),
					  __ATOMIC_ACQUIRE);
		munmap(m, 4096);
	}
	if (d)
		closedir(d);
	return st;
}

/* ---- --ab: this process's own reader ---- */

static struct {
	pthread_mutex_t lock;
	struct pt_gpuring *r;
	int want;	      /* 1: attached */
	int stop;
	unsigned long long n; /* records drained */
} rd = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0 };

static int count_rec(void *ctx, const struct pt_gpu_rec *rec)
{
	(void)rec;
	(*(unsigned long long *)ctx)++;
	return 0;
}

static void *reader(void *arg)
{
	int attached = 0;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&rd.lock);
		if (rd.stop) {
			pthread_mutex_unlock(&rd.lock);
			break;
		}
		if (rd.want && !attached) {
			attached = !pt_gpuring__attach(rd.r, now_ns());
		} else if (!rd.want && attached) {
			pt_gpuring__finish(rd.r, count_rec, &rd.n, 2000);
			attached = 0;
		}
		if (attached) {
			pt_gpuring__heartbeat(rd.r, now_ns());
			pt_gpuring__drain(rd.r, count_rec, &rd.n);
		}
		pthread_mutex_unlock(&rd.lock);
		usleep(20000);
	}
	return NULL;
}

/* Attach or detach, and wait until the shim says so (10 s at most). */
static int set_active(int on)
{
	uint64_t until = now_ns() + 10000000000ull;

	pthread_mutex_lock(&rd.lock);
	rd.want = on;
	pthread_mutex_unlock(&rd.lock);
	while (shim_state() != (on ? PTGPU_STATE_ACTIVE : 0)) {
		if (now_ns() > until)
			return -1;
		usleep(5000);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int batches = 41, n = 200, wait_s = 0, ab = 0, i, k;
	const char *label = "";
	struct bench b;
	cudaGraph_t g;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--batches"))
			batches = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--batch"))
			n = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--wait-active"))
			wait_s = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--label"))
			label = argv[i + 1];
		else if (!strcmp(argv[i], "--ab"))
			ab = atoi(argv[i + 1]);
		else
			break;
	}
	if (i != argc || batches < 1 || n < 1) {
		fprintf(stderr, "usage: launch_bench [--batches B] [--batch N] [--wait-active S] "
				"[--ab R] [--label L]\n");
		return 2;
	}
	CK(cudaFree(0));
	CK(cudaStreamCreateWithFlags(&b.st, cudaStreamNonBlocking));
	{
		cudaFunction_t f;

		CK(cudaGetFuncBySymbol(&f, (const void *)ptb_empty));
		b.fn = (CUfunction)f;
	}
	CK(cudaStreamBeginCapture(b.st, cudaStreamCaptureModeThreadLocal));
	ptb_empty<<<1, 1, 0, b.st>>>();
	CK(cudaStreamEndCapture(b.st, &g));
	CK(cudaGraphInstantiate(&b.graph, g, 0));
	CK(cudaEventCreate(&b.ev));
	CK(cudaEventRecord(b.ev, b.st));
	CK(cudaMalloc(&b.d, 64));
	CK(cudaMallocHost(&b.h, 64));
	CK(cudaStreamSynchronize(b.st));

	/* the pid first, on a line of its own: the caller attaches a reader */
	printf("launch_bench: pid %d\n", (int)getpid());
	fflush(stdout);
	if (wait_s) {
		uint64_t until = now_ns() + (uint64_t)wait_s * 1000000000ull;

		while (shim_state() != PTGPU_STATE_ACTIVE) {
			if (now_ns() > until) {
				printf("{\"error\": \"the shim did not go active in %d s\"}\n",
				       wait_s);
				return 3;
			}
			usleep(10000);
		}
	}
	if (ab) {
		char err[256];
		double v[2][K_NR][64];
		cpu_set_t one;
		pthread_t thr;
		int m, rnd;

		if (ab > 64)
			ab = 64;
		if (pt_gpuring__open(&rd.r, (int)getpid(), err, sizeof(err))) {
			printf("{\"error\": \"--ab needs the shim: %s\"}\n", err);
			return 3;
		}
		pthread_create(&thr, NULL, reader, NULL);
		/* the main thread on the CPU it is on, the reader free */
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu(), &one);
		sched_setaffinity(0, sizeof(one), &one);
		for (rnd = 0; rnd < ab; rnd++)
			for (m = 0; m < 2; m++) {
				if (set_active(m)) {
					printf("{\"error\": \"the shim did not go %s\"}\n",
					       m ? "active" : "dormant");
					return 3;
				}
				for (k = 0; k < K_NR; k++)
					v[m][k][rnd] = run_case(&b, k, batches, n);
			}
		set_active(0);
		pthread_mutex_lock(&rd.lock);
		rd.stop = 1;
		pthread_mutex_unlock(&rd.lock);
		pthread_join(thr, NULL);
		printf("{\"label\": \"%s\", \"rounds\": %d, \"records\": %llu, \"batch\": %d, "
		       "\"batches\": %d, \"ns_per_call\": {",
		       label, ab, rd.n, n, batches);
		for (m = 0; m < 2; m++) {
			printf("%s\"%s\": {", m ? ", " : "", m ? "active" : "dormant");
			for (k = 0; k < K_NR; k++) {
				qsort(v[m][k], ab, sizeof(double), cmp_dbl);
				printf("%s\"%s\": %.1f", k ? ", " : "", names[k], v[m][k][ab / 2]);
			}
			printf("}");
		}
		printf("}}\n");
		return 0;
	}
	printf("{\"label\": \"%s\", \"shim_state\": %d, \"batch\": %d, \"batches\": %d, "
	       "\"ns_per_call\": {",
	       label, shim_state(), n, batches);
	for (k = 0; k < K_NR; k++)
		printf("%s\"%s\": %.1f", k ? ", " : "", names[k], run_case(&b, k, batches, n));
	printf("}}\n");
	return 0;
}
