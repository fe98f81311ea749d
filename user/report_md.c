// SPDX-License-Identifier: BSD-2-Clause
/*
 * report.md: summary.json rendered for people, as GitHub-flavoured markdown
 * that survives being pasted into an issue. It reads only the summary
 * document, so every number here can be found in summary.json; a key that
 * is missing or null prints as "–" instead of a made-up 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "report.h"

#define NA "–"

static const cJSON *jget(const cJSON *o, const char *k)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

/* The builder writes exact big integers as raw text (summary.c); a
 * document parsed back from a file has them as numbers. Accept both. */
static bool jnum(const cJSON *o, const char *k, double *v)
{
	const cJSON *it = jget(o, k);
	char *end;

	if (cJSON_IsNumber(it)) {
		*v = it->valuedouble;
		return true;
	}
	if (cJSON_IsRaw(it) && it->valuestring) {
		*v = strtod(it->valuestring, &end);
		return end != it->valuestring && !*end;
	}
	return false;
}

static bool ju64(const cJSON *o, const char *k, uint64_t *v)
{
	const cJSON *it = jget(o, k);
	char *end;
	double d;

	if (cJSON_IsRaw(it) && it->valuestring) {
		*v = strtoull(it->valuestring, &end, 10);
		return end != it->valuestring && !*end;
	}
	if (jnum(o, k, &d) && d >= 0) {
		*v = (uint64_t)d;
		return true;
	}
	return false;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *it = jget(o, k);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static const cJSON *jarr(const cJSON *o, const char *k)
{
	const cJSON *it = jget(o, k);

	return cJSON_IsArray(it) ? it : NULL;
}

static const char *plural(double n)
{
	return n == 1 ? "" : "s";
}

/* Characters GFM would read as markup or as a cell border. A newline
 * would end the table row, so it becomes a space. */
static void put_text(FILE *f, const char *s)
{
	if (!s) {
		fputs(NA, f);
		return;
	}
	for (; *s; s++) {
		if (*s == '\n' || *s == '\r')
			fputc(' ', f);
		else if (strchr("\\`*_|[]<>~", *s))
			fprintf(f, "\\%c", *s);
		else
			fputc(*s, f);
	}
}

/* Probe texts and symbols in code spans: globs and C++/Rust names are full
 * of '*' and '_'. Only '|' still needs escaping inside a table. */
static void put_code(FILE *f, const char *s)
{
	const char *fence;

	if (!s) {
		fputs(NA, f);
		return;
	}
	fence = strchr(s, '`') ? "`` " : "`";
	fputs(fence, f);
	for (; *s; s++) {
		if (*s == '\n' || *s == '\r')
			fputc(' ', f);
		else if (*s == '|')
			fputs("\\|", f);
		else
			fputc(*s, f);
	}
	fputs(fence[1] ? " ``" : "`", f);
}

static void put_fixed(FILE *f, const cJSON *o, const char *k, int prec)
{
	double v;

	if (jnum(o, k, &v))
		fprintf(f, "%.*f", prec, v);
	else
		fputs(NA, f);
}

/* ms with 3 decimals (µs): enough to compare rows, few enough to align. */
static void put_ms(FILE *f, const cJSON *o, const char *k)
{
	put_fixed(f, o, k, 3);
}

static void put_count(FILE *f, const cJSON *o, const char *k)
{
	put_fixed(f, o, k, 0);
}

static void put_share(FILE *f, const cJSON *o, const char *k)
{
	double v;

	if (jnum(o, k, &v))
		fprintf(f, "%.1f%%", v * 100);
	else
		fputs(NA, f);
}

/* A cell separator, then the cell. */
#define CELL(f) fputs(" | ", f)

/* A table row is mostly numbers read from one JSON object: one entry per
 * column, written by put_cells(), instead of a put/CELL pair per column. */
enum cell_kind { C_COUNT, C_MS, C_SHARE, C_TEXT, C_RATE };

struct cell {
	enum cell_kind kind;
	const char *key;
};

static void put_cells(FILE *f, const cJSON *o, const struct cell *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			CELL(f);
		switch (c[i].kind) {
		case C_COUNT:
			put_count(f, o, c[i].key);
			break;
		case C_MS:
			put_ms(f, o, c[i].key);
			break;
		case C_SHARE:
			put_share(f, o, c[i].key);
			break;
		case C_TEXT:
			put_text(f, jstr(o, c[i].key));
			break;
		case C_RATE:
			put_fixed(f, o, c[i].key, 3);
			break;
		}
	}
}

#define NCELLS(a) (sizeof(a) / sizeof((a)[0]))

