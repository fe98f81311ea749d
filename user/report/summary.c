// SPDX-License-Identifier: BSD-2-Clause
/*
 * summary.json: the one document every report format renders from
 * (docs/summary.md describes each key). Times are ms rounded to whole ns,
 * shares are fractions; a figure that was not measured is null, never 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "summary.h"
#include "emit.h"
#include "aggregate/skew.h"
#include "report_lines.h"
#include "util/util.h"

/*
 * cJSON_Add*() return NULL on allocation failure and leave the key out.
 * Recording the first failure here lets the builder read as a plain list of
 * keys and still refuse to hand back a document with holes in it.
 */
struct jb {
	int err;
};

static cJSON *jb_check(struct jb *b, cJSON *item)
{
	if (!item)
		b->err = -ENOMEM;
	return item;
}

static void jb_null(struct jb *b, cJSON *o, const char *k)
{
	jb_check(b, cJSON_AddNullToObject(o, k));
}

static void jb_num(struct jb *b, cJSON *o, const char *k, double v)
{
	jb_check(b, cJSON_AddNumberToObject(o, k, v));
}

static void jb_bool(struct jb *b, cJSON *o, const char *k, bool v)
{
	jb_check(b, cJSON_AddBoolToObject(o, k, v));
}

/* NULL strings become null: an unknown object path is not an empty one. */
static void jb_str(struct jb *b, cJSON *o, const char *k, const char *s)
{
	if (s)
		jb_check(b, cJSON_AddStringToObject(o, k, s));
	else
		jb_null(b, o, k);
}

/* Rounded to 6 decimals (whole ns for ms, whole µs for s) so the file does
 * not claim a precision the clock never had. */
static double round6(double v)
{
	return round(v * 1e6) / 1e6;
}

static void jb_ms(struct jb *b, cJSON *o, const char *k, double ns)
{
	jb_num(b, o, k, round(ns) / 1e6);
}

/*
 * A double holds integers exactly only up to 2^53, and cJSON would print a
 * wall-clock time in ns (~1.7e18) in exponent form with its low digits gone.
 * Written as raw text it stays an exact JSON integer.
 */
static void jb_u64_raw(struct jb *b, cJSON *o, const char *k, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	jb_check(b, cJSON_AddRawToObject(o, k, buf));
}

/* mean, percentiles and max of a distribution in ms; all null when empty. */
static void jb_dist(struct jb *b, cJSON *o, const struct pt_dist *d)
{
	static const struct {
		const char *key;
		double q;
	} qs[] = { { "p50_ms", 0.50 }, { "p90_ms", 0.90 }, { "p99_ms", 0.99 } };
	size_t i;

	if (!d || !d->count) {
		jb_null(b, o, "mean_ms");
		for (i = 0; i < ARRAY_SIZE(qs); i++)
			jb_null(b, o, qs[i].key);
		jb_null(b, o, "max_ms");
		return;
	}
	jb_ms(b, o, "mean_ms", d->sum / (double)d->count);
	for (i = 0; i < ARRAY_SIZE(qs); i++)
		jb_ms(b, o, qs[i].key, pt_dist__quantile(d, qs[i].q));
	jb_ms(b, o, "max_ms", (double)d->max);
}

static cJSON *add_obj(struct jb *b, cJSON *parent, const char *k)
{
	return jb_check(b, cJSON_AddObjectToObject(parent, k));
}

static cJSON *add_arr(struct jb *b, cJSON *parent, const char *k)
{
	return jb_check(b, cJSON_AddArrayToObject(parent, k));
}

/* A new object appended to arr; NULL (and b->err set) on failure. */
static cJSON *arr_obj(struct jb *b, cJSON *arr)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		b->err = -ENOMEM;
		return NULL;
	}
	return o;
}

/* on_cpu_ms, off_cpu_ms and wall_ms of one sampled total */
static void jb_wall(struct jb *b, cJSON *o, uint64_t on_ns, uint64_t off_ns)
{
	jb_ms(b, o, "on_cpu_ms", (double)on_ns);
	jb_ms(b, o, "off_cpu_ms", (double)off_ns);
	jb_ms(b, o, "wall_ms", (double)(on_ns + off_ns));
}

