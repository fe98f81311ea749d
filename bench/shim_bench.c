// SPDX-License-Identifier: BSD-2-Clause
/*
 * shim_bench: the CUPTI shim's own CPU time per GPU record, without a GPU.
 *
 * Issue 5 wants well under 1 us of host time per kernel launch with tracing
 * on. CUPTI's part (recording the activity) needs a GPU; the shim's part is
 * the buffer-completed callback, which runs on CUPTI's worker thread for
 * every record: iterate (libcupti), convert (intern the kernel name), write
 * the ring slot. That is what this times, with the objects that make up
 * libproftrace_cupti.so and the real cuptiActivityGetNextRecord (it works
 * without a driver; tests/unit/test_shim.c relies on the same).
 *
 * Buffers are laid out the way CUPTI fills them for a decode loop: one
 * CUpti_ActivityAPI record (cudaLaunchKernel) and one CUpti_ActivityKernel10
 * per launch, a handful of kernel names cycling, PTG_BUF_SIZE bytes each
 * (what the shim hands CUPTI). The segment has the shim's default sizes.
 *
 * Cases, each the median of the repetitions (interleaved):
 *   buffer_done       8 MiB of buffers cycled (in the LLC), ring drained
 *                     between buffers (tail = head), so it never fills
 *   buffer_done_cold  the same over 128 MiB of buffers (records read from
 *                     DRAM, as when CUPTI filled the buffer long ago)
 *   buffer_done_full  the ring full throughout: every record dropped
 *   cupti_next_record libcupti's iterator alone, per record
 *   convert           ptg_convert__activity alone, per record
 *   ring_write        ptg_ring__write alone, per record
 *   intern_hit        ptg_ring__intern of a name already in the table
 *
 * Output: one `name value` line each (ns), for bench/run.py.
 * Usage: shim_bench [repetitions]   (default 7)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "convert.h"
#include "inject.h"
#include "ptgpu.h"

#define NSLOTS (1u << 15) /* the shim's first choice (inject.c) */
#define STRTAB (2u << 20)
#define HOT_BUFS 8    /* x PTG_BUF_SIZE: 8 MiB */
#define COLD_BUFS 128 /* 128 MiB: well past any LLC */
#define HOT_ROUNDS 64 /* buffers delivered per timed run */
#define MICRO_N (1u << 20)

/* In the style of what a transformer decode step launches (vLLM/PyTorch
 * on cuBLAS), mangled as CUPTI reports them; lengths are what matters. */
static const char *const names[] = {
	"_ZN4vllm15rms_norm_kernelIN3c108BFloat16EEEvPT_PKS3_S6_fii",
	"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_"
	"execute_segment_k_off_kernel__5x_cublas",
	"_ZN4vllm22rotary_embedding_kernelIN3c108BFloat16ELb1EEEvPKlPT_S6_PKS5_iiiiii",
	"_ZN4vllm24reshape_and_cache_kernelIN3c108BFloat16ES2_LNS_18Fp8KVCacheDataTypeE0EEEvPKT_"
	"S7_PT0_S9_PKliiiiiiPKfSD_",
	"_ZN7flash24flash_fwd_splitkv_kernelI23Flash_fwd_kernel_traitsILi128ELi64ELi128ELi4ELb0ELb0"
	"EN7cutlass10bfloat16_tE19Flash_kernel_traitsILi128ELi64ELi128ELi4ES3_EELb1ELb0ELb0ELb0ELb1"
	"ELb1ELb0ELb0EEEv16Flash_fwd_params",
	"_ZN4vllm18act_and_mul_kernelIN3c108BFloat16EXadL_ZNS_11silu_kernelIS2_EET_RKS4_EEEEvPS4_"
	"PS5_i",
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIN3c108BFloat16EEE"
	"St5arrayIPcLm3EEEEviT0_T1_",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))
/* One layer: norm, qkv gemm, rope, cache, attention, o gemm, add, norm,
 * up gemm, act, down gemm, add. */
static const unsigned layer[] = { 0, 1, 2, 3, 4, 1, 6, 0, 1, 5, 1, 6 };
#define LAYER_LEN (sizeof(layer) / sizeof(layer[0]))

