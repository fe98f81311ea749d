// SPDX-License-Identifier: BSD-2-Clause
/*
 * `proftrace merge` (merge.h, docs/fleet.md). Clocks of different hosts
 * are not comparable (each run's times are its own host's
 * CLOCK_MONOTONIC), so nothing is aligned by time across hosts: processes
 * are compared by their step time distributions, pooled figures are sums
 * and pooled moments, and the skew across hosts is the spread of the
 * processes' (and hosts') step times, not a per-step wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diff.h"
#include "merge.h"
#include "report/jread.h"
#include "util/util.h"

static double jnum(const cJSON *o, const char *k)
{
	double v;

	return o && pt_jnum(o, k, &v) ? v : NAN;
}

static void put_num(cJSON *o, const char *k, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, round(v * 1e6) / 1e6);
}

/* A process's row from its section (or the whole run of one process). */
static cJSON *proc_row(const cJSON *sec, const char *host, const char *source)
{
	const cJSON *meta = pt_jget(sec, "meta"), *st = pt_jget(sec, "stats"), *b;
	cJSON *row = cJSON_CreateObject(), *bs;

	if (!row)
		return NULL;
	cJSON_AddStringToObject(row, "host", host);
	cJSON_AddStringToObject(row, "source", source);
	put_num(row, "pid", jnum(meta, "pid"));
	if (pt_jstr(meta, "comm"))
		cJSON_AddStringToObject(row, "comm", pt_jstr(meta, "comm"));
	else
		cJSON_AddNullToObject(row, "comm");
	put_num(row, "rank", jnum(meta, "rank"));
	put_num(row, "local_rank", jnum(meta, "local_rank"));
	put_num(row, "steps", jnum(st, "steps"));
	put_num(row, "time_ms", jnum(st, "time_ms"));
	put_num(row, "mean_ms", jnum(st, "mean_ms"));
	put_num(row, "std_ms", jnum(st, "std_ms"));
	put_num(row, "p50_ms", jnum(st, "p50_ms"));
	put_num(row, "p90_ms", jnum(st, "p90_ms"));
	put_num(row, "p99_ms", jnum(st, "p99_ms"));
	put_num(row, "max_ms", jnum(st, "max_ms"));
	put_num(row, "steps_per_s", jnum(st, "steps_per_s"));
	put_num(row, "tokens", jnum(st, "tokens"));
	put_num(row, "tok_per_s", jnum(st, "tok_per_s"));
	bs = cJSON_AddArrayToObject(row, "buckets");
	cJSON_ArrayForEach(b, pt_jarr(sec, "buckets"))
	{
		cJSON *e = cJSON_CreateObject();

		if (!e || !bs)
			break;
		cJSON_AddStringToObject(e, "name", pt_jstr(b, "name") ? pt_jstr(b, "name") : "?");
		put_num(e, "total_ms", jnum(b, "total_ms"));
		put_num(e, "avg_ms_per_step", jnum(b, "avg_ms_per_step"));
		put_num(e, "share", jnum(b, "share"));
		cJSON_AddItemToArray(bs, e);
	}
	return row;
}

static int cmp_rows(const void *x, const void *y)
{
	const cJSON *a = *(const cJSON *const *)x, *b = *(const cJSON *const *)y;
	double ra = jnum(a, "rank"), rb = jnum(b, "rank");
	int c;

	/* by rank (processes without one last), then host, then pid */
	if (isnan(ra) != isnan(rb))
		return isnan(ra) ? 1 : -1;
	if (!isnan(ra) && ra != rb)
		return ra < rb ? -1 : 1;
	c = strcmp(pt_jstr(a, "host"), pt_jstr(b, "host"));
	if (c)
		return c;
	return jnum(a, "pid") < jnum(b, "pid") ? -1 : jnum(a, "pid") > jnum(b, "pid");
}

static cJSON *who(const cJSON *row, const char *by)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "host", pt_jstr(row, "host"));
	put_num(o, "pid", jnum(row, "pid"));
	put_num(o, "rank", jnum(row, "rank"));
	put_num(o, by, jnum(row, by));
	put_num(o, "mean_ms", jnum(row, "mean_ms"));
	return o;
}

/* pooled over rows: steps, time, mean, std (exact, from counts, means and
 * stds), the range of each process percentile; buckets summed */
