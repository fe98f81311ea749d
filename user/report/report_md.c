// SPDX-License-Identifier: BSD-2-Clause
/*
 * report.md: summary.json rendered for people, as GitHub-flavoured markdown
 * that survives being pasted into an issue. It reads only the summary
 * document, so every number here can be found in summary.json; a key that
 * is missing or null prints as "–" instead of a made-up 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "jread.h"
#include "emit.h"
#include "mdtable.h"
#include "util/demangle.h"
#include "util/util.h"

#define NA "–"
/* Kernel names in the GPU table: C++ ones shortened past this width
 * (pt_demangle__short; docs/gpu.md), whole in summary.json. */
#define KERNEL_NAME_WIDTH 100

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

	if (pt_jnum(o, k, &v))
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

	if (pt_jnum(o, k, &v))
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
	const char *in; /* the key is in this object of the row's; NULL: in the row */
};

static void put_cells(FILE *f, const cJSON *row, const struct cell *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const cJSON *o = c[i].in ? pt_jget(row, c[i].in) : row;

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
			put_text(f, pt_jstr(o, c[i].key));
			break;
		case C_RATE:
			put_fixed(f, o, c[i].key, 3);
			break;
		}
	}
}

static void put_start(FILE *f, const cJSON *meta)
{
	uint64_t ns;
	struct tm tm;
	time_t sec;
	char buf[32];

	if (!pt_ju64(meta, "start_unix_ns", &ns) || !ns) {
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

	if (pt_jnum(health, "dropped_events", &n) && n > 0)
		fprintf(f,
			"**%.0f records were dropped: figures are incomplete; "
			"raise `set ringbuf_mb`**\n\n",
			n);
}

/* The agent loaded by this run with --inject: what it cost the process. */
static void put_injected(FILE *f, const cJSON *in)
{
	double pause, tid;

	if (!in || !cJSON_IsObject(in) || !pt_jnum(in, "pause_ms", &pause) ||
	    !pt_jnum(in, "tid", &tid))
		return;
	fprintf(f, " The agent was loaded at attach (`--inject`): thread %.0f, waiting in ", tid);
	put_code(f, pt_jstr(in, "syscall"));
	fprintf(f, ", was held %.2f ms for it.", pause);
}

/* How py: probes were timed: said before any figure, since partial
 * Python counts must not be read as exact. */
static void put_python(FILE *f, const cJSON *py)
{
	const char *timing = pt_jstr(py, "timing"), *adv = pt_jstr(py, "advice");
	const char *nosrc = pt_jstr(py, "qualname_source_missing");
	double n;

	if (!py || !cJSON_IsObject(py))
		return;
	fputs("Python ", f);
	put_text(f, pt_jstr(py, "version"));
	fputs(" (", f);
	put_code(f, pt_jstr(py, "path"));
	fputs(") · mechanism ", f);
	put_text(f, pt_jstr(py, "mechanism"));
	fputs(" · perf trampoline ", f);
	fputs(cJSON_IsTrue(pt_jget(py, "perf_trampoline")) ? "on" : "off", f);
	/* this is how py: function rows are timed; steps and buckets come
	 * from the calls the frame probe does see */
	fputs(" · py: function timing **", f);
	put_text(f, timing);
	fputs("**: ", f);
	put_text(f, pt_jstr(py, "why"));
	fputs(".", f);
	if (adv) {
		fputs(" ", f);
		put_text(f, timing && strcmp(timing, "exact") ? "To fix: " : "");
		put_text(f, adv);
		fputs(".", f);
	}
	put_injected(f, pt_jget(pt_jget(py, "agent"), "inject"));
	fputs("\n\n", f);
	if (nosrc && pt_jnum(py, "qualname_from_co_name", &n) && n > 0) {
		fprintf(f,
			"> **Warning:** the source of %.0f code object%s could not be read "
			"(first: ",
			n, plural(n));
		put_code(f, nosrc);
		fputs("), so their class is unknown and only `py:<module>::<function>` probes can "
		      "match them.\n\n",
		      f);
	}
}

/* meta.mode "sampling": no targets file, stacks sampled only. */
static bool sampling_only(const cJSON *doc)
{
	const char *mode = pt_jstr(pt_jget(doc, "meta"), "mode");

	return mode && !strcmp(mode, "sampling");
}

static void put_header(FILE *f, const cJSON *doc)
{
	const cJSON *meta = pt_jget(doc, "meta");
	double v;

	fputs("# proftrace report: ", f);
	put_text(f, pt_jstr(meta, "comm"));
	fputs(" (pid ", f);
	put_count(f, meta, "pid");
	fputs(")\n\n", f);

	fputs("exe ", f);
	put_code(f, pt_jstr(meta, "exe"));
	fputs(" · duration ", f);
	put_fixed(f, meta, "duration_s", 3);
	fputs(" s · start ", f);
	put_start(f, meta);
	fputs(" · targets ", f);
	if (sampling_only(doc))
		fputs("none (stacks sampled only)", f);
	else
		put_code(f, pt_jstr(meta, "targets_file"));
	fputs(" · kernel ", f);
	put_text(f, pt_jstr(meta, "kernel"));
	fputs(" · step ", f);
	if (pt_jstr(meta, "step_probe")) {
		put_code(f, pt_jstr(meta, "step_probe"));
		fputs(" (mode ", f);
		put_text(f, pt_jstr(meta, "step_mode"));
		fputs(")", f);
	} else {
		fputs("none", f);
	}
	fputs(" · warmup ", f);
	if (pt_jnum(meta, "warmup_steps", &v))
		fprintf(f, "%.0f step%s", v, plural(v));
	else
		fputs(NA, f);
	fputs(" · ", f);
	put_text(f, pt_jstr(meta, "tool"));
	fputs(" ", f);
	put_text(f, pt_jstr(meta, "version"));
	fputs("\n\n", f);

	/* Said at the top as well as in Health: nothing below can be trusted
	 * at face value when records were dropped. */
	put_dropped_warning(f, pt_jget(doc, "health"));
	put_python(f, pt_jget(meta, "python"));
}

/* Several processes: what the pooled figures below are made of. */
static void put_pooled(FILE *f, const cJSON *doc)
{
	const cJSON *meta = pt_jget(doc, "meta"), *pids = pt_jarr(meta, "pids"), *it;
	double n = (double)cJSON_GetArraySize(pids), sk;

	if (!pids)
		return;
	fprintf(f, "**%.0f process%s", n, n == 1 ? "" : "es");
	if (cJSON_IsTrue(pt_jget(meta, "children")))
		fputs(" (--children: the named ones and their descendants)", f);
	fputs("**: pids", f);
	cJSON_ArrayForEach(it, pids) fprintf(f, " %.0f", it->valuedouble);
	fputs(". The figures below pool them all (steps, buckets and functions of every "
	      "process together); each one's own are under Processes and in summary.json "
	      "`processes[]`.",
	      f);
	if (pt_jnum(meta, "processes_skipped_total", &sk) && sk > 0)
		fprintf(f,
			" %.0f descendant%s not traced (nothing the targets file names in "
			"%s; see `meta.processes_skipped`).",
			sk, plural(sk), sk == 1 ? "it" : "them");
	fputs("\n\n", f);
}

/* The processes' own figures side by side, then the skew across them. */
static void put_processes(FILE *f, const cJSON *doc)
{
	const cJSON *procs = pt_jarr(doc, "processes"), *k = pt_jget(doc, "skew"), *it;
	static const struct cell cols[] = {
		{ C_COUNT, "steps" }, { C_RATE, "steps_per_s" }, { C_MS, "mean_ms" },
		{ C_MS, "p50_ms" },   { C_MS, "p99_ms" },
	};
	double v;

	if (!procs)
		return;
	fputs("## Processes\n\n", f);
	fputs("| pid | rank | comm | attached s | ended | steps | steps/s | mean ms | p50 ms | "
	      "p99 ms |\n|---:|---:|---|---:|---|---:|---:|---:|---:|---:|\n",
	      f);
	cJSON_ArrayForEach(it, procs)
	{
		const cJSON *m = pt_jget(it, "meta"), *st = pt_jget(it, "stats");

		fputs("| ", f);
		put_count(f, m, "pid");
		CELL(f);
		put_count(f, m, "rank");
		CELL(f);
		put_code(f, pt_jstr(m, "comm"));
		CELL(f);
		put_fixed(f, m, "attached_at_s", 3);
		CELL(f);
		if (pt_jstr(m, "ended")) {
			put_text(f, pt_jstr(m, "ended"));
			fputs(" at ", f);
			put_fixed(f, m, "ended_at_s", 3);
			fputs(" s", f);
		} else {
			fputs("no", f);
		}
		CELL(f);
		put_cells(f, st, cols, ARRAY_SIZE(cols));
		fputs(" |\n", f);
	}
	fputs("\n", f);
	if (!k)
		return;
	fputs("### Step-time skew across processes\n\n", f);
	if (!pt_jnum(k, "steps_compared", &v) || v == 0) {
		fputs("Not measured: ", f);
		put_text(f, pt_jstr(k, "why"));
		fputs(".\n\n", f);
		return;
	}
	fprintf(f, "Per step index where the processes' steps line up in time (%.0f compared", v);
	if (pt_jnum(k, "steps_not_compared", &v) && v > 0)
		fprintf(f, ", %.0f not", v);
	fputs("): slowest minus fastest step time. Mean ", f);
	put_ms(f, k, "mean_ms");
	fputs(" ms · p50 ", f);
	put_ms(f, k, "p50_ms");
	fputs(" · p90 ", f);
	put_ms(f, k, "p90_ms");
	fputs(" · p99 ", f);
	put_ms(f, k, "p99_ms");
	fputs(" · max ", f);
	put_ms(f, k, "max_ms");
	fputs(" ms · ", f);
	put_share(f, k, "share_of_slowest");
	fputs(" of the slowest process's step time.\n\n| pid | rank | steps | slowest | fastest "
	      "|\n|---:|---:|---:|---:|---:|\n",
	      f);
	cJSON_ArrayForEach(it, pt_jarr(k, "per_process"))
	{
		/* clang-format off */
		static const struct cell c[] = {
			{ C_COUNT, "pid" },     { C_COUNT, "rank" },    { C_COUNT, "steps" },
			{ C_COUNT, "slowest" }, { C_COUNT, "fastest" },
		};
		/* clang-format on */

		fputs("| ", f);
		put_cells(f, it, c, ARRAY_SIZE(c));
		fputs(" |\n", f);
	}
	fputs("\n", f);
}

/* trace.json (--trace): one line, bold when it was cut at the bound. */
static void put_trace(FILE *f, const cJSON *doc)
{
	const cJSON *t = pt_jget(pt_jget(doc, "meta"), "trace");
	double ev = 0, dropped = 0, max = 0;

	if (!t)
		return;
	pt_jnum(t, "events", &ev);
	pt_jnum(t, "dropped", &dropped);
	pt_jnum(t, "max_events", &max);
	if (cJSON_IsTrue(pt_jget(t, "truncated"))) {
		fprintf(f,
			"**Trace cut at --trace-max-events %.0f: %.0f later slices and arrows "
			"were left out of ",
			max, dropped);
		put_code(f, pt_jstr(t, "file"));
		fprintf(f, " (%.0f events); raise --trace-max-events for the whole run**\n\n", ev);
		return;
	}
	fputs("Trace: ", f);
	put_code(f, pt_jstr(t, "file"));
	fprintf(f, ", %.0f events (open it in ui.perfetto.dev or chrome://tracing).\n\n", ev);
}

/* Zero steps is a result to explain, not a table of dashes. */
static bool no_steps(const cJSON *stats)
{
	double n;

	return pt_jnum(stats, "steps", &n) && n == 0;
}

/*
 * Why a step probe counted no step, from its rows in functions: it
 * matched nothing (and why), its calls are only sampled (no agent), or it
 * attached and the target ran no step in the window.
 */
static void put_step_probe_state(FILE *f, const cJSON *doc)
{
	const cJSON *meta = pt_jget(doc, "meta"), *fn;
	const char *probe = pt_jstr(meta, "step_probe"), *reason = NULL;
	bool attached = false, sampled = false;
	double at = -1, v;

	cJSON_ArrayForEach(fn, pt_jarr(doc, "functions"))
	{
		const char *p = pt_jstr(fn, "probe"), *timing = pt_jstr(fn, "timing");

		if (!p || !probe || strcmp(p, probe))
			continue;
		if (!cJSON_IsTrue(pt_jget(fn, "attached"))) {
			reason = reason ? reason : pt_jstr(fn, "reason");
			continue;
		}
		attached = true;
		sampled |= timing && !strcmp(timing, "sampled");
		if (pt_jnum(fn, "attached_after_s", &v) && (at < 0 || v < at))
			at = v;
	}
	if (!attached) {
		fputs(" matched no function", f);
		if (reason) {
			fputs(": ", f);
			put_text(f, reason);
		}
		fputs(" (see Functions).", f);
		return;
	}
	if (sampled) {
		fputs(" was found, but its calls are only sampled here, and steps are counted "
		      "from calls timed exactly: start the server after "
		      "`eval \"$(proftrace env)\"` (the Python agent) or attach with --inject "
		      "(see the Python line above).",
		      f);
		return;
	}
	fputs(" attached", f);
	if (at >= 0)
		fprintf(f, " at +%.2fs", at);
	fputs(", but no call of it completed during the ", f);
	put_fixed(f, meta, "duration_s", 3);
	fputs(" s window: did the target run a step?", f);
}

static void put_steps(FILE *f, const cJSON *doc)
{
	const cJSON *meta = pt_jget(doc, "meta"), *st = pt_jget(doc, "stats");
	double warm = 0, inc = 0;
	bool has_warm, has_inc;

	fputs("## Steps\n\n", f);
	has_warm = pt_jnum(st, "warmup_steps_skipped", &warm);
	has_inc = pt_jnum(st, "incomplete_steps", &inc);

	if (no_steps(st)) {
		if (!pt_jstr(meta, "step_probe")) {
			fputs("No complete step was seen: there is no step probe "
			      "(no `step` line in the targets file), "
			      "so only per-function figures follow.\n\n",
			      f);
			return;
		}
		fputs("No complete step was seen: steps, buckets and step.other have no figures. "
		      "The step probe ",
		      f);
		put_code(f, pt_jstr(meta, "step_probe"));
		fputs(" (mode ", f);
		put_text(f, pt_jstr(meta, "step_mode"));
		fputs(")", f);
		put_step_probe_state(f, doc);
		if (has_inc && inc > 0)
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
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_COUNT, "steps" },  { C_MS, "mean_ms" }, { C_MS, "std_ms" },
		{ C_MS, "min_ms" },    { C_MS, "p50_ms" },  { C_MS, "p90_ms" },
		{ C_MS, "p99_ms" },    { C_MS, "max_ms" },  { C_RATE, "steps_per_s" },
	};
	/* clang-format on */

	fputs("| ", f);
	put_cells(f, st, cols, ARRAY_SIZE(cols));
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
	const cJSON *arr = pt_jarr(doc, "buckets"), *b;
	double share, sum = 0;

	fputs("## Buckets\n\n", f);
	if (!arr) {
		fputs(NA "\n\n", f);
		return;
	}
	if (no_steps(pt_jget(doc, "stats"))) {
		fputs("Buckets are timed inside counted steps only, and none was counted.\n\n", f);
		return;
	}
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_TEXT, "name" },  { C_TEXT, "domain" }, { C_COUNT, "calls" },
		{ C_MS, "avg_ms_per_step" }, { C_SHARE, "share" }, { C_MS, "mean_ms" },
		{ C_MS, "p50_ms" },  { C_MS, "p99_ms" },  { C_MS, "max_ms" },
	};
	/* clang-format on */

	fputs("| bucket | domain | calls | avg ms/step | share | mean ms | p50 ms | p99 ms "
	      "| max ms |\n"
	      "|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
	      f);
	cJSON_ArrayForEach(b, arr)
	{
		fputs("| ", f);
		put_cells(f, b, cols, ARRAY_SIZE(cols));
		fputs(" |\n", f);
		if (pt_jnum(b, "share", &share))
			sum += share;
	}
	fputs("\n", f);
	/* Compared as printed (0.1%), so rounding alone never triggers it. */
	if (sum * 1000 >= 1000.5)
		fprintf(f,
			"Shares add up to %.1f%%: buckets nest or overlap, and time inside "
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
	const cJSON *al = pt_jarr(fn, "aliases"), *a;
	const char *sym = pt_jstr(fn, "symbol");
	bool first = true;

	/* Unresolved rows have no symbol; the probe text is what the user
	 * wrote and can look for. */
	if (!sym) {
		put_code(f, pt_jstr(fn, "probe"));
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
	const char *insn = pt_jstr(fn, "probe_insn");
	double skip;
	bool has_skip = pt_jnum(fn, "probe_skip", &skip) && skip > 0;

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
	const cJSON *att = pt_jget(fn, "attached");
	double after;

	if (cJSON_IsTrue(att)) {
		fputs("yes", f);
		if (pt_jnum(fn, "attached_after_s", &after))
			fprintf(f, " +%.2fs", after);
	} else if (cJSON_IsFalse(att)) {
		fputs("no", f);
		if (pt_jstr(fn, "reason")) {
			fputs(": ", f);
			put_text(f, pt_jstr(fn, "reason"));
		}
	} else {
		fputs(NA, f);
	}
}

static void put_functions(FILE *f, const cJSON *doc)
{
	const cJSON *arr = pt_jarr(doc, "functions"), *fn;
	bool any_py = false, any_sampled = false;

	fputs("## Functions\n\n", f);
	if (!arr) {
		fputs(NA "\n\n", f);
		return;
	}
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_COUNT, "calls" }, { C_MS, "total_ms" }, { C_MS, "mean_ms" },
		{ C_MS, "p50_ms" },   { C_MS, "p90_ms" },   { C_MS, "p99_ms" },
		{ C_MS, "max_ms" },
	};
	/* clang-format on */

	fputs("| function | object | calls | total ms | mean ms | p50 ms | p90 ms | p99 ms "
	      "| max ms | probe | attached |\n"
	      "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
	      f);
	cJSON_ArrayForEach(fn, arr)
	{
		const char *timing = pt_jstr(fn, "timing");
		double line;

		any_sampled |= timing && !strcmp(timing, "sampled");

		fputs("| ", f);
		put_function_name(f, fn);
		if (timing && strcmp(timing, "exact")) {
			fputs(" *(", f);
			put_text(f, timing);
			fputs(")*", f);
		}
		CELL(f);
		put_code(f, basename_of(pt_jstr(fn, "object")));
		if (pt_jnum(fn, "line", &line))
			fprintf(f, ":%.0f", line);
		CELL(f);
		put_cells(f, fn, cols, ARRAY_SIZE(cols));
		CELL(f);
		if (pt_jstr(fn, "kind") && !strcmp(pt_jstr(fn, "kind"), "python")) {
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
	if (any_sampled)
		fputs(" Rows marked *(sampled)* were not timed exactly: their calls and times are "
		      "not counted (" NA "), and their sampled time is under Host time (sampled).",
		      f);
	fputs("\n\n", f);
}

/* ---- Host time (sampled): only when meta.sampling is an object ---- */

#define TOP_THREADS 10
#define TOP_LINES 10
#define SOURCE_CHARS 80

static const cJSON *sampling_of(const cJSON *doc)
{
	const cJSON *s = pt_jget(pt_jget(doc, "meta"), "sampling");

	return cJSON_IsObject(s) ? s : NULL;
}

static void put_lost_warning(FILE *f, const cJSON *sampling)
{
	double n;

	if (pt_jnum(sampling, "lost_samples", &n) && n > 0)
		fprintf(f,
			"**%.0f sample%s lost (ring buffer full): sampled figures are too low; "
			"raise `set ringbuf_mb` or lower `set sample_hz`**\n\n",
			n, n == 1 ? " was" : "s were");
}

/* Keys of the ranked tables (mdtable.h): wall time, largest first; an
 * element without it goes last. */
static bool thread_key(const cJSON *o, double *key)
{
	if (!cJSON_IsObject(o))
		return false;
	if (!pt_jnum(o, "wall_ms", key))
		*key = -HUGE_VAL;
	return true;
}

static bool sampled_function_key(const cJSON *o, double *key)
{
	const cJSON *s = pt_jget(o, "sampled");

	if (!cJSON_IsObject(s))
		return false;
	if (!pt_jnum(s, "wall_ms", key))
		*key = -HUGE_VAL;
	return true;
}

/* Lines with time only: a line with off-CPU time and no on-CPU sample
 * (blocked in a call made from it) is still a top line. */
static bool line_key(const cJSON *o, double *key)
{
	double samples;

	if (!pt_jnum(o, "wall_ms", key))
		*key = -HUGE_VAL;
	return *key > 0 || (pt_jnum(o, "samples", &samples) && samples > 0);
}

static void put_yes_no(FILE *f, const cJSON *it)
{
	fputs(cJSON_IsTrue(it) ? "yes" : cJSON_IsFalse(it) ? "no" : NA, f);
}

static void put_sampling_totals(FILE *f, const cJSON *s)
{
	fputs("Sampled at ", f);
	put_count(f, s, "hz");
	fputs(" Hz (", f);
	put_text(f, pt_jstr(s, "mechanism"));
	fputs("): ", f);
	put_count(f, s, "samples");
	fputs(" on-CPU samples · on-CPU ", f);
	put_ms(f, s, "on_cpu_ms");
	fputs(" ms · off-CPU ", f);
	put_ms(f, s, "off_cpu_ms");
	fputs(" ms in ", f);
	put_count(f, s, "off_cpu_intervals");
	fputs(" intervals · wall ", f);
	put_ms(f, s, "wall_ms");
	fputs(" ms (on-CPU + off-CPU, summed over threads)\n\n", f);

	fputs("On-CPU samples: ", f);
	put_count(f, s, "python_samples");
	fputs(" with Python frames, ", f);
	put_count(f, s, "no_python_frames");
	fputs(" of Python threads with no Python frame, ", f);
	put_count(f, s, "not_python_thread");
	fputs(" of threads without a Python thread state.\n\n", f);
}

static void thread_row(FILE *f, const cJSON *t, const void *arg)
{
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_COUNT, "samples" }, { C_MS, "on_cpu_ms" },
		{ C_MS, "off_cpu_ms" }, { C_MS, "wall_ms" },
	};
	/* clang-format on */

	put_text(f, pt_jstr(t, "name"));
	CELL(f);
	put_count(f, t, "tid");
	CELL(f);
	put_yes_no(f, pt_jget(t, "python"));
	CELL(f);
	put_cells(f, t, cols, ARRAY_SIZE(cols));
}

