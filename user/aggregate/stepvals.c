// SPDX-License-Identifier: BSD-2-Clause
/*
 * stepvals: value records -> per-step figures -> throughput and KV bins.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stepvals.h"

int pt_stepvals__init(struct pt_stepvals *sv, const struct pt_config *cfg)
{
	size_t i, n = 0;

	memset(sv, 0, sizeof(*sv));
	sv->cfg = cfg;
	for (i = 0; i < cfg->nprobes; i++)
		for (unsigned int k = 0; k < cfg->probes[i].nvals; k++)
			n += cfg->probes[i].vals[k].role == PT_VROLE_COUNT;
	if (n) {
		sv->counts = calloc(n, sizeof(*sv->counts));
		if (!sv->counts)
			return -ENOMEM;
	}
	for (i = 0; i < cfg->nprobes; i++) {
		const struct pt_probe_spec *ps = &cfg->probes[i];

		for (unsigned int k = 0; k < ps->nvals; k++) {
			const struct pt_vexpr *e = &ps->vals[k];

			if (e->role == PT_VROLE_COUNT) {
				sv->counts[sv->ncounts].probe = ps;
				sv->counts[sv->ncounts++].expr = e;
			} else if (e->role < 3) {
				sv->role[e->role].probe = ps;
				sv->role[e->role].expr = e;
			}
		}
	}
	sv->nbins = cfg->nkv_bins;
	for (i = 0; i < sv->nbins; i++) {
		sv->bins[i].lo = cfg->kv_bins[i];
		sv->bins[i].hi = i + 1 < sv->nbins ? cfg->kv_bins[i + 1] : UINT64_MAX;
	}
	return 0;
}

void pt_stepvals__free(struct pt_stepvals *sv)
{
	for (size_t i = 0; i < sv->nbins; i++)
		pt_dist__free(&sv->bins[i].dur);
	free(sv->counts);
	memset(sv, 0, sizeof(*sv));
}

bool pt_stepvals__active(const struct pt_stepvals *sv)
{
	return sv->cfg && sv->cfg->nvals;
}

void pt_stepvals__bpf_spec(const struct pt_stepvals *sv, int spec, struct pt_val_spec *out)
{
	const struct pt_probe_spec *ps = &sv->cfg->probes[spec];

	memset(out, 0, sizeof(*out));
	out->n = ps->nvals;
	for (unsigned int k = 0; k < ps->nvals && k < PT_MAX_VALS; k++)
		out->e[k] = pt_vexpr__bpf(&ps->vals[k], sv->cfg->kv_reduce);
}

static struct pt_stepvals_count *count_of(struct pt_stepvals *sv, const struct pt_vexpr *e)
{
	for (size_t i = 0; i < sv->ncounts; i++)
		if (sv->counts[i].expr == e)
			return &sv->counts[i];
	return NULL;
}

static void missed_one(struct pt_stepvals *sv, const struct pt_vexpr *e, unsigned int reason)
{
	struct pt_stepvals_count *c;

	if (reason >= PT_VST_NREASONS)
		reason = PT_VST_FAULT;
	if (e->role == PT_VROLE_COUNT) {
		c = count_of(sv, e);
		if (c)
			c->missing[reason]++;
	} else if (e->role < 3) {
		sv->role[e->role].missing[reason]++;
	}
}

static bool is_ret(const struct pt_vexpr *e)
{
	return e->src == PT_VSRC_RET || e->src == PT_VSRC_PYRET;
}

void pt_stepvals__missed(struct pt_stepvals *sv, int spec, bool at_exit, unsigned int reason)
{
	const struct pt_probe_spec *ps;

	if (spec < 0 || (size_t)spec >= sv->cfg->nprobes)
		return;
	ps = &sv->cfg->probes[spec];
	for (unsigned int k = 0; k < ps->nvals; k++)
		if (is_ret(&ps->vals[k]) == at_exit)
			missed_one(sv, &ps->vals[k], reason);
}

void pt_stepvals__record(struct pt_stepvals *sv, struct pt_agg *agg, int spec,
			 const struct pt_rec_vals *r, size_t size)
{
	const struct pt_probe_spec *ps;
	const int64_t *elem = (const int64_t *)(r + 1);
	double x;
	int st;

	if (spec < 0 || (size_t)spec >= sv->cfg->nprobes || size < sizeof(*r) ||
	    r->nelem > PT_VAL_MAX_ELEMS || size < sizeof(*r) + (size_t)r->nelem * sizeof(int64_t)) {
		sv->bad_records++;
		return;
	}
	ps = &sv->cfg->probes[spec];
	for (unsigned int k = 0; k < ps->nvals && k < PT_MAX_VALS; k++) {
		const struct pt_vexpr *e = &ps->vals[k];
		const struct pt_val *v = &r->v[k];
		struct pt_stepvals_count *c;
		bool in;

		if (is_ret(e) != (r->at_exit != 0))
			continue; /* the other side of the call */
		st = pt_vexpr__reduce(v, pt_vexpr__reduce_fn(e, sv->cfg->kv_reduce), elem, r->nelem,
				      &x);
		if (st) {
			missed_one(sv, e, (unsigned int)st);
			continue;
		}
		in = pt_agg__value(agg, r->tid, r->pid, e->role, x, r->t_entry);
		if (e->role == PT_VROLE_COUNT) {
			c = count_of(sv, e);
			if (!c)
				continue;
			c->read++;
			if (!in) {
				c->outside++;
				c->tokens_sum_outside += x > 0 ? (uint64_t)x : 0;
			}
		} else if (e->role < 3) {
			sv->role[e->role].read++;
			sv->role[e->role].outside += !in;
		}
	}
}

static struct pt_stepvals_bin *bin_of(struct pt_stepvals *sv, double kv)
{
	for (size_t i = sv->nbins; i-- > 0;)
		if (kv >= (double)sv->bins[i].lo)
			return &sv->bins[i];
	return NULL; /* negative: in no bin */
}

void pt_stepvals__step(struct pt_stepvals *sv, const struct pt_step *s)
{
	uint64_t dur = s->t_end > s->t_start ? s->t_end - s->t_start : 0;
	bool tok = s->vmask & (1u << PT_VROLE_TOKENS);
	struct pt_stepvals_bin *b;

	sv->steps++;
	for (int r = 0; r < 3; r++)
		if (s->vmask & (1u << r))
			sv->role[r].steps++;
	if (tok) {
		sv->tok_steps++;
		sv->tokens += s->val[PT_VROLE_TOKENS];
		sv->tok_ns += (double)dur;
	}
	if (s->vmask & (1u << PT_VROLE_BATCH)) {
		sv->batch_steps++;
		sv->batch_sum += s->val[PT_VROLE_BATCH];
	}
	if (!(s->vmask & (1u << PT_VROLE_KVLEN)))
		return;
	sv->kv_steps++;
	sv->kv_sum += s->val[PT_VROLE_KVLEN];
	b = bin_of(sv, s->val[PT_VROLE_KVLEN]);
	if (!b)
		return;
	pt_dist__add(&b->dur, dur);
	if (tok) {
		b->tokens += s->val[PT_VROLE_TOKENS];
		b->tok_steps++;
		b->tok_ns += (double)dur;
	}
}

const char *pt_stepvals__reason_name(unsigned int reason)
{
	if (reason == PT_VST_FIRST_CALL)
		return "first_call";
	if (reason == PT_VST_LOST)
		return "lost";
	return pt_vexpr__status_name(reason);
}
