// SPDX-License-Identifier: BSD-2-Clause
/*
 * `proftrace diff A B` (diff.h, docs/diff.md). One row per figure, each
 * with the change and a noise threshold: twice the standard error of the
 * difference, from the runs' std when both sides have two or more runs,
 * else from the step (or call) distribution.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diff.h"
#include "report/jread.h"
#include "util/util.h"

/* z of the two-sided ~95% threshold */
#define NOISE_Z 2.0
/* Asymptotic standard error of a quantile of a normal distribution, in
 * units of sigma / sqrt(n): sqrt(q (1 - q)) / pdf(z_q). */
#define SE_P50 1.2533
#define SE_P90 1.7094
#define SE_P99 3.7325
#define SE_STD 0.7071 /* of the standard deviation */
/* (p90 - p50) / sigma of a normal distribution: sigma from percentiles
 * where no std is kept (buckets, functions) */
#define P90_P50_SIGMAS 1.2816
#define P99_P50_SIGMAS 2.3263

static double jnum(const cJSON *o, const char *k)
{
	double v;

	return o && pt_jnum(o, k, &v) ? v : NAN;
}

static const cJSON *by_name(const cJSON *arr, const char *key, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr)
	{
		const char *n = pt_jstr(it, key);

		if (n && !strcmp(n, name))
			return it;
	}
	return NULL;
}

/* number of counted runs, when both sides have two or more */
static int runs_of(const cJSON *doc)
{
	double n = jnum(pt_jget(doc, "runs_aggregate"), "runs");

	return isnan(n) || n < 2 ? 0 : (int)n;
}

static double run_std(const cJSON *agg_item)
{
	return jnum(agg_item, "std");
}

struct ctx {
	cJSON *rows;
	int err;
};

static void add_row(struct ctx *c, const char *id, const char *section, const char *name,
		    const char *unit, double a, double b, double noise, const char *noise_from)
{
	cJSON *r = cJSON_CreateObject();
	double d = b - a;

#define NUM(k, v) (isnan(v) ? cJSON_AddNullToObject(r, k) : cJSON_AddNumberToObject(r, k, v))
	if (!r || !cJSON_AddItemToArray(c->rows, r)) {
		cJSON_Delete(r);
		c->err = -ENOMEM;
		return;
	}
	cJSON_AddStringToObject(r, "id", id);
	cJSON_AddStringToObject(r, "section", section);
	cJSON_AddStringToObject(r, "name", name);
	cJSON_AddStringToObject(r, "unit", unit);
	NUM("a", a);
	NUM("b", b);
	NUM("change", d);
	NUM("change_rel", (isnan(d) || !a) ? NAN : d / fabs(a));
	NUM("noise", noise);
	if (isnan(noise) || isnan(d)) {
		cJSON_AddNullToObject(r, "noise_from");
		cJSON_AddNullToObject(r, "beyond_noise");
	} else {
		cJSON_AddStringToObject(r, "noise_from", noise_from);
		cJSON_AddBoolToObject(r, "beyond_noise", fabs(d) > noise);
	}
#undef NUM
}

static double two_se(double sa, double na, double sb, double nb)
{
	if (isnan(sa) || isnan(sb) || !(na > 0) || !(nb > 0))
		return NAN;
	return NOISE_Z * sqrt(sa * sa / na + sb * sb / nb);
}