static void put_start(FILE *f, const cJSON *meta)
{
	uint64_t ns;
	struct tm tm;
	time_t sec;
	char buf[32];

	if (!ju64(meta, "start_unix_ns", &ns) || !ns) {
		fputs(NA, f);
		return;
	}
	sec = (time_t)(ns / 1000000000ULL);
	if (!gmtime_r(&sec, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm)) {
		fputs(NA, f);
		return;
	}
	fprintf(f, "%s.%03uZ", buf, (unsigned int)(ns % 1000000000ULL / 1000000ULL));
}

static void put_dropped_warning(FILE *f, const cJSON *health)
{
	double n;

	if (jnum(health, "dropped_events", &n) && n > 0)
		fprintf(f, "**%.0f records were dropped: figures are incomplete; "
			   "raise `set ringbuf_mb`**\n\n",
			n);
}

/* How py: probes were timed: said before any figure, since partial
 * Python counts must not be read as exact. */
static void put_python(FILE *f, const cJSON *py)
{
	const char *timing = jstr(py, "timing"), *adv = jstr(py, "advice");
	const char *nosrc = jstr(py, "qualname_source_missing");
	double n;

	if (!py || !cJSON_IsObject(py))
		return;
	fputs("Python ", f);
	put_text(f, jstr(py, "version"));
	fputs(" (", f);
	put_code(f, jstr(py, "path"));
	fputs(") · mechanism ", f);
	put_text(f, jstr(py, "mechanism"));
	fputs(" · perf trampoline ", f);
	fputs(cJSON_IsTrue(jget(py, "perf_trampoline")) ? "on" : "off", f);
	fputs(" · timing **", f);
	put_text(f, timing);
	fputs("**: ", f);
	put_text(f, jstr(py, "why"));
	fputs(".", f);
	if (adv) {
		fputs(" ", f);
		put_text(f, timing && strcmp(timing, "exact") ? "To fix: " : "");
		put_text(f, adv);
		fputs(".", f);
	}
	fputs("\n\n", f);
	if (nosrc && jnum(py, "qualname_from_co_name", &n) && n > 0) {
		fprintf(f, "> **Warning:** the source of %.0f code object%s could not be read (first: ",
			n, plural(n));
		put_code(f, nosrc);
		fputs("), so their class is unknown and only `py:<module>::<function>` probes can "
		      "match them.\n\n",
		      f);
	}
}

static void put_header(FILE *f, const cJSON *doc)
{
	const cJSON *meta = jget(doc, "meta");
	double v;

	fputs("# proftrace report: ", f);
	put_text(f, jstr(meta, "comm"));
	fputs(" (pid ", f);
	put_count(f, meta, "pid");
	fputs(")\n\n", f);

	fputs("exe ", f);
	put_code(f, jstr(meta, "exe"));
	fputs(" · duration ", f);
	put_fixed(f, meta, "duration_s", 3);
	fputs(" s · start ", f);
	put_start(f, meta);
	fputs(" · targets ", f);
	put_code(f, jstr(meta, "targets_file"));
	fputs(" · kernel ", f);
	put_text(f, jstr(meta, "kernel"));
	fputs(" · step ", f);
	if (jstr(meta, "step_probe")) {
		put_code(f, jstr(meta, "step_probe"));
		fputs(" (mode ", f);
		put_text(f, jstr(meta, "step_mode"));
		fputs(")", f);
	} else {
		fputs("none", f);
	}
	fputs(" · warmup ", f);
	if (jnum(meta, "warmup_steps", &v))
		fprintf(f, "%.0f step%s", v, plural(v));
	else
		fputs(NA, f);
	fputs(" · ", f);
	put_text(f, jstr(meta, "tool"));
	fputs(" ", f);
	put_text(f, jstr(meta, "version"));
	fputs("\n\n", f);

	/* Said at the top as well as in Health: nothing below can be trusted
	 * at face value when records were dropped. */
	put_dropped_warning(f, jget(doc, "health"));
	put_python(f, jget(meta, "python"));
}

/* Zero steps is a result to explain, not a table of dashes. */
static bool no_steps(const cJSON *stats)
{
	double n;

	return jnum(stats, "steps", &n) && n == 0;
}