static CUptiResult f_ok_ts(CUpti_TimestampCallbackFunc fn)
{
	return CUPTI_SUCCESS;
}
static CUptiResult f_ok_tid(CUpti_ActivityThreadIdType t)
{
	return CUPTI_SUCCESS;
}
static CUptiResult f_ok_callbacks(CUpti_BuffersCallbackRequestFunc req,
				  CUpti_BuffersCallbackCompleteFunc done)
{
	return CUPTI_SUCCESS;
}
static CUptiResult f_dropped(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	*dropped = 0;
	return CUPTI_SUCCESS;
}

/* Only what init and the buffer-completed path call; the iterator is
 * libcupti's own. */
static const struct ptg_cupti_ops bench_ops = {
	.register_timestamp_cb = f_ok_ts,
	.set_thread_id_type = f_ok_tid,
	.register_callbacks = f_ok_callbacks,
	.get_next_record = cuptiActivityGetNextRecord,
	.get_num_dropped = f_dropped,
};

static uint64_t bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Fill buf with launches (API + kernel record pairs) until the next pair
 * would not fit. Returns the bytes used; *nlaunch the launches. */
static size_t build_buffer(uint8_t *buf, size_t size, size_t *nlaunch)
{
	CUpti_ActivityKernel10 k;
	CUpti_ActivityAPI api;
	size_t used = 0, n = 0;
	uint64_t t = 1000000000ull;

	memset(buf, 0, size);
	memset(&api, 0, sizeof(api));
	memset(&k, 0, sizeof(k));
	api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	api.processId = 4242;
	api.threadId = 4243;
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = 7;
	k.gridX = 132;
	k.gridY = 1;
	k.gridZ = 1;
	k.blockX = 256;
	k.blockY = 1;
	k.blockZ = 1;
	k.registersPerThread = 64;
	while (used + sizeof(api) + sizeof(k) <= size) {
		api.correlationId = k.correlationId = (uint32_t)(n + 1);
		api.start = t;
		api.end = t + 3000;
		k.start = t + 5000;
		k.end = t + 5000 + 2000 + (n % 7) * 1000;
		k.name = names[layer[n % LAYER_LEN]];
		memcpy(buf + used, &api, sizeof(api));
		used += sizeof(api);
		memcpy(buf + used, &k, sizeof(k));
		used += sizeof(k);
		t += 4000;
		n++;
	}
	*nlaunch = n;
	return used;
}