static void build_sampling(struct jb *b, cJSON *meta, const struct pt_report_meta *m)
{
	const struct pt_report_sampling *sp = m->sampling;
	cJSON *o, *arr, *out, *own, *names;

	if (!sp) {
		jb_null(b, meta, "sampling");
		return;
	}
	o = add_obj(b, meta, "sampling");
	if (!o)
		return;
	jb_num(b, o, "hz", sp->hz);
	jb_num(b, o, "period_ns", (double)sp->period_ns);
	jb_str(b, o, "mechanism", sp->mechanism);
	arr = add_arr(b, o, "threads");
	for (size_t i = 0; arr && i < sp->nthreads; i++) {
		const struct pt_report_thread *t = &sp->threads[i];
		cJSON *e = arr_obj(b, arr);

		if (!e)
			continue;
		jb_num(b, e, "tid", t->tid);
		jb_str(b, e, "name", t->name);
		jb_str(b, e, "comm", t->comm);
		jb_bool(b, e, "python", t->python);
		jb_num(b, e, "samples", (double)t->samples);
		jb_wall(b, e, t->on_ns, t->off_ns);
	}
	jb_num(b, o, "samples", (double)sp->samples);
	jb_wall(b, o, sp->on_ns, sp->off_ns);
	jb_num(b, o, "off_cpu_intervals", (double)sp->intervals);
	jb_num(b, o, "python_samples", (double)sp->python_samples);
	jb_num(b, o, "no_python_frames", (double)sp->no_frames);
	jb_num(b, o, "not_python_thread", (double)sp->not_python);
	jb_num(b, o, "off_cpu_not_python", (double)sp->not_python_out);
	jb_num(b, o, "off_cpu_found_late", (double)sp->found_late);
	jb_num(b, o, "off_cpu_switch_in_unseen", (double)sp->unseen_in);
	jb_num(b, o, "truncated_stacks", (double)sp->truncated);
	jb_num(b, o, "unreadable_stacks", (double)sp->unreadable);
	jb_num(b, o, "unknown_frames", (double)sp->unknown_frames);
	jb_num(b, o, "threads_merged", (double)sp->threads_merged);
	jb_num(b, o, "late_samples", (double)sp->late_samples);
	jb_ms(b, o, "late_ms", (double)sp->late_ns);
	jb_num(b, o, "lost_samples", (double)sp->lost);
	jb_num(b, o, "threads_sampled", sp->threads_sampled);
	jb_num(b, o, "threads_failed", sp->threads_failed);
	if (sp->steal_ok) {
		jb_ms(b, o, "host_steal_ms", (double)sp->steal_ns);
		jb_num(b, o, "host_steal_share", round6(sp->steal_share));
	} else {
		jb_null(b, o, "host_steal_ms");
		jb_null(b, o, "host_steal_share");
	}
	if (sp->native) {
		cJSON *nat = add_obj(b, o, "native_frames");

		if (nat) {
			const struct pt_report_native *v = &sp->nat;
			uint64_t n = v->stacks ? v->stacks : 1;

			jb_num(b, nat, "stacks", (double)v->stacks);
			jb_num(b, nat, "offcpu_stacks", (double)v->offcpu);
			jb_num(b, nat, "whole", (double)v->whole);
			jb_num(b, nat, "partial", (double)v->partial);
			jb_num(b, nat, "mismatched", (double)v->mismatched);
			jb_num(b, nat, "missing", (double)v->missing);
			jb_num(b, nat, "offcpu_budget", (double)v->offcpu_budget);
			jb_num(b, nat, "offcpu_moved", (double)v->offcpu_moved);
			jb_str(b, nat, "offcpu_via", v->offcpu_via);
			jb_num(b, nat, "offcpu_work_missed", (double)v->offcpu_work_missed);
			jb_num(b, nat, "pooled_samples", (double)v->pooled);
			jb_num(b, nat, "gil_stacks", (double)v->gil);
			jb_num(b, nat, "frames", (double)v->frames);
			jb_num(b, nat, "unnamed_frames", (double)v->unnamed);
			jb_num(b, nat, "stack_bytes_mean", (double)(v->bytes / n));
			jb_num(b, nat, "unwind_us_mean", round6((double)v->unwind_ns / n / 1e3));
		}
	} else {
		jb_null(b, o, "native_frames");
	}
	names = add_obj(b, o, "thread_names");
	if (names) {
		jb_num(b, names, "python", (double)sp->names_python);
		jb_num(b, names, "comm", (double)sp->names_comm);
		jb_str(b, names, "why", sp->names_why);
	}
	own = add_obj(b, o, "proftrace_threads");
	if (own) {
		arr = add_arr(b, own, "threads");
		for (size_t i = 0; arr && i < sp->nown; i++) {
			const struct pt_report_thread *t = &sp->own[i];
			cJSON *e = arr_obj(b, arr);

			if (!e)
				continue;
			jb_num(b, e, "tid", t->tid);
			jb_str(b, e, "name", t->name);
			jb_num(b, e, "samples", (double)t->samples);
			jb_wall(b, e, t->on_ns, t->off_ns);
		}
		jb_num(b, own, "samples", (double)sp->own_samples);
		jb_wall(b, own, sp->own_on_ns, sp->own_off_ns);
	}
	out = add_obj(b, o, "outputs");
	if (out) {
		jb_str(b, out, "folded", sp->folded);
		jb_str(b, out, "svg", sp->svg);
		jb_str(b, out, "svg_wall", sp->svg_wall);
	}
}

/* meta.trace: only with --trace (the key is left out without it). */
static void build_trace(struct jb *b, cJSON *meta, const struct pt_report_trace *t)
{
	cJSON *o;

	if (!t)
		return;
	o = add_obj(b, meta, "trace");
	if (!o)
		return;
	jb_str(b, o, "file", t->file);
	jb_num(b, o, "events", (double)t->events);
	jb_num(b, o, "dropped", (double)t->dropped);
	jb_num(b, o, "max_events", (double)t->max_events);
	jb_bool(b, o, "truncated", t->truncated);
}

/* Several processes: the merged document lists them; a process's own
 * says which it is. One process: none of these keys. */
static void build_procs_meta(struct jb *b, cJSON *o, const struct pt_report_meta *m)
{
	cJSON *arr;

	if (m->pids) {
		arr = add_arr(b, o, "pids");
		for (size_t i = 0; arr && i < m->npids; i++)
			jb_check(b, cJSON_AddItemToArray(arr, cJSON_CreateNumber(m->pids[i]))
					    ? arr
					    : NULL);
		jb_bool(b, o, "children", m->children);
		arr = add_arr(b, o, "processes_skipped");
		for (size_t i = 0; arr && i < m->nskipped && i < PT_REPORT_MAX_SKIPPED; i++) {
			cJSON *e = arr_obj(b, arr);

			if (!e)
				continue;
			jb_num(b, e, "pid", m->skipped[i].pid);
			jb_str(b, e, "comm", m->skipped[i].comm);
			jb_str(b, e, "why", m->skipped[i].why);
		}
		jb_num(b, o, "processes_skipped_total", (double)m->nskipped);
	}
	if (!m->process)
		return;
	if (m->rank >= 0)
		jb_num(b, o, "rank", m->rank);
	else
		jb_null(b, o, "rank");
	if (m->local_rank >= 0)
		jb_num(b, o, "local_rank", m->local_rank);
	else
		jb_null(b, o, "local_rank");
	jb_num(b, o, "attached_at_s", round6(m->added_s));
	jb_str(b, o, "ended", m->ended);
	if (m->ended)
		jb_num(b, o, "ended_at_s", round6(m->ended_s));
	else
		jb_null(b, o, "ended_at_s");
}

