// SPDX-License-Identifier: BSD-2-Clause
/*
 * --metrics HOST:PORT: the Prometheus text exposition format (0.0.4) over
 * a minimal HTTP/1.0 server in the event loop, so the figures of a live
 * run feed the systems a fleet already watches (docs/metrics.md). Each
 * scrape is answered at once from the aggregators; nothing is kept but a
 * step-time histogram per process (Prometheus's fixed buckets) and, for a
 * process with a GPU stream, the live GPU figures (aggregate/gpulive.h),
 * which trail the clock by GPU_LAG_NS: CUPTI hands records over late.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "run.h"
#include "metrics.h"

#include "aggregate/agg.h"
#include "aggregate/gpulive.h"
#include "aggregate/overhead.h"
#include "aggregate/stepvals.h"
#include "config/valexpr.h"
#include "gpu/gpuring.h"
#include "util/log.h"
#include "util/util.h"

/* step-time histogram bounds, seconds */
static const double le_s[] = { 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
			       0.1,    0.2,   0.5,   1,	    2,	  5,	10 };
#define NLE (sizeof(le_s) / sizeof(le_s[0]))

/* GPU figures are final this far behind the clock: the shim flushes
 * CUPTI's buffers every 100 ms and a kernel's record comes once it ended;
 * a record later than that is counted as late (gpu_late_records_total) */
#define GPU_LAG_NS (2000ull * 1000 * 1000)
/* and the union of GPU work is kept this much longer for steps longer
 * than the lag, whose records come at their end (a longer one is counted
 * as late: the work of its start is gone) */
#define GPU_KEEP_NS (10000ull * 1000 * 1000)
/* settle every this many GPU records, so a slow scraper costs no memory */
#define GPU_SETTLE_EVERY 4096

struct phist {
	uint64_t n[NLE + 1]; /* last: +Inf */
	double sum_s;
};

struct pt_metrics {
	int fd;
	char host[256];
	struct phist *h; /* by process index */
	size_t nh;
	char *buf;
	size_t len, cap;
	uint64_t scrapes;
};

int pt_run__metrics_open(struct run *r)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	const char *colon = strrchr(r->env.metrics, ':');
	char host[256];
	struct pt_metrics *m;
	int one = 1, e;

	snprintf(host, sizeof(host), "%.*s", (int)(colon - r->env.metrics), r->env.metrics);
	/* [::1]:9464 */
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	e = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
	if (e) {
		pt_msg("proftrace: --metrics %s: %s (hint: give HOST:PORT, e.g. 127.0.0.1:9464)\n",
		       r->env.metrics, gai_strerror(e));
		return -PT_EUSAGE;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	m->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->fd < 0 || setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->fd, ai->ai_addr, ai->ai_addrlen) || listen(m->fd, 16)) {
		e = -errno;
		pt_msg("proftrace: --metrics %s: cannot listen: %s (hint: is the port in use?)\n",
		       r->env.metrics, strerror(-e));
		if (m->fd >= 0)
			close(m->fd);
		free(m);
		freeaddrinfo(ai);
		return -PT_EUSAGE;
	}
	freeaddrinfo(ai);
	if (gethostname(m->host, sizeof(m->host)))
		snprintf(m->host, sizeof(m->host), "unknown");
	r->metrics = m;
	pt_vlog("proftrace: serving Prometheus metrics on %s\n", r->env.metrics);
	return 0;
}

/* Its listening socket, for the event loop to wait on; -1: no --metrics. */
int pt_run__metrics_fd(const struct run *r)
{
	return r->metrics ? r->metrics->fd : -1;
}

void pt_run__metrics_free(struct run *r)
{
	struct pt_metrics *m = r->metrics;

	if (!m)
		return;
	close(m->fd);
	free(m->h);
	free(m->buf);
	free(m);
	r->metrics = NULL;
}

/* the process's live GPU figures, made on first use (from the run's start,
 * as the end-of-run join); NULL when out of memory (then left out) */
static struct pt_gpulive *live_of(struct proc *p)
{
	if (!p->metrics.gpulive)
		p->metrics.gpulive = pt_gpulive__new(p->run->t0_mono, GPU_LAG_NS, GPU_KEEP_NS);
	return p->metrics.gpulive;
}

