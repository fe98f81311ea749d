// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/metrics.c: --metrics serves the Prometheus text exposition
 * (docs/metrics.md) of a live run. A run opened as a run opens it
 * (pt_run__open on two children of this test, -p PID,PID, one of them
 * started with RANK in its environment, the other named with a quote and
 * a backslash) listens on 127.0.0.1, a port of the kernel's choosing
 * (HOST:0); steps go in as probe records through records.c, which feeds
 * pt_run__metrics_step. A client socket's GET, answered by
 * pt_run__metrics_serve, gets 200 and every family of the docs' table
 * with its type, together and in one block each, one series per process
 * labelled host, pid, comm (escaped) and rank where the process has one;
 * the step counts, histogram (cumulative, le inclusive, +Inf, _sum and
 * _count), bucket times (step.other too), tokens (tokens=arg0: their sum
 * and rate) and events are the figures fed.
 * The ranked child also runs the CUPTI shim's segment (made with the
 * shim's own writer, as tests/victims/victim_gpu_synth does), so its
 * stream opens (pt_run__open_gpu) and the GPU families of the docs'
 * second table have its series alone: busy time per device and over
 * all, the steps' time and idle part, the host-bound share, fed through
 * pt_run__metrics_gpu with records older than the 2 s lag.
 * A later scrape sees the counters grown by what came since, never less
 * (GPU records older than what is final are counted late, not added).
 * Anything but a GET gets 405; pt_run__metrics_free closes the port.
 * Calibration is off (PT_CALIBRATE=off): the probe cost family has no
 * series. Attaching needs BPF: tests/integration/test_metrics.py scrapes
 * a real run with a real Prometheus.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "gpu/gpuring.h"
#include "run/env.h"
#include "run/run.h"
#include "run/calib.h"
#include "run/funcs.h"
#include "run/gpustream.h"
#include "run/metrics.h"
#include "run/records.h"
#include "run/steps.h"
#include "memseg.h"
#include "ptgpu.h"
#include "ring.h"
#include "runfx.h"

#define MS 1000000ull

/* What the targets file names in the children (this binary). */
RUNFX_VICTIM(metrics_step);
RUNFX_VICTIM(metrics_forward);

static const char conf[] = "step native:exe:metrics_step tokens=arg0\n"
			   "bucket engine.forward native:exe:metrics_forward\n";

/* process 0's name: the label value must be escaped */
static const char odd_comm[] = "pt\"m\\x";

struct fx {
	struct run r;
	bool opened;
	char path[32];
	pid_t child[2];
	struct proc *p[2];
	uint32_t step[2], fwd[2]; /* local fids */
	int port;
	char labels[2][512]; /* each process's label set, as served */
	char host[300];
};

/* --- the children --- */

/* Started by exec with RANK in its environment: makes the CUPTI shim's
 * segment as the shim does (a sealed memfd of its name, published with
 * its pid), says it is up on fd, then waits to be killed. */
static int ranked_child_main(int fd)
{
	struct ptg_ring_params rp = { .nslots = 8, .strtab_size = 256, .pid = (uint32_t)getpid() };
	size_t len = ptg_ring__size(rp.nslots, rp.strtab_size);
	struct ptg_ring w;
	void *mem = NULL;
	int seg;

	if (pt_memseg__create(PTGPU_MEMFD_NAME, len, &mem, &seg) ||
	    ptg_ring__init(&w, mem, len, &rp))
		return 1;
	if (write(fd, "r", 1) != 1)
		return 1;
	close(fd);
	for (;;)
		pause();
}

/* Waits for the child's word on rd; true when it came. */
static bool child_ready(int rd)
{
	char c;
	bool ok = read(rd, &c, 1) == 1;

	close(rd);
	return ok;
}

