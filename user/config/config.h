/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * targets.conf, version 1 (docs/targets.md):
 *
 *   # comment
 *   step   <probe> [mode=call|iteration]
 *   bucket <domain.name> <probe> [<probe> ...]
 *   lines  <py-probe> [<py-probe> ...]
 *   set    <key> <value>
 *   count  tokens <probe> <expr>
 *
 * The parser takes a FILE* so tests feed fixtures; errors come back as one
 * line "file:line:col: error: ... (hint: ...)".
 */
#ifndef PT_CONFIG_H
#define PT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "valexpr.h"

enum pt_probe_kind {
	PT_PROBE_NATIVE = 1, /* native:<object>:<symbol> */
	PT_PROBE_PY = 2,     /* py:<module>.<Class>.<method>, py:<module>::<function> */
};

/* One distinct probe text. The same text used twice (step and bucket, two
 * buckets) is one spec with several roles. */
struct pt_probe_spec {
	enum pt_probe_kind kind;
	char *text;   /* as written, e.g. "native:libc.so*:malloc" */
	char *object; /* native: glob, or "exe"; py: module as a path, "a/b/c" */
	char *symbol; /* native: glob, version suffix stripped; py: function glob */
	char *cls;    /* py: class glob; NULL for module-level functions (::) */
	/* py:a.b.c, written without "::": also read as function c of module
	 * a.b, whose path this is ("a/b"); NULL: one reading only */
	char *alt_object;
	bool dotted;   /* py: written with a '.' before the function, not "::" */
	int line, col; /* first place it was written */
	bool is_step;
	bool is_lines;			/* named on a lines line: per-line report */
	unsigned long long bucket_mask; /* bit i: in buckets[i] */
	/* Values read at its calls: tokens=, kv_len=, batch= on the step
	 * line; count tokens lines. */
	struct pt_vexpr vals[PT_MAX_VALS];
	unsigned int nvals;
};

enum pt_step_mode {
	PT_STEP_CALL = 0,      /* entry to return of one call */
	PT_STEP_ITERATION = 1, /* entry to the next entry on the same thread */
};

#define PT_MAX_BUCKETS 64
#define PT_MAX_KV_BINS 32

/* How py: functions are timed (set python_mode). */
enum pt_python_mode {
	PT_PYMODE_AUTO =
		0, /* the agent where the process has it (or 3.14+ loads it), else sampled */
	PT_PYMODE_EVALFRAME, /* the frame probe (every call pays; c-entry-only where partial) */
	PT_PYMODE_SAMPLED,   /* sampled figures only */
	PT_PYMODE_AGENT,     /* the agent, or the process is not traced (exit 2) */
};

struct pt_bucket_cfg {
	char *name;   /* "engine.schedule" */
	char *domain; /* "engine" */
	int line;
};

struct pt_config {
	char *path;
	struct pt_probe_spec *probes; /* in order of first appearance */
	size_t nprobes;
	int step_probe; /* index into probes, -1 when there is no step line */
	enum pt_step_mode step_mode;
	struct pt_bucket_cfg *buckets; /* config order */
	size_t nbuckets;

	/* set <key> <value> */
	unsigned int warmup_steps; /* warmup_steps, default 0 */
	unsigned int ringbuf_mb;   /* ringbuf_mb, default 16, power of two 1..1024 */
	unsigned int poll_ms;	   /* poll_ms, default 20, 1..1000: ring drain period */
	bool prologue_skip;	   /* prologue_skip on|off, default on */
	bool ringbuf_wakeup;	   /* ringbuf_wakeup on|off, default off */
	/* py_session on|off, default on: probe the Python frame evaluator as
	 * one uprobe session where the kernel has them (6.13+), so frames
	 * that are not configured skip the return probe; off: always a
	 * uprobe/uretprobe pair (for benchmarks). */
	bool py_session;
	/* py_trampolines on|off, default on: on 3.8-3.11 the agent wraps each
	 * named function it can in a trampoline (shim/agent/tramp.h); off:
	 * the PEP 523 frame evaluator for every one (what every other call
	 * then pays: a lookup, and no inlined calls on 3.11) */
	bool py_trampolines;
	/* native_frames on|off, default on: stack samples unwind native frames
	 * too (C extensions, libtorch, libc) under the Python ones
	 * (docs/targets.md) */
	bool native_frames;
	unsigned int sample_hz;		 /* sample_hz, default 1000, 0: no sampling */
	enum pt_python_mode python_mode; /* python_mode auto|agent|evalframe|sampled */
	size_t nlines;			 /* probes named on lines lines */
	/* Tokens and sequence lengths (valexpr.h) */
	enum pt_vfn kv_reduce;		  /* kv_len_reduce mean|max|p50|p90|sum, default mean */
	uint64_t kv_bins[PT_MAX_KV_BINS]; /* kv_bins: lower bounds, [0] == 0, increasing */
	size_t nkv_bins;
	size_t nvals; /* expressions over all probes */
	/* Runs: bursts of steps separated by idle gaps */
	unsigned int run_gap_ms;  /* run_gap_ms, default 1000: no step for this long ends a run */
	unsigned int warmup_runs; /* warmup_runs, default 0: left out of runs_aggregate */
};

/* 0, or -EINVAL with a one-line message in err (no trailing newline). */
int pt_config__parse(struct pt_config *cfg, FILE *f, const char *path, char *err, size_t errlen);
/* Open and parse a file; -errno with a message when it cannot be read. */
int pt_config__load(struct pt_config *cfg, const char *path, char *err, size_t errlen);
void pt_config__free(struct pt_config *cfg);
/* No targets file: no probe, every setting at its default (path NULL);
 * the process's stacks are sampled only. */
void pt_config__sampling_only(struct pt_config *cfg);
/* A py: probe used as a step, in a bucket or read for values (it needs
 * every call to be seen, not samples). */
bool pt_config__py_has_roles(const struct pt_config *cfg);
/* Settings that cannot work together: 0, or -EINVAL with one line in err
 * (checked before anything starts). */
int pt_config__check_modes(const struct pt_config *cfg, char *err, size_t errlen);

#endif