void pt_run__metrics_step(struct proc *p, const struct pt_step *s)
{
	struct pt_metrics *m = p->run->metrics;
	double v = (double)(s->t_end - s->t_start) / 1e9;
	size_t i;

	if (!m)
		return;
	if (p->idx >= m->nh) {
		size_t n = p->idx + 8;
		struct phist *h = realloc(m->h, n * sizeof(*h));

		if (!h)
			return;
		memset(h + m->nh, 0, (n - m->nh) * sizeof(*h));
		m->h = h;
		m->nh = n;
	}
	for (i = 0; i < NLE && v > le_s[i]; i++)
		;
	m->h[p->idx].n[i]++;
	m->h[p->idx].sum_s += v;
	if (p->gpu.join && live_of(p))
		pt_gpulive__step(p->metrics.gpulive, s->t_start, s->t_end);
}

void pt_run__metrics_gpu(struct proc *p, const struct pt_gpu_rec *g)
{
	uint32_t dev;

	if (!p->run->metrics || !live_of(p))
		return;
	switch (g->kind) {
	case PT_GPU_KERNEL:
		dev = g->kernel.device_id;
		break;
	case PT_GPU_MEMCPY:
		dev = g->memcpy.device_id;
		break;
	case PT_GPU_MEMSET:
		dev = g->memset.device_id;
		break;
	default:
		return;
	}
	pt_gpulive__work(p->metrics.gpulive, dev, g->start_ns, g->end_ns);
	if (++p->metrics.gpulive_recs % GPU_SETTLE_EVERY == 0)
		pt_gpulive__settle(p->metrics.gpulive, pt_now_ns(CLOCK_MONOTONIC));
}

static void out(struct pt_metrics *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct pt_metrics *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(m->buf + m->len, m->cap - m->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (m->len + (size_t)n < m->cap) {
			m->len += (size_t)n;
			return;
		}
		{
			size_t cap = (m->cap + (size_t)n) * 2 + 4096;
			char *b = realloc(m->buf, cap);

			if (!b)
				return;
			m->buf = b;
			m->cap = cap;
		}
	}
}

/* A label value, escaped as the format asks (\\, \", \n). */
static void esc(char *dst, size_t len, const char *s)
{
	size_t j = 0;

	for (; s && *s && j + 3 < len; s++) {
		if (*s == '\\' || *s == '"') {
			dst[j++] = '\\';
			dst[j++] = *s;
		} else if (*s == '\n') {
			dst[j++] = '\\';
			dst[j++] = 'n';
		} else {
			dst[j++] = *s;
		}
	}
	dst[j] = '\0';
}