static void step_rows(struct ctx *c, const cJSON *A, const cJSON *B)
{
	static const struct {
		const char *key, *id, *unit;
		double se; /* in sigma/sqrt(n); 0: no noise from the steps */
		bool rate; /* a rate: its noise follows mean_ms's, relatively */
	} f[] = {
		{ "mean_ms", "step.mean", "ms", 1, false },
		{ "min_ms", "step.min", "ms", 0, false },
		{ "p50_ms", "step.p50", "ms", SE_P50, false },
		{ "p90_ms", "step.p90", "ms", SE_P90, false },
		{ "p99_ms", "step.p99", "ms", SE_P99, false },
		{ "max_ms", "step.max", "ms", 0, false },
		{ "std_ms", "step.std", "ms", SE_STD, false },
		{ "steps_per_s", "step.steps_per_s", "1/s", 0, true },
		{ "tok_per_s", "step.tok_per_s", "tok/s", 0, true },
		{ "corrected_min_ms", "step.corrected_min", "ms", 0, false },
		{ "corrected_p50_ms", "step.corrected_p50", "ms", SE_P50, false },
	};
	const cJSON *sa = pt_jget(A, "stats"), *sb = pt_jget(B, "stats");
	const cJSON *ra = pt_jget(A, "runs_aggregate"), *rb = pt_jget(B, "runs_aggregate");
	int ka = runs_of(A), kb = runs_of(B);
	double na = jnum(sa, "steps"), nb = jnum(sb, "steps");
	double mean_noise_rel = NAN;

	add_row(c, "step.steps", "steps", "steps", "", na, nb, NAN, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		double a = jnum(sa, f[i].key), b = jnum(sb, f[i].key), noise = NAN;
		const char *from = NULL;

		if (isnan(a) && isnan(b) && (f[i].rate || !strncmp(f[i].key, "corrected", 9)))
			continue; /* not configured on either side */
		if (ka && kb && pt_jget(ra, f[i].key)) {
			noise = two_se(run_std(pt_jget(ra, f[i].key)), ka,
				       run_std(pt_jget(rb, f[i].key)), kb);
			from = "runs";
		}
		if (isnan(noise) && f[i].se) {
			noise = two_se(f[i].se * jnum(sa, "std_ms"), na,
				       f[i].se * jnum(sb, "std_ms"), nb);
			from = "steps";
		}
		if (isnan(noise) && f[i].rate && !isnan(mean_noise_rel) && !isnan(a)) {
			noise = mean_noise_rel * a;
			from = "steps";
		}
		if (!strcmp(f[i].key, "mean_ms") && !isnan(noise) && a > 0)
			mean_noise_rel = noise / a;
		add_row(c, f[i].id, "steps", f[i].key, f[i].unit, a, b, noise, from);
	}
}

/* sigma of one call from its percentiles, the larger of two estimates:
 * call times have long tails, which move the mean but not the p90 */
static double call_sigma(const cJSON *o)
{
	double d = jnum(o, "p90_ms") - jnum(o, "p50_ms");
	double t = jnum(o, "p99_ms") - jnum(o, "p50_ms");

	if (isnan(d) || isnan(t))
		return NAN;
	d = (d > 0 ? d : 0) / P90_P50_SIGMAS;
	t = (t > 0 ? t : 0) / P99_P50_SIGMAS;
	return d > t ? d : t;
}

static void bucket_rows(struct ctx *c, const cJSON *A, const cJSON *B)
{
	const cJSON *ba = pt_jarr(A, "buckets"), *bb = pt_jarr(B, "buckets");
	const cJSON *aa = pt_jarr(pt_jget(A, "runs_aggregate"), "buckets");
	const cJSON *ab = pt_jarr(pt_jget(B, "runs_aggregate"), "buckets");
	int ka = runs_of(A), kb = runs_of(B);
	double sta = jnum(pt_jget(A, "stats"), "steps"), stb = jnum(pt_jget(B, "stats"), "steps");

	for (int side = 0; side < 2; side++) {
		const cJSON *it, *arr = side ? bb : ba;

		cJSON_ArrayForEach(it, arr)
		{
			const char *name = pt_jstr(it, "name");
			const cJSON *x, *y;
			char id[300], id2[310];
			double noise = NAN, ca, cb;
			const char *from = NULL;

			if (!name || (side && by_name(ba, "name", name)))
				continue; /* B's rows already made from A's */
			x = side ? NULL : it;
			y = by_name(bb, "name", name);
			snprintf(id, sizeof(id), "bucket.%s", name);
			if (ka && kb) {
				noise = two_se(run_std(pt_jget(by_name(aa, "name", name),
							       "avg_ms_per_step")),
					       ka,
					       run_std(pt_jget(by_name(ab, "name", name),
							       "avg_ms_per_step")),
					       kb);
				from = "runs";
			}
			ca = jnum(x, "calls");
			cb = jnum(y, "calls");
			if (isnan(noise) && sta > 0 && stb > 0) {
				/* SE of a mean per call, times calls per step */
				noise = two_se(call_sigma(x) * sqrt(ca) / sta, 1,
					       call_sigma(y) * sqrt(cb) / stb, 1);
				from = "calls";
			}
			add_row(c, id, "buckets", name, "ms/step", jnum(x, "avg_ms_per_step"),
				jnum(y, "avg_ms_per_step"), noise, from);
			snprintf(id2, sizeof(id2), "%s.share", id);
			add_row(c, id2, "buckets", name, "share", jnum(x, "share"),
				jnum(y, "share"), NAN, NULL);
		}
	}
}