static void build_meta(struct jb *b, cJSON *root, const struct pt_report_meta *m)
{
	cJSON *o = add_obj(b, root, "meta");

	if (!o)
		return;
	jb_str(b, o, "tool", m->tool);
	jb_str(b, o, "version", m->version);
	jb_num(b, o, "pid", m->pid);
	jb_str(b, o, "comm", m->comm);
	jb_str(b, o, "exe", m->exe);
	jb_u64_raw(b, o, "start_unix_ns", m->start_unix_ns);
	jb_num(b, o, "duration_s", round6(m->duration_s));
	jb_str(b, o, "targets_file", m->targets_file);
	jb_str(b, o, "mode", m->sampling_only ? "sampling" : "targets");
	jb_str(b, o, "kernel", m->kernel);
	jb_num(b, o, "warmup_steps", m->warmup_steps);
	jb_str(b, o, "step_probe", m->step_probe);
	jb_str(b, o, "step_mode", m->step_mode);
	build_procs_meta(b, o, m);
	build_sampling(b, o, m);
	build_trace(b, o, m->trace);
	if (!m->python) {
		jb_null(b, o, "python");
		return;
	}
	o = add_obj(b, o, "python");
	if (!o)
		return;
	jb_str(b, o, "version", m->python->version);
	jb_str(b, o, "path", m->python->path);
	jb_str(b, o, "mechanism", m->python->mechanism);
	jb_str(b, o, "probe", m->python->probe);
	jb_bool(b, o, "perf_trampoline", m->python->perf_trampoline);
	jb_str(b, o, "timing", m->python->timing);
	jb_str(b, o, "why", m->python->why);
	jb_str(b, o, "advice", m->python->advice);
	jb_num(b, o, "code_objects", (double)m->python->code_objects);
	jb_num(b, o, "matched", (double)m->python->matched);
	jb_num(b, o, "unreadable", (double)m->python->unreadable);
	jb_num(b, o, "qualname_from_co_name", (double)m->python->no_source);
	jb_str(b, o, "qualname_source_missing", m->python->no_source_file);
	if (m->python->agent.hooks) {
		cJSON *a = add_obj(b, o, "agent");

		jb_str(b, a, "hooks", m->python->agent.hooks);
		jb_str(b, a, "loaded_by", m->python->agent.loaded_by);
		jb_bool(b, a, "clocks", m->python->agent.clocks);
		jb_num(b, a, "clock_rejected", (double)m->python->agent.clock_rejected);
		if (m->python->agent.tool_id >= 0)
			jb_num(b, a, "tool_id", m->python->agent.tool_id);
		else
			jb_null(b, a, "tool_id");
		if (m->python->agent.evaluator_functions) {
			jb_num(b, a, "trampolines", (double)m->python->agent.trampolines);
			jb_str(b, a, "evaluator_functions", m->python->agent.evaluator_functions);
			jb_bool(b, a, "evaluator", m->python->agent.evaluator);
			jb_num(b, a, "trampolines_lost", (double)m->python->agent.trampolines_lost);
		}
		jb_num(b, a, "candidates", (double)m->python->agent.candidates);
		jb_num(b, a, "hooked", (double)m->python->agent.hooked);
		jb_num(b, a, "scans", (double)m->python->agent.scans);
		jb_num(b, a, "scan_ms", round6(m->python->agent.scan_ms));
		jb_str(b, a, "problem", m->python->agent.problem);
		jb_str(b, a, "segment_lost", m->python->agent.segment_lost);
		if (m->python->agent.injected) {
			cJSON *i = add_obj(b, a, "inject");

			jb_num(b, i, "pause_ms", round6(m->python->agent.inject_pause_ms));
			jb_num(b, i, "wait_ms", round6(m->python->agent.inject_wait_ms));
			jb_num(b, i, "call_ms", round6(m->python->agent.inject_call_ms));
			jb_num(b, i, "tid", m->python->agent.inject_tid);
			jb_str(b, i, "syscall", m->python->agent.inject_syscall);
		} else {
			jb_null(b, a, "inject");
		}
	} else {
		jb_null(b, o, "agent");
	}
	if (m->python->evalframe) {
		cJSON *e = add_obj(b, o, "evalframe");

		jb_num(b, e, "unnamed_frames", (double)m->python->unnamed_frames);
	}
}

/* tokens per second over the summed time of the steps that have tokens */
static void jb_tok_rate(struct jb *b, cJSON *o, double tokens, double ns, uint64_t steps)
{
	if (steps && ns > 0)
		jb_num(b, o, "tok_per_s", round6(tokens / (ns / 1e9)));
	else
		jb_null(b, o, "tok_per_s");
}

static void build_tok_stats(struct jb *b, cJSON *o, const struct pt_stepvals *sv)
{
	const struct pt_stepvals_role *tok = &sv->role[PT_VROLE_TOKENS];
	bool have_tok = tok->probe || sv->ncounts;

	if (have_tok) {
		jb_num(b, o, "tokens", sv->tokens);
		jb_num(b, o, "steps_with_tokens", (double)sv->tok_steps);
		jb_tok_rate(b, o, sv->tokens, sv->tok_ns, sv->tok_steps);
	}
	if (sv->role[PT_VROLE_BATCH].probe) {
		if (sv->batch_steps)
			jb_num(b, o, "batch_mean", round6(sv->batch_sum / (double)sv->batch_steps));
		else
			jb_null(b, o, "batch_mean");
	}
	if (sv->role[PT_VROLE_KVLEN].probe) {
		if (sv->kv_steps)
			jb_num(b, o, "kv_len_mean", round6(sv->kv_sum / (double)sv->kv_steps));
		else
			jb_null(b, o, "kv_len_mean");
	}
}

static void jb_missing(struct jb *b, cJSON *o, const uint64_t *missing)
{
	cJSON *m = add_obj(b, o, "missing");
	uint64_t total = 0;

	for (int i = 0; i < PT_VST_NREASONS; i++)
		total += missing[i];
	jb_num(b, o, "missing_total", (double)total);
	for (int i = 0; m && i < PT_VST_NREASONS; i++)
		if (missing[i])
			jb_num(b, m, pt_stepvals__reason_name((unsigned int)i), (double)missing[i]);
}

static void build_values(struct jb *b, cJSON *root, const struct pt_report *r)
{
	const struct pt_stepvals *sv = r->vals;
	cJSON *o = add_obj(b, root, "values"), *arr;

	if (!o)
		return;
	for (int k = 0; k < 3; k++) {
		const struct pt_stepvals_role *ro = &sv->role[k];
		cJSON *e;

		if (!ro->probe)
			continue;
		e = add_obj(b, o, pt_vexpr__role_name((enum pt_vrole)k));
		if (!e)
			continue;
		jb_str(b, e, "probe", ro->probe->text);
		jb_str(b, e, "expr", ro->expr->text);
		if (k == PT_VROLE_KVLEN)
			jb_str(b, e, "reduce",
			       pt_vexpr__fn_name(
				       pt_vexpr__reduce_fn(ro->expr, sv->cfg->kv_reduce)));
		jb_num(b, e, "read", (double)ro->read);
		jb_num(b, e, "outside_step", (double)ro->outside);
		jb_num(b, e, "steps_with_value", (double)ro->steps);
		jb_num(b, e, "steps_without_value", (double)(sv->steps - ro->steps));
		jb_missing(b, e, ro->missing);
	}
	arr = add_arr(b, o, "count_tokens");
	for (size_t i = 0; arr && i < sv->ncounts; i++) {
		const struct pt_stepvals_count *c = &sv->counts[i];
		cJSON *e = arr_obj(b, arr);

		if (!e)
			continue;
		jb_str(b, e, "probe", c->probe->text);
		jb_str(b, e, "expr", c->expr->text);
		jb_num(b, e, "read", (double)c->read);
		jb_num(b, e, "outside_step", (double)c->outside);
		jb_num(b, e, "tokens_outside_step", (double)c->tokens_sum_outside);
		jb_missing(b, e, c->missing);
	}
	jb_num(b, o, "records_dropped", (double)r->val_records_dropped);
	jb_num(b, o, "bad_records", (double)sv->bad_records);
}

