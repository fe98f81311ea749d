// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU victim for proftrace's CUPTI path; needs a GPU (see README.md).
 *
 * Each step launches a known number of kernels of known length (they spin
 * on clock64() for a given number of cycles) on one stream, copies a few
 * bytes back and waits. CUDA events time every kernel and the whole step;
 * CLOCK_MONOTONIC (the clock proftrace and the shim use) brackets each
 * step on the host. All of it goes to a truth JSON file to compare with
 * what proftrace reports.
 *
 * Host functions are extern "C" (unmangled symbols) and noinline (with an
 * empty asm body so the compiler cannot merge or drop them) so proftrace
 * can put uprobes on them by name.
 *
 * PTV_LATE_SHIM=/path/libproftrace_cupti.so: dlopen the shim once CUDA is
 * initialised, as proftrace --inject would load it into a running server
 * (its constructor starts it; make gpu-check uses this until --inject is
 * there).
 */
#include <cuda_runtime.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE extern "C" __attribute__((noinline))
#define MAXK 256

#define CK(call)                                                                        \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess) {                                                \
			fprintf(stderr, "victim_gpu: %s: %s\n", #call,                  \
				cudaGetErrorString(e_));                                \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

/* Two names so per-name totals can be checked; the short one spins a
 * quarter as long. extern "C": CUPTI then reports the plain names. */
extern "C" __global__ void ptv_spin(long long cycles, unsigned long long *sink)
{
	long long t0 = clock64();

	while (clock64() - t0 < cycles)
		;
	if (threadIdx.x == 0)
		sink[blockIdx.x] = (unsigned long long)clock64();
}

extern "C" __global__ void ptv_spin_short(long long cycles, unsigned long long *sink)
{
	long long t0 = clock64();

	while (clock64() - t0 < cycles / 4)
		;
	if (threadIdx.x == 0)
		sink[blockIdx.x] = (unsigned long long)clock64();
}

struct opts {
	int steps;
	int kernels; /* per step, alternating ptv_spin / ptv_spin_short */
	long long cycles;
	int sleep_ms;       /* between steps, so steps are apart in time */
	int start_delay_ms; /* after CUDA init, before step 0: time to attach */
	int graph;          /* launch each step as one CUDA graph */
	const char *truth;
};