/* A function's row name: its symbol (or probe, unresolved), with the
 * object's basename when two rows of the document share the symbol. */
static void func_name(const cJSON *doc, const cJSON *f, char *out, size_t len)
{
	const char *sym = pt_jstr(f, "symbol"), *obj = pt_jstr(f, "object"), *base;
	const cJSON *g;
	int same = 0;

	if (!sym) {
		snprintf(out, len, "%s", pt_jstr(f, "probe") ? pt_jstr(f, "probe") : "?");
		return;
	}
	cJSON_ArrayForEach(g, pt_jarr(doc, "functions")) same +=
		pt_jstr(g, "symbol") && !strcmp(pt_jstr(g, "symbol"), sym);
	base = obj ? strrchr(obj, '/') : NULL;
	if (same > 1 && obj)
		snprintf(out, len, "%s (%s)", sym, base ? base + 1 : obj);
	else
		snprintf(out, len, "%s", sym);
}

static const cJSON *find_func(const cJSON *doc, const char *name)
{
	const cJSON *g;
	char n[600];

	cJSON_ArrayForEach(g, pt_jarr(doc, "functions"))
	{
		func_name(doc, g, n, sizeof(n));
		if (!strcmp(n, name))
			return g;
	}
	return NULL;
}

static void func_rows(struct ctx *c, const cJSON *A, const cJSON *B)
{
	for (int side = 0; side < 2; side++) {
		const cJSON *it, *arr = pt_jarr(side ? B : A, "functions");

		cJSON_ArrayForEach(it, arr)
		{
			const cJSON *x, *y;
			char name[600], id[620];
			double ca, cb;

			func_name(side ? B : A, it, name, sizeof(name));
			if (side && find_func(A, name))
				continue;
			x = side ? NULL : it;
			y = side ? it : find_func(B, name);
			ca = jnum(x, "calls");
			cb = jnum(y, "calls");
			snprintf(id, sizeof(id), "function.%s", name);
			add_row(c, id, "functions", name, "ms/call", jnum(x, "mean_ms"),
				jnum(y, "mean_ms"), two_se(call_sigma(x), ca, call_sigma(y), cb),
				"calls");
			snprintf(id, sizeof(id), "function.%s.calls", name);
			add_row(c, id, "functions", name, "calls", ca, cb, NAN, NULL);
		}
	}
}

/* Every number under gpu (objects two levels deep; arrays left out). */
static void gpu_rows(struct ctx *c, const cJSON *A, const cJSON *B)
{
	const cJSON *ga = pt_jget(A, "gpu"), *gb = pt_jget(B, "gpu"), *src = ga, *it, *sub;
	char id[300];

	if (!ga || !gb)
		return;
	if (!cJSON_GetArraySize((cJSON *)ga) ||
	    (pt_jstr(ga, "source") && !strcmp(pt_jstr(ga, "source"), "none")))
		src = gb;
	if (pt_jstr(src, "source") && !strcmp(pt_jstr(src, "source"), "none"))
		return;
	cJSON_ArrayForEach(it, src)
	{
		if (cJSON_IsNumber(it)) {
			snprintf(id, sizeof(id), "gpu.%s", it->string);
			add_row(c, id, "gpu", it->string, "", jnum(ga, it->string),
				jnum(gb, it->string), NAN, NULL);
		} else if (cJSON_IsObject(it)) {
			cJSON_ArrayForEach(sub, it)
			{
				if (!cJSON_IsNumber(sub))
					continue;
				snprintf(id, sizeof(id), "gpu.%s.%s", it->string, sub->string);
				add_row(c, id, "gpu", id + 4, "",
					jnum(pt_jget(ga, it->string), sub->string),
					jnum(pt_jget(gb, it->string), sub->string), NAN, NULL);
			}
		}
	}
}

