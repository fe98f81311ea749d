// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the probes cost the target (docs/summary.md#overhead): each
 * function gets its site kind's calibrated cost (calib.h), the views'
 * pt_ovh sums it per interval, and the document gets `overhead` and a
 * `corrected_*` figure next to each raw one (the raw ones stay as they
 * are).
 */
#include <math.h>
#include <sys/resource.h>

#include "run.h"
#include "calib.h"
#include "probecost.h"

#include "aggregate/dist.h"
#include "attach/prologue.h"
#include "attach/resolve.h"
#include "report/summary.h"
#include "sample/sampler.h"

enum pt_site_kind pt_run__site_kind(const struct proc *p, const struct pt_func *f)
{
	/* (the agent is used when the process has one: its handshake may
	 * still be under way when the first functions are declared) */
	if (f->py)
		return p->agent.handle ? PT_SITE_AGENT : PT_SITE_FRAME;
	switch (f->site.cls) {
	case PT_INSN_NOP5:
		return PT_SITE_NOP5;
	case PT_INSN_SINGLESTEP:
	case PT_INSN_UNKNOWN:
		return PT_SITE_SSTEP;
	default:
		return PT_SITE_EMULATED;
	}
}

int pt_run__declare_cost(struct proc *p, const struct pt_func *f, struct pt_ovh *o, uint32_t fid)
{
	const struct pt_calib *c = &p->run->calib;
	enum pt_site_kind k = pt_run__site_kind(p, f);

	/* the frame probe's hits on unnamed frames, charged where they fell */
	pt_ovh__set_unnamed_cost(o, c->ok ? c->pair_ns[PT_SITE_FRAME_UNNAMED] : 0);
	return pt_ovh__set_func(o, fid, f->is_step, f->bucket_mask, k, c->ok ? c->pair_ns[k] : 0,
				c->ok ? c->self_ns[k] : 0);
}

static double r6(double v)
{
	return round(v * 1e6) / 1e6;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* key = raw_ms - cost_ns, never below 0; null when raw is */
static void add_corrected(cJSON *o, const char *key, double raw_ms, double cost_ns)
{
	double v = raw_ms - cost_ns / 1e6;

	if (isnan(raw_ms))
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, r6(v > 0 ? v : 0));
}

static void doc_functions(const struct view *v, const struct pt_report *rep, cJSON *doc)
{
	cJSON *f;
	size_t i = 0;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "functions"))
	{
		const struct pt_report_func *rf = i < rep->nfuncs ? &rep->funcs[i] : NULL;
		const struct pt_ovh_func *of =
			rf && rf->fid >= 0 ? pt_ovh__func(v->ovh, (uint32_t)rf->fid) : NULL;
		double calls = num(f, "calls"), total = num(f, "total_ms");

		i++;
		if (!of || isnan(calls) || isnan(total)) {
			cJSON_AddNullToObject(f, "corrected_total_ms");
			cJSON_AddNullToObject(f, "corrected_mean_ms");
			cJSON_AddNullToObject(f, "corrected_min_ms");
			cJSON_AddNullToObject(f, "corrected_p50_ms");
			continue;
		}
		add_corrected(f, "corrected_total_ms", total, of->cost_ns);
		add_corrected(f, "corrected_mean_ms", calls ? total / calls : NAN,
			      calls ? of->cost_ns / calls : 0);
		/* per call, from the calls whose entry was seen: the fastest
		 * one is the one nothing else got in the way of */
		add_corrected(f, "corrected_min_ms",
			      of->corrected.count ? (double)of->corrected.min / 1e6 : NAN, 0);
		add_corrected(f, "corrected_p50_ms",
			      of->corrected.count ? pt_dist__quantile(&of->corrected, 0.5) / 1e6
						  : NAN,
			      0);
	}
}

static void doc_steps(const struct view *v, cJSON *doc, cJSON *ov)
{
	cJSON *st = cJSON_GetObjectItem(doc, "stats"), *b;
	const struct pt_dist *d = pt_ovh__steps(v->ovh);
	double steps = num(st, "steps"), time_ms = num(st, "time_ms");
	double cost = pt_ovh__step_cost_ns(v->ovh);
	size_t i = 0;

	if (st && steps > 0 && d->count) {
		add_corrected(st, "corrected_time_ms", time_ms, cost);
		cJSON_AddNumberToObject(st, "corrected_mean_ms", r6(d->mean / 1e6));
		cJSON_AddNumberToObject(st, "corrected_min_ms", r6((double)d->min / 1e6));
		cJSON_AddNumberToObject(st, "corrected_p50_ms",
					r6(pt_dist__quantile(d, 0.5) / 1e6));
		cJSON_AddNumberToObject(st, "corrected_p90_ms",
					r6(pt_dist__quantile(d, 0.9) / 1e6));
		cJSON_AddNumberToObject(st, "corrected_p99_ms",
					r6(pt_dist__quantile(d, 0.99) / 1e6));
		cJSON_AddNumberToObject(ov, "per_step_ms", r6(cost / steps / 1e6));
		cJSON_AddNumberToObject(ov, "step_share",
					time_ms > 0 ? r6(cost / (time_ms * 1e6)) : 0);
	} else if (st) {
		cJSON_AddNullToObject(st, "corrected_time_ms");
		cJSON_AddNullToObject(st, "corrected_mean_ms");
		cJSON_AddNullToObject(st, "corrected_min_ms");
		cJSON_AddNullToObject(st, "corrected_p50_ms");
		cJSON_AddNullToObject(st, "corrected_p90_ms");
		cJSON_AddNullToObject(st, "corrected_p99_ms");
		cJSON_AddNullToObject(ov, "per_step_ms");
		cJSON_AddNullToObject(ov, "step_share");
	}
	cJSON_ArrayForEach(b, cJSON_GetObjectItem(doc, "buckets")) add_corrected(
		b, "corrected_total_ms", num(b, "total_ms"), pt_ovh__bucket_cost_ns(v->ovh, i++));
}