static int put_threads(FILE *f, const cJSON *s)
{
	/* clang-format off */
	static const struct pt_mdtable_col cols[] = {
		{ "thread" }, { "tid", true }, { "Python" }, { "samples", true },
		{ "on-CPU ms", true }, { "off-CPU ms", true }, { "wall ms", true },
	};
	/* clang-format on */
	static const struct pt_mdtable t = {
		.cols = cols,
		.ncols = ARRAY_SIZE(cols),
		.row = thread_row,
		.key = thread_key,
		.max = TOP_THREADS,
		.more = "%zu more thread%s in summary.json.\n\n",
	};
	return pt_mdtable__write(f, &t, pt_jarr(s, "threads"), NULL, NULL);
}

static void put_py_function(FILE *f, const char *name, const char *file, const cJSON *o,
			    const char *line_key_name)
{
	double line;

	put_code(f, name);
	fputs(" (", f);
	put_code(f, basename_of(file));
	if (pt_jnum(o, line_key_name, &line))
		fprintf(f, ":%.0f", line);
	fputs(")", f);
}

static void sampled_function_row(FILE *f, const cJSON *fn, const void *arg)
{
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_MS, "wall_ms" },    { C_SHARE, "share" },     { C_MS, "on_cpu_ms" },
		{ C_MS, "off_cpu_ms" }, { C_COUNT, "samples" },
	};
	/* clang-format on */

	if (pt_jstr(fn, "symbol"))
		put_py_function(f, pt_jstr(fn, "symbol"), pt_jstr(fn, "object"), fn, "line");
	else
		put_code(f, pt_jstr(fn, "probe"));
	CELL(f);
	put_text(f, pt_jstr(fn, "timing"));
	CELL(f);
	put_cells(f, pt_jget(fn, "sampled"), cols, ARRAY_SIZE(cols));
}