/* A child named odd_comm (its /proc/PID/comm), up when this returns. */
static pid_t odd_child(void)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NAME, odd_comm);
		if (write(fds[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid > 0 && !child_ready(fds[0])) {
		runfx__reap(pid);
		return -1;
	}
	if (pid < 0)
		close(fds[0]);
	return pid;
}

/* This binary again, with RANK=3 in its environment (as a launcher
 * gives it), up when this returns. */
static pid_t ranked_child(void)
{
	char exe[PATH_MAX], fd[16];
	char *envp[] = { "RANK=3", "LOCAL_RANK=1", NULL };
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fds[2];
	pid_t pid;

	if (n <= 0 || pipe(fds))
		return -1;
	exe[n] = '\0';
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	snprintf(fd, sizeof(fd), "%d", fds[1]);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { exe, "--metrics-child", fd, NULL };

		close(fds[0]);
		execve(exe, argv, envp);
		_exit(127);
	}
	close(fds[1]);
	if (pid > 0 && !child_ready(fds[0])) {
		runfx__reap(pid);
		return -1;
	}
	if (pid < 0)
		close(fds[0]);
	return pid;
}

/* --- the run --- */

static int fid_of(const struct proc *p, const char *sym)
{
	for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++)
		if (!strcmp(pt_resolver__func(p->res, i)->symbol, sym))
			return (int)i;
	return -1;
}

static int teardown(void **state);

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	struct pt_env env = { 0 };
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	char comm[16];

	if (!x)
		return -1;
	*state = x;
	strcpy(x->path, "/tmp/pt-test-metrics-XXXXXX");
	if (runfx__targets(x->path, conf))
		goto fail;
	x->child[0] = odd_child();
	x->child[1] = ranked_child();
	if (x->child[0] < 0 || x->child[1] < 0)
		goto fail;
	env.pids[0] = env.pid = x->child[0];
	env.pids[1] = x->child[1];
	env.npids = 2;
	env.targets = x->path;
	env.quiet = true;
	env.metrics = "127.0.0.1:0"; /* any free port */
	x->opened = true;
	if (pt_run__open(&x->r, &env) || x->r.procs.n != 2)
		goto fail;
	/* each function declared as pt_run__attach_new declares it */
	for (int i = 0; i < 2; i++) {
		struct proc *p = x->r.procs.v[i];
		int s = fid_of(p, "metrics_step"), f = fid_of(p, "metrics_forward");

		if (s < 0 || f < 0 || pt_run__grow_fstate(p) ||
		    pt_run__declare_func(p, (size_t)s) || pt_run__declare_func(p, (size_t)f))
			goto fail;
		x->p[i] = p;
		x->step[i] = (uint32_t)s;
		x->fwd[i] = (uint32_t)f;
	}
	/* as pt_run__attach: calibration (off here), the GPU streams (the
	 * ranked child has one), then the port */
	setenv("PT_CALIBRATE", "off", 1);
	pt_calib__get(&x->r.calib, NULL);
	for (int i = 0; i < 2; i++)
		if (pt_run__open_gpu(x->p[i]))
			goto fail;
	if (pt_run__metrics_open(&x->r) ||
	    getsockname(pt_run__metrics_fd(&x->r), (struct sockaddr *)&sa, &len) ||
	    sa.sin_family != AF_INET || !ntohs(sa.sin_port))
		goto fail;
	x->port = ntohs(sa.sin_port);
	if (gethostname(x->host, sizeof(x->host)))
		goto fail;
	{
		/* the exec'ed child's comm: this binary's name, as the kernel
		 * keeps it (15 characters) */
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		if (n <= 0)
			goto fail;
		exe[n] = '\0';
		snprintf(comm, sizeof(comm), "%s", strrchr(exe, '/') + 1);
	}
	snprintf(x->labels[0], sizeof(x->labels[0]), "host=\"%s\",pid=\"%d\",comm=\"pt\\\"m\\\\x\"",
		 x->host, x->child[0]);
	snprintf(x->labels[1], sizeof(x->labels[1]),
		 "host=\"%s\",pid=\"%d\",comm=\"%s\",rank=\"3\"", x->host, x->child[1], comm);
	return 0;
fail:
	teardown(state);
	return -1;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->opened)
		pt_run__free(&x->r); /* pt_run__metrics_free too */
	for (int i = 0; i < 2; i++)
		runfx__reap(x->child[i]);
	unlink(x->path);
	free(x);
	return 0;
}