struct step_truth {
	uint64_t host_start_ns, host_end_ns;
	float span_ms;        /* first kernel start event -> stop event */
	float kernel_ms[MAXK]; /* per kernel (not in graph mode) */
	float copy_ms;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *kernel_name(int k)
{
	return k % 2 ? "ptv_spin_short" : "ptv_spin";
}

struct ctx {
	cudaStream_t stream;
	unsigned long long *d_sink, *h_sink;
	cudaEvent_t ev_start, ev_stop, ev_k[MAXK + 1];
	cudaGraphExec_t graph;
};

NOINLINE void gpu_launch(struct ctx *c, int k, long long cycles)
{
	asm volatile("");
	if (k % 2)
		ptv_spin_short<<<1, 32, 0, c->stream>>>(cycles, c->d_sink);
	else
		ptv_spin<<<1, 32, 0, c->stream>>>(cycles, c->d_sink);
}

NOINLINE void gpu_sync(struct ctx *c)
{
	asm volatile("");
	CK(cudaEventSynchronize(c->ev_stop));
}

NOINLINE void gpu_step(struct ctx *c, const struct opts *o, struct step_truth *t)
{
	int k;

	asm volatile("");
	t->host_start_ns = mono_ns();
	CK(cudaEventRecord(c->ev_start, c->stream));
	if (o->graph) {
		CK(cudaGraphLaunch(c->graph, c->stream));
	} else {
		for (k = 0; k < o->kernels; k++) {
			CK(cudaEventRecord(c->ev_k[k], c->stream));
			gpu_launch(c, k, o->cycles);
		}
		CK(cudaEventRecord(c->ev_k[o->kernels], c->stream));
	}
	CK(cudaMemcpyAsync(c->h_sink, c->d_sink, sizeof(*c->h_sink), cudaMemcpyDeviceToHost,
			   c->stream));
	CK(cudaEventRecord(c->ev_stop, c->stream));
	gpu_sync(c);
	t->host_end_ns = mono_ns();

	CK(cudaEventElapsedTime(&t->span_ms, c->ev_start, c->ev_stop));
	if (!o->graph) {
		for (k = 0; k < o->kernels; k++)
			CK(cudaEventElapsedTime(&t->kernel_ms[k], c->ev_k[k], c->ev_k[k + 1]));
		CK(cudaEventElapsedTime(&t->copy_ms, c->ev_k[o->kernels], c->ev_stop));
	}
}

static void build_graph(struct ctx *c, const struct opts *o)
{
	cudaGraph_t g;
	int k;

	CK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
	for (k = 0; k < o->kernels; k++)
		gpu_launch(c, k, o->cycles);
	CK(cudaStreamEndCapture(c->stream, &g));
	CK(cudaGraphInstantiate(&c->graph, g, 0));
	CK(cudaGraphDestroy(g));
}

static void write_truth(const struct opts *o, const struct step_truth *t, const char *dev)
{
	FILE *f = fopen(o->truth, "w");
	double busy = 0;
	int s, k;

	if (!f) {
		fprintf(stderr, "victim_gpu: %s: %s\n", o->truth, strerror(errno));
		exit(1);
	}
	fprintf(f, "{\n  \"device\": \"%s\",\n  \"clock\": \"CLOCK_MONOTONIC\",\n", dev);
	fprintf(f, "  \"pid\": %d,\n  \"graph\": %s,\n  \"kernels_per_step\": %d,\n", (int)getpid(),
		o->graph ? "true" : "false", o->kernels);
	fprintf(f, "  \"cycles\": %lld,\n  \"steps\": [\n", o->cycles);
	for (s = 0; s < o->steps; s++) {
		double step_busy = 0;

		fprintf(f, "    {\"step\": %d, \"host_start_ns\": %llu, \"host_end_ns\": %llu, ", s,
			(unsigned long long)t[s].host_start_ns,
			(unsigned long long)t[s].host_end_ns);
		fprintf(f, "\"gpu_span_ms\": %.6f", t[s].span_ms);
		if (!o->graph) {
			fprintf(f, ", \"kernels\": [");
			for (k = 0; k < o->kernels; k++) {
				step_busy += t[s].kernel_ms[k];
				fprintf(f, "%s{\"name\": \"%s\", \"gpu_ms\": %.6f}", k ? ", " : "",
					kernel_name(k), t[s].kernel_ms[k]);
			}
			fprintf(f, "], \"copy_ms\": %.6f, \"gpu_busy_ms\": %.6f", t[s].copy_ms,
				step_busy + t[s].copy_ms);
			busy += step_busy + t[s].copy_ms;
		}
		fprintf(f, "}%s\n", s + 1 < o->steps ? "," : "");
	}
	fprintf(f, "  ],\n  \"total_gpu_busy_ms\": %.6f\n}\n", busy);
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: victim_gpu [--steps N] [--kernels K] [--cycles C] [--sleep-ms MS]\n"
		"                  [--start-delay-ms MS] [--graph] [--truth FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { 20, 8, 2000000, 50, 2000, 0, "victim_gpu_truth.json" };
	struct cudaDeviceProp prop;
	struct step_truth *t;
	struct ctx c;
	int i, s;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--graph")) {
			o.graph = 1;
			continue;
		}
		if (!v)
			usage();
		if (!strcmp(a, "--steps"))
			o.steps = atoi(v);
		else if (!strcmp(a, "--kernels"))
			o.kernels = atoi(v);
		else if (!strcmp(a, "--cycles"))
			o.cycles = atoll(v);
		else if (!strcmp(a, "--sleep-ms"))
			o.sleep_ms = atoi(v);
		else if (!strcmp(a, "--start-delay-ms"))
			o.start_delay_ms = atoi(v);
		else if (!strcmp(a, "--truth"))
			o.truth = v;
		else
			usage();
		i++;
	}
	if (o.steps < 1 || o.kernels < 1 || o.kernels > MAXK || o.cycles < 1)
		usage();

	/* CUDA initialises here, and with it the shim (its segment appears). */
	CK(cudaFree(0));
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
	CK(cudaMalloc(&c.d_sink, 64 * sizeof(*c.d_sink)));
	CK(cudaMallocHost(&c.h_sink, sizeof(*c.h_sink)));
	CK(cudaEventCreate(&c.ev_start));
	CK(cudaEventCreate(&c.ev_stop));
	for (i = 0; i <= o.kernels; i++)
		CK(cudaEventCreate(&c.ev_k[i]));
	if (o.graph)
		build_graph(&c, &o);
	t = (struct step_truth *)calloc(o.steps, sizeof(*t));
	if (getenv("PTV_LATE_SHIM") && *getenv("PTV_LATE_SHIM") &&
	    !dlopen(getenv("PTV_LATE_SHIM"), RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "victim_gpu: PTV_LATE_SHIM: %s\n", dlerror());
		exit(1);
	}

	printf("victim_gpu: pid %d on %s, %d steps x %d kernels, start in %d ms\n", (int)getpid(),
	       prop.name, o.steps, o.kernels, o.start_delay_ms);
	fflush(stdout);
	usleep(o.start_delay_ms * 1000);

	for (s = 0; s < o.steps; s++) {
		gpu_step(&c, &o, &t[s]);
		usleep(o.sleep_ms * 1000);
	}
	write_truth(&o, t, prop.name);
	printf("victim_gpu: done, truth in %s\n", o.truth);
	free(t);
	return 0;
}