static int put_sampled_functions(FILE *f, const cJSON *doc)
{
	/* clang-format off */
	static const struct pt_mdtable_col cols[] = {
		{ "function" }, { "timing" }, { "wall ms", true }, { "share", true },
		{ "on-CPU ms", true }, { "off-CPU ms", true }, { "samples", true },
	};
	/* clang-format on */
	static const struct pt_mdtable t = {
		.cols = cols,
		.ncols = ARRAY_SIZE(cols),
		.row = sampled_function_row,
		.key = sampled_function_key,
	};
	size_t n;
	int err = pt_mdtable__write(f, &t, pt_jarr(doc, "functions"), NULL, &n);

	if (err || !n)
		return err;
	fputs("Sampled times are inclusive: a function's time is every sample with it "
	      "anywhere on the stack, once per sample even when it recurses. Share is wall "
	      "time over the ",
	      f);
	put_fixed(f, pt_jget(doc, "meta"), "duration_s", 3);
	fputs(" s window, summed over threads, so it can exceed 100%.\n\n", f);
	return 0;
}

/* A source line in a code span: indentation dropped and cut to about 80
 * characters (whole UTF-8 sequences), so the table stays readable. */
static void put_source(FILE *f, const char *s)
{
	char buf[SOURCE_CHARS * 4 + sizeof("…")];
	size_t n = 0, chars = 0;

	if (!s) {
		fputs(NA, f);
		return;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	for (; *s && n < SOURCE_CHARS * 4; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80 && chars++ == SOURCE_CHARS)
			break;
		buf[n++] = *s;
	}
	while (n && strchr(" \t\r\n", buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (*s && strspn(s, " \t\r\n") != strlen(s))
		strcat(buf, "…");
	if (buf[0])
		put_code(f, buf);
}

static void put_lines_calls(FILE *f, const cJSON *fn)
{
	const char *timing = pt_jstr(fn, "timing");

	if (timing && !strcmp(timing, "exact")) {
		fputs(" · calls ", f);
		put_count(f, fn, "calls");
		fputs(" (exact, ", f);
		put_ms(f, fn, "exact_total_ms");
		fputs(" ms total)", f);
	} else if (timing) {
		fputs(" · calls not counted (", f);
		put_text(f, timing);
		fputs(")", f);
	}
}

static void line_row(FILE *f, const cJSON *l, const void *arg)
{
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_COUNT, "line" },   { C_MS, "wall_ms" },    { C_SHARE, "share" },
		{ C_MS, "on_cpu_ms" }, { C_MS, "off_cpu_ms" },
	};
	/* clang-format on */

	put_cells(f, l, cols, ARRAY_SIZE(cols));
	CELL(f);
	put_source(f, pt_jstr(l, "text"));
}