/* One record of process i, as the ring gives it. */
static void rec(struct fx *x, int i, uint32_t type, uint32_t local, uint16_t depth, uint64_t t0,
		uint64_t t1)
{
	struct pt_rec r = { .type = type,
			    .fid = PT_FID_MAKE(x->p[i]->idx, local),
			    .pid = (uint32_t)x->child[i],
			    .tid = (uint32_t)x->child[i],
			    .t_entry = t0,
			    .t_exit = type == PT_REC_EXIT ? t1 : 0,
			    .depth = depth };

	assert_int_equal(pt_run__on_rec(&x->r, &r, sizeof(r)), 0);
}

/* The step's tokens=arg0, read at its entry [t0, ...). */
static void tokens(struct fx *x, int i, uint64_t t0, int64_t n)
{
	struct pt_rec_vals v = { .type = PT_REC_VALUES,
				 .fid = PT_FID_MAKE(x->p[i]->idx, x->step[i]),
				 .pid = (uint32_t)x->child[i],
				 .tid = (uint32_t)x->child[i],
				 .t_entry = t0 };

	for (size_t k = 0; k < PT_MAX_VALS; k++)
		v.v[k].status = PT_VST_UNREAD;
	v.v[0] = (struct pt_val){ .v = n, .status = PT_VST_OK, .kind = PT_VKIND_SCALAR };
	assert_int_equal(pt_run__on_rec(&x->r, (const struct pt_rec *)&v, sizeof(v)), 0);
}

/* A step [t0, t1) of process i with n tokens, with a forward [f0, f1)
 * inside unless f1 is 0: 3 or 5 records. */
static void step(struct fx *x, int i, uint64_t t0, uint64_t t1, int64_t n, uint64_t f0, uint64_t f1)
{
	rec(x, i, PT_REC_ENTRY, x->step[i], 0, t0, 0);
	tokens(x, i, t0, n);
	if (f1) {
		rec(x, i, PT_REC_ENTRY, x->fwd[i], 1, f0, 0);
		rec(x, i, PT_REC_EXIT, x->fwd[i], 1, f0, f1);
	}
	rec(x, i, PT_REC_EXIT, x->step[i], 0, t0, t1);
}

/* --- a client --- */

struct resp {
	char *text; /* all of it, NUL-terminated */
	size_t len;
	const char *body; /* after the header */
};

