// SPDX-License-Identifier: BSD-2-Clause
#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "pprof.h"
#include "report_lines.h"
#include "util/util.h"

static int summary_json(FILE *f, const struct pt_outputs *o)
{
	return pt_summary__write_json(f, o->doc);
}

static int report_md(FILE *f, const struct pt_outputs *o)
{
	return pt_report_md__write(f, o->doc);
}

static int lines_txt(FILE *f, const struct pt_outputs *o)
{
	return pt_report_lines__write(f, o->doc);
}

/* lines.txt when a `lines` directive asked for it, or with no targets
 * file (the top functions' lines) */
static bool has_lines(const struct pt_outputs *o)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o->doc, "meta");

	const cJSON *mode = cJSON_GetObjectItemCaseSensitive(meta, "mode");

	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o->doc, "lines")) > 0 ||
	       (o->flame && cJSON_IsString(mode) && !strcmp(mode->valuestring, "sampling"));
}

static int stacks_folded(FILE *f, const struct pt_outputs *o)
{
	return pt_flame__write_folded(o->flame, f);
}

/* the same stacks for pprof, Pyroscope, Parca, Grafana (pprof.h) */
static int profile_pb(FILE *f, const struct pt_outputs *o)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o->doc, "meta");
	const cJSON *smp = cJSON_GetObjectItemCaseSensitive(meta, "sampling");
	const cJSON *t0 = cJSON_GetObjectItemCaseSensitive(meta, "start_unix_ns");
	const cJSON *dur = cJSON_GetObjectItemCaseSensitive(meta, "duration_s");
	const cJSON *per = cJSON_GetObjectItemCaseSensitive(smp, "period_ns");
	struct pt_pprof_opts po = { 0 };

	if (cJSON_IsNumber(t0))
		po.time_unix_ns = (uint64_t)t0->valuedouble;
	else if (cJSON_IsRaw(t0) && t0->valuestring)
		po.time_unix_ns = strtoull(t0->valuestring, NULL, 10);
	if (cJSON_IsNumber(dur))
		po.duration_ns = (uint64_t)(dur->valuedouble * 1e9);
	if (cJSON_IsNumber(per))
		po.period_us = (uint64_t)(per->valuedouble / 1e3);
	return pt_pprof__write(o->flame, f, &po);
}

static int flame_svg(FILE *f, const struct pt_outputs *o)
{
	return pt_flame__write_svg(o->flame_cpu, f, &o->svg);
}

static int flame_wall_svg(FILE *f, const struct pt_outputs *o)
{
	return pt_flame__write_svg(o->flame, f, &o->svg_wall);
}

static bool sampled(const struct pt_outputs *o)
{
	return o->flame != NULL && o->flame_cpu != NULL;
}

static int trace_json(FILE *f, const struct pt_outputs *o)
{
	return pt_trace__write(o->trace, f, &o->trace_opts);
}

static bool traced(const struct pt_outputs *o)
{
	return o->trace != NULL;
}

/* clang-format off */
const struct pt_emitter pt_emitters[] = {
	{ "summary.json", summary_json, NULL },
	{ "report.md", report_md, NULL },
	{ "lines.txt", lines_txt, has_lines },
	{ "stacks.folded", stacks_folded, sampled },
	{ "flame.svg", flame_svg, sampled },
	{ "trace.json", trace_json, traced },
	{ "profile.pb.gz", profile_pb, sampled },
	{ "flame-wall.svg", flame_wall_svg, sampled },
};
/* clang-format on */
const size_t pt_nemitters = ARRAY_SIZE(pt_emitters);