static void build_kv_bins(struct jb *b, cJSON *root, const struct pt_stepvals *sv)
{
	cJSON *arr = add_arr(b, root, "decode_length_buckets");

	for (size_t i = 0; arr && i < sv->nbins; i++) {
		const struct pt_stepvals_bin *bn = &sv->bins[i];
		const struct pt_dist *d = &bn->dur;
		cJSON *e = arr_obj(b, arr);

		if (!e)
			continue;
		jb_num(b, e, "kv_min", (double)bn->lo);
		if (bn->hi == UINT64_MAX)
			jb_null(b, e, "kv_max");
		else
			jb_num(b, e, "kv_max", (double)bn->hi);
		jb_num(b, e, "steps", (double)d->count);
		if (d->count) {
			jb_ms(b, e, "mean_ms", d->sum / (double)d->count);
			jb_ms(b, e, "p50_ms", pt_dist__quantile(d, 0.50));
			jb_ms(b, e, "p90_ms", pt_dist__quantile(d, 0.90));
			jb_ms(b, e, "p99_ms", pt_dist__quantile(d, 0.99));
		} else {
			jb_null(b, e, "mean_ms");
			jb_null(b, e, "p50_ms");
			jb_null(b, e, "p90_ms");
			jb_null(b, e, "p99_ms");
		}
		jb_num(b, e, "steps_with_tokens", (double)bn->tok_steps);
		jb_num(b, e, "tokens", bn->tokens);
		jb_tok_rate(b, e, bn->tokens, bn->tok_ns, bn->tok_steps);
	}
}

static double share_of(uint64_t part, uint64_t whole)
{
	return whole ? round6((double)part / (double)whole) : 0;
}

static void build_gpu_shim(struct jb *b, cJSON *o, const struct pt_gpuring_info *in)
{
	cJSON *sh = add_obj(b, o, "shim"), *rec, *c;

	if (sh) {
		jb_num(b, sh, "version", in->version);
		jb_num(b, sh, "cupti_version", in->cupti_version);
		jb_bool(b, sh, "active", in->active);
		jb_num(b, sh, "activations", in->activations);
		jb_ms(b, sh, "enable_stall_ms", (double)in->enable_stall_ns);
		if (in->conflict_call) {
			c = add_obj(b, sh, "conflict");
			if (c) {
				jb_str(b, c, "call", pt_gpuring__call_name(in->conflict_call));
				jb_str(b, c, "result", pt_gpuring__result_name(in->conflict_code));
				jb_num(b, c, "code", in->conflict_code);
			}
		} else {
			jb_null(b, sh, "conflict");
		}
	}
	rec = add_obj(b, o, "records");
	if (rec) {
		jb_num(b, rec, "delivered", (double)in->delivered);
		jb_num(b, rec, "ring_dropped", (double)in->ring_dropped);
		jb_num(b, rec, "cupti_dropped", (double)in->cupti_dropped);
		jb_num(b, rec, "lost", (double)in->lost);
		jb_num(b, rec, "invalid", (double)in->skipped);
		jb_num(b, rec, "unknown_kinds", (double)in->unknown_kinds);
		jb_num(b, rec, "names_lost", (double)in->strtab_full);
	}
}

static void jb_dist_ms(struct jb *b, cJSON *o, const struct pt_dist *d)
{
	jb_num(b, o, "count", (double)d->count);
	if (!d->count) {
		jb_null(b, o, "mean_ms");
		jb_null(b, o, "p50_ms");
		jb_null(b, o, "p90_ms");
		jb_null(b, o, "p99_ms");
		jb_null(b, o, "max_ms");
		return;
	}
	jb_ms(b, o, "mean_ms", d->sum / (double)d->count);
	jb_ms(b, o, "p50_ms", pt_dist__quantile(d, 0.50));
	jb_ms(b, o, "p90_ms", pt_dist__quantile(d, 0.90));
	jb_ms(b, o, "p99_ms", pt_dist__quantile(d, 0.99));
	jb_ms(b, o, "max_ms", (double)d->max);
}

#define PT_GPU_TOP 20

