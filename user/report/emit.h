/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every output file of a run, as one table (pt_emitters[]): summary.json,
 * report.md and lines.txt render from summary.json's document, stacks.folded
 * and flame.svg from the sampled call tree, trace.json from the events kept
 * while the run went. The run writes each wanted entry through
 * report/outdir.h (one safe way to write a file). No BPF ABI here: what
 * comes in is a document, a tree and a trace. flame.svg is on-CPU time
 * (as py-spy draws by default), flame-wall.svg wall time with the
 * off-CPU stacks under [off-cpu]; stacks.folded has every stack, and
 * profile.pb.gz both (sample types cpu and wall).
 */
#ifndef PT_EMIT_H
#define PT_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "aggregate/flame.h"
#include "trace.h"

struct cJSON;

/* What the outputs are rendered from, built once at the end of a run. */
struct pt_outputs {
	const struct cJSON *doc;      /* summary.json's document */
	const struct pt_flame *flame; /* sampled stacks, wall time; NULL: not sampled */
	/* the same without the off-CPU stacks: on-CPU time (flame.svg) */
	const struct pt_flame *flame_cpu;
	struct pt_flame_svg_opts svg, svg_wall;
	struct pt_trace *trace; /* --trace; NULL: not asked for */
	struct pt_trace_write_opts trace_opts;
};

struct pt_emitter {
	const char *filename;
	int (*write)(FILE *f, const struct pt_outputs *o); /* 0 or -errno */
	bool (*wanted)(const struct pt_outputs *o);	   /* NULL: always */
};

extern const struct pt_emitter pt_emitters[];
extern const size_t pt_nemitters;

/* The renderers of the document (also for --json on stdout). */
int pt_summary__write_json(FILE *f, const struct cJSON *summary);
int pt_report_md__write(FILE *f, const struct cJSON *summary);

#endif