/* A sample's cost as this run measured it: the sample program's own run
 * time per run, from the kernel's BPF stats (sample/sampler.c); false:
 * not available, the bench's figure stays. */
static bool sample_cost(const struct run *r, double *ns)
{
	struct pt_sampler_stats ss;

	if (!r->smp)
		return false;
	pt_sampler__stats(r->smp, &ss);
	if (!ss.prog_runs)
		return false;
	*ns = (double)ss.prog_run_ns / (double)ss.prog_runs;
	return true;
}

void pt_run__overhead_doc(const struct run *r, const struct view *v, const struct pt_report *rep,
			  cJSON *doc)
{
	struct pt_calib cal = r->calib, *c = &cal;
	double sample_ns;
	cJSON *ov = cJSON_AddObjectToObject(doc, "overhead"), *kinds, *hits, *meta, *x;
	double added = 0, frames = NAN, samples = NAN, dur;
	struct rusage ru;

	if (!ov)
		return;
	cJSON_AddBoolToObject(ov, "calibrated", c->ok);
	if (!c->ok) {
		cJSON_AddStringToObject(ov, "why", c->why);
		return;
	}
	if (sample_cost(r, &sample_ns)) {
		c->pair_ns[PT_SITE_SAMPLE] = sample_ns;
		c->measured[PT_SITE_SAMPLE] = true;
	}
	kinds = cJSON_AddObjectToObject(ov, "kinds");
	hits = cJSON_AddObjectToObject(ov, "hits");
	meta = cJSON_GetObjectItem(doc, "meta");
	x = cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "python"), "evalframe");
	frames = num(x, "unnamed_frames");
	samples = num(cJSON_GetObjectItem(meta, "sampling"), "samples");
	for (int k = 0; k < PT_SITE_NKINDS && kinds && hits; k++) {
		cJSON *e = cJSON_AddObjectToObject(kinds, pt_site_kind__str(k));
		double n = (double)pt_ovh__hits(v->ovh, k);

		if (k == PT_SITE_SAMPLE && !isnan(samples))
			n = samples;
		if (k == PT_SITE_FRAME_UNNAMED)
			n = isnan(frames) ? 0 : frames; /* run-wide, from BPF's counter */
		cJSON_AddNumberToObject(e, "pair_ns", round(c->pair_ns[k]));
		cJSON_AddNumberToObject(e, "self_ns", round(c->self_ns[k]));
		cJSON_AddStringToObject(e, "source",
					!c->measured[k]	      ? "bench"
					: k == PT_SITE_SAMPLE ? "bpf-stats"
							      : "measured");
		cJSON_AddNumberToObject(hits, pt_site_kind__str(k), n);
		added += n * c->pair_ns[k];
	}
	if (!isnan(frames)) {
		/* the frame probe's hits on frames no py: probe names (in
		 * added_ms through their kind above) */
		x = cJSON_AddObjectToObject(ov, "unnamed_frames");
		cJSON_AddNumberToObject(x, "frames", frames);
		cJSON_AddNumberToObject(x, "added_ms",
					r6(frames * c->pair_ns[PT_SITE_FRAME_UNNAMED] / 1e6));
		cJSON_AddNumberToObject(x, "in_intervals",
					(double)pt_ovh__hits(v->ovh, PT_SITE_FRAME_UNNAMED));
	}
	cJSON_AddNumberToObject(ov, "added_ms", r6(added / 1e6));
	dur = num(meta, "duration_s");
	cJSON_AddNumberToObject(ov, "added_share", dur > 0 ? r6(added / (dur * 1e9)) : 0);
	doc_steps(v, doc, ov);
	doc_functions(v, rep, doc);
	if (!getrusage(RUSAGE_SELF, &ru)) {
		double ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;

		double att = (double)r->attach_cpu_ns / 1e6;

		cJSON_AddNumberToObject(ov, "proftrace_cpu_ms", r6(ms));
		cJSON_AddNumberToObject(ov, "proftrace_cpu_share",
					dur > 0 ? r6(ms / (dur * 1e3)) : 0);
		/* what attaching cost, apart from what running cost */
		cJSON_AddNumberToObject(ov, "attach_ms", r6((double)r->attach_ns / 1e6));
		cJSON_AddNumberToObject(ov, "attach_cpu_ms", r6(att));
		cJSON_AddNumberToObject(ov, "steady_cpu_ms", r6(ms > att ? ms - att : 0));
		cJSON_AddNumberToObject(ov, "steady_cpu_share",
					dur > 0 && ms > att ? r6((ms - att) / (dur * 1e3)) : 0);
	}
	cJSON_AddBoolToObject(ov, "calibration_cached", c->cached);
	cJSON_AddNumberToObject(ov, "calibration_s", r6(c->took_s));
}