static void build_gpu(struct jb *b, cJSON *root, const struct pt_report *r)
{
	const struct pt_gpu_result *g = r->gpu;
	cJSON *o = add_obj(b, root, "gpu"), *st, *arr, *e;

	if (!o)
		return;
	if (!g) {
		jb_str(b, o, "source", "none");
		jb_str(b, o, "why", r->gpu_why && r->gpu_why[0] ? r->gpu_why : "not read");
		return;
	}
	jb_str(b, o, "source", "cupti-shim");
	if (r->gpu_info)
		build_gpu_shim(b, o, r->gpu_info);
	jb_str(b, o, "segment_lost", r->gpu_lost);
	jb_num(b, o, "kernels", (double)g->kernels);
	jb_num(b, o, "copies", (double)g->copies);
	jb_num(b, o, "memsets", (double)g->memsets);
	jb_num(b, o, "copy_bytes", (double)g->copy_bytes);
	jb_num(b, o, "api_calls", (double)g->api_calls);
	jb_num(b, o, "syncs", (double)g->syncs);
	jb_num(b, o, "unmatched", (double)g->unmatched);
	jb_num(b, o, "outside_steps", (double)g->outside_steps);
	jb_num(b, o, "folds", (double)g->folds);
	jb_num(b, o, "records_late", (double)g->late);
	jb_num(b, o, "records_not_held", (double)g->not_held);
	jb_ms(b, o, "busy_ms", (double)g->busy_ns);
	jb_num(b, o, "busy_share", share_of(g->busy_ns, g->window_ns));
	arr = add_arr(b, o, "devices");
	for (size_t i = 0; arr && i < g->ndevices; i++) {
		const struct pt_gpu_device *d = &g->devices[i];

		e = arr_obj(b, arr);
		if (!e)
			continue;
		jb_num(b, e, "device", d->device);
		jb_num(b, e, "kernels", (double)d->kernels);
		jb_num(b, e, "copies", (double)d->copies);
		jb_num(b, e, "memsets", (double)d->memsets);
		jb_ms(b, e, "busy_ms", (double)d->busy_ns);
		jb_num(b, e, "busy_share", share_of(d->busy_ns, g->window_ns));
	}
	st = add_obj(b, o, "steps");
	if (st) {
		jb_num(b, st, "steps", (double)g->steps);
		jb_num(b, st, "steps_with_gpu", (double)g->steps_with_gpu);
		jb_num(b, st, "work_launched", (double)g->step_items);
		jb_ms(b, st, "busy_ms", (double)g->step_busy_ns);
		jb_ms(b, st, "idle_ms", (double)(g->step_ns - g->step_busy_ns));
		if (g->step_ns)
			jb_num(b, st, "host_bound_share",
			       share_of(g->step_ns - g->step_busy_ns, g->step_ns));
		else
			jb_null(b, st, "host_bound_share");
		e = add_obj(b, st, "busy");
		if (e)
			jb_dist_ms(b, e, &g->step_busy);
		e = add_obj(b, st, "idle");
		if (e)
			jb_dist_ms(b, e, &g->step_idle);
	}
	e = add_obj(b, o, "launch_delay");
	if (e)
		jb_dist_ms(b, e, &g->launch_delay);
	arr = add_arr(b, o, "buckets");
	for (size_t i = 0; arr && i < r->nbuckets; i++) {
		cJSON *x = arr_obj(b, arr);

		if (!x)
			continue;
		jb_str(b, x, "name", r->buckets[i].name);
		jb_num(b, x, "work_launched", (double)g->buckets[i].kernels);
		jb_ms(b, x, "gpu_ms", (double)g->buckets[i].gpu_ns);
	}
	arr = add_arr(b, o, "top_kernels");
	for (size_t i = 0; arr && i < g->ntop && i < PT_GPU_TOP; i++) {
		const struct pt_gpu_kstat *k = &g->top[i];
		cJSON *x = arr_obj(b, arr);

		if (!x)
			continue;
		jb_str(b, x, "name", k->name);
		if (k->mangled)
			jb_str(b, x, "mangled", k->mangled);
		jb_num(b, x, "count", (double)k->count);
		jb_ms(b, x, "total_ms", (double)k->total_ns);
		jb_ms(b, x, "mean_ms", (double)k->total_ns / (double)k->count);
		jb_ms(b, x, "max_ms", (double)k->max_ns);
		jb_num(b, x, "share_of_busy", share_of(k->total_ns, g->busy_ns));
	}
	jb_num(b, o, "kernel_names", (double)g->ntop);
}

/* {mean, std} of a figure across runs; null without runs that have it */
static void jb_run_stat(struct jb *b, cJSON *o, const char *k, const struct pt_run_stat *st,
			double scale)
{
	cJSON *x;

	if (!st->n) {
		jb_null(b, o, k);
		return;
	}
	x = add_obj(b, o, k);
	if (!x)
		return;
	jb_num(b, x, "mean", round6(st->mean * scale));
	jb_num(b, x, "std", round6(st->std * scale));
}

static const char *bucket_name(const struct pt_report *r, size_t i)
{
	return i < r->nbuckets ? r->buckets[i].name : "step.other";
}

static void build_run(struct jb *b, cJSON *arr, const struct pt_report *r, const struct pt_run *run,
		      bool tok, bool batch)
{
	const struct pt_dist *d = &run->dur;
	double secs = (double)(run->t1 - run->t0) / 1e9;
	cJSON *o = arr_obj(b, arr), *bs, *x;

	if (!o)
		return;
	jb_num(b, o, "index", run->index);
	jb_bool(b, o, "warmup", run->warmup);
	jb_num(b, o, "start_s", round6((double)(run->t0 - r->t0_mono) / 1e9));
	jb_num(b, o, "end_s", round6((double)(run->t1 - r->t0_mono) / 1e9));
	jb_num(b, o, "duration_s", round6(secs));
	jb_num(b, o, "steps", (double)d->count);
	if (secs > 0)
		jb_num(b, o, "steps_per_s", round6((double)d->count / secs));
	else
		jb_null(b, o, "steps_per_s");
	jb_ms(b, o, "mean_ms", d->sum / (double)d->count);
	jb_ms(b, o, "p50_ms", pt_dist__quantile(d, 0.50));
	jb_ms(b, o, "p90_ms", pt_dist__quantile(d, 0.90));
	jb_ms(b, o, "p99_ms", pt_dist__quantile(d, 0.99));
	jb_ms(b, o, "max_ms", (double)d->max);
	jb_ms(b, o, "time_ms", d->sum);
	if (tok) {
		jb_num(b, o, "tokens", run->tokens);
		jb_tok_rate(b, o, run->tokens, run->tok_ns, run->tok_steps);
	}
	if (batch && run->batch_steps)
		jb_num(b, o, "batch_mean", round6(run->batch_sum / (double)run->batch_steps));
	else if (batch)
		jb_null(b, o, "batch_mean");
	bs = add_arr(b, o, "buckets");
	for (size_t i = 0; bs && i <= r->nbuckets; i++) {
		x = arr_obj(b, bs);
		if (!x)
			continue;
		jb_str(b, x, "name", bucket_name(r, i));
		jb_ms(b, x, "avg_ms_per_step", (double)run->bucket_ns[i] / (double)d->count);
		jb_num(b, x, "share", d->sum > 0 ? round6((double)run->bucket_ns[i] / d->sum) : 0);
	}
}

static void build_runs(struct jb *b, cJSON *root, const struct pt_report *r)
{
	const struct pt_runs_aggregate *A = pt_bursts__aggregate(r->runs);
	bool tok = r->vals && (r->vals->role[PT_VROLE_TOKENS].probe || r->vals->ncounts);
	bool batch = r->vals && r->vals->role[PT_VROLE_BATCH].probe;
	cJSON *arr = add_arr(b, root, "runs"), *o, *bs, *x;

	for (size_t i = 0; arr && i < pt_bursts__count(r->runs); i++)
		build_run(b, arr, r, pt_bursts__get(r->runs, i), tok, batch);
	o = add_obj(b, root, "runs_aggregate");
	if (!o)
		return;
	jb_num(b, o, "run_gap_ms", round6((double)pt_bursts__gap_ns(r->runs) / 1e6));
	jb_num(b, o, "runs", (double)A->runs);
	jb_num(b, o, "warmup_runs_skipped", (double)A->warmup);
	jb_run_stat(b, o, "steps", &A->steps, 1);
	jb_run_stat(b, o, "duration_s", &A->duration_s, 1);
	jb_run_stat(b, o, "steps_per_s", &A->steps_per_s, 1);
	jb_run_stat(b, o, "mean_ms", &A->mean_ms, 1);
	jb_run_stat(b, o, "p50_ms", &A->p50_ms, 1);
	jb_run_stat(b, o, "p90_ms", &A->p90_ms, 1);
	jb_run_stat(b, o, "p99_ms", &A->p99_ms, 1);
	if (tok)
		jb_run_stat(b, o, "tok_per_s", &A->tok_per_s, 1);
	bs = add_arr(b, o, "buckets");
	for (size_t i = 0; bs && A->bucket_ms && i <= r->nbuckets; i++) {
		x = arr_obj(b, bs);
		if (!x)
			continue;
		jb_str(b, x, "name", bucket_name(r, i));
		jb_run_stat(b, x, "avg_ms_per_step", &A->bucket_ms[i], 1);
		jb_run_stat(b, x, "share", &A->bucket_share[i], 1);
	}
}