/* req sent to the port, served, the answer read to its end. */
static void ask(struct fx *x, const char *req, struct resp *out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)x->port) };
	struct timeval tv = { .tv_sec = 2 };
	size_t cap = 65536;
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t n;
	char *end;

	assert_true(c >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(send(c, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	/* what the event loop does when the port is readable */
	pt_run__metrics_serve(&x->r);
	out->text = malloc(cap);
	assert_non_null(out->text);
	out->len = 0;
	while ((n = recv(c, out->text + out->len, cap - 1 - out->len, 0)) > 0) {
		out->len += (size_t)n;
		assert_true(out->len < cap - 1);
	}
	assert_int_equal(n, 0); /* closed by the server, not timed out */
	close(c);
	out->text[out->len] = '\0';
	end = strstr(out->text, "\r\n\r\n");
	assert_non_null(end);
	out->body = end + 4;
}

static void resp_free(struct resp *r)
{
	free(r->text);
}

/* A GET, answered 200 with the exposition's content type and length. */
static void scrape(struct fx *x, struct resp *out)
{
	char want[64];

	ask(x, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: text/plain\r\n\r\n", out);
	assert_memory_equal(out->text, "HTTP/1.0 200 OK\r\n", strlen("HTTP/1.0 200 OK\r\n"));
	assert_non_null(strstr(out->text, "\r\nContent-Type: text/plain; version=0.0.4; "
					  "charset=utf-8\r\n"));
	snprintf(want, sizeof(want), "\r\nContent-Length: %zu\r\n",
		 out->len - (size_t)(out->body - out->text));
	assert_non_null(strstr(out->text, want));
}

/* The value of series name{labels} (labels "": none), which must be
 * there once. */
static double value(const char *body, const char *name, const char *labels)
{
	char key[1024];
	const char *at, *next;
	char *end;
	double v;

	snprintf(key, sizeof(key), "\n%s%s%s%s ", name, labels[0] ? "{" : "", labels,
		 labels[0] ? "}" : "");
	at = strstr(body - 1, key); /* the body follows a "\n" */
	if (!at)
		fail_msg("no series %s", key + 1);
	next = strstr(at + 1, key);
	if (next)
		fail_msg("series %s twice", key + 1);
	v = strtod(at + strlen(key), &end);
	if (*end != '\n')
		fail_msg("series %s: no number", key + 1);
	return v;
}

static bool has_series(const char *body, const char *name)
{
	char key[256];

	snprintf(key, sizeof(key), "\n%s{", name);
	return strstr(body - 1, key) != NULL;
}

/* The type name's "# TYPE" line gives it ("" when none). */
static const char *type_of(const char *body, const char *name, char *buf, size_t len)
{
	char key[256];
	const char *at;

	snprintf(key, sizeof(key), "\n# TYPE %s ", name);
	at = strstr(body - 1, key);
	if (!at)
		return "";
	at += strlen(key);
	snprintf(buf, len, "%.*s", (int)strcspn(at, "\n"), at);
	return buf;
}

/* The text format's rules: every line a comment or a sample, each
 * sample after its family's "# TYPE" (a histogram's _bucket, _sum and
 * _count are its family's), a family's samples in one block, each
 * family typed once. */
static void check_format(const char *body)
{
	char fam[128] = "", type[32] = "", seen[64][128];
	size_t nseen = 0;

	for (const char *l = body; *l; l = strchr(l, '\n') + 1) {
		size_t n = strcspn(l, "{ ");
		char name[128];

		assert_non_null(strchr(l, '\n')); /* every line ends */
		if (!strncmp(l, "# HELP ", 7))
			continue;
		if (!strncmp(l, "# TYPE ", 7)) {
			assert_int_equal(sscanf(l, "# TYPE %127s %31s", fam, type), 2);
			for (size_t i = 0; i < nseen; i++)
				if (!strcmp(seen[i], fam))
					fail_msg("family %s typed twice", fam);
			assert_true(nseen < 64);
			strcpy(seen[nseen++], fam);
			continue;
		}
		assert_true(l[0] != '#');
		snprintf(name, sizeof(name), "%.*s", (int)n, l);
		if (!strcmp(name, fam))
			continue;
		if (!strcmp(type, "histogram")) {
			size_t f = strlen(fam);

			if (!strncmp(name, fam, f) &&
			    (!strcmp(name + f, "_bucket") || !strcmp(name + f, "_sum") ||
			     !strcmp(name + f, "_count")))
				continue;
		}
		fail_msg("sample %s outside its family's block (in %s)", name, fam);
	}
}

/* docs/metrics.md's table, without the GPU families */
static const struct family {
	const char *name, *type;
} families[] = {
	{ "proftrace_up", "gauge" },
	{ "proftrace_steps_total", "counter" },
	{ "proftrace_step_seconds", "histogram" },
	{ "proftrace_bucket_seconds_total", "counter" },
	{ "proftrace_tokens_total", "counter" },
	{ "proftrace_tokens_per_second", "gauge" },
	{ "proftrace_probe_overhead_seconds_total", "counter" },
	{ "proftrace_events_total", "counter" },
	{ "proftrace_dropped_events_total", "counter" },
};

static const char *const les[] = { "0.0005", "0.001", "0.002", "0.005", "0.01",
				   "0.02",   "0.05",  "0.1",   "0.2",	"0.5",
				   "1",	     "2",     "5",     "10",	"+Inf" };
#define NLES (sizeof(les) / sizeof(les[0]))

/* process i's histogram bucket le (an index in les) */
static double hist(const struct fx *x, const char *body, int i, size_t le)
{
	char l[600];

	snprintf(l, sizeof(l), "%s,le=\"%s\"", x->labels[i], les[le]);
	return value(body, "proftrace_step_seconds_bucket", l);
}

static double bucket(const struct fx *x, const char *body, int i, const char *b)
{
	char l[600];

	snprintf(l, sizeof(l), "%s,bucket=\"%s\"", x->labels[i], b);
	return value(body, "proftrace_bucket_seconds_total", l);
}

/* GPU work [s, e) of process i on device dev, as its ring gives it. */
static void gpu(struct fx *x, int i, enum pt_gpu_kind kind, uint32_t dev, uint64_t s, uint64_t e)
{
	struct pt_gpu_rec g = { .kind = kind, .start_ns = s, .end_ns = e };

	if (kind == PT_GPU_KERNEL)
		g.kernel.device_id = dev;
	else if (kind == PT_GPU_MEMCPY)
		g.memcpy.device_id = dev;
	else if (kind == PT_GPU_MEMSET)
		g.memset.device_id = dev;
	pt_run__metrics_gpu(x->p[i], &g);
}

/* Process 0: steps of 3 ms (1 ms of forward, 100 tokens), 20 ms (5 ms,
 * 200), 2.5 s (300); process 1: one of 15 ms (2 ms, 50). 18 records.
 * Process 1's GPU work in its step [10, 25) ms: a kernel [12, 14) and a
 * memset [20, 21) on device 0, a copy [13, 16) on device 1 (busy 3 ms
 * each, 5 ms together: 10 ms of the step idle); an API call is no work.
 * All of it long before the settle point (now - 2 s). */
static void feed(struct fx *x)
{
	step(x, 0, 10 * MS, 13 * MS, 100, 11 * MS, 12 * MS);
	step(x, 0, 20 * MS, 40 * MS, 200, 21 * MS, 26 * MS);
	step(x, 0, 100 * MS, 2600 * MS, 300, 0, 0);
	step(x, 1, 10 * MS, 25 * MS, 50, 12 * MS, 14 * MS);
	gpu(x, 1, PT_GPU_API, 0, 11 * MS, 20 * MS);
	gpu(x, 1, PT_GPU_KERNEL, 0, 12 * MS, 14 * MS);
	gpu(x, 1, PT_GPU_MEMCPY, 1, 13 * MS, 16 * MS);
	gpu(x, 1, PT_GPU_MEMSET, 0, 20 * MS, 21 * MS);
}

/* docs/metrics.md's GPU table */
static const struct family gpu_families[] = {
	{ "proftrace_gpu_busy_seconds_total", "counter" },
	{ "proftrace_gpu_any_busy_seconds_total", "counter" },
	{ "proftrace_gpu_step_seconds_total", "counter" },
	{ "proftrace_gpu_step_idle_seconds_total", "counter" },
	{ "proftrace_gpu_host_bound_share", "gauge" },
	{ "proftrace_gpu_late_records_total", "counter" },
};

static double busy(const struct fx *x, const char *body, unsigned int dev)
{
	char l[600];

	snprintf(l, sizeof(l), "%s,device=\"%u\"", x->labels[1], dev);
	return value(body, "proftrace_gpu_busy_seconds_total", l);
}

static void test_exposition(void **state)
{
	struct fx *x = *state;
	/* process 0's cumulative counts per le: 3 ms in 0.005, 20 ms in
	 * 0.02 (le is inclusive), 2.5 s in 5 */
	static const double cum0[NLES] = { 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3 };
	static const double cum1[NLES] = { 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	struct resp r;
	char host[400], t[32];

	feed(x);
	scrape(x, &r);
	check_format(r.body);
	for (size_t i = 0; i < ARRAY_SIZE(families); i++)
		if (strcmp(type_of(r.body, families[i].name, t, sizeof(t)), families[i].type))
			fail_msg("%s: type '%s', docs/metrics.md says %s", families[i].name, t,
				 families[i].type);
	/* the run's own series: host only */
	snprintf(host, sizeof(host), "host=\"%s\"", x->host);
	assert_true(value(r.body, "proftrace_up", host) == 1);
	assert_true(value(r.body, "proftrace_events_total", host) == 18);
	assert_true(value(r.body, "proftrace_dropped_events_total", host) == 0);
	/* a series per process, with its labels */
	assert_true(value(r.body, "proftrace_steps_total", x->labels[0]) == 3);
	assert_true(value(r.body, "proftrace_steps_total", x->labels[1]) == 1);
	for (size_t le = 0; le < NLES; le++) {
		if (hist(x, r.body, 0, le) != cum0[le] || hist(x, r.body, 1, le) != cum1[le])
			fail_msg("le %s: %g and %g, want %g and %g", les[le],
				 hist(x, r.body, 0, le), hist(x, r.body, 1, le), cum0[le],
				 cum1[le]);
	}
	assert_float_equal(value(r.body, "proftrace_step_seconds_sum", x->labels[0]), 2.523, 1e-9);
	assert_true(value(r.body, "proftrace_step_seconds_count", x->labels[0]) == 3);
	assert_float_equal(value(r.body, "proftrace_step_seconds_sum", x->labels[1]), 0.015, 1e-9);
	assert_true(value(r.body, "proftrace_step_seconds_count", x->labels[1]) == 1);
	assert_float_equal(bucket(x, r.body, 0, "engine.forward"), 0.006, 1e-9);
	assert_float_equal(bucket(x, r.body, 0, "step.other"), 2.517, 1e-9);
	assert_float_equal(bucket(x, r.body, 1, "engine.forward"), 0.002, 1e-9);
	assert_float_equal(bucket(x, r.body, 1, "step.other"), 0.013, 1e-9);
	/* tokens=arg0: their sum, and over the steps' time */
	assert_true(value(r.body, "proftrace_tokens_total", x->labels[0]) == 600);
	assert_true(value(r.body, "proftrace_tokens_total", x->labels[1]) == 50);
	assert_float_equal(value(r.body, "proftrace_tokens_per_second", x->labels[0]), 600 / 2.523,
			   1e-6);
	assert_float_equal(value(r.body, "proftrace_tokens_per_second", x->labels[1]), 50 / 0.015,
			   1e-6);
	/* calibration off: typed, with no series */
	assert_false(has_series(r.body, "proftrace_probe_overhead_seconds_total"));
	/* the GPU families: process 1's series only (process 0 has no
	 * stream) */
	for (size_t i = 0; i < ARRAY_SIZE(gpu_families); i++) {
		char key[1024];

		if (strcmp(type_of(r.body, gpu_families[i].name, t, sizeof(t)),
			   gpu_families[i].type))
			fail_msg("%s: type '%s', docs/metrics.md says %s", gpu_families[i].name, t,
				 gpu_families[i].type);
		snprintf(key, sizeof(key), "%s{%s", gpu_families[i].name, x->labels[0]);
		assert_null(strstr(r.body, key));
	}
	assert_float_equal(busy(x, r.body, 0), 0.003, 1e-9);
	assert_float_equal(busy(x, r.body, 1), 0.003, 1e-9);
	assert_float_equal(value(r.body, "proftrace_gpu_any_busy_seconds_total", x->labels[1]),
			   0.005, 1e-9);
	assert_float_equal(value(r.body, "proftrace_gpu_step_seconds_total", x->labels[1]), 0.015,
			   1e-9);
	assert_float_equal(value(r.body, "proftrace_gpu_step_idle_seconds_total", x->labels[1]),
			   0.010, 1e-9);
	assert_float_equal(value(r.body, "proftrace_gpu_host_bound_share", x->labels[1]), 0.666667,
			   1e-9);
	assert_true(value(r.body, "proftrace_gpu_late_records_total", x->labels[1]) == 0);
	resp_free(&r);
}

/* Counters only grow: a second scrape sees the first's figures and what
 * came since, and nothing is reset by being read. */
static void test_second_scrape(void **state)
{
	struct fx *x = *state;
	struct resp a, b;
	char host[400];

	feed(x);
	scrape(x, &a);
	step(x, 1, 30 * MS, 34 * MS, 10, 31 * MS, 32 * MS); /* 4 ms, 1 ms forward */
	/* older than the point the first scrape settled, and than the GPU
	 * union kept (10 s before it: the machine is up longer than 12 s):
	 * the kernel is late, left out; the step is late too (the work of its
	 * start is gone) and all idle */
	gpu(x, 1, PT_GPU_KERNEL, 0, 31 * MS, 32 * MS);
	scrape(x, &b);
	check_format(b.body);
	snprintf(host, sizeof(host), "host=\"%s\"", x->host);
	assert_true(value(b.body, "proftrace_events_total", host) == 23);
	for (int i = 0; i < 2; i++) {
		assert_true(value(b.body, "proftrace_steps_total", x->labels[i]) ==
			    value(a.body, "proftrace_steps_total", x->labels[i]) + i);
		assert_true(value(b.body, "proftrace_step_seconds_count", x->labels[i]) ==
			    value(a.body, "proftrace_step_seconds_count", x->labels[i]) + i);
		for (size_t le = 0; le < NLES; le++)
			assert_true(hist(x, b.body, i, le) >= hist(x, a.body, i, le));
		assert_true(value(b.body, "proftrace_step_seconds_sum", x->labels[i]) >=
			    value(a.body, "proftrace_step_seconds_sum", x->labels[i]));
		assert_true(bucket(x, b.body, i, "engine.forward") >=
			    bucket(x, a.body, i, "engine.forward"));
		assert_true(bucket(x, b.body, i, "step.other") >=
			    bucket(x, a.body, i, "step.other"));
		assert_true(value(b.body, "proftrace_tokens_total", x->labels[i]) >=
			    value(a.body, "proftrace_tokens_total", x->labels[i]));
	}
	assert_true(value(b.body, "proftrace_tokens_total", x->labels[1]) == 60);
	/* the new step: 4 ms, in le 0.005 and above */
	assert_true(hist(x, b.body, 1, 2) == 0);
	assert_true(hist(x, b.body, 1, 3) == 1);
	assert_true(hist(x, b.body, 1, NLES - 1) == 2);
	assert_float_equal(value(b.body, "proftrace_step_seconds_sum", x->labels[1]), 0.019, 1e-9);
	assert_float_equal(bucket(x, b.body, 1, "engine.forward"), 0.003, 1e-9);
	assert_float_equal(bucket(x, b.body, 1, "step.other"), 0.016, 1e-9);
	assert_true(busy(x, b.body, 0) == busy(x, a.body, 0));
	assert_true(busy(x, b.body, 1) == busy(x, a.body, 1));
	assert_true(value(b.body, "proftrace_gpu_any_busy_seconds_total", x->labels[1]) ==
		    value(a.body, "proftrace_gpu_any_busy_seconds_total", x->labels[1]));
	assert_float_equal(value(b.body, "proftrace_gpu_step_seconds_total", x->labels[1]), 0.019,
			   1e-9);
	assert_float_equal(value(b.body, "proftrace_gpu_step_idle_seconds_total", x->labels[1]),
			   0.014, 1e-9);
	assert_true(value(b.body, "proftrace_gpu_late_records_total", x->labels[1]) == 2);
	/* process 0 had nothing new: the same figures */
	assert_true(value(b.body, "proftrace_step_seconds_sum", x->labels[0]) ==
		    value(a.body, "proftrace_step_seconds_sum", x->labels[0]));
	resp_free(&a);
	resp_free(&b);
}

/* GET only: anything else is 405, with no body, and serves nothing;
 * the port still answers a GET after it. */
static void test_bad_request(void **state)
{
	static const char *const bad[] = { "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n",
					   "HEAD / HTTP/1.0\r\n\r\n", "get / HTTP/1.0\r\n\r\n",
					   "\r\n\r\n" };
	static const char status[] = "HTTP/1.0 405 Method Not Allowed\r\n";
	struct fx *x = *state;
	struct resp r;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		ask(x, bad[i], &r);
		if (strncmp(r.text, status, strlen(status)) ||
		    !strstr(r.text, "\r\nContent-Length: 0\r\n") || r.body[0])
			fail_msg("%.20s...: answered %s", bad[i], r.text);
		resp_free(&r);
	}
	scrape(x, &r);
	assert_non_null(strstr(r.body, "proftrace_up{"));
	resp_free(&r);
}

/* Freed, the port is closed: a client is refused, and the run has no
 * socket to wait on; freeing again (pt_run__free does) is harmless. */
static void test_free_closes(void **state)
{
	struct fx *x = *state;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)x->port) };
	int c;

	assert_true(pt_run__metrics_fd(&x->r) >= 0);
	pt_run__metrics_free(&x->r);
	assert_int_equal(pt_run__metrics_fd(&x->r), -1);
	pt_run__metrics_serve(&x->r); /* nothing to serve: no harm */
	pt_run__metrics_free(&x->r);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(c >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), -1);
	assert_int_equal(errno, ECONNREFUSED);
	close(c);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exposition, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_scrape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_closes, setup, teardown),
	};

	if (argc == 3 && !strcmp(argv[1], "--metrics-child"))
		return ranked_child_main(atoi(argv[2]));
	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