static void pooled(cJSON *doc, cJSON **rows, size_t n)
{
	cJSON *st = cJSON_AddObjectToObject(doc, "stats"),
	      *bs = cJSON_AddArrayToObject(doc, "buckets");
	double N = 0, T = 0, S2 = 0, tok = 0, tokps = 0, sps = 0, lo50 = INFINITY, hi50 = -INFINITY,
	       hi99 = -INFINITY, max = -INFINITY;
	bool have_tok = false;

	if (!st || !bs)
		return;
	for (size_t i = 0; i < n; i++) {
		double k = jnum(rows[i], "steps"), m = jnum(rows[i], "mean_ms"),
		       s = jnum(rows[i], "std_ms");

		if (!(k > 0) || isnan(m))
			continue;
		N += k;
		T += k * m;
		S2 += k * ((isnan(s) ? 0 : s * s) + m * m);
		lo50 = fmin(lo50, jnum(rows[i], "p50_ms"));
		hi50 = fmax(hi50, jnum(rows[i], "p50_ms"));
		hi99 = fmax(hi99, jnum(rows[i], "p99_ms"));
		max = fmax(max, jnum(rows[i], "max_ms"));
		if (!isnan(jnum(rows[i], "steps_per_s")))
			sps += jnum(rows[i], "steps_per_s");
		if (!isnan(jnum(rows[i], "tokens"))) {
			have_tok = true;
			tok += jnum(rows[i], "tokens");
			if (!isnan(jnum(rows[i], "tok_per_s")))
				tokps += jnum(rows[i], "tok_per_s");
		}
	}
	put_num(st, "processes", (double)n);
	put_num(st, "steps", N);
	put_num(st, "time_ms", N ? T : NAN);
	put_num(st, "mean_ms", N ? T / N : NAN);
	put_num(st, "std_ms", N ? sqrt(fmax(0, S2 / N - (T / N) * (T / N))) : NAN);
	put_num(st, "p50_ms_min", N ? lo50 : NAN);
	put_num(st, "p50_ms_max", N ? hi50 : NAN);
	put_num(st, "p99_ms_max", N ? hi99 : NAN);
	put_num(st, "max_ms", N ? max : NAN);
	put_num(st, "steps_per_s_sum", N ? sps : NAN);
	if (have_tok) {
		put_num(st, "tokens", tok);
		put_num(st, "tok_per_s_sum", tokps);
	}
	/* buckets: in the first process's order, then any others */
	for (size_t i = 0; i < n; i++) {
		const cJSON *b;

		cJSON_ArrayForEach(b, pt_jarr(rows[i], "buckets"))
		{
			const char *name = pt_jstr(b, "name");
			double tot = 0;
			const cJSON *x;
			cJSON *e;
			bool seen = false;

			cJSON_ArrayForEach(x, bs) seen |= !strcmp(pt_jstr(x, "name"), name);
			if (seen)
				continue;
			for (size_t k = 0; k < n; k++) {
				cJSON_ArrayForEach(
					x,
					pt_jarr(rows[k],
						"buckets")) if (!strcmp(pt_jstr(x, "name"), name) &&
								!isnan(jnum(x, "total_ms"))) tot +=
					jnum(x, "total_ms");
			}
			e = cJSON_CreateObject();
			if (!e)
				return;
			cJSON_AddStringToObject(e, "name", name);
			put_num(e, "total_ms", tot);
			put_num(e, "avg_ms_per_step", N ? tot / N : NAN);
			put_num(e, "share", T > 0 ? tot / T : NAN);
			cJSON_AddItemToArray(bs, e);
		}
	}
}