static void build_stats(struct jb *b, cJSON *root, const struct pt_report *r,
			const struct pt_agg_step_stats *st)
{
	const struct pt_dist *d = st ? &st->dur : NULL;
	uint64_t n = d ? d->count : 0;
	cJSON *o = add_obj(b, root, "stats");

	if (!o)
		return;
	jb_num(b, o, "steps", (double)n);
	if (n) {
		jb_ms(b, o, "mean_ms", d->sum / (double)n);
		jb_ms(b, o, "std_ms", pt_dist__std(d));
		jb_ms(b, o, "min_ms", (double)d->min);
		jb_ms(b, o, "p50_ms", pt_dist__quantile(d, 0.50));
		jb_ms(b, o, "p90_ms", pt_dist__quantile(d, 0.90));
		jb_ms(b, o, "p99_ms", pt_dist__quantile(d, 0.99));
		jb_ms(b, o, "max_ms", (double)d->max);
	} else {
		jb_null(b, o, "mean_ms");
		jb_null(b, o, "std_ms");
		jb_null(b, o, "min_ms");
		jb_null(b, o, "p50_ms");
		jb_null(b, o, "p90_ms");
		jb_null(b, o, "p99_ms");
		jb_null(b, o, "max_ms");
	}
	/* Zero steps in a known window is a measured rate; no window is not. */
	if (r->meta.duration_s > 0)
		jb_num(b, o, "steps_per_s", round6((double)n / r->meta.duration_s));
	else
		jb_null(b, o, "steps_per_s");
	if (n)
		jb_ms(b, o, "time_ms", d->sum);
	else
		jb_null(b, o, "time_ms");
	jb_num(b, o, "warmup_steps_skipped", st ? (double)st->warmup : 0);
	jb_num(b, o, "incomplete_steps", st ? (double)st->incomplete : 0);
	if (r->vals && pt_stepvals__active(r->vals))
		build_tok_stats(b, o, r->vals);
}

static void build_bucket(struct jb *b, cJSON *arr, const char *name, const char *domain,
			 const struct pt_agg_bucket_stats *bs, uint64_t steps, double step_ns)
{
	uint64_t calls = bs ? bs->calls : 0;
	double total = bs ? (double)bs->total_ns : 0;
	cJSON *o = arr_obj(b, arr);

	if (!o)
		return;
	jb_str(b, o, "name", name);
	jb_str(b, o, "domain", domain);
	jb_num(b, o, "calls", (double)calls);
	jb_ms(b, o, "total_ms", total);
	if (steps)
		jb_ms(b, o, "avg_ms_per_step", total / (double)steps);
	else
		jb_null(b, o, "avg_ms_per_step");
	if (step_ns > 0)
		jb_num(b, o, "share", round6(total / step_ns));
	else
		jb_null(b, o, "share");
	jb_dist(b, o, calls && bs ? &bs->per_call : NULL);
}

static void build_buckets(struct jb *b, cJSON *root, const struct pt_report *r,
			  const struct pt_agg_step_stats *st)
{
	uint64_t steps = st ? st->dur.count : 0;
	/* The same rounded sum stats.time_ms shows, so share is checkable
	 * against the file's own numbers. */
	double step_ns = steps ? round(st->dur.sum) : 0;
	cJSON *arr = add_arr(b, root, "buckets");
	size_t i;

	if (!arr)
		return;
	for (i = 0; i < r->nbuckets; i++)
		build_bucket(b, arr, r->buckets[i].name, r->buckets[i].domain,
			     r->agg ? pt_agg__bucket(r->agg, i) : NULL, steps, step_ns);
	build_bucket(b, arr, "step.other", "step",
		     r->agg ? pt_agg__bucket(r->agg, r->nbuckets) : NULL, steps, step_ns);
}

static const struct pt_agg_func_stats *func_stats(const struct pt_report *r,
						  const struct pt_report_func *fn)
{
	if (!r->agg || fn->fid < 0)
		return NULL;
	return pt_agg__func(r->agg, (uint32_t)fn->fid);
}

/* wall time as a fraction of the run's duration (several threads: > 1) */
static void jb_share(struct jb *b, cJSON *o, const struct pt_report *r, uint64_t wall_ns)
{
	if (r->meta.duration_s > 0)
		jb_num(b, o, "share", round6((double)wall_ns / (r->meta.duration_s * 1e9)));
	else
		jb_null(b, o, "share");
}

