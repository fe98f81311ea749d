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
 * Besides the runtime launches (gpu_launch), a step can launch through the
 * driver API alone (--driver N: cuLaunchKernelEx, as cuBLAS's nvjet and
 * Triton kernels come), replay a CUDA graph of G kernels (--graph-kernels
 * G: one cudaGraphLaunch, as vLLM decodes) and set memory (--memset:
 * cudaMemsetAsync), each in a host function of its own; the truth file
 * then says every host call's CLOCK_MONOTONIC window and the thread, so a
 * join can be checked call by call.
 *
 * --wait-stdin: after CUDA is initialised, wait for a line on stdin before
 * step 0 (the caller says go once proftrace has attached).
 *
 * PTV_LATE_SHIM=/path/libproftrace_cupti.so: dlopen the shim once CUDA is
 * initialised, as proftrace --inject would load it into a running server
 * (its constructor starts it).
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/* Launched only through the driver API (--driver). */
extern "C" __global__ void ptv_spin_drv(long long cycles, unsigned long long *sink)
{
	long long t0 = clock64();

	while (clock64() - t0 < cycles / 2)
		;
	if (threadIdx.x == 0)
		sink[blockIdx.x] = (unsigned long long)clock64();
}

/* Only inside the CUDA graph of --graph-kernels. */
extern "C" __global__ void ptv_spin_graph(long long cycles, unsigned long long *sink)
{
	long long t0 = clock64();

	while (clock64() - t0 < cycles / 4)
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
	int driver;        /* driver-API launches per step */
	int graph_kernels; /* kernels of the graph replayed once per step */
	int memset;        /* one cudaMemsetAsync per step */
	int wait_stdin;
};

/* A host call's window: which function, entry and exit. */
enum { C_LAUNCH, C_DRV, C_GRAPH, C_MEMSET, C_SYNC, C_NR };
static const char *const call_names[C_NR] = { "gpu_launch", "gpu_launch_drv", "gpu_launch_graph",
					      "gpu_memset", "gpu_sync" };
#define MAXCALLS (2 * MAXK + 8)
struct call {
	int fn;
	uint64_t s, e;
};

struct step_truth {
	uint64_t host_start_ns, host_end_ns;
	float span_ms;        /* first kernel start event -> stop event */
	float kernel_ms[MAXK]; /* per kernel (not in graph mode) */
	float drv_ms[MAXK];   /* per driver launch */
	float graph_ms;       /* the replayed graph, start to end */
	float memset_ms;
	float copy_ms;
	int ncalls;
	struct call calls[MAXCALLS];
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
	cudaEvent_t ev_d[MAXK + 1], ev_g[2], ev_m[2], ev_cp;
	cudaGraphExec_t graph;
	cudaGraphExec_t graph_mix; /* --graph-kernels */
	CUfunction drv_fn;
	void *d_buf; /* --memset */
};

