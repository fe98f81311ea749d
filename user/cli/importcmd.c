// SPDX-License-Identifier: BSD-2-Clause
/*
 * proftrace import-regions: intra-kernel regions (gpu/regionfile.h) into an
 * output folder of a run taken with --trace (docs/gpu.md, "Regions inside
 * a kernel").
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "importcmd.h"
#include "aggregate/regionmatch.h"
#include "gpu/regionfile.h"
#include "report/emit.h"
#include "report/outdir.h"
#include "report/regions_out.h"
#include "util/util.h"

#define MAX_FILE (4ull << 30)

static const char usage[] =
	"Usage: proftrace import-regions [--kernel NAME] [--tags FILE] REGIONS... OUTDIR\n"
	"\n"
	"Put the regions a device-side profiler recorded inside kernels on the\n"
	"timeline of a run taken with --trace: each region becomes a slice inside\n"
	"the kernel launch it ran in, on that kernel's stream track in\n"
	"OUTDIR/trace.json, and OUTDIR/summary.json gets gpu.regions.\n"
	"\n"
	"  REGIONS            a Chrome-trace JSON of regions, or a raw buffer FILE.bin\n"
	"                     (int64 count, then start_ns, dur_ns, tag_id, tid per\n"
	"                     event) with its tag names in FILE.json (a list, or\n"
	"                     {\"tags\": [...], \"kernel\": NAME, \"launch\": N}); one raw\n"
	"                     buffer is one launch\n"
	"  -k, --kernel NAME  the kernel of regions whose file names none\n"
	"  -t, --tags FILE    the tag names of every .bin given (instead of FILE.json)\n"
	"  -h, --help         this text\n"
	"\n"
	"Regions are matched to launches by kernel name and launch order (a file's\n"
	"\"launch\" index, else in the order given), and their GPU clock is shifted\n"
	"onto the trace's by the offset that puts them inside their kernels; what\n"
	"could not be matched and how far any region falls outside are printed and\n"
	"written to summary.json. Importing again replaces the regions imported before.\n"
	"\n"
	"Exit codes: 0 ok (some launches matched); 1 none matched, or a write failed;\n"
	"2 bad usage or a malformed file.\n";

static int read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rbe");
	struct stat st;
	size_t n;

	*buf = NULL;
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE) {
		snprintf(err, errlen, "%s: not a plain file below 4 GiB", path);
		fclose(f);
		return -EINVAL;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(*buf, 1, (size_t)st.st_size, f);
	fclose(f);
	(*buf)[n] = 0;
	*len = n;
	return 0;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && !strcmp(s + a - b, suf);
}

/* path with its extension (if any) replaced by ext. */
static char *with_ext(const char *path, const char *ext)
{
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
	size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
	char *p = malloc(stem + strlen(ext) + 1);

	if (p) {
		memcpy(p, path, stem);
		strcpy(p + stem, ext);
	}
	return p;
}

static int read_raw(struct pt_region_set *s, const char *bin, const char *tags, char *err,
		    size_t errlen)
{
	char *b = NULL, *t = NULL, *tp = NULL;
	size_t bl = 0, tl = 0;
	struct stat st;
	int e;

	if (!tags) {
		tp = with_ext(bin, ".json");
		if (!tp)
			return -ENOMEM;
		if (!stat(tp, &st))
			tags = tp;
	}
	e = read_file(bin, &b, &bl, err, errlen);
	if (!e && tags)
		e = read_file(tags, &t, &tl, err, errlen);
	if (!e)
		e = pt_regionfile__read_raw(s, b, bl, t, tl, bin, err, errlen);
	if (!e && !tags)
		fprintf(stderr,
			"proftrace: import-regions: %s: no tag names (%s or --tags): tags "
			"are named by number\n",
			bin, tp);
	free(b);
	free(t);
	free(tp);
	return e;
}