static void build_func(struct jb *b, cJSON *arr, const struct pt_report *r,
		       const struct pt_report_func *fn)
{
	const struct pt_agg_func_stats *fs = func_stats(r, fn);
	const struct pt_dist *d = fs ? &fs->dur : NULL;
	cJSON *o = arr_obj(b, arr), *al;
	size_t i;

	if (!o)
		return;
	jb_str(b, o, "probe", fn->probe);
	jb_str(b, o, "kind", fn->py ? "python" : "native");
	jb_str(b, o, "object", fn->object);
	jb_str(b, o, "symbol", fn->symbol);
	jb_str(b, o, "mangled", fn->mangled);
	if (fn->py && fn->fid >= 0)
		jb_num(b, o, "line", fn->line);
	else
		jb_null(b, o, "line");
	jb_str(b, o, "timing", fn->fid >= 0 ? (fn->timing ? fn->timing : "exact") : NULL);
	al = add_arr(b, o, "aliases");
	for (i = 0; al && i < fn->naliases; i++) {
		cJSON *s = cJSON_CreateString(fn->aliases[i] ? fn->aliases[i] : "");

		if (!s || !cJSON_AddItemToArray(al, s)) {
			cJSON_Delete(s);
			b->err = -ENOMEM;
		}
	}
	if (fn->fid >= 0 && fn->symbol && !fn->py) {
		jb_num(b, o, "file_offset", (double)fn->file_offset);
		jb_num(b, o, "probe_skip", fn->probe_skip);
	} else {
		jb_null(b, o, "file_offset");
		jb_null(b, o, "probe_skip");
	}
	jb_str(b, o, "probe_insn", fn->py ? NULL : fn->probe_insn);
	jb_bool(b, o, "attached", fn->attached);
	if (fn->attached) {
		jb_num(b, o, "attached_after_s", round6(fn->attached_after_s));
		jb_null(b, o, "reason");
	} else {
		jb_null(b, o, "attached_after_s");
		jb_str(b, o, "reason", fn->reason);
	}
	if (fn->attached && fn->has_window)
		jb_num(b, o, "dlopen_window_ms", round6(fn->window_ms));
	else
		jb_null(b, o, "dlopen_window_ms");
	if (fn->timing && !strcmp(fn->timing, "sampled") && fn->fid >= 0) {
		/* counts from the partial probe are not shown as if exact */
		jb_null(b, o, "calls");
		jb_null(b, o, "total_ms");
		jb_dist(b, o, NULL);
	} else {
		jb_num(b, o, "calls", d ? (double)d->count : 0);
		jb_ms(b, o, "total_ms", d ? d->sum : 0);
		jb_dist(b, o, d);
	}
	if (!fn->sampled || !r->meta.sampling) {
		jb_null(b, o, "sampled");
		return;
	}
	o = add_obj(b, o, "sampled");
	if (!o)
		return;
	jb_num(b, o, "samples", (double)fn->s_samples);
	jb_wall(b, o, fn->s_on_ns, fn->s_off_ns);
	jb_share(b, o, r, fn->s_on_ns + fn->s_off_ns);
}

static void build_lines_fn(struct jb *b, cJSON *arr, const struct pt_report *r,
			   const struct pt_report_lines_fn *l)
{
	const struct pt_agg_func_stats *fs =
		r->agg && l->fid >= 0 ? pt_agg__func(r->agg, (uint32_t)l->fid) : NULL;
	uint64_t wall = l->on_ns + l->off_ns;
	cJSON *o = arr_obj(b, arr), *ls;

	if (!o)
		return;
	jb_str(b, o, "probe", l->probe);
	jb_str(b, o, "file", l->file);
	jb_str(b, o, "function", l->function);
	jb_num(b, o, "first_line", l->first_line);
	jb_num(b, o, "last_line", l->last_line);
	jb_str(b, o, "timing", l->exact ? "exact" : "sampled");
	if (l->exact) {
		jb_num(b, o, "calls", fs ? (double)fs->dur.count : 0);
		jb_ms(b, o, "exact_total_ms", fs ? fs->dur.sum : 0);
	} else {
		jb_null(b, o, "calls");
		jb_null(b, o, "exact_total_ms");
	}
	jb_num(b, o, "samples", (double)l->samples);
	jb_wall(b, o, l->on_ns, l->off_ns);
	jb_share(b, o, r, wall);
	jb_str(b, o, "source_error", l->source_error);
	ls = add_arr(b, o, "lines");
	for (size_t i = 0; ls && i < l->nlines; i++) {
		const struct pt_report_line *ln = &l->lines[i];
		cJSON *e = arr_obj(b, ls);

		if (!e)
			continue;
		jb_num(b, e, "line", ln->line);
		jb_str(b, e, "text", ln->text);
		jb_num(b, e, "samples", (double)ln->samples);
		jb_wall(b, e, ln->on_ns, ln->off_ns);
		if (wall)
			jb_num(b, e, "share",
			       round6((double)(ln->on_ns + ln->off_ns) / (double)wall));
		else
			jb_null(b, e, "share");
	}
}

/* {samples, on_cpu_ms, off_cpu_ms, wall_ms} of t under key k of o. */
static void jb_time(struct jb *b, cJSON *o, const char *k, const struct pt_stacks_time *t)
{
	cJSON *e = add_obj(b, o, k);

	if (!e)
		return;
	jb_num(b, e, "samples", (double)t->samples);
	jb_wall(b, e, t->on_ns, t->off_ns);
}

/* An on-CPU time over all on-CPU time sampled; null when none was. */
static void jb_cpu_share(struct jb *b, cJSON *o, const char *k, const struct pt_report *r,
			 uint64_t on_ns)
{
	uint64_t all = r->meta.sampling ? r->meta.sampling->on_ns : 0;

	if (all)
		jb_num(b, o, k, round6((double)on_ns / (double)all));
	else
		jb_null(b, o, k);
}

/* `top`: the functions and lines the samples spent most time in. */
static void build_top(struct jb *b, cJSON *root, const struct pt_report *r)
{
	const struct pt_top_fn *fns[PT_REPORT_TOP];
	struct pt_top_lref lns[PT_REPORT_TOP];
	size_t nf, nl;
	cJSON *o = add_obj(b, root, "top"), *arr;

	if (!o)
		return;
	nf = pt_top__rank_funcs(r->top, fns, PT_REPORT_TOP);
	nl = pt_top__rank_lines(r->top, lns, PT_REPORT_TOP);
	jb_num(b, o, "functions_seen", (double)pt_top__nfuncs(r->top));
	jb_num(b, o, "frames_not_kept", (double)pt_top__stats(r->top)->frames_not_kept);
	jb_num(b, o, "lines_not_kept", (double)pt_top__stats(r->top)->lines_not_kept);
	arr = add_arr(b, o, "functions");
	for (size_t i = 0; arr && i < nf; i++) {
		cJSON *e = arr_obj(b, arr);

		if (!e)
			continue;
		jb_str(b, e, "function", fns[i]->qualname);
		jb_str(b, e, "file", fns[i]->filename);
		if (fns[i]->first_line)
			jb_num(b, e, "first_line", fns[i]->first_line);
		else /* a native function (its file is its library) */
			jb_null(b, e, "first_line");
		if (fns[i]->last_line)
			jb_num(b, e, "last_line", fns[i]->last_line);
		else
			jb_null(b, e, "last_line");
		jb_time(b, e, "self", &fns[i]->self);
		jb_time(b, e, "total", &fns[i]->total);
		jb_cpu_share(b, e, "self_cpu_share", r, fns[i]->self.on_ns);
		jb_cpu_share(b, e, "total_cpu_share", r, fns[i]->total.on_ns);
	}
	arr = add_arr(b, o, "lines");
	for (size_t i = 0; arr && i < nl; i++) {
		cJSON *e = arr_obj(b, arr);

		if (!e)
			continue;
		jb_str(b, e, "function", lns[i].fn->qualname);
		jb_str(b, e, "file", lns[i].fn->filename);
		jb_num(b, e, "line", lns[i].line->line);
		jb_time(b, e, "self", &lns[i].line->self);
		jb_time(b, e, "total", &lns[i].line->total);
		jb_cpu_share(b, e, "self_cpu_share", r, lns[i].line->self.on_ns);
	}
}