static void put_steps(FILE *f, const cJSON *doc)
{
	const cJSON *meta = jget(doc, "meta"), *st = jget(doc, "stats");
	double warm, inc;
	bool has_warm, has_inc;

	fputs("## Steps\n\n", f);
	has_warm = jnum(st, "warmup_steps_skipped", &warm);
	has_inc = jnum(st, "incomplete_steps", &inc);

	if (no_steps(st)) {
		if (!jstr(meta, "step_probe")) {
			fputs("No complete step was seen: there is no step probe "
			      "(no `step` line in the targets file), "
			      "so only per-function figures follow.\n\n",
			      f);
			return;
		}
		fputs("No complete step was seen: steps, buckets and step.other have no figures. "
		      "Check the step probe ",
		      f);
		put_code(f, jstr(meta, "step_probe"));
		fputs(" (mode ", f);
		put_text(f, jstr(meta, "step_mode"));
		fputs("): did it attach (see Health), and did the target run a step "
		      "during the ",
		      f);
		put_fixed(f, meta, "duration_s", 3);
		fputs(" s window?", f);
		if (has_inc)
			fprintf(f, " %.0f step%s started but did not complete.", inc, plural(inc));
		if (has_warm && warm > 0)
			fprintf(f, " %.0f step%s skipped as warmup.", warm, plural(warm));
		fputs("\n\n", f);
		return;
	}

	fputs("| steps | mean ms | std ms | min ms | p50 ms | p90 ms | p99 ms | max ms "
	      "| steps/s |\n"
	      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	      f);
	static const struct cell cols[] = {
		{ C_COUNT, "steps" },  { C_MS, "mean_ms" }, { C_MS, "std_ms" },
		{ C_MS, "min_ms" },    { C_MS, "p50_ms" },  { C_MS, "p90_ms" },
		{ C_MS, "p99_ms" },    { C_MS, "max_ms" },  { C_RATE, "steps_per_s" },
	};

	fputs("| ", f);
	put_cells(f, st, cols, NCELLS(cols));
	fputs(" |\n\n", f);

	fputs("Counted step time ", f);
	put_ms(f, st, "time_ms");
	fputs(" ms; ", f);
	if (has_warm)
		fprintf(f, "%.0f warmup step%s skipped; ", warm, plural(warm));
	else
		fputs(NA " warmup steps skipped; ", f);
	if (has_inc)
		fprintf(f, "%.0f incomplete step%s not counted.\n\n", inc, plural(inc));
	else
		fputs(NA " incomplete steps not counted.\n\n", f);
}

static void put_buckets(FILE *f, const cJSON *doc)
{
	const cJSON *arr = jarr(doc, "buckets"), *b;
	double share, sum = 0;

	fputs("## Buckets\n\n", f);
	if (!arr) {
		fputs(NA "\n\n", f);
		return;
	}
	if (no_steps(jget(doc, "stats"))) {
		fputs("Buckets are timed inside counted steps only, and none was counted.\n\n", f);
		return;
	}
	static const struct cell cols[] = {
		{ C_TEXT, "name" },  { C_TEXT, "domain" }, { C_COUNT, "calls" },
		{ C_MS, "avg_ms_per_step" }, { C_SHARE, "share" }, { C_MS, "mean_ms" },
		{ C_MS, "p50_ms" },  { C_MS, "p99_ms" },  { C_MS, "max_ms" },
	};

	fputs("| bucket | domain | calls | avg ms/step | share | mean ms | p50 ms | p99 ms "
	      "| max ms |\n"
	      "|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
	      f);
	cJSON_ArrayForEach(b, arr)
	{
		fputs("| ", f);
		put_cells(f, b, cols, NCELLS(cols));
		fputs(" |\n", f);
		if (jnum(b, "share", &share))
			sum += share;
	}
	fputs("\n", f);
	/* Compared as printed (0.1%), so rounding alone never triggers it. */
	if (sum * 1000 >= 1000.5)
		fprintf(f, "Shares add up to %.1f%%: buckets nest or overlap, and time inside "
			   "several buckets counts in each of them.\n\n",
			sum * 100);
}

static const char *basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s && s[1] ? s + 1 : path;
}

static void put_function_name(FILE *f, const cJSON *fn)
{
	const cJSON *al = jarr(fn, "aliases"), *a;
	const char *sym = jstr(fn, "symbol");
	bool first = true;

	/* Unresolved rows have no symbol; the probe text is what the user
	 * wrote and can look for. */
	if (!sym) {
		put_code(f, jstr(fn, "probe"));
		return;
	}
	put_code(f, sym);
	cJSON_ArrayForEach(a, al)
	{
		if (!cJSON_IsString(a))
			continue;
		fputs(first ? " (" : ", ", f);
		put_code(f, a->valuestring);
		first = false;
	}
	if (!first)
		fputs(")", f);
}

static void put_probe_site(FILE *f, const cJSON *fn)
{
	const char *insn = jstr(fn, "probe_insn");
	double skip;
	bool has_skip = jnum(fn, "probe_skip", &skip) && skip > 0;

	if (!insn && !has_skip) {
		fputs(NA, f);
		return;
	}
	put_text(f, insn ? insn : NA);
	if (has_skip)
		fprintf(f, " +%.0f", skip);
}