cJSON *pt_diff__build(const cJSON *a, const cJSON *b)
{
	cJSON *doc = cJSON_CreateObject();
	struct ctx c = { 0 };

	if (!doc)
		return NULL;
	c.rows = cJSON_AddArrayToObject(doc, "rows");
	cJSON_AddStringToObject(doc, "noise", runs_of(a) && runs_of(b) ? "runs" : "steps");
	if (!c.rows)
		goto fail;
	step_rows(&c, a, b);
	bucket_rows(&c, a, b);
	func_rows(&c, a, b);
	gpu_rows(&c, a, b);
	if (c.err)
		goto fail;
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}

static void put_num(FILE *f, const cJSON *r, const char *k, bool sign, bool pct)
{
	double v;

	if (!pt_jnum(r, k, &v)) {
		fputs(" — |", f);
		return;
	}
	if (pct)
		fprintf(f, " %+.2f%% |", 100 * v);
	else if (fabs(v) >= 1000 || (v == floor(v) && fabs(v) < 1e15))
		fprintf(f, sign ? " %+.0f |" : " %.0f |", v);
	else
		fprintf(f, sign ? " %+.4g |" : " %.4g |", v);
}

int pt_diff__markdown(FILE *f, const cJSON *diff, const char *name_a, const char *name_b)
{
	static const struct {
		const char *section, *title;
	} sect[] = {
		{ "steps", "Steps" },
		{ "buckets", "Buckets (ms per step, share of step time)" },
		{ "functions", "Functions (ms per call, calls)" },
		{ "gpu", "GPU" },
	};
	const char *noise = pt_jstr(diff, "noise");

	fprintf(f, "# proftrace diff\n\nA: `%s`  \nB: `%s`\n\n", name_a, name_b);
	fprintf(f,
		"Change is B - A. *Beyond noise*: the change exceeds twice the standard error "
		"of the difference (about 95%%), from %s (docs/diff.md).\n",
		noise && !strcmp(noise, "runs")
			? "the runs' standard deviations (both sides have "
			  "two or more runs)"
			: "the step time distribution (std over "
			  "steps; buckets and functions: their per-call spread)");
	for (size_t s = 0; s < ARRAY_SIZE(sect); s++) {
		const cJSON *r;
		bool head = false;

		cJSON_ArrayForEach(r, pt_jarr(diff, "rows"))
		{
			const cJSON *bn = pt_jget(r, "beyond_noise");

			if (strcmp(pt_jstr(r, "section"), sect[s].section))
				continue;
			if (!head) {
				fprintf(f,
					"\n## %s\n\n| figure | unit | A | B | change | change %% | "
					"noise "
					"| beyond noise "
					"|\n|---|---|---:|---:|---:|---:|---:|---|\n",
					sect[s].title);
				head = true;
			}
			fputs("| `", f);
			fputs(pt_jstr(r, "id"), f);
			fprintf(f, "` | %s |", pt_jstr(r, "unit"));
			put_num(f, r, "a", false, false);
			put_num(f, r, "b", false, false);
			put_num(f, r, "change", true, false);
			put_num(f, r, "change_rel", true, true);
			put_num(f, r, "noise", false, false);
			fprintf(f, " %s |\n",
				cJSON_IsBool(bn) ? (cJSON_IsTrue(bn) ? "**yes**" : "no") : "—");
		}
	}
	return ferror(f) ? -EIO : 0;
}