static int put_top_lines(FILE *f, const cJSON *fn)
{
	/* clang-format off */
	static const struct pt_mdtable_col cols[] = {
		{ "line", true }, { "wall ms", true }, { "% of function", true },
		{ "on-CPU ms", true }, { "off-CPU ms", true }, { "source" },
	};
	/* clang-format on */
	static const struct pt_mdtable t = {
		.cols = cols,
		.ncols = ARRAY_SIZE(cols),
		.row = line_row,
		.key = line_key,
		.max = TOP_LINES,
		.more = "%zu more line%s with time in lines.txt.\n\n",
		.none = "No sample fell in this function.\n\n",
	};
	double first, last;

	fputs("### Top lines of ", f);
	put_code(f, pt_jstr(fn, "function"));
	fputs(" (", f);
	put_code(f, basename_of(pt_jstr(fn, "file")));
	if (pt_jnum(fn, "first_line", &first)) {
		fprintf(f, ":%.0f", first);
		if (pt_jnum(fn, "last_line", &last) && last != first)
			fprintf(f, "–%.0f", last);
	}
	fputs(")\n\n", f);

	fputs("wall ", f);
	put_ms(f, fn, "wall_ms");
	fputs(" ms (", f);
	put_share(f, fn, "share");
	fputs(" of the window) · on-CPU ", f);
	put_ms(f, fn, "on_cpu_ms");
	fputs(" ms · off-CPU ", f);
	put_ms(f, fn, "off_cpu_ms");
	fputs(" ms · ", f);
	put_count(f, fn, "samples");
	fputs(" samples", f);
	put_lines_calls(f, fn);
	fputs("\n\n", f);
	if (pt_jstr(fn, "source_error")) {
		fputs("Source unavailable: ", f);
		put_text(f, pt_jstr(fn, "source_error"));
		fputs(".\n\n", f);
	}

	return pt_mdtable__write(f, &t, pt_jarr(fn, "lines"), NULL, NULL);
}

/* ---- Top functions and lines (sampled): summary.json's top ---- */

#define TOP_MD 20

static void top_function_row(FILE *f, const cJSON *e, const void *arg)
{
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_MS, "on_cpu_ms", "self" }, { C_SHARE, "self_cpu_share" },
		{ C_MS, "on_cpu_ms", "total" }, { C_SHARE, "total_cpu_share" },
		{ C_MS, "wall_ms", "self" },   { C_MS, "wall_ms", "total" },
	};
	/* clang-format on */

	put_py_function(f, pt_jstr(e, "function"), pt_jstr(e, "file"), e, "first_line");
	CELL(f);
	put_cells(f, e, cols, ARRAY_SIZE(cols));
}