static void put_attached(FILE *f, const cJSON *fn)
{
	const cJSON *att = jget(fn, "attached");
	double after;

	if (cJSON_IsTrue(att)) {
		fputs("yes", f);
		if (jnum(fn, "attached_after_s", &after))
			fprintf(f, " +%.2fs", after);
	} else if (cJSON_IsFalse(att)) {
		fputs("no", f);
		if (jstr(fn, "reason")) {
			fputs(": ", f);
			put_text(f, jstr(fn, "reason"));
		}
	} else {
		fputs(NA, f);
	}
}

static void put_functions(FILE *f, const cJSON *doc)
{
	const cJSON *arr = jarr(doc, "functions"), *fn;
	bool any_py = false;

	fputs("## Functions\n\n", f);
	if (!arr) {
		fputs(NA "\n\n", f);
		return;
	}
	static const struct cell cols[] = {
		{ C_COUNT, "calls" }, { C_MS, "total_ms" }, { C_MS, "mean_ms" },
		{ C_MS, "p50_ms" },   { C_MS, "p90_ms" },   { C_MS, "p99_ms" },
		{ C_MS, "max_ms" },
	};

	fputs("| function | object | calls | total ms | mean ms | p50 ms | p90 ms | p99 ms "
	      "| max ms | probe | attached |\n"
	      "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
	      f);
	cJSON_ArrayForEach(fn, arr)
	{
		const char *timing = jstr(fn, "timing");
		double line;

		fputs("| ", f);
		put_function_name(f, fn);
		if (timing && strcmp(timing, "exact")) {
			fputs(" *(", f);
			put_text(f, timing);
			fputs(")*", f);
		}
		CELL(f);
		put_code(f, basename_of(jstr(fn, "object")));
		if (jnum(fn, "line", &line))
			fprintf(f, ":%.0f", line);
		CELL(f);
		put_cells(f, fn, cols, NCELLS(cols));
		CELL(f);
		if (jstr(fn, "kind") && !strcmp(jstr(fn, "kind"), "python")) {
			fputs("python frame", f); /* the interpreter's, shared by all */
			any_py = true;
		} else
			put_probe_site(f, fn);
		CELL(f);
		put_attached(f, fn);
		fputs(" |\n", f);
	}
	fputs("\nFunctions count every completed call while attached, warmup and time outside "
	      "steps included.",
	      f);
	if (any_py)
		fputs(" A Python generator or coroutine counts one call per activation (each "
		      "resume until it yields, awaits or returns).",
		      f);
	fputs("\n\n", f);
}

static void put_health(FILE *f, const cJSON *doc)
{
	const cJSON *h = jget(doc, "health"), *arr = jarr(h, "unattached"), *u;

	static const struct cell cols[] = {
		{ C_COUNT, "events" },         { C_COUNT, "dropped_events" },
		{ C_COUNT, "depth_overflow" }, { C_COUNT, "unwound" },
		{ C_COUNT, "orphan_returns" }, { C_COUNT, "lost_calls" },
		{ C_COUNT, "steps_incomplete" }, { C_COUNT, "probes_attached" },
	};

	fputs("## Health\n\n", f);
	put_dropped_warning(f, h);
	fputs("| events | dropped | depth overflow | unwound | orphan returns | lost calls "
	      "| incomplete steps | probes attached |\n"
	      "|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	      f);
	fputs("| ", f);
	put_cells(f, h, cols, NCELLS(cols));
	fputs("/", f);
	put_count(f, h, "probes_requested");
	fputs(" |\n\n", f);

	{
		double n;

		if (jnum(h, "py_calls_unresolved", &n) && n > 0)
			fprintf(f, "%.0f Python call%s ran code that was freed (and its address "
				"reused) before proftrace could read it: not attributed to any "
				"function.\n\n",
				n, plural(n));
	}
	if (!arr)
		return;
	if (!cJSON_GetArraySize(arr)) {
		fputs("All probes attached.\n", f);
		return;
	}
	fputs("Unattached probes:\n\n", f);
	cJSON_ArrayForEach(u, arr)
	{
		const char *sym = jstr(u, "symbol"), *obj = jstr(u, "object");

		fputs("- ", f);
		put_code(f, jstr(u, "probe"));
		if (sym) {
			fputs(" (", f);
			put_code(f, sym);
			if (obj) {
				fputs(" in ", f);
				put_code(f, basename_of(obj));
			}
			fputs(")", f);
		}
		fputs(": ", f);
		put_text(f, jstr(u, "reason"));
		fputs("\n", f);
	}
}

int pt_report_md__write(FILE *f, const struct cJSON *summary)
{
	if (!f || !summary)
		return -EINVAL;
	put_header(f, summary);
	put_steps(f, summary);
	put_buckets(f, summary);
	put_functions(f, summary);
	put_health(f, summary);
	if (fflush(f) == EOF || ferror(f))
		return -EIO;
	return 0;
}