#define CKD(call)                                                                       \
	do {                                                                            \
		CUresult r_ = (call);                                                   \
		if (r_ != CUDA_SUCCESS) {                                               \
			const char *s_ = "?";                                           \
			cuGetErrorString(r_, &s_);                                      \
			fprintf(stderr, "victim_gpu: %s: %s\n", #call, s_);             \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

static struct step_truth *cur_step;

static void note(int fn, uint64_t s)
{
	struct step_truth *t = cur_step;

	if (t && t->ncalls < MAXCALLS)
		t->calls[t->ncalls++] = (struct call){ fn, s, mono_ns() };
}

NOINLINE void gpu_launch(struct ctx *c, int k, long long cycles)
{
	uint64_t s = mono_ns();

	asm volatile("");
	if (k % 2)
		ptv_spin_short<<<1, 32, 0, c->stream>>>(cycles, c->d_sink);
	else
		ptv_spin<<<1, 32, 0, c->stream>>>(cycles, c->d_sink);
	note(C_LAUNCH, s);
}

/* Through the driver API only, as cuBLAS (nvjet) and Triton launch. */
NOINLINE void gpu_launch_drv(struct ctx *c, long long cycles)
{
	uint64_t s = mono_ns();
	void *args[] = { &cycles, &c->d_sink };
	CUlaunchConfig cfg;

	asm volatile("");
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 32;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = (CUstream)c->stream;
	CKD(cuLaunchKernelEx(&cfg, c->drv_fn, args, NULL));
	note(C_DRV, s);
}

NOINLINE void gpu_launch_graph(struct ctx *c)
{
	uint64_t s = mono_ns();

	asm volatile("");
	CK(cudaGraphLaunch(c->graph_mix, c->stream));
	note(C_GRAPH, s);
}

NOINLINE void gpu_memset(struct ctx *c)
{
	uint64_t s = mono_ns();

	asm volatile("");
	CK(cudaMemsetAsync(c->d_buf, 0x5a, 1 << 20, c->stream));
	note(C_MEMSET, s);
}

NOINLINE void gpu_sync(struct ctx *c)
{
	uint64_t s = mono_ns();

	asm volatile("");
	CK(cudaEventSynchronize(c->ev_stop));
	note(C_SYNC, s);
}

NOINLINE void gpu_step(struct ctx *c, const struct opts *o, struct step_truth *t)
{
	int k;

	asm volatile("");
	cur_step = t;
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
	for (k = 0; k < o->driver; k++) {
		CK(cudaEventRecord(c->ev_d[k], c->stream));
		gpu_launch_drv(c, o->cycles);
	}
	if (o->driver)
		CK(cudaEventRecord(c->ev_d[o->driver], c->stream));
	if (o->graph_kernels) {
		CK(cudaEventRecord(c->ev_g[0], c->stream));
		gpu_launch_graph(c);
		CK(cudaEventRecord(c->ev_g[1], c->stream));
	}
	if (o->memset) {
		CK(cudaEventRecord(c->ev_m[0], c->stream));
		gpu_memset(c);
		CK(cudaEventRecord(c->ev_m[1], c->stream));
	}
	CK(cudaEventRecord(c->ev_cp, c->stream));
	CK(cudaMemcpyAsync(c->h_sink, c->d_sink, sizeof(*c->h_sink), cudaMemcpyDeviceToHost,
			   c->stream));
	CK(cudaEventRecord(c->ev_stop, c->stream));
	gpu_sync(c);
	t->host_end_ns = mono_ns();
	cur_step = NULL;

	CK(cudaEventElapsedTime(&t->span_ms, c->ev_start, c->ev_stop));
	if (!o->graph) {
		for (k = 0; k < o->kernels; k++)
			CK(cudaEventElapsedTime(&t->kernel_ms[k], c->ev_k[k], c->ev_k[k + 1]));
	}
	CK(cudaEventElapsedTime(&t->copy_ms, c->ev_cp, c->ev_stop));
	for (k = 0; k < o->driver; k++)
		CK(cudaEventElapsedTime(&t->drv_ms[k], c->ev_d[k], c->ev_d[k + 1]));
	if (o->graph_kernels)
		CK(cudaEventElapsedTime(&t->graph_ms, c->ev_g[0], c->ev_g[1]));
	if (o->memset)
		CK(cudaEventElapsedTime(&t->memset_ms, c->ev_m[0], c->ev_m[1]));
}

/* --graph-kernels: G kernels of ptv_spin_graph captured once. */
static void build_graph_mix(struct ctx *c, const struct opts *o)
{
	cudaGraph_t g;
	int k;

	CK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
	for (k = 0; k < o->graph_kernels; k++)
		ptv_spin_graph<<<1, 32, 0, c->stream>>>(o->cycles, c->d_sink);
	CK(cudaStreamEndCapture(c->stream, &g));
	CK(cudaGraphInstantiate(&c->graph_mix, g, 0));
	CK(cudaGraphDestroy(g));
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
	fprintf(f, "  \"pid\": %d,\n  \"tid\": %ld,\n  \"graph\": %s,\n  \"kernels_per_step\": %d,\n",
		(int)getpid(), (long)syscall(SYS_gettid), o->graph ? "true" : "false", o->kernels);
	fprintf(f, "  \"driver_per_step\": %d,\n  \"graph_kernels\": %d,\n  \"memset\": %s,\n",
		o->driver, o->graph_kernels, o->memset ? "true" : "false");
	fprintf(f, "  \"cycles\": %lld,\n  \"steps\": [\n", o->cycles);
	for (s = 0; s < o->steps; s++) {
		double step_busy = t[s].copy_ms;
		int n = 0;

		fprintf(f, "    {\"step\": %d, \"host_start_ns\": %llu, \"host_end_ns\": %llu, ", s,
			(unsigned long long)t[s].host_start_ns,
			(unsigned long long)t[s].host_end_ns);
		fprintf(f, "\"gpu_span_ms\": %.6f", t[s].span_ms);
		fprintf(f, ", \"kernels\": [");
		for (k = 0; !o->graph && k < o->kernels; k++) {
			step_busy += t[s].kernel_ms[k];
			fprintf(f, "%s{\"name\": \"%s\", \"gpu_ms\": %.6f}", n++ ? ", " : "",
				kernel_name(k), t[s].kernel_ms[k]);
		}
		for (k = 0; k < o->driver; k++) {
			step_busy += t[s].drv_ms[k];
			fprintf(f, "%s{\"name\": \"ptv_spin_drv\", \"gpu_ms\": %.6f}", n++ ? ", " : "",
				t[s].drv_ms[k]);
		}
		fprintf(f, "]");
		if (o->graph_kernels) {
			step_busy += t[s].graph_ms;
			fprintf(f, ", \"graph\": {\"name\": \"ptv_spin_graph\", \"kernels\": %d, "
				   "\"gpu_ms\": %.6f}",
				o->graph_kernels, t[s].graph_ms);
		}
		if (o->memset) {
			step_busy += t[s].memset_ms;
			fprintf(f, ", \"memset_ms\": %.6f", t[s].memset_ms);
		}
		fprintf(f, ", \"copy_ms\": %.6f", t[s].copy_ms);
		if (!o->graph) {
			fprintf(f, ", \"gpu_busy_ms\": %.6f", step_busy);
			busy += step_busy;
		}
		fprintf(f, ", \"calls\": [");
		for (k = 0; k < t[s].ncalls; k++)
			fprintf(f, "%s[\"%s\", %llu, %llu]", k ? ", " : "",
				call_names[t[s].calls[k].fn], (unsigned long long)t[s].calls[k].s,
				(unsigned long long)t[s].calls[k].e);
		fprintf(f, "]}%s\n", s + 1 < o->steps ? "," : "");
	}
	fprintf(f, "  ],\n  \"total_gpu_busy_ms\": %.6f\n}\n", busy);
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: victim_gpu [--steps N] [--kernels K] [--cycles C] [--sleep-ms MS]\n"
		"                  [--start-delay-ms MS] [--graph] [--truth FILE]\n"
		"                  [--driver N] [--graph-kernels G] [--memset] [--wait-stdin]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { 20, 8, 2000000, 50, 2000, 0, "victim_gpu_truth.json", 0, 0, 0, 0 };
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
		if (!strcmp(a, "--memset")) {
			o.memset = 1;
			continue;
		}
		if (!strcmp(a, "--wait-stdin")) {
			o.wait_stdin = 1;
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
		else if (!strcmp(a, "--driver"))
			o.driver = atoi(v);
		else if (!strcmp(a, "--graph-kernels"))
			o.graph_kernels = atoi(v);
		else
			usage();
		i++;
	}
	if (o.steps < 1 || o.kernels < 1 || o.kernels > MAXK || o.cycles < 1 || o.driver < 0 ||
	    o.driver > MAXK || o.graph_kernels < 0 || o.graph_kernels > MAXK)
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
	CK(cudaEventCreate(&c.ev_cp));
	for (i = 0; i <= o.driver; i++)
		CK(cudaEventCreate(&c.ev_d[i]));
	for (i = 0; i < 2; i++) {
		CK(cudaEventCreate(&c.ev_g[i]));
		CK(cudaEventCreate(&c.ev_m[i]));
	}
	if (o.graph)
		build_graph(&c, &o);
	if (o.graph_kernels)
		build_graph_mix(&c, &o);
	if (o.driver) {
		cudaFunction_t fn;

		CK(cudaGetFuncBySymbol(&fn, (const void *)ptv_spin_drv));
		c.drv_fn = (CUfunction)fn;
	}
	if (o.memset)
		CK(cudaMalloc(&c.d_buf, 1 << 20));
	t = (struct step_truth *)calloc(o.steps, sizeof(*t));
	if (getenv("PTV_LATE_SHIM") && *getenv("PTV_LATE_SHIM") &&
	    !dlopen(getenv("PTV_LATE_SHIM"), RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "victim_gpu: PTV_LATE_SHIM: %s\n", dlerror());
		exit(1);
	}

	printf("victim_gpu: pid %d on %s, %d steps x %d kernels, start in %d ms\n", (int)getpid(),
	       prop.name, o.steps, o.kernels, o.start_delay_ms);
	fflush(stdout);
	if (o.wait_stdin) {
		char line[64];

		if (!fgets(line, sizeof(line), stdin)) {
			fprintf(stderr, "victim_gpu: stdin closed before go\n");
			exit(1);
		}
	}
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