static void skew(cJSON *doc, cJSON **rows, size_t n)
{
	cJSON *sk = cJSON_AddObjectToObject(doc, "skew"), *hosts;
	const cJSON *slow = NULL, *fast = NULL;
	double hmin = INFINITY, hmax = -INFINITY;

	if (!sk)
		return;
	cJSON_AddStringToObject(sk, "by", "p50_ms");
	cJSON_AddStringToObject(
		sk, "alignment",
		"none by time: each host's clock is its own; processes are compared "
		"by their step time distributions");
	for (size_t i = 0; i < n; i++) {
		double v = jnum(rows[i], "p50_ms");

		if (isnan(v))
			continue;
		if (!slow || v > jnum(slow, "p50_ms"))
			slow = rows[i];
		if (!fast || v < jnum(fast, "p50_ms"))
			fast = rows[i];
	}
	if (!slow) {
		cJSON_AddNullToObject(sk, "slowest");
		cJSON_AddNullToObject(sk, "fastest");
		cJSON_AddNullToObject(sk, "spread_ms");
		cJSON_AddNullToObject(sk, "spread_rel");
	} else {
		double d = jnum(slow, "p50_ms") - jnum(fast, "p50_ms");

		cJSON_AddItemToObject(sk, "slowest", who(slow, "p50_ms"));
		cJSON_AddItemToObject(sk, "fastest", who(fast, "p50_ms"));
		put_num(sk, "spread_ms", d);
		put_num(sk, "spread_rel",
			jnum(fast, "p50_ms") > 0 ? d / jnum(fast, "p50_ms") : NAN);
	}
	/* per host: its processes' pooled mean */
	hosts = cJSON_AddArrayToObject(sk, "per_host");
	for (size_t i = 0; hosts && i < n; i++) {
		const char *h = pt_jstr(rows[i], "host");
		double N = 0, T = 0;
		size_t np = 0;
		const cJSON *x;
		cJSON *e;
		bool seen = false;

		cJSON_ArrayForEach(x, hosts) seen |= !strcmp(pt_jstr(x, "host"), h);
		if (seen)
			continue;
		for (size_t k = 0; k < n; k++) {
			double s = jnum(rows[k], "steps"), m = jnum(rows[k], "mean_ms");

			if (strcmp(pt_jstr(rows[k], "host"), h))
				continue;
			np++;
			if (s > 0 && !isnan(m)) {
				N += s;
				T += s * m;
			}
		}
		e = cJSON_CreateObject();
		if (!e)
			return;
		cJSON_AddStringToObject(e, "host", h);
		put_num(e, "processes", (double)np);
		put_num(e, "steps", N);
		put_num(e, "mean_ms", N ? T / N : NAN);
		if (N) {
			hmin = fmin(hmin, T / N);
			hmax = fmax(hmax, T / N);
		}
		cJSON_AddItemToArray(hosts, e);
	}
	put_num(sk, "host_spread_ms", hmax >= hmin ? hmax - hmin : NAN);
}

cJSON *pt_merge__build(const cJSON *const *docs, const char *const *names, size_t n)
{
	cJSON *doc = cJSON_CreateObject(), *m, *srcs, *procs, **rows = NULL;
	size_t nrows = 0, cap = 0;

	if (!doc || !n)
		goto fail;
	m = cJSON_AddObjectToObject(doc, "merged");
	srcs = m ? cJSON_AddArrayToObject(m, "sources") : NULL;
	procs = cJSON_AddArrayToObject(doc, "processes");
	if (!srcs || !procs)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const cJSON *meta = pt_jget(docs[i], "meta"), *secs = pt_jarr(docs[i], "processes"),
			    *sec;
		const char *host = names[i] ? names[i] : pt_jstr(meta, "host");
		char src[32];
		cJSON *s = cJSON_CreateObject();
		size_t np = 0;

		if (!s)
			goto fail;
		snprintf(src, sizeof(src), "%zu", i);
		cJSON_AddStringToObject(s, "host", host ? host : "unknown");
		put_num(s, "pid", jnum(meta, "pid"));
		put_num(s, "duration_s", jnum(meta, "duration_s"));
		cJSON_AddItemToArray(srcs, s);
		/* a run of several processes: each section; else the run itself */
		for (sec = secs ? secs->child : docs[i]; sec; sec = secs ? sec->next : NULL) {
			cJSON *row = proc_row(sec, host ? host : "unknown", src);

			if (row && nrows == cap) {
				size_t nc = cap ? cap * 2 : 16;
				cJSON **v = realloc(rows, nc * sizeof(*v));

				if (!v) {
					cJSON_Delete(row);
					row = NULL;
				} else {
					rows = v;
					cap = nc;
				}
			}
			if (!row)
				goto fail;
			rows[nrows++] = row;
			np++;
		}
		put_num(s, "processes", (double)np);
	}
	qsort(rows, nrows, sizeof(*rows), cmp_rows);
	for (size_t i = 0; i < nrows; i++)
		cJSON_AddItemToArray(procs, rows[i]);
	{
		size_t nh = 0;
		const cJSON *x;

		skew(doc, rows, nrows);
		cJSON_ArrayForEach(x, pt_jarr(pt_jget(doc, "skew"), "per_host")) nh++;
		put_num(m, "hosts", (double)nh);
	}
	put_num(m, "processes", (double)nrows);
	pooled(doc, rows, nrows);
	free(rows);
	return doc;