static void drain(struct ptg_shim *s)
{
	struct ptgpu_header *h = s->ring.hdr;

	__atomic_store_n(&h->tail, __atomic_load_n(&h->head, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}

/* ns for nbuf buffers from pool (cycled) through the shim. */
static uint64_t run_buffers(struct ptg_shim *s, uint8_t **pool, size_t npool, size_t nbuf,
			    size_t valid, int drain_each)
{
	uint64_t t0 = bench_now();
	size_t i;

	for (i = 0; i < nbuf; i++) {
		ptg_shim__buffer_done(s, NULL, 0, pool[i % npool], valid);
		if (drain_each)
			drain(s);
	}
	return bench_now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t counter(struct ptg_shim *s, size_t off)
{
	return __atomic_load_n((uint64_t *)((char *)s->ring.hdr + off), __ATOMIC_RELAXED);
}
#define CTR(s, f) counter(s, offsetof(struct ptgpu_header, f))

enum { M_HOT, M_COLD, M_FULL, M_NEXT, M_CONV, M_WRITE, M_INTERN, NM };

int main(int argc, char **argv)
{
	struct ptg_ring_params p = { .nslots = NSLOTS, .strtab_size = STRTAB, .pid = 4242 };
	int reps = argc > 1 ? atoi(argv[1]) : 7;
	uint8_t *pool[COLD_BUFS] = { 0 };
	size_t *offs = NULL, nlaunch, nrec, valid, len, i, j;
	uint64_t w0, d0, ns, sink = 0;
	struct ptg_shim s;
	union ptgpu_rec rec;
	CUpti_Activity *a;
	double *m[NM] = { 0 };
	double name_len = 0;
	void *mem;
	int r, err = 1;

	if (reps < 1)
		reps = 1;
	len = ptg_ring__size(NSLOTS, STRTAB);
	/* Like the shim's memfd mapping: shared, zero-filled. */
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("shim_bench: mmap");
		return 1;
	}
	if (ptg_shim__init(&s, &bench_ops, bench_now, mem, len, &p)) {
		fprintf(stderr, "shim_bench: ptg_shim__init failed\n");
		goto out;
	}
	for (i = 0; i < COLD_BUFS; i++) {
		pool[i] = aligned_alloc(8, PTG_BUF_SIZE);
		if (!pool[i]) {
			fprintf(stderr, "shim_bench: out of memory\n");
			goto out;
		}
	}
	valid = build_buffer(pool[0], PTG_BUF_SIZE, &nlaunch);
	nrec = 2 * nlaunch;
	for (i = 1; i < COLD_BUFS; i++)
		memcpy(pool[i], pool[0], PTG_BUF_SIZE);
	if (nrec > NSLOTS / 2) {
		fprintf(stderr, "shim_bench: %zu records per buffer do not fit the ring\n", nrec);
		goto out;
	}
	/* Record offsets, for the parts timed alone. */
	offs = calloc(nrec, sizeof(*offs));
	for (i = 0; offs && i < nlaunch; i++) {
		offs[2 * i] = i * (sizeof(CUpti_ActivityAPI) + sizeof(CUpti_ActivityKernel10));
		offs[2 * i + 1] = offs[2 * i] + sizeof(CUpti_ActivityAPI);
	}
	for (i = 0; i < NM; i++)
		m[i] = calloc((size_t)reps, sizeof(double));
	if (!offs || !m[NM - 1] || !m[0]) {
		fprintf(stderr, "shim_bench: out of memory\n");
		goto out;
	}
	for (i = 0; i < NNAMES; i++)
		name_len += (double)strlen(names[i]);

	/* Warm-up: names interned, segment pages touched, and the converted
	 * output checked once against what went in. */
	run_buffers(&s, pool, COLD_BUFS, COLD_BUFS, valid, 1);
	if (CTR(&s, records_written) != (uint64_t)COLD_BUFS * nrec || CTR(&s, bad_records) ||
	    CTR(&s, unknown_kinds) || CTR(&s, strtab_full) || CTR(&s, ring_dropped)) {
		fprintf(stderr,
			"shim_bench: warm-up wrote %llu of %llu records (bad %llu, unknown "
			"%llu, strtab_full %llu, dropped %llu)\n",
			(unsigned long long)CTR(&s, records_written),
			(unsigned long long)COLD_BUFS * nrec,
			(unsigned long long)CTR(&s, bad_records),
			(unsigned long long)CTR(&s, unknown_kinds),
			(unsigned long long)CTR(&s, strtab_full),
			(unsigned long long)CTR(&s, ring_dropped));
		goto out;
	}
	memcpy(&rec, s.ring.slots + ((s.ring.head - 1) & (NSLOTS - 1)) * PTGPU_SLOT_SIZE,
	       sizeof(rec));
	if (rec.kernel.type != PTGPU_REC_KERNEL || rec.kernel.correlation_id != nlaunch ||
	    strcmp(s.ring.strtab + rec.kernel.name_id, names[layer[(nlaunch - 1) % LAYER_LEN]])) {
		fprintf(stderr, "shim_bench: the last record in the ring is not the last kernel\n");
		goto out;
	}

	for (r = 0; r < reps; r++) {
		w0 = CTR(&s, records_written);
		ns = run_buffers(&s, pool, HOT_BUFS, HOT_ROUNDS, valid, 1);
		m[M_HOT][r] = (double)ns / ((double)HOT_ROUNDS * (double)nrec);
		ns = run_buffers(&s, pool, COLD_BUFS, COLD_BUFS, valid, 1);
		m[M_COLD][r] = (double)ns / ((double)COLD_BUFS * (double)nrec);
		if (CTR(&s, records_written) - w0 != (uint64_t)(HOT_ROUNDS + COLD_BUFS) * nrec) {
			fprintf(stderr, "shim_bench: records lost with the ring drained\n");
			goto out;
		}

		/* The reader consumed none of the last NSLOTS records. */
		__atomic_store_n(&s.ring.hdr->tail, s.ring.head - NSLOTS, __ATOMIC_RELEASE);
		d0 = CTR(&s, ring_dropped);
		ns = run_buffers(&s, pool, HOT_BUFS, HOT_ROUNDS, valid, 0);
		m[M_FULL][r] = (double)ns / ((double)HOT_ROUNDS * (double)nrec);
		if (CTR(&s, ring_dropped) - d0 != (uint64_t)HOT_ROUNDS * nrec) {
			fprintf(stderr, "shim_bench: the full ring took records\n");
			goto out;
		}
		drain(&s);

		ns = bench_now();
		for (i = 0; i < HOT_ROUNDS; i++) {
			uint8_t *b = pool[i % HOT_BUFS];

			a = NULL;
			while (cuptiActivityGetNextRecord(b, valid, &a) == CUPTI_SUCCESS)
				sink++;
		}
		m[M_NEXT][r] = (double)(bench_now() - ns) / ((double)HOT_ROUNDS * (double)nrec);

		ns = bench_now();
		for (i = 0; i < HOT_ROUNDS; i++) {
			uint8_t *b = pool[i % HOT_BUFS];

			for (j = 0; j < nrec; j++)
				sink += ptg_convert__activity(&s.ring,
							      (CUpti_Activity *)(b + offs[j]),
							      valid - offs[j], &rec);
		}
		m[M_CONV][r] = (double)(bench_now() - ns) / ((double)HOT_ROUNDS * (double)nrec);

		/* A kernel record; drained every NSLOTS / 4 writes. */
		ns = bench_now();
		for (i = 0; i < MICRO_N; i++) {
			rec.kernel.correlation_id = (uint32_t)i;
			if (ptg_ring__write(&s.ring, &rec))
				sink++;
			if (!(i % (NSLOTS / 4)))
				drain(&s);
		}
		m[M_WRITE][r] = (double)(bench_now() - ns) / MICRO_N;
		drain(&s);

		ns = bench_now();
		for (i = 0; i < MICRO_N; i++)
			sink += ptg_ring__intern(&s.ring, names[layer[i % LAYER_LEN]]);
		m[M_INTERN][r] = (double)(bench_now() - ns) / MICRO_N;
	}
	if (CTR(&s, strtab_full) || CTR(&s, bad_records) || CTR(&s, unknown_kinds)) {
		fprintf(stderr, "shim_bench: names not interned or records refused\n");
		goto out;
	}

	printf("records_per_buffer %zu\n", nrec);
	printf("launches_per_buffer %zu\n", nlaunch);
	printf("buffer_bytes %zu\n", valid);
	printf("distinct_names %zu\n", NNAMES);
	printf("name_len_avg %.0f\n", name_len / NNAMES);
	printf("repetitions %d\n", reps);
	printf("buffer_done_ns_per_record %.2f\n", median(m[M_HOT], reps));
	printf("buffer_done_ns_per_launch %.2f\n", 2 * median(m[M_HOT], reps));
	printf("buffer_done_cold_ns_per_record %.2f\n", median(m[M_COLD], reps));
	printf("buffer_done_cold_ns_per_launch %.2f\n", 2 * median(m[M_COLD], reps));
	printf("buffer_done_full_ns_per_record %.2f\n", median(m[M_FULL], reps));
	printf("buffer_done_full_ns_per_launch %.2f\n", 2 * median(m[M_FULL], reps));
	printf("cupti_next_record_ns %.2f\n", median(m[M_NEXT], reps));
	printf("convert_ns_per_record %.2f\n", median(m[M_CONV], reps));
	printf("ring_write_ns %.2f\n", median(m[M_WRITE], reps));
	printf("intern_hit_ns %.2f\n", median(m[M_INTERN], reps));
	/* Keeps the loops' results observable. */
	if (sink == 42)
		fprintf(stderr, "\n");
	err = 0;
out:
	for (i = 0; i < NM; i++)
		free(m[i]);
	free(offs);
	for (i = 0; i < COLD_BUFS; i++)
		free(pool[i]);
	ptg_shim__fini(&s);
	munmap(mem, len);
	return err;
}