static void build_health(struct jb *b, cJSON *root, const struct pt_report *r)
{
	const struct pt_report_health *h = &r->health;
	cJSON *o = add_obj(b, root, "health"), *arr;
	size_t i;

	if (!o)
		return;
	jb_num(b, o, "events", (double)h->events);
	if (!h->process) {
		jb_num(b, o, "dropped_events", (double)h->dropped_events);
		jb_num(b, o, "depth_overflow", (double)h->depth_overflow);
		jb_num(b, o, "unwound", (double)h->unwound);
		jb_num(b, o, "orphan_returns", (double)h->orphan_returns);
		jb_num(b, o, "py_unreadable_frames", (double)h->py_unreadable);
		jb_num(b, o, "py_code_map_full", (double)h->py_map_full);
		jb_num(b, o, "thread_exits_dropped", (double)h->thread_exits_dropped);
	}
	jb_num(b, o, "py_calls_unresolved", (double)h->py_unresolved);
	jb_num(b, o, "lost_calls", (double)h->lost_calls);
	jb_num(b, o, "steps_incomplete", (double)h->steps_incomplete);
	jb_num(b, o, "threads", (double)h->threads);
	jb_num(b, o, "threads_ended", (double)h->threads_ended);
	jb_num(b, o, "threads_held_max", (double)h->threads_max);
	jb_num(b, o, "runs_late_steps", (double)h->runs_late_steps);
	jb_num(b, o, "skew_steps_not_kept", (double)h->skew_steps_not_kept);
	jb_num(b, o, "probes_requested", h->probes_requested);
	jb_num(b, o, "probes_attached", h->probes_attached);
	arr = add_arr(b, o, "unattached");
	for (i = 0; arr && i < r->nfuncs; i++) {
		const struct pt_report_func *fn = &r->funcs[i];
		cJSON *u;

		if (fn->attached)
			continue;
		u = arr_obj(b, arr);
		if (!u)
			continue;
		jb_str(b, u, "probe", fn->probe);
		jb_str(b, u, "object", fn->object);
		jb_str(b, u, "symbol", fn->symbol);
		jb_str(b, u, "reason", fn->reason);
	}
}

struct cJSON *pt_summary__build(const struct pt_report *r)
{
	const struct pt_agg_step_stats *st;
	struct jb b = { 0 };
	cJSON *root, *funcs, *lines;
	size_t i;

	if (!r)
		return NULL;
	root = cJSON_CreateObject();
	if (!root)
		return NULL;
	st = r->agg ? pt_agg__steps(r->agg) : NULL;

	build_meta(&b, root, &r->meta);
	build_stats(&b, root, r, st);
	build_buckets(&b, root, r, st);
	funcs = add_arr(&b, root, "functions");
	for (i = 0; funcs && i < r->nfuncs; i++)
		build_func(&b, funcs, r, &r->funcs[i]);
	lines = add_arr(&b, root, "lines");
	for (i = 0; lines && i < r->nlines; i++)
		build_lines_fn(&b, lines, r, &r->lines[i]);
	if (r->vals && pt_stepvals__active(r->vals)) {
		build_values(&b, root, r);
		if (r->vals->role[PT_VROLE_KVLEN].probe)
			build_kv_bins(&b, root, r->vals);
	}
	if (r->runs && !pt_bursts__failed(r->runs))
		build_runs(&b, root, r);
	build_gpu(&b, root, r);
	if (r->top)
		build_top(&b, root, r);
	build_health(&b, root, r);

	if (b.err) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

int pt_summary__add_skew(struct cJSON *doc, const struct pt_skew *k,
			 const struct pt_report_skew_proc *procs, size_t n)
{
	struct jb b = { 0 };
	cJSON *o = add_obj(&b, doc, "skew"), *arr;

	if (!o)
		return -ENOMEM;
	jb_num(&b, o, "processes", (double)n);
	if (!k || !k->aligned) {
		jb_num(&b, o, "steps_compared", 0);
		jb_str(&b, o, "why", !k ? "fewer than two processes have counted steps" : k->why);
	} else {
		jb_num(&b, o, "steps_compared", (double)k->aligned);
		jb_num(&b, o, "steps_not_compared", (double)k->unaligned);
		jb_num(&b, o, "mean_ms", round6(k->skew.mean / 1e6));
		jb_num(&b, o, "p50_ms", round6(pt_dist__quantile(&k->skew, 0.5) / 1e6));
		jb_num(&b, o, "p90_ms", round6(pt_dist__quantile(&k->skew, 0.9) / 1e6));
		jb_num(&b, o, "p99_ms", round6(pt_dist__quantile(&k->skew, 0.99) / 1e6));
		jb_num(&b, o, "max_ms", round6((double)k->skew.max / 1e6));
		/* the time lost waiting for the slowest, as a share of it */
		jb_num(&b, o, "share_of_slowest",
		       k->slowest_ms_sum > 0 ? round6(k->skew_ms_sum / k->slowest_ms_sum) : 0);
	}
	arr = add_arr(&b, o, "per_process");
	for (size_t i = 0; arr && i < n; i++) {
		cJSON *e = arr_obj(&b, arr);

		if (!e)
			continue;
		jb_num(&b, e, "pid", procs[i].pid);
		if (procs[i].rank >= 0)
			jb_num(&b, e, "rank", procs[i].rank);
		else
			jb_null(&b, e, "rank");
		jb_num(&b, e, "steps", (double)procs[i].steps);
		if (k && k->aligned) {
			jb_num(&b, e, "first_step_compared", (double)procs[i].first);
			jb_num(&b, e, "slowest", (double)procs[i].slowest);
			jb_num(&b, e, "fastest", (double)procs[i].fastest);
		}
	}
	return b.err ? -ENOMEM : 0;
}

int pt_summary__write_json(FILE *f, const struct cJSON *summary)
{
	char *text;
	int err = 0;

	if (!f || !summary)
		return -EINVAL;
	text = cJSON_Print(summary);
	if (!text)
		return -ENOMEM;
	errno = 0;
	if (fputs(text, f) == EOF || fputc('\n', f) == EOF || fflush(f) == EOF)
		err = errno ? -errno : -EIO;
	cJSON_free(text);
	return err;
}