fail:
	/* (rows go into the document only when all are made) */
	for (size_t i = 0; i < nrows; i++)
		cJSON_Delete(rows[i]);
	free(rows);
	cJSON_Delete(doc);
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: proftrace merge [NAME=]SUMMARY... [-o FILE]\n"
	      "  SUMMARY: summary.json files or proftrace output folders, one per host (or run)\n"
	      "  NAME=: the host's name in the merged document (default: meta.host)\n"
	      "  -o FILE: write the merged document there (default: stdout); -o DIR/ writes\n"
	      "           DIR/merged.json\n",
	      f);
}

/*
 * The merged document into path, or into path/merged.json when path is a
 * folder (-o out/): 0, or 1 with what failed and why said.
 */
static int write_out(const char *path, const char *s)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t len = strlen(path);
	FILE *f;
	int fd;

	if ((len && path[len - 1] == '/') || (!stat(path, &st) && S_ISDIR(st.st_mode))) {
		if ((size_t)snprintf(buf, sizeof(buf), "%s%smerged.json", path,
				     len && path[len - 1] == '/' ? "" : "/") >= sizeof(buf)) {
			fprintf(stderr,
				"proftrace merge: cannot write into %s: the path is too long\n",
				path);
			return 1;
		}
		path = buf;
	}
	/* O_NOFOLLOW: we may run as root, and a link planted at the name (in
	 * /tmp, say) would make us truncate whatever it points at; 0600: a
	 * profile holds paths and names */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		/* a link there: ELOOP, or EACCES in a sticky folder */
		if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
			fprintf(stderr,
				"proftrace merge: cannot write %s: it is a symbolic link, not "
				"followed (give the file it points to)\n",
				path);
			return 1;
		}
		fprintf(stderr, "proftrace merge: cannot write %s: %s%s\n", path, strerror(e),
			e == ENOENT ? " (hint: its folder must exist)" : "");
		return 1;
	}
	errno = 0;
	if (fputs(s, f) < 0 || fputc('\n', f) < 0 || fflush(f) || ferror(f)) {
		int e = errno ? errno : EIO;

		fclose(f);
		fprintf(stderr, "proftrace merge: cannot write %s: %s\n", path, strerror(e));
		return 1;
	}
	if (fclose(f)) {
		fprintf(stderr, "proftrace merge: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(stderr, "proftrace merge: wrote %s\n", path);
	return 0;
}

int pt_merge__main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *outp = NULL;
	cJSON **docs = NULL, *m = NULL;
	const char **names = NULL;
	char err[1024], *s = NULL;
	int c, rc = 2, n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			outp = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	n = argc - optind;
	if (n < 1) {
		fprintf(stderr, "proftrace merge: give the summaries to merge\n");
		usage(stderr);
		return 2;
	}
	docs = calloc((size_t)n, sizeof(*docs));
	names = calloc((size_t)n, sizeof(*names));
	if (!docs || !names)
		goto out;
	for (int i = 0; i < n; i++) {
		char *arg = argv[optind + i], *eq = strchr(arg, '=');

		/* NAME=PATH: a name has no '/' */
		if (eq && eq != arg && !memchr(arg, '/', (size_t)(eq - arg))) {
			*eq = '\0';
			names[i] = arg;
			arg = eq + 1;
		}
		docs[i] = pt_diff__load(arg, err, sizeof(err));
		if (!docs[i]) {
			fprintf(stderr, "proftrace merge: %s\n", err);
			goto out;
		}
	}
	m = pt_merge__build((const cJSON *const *)docs, names, (size_t)n);
	s = m ? cJSON_Print(m) : NULL;
	if (!s) {
		fprintf(stderr, "proftrace merge: out of memory\n");
		rc = 1;
		goto out;
	}
	if (outp) {
		rc = write_out(outp, s);
		if (rc)
			goto out;
	} else {
		puts(s);
	}
	rc = 0;
out:
	for (int i = 0; docs && i < n; i++)
		cJSON_Delete(docs[i]);
	free(docs);
	free(names);
	cJSON_Delete(m);
	free(s);
	return rc;
}
