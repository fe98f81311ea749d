// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpuring_dump: the shim's ring read by proftrace's own reader
 * (user/gpuring.c), without the rest of proftrace. For checking the shim on
 * a machine with a GPU (see README.md): attach to PID, heartbeat and drain
 * every 20 ms until PID exits (or SECONDS pass; a zombie has exited), detach, print a JSON
 * summary on stdout and, with -o, one JSON line per record.
 *
 *   gcc -O2 -Iuser tests/gpu/gpuring_dump.c user/gpuring.c -o gpuring_dump
 *   ./gpuring_dump [-o records.jsonl] PID [SECONDS]
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gpuring.h"

#define MAXNAMES 256

struct stats {
	FILE *out;
	unsigned long long n[6], api_runtime, api_driver;
	struct {
		const char *name; /* valid while the ring is open */
		unsigned long long count, total_ns;
	} k[MAXNAMES];
	int nk;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Has pid exited? A pidfd says so as soon as it has, zombie or not:
 * kill(pid, 0) succeeds on a zombie, so a parent that reaps its child
 * only after this program returns would wait for ever. */
static bool exited(int pidfd, int pid)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (pidfd >= 0)
		return poll(&p, 1, 0) == 1;
	return kill(pid, 0) != 0;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static int on_rec(void *ctx, const struct pt_gpu_rec *r)
{
	struct stats *st = ctx;
	FILE *f = st->out;
	int i;

	if (r->kind >= 1 && r->kind <= 5)
		st->n[r->kind]++;
	if (r->kind == PT_GPU_KERNEL) {
		/* Names are interned by the reader: same id, same pointer. */
		for (i = 0; i < st->nk && st->k[i].name != r->kernel.name; i++)
			;
		if (i == st->nk && st->nk < MAXNAMES)
			st->k[st->nk++].name = r->kernel.name;
		if (i < MAXNAMES) {
			st->k[i].count++;
			st->k[i].total_ns += r->end_ns - r->start_ns;
		}
	}
	if (r->kind == PT_GPU_API) {
		if (r->api.driver)
			st->api_driver++;
		else
			st->api_runtime++;
	}
	if (!f)
		return 0;
	fprintf(f, "{\"kind\": %d, \"start_ns\": %llu, \"end_ns\": %llu, \"corr\": %u", r->kind,
		(unsigned long long)r->start_ns, (unsigned long long)r->end_ns, r->correlation_id);
	switch (r->kind) {
	case PT_GPU_KERNEL:
		fprintf(f, ", \"name\": ");
		json_str(f, r->kernel.name);
		fprintf(f,
			", \"device\": %u, \"stream\": %u, \"graph_id\": %u, "
			"\"graph_node_id\": %llu",
			r->kernel.device_id, r->kernel.stream_id, r->kernel.graph_id,
			(unsigned long long)r->kernel.graph_node_id);
		fprintf(f, ", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u]", r->kernel.grid[0],
			r->kernel.grid[1], r->kernel.grid[2], r->kernel.block[0],
			r->kernel.block[1], r->kernel.block[2]);
		break;
	case PT_GPU_MEMCPY:
		fprintf(f, ", \"bytes\": %llu, \"copy_kind\": %u, \"stream\": %u",
			(unsigned long long)r->memcpy.bytes, r->memcpy.copy_kind,
			r->memcpy.stream_id);
		break;
	case PT_GPU_MEMSET:
		fprintf(f, ", \"bytes\": %llu, \"stream\": %u", (unsigned long long)r->memset.bytes,
			r->memset.stream_id);
		break;
	case PT_GPU_API:
		fprintf(f, ", \"driver\": %s, \"cbid\": %u, \"what\": %u, \"tid\": %u, \"ret\": %u",
			r->api.driver ? "true" : "false", r->api.cbid, r->api.what, r->api.tid,
			r->api.return_value);
		break;
	case PT_GPU_SYNC:
		fprintf(f, ", \"sync_type\": %u, \"stream\": %u", r->sync.type, r->sync.stream_id);
		break;
	}
	fprintf(f, "}\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	struct pt_gpuring_info in;
	struct stats st = { 0 };
	struct pt_gpuring *r;
	uint64_t t0, deadline;
	char err[512];
	int opt, pid, pidfd, ret, i;
	double secs = 0;

	while ((opt = getopt(argc, argv, "o:")) != -1) {
		if (opt != 'o')
			goto usage;
		st.out = fopen(optarg, "w");
		if (!st.out) {
			perror(optarg);
			return 1;
		}
	}
	if (optind >= argc)
		goto usage;
	pid = atoi(argv[optind]);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (optind + 1 < argc)
		secs = atof(argv[optind + 1]);

	/* The segment appears when CUDA initialises in the target. */
	t0 = now_ns();
	for (;;) {
		ret = pt_gpuring__open(&r, pid, err, sizeof(err));
		if (!ret)
			break;
		if ((ret != -ENOENT && ret != -EAGAIN) || now_ns() - t0 > 30 * 1000000000ull) {
			fprintf(stderr, "gpuring_dump: %s\n", err);
			return 1;
		}
		nanosleep(&tick, NULL);
	}
	ret = pt_gpuring__attach(r, now_ns());
	if (ret) {
		fprintf(stderr, "gpuring_dump: attach: %s\n", strerror(-ret));
		return 1;
	}
	deadline = secs > 0 ? now_ns() + (uint64_t)(secs * 1e9) : UINT64_MAX;
	while (now_ns() < deadline && !exited(pidfd, pid)) {
		pt_gpuring__heartbeat(r, now_ns());
		if (pt_gpuring__drain(r, on_rec, &st) < 0)
			break;
		nanosleep(&tick, NULL);
	}
	pt_gpuring__finish(r, on_rec, &st, 2000);
	pt_gpuring__info(r, &in);

	printf("{\n  \"records\": {\"kernel\": %llu, \"memcpy\": %llu, \"memset\": %llu, "
	       "\"api_runtime\": %llu, \"api_driver\": %llu, \"sync\": %llu},\n",
	       st.n[PT_GPU_KERNEL], st.n[PT_GPU_MEMCPY], st.n[PT_GPU_MEMSET], st.api_runtime,
	       st.api_driver, st.n[PT_GPU_SYNC]);
	printf("  \"kernels\": {");
	for (i = 0; i < st.nk; i++) {
		printf("%s\n    ", i ? "," : "");
		json_str(stdout, st.k[i].name);
		printf(": {\"count\": %llu, \"total_ns\": %llu}", st.k[i].count, st.k[i].total_ns);
	}
	printf("\n  },\n");
	printf("  \"info\": {\"version\": %u, \"cupti_version\": %u, \"shim_pid\": %u, "
	       "\"state\": %u, \"dormant_reason\": %u, \"activations\": %u, "
	       "\"enable_stall_ns\": %llu, \"enable_stall_max_ns\": %llu, ",
	       in.version, in.cupti_version, in.shim_pid, in.state, in.dormant_reason,
	       in.activations, (unsigned long long)in.enable_stall_ns,
	       (unsigned long long)in.enable_stall_max_ns);
	printf("\"conflict_call\": \"%s\", \"conflict_code\": %u, \"conflict_arg\": %u, ",
	       pt_gpuring__call_name(in.conflict_call), in.conflict_code, in.conflict_arg);
	printf("\"records\": %llu, \"ring_dropped\": %llu, \"cupti_dropped\": %llu, "
	       "\"strtab_full\": %llu, \"unknown_kinds\": %llu, \"bad_records\": %llu, "
	       "\"delivered\": %llu, \"lost\": %llu, \"skipped\": %llu, \"bad_names\": %llu}\n}\n",
	       (unsigned long long)in.records, (unsigned long long)in.ring_dropped,
	       (unsigned long long)in.cupti_dropped, (unsigned long long)in.strtab_full,
	       (unsigned long long)in.unknown_kinds, (unsigned long long)in.bad_records,
	       (unsigned long long)in.delivered, (unsigned long long)in.lost,
	       (unsigned long long)in.skipped, (unsigned long long)in.bad_names);
	if (in.conflict_call)
		fprintf(stderr, "gpuring_dump: shim conflict: %s: %s\n",
			pt_gpuring__call_name(in.conflict_call),
			pt_gpuring__result_name(in.conflict_code));
	if (st.out)
		fclose(st.out);
	pt_gpuring__close(r);
	return 0;
usage:
	fprintf(stderr, "usage: gpuring_dump [-o records.jsonl] PID [SECONDS]\n");
	return 2;
}