static int put_top_functions(FILE *f, const cJSON *top)
{
	/* clang-format off */
	static const struct pt_mdtable_col cols[] = {
		{ "function" }, { "self CPU ms", true }, { "self CPU %", true },
		{ "total CPU ms", true }, { "total CPU %", true },
		{ "self wall ms", true }, { "total wall ms", true },
	};
	/* clang-format on */
	static const struct pt_mdtable t = {
		.cols = cols,
		.ncols = ARRAY_SIZE(cols),
		.row = top_function_row,
		.max = TOP_MD,
		.intro = "By the time spent in the function itself (self: it was the innermost "
			 "frame); total adds its callees. CPU is on-CPU time, wall adds off-CPU "
			 "time (asleep, waiting for I/O, a lock or the GIL); % is of all on-CPU "
			 "time sampled.\n\n",
		.none = "No Python function was sampled.\n\n",
	};
	double seen;
	size_t all;
	int err;

	fputs("## Top functions (sampled)\n\n", f);
	err = pt_mdtable__write(f, &t, pt_jarr(top, "functions"), NULL, &all);
	if (err || all <= TOP_MD || !pt_jnum(top, "functions_seen", &seen))
		return err;
	if (seen == (double)all)
		fprintf(f, "summary.json's `top` lists all %zu.\n\n", all);
	else
		fprintf(f,
			"%.0f functions were sampled; summary.json's `top` lists the first "
			"%zu.\n\n",
			seen, all);
	return 0;
}

static void top_line_row(FILE *f, const cJSON *e, const void *arg)
{
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_MS, "on_cpu_ms", "self" }, { C_SHARE, "self_cpu_share" },
		{ C_MS, "wall_ms", "self" },   { C_MS, "wall_ms", "total" },
	};
	/* clang-format on */
	double ln;

	put_code(f, basename_of(pt_jstr(e, "file")));
	if (pt_jnum(e, "line", &ln))
		fprintf(f, ":%.0f", ln);
	CELL(f);
	put_code(f, pt_jstr(e, "function"));
	CELL(f);
	put_cells(f, e, cols, ARRAY_SIZE(cols));
}

static int put_top_lines_all(FILE *f, const cJSON *top)
{
	/* clang-format off */
	static const struct pt_mdtable_col cols[] = {
		{ "line" }, { "function" }, { "self CPU ms", true }, { "self CPU %", true },
		{ "self wall ms", true }, { "total wall ms", true },
	};
	/* clang-format on */
	static const struct pt_mdtable t = {
		.cols = cols,
		.ncols = ARRAY_SIZE(cols),
		.row = top_line_row,
		.max = TOP_MD,
		.intro = "## Top lines (sampled)\n\n"
			 "By the time spent on the line itself, as for functions (lines.txt has "
			 "whole functions, line by line).\n\n",
	};
	return pt_mdtable__write(f, &t, pt_jarr(top, "lines"), NULL, NULL);
}

static int put_top(FILE *f, const cJSON *doc)
{
	const cJSON *top = pt_jget(doc, "top");
	int err;

	if (!cJSON_IsObject(top))
		return 0;
	err = put_top_functions(f, top);
	return err ? err : put_top_lines_all(f, top);
}

/* The files written next to summary.json from the same samples. */
static void put_sampling_outputs(FILE *f, const cJSON *doc, const cJSON *s)
{
	const cJSON *out = pt_jget(s, "outputs"), *lines = pt_jarr(doc, "lines");
	const char *folded = pt_jstr(out, "folded"), *svg = pt_jstr(out, "svg");
	bool any = false;

	if (lines && cJSON_GetArraySize(lines)) {
		fputs("Also written next to summary.json: `lines.txt` (time per source line, in "
		      "line\\_profiler's layout)",
		      f);
		any = true;
	}
	if (folded) {
		fputs(any ? ", " : "Also written next to summary.json: ", f);
		put_code(f, folded);
		fputs(" (folded stacks, for flamegraph.pl or speedscope)", f);
		any = true;
	}
	if (svg) {
		fputs(any ? ", " : "Also written next to summary.json: ", f);
		put_code(f, svg);
		fputs(" (flame graph of on-CPU time)", f);
		any = true;
	}
	if (pt_jstr(out, "svg_wall")) {
		fputs(any ? ", " : "Also written next to summary.json: ", f);
		put_code(f, pt_jstr(out, "svg_wall"));
		fputs(" (flame graph of wall time: off-CPU stacks under `[off-cpu]`)", f);
		any = true;
	}
	if (any)
		fputs(".\n\n", f);
}

static int put_sampling(FILE *f, const cJSON *doc)
{
	const cJSON *s = sampling_of(doc), *fn;
	int err;

	if (!s)
		return 0;
	fputs("## Host time (sampled)\n\n", f);
	put_lost_warning(f, s);
	put_sampling_totals(f, s);
	err = put_threads(f, s);
	if (!err)
		err = put_sampled_functions(f, doc);
	cJSON_ArrayForEach(fn, pt_jarr(doc, "lines"))
	{
		if (!err && cJSON_IsObject(fn))
			err = put_top_lines(f, fn);
	}
	if (!err)
		put_sampling_outputs(f, doc, s);
	return err;
}

/* proftrace's own threads in the target: apart from every figure. */
static void put_own_threads(FILE *f, const cJSON *own)
{
	const cJSON *arr = pt_jarr(own, "threads"), *t;
	int n = arr ? cJSON_GetArraySize(arr) : 0, i = 0;
	double on, off;

	if (!n)
		return;
	fputs("proftrace's own thread", f);
	fputs(n == 1 ? " in the target, left out of every figure, table and flame graph above: "
		     : "s in the target, left out of every figure, table and flame graph above: ",
	      f);
	cJSON_ArrayForEach(t, arr)
	{
		fputs(i++ ? "; " : "", f);
		put_code(f, pt_jstr(t, "name"));
		fputs(" (tid ", f);
		put_count(f, t, "tid");
		fputs(")", f);
		if (pt_jnum(t, "on_cpu_ms", &on) && pt_jnum(t, "off_cpu_ms", &off))
			fprintf(f, " %.1f ms on the CPU, %.1f ms off it", on, off);
	}
	if (pt_jnum(own, "on_cpu_ms", &on) && pt_jnum(own, "off_cpu_ms", &off) && n > 1)
		fprintf(f, " (together %.1f ms on the CPU, %.1f ms off it)", on, off);
	fputs(".\n\n", f);
}

/* The host held this VM's CPUs for a part of the run (steal): said from
 * 1% of them on, with what it did to the samples: a sample whose timer it
 * held counts the periods missed off the CPU (bpf/sampleclock.h). */
static void put_steal(FILE *f, const cJSON *s)
{
	double ms, share, late = 0, late_ms = 0;

	if (!pt_jnum(s, "host_steal_ms", &ms) || !pt_jnum(s, "host_steal_share", &share) ||
	    share < 0.01)
		return;
	fprintf(f,
		"**Host steal:** the hypervisor held this machine's CPUs for %.1f ms during the "
		"run (%.1f%% of them)",
		ms, 100 * share);
	if (pt_jnum(s, "late_samples", &late) && late > 0 && pt_jnum(s, "late_ms", &late_ms))
		fprintf(f,
			". %.0f on-CPU samples came late for it: the %.1f ms of periods they "
			"missed count off the CPU at their stacks, so sampled wall times hold "
			"it and on-CPU times are what the threads ran",
			late, late_ms);
	else
		fputs("; no sample came late for it", f);
	fputs(". Probed times are exact wall time: steal inside a call is in them, as the "
	      "program lived it.\n\n",
	      f);
}