int pt_diff__check(const cJSON *diff, const char *cond, char *err, size_t errlen)
{
	char metric[512], op[3] = "", val[64], extra[32] = "";
	const cJSON *r, *row = NULL;
	double v, x, lim;
	bool rel;
	char *end;
	int n;

	n = sscanf(cond, " %511s %2[<>=] %63s %31s", metric, op, val, extra);
	if (n < 3 || (n == 4 && strcmp(extra, "significant")) ||
	    (strcmp(op, ">") && strcmp(op, "<") && strcmp(op, ">=") && strcmp(op, "<="))) {
		snprintf(err, errlen,
			 "cannot read --fail-if '%s': write METRIC OP CHANGE [significant], e.g. "
			 "'step.p50 > +5%%' or 'bucket.engine.forward >= 0.2' (docs/diff.md)",
			 cond);
		return -EINVAL;
	}
	lim = strtod(val, &end);
	rel = *end == '%';
	if (end == val || (*end && strcmp(end, "%") && strcmp(end, "ms"))) {
		snprintf(err, errlen,
			 "--fail-if '%s': '%s' is not a change: +5%% (relative) or "
			 "0.2 (absolute, in the figure's unit)",
			 cond, val);
		return -EINVAL;
	}
	cJSON_ArrayForEach(r, pt_jarr(diff, "rows")) if (!strcmp(pt_jstr(r, "id"), metric)) row = r;
	if (!row) {
		snprintf(err, errlen,
			 "--fail-if '%s': no figure '%s' in either summary (figures "
			 "are the table's first column: step.p50, bucket.NAME, "
			 "function.SYMBOL, ...)",
			 cond, metric);
		return -EINVAL;
	}
	if (!pt_jnum(row, rel ? "change_rel" : "change", &x))
		return 0; /* missing on one side: no change to compare */
	v = rel ? lim / 100 : lim;
	if (n == 4 && !cJSON_IsTrue(pt_jget(row, "beyond_noise")))
		return 0;
	if (!strcmp(op, ">"))
		return x > v;
	if (!strcmp(op, ">="))
		return x >= v;
	if (!strcmp(op, "<"))
		return x < v;
	return x <= v;
}

/* One reason more into why ("; " between them). */
static void add_why(char *why, size_t whylen, size_t *len, const char *fmt, double n,
		    const char *what)
{
	int k;

	if (*len >= whylen)
		return;
	k = snprintf(why + *len, whylen - *len, "%s", *len ? "; " : "");
	if (k > 0)
		*len += (size_t)k;
	if (*len >= whylen)
		return;
	k = snprintf(why + *len, whylen - *len, fmt, n, n == 1 ? "" : "s", what);
	if (k > 0)
		*len += (size_t)k;
}

int pt_diff__unfit(const cJSON *doc, char *why, size_t whylen)
{
	static const struct {
		const char *sect, *sub, *key, *fmt, *what;
	} lost[] = {
		{ "health", NULL, "dropped_events", "%.0f record%s dropped%s",
		  " (ring buffer full: raise set ringbuf_mb)" },
		{ "health", NULL, "lost_calls", "%.0f call%s lost%s",
		  " (entry seen, exit record lost)" },
		{ "meta", "sampling", "lost_samples", "%.0f stack sample%s lost%s",
		  " (ring buffer full)" },
		{ "gpu", "records", "ring_dropped", "%.0f GPU record%s dropped%s",
		  " (the shim's ring was full)" },
		{ "gpu", "records", "cupti_dropped", "%.0f GPU record%s dropped%s", " by CUPTI" },
		{ "gpu", "records", "lost", "%.0f GPU record%s lost%s",
		  " (overwritten before proftrace read them)" },
	};
	const char *probe = pt_jstr(pt_jget(doc, "meta"), "step_probe");
	size_t len = 0;
	double n;

	if (whylen)
		why[0] = '\0';
	/* a targets file without a step line counts none, rightly */
	if (probe && pt_jnum(pt_jget(doc, "stats"), "steps", &n) && n == 0 && len < whylen) {
		int k = snprintf(why, whylen,
				 "counted 0 steps though it has a step probe (%s: did it attach, "
				 "and did the target run a step? see its report.md)",
				 probe);

		len = k > 0 ? (size_t)k : 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(lost); i++) {
		const cJSON *o = pt_jget(doc, lost[i].sect);

		if (lost[i].sub)
			o = pt_jget(o, lost[i].sub);
		if (pt_jnum(o, lost[i].key, &n) && n > 0)
			add_why(why, whylen, &len, lost[i].fmt, n, lost[i].what);
	}
	return len > 0;
}

