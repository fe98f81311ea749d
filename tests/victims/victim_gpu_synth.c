// SPDX-License-Identifier: BSD-2-Clause
/*
 * A GPU server without a GPU: it creates the CUPTI shim's segment itself
 * (a sealed memfd, as the shim makes it: shim/memseg.h) and, while a
 * reader is attached, writes through the shim's own writer (shim/ring.c)
 * the records CUPTI would give for the work its host functions launch,
 * with known timings. The join must put every piece of work in the right
 * step and bucket and get busy/idle exact.
 *
 * Per step (gpu_step): engine_schedule launches one 30 us copy,
 * engine_forward launches 4 kernels of 40, 80, 120, 160 us, each starting
 * 10 us after its launch call and over before the next launch, then
 * engine_sync and engine_sample run with the GPU idle. Each launch
 * returns once its work is over, so no two pieces overlap: busy per
 * step is 430 us, all inside the step.
 *
 * usage: victim_gpu_synth [--steps N] [--threads K] [--truth FILE]; prints
 * "ready PID", waits for a line on stdin. --threads K: the steps run in K
 * chunks, each on a thread started for it once the previous one ended
 * (threads that come and go after attach, as a server's do); the truth
 * then has the tid of each (as the process sees them).
 */
#define _GNU_SOURCE /* gettid */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memseg.h"
#include "ring.h"
#include "victim.h"

#define US 1000ull
#define CBID_LAUNCH 211 /* a runtime launch cbid; the join only needs the correlation */
#define CBID_MEMCPY 41

static struct ptg_ring ring;
static uint32_t corr = 1;
static long kernels_written, copies_written, api_written;
static const char *const kname[4] = { "attn_fwd", "mlp_fwd", "attn_fwd", "mlp_fwd" };

/* The shim's state machine, as far as a reader can see it. */
static bool active(void)
{
	struct ptgpu_header *h = ring.hdr;

	if (!__atomic_load_n(&h->attached, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&h->state, PTGPU_STATE_DORMANT, __ATOMIC_RELEASE);
		return false;
	}
	if (h->state != PTGPU_STATE_ACTIVE) {
		h->active_seq = h->attach_seq;
		h->activations++;
		__atomic_store_n(&h->state, PTGPU_STATE_ACTIVE, __ATOMIC_RELEASE);
	}
	return true;
}

static void api(uint64_t t, uint32_t cbid, uint32_t c)
{
	union ptgpu_rec r = { 0 };

	r.api.type = PTGPU_REC_API;
	r.api.domain = PTGPU_API_RUNTIME;
	r.api.correlation_id = c;
	r.api.start_ns = t;
	r.api.end_ns = t + US;
	r.api.cbid = cbid;
	r.api.tid = (uint32_t)gettid();
	r.api.pid = (uint32_t)getpid();
	if (!ptg_ring__write(&ring, &r))
		api_written++;
}

/* Returns when the copy is over (plus 5 us): the work never overlaps,
 * whatever the victim's preemptions (a thread preempted between
 * engine_schedule's clock read and ours used to start the copy so late
 * that the first kernel overlapped it, and the union was short of the
 * truth by the overlap). */
VT_FN void launch_copy(void)
{
	uint64_t t = vt_now();
	union ptgpu_rec r = { 0 };
	uint32_t c = corr++;

	if (!active())
		goto out;
	api(t, CBID_MEMCPY, c);
	r.memcpy.type = PTGPU_REC_MEMCPY;
	r.memcpy.correlation_id = c;
	r.memcpy.start_ns = t + 5 * US;
	r.memcpy.end_ns = t + 35 * US;
	r.memcpy.bytes = 1 << 20;
	r.memcpy.copy_kind = 1; /* HtoD */
	r.memcpy.stream_id = 7;
	if (!ptg_ring__write(&ring, &r))
		copies_written++;
out:
	while (vt_now() < t + 40 * US)
		VT_BARRIER();
}