static void put_sampling_health(FILE *f, const cJSON *doc)
{
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_COUNT, "lost_samples" },   { C_COUNT, "unreadable_stacks" },
		{ C_COUNT, "truncated_stacks" }, { C_COUNT, "unknown_frames" },
		{ C_COUNT, "threads_sampled" }, { C_COUNT, "threads_failed" },
	};
	/* clang-format on */
	const cJSON *s = sampling_of(doc);

	if (!s)
		return;
	fputs("Stack sampling:\n\n", f);
	put_lost_warning(f, s);
	put_steal(f, s);
	fputs("| lost samples | unreadable stacks | truncated stacks | unknown frames "
	      "| threads sampled | threads failed |\n"
	      "|---:|---:|---:|---:|---:|---:|\n"
	      "| ",
	      f);
	put_cells(f, s, cols, ARRAY_SIZE(cols));
	fputs(" |\n\n", f);
	put_own_threads(f, pt_jget(s, "proftrace_threads"));
}

/* The probes' estimated cost (summary.json overhead). */
static void put_overhead_health(FILE *f, const cJSON *ov)
{
	double added, share, per, sshare, cpu, cshare, att, acpu;

	if (!ov)
		return;
	if (!cJSON_IsTrue(pt_jget(ov, "calibrated"))) {
		fputs("Probe cost: not estimated (", f);
		put_text(f, pt_jstr(ov, "why") ? pt_jstr(ov, "why") : "no calibration");
		fputs(").\n\n", f);
		return;
	}
	if (!pt_jnum(ov, "added_ms", &added) || !pt_jnum(ov, "added_share", &share))
		return;
	fprintf(f, "Estimated probe cost: %.3f ms of the target's CPU (%.2f%% of the run)", added,
		100 * share);
	if (pt_jnum(ov, "per_step_ms", &per) && pt_jnum(ov, "step_share", &sshare))
		fprintf(f, ", %.4f ms per step (%.2f%% of step time)", per, 100 * sshare);
	fputs("; `corrected_*` figures in summary.json take it out (an estimate: "
	      "docs/summary.md#overhead).",
	      f);
	if (pt_jnum(ov, "attach_ms", &att) && pt_jnum(ov, "attach_cpu_ms", &acpu) &&
	    pt_jnum(ov, "steady_cpu_ms", &cpu) && pt_jnum(ov, "steady_cpu_share", &cshare))
		fprintf(f,
			" proftrace itself: %.0f ms to attach (%.0f ms of CPU), then %.0f ms of "
			"CPU while attached (%.1f%% of one CPU).",
			att, acpu, cpu, 100 * cshare);
	else if (pt_jnum(ov, "proftrace_cpu_ms", &cpu) &&
		 pt_jnum(ov, "proftrace_cpu_share", &cshare))
		fprintf(f, " proftrace itself used %.0f ms of CPU (%.1f%% of one CPU).", cpu,
			100 * cshare);
	fputs("\n\n", f);
}