static void head(struct pt_metrics *m, const char *name, const char *type, const char *help)
{
	out(m, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* labels of process p: {host,pid,comm,rank} */
static void plabels(struct pt_metrics *m, const struct proc *p, char *buf, size_t len)
{
	char comm[160], host[300];

	esc(comm, sizeof(comm), p->tracee.comm);
	esc(host, sizeof(host), m->host);
	if (p->rank >= 0)
		snprintf(buf, len, "host=\"%s\",pid=\"%d\",comm=\"%s\",rank=\"%d\"", host,
			 p->tracee.pid, comm, p->rank);
	else
		snprintf(buf, len, "host=\"%s\",pid=\"%d\",comm=\"%s\"", host, p->tracee.pid,
			 comm); /* an empty label is no label */
}

/* the per-process GPU families after the per-device one: a value, or
 * false for none */
static bool any_busy(const struct pt_gpulive_totals *t, double *v)
{
	*v = (double)t->busy_ns / 1e9;
	return true;
}

static bool step_s(const struct pt_gpulive_totals *t, double *v)
{
	*v = (double)t->step_ns / 1e9;
	return true;
}

static bool idle_s(const struct pt_gpulive_totals *t, double *v)
{
	*v = (double)t->idle_ns / 1e9;
	return true;
}

static bool host_bound(const struct pt_gpulive_totals *t, double *v)
{
	*v = t->step_ns ? (double)t->idle_ns / (double)t->step_ns : 0;
	return t->step_ns != 0;
}

static bool late(const struct pt_gpulive_totals *t, double *v)
{
	*v = (double)(t->late + t->oom);
	return true;
}

static const struct gpu_family {
	const char *name, *type, *help;
	bool (*value)(const struct pt_gpulive_totals *t, double *v);
	int decimals;
} gpu_families[] = {
	{ "proftrace_gpu_any_busy_seconds_total", "counter",
	  "time any of the process's devices was busy (the union)", any_busy, 9 },
	{ "proftrace_gpu_step_seconds_total", "counter",
	  "time of the counted steps whose GPU figures are final", step_s, 9 },
	{ "proftrace_gpu_step_idle_seconds_total", "counter",
	  "the part of those steps in which no GPU worked (host-bound); share: "
	  "rate(this) / rate(proftrace_gpu_step_seconds_total)",
	  idle_s, 9 },
	{ "proftrace_gpu_host_bound_share", "gauge",
	  "idle over step time of those steps, since attach", host_bound, 6 },
	{ "proftrace_gpu_late_records_total", "counter",
	  "GPU records whose time is left out: they came after it was final (or memory "
	  "ran out)",
	  late, 0 },
};

/* GPU figures of the processes with a GPU stream, settled to now - lag */
static void render_gpu(struct run *r, struct pt_metrics *m)
{
	const struct pt_gpulive_totals *t[r->procs.n ? r->procs.n : 1];
	uint64_t now = pt_now_ns(CLOCK_MONOTONIC);
	char l[600];
	size_t i, n = 0;

	for (i = 0; i < r->procs.n; i++) {
		struct proc *p = r->procs.v[i];

		t[i] = NULL;
		if (!p->gpu.join || !live_of(p))
			continue;
		pt_gpulive__settle(p->metrics.gpulive, now);
		t[i] = pt_gpulive__totals(p->metrics.gpulive);
		n++;
	}
	if (!n)
		return;
	head(m, "proftrace_gpu_busy_seconds_total", "counter",
	     "time the device had any kernel, copy or memset of the process running "
	     "(GPU figures are final 2 s behind the clock)");
	for (i = 0; i < r->procs.n; i++) {
		if (!t[i])
			continue;
		plabels(m, r->procs.v[i], l, sizeof(l));
		for (uint32_t d = 0; d < t[i]->ndevs; d++)
			out(m, "proftrace_gpu_busy_seconds_total{%s,device=\"%u\"} %.9f\n", l,
			    t[i]->devs[d].device, t[i]->devs[d].busy_ns / 1e9);
	}
	/* one family at a time: the text format wants a metric's lines together */
	for (size_t f = 0; f < ARRAY_SIZE(gpu_families); f++) {
		const struct gpu_family *g = &gpu_families[f];

		head(m, g->name, g->type, g->help);
		for (i = 0; i < r->procs.n; i++) {
			double v;

			if (!t[i] || !g->value(t[i], &v))
				continue;
			plabels(m, r->procs.v[i], l, sizeof(l));
			out(m, "%s{%s} %.*f\n", g->name, l, g->decimals, v);
		}
	}
}

static void render(struct run *r, struct pt_metrics *m)
{
	char l[600], bn[300], host[300];
	size_t i, b, nb = r->cfg.nbuckets;

	m->len = 0;
	esc(host, sizeof(host), m->host);
	head(m, "proftrace_up", "gauge", "1 while proftrace is attached");
	out(m, "proftrace_up{host=\"%s\"} 1\n", host);
	head(m, "proftrace_events_total", "counter", "records read from the ring buffer");
	out(m, "proftrace_events_total{host=\"%s\"} %llu\n", host, (unsigned long long)r->events);
	head(m, "proftrace_dropped_events_total", "counter",
	     "records BPF could not write (ring buffer full): figures are incomplete");
	out(m, "proftrace_dropped_events_total{host=\"%s\"} %llu\n", host,
	    (unsigned long long)r->dropped_seen);

	head(m, "proftrace_steps_total", "counter", "counted steps");
	for (i = 0; i < r->procs.n; i++) {
		plabels(m, r->procs.v[i], l, sizeof(l));
		out(m, "proftrace_steps_total{%s} %llu\n", l,
		    (unsigned long long)pt_agg__steps(r->procs.v[i]->v.agg)->dur.count);
	}
	head(m, "proftrace_step_seconds", "histogram", "step time of counted steps");
	for (i = 0; i < r->procs.n; i++) {
		const struct proc *p = r->procs.v[i];
		const struct phist *h = p->idx < m->nh ? &m->h[p->idx] : NULL;
		uint64_t cum = 0;

		plabels(m, p, l, sizeof(l));
		for (b = 0; b <= NLE; b++) {
			cum += h ? h->n[b] : 0;
			if (b < NLE)
				out(m, "proftrace_step_seconds_bucket{%s,le=\"%g\"} %llu\n", l,
				    le_s[b], (unsigned long long)cum);
			else
				out(m, "proftrace_step_seconds_bucket{%s,le=\"+Inf\"} %llu\n", l,
				    (unsigned long long)cum);
		}
		out(m, "proftrace_step_seconds_sum{%s} %.9f\n", l, h ? h->sum_s : 0.0);
		out(m, "proftrace_step_seconds_count{%s} %llu\n", l, (unsigned long long)cum);
	}
	head(m, "proftrace_bucket_seconds_total", "counter",
	     "time of each bucket in counted steps (step.other: what no bucket covers); "
	     "per step: rate(this) / rate(proftrace_steps_total)");
	for (i = 0; i < r->procs.n; i++) {
		plabels(m, r->procs.v[i], l, sizeof(l));
		for (b = 0; b <= nb; b++) {
			esc(bn, sizeof(bn), b < nb ? r->cfg.buckets[b].name : "step.other");
			out(m, "proftrace_bucket_seconds_total{%s,bucket=\"%s\"} %.9f\n", l, bn,
			    (double)pt_agg__bucket(r->procs.v[i]->v.agg, b)->total_ns / 1e9);
		}
	}
	/* one family at a time: the text format wants a metric's lines together */
	head(m, "proftrace_tokens_total", "counter", "tokens of counted steps (when read)");
	for (i = 0; i < r->procs.n; i++) {
		const struct pt_stepvals *sv = &r->procs.v[i]->v.sv;

		if (!sv->role[PT_VROLE_TOKENS].probe && !sv->ncounts)
			continue;
		plabels(m, r->procs.v[i], l, sizeof(l));
		out(m, "proftrace_tokens_total{%s} %.0f\n", l, sv->tokens);
	}
	head(m, "proftrace_tokens_per_second", "gauge",
	     "tokens over the summed time of the steps that have them, since attach");
	for (i = 0; i < r->procs.n; i++) {
		const struct pt_stepvals *sv = &r->procs.v[i]->v.sv;

		if ((!sv->role[PT_VROLE_TOKENS].probe && !sv->ncounts) || sv->tok_ns <= 0)
			continue;
		plabels(m, r->procs.v[i], l, sizeof(l));
		out(m, "proftrace_tokens_per_second{%s} %.6f\n", l,
		    sv->tokens / (sv->tok_ns / 1e9));
	}
	head(m, "proftrace_probe_overhead_seconds_total", "counter",
	     "estimated cost of the probes inside counted steps (docs/summary.md#overhead)");
	for (i = 0; i < r->procs.n && r->calib.ok; i++) {
		plabels(m, r->procs.v[i], l, sizeof(l));
		out(m, "proftrace_probe_overhead_seconds_total{%s} %.9f\n", l,
		    pt_ovh__step_cost_ns(r->procs.v[i]->v.ovh) / 1e9);
	}
	render_gpu(r, m);
}

/* One scrape: read the request (its first line is enough), answer,
 * close. The socket is blocking with short timeouts: a client that
 * stalls costs at most a second of the loop. */
static void answer(struct run *r, struct pt_metrics *m, int c)
{
	struct timeval tv = { .tv_sec = 1 };
	char req[2048], hdr[256];
	size_t got = 0;
	int hn;

	fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK);
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (got < sizeof(req) - 1) {
		ssize_t n = recv(c, req + got, sizeof(req) - 1 - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[got] = '\0';
	if (strncmp(req, "GET ", 4)) {
		static const char bad[] = "HTTP/1.0 405 Method Not Allowed\r\nContent-Length: 0\r\n"
					  "Connection: close\r\n\r\n";

		(void)!send(c, bad, sizeof(bad) - 1, MSG_NOSIGNAL);
		return;
	}
	render(r, m);
	hn = snprintf(
		hdr, sizeof(hdr),
		"HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
		"Content-Length: %zu\r\nConnection: close\r\n\r\n",
		m->len);
	if (send(c, hdr, (size_t)hn, MSG_NOSIGNAL) == hn) {
		size_t off = 0;

		while (off < m->len) {
			ssize_t n = send(c, m->buf + off, m->len - off, MSG_NOSIGNAL);

			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
	m->scrapes++;
}

void pt_run__metrics_serve(struct run *r)
{
	struct pt_metrics *m = r->metrics;
	int c;

	if (!m)
		return;
	while ((c = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		answer(r, m, c);
		shutdown(c, SHUT_WR);
		close(c);
	}
}

void pt_run__metrics_free_proc(struct proc *p)
{
	pt_gpulive__free(p->metrics.gpulive);
	p->metrics.gpulive = NULL;
}