static int read_input(struct pt_region_set *s, const char *path, const char *tags, char *err,
		      size_t errlen)
{
	char *j = NULL, *bin;
	size_t jl = 0;
	int e;

	if (ends_with(path, ".bin"))
		return read_raw(s, path, tags, err, errlen);
	e = read_file(path, &j, &jl, err, errlen);
	if (e)
		return e;
	if (pt_regionfile__is_tag_table(j, jl)) { /* FILE.json of a FILE.bin */
		free(j);
		bin = with_ext(path, ".bin");
		if (!bin)
			return -ENOMEM;
		e = read_raw(s, bin, tags ? tags : path, err, errlen);
		free(bin);
		return e;
	}
	e = pt_regionfile__read_chrome(s, j, jl, path, err, errlen);
	free(j);
	return e;
}

static int write_trace(FILE *f, const void *ctx)
{
	return pt_rtrace__write(f, ctx);
}

static int write_json(FILE *f, const void *ctx)
{
	char *txt = cJSON_Print((const cJSON *)ctx);
	int e = 0;

	if (!txt)
		return -ENOMEM;
	if (fputs(txt, f) == EOF || fputc('\n', f) == EOF)
		e = -EIO;
	free(txt);
	return e;
}

static int write_md(FILE *f, const void *ctx)
{
	return pt_report_md__write(f, ctx);
}

static void print_result(const struct pt_region_set *s, const struct pt_regions_result *res,
			 const struct pt_rtrace_stats *st, int64_t t0, const char *outdir)
{
	fprintf(stderr,
		"proftrace: import-regions: %" PRIu64 " of %zu region launches matched "
		"(%" PRIu64 " regions) into %s/trace.json and summary.json\n",
		res->launches_matched, res->nm, res->regions, outdir);
	for (size_t i = 0; i < res->nclocks; i++) {
		const struct pt_rclock *c = &res->clocks[i];

		fprintf(stderr,
			"proftrace: import-regions: clock %s: %" PRIu64 " launches, "
			"CLOCK_MONOTONIC = its time + %" PRId64 " ns (%s)\n",
			c->clock, c->launches,
			(int64_t)((uint64_t)c->offset_ns - PT_RTRACE_BIAS_NS + (uint64_t)t0),
			c->one_offset ? "one offset fits every launch"
				      : "no one offset fits: each launch its own, median shown");
		if (!c->one_offset)
			fprintf(stderr,
				"proftrace: import-regions: warning: clock %s: offsets "
				"spread over %" PRId64 " ns\n",
				c->clock,
				(int64_t)((uint64_t)c->offset_max_ns - (uint64_t)c->offset_min_ns));
	}
	if (res->launches_matched)
		fprintf(stderr,
			"proftrace: import-regions: residual: %" PRIu64 " regions outside "
			"their kernel after alignment, by at most %" PRIu64 " ns%s\n",
			res->regions_outside, res->residual_max_ns,
			res->regions_outside ? " (clamped into it in trace.json)" : "");
	for (size_t i = 0; i < res->nm; i++) {
		const struct pt_rmatch *m = &res->m[i];

		if (m->span < 0)
			fprintf(stderr,
				"proftrace: import-regions: warning: %s: kernel %s launch "
				"%" PRId64 " (%zu regions) not matched: %s\n",
				s->l[i].source, m->kernel ? m->kernel : "(none)", m->launch,
				s->l[i].nev, m->why);
		if (s->l[i].overflow)
			fprintf(stderr,
				"proftrace: import-regions: warning: %s: the profiler's "
				"buffer overflowed: %" PRIu64 " events recorded, %zu read\n",
				s->l[i].source, s->l[i].recorded, s->l[i].nev);
		if (s->l[i].invalid)
			fprintf(stderr,
				"proftrace: import-regions: warning: %s: %" PRIu64
				" malformed events left out\n",
				s->l[i].source, s->l[i].invalid);
	}
	if (st->left_out)
		fprintf(stderr,
			"proftrace: import-regions: warning: %" PRIu64 " regions left out "
			"of trace.json (more than %u overlapping lanes)\n",
			st->left_out, PT_REGION_MAX_LANES);
}