/* A summary.json, or an output folder holding one. */
cJSON *pt_diff__load(const char *path, char *err, size_t errlen)
{
	char p[900];
	struct stat st;
	cJSON *doc = NULL;

	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		snprintf(p, sizeof(p), "%s/summary.json", path);
	else
		snprintf(p, sizeof(p), "%s", path);
	doc = pt_jread__file(p);
	if (!doc && errno != EINVAL) {
		snprintf(err, errlen,
			 "cannot read %s: %s (hint: give summary.json files or the "
			 "output folders proftrace wrote)",
			 p, strerror(errno));
		return NULL;
	}
	if (!doc || !cJSON_IsObject(pt_jget(doc, "stats"))) {
		snprintf(err, errlen, "%s is not a proftrace summary.json", p);
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

/* "A", "B" or "A and B" when cond's figure has no value there (it then
 * never holds), else NULL. cond was read by pt_diff__check() already. */
static const char *missing_side(const cJSON *diff, const char *cond)
{
	char metric[512];
	const cJSON *r;

	if (sscanf(cond, " %511s", metric) != 1)
		return NULL;
	cJSON_ArrayForEach(r, pt_jarr(diff, "rows")) if (!strcmp(pt_jstr(r, "id"), metric))
	{
		double v;
		bool a = pt_jnum(r, "a", &v), b = pt_jnum(r, "b", &v);

		return a && b ? NULL : !a && !b ? "A and B" : !a ? "A" : "B";
	}
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: proftrace diff A B [--json] [--fail-if 'METRIC OP CHANGE [significant]']...\n"
	      "  A, B: summary.json files or proftrace output folders\n"
	      "  --json: the comparison as JSON instead of Markdown\n"
	      "  --fail-if: exit 1 when the change B - A of a figure holds the condition, e.g.\n"
	      "             'step.p50 > +5%' 'bucket.engine.forward >= 0.2' "
	      "'step.mean > +2% significant';\n"
	      "             also exit 1 when A or B counted 0 steps or lost records\n",
	      f);
}

int pt_diff__main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "fail-if", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *conds[64];
	size_t nconds = 0;
	bool json = false;
	cJSON *a = NULL, *b = NULL, *d = NULL;
	char err[1024];
	int c, rc = 2, hits = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'f':
			if (nconds == ARRAY_SIZE(conds)) {
				fprintf(stderr, "proftrace diff: at most %zu --fail-if\n",
					ARRAY_SIZE(conds));
				return 2;
			}
			conds[nconds++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "proftrace diff: give two summaries, A and B\n");
		usage(stderr);
		return 2;
	}
	a = pt_diff__load(argv[optind], err, sizeof(err));
	b = a ? pt_diff__load(argv[optind + 1], err, sizeof(err)) : NULL;
	if (!a || !b) {
		fprintf(stderr, "proftrace diff: %s\n", err);
		goto out;
	}
	d = pt_diff__build(a, b);
	if (!d) {
		fprintf(stderr, "proftrace diff: out of memory\n");
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < nconds; i++) {
		int h = pt_diff__check(d, conds[i], err, sizeof(err));

		if (h < 0) {
			fprintf(stderr, "proftrace diff: %s\n", err);
			goto out;
		}
	}
	cJSON_AddStringToObject(d, "a", argv[optind]);
	cJSON_AddStringToObject(d, "b", argv[optind + 1]);
	if (json) {
		char *s = cJSON_Print(d);

		if (s)
			puts(s);
		free(s);
	} else {
		pt_diff__markdown(stdout, d, argv[optind], argv[optind + 1]);
	}
	fflush(stdout);
	for (size_t i = 0; i < nconds; i++)
		if (pt_diff__check(d, conds[i], err, sizeof(err)) > 0) {
			fprintf(stderr, "proftrace diff: --fail-if '%s' holds\n", conds[i]);
			hits++;
		}
	for (size_t i = 0; i < nconds; i++) {
		const char *side = missing_side(d, conds[i]);

		if (side)
			fprintf(stderr,
				"proftrace diff: note: --fail-if '%s' not checked: the figure has "
				"no value in %s\n",
				conds[i], side);
	}
	/* a gate over a run that counted nothing, or lost records, passes
	 * whatever changed: it fails instead, and says why */
	for (int i = 0; i < 2 && nconds; i++)
		if (pt_diff__unfit(i ? b : a, err, sizeof(err))) {
			fprintf(stderr, "proftrace diff: %s (%s) cannot be gated on: %s\n",
				i ? "B" : "A", argv[optind + i], err);
			hits++;
		}
	rc = hits ? 1 : 0;
out:
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(d);
	return rc;
}