static void put_health(FILE *f, const cJSON *doc)
{
	const cJSON *h = pt_jget(doc, "health"), *arr = pt_jarr(h, "unattached"), *u;

	/* clang-format off */
	static const struct cell cols[] = {
		{ C_COUNT, "events" },         { C_COUNT, "dropped_events" },
		{ C_COUNT, "depth_overflow" }, { C_COUNT, "unwound" },
		{ C_COUNT, "orphan_returns" }, { C_COUNT, "lost_calls" },
		{ C_COUNT, "steps_incomplete" }, { C_COUNT, "probes_attached" },
	};
	/* clang-format on */

	fputs("## Health\n\n", f);
	put_dropped_warning(f, h);
	fputs("| events | dropped | depth overflow | unwound | orphan returns | lost calls "
	      "| incomplete steps | probes attached |\n"
	      "|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	      f);
	fputs("| ", f);
	put_cells(f, h, cols, ARRAY_SIZE(cols));
	fputs("/", f);
	put_count(f, h, "probes_requested");
	fputs(" |\n\n", f);

	{
		double n;

		if (pt_jnum(h, "py_calls_unresolved", &n) && n > 0)
			fprintf(f,
				"%.0f Python call%s ran code that was freed (and its address "
				"reused) before proftrace could read it: not attributed to any "
				"function.\n\n",
				n, plural(n));
	}
	put_sampling_health(f, doc);
	put_overhead_health(f, pt_jget(doc, "overhead"));
	if (!arr)
		return;
	if (!cJSON_GetArraySize(arr)) {
		fputs("All probes attached.\n", f);
		return;
	}
	fputs("Unattached probes:\n\n", f);
	cJSON_ArrayForEach(u, arr)
	{
		const char *sym = pt_jstr(u, "symbol"), *obj = pt_jstr(u, "object");

		fputs("- ", f);
		put_code(f, pt_jstr(u, "probe"));
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
		put_text(f, pt_jstr(u, "reason"));
		fputs("\n", f);
	}
}

/* One line per value with its coverage and why some are missing. */
static void put_value_health(FILE *f, const char *role, const cJSON *v)
{
	const cJSON *m = pt_jget(v, "missing"), *it;
	double n;

	fprintf(f, "- %s = ", role);
	put_code(f, pt_jstr(v, "expr"));
	fputs(" on ", f);
	put_code(f, pt_jstr(v, "probe"));
	fputs(": read ", f);
	put_count(f, v, "read");
	if (pt_jnum(v, "steps_without_value", &n) && n > 0)
		fprintf(f, ", %.0f counted step%s without it", n, plural(n));
	if (pt_jnum(v, "outside_step", &n) && n > 0)
		fprintf(f, ", %.0f read outside any step (not used)", n);
	if (pt_jnum(v, "missing_total", &n) && n > 0) {
		fprintf(f, ", %.0f missing:", n);
		cJSON_ArrayForEach(it, m) if (cJSON_IsNumber(it))
			fprintf(f, " %s %.0f", it->string, it->valuedouble);
	}
	fputs("\n", f);
}

static void put_tokens(FILE *f, const cJSON *doc)
{
	const cJSON *vals = pt_jget(doc, "values"), *st = pt_jget(doc, "stats");
	const cJSON *bins = pt_jarr(doc, "decode_length_buckets"), *b, *it;
	static const char *const roles[] = { "tokens", "kv_len", "batch" };
	double v;

	if (!vals)
		return;
	fputs("## Tokens and sequence lengths\n\n", f);
	fputs("| tokens | tok/s | steps with tokens | batch mean | kv_len mean |\n"
	      "|---:|---:|---:|---:|---:|\n| ",
	      f);
	put_count(f, st, "tokens");
	CELL(f);
	put_fixed(f, st, "tok_per_s", 1);
	CELL(f);
	put_count(f, st, "steps_with_tokens");
	CELL(f);
	put_fixed(f, st, "batch_mean", 2);
	CELL(f);
	put_fixed(f, st, "kv_len_mean", 1);
	fputs(" |\n\n", f);
	fputs("tok/s: tokens over the summed time of the counted steps that have a token "
	      "count.\n\n",
	      f);
	if (bins) {
		static const struct cell cols[] = {
			{ C_COUNT, "steps" }, { C_MS, "mean_ms" }, { C_MS, "p50_ms" },
			{ C_MS, "p90_ms" },   { C_MS, "p99_ms" },  { C_COUNT, "tokens" },
		};

		fputs("| kv_len | steps | mean ms | p50 ms | p90 ms | p99 ms | tokens | tok/s |\n"
		      "|---|---:|---:|---:|---:|---:|---:|---:|\n",
		      f);
		cJSON_ArrayForEach(b, bins)
		{
			fputs("| ", f);
			put_count(f, b, "kv_min");
			if (pt_jnum(b, "kv_max", &v))
				fprintf(f, "–%.0f", v);
			else
				fputs("+", f);
			CELL(f);
			put_cells(f, b, cols, ARRAY_SIZE(cols));
			CELL(f);
			put_fixed(f, b, "tok_per_s", 1);
			fputs(" |\n", f);
		}
		fputs("\n", f);
	}
	for (size_t i = 0; i < 3; i++)
		if ((it = pt_jget(vals, roles[i])))
			put_value_health(f, roles[i], it);
	cJSON_ArrayForEach(it, pt_jarr(vals, "count_tokens"))
		put_value_health(f, "count tokens", it);
	if (pt_jnum(vals, "records_dropped", &v) && v > 0)
		fprintf(f,
			"- %.0f value record%s lost (ring buffer full): raise `set ringbuf_mb`\n",
			v, plural(v));
	fputs("\n", f);
}

/* "mean ± std" of a {mean, std} object, at prec decimals */
static void put_pm(FILE *f, const cJSON *o, int prec)
{
	double m, sd;

	if (!pt_jnum(o, "mean", &m) || !pt_jnum(o, "std", &sd)) {
		fputs(NA, f);
		return;
	}
	fprintf(f, "%.*f ± %.*f", prec, m, prec, sd);
}

#define PT_MD_MAX_RUNS 50

/* arg: whether the table has the tok/s column */
static void run_row(FILE *f, const cJSON *run, const void *tok)
{
	/* clang-format off */
	static const struct cell cols[] = {
		{ C_RATE, "start_s" }, { C_RATE, "duration_s" },
		{ C_COUNT, "steps" },  { C_RATE, "steps_per_s" }, { C_MS, "mean_ms" },
		{ C_MS, "p50_ms" },    { C_MS, "p99_ms" },
	};
	/* clang-format on */

	put_count(f, run, "index");
	if (cJSON_IsTrue(pt_jget(run, "warmup")))
		fputs(" (warmup)", f);
	CELL(f);
	put_cells(f, run, cols, ARRAY_SIZE(cols));
	if (*(const bool *)tok) {
		CELL(f);
		put_fixed(f, run, "tok_per_s", 1);
	}
}

static int put_runs(FILE *f, const cJSON *doc)
{
	const cJSON *runs = pt_jarr(doc, "runs"), *A = pt_jget(doc, "runs_aggregate"), *it;
	/* clang-format off */
	static const struct pt_mdtable_col cols[] = {
		{ "run", true }, { "start s", true }, { "duration s", true },
		{ "steps", true }, { "steps/s", true }, { "mean ms", true },
		{ "p50 ms", true }, { "p99 ms", true }, { "tok/s", true },
	};
	static const char *const metrics[][2] = {
		{ "steps", "steps" },         { "duration_s", "duration s" },
		{ "steps_per_s", "steps/s" }, { "mean_ms", "mean ms" },
		{ "p50_ms", "p50 ms" },       { "p90_ms", "p90 ms" },
		{ "p99_ms", "p99 ms" },       { "tok_per_s", "tok/s" },
	};
	/* clang-format on */
	bool tok = pt_jget(A, "tok_per_s") != NULL;
	/* the header even without a run; the last column, tok/s, only when
	 * the runs counted tokens */
	const struct pt_mdtable t = {
		.cols = cols,
		.ncols = ARRAY_SIZE(cols) - !tok,
		.row = run_row,
		.max = PT_MD_MAX_RUNS,
		.more = "(%zu more in summary.json)\n\n",
		.head_alone = true,
	};
	double n, gap = 0;
	int err;

	if (!runs || !A)
		return 0;
	fputs("## Runs\n\n", f);
	pt_jnum(A, "run_gap_ms", &gap);
	n = (double)cJSON_GetArraySize(runs);
	fprintf(f, "%.0f run%s: a run ends after %.0f ms without a step (`set run_gap_ms`).", n,
		plural(n), gap);
	if (pt_jnum(A, "warmup_runs_skipped", &n) && n > 0)
		fprintf(f,
			" The first %.0f %s warmup (`set warmup_runs`) and not in the "
			"across-run figures.",
			n, n == 1 ? "is" : "are");
	fputs("\n\n", f);
	err = pt_mdtable__write(f, &t, runs, &tok, NULL);
	if (err)
		return err;
	fputs("Across runs (mean ± std):\n\n| figure | per run |\n|---|---:|\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(metrics); i++) {
		if (!pt_jget(A, metrics[i][0]))
			continue;
		fprintf(f, "| %s | ", metrics[i][1]);
		put_pm(f, pt_jget(A, metrics[i][0]), 3);
		fputs(" |\n", f);
	}
	cJSON_ArrayForEach(it, pt_jarr(A, "buckets"))
	{
		const cJSON *sh = pt_jget(it, "share");
		double m, sd;

		fputs("| ", f);
		put_text(f, pt_jstr(it, "name"));
		fputs(" ms/step (share) | ", f);
		put_pm(f, pt_jget(it, "avg_ms_per_step"), 3);
		if (pt_jnum(sh, "mean", &m) && pt_jnum(sh, "std", &sd))
			fprintf(f, " (%.1f%% ± %.1f%%)", m * 100, sd * 100);
		fputs(" |\n", f);
	}
	fputs("\n", f);
	return 0;
}

static void put_gpu_health(FILE *f, const cJSON *g)
{
	const cJSON *rec = pt_jget(g, "records"), *c = pt_jget(pt_jget(g, "shim"), "conflict");
	static const char *const keys[] = { "ring_dropped", "cupti_dropped", "lost",
					    "invalid",	    "unknown_kinds", "names_lost" };
	double v;
	bool any = false;

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (!pt_jnum(rec, keys[i], &v) || v <= 0)
			continue;
		fprintf(f, "%s%s %.0f", any ? ", " : "GPU records not in these figures: ", keys[i],
			v);
		any = true;
	}
	if (any)
		fputs(".\n\n", f);
	if (pt_jstr(g, "segment_lost")) {
		fputs("**GPU ring lost:** ", f);
		put_text(f, pt_jstr(g, "segment_lost"));
		fputs(".\n\n", f);
	}
	if (cJSON_IsObject(c)) {
		fputs("**CUPTI conflict:** ", f);
		put_text(f, pt_jstr(c, "call"));
		fputs(" failed with ", f);
		put_text(f, pt_jstr(c, "result"));
		fputs(" (another profiler such as Nsight Systems or torch.profiler holds CUPTI); "
		      "the server ran on without GPU records.\n\n",
		      f);
	}
	if (pt_jnum(g, "unmatched", &v) && v > 0)
		fprintf(f,
			"%.0f piece%s of GPU work had no launch call record: counted in busy "
			"time, in no step or bucket.\n\n",
			v, plural(v));
	/* the memory bound (docs/gpu.md, "The memory bound") */
	if (pt_jnum(g, "records_late", &v) && v > 0)
		fprintf(f,
			"%.0f GPU record%s came after the memory bound's fold had settled "
			"their time: in the counts, in no step or bucket.\n\n",
			v, plural(v));
	if (pt_jnum(g, "records_not_held", &v) && v > 0)
		fprintf(f,
			"%.0f GPU record%s not held (the memory bound, no fold could free "
			"any): in no figure.\n\n",
			v, v == 1 ? " was" : "s were");
}