int pt_importcmd__run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kernel", required_argument, NULL, 'k' },
		{ "tags", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *kernel = NULL, *tags = NULL, *outdir;
	struct pt_regions_result res = { 0 };
	struct pt_rtrace_stats st = { 0 };
	struct pt_region_set s;
	struct pt_rtrace t = { 0 };
	struct pt_outdir *od = NULL;
	cJSON *trace = NULL, *sum = NULL;
	char err[512] = "", path[4096], *buf = NULL;
	size_t len;
	int c, e;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+k:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			kernel = optarg;
			break;
		case 't':
			tags = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "proftrace: import-regions: bad option (see proftrace "
					"import-regions --help)\n");
			return -PT_EUSAGE;
		}
	}
	if (argc - optind < 2) {
		fprintf(stderr, "proftrace: import-regions: give REGIONS... OUTDIR (see proftrace "
				"import-regions --help)\n");
		return -PT_EUSAGE;
	}
	outdir = argv[argc - 1];
	pt_regionfile__init(&s);
	for (int i = optind; i < argc - 1; i++) {
		e = read_input(&s, argv[i], tags, err, sizeof(err));
		if (e) {
			fprintf(stderr, "proftrace: import-regions: %s\n",
				e == -ENOMEM ? "out of memory" : err);
			e = e == -ENOMEM ? e : -PT_EUSAGE;
			goto out;
		}
	}
	snprintf(path, sizeof(path), "%s/trace.json", outdir);
	e = read_file(path, &buf, &len, err, sizeof(err));
	if (e) {
		fprintf(stderr,
			"proftrace: import-regions: %s (run proftrace with --trace, "
			"-o OUTDIR)\n",
			err);
		e = -PT_EUSAGE;
		goto out;
	}
	trace = pt_regions_out__parse_json(buf, len, true);
	free(buf);
	buf = NULL;
	if (!trace || pt_rtrace__open(&t, trace, err, sizeof(err))) {
		fprintf(stderr, "proftrace: import-regions: %s: %s\n", path,
			trace ? err : "not JSON");
		e = -PT_EUSAGE;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/summary.json", outdir);
	e = read_file(path, &buf, &len, err, sizeof(err));
	sum = e ? NULL : pt_regions_out__parse_json(buf, len, false);
	free(buf);
	buf = NULL;
	if (!sum) {
		fprintf(stderr, "proftrace: import-regions: %s\n",
			e ? err : "summary.json: not JSON");
		e = -PT_EUSAGE;
		goto out;
	}
	e = pt_regionmatch__match(&s, kernel, t.spans, t.n, &res);
	if (!e)
		e = pt_rtrace__merge(&t, &s, &res, &st);
	if (!e)
		e = pt_regions_out__add_summary(sum, &s, &res, &st, t.t0_mono_ns,
						(const char *const *)argv + optind,
						(size_t)(argc - 1 - optind));
	if (e == -EINVAL) {
		fprintf(stderr, "proftrace: import-regions: %s: no gpu object\n", path);
		e = -PT_EUSAGE;
		goto out;
	}
	if (e)
		goto out;
	e = pt_outdir__open(&od, outdir, 0, err, sizeof(err));
	if (!e)
		e = pt_outdir__write(od, "trace.json", write_trace, trace, err, sizeof(err));
	if (!e)
		e = pt_outdir__write(od, "summary.json", write_json, sum, err, sizeof(err));
	if (!e) /* its GPU section gains the regions */
		e = pt_outdir__write(od, "report.md", write_md, sum, err, sizeof(err));
	if (e) {
		fprintf(stderr, "proftrace: import-regions: %s\n", err);
		goto out;
	}
	print_result(&s, &res, &st, t.t0_mono_ns, outdir);
	if (!res.launches_matched)
		e = -ENOENT;
out:
	if (e == -ENOMEM)
		fprintf(stderr, "proftrace: import-regions: out of memory\n");
	pt_outdir__close(od);
	pt_rtrace__free(&t);
	pt_regionmatch__result_free(&res);
	pt_regionfile__free(&s);
	cJSON_Delete(trace);
	cJSON_Delete(sum);
	return e;
}