/* Returns when the kernel is over (plus 5 us). */
VT_FN void launch_kernel(int j)
{
	uint64_t t = vt_now(), d = 40 * US * (uint64_t)(j + 1);
	union ptgpu_rec r = { 0 };
	uint32_t c = corr++;

	if (active()) {
		api(t, CBID_LAUNCH, c);
		r.kernel.type = PTGPU_REC_KERNEL;
		r.kernel.correlation_id = c;
		r.kernel.start_ns = t + 10 * US;
		r.kernel.end_ns = t + 10 * US + d;
		r.kernel.stream_id = 7;
		r.kernel.name_id = ptg_ring__intern(&ring, kname[j]);
		r.kernel.grid_x = 128;
		if (!ptg_ring__write(&ring, &r))
			kernels_written++;
	}
	while (vt_now() < t + 10 * US + d + 5 * US)
		VT_BARRIER();
}

VT_FN void engine_schedule(void)
{
	uint64_t t = vt_now();

	launch_copy();
	while (vt_now() < t + 60 * US)
		VT_BARRIER();
}

VT_FN void engine_forward(void)
{
	for (int j = 0; j < 4; j++)
		launch_kernel(j);
}

VT_FN void engine_sync(void)
{
	vt_spin(30 * US);
}

VT_FN void engine_sample(void)
{
	vt_spin(80 * US);
}

VT_FN void gpu_step(void)
{
	engine_schedule();
	engine_forward();
	engine_sync();
	engine_sample();
}

/* The segment's fd: open for life, as the shim keeps it (proftrace looks
 * among our open files first, our mappings only when no fd is there). */
static int seg_fd = -1;

static int segment(void)
{
	struct ptg_ring_params p = { .nslots = 1 << 14, .strtab_size = 1 << 16 };
	void *mem = NULL;
	size_t size;

	p.pid = (uint32_t)getpid();
	p.created_ns = vt_now();
	size = ptg_ring__size(p.nslots, p.strtab_size);
	if (pt_memseg__create(PTGPU_MEMFD_NAME, size, &mem, &seg_fd))
		return -1;
	if (ptg_ring__init(&ring, mem, size, &p))
		return -1;
	return 0;
}

static struct vt_truth t_step;

struct chunk {
	int steps;
	pid_t tid;
};

static void *run_chunk(void *arg)
{
	struct chunk *c = arg;

	c->tid = gettid();
	/* alive a while before its work, as a server's threads are: one
	 * that starts and ends between two of proftrace's /proc polls cannot
	 * be mapped across PID namespaces (docs/gpu.md, Containers); 200 ms
	 * covers a poll even when proftrace is slow (the asan build) */
	usleep(200000);
	for (int i = 0; i < c->steps; i++)
		VT_CALL(&t_step, gpu_step());
	return NULL;
}

int main(int argc, char **argv)
{
	const char *truth = NULL;
	int steps = 100, nthreads = 0;
	bool hold = false;
	struct chunk chunks[64];
	char line[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hold")) /* after the steps, wait for a line */
			hold = true;
		else
			return 2;
	}
	if (segment())
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	if (nthreads < 0 || nthreads > 64)
		return 2;
	if (!nthreads)
		for (int i = 0; i < steps; i++)
			VT_CALL(&t_step, gpu_step());
	for (int k = 0; k < nthreads; k++) {
		pthread_t th;

		chunks[k].steps = steps / nthreads + (k < steps % nthreads);
		if (pthread_create(&th, NULL, run_chunk, &chunks[k]) || pthread_join(th, NULL))
			return 1;
	}
	if (hold) {
		printf("steps done\n");
		if (!fgets(line, sizeof(line), stdin))
			return 3;
	}
	/* like the shim's exit handler: dormant; the memfd goes with us */
	__atomic_store_n(&ring.hdr->state, PTGPU_STATE_DORMANT, __ATOMIC_RELEASE);
	if (truth) {
		FILE *f = fopen(truth, "w");

		if (!f)
			return 1;
		fprintf(f,
			"{\"steps\": %d, \"kernels\": %ld, \"copies\": %ld, \"api\": %ld, "
			"\"busy_ns_per_step\": %llu, \"step_outer_ns\": %llu, \"pid\": %d, "
			"\"thread_tids\": [",
			steps, kernels_written, copies_written, api_written,
			(unsigned long long)(30 + 40 + 80 + 120 + 160) * US,
			(unsigned long long)t_step.outer_ns, (int)getpid());
		for (int k = 0; k < nthreads; k++)
			fprintf(f, "%s%d", k ? ", " : "", (int)chunks[k].tid);
		fprintf(f, "]}\n");
		fclose(f);
	}
	return 0;
}