/* gpu.regions, once import-regions ran (docs/gpu.md). */
static void put_gpu_regions(FILE *f, const cJSON *g)
{
	const cJSON *r = pt_jget(g, "regions"), *al = pt_jget(r, "alignment"), *it;
	double v, n;

	if (!cJSON_IsObject(r))
		return;
	fputs("### Regions inside kernels\n\n", f);
	put_count(f, r, "launches_matched");
	fputs(" of ", f);
	put_count(f, r, "launches");
	fputs(" region launches matched to kernel launches (", f);
	put_count(f, r, "regions");
	fputs(" regions)", f);
	if (!pt_jnum(r, "launches_matched", &v) || v <= 0) {
		fputs(".\n\n", f);
		goto notes;
	}
	fputs("; clocks aligned ", f);
	fputs(!strcmp(pt_jstr(al, "mode") ? pt_jstr(al, "mode") : "", "one_offset_per_clock")
		      ? "by one offset per clock"
		      : "launch by launch (no one offset fitted)",
	      f);
	if (pt_jnum(al, "regions_outside", &n) && n > 0 && pt_jnum(al, "residual_max_ns", &v))
		fprintf(f,
			"; %.0f region%s fell outside %s kernel, by at most %.0f ns (clamped "
			"in trace.json)",
			n, plural(n), n == 1 ? "its" : "their", v);
	fputs(".\n\n| kernel | tag | count | launches | total ms | per launch: mean ms | p50 ms "
	      "| p99 ms | share of kernel |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
	      f);
	cJSON_ArrayForEach(it, pt_jarr(r, "tags"))
	{
		/* clang-format off */
		static const struct cell cols[] = {
			{ C_COUNT, "count" }, { C_COUNT, "launches" }, { C_MS, "total_ms" },
			{ C_MS, "mean_ms" },  { C_MS, "p50_ms" },      { C_MS, "p99_ms" },
			{ C_SHARE, "share_of_kernel" },
		};
		/* clang-format on */

		fputs("| ", f);
		put_code(f, pt_jstr(it, "kernel"));
		CELL(f);
		put_text(f, pt_jstr(it, "tag"));
		CELL(f);
		put_cells(f, it, cols, ARRAY_SIZE(cols));
		fputs(" |\n", f);
	}
	fputs("\n", f);
notes:
	cJSON_ArrayForEach(it, pt_jarr(r, "unmatched"))
	{
		fputs("- not matched: ", f);
		put_text(f, pt_jstr(it, "file"));
		fputs(" (kernel ", f);
		put_text(f, pt_jstr(it, "kernel"));
		fputs("): ", f);
		put_text(f, pt_jstr(it, "why"));
		fputs("\n", f);
	}
	cJSON_ArrayForEach(it, pt_jarr(r, "overflowed"))
	{
		fputs("- the profiler's buffer overflowed: ", f);
		put_text(f, pt_jstr(it, "file"));
		fputs(" (", f);
		put_count(f, it, "recorded");
		fputs(" events recorded, ", f);
		put_count(f, it, "read");
		fputs(" read)\n", f);
	}
	if (cJSON_GetArraySize(pt_jarr(r, "unmatched")) ||
	    cJSON_GetArraySize(pt_jarr(r, "overflowed")))
		fputs("\n", f);
}

static void put_gpu(FILE *f, const cJSON *doc)
{
	const cJSON *g = pt_jget(doc, "gpu"), *st, *it;
	double v;

	if (!g)
		return;
	fputs("## GPU\n\n", f);
	if (strcmp(pt_jstr(g, "source") ? pt_jstr(g, "source") : "", "cupti-shim")) {
		fputs("No GPU stream: ", f);
		put_text(f, pt_jstr(g, "why"));
		fputs(".\n\n", f);
		return;
	}
	st = pt_jget(g, "steps");
	fputs("| kernels | copies | memsets | GPU busy ms | busy share | step time GPU idle "
	      "(host-bound) | launch to start p50 ms |\n|---:|---:|---:|---:|---:|---:|---:|\n| ",
	      f);
	put_count(f, g, "kernels");
	CELL(f);
	put_count(f, g, "copies");
	CELL(f);
	put_count(f, g, "memsets");
	CELL(f);
	put_ms(f, g, "busy_ms");
	CELL(f);
	put_share(f, g, "busy_share");
	CELL(f);
	put_share(f, st, "host_bound_share");
	CELL(f);
	put_ms(f, pt_jget(g, "launch_delay"), "p50_ms");
	fputs(" |\n\n", f);
	if (pt_jnum(st, "steps", &v) && v > 0) {
		fputs("Per counted step: GPU busy ", f);
		put_ms(f, pt_jget(st, "busy"), "mean_ms");
		fputs(" ms, idle ", f);
		put_ms(f, pt_jget(st, "idle"), "mean_ms");
		fputs(" ms (p90 ", f);
		put_ms(f, pt_jget(st, "idle"), "p90_ms");
		fputs(" ms) on average; ", f);
		put_count(f, st, "steps_with_gpu");
		fputs(" steps launched GPU work.\n\n", f);
	}
	fputs("| bucket | GPU work launched | GPU ms |\n|---|---:|---:|\n", f);
	cJSON_ArrayForEach(it, pt_jarr(g, "buckets"))
	{
		if (!pt_jnum(it, "work_launched", &v) || v <= 0)
			continue;
		fputs("| ", f);
		put_text(f, pt_jstr(it, "name"));
		CELL(f);
		put_count(f, it, "work_launched");
		CELL(f);
		put_ms(f, it, "gpu_ms");
		fputs(" |\n", f);
	}
	fputs("\n| kernel | count | total ms | mean ms | max ms | share of busy |\n"
	      "|---|---:|---:|---:|---:|---:|\n",
	      f);
	cJSON_ArrayForEach(it, pt_jarr(g, "top_kernels"))
	{
		/* clang-format off */
		static const struct cell cols[] = {
			{ C_COUNT, "count" }, { C_MS, "total_ms" }, { C_MS, "mean_ms" },
			{ C_MS, "max_ms" },   { C_SHARE, "share_of_busy" },
		};
		/* clang-format on */

		const char *name = pt_jstr(it, "name");
		char buf[KERNEL_NAME_WIDTH + 1];

		fputs("| ", f);
		put_code(f, name ? pt_demangle__short(name, KERNEL_NAME_WIDTH, buf, sizeof(buf))
				 : NULL);
		CELL(f);
		put_cells(f, it, cols, ARRAY_SIZE(cols));
		fputs(" |\n", f);
	}
	fputs("\n", f);
	put_gpu_regions(f, g);
	put_gpu_health(f, g);
}

/* No targets file: what was sampled is the report. */
static int put_just_look(FILE *f, const cJSON *doc)
{
	int err;

	fputs("No targets file: every Python thread's stack was sampled, nothing was timed "
	      "exactly. Name the functions that matter in a targets file (`--targets`, "
	      "docs/targets.md) for exact calls, steps and buckets.\n\n",
	      f);
	err = put_top(f, doc);
	if (!err)
		err = put_sampling(f, doc);
	if (err)
		return err;
	fputs("## Health\n\n", f);
	put_sampling_health(f, doc);
	put_overhead_health(f, pt_jget(doc, "overhead"));
	return 0;
}

int pt_report_md__write(FILE *f, const struct cJSON *summary)
{
	int err;

	if (!f || !summary)
		return -EINVAL;
	put_header(f, summary);
	if (sampling_only(summary)) {
		err = put_just_look(f, summary);
		if (!err && (fflush(f) == EOF || ferror(f)))
			err = -EIO;
		return err;
	}
	put_pooled(f, summary);
	put_trace(f, summary);
	put_steps(f, summary);
	put_tokens(f, summary);
	put_buckets(f, summary);
	put_processes(f, summary);
	err = put_runs(f, summary);
	if (err)
		return err;
	put_gpu(f, summary);
	put_functions(f, summary);
	err = put_sampling(f, summary);
	if (!err)
		err = put_top(f, summary);
	if (err)
		return err;
	put_health(f, summary);
	if (fflush(f) == EOF || ferror(f))
		return -EIO;
	return 0;
}
