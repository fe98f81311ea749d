// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regions_out.h"
#include "trace.h"
#include "util/util.h"

#define BIAS_NS PT_RTRACE_BIAS_NS

/* A number, also one written as raw text. */
static bool num(const cJSON *o, const char *k, double *v)
{
	const cJSON *it = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	char *end;

	if (cJSON_IsNumber(it)) {
		*v = it->valuedouble;
		return true;
	}
	if (cJSON_IsRaw(it) && it->valuestring) {
		*v = strtod(it->valuestring, &end);
		return end != it->valuestring && !*end && isfinite(*v);
	}
	return false;
}

/* An integer, exact also past 2^53 when written as raw text. */
static bool i64(const cJSON *o, const char *k, int64_t *v)
{
	const cJSON *it = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	char *end;

	if (cJSON_IsNumber(it) && fabs(it->valuedouble) < 9e18) {
		*v = (int64_t)it->valuedouble;
		return true;
	}
	if (cJSON_IsRaw(it) && it->valuestring) {
		errno = 0;
		*v = strtoll(it->valuestring, &end, 10);
		return end != it->valuestring && !*end && !errno;
	}
	return false;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static bool is_ours(const cJSON *e)
{
	const char *cat = str(e, "cat"), *ph = str(e, "ph"), *nm = str(e, "name");
	double pid, tid;

	if (cat && (!strcmp(cat, "region") || !strcmp(cat, "region_kernel")))
		return true;
	return ph && nm && !strcmp(ph, "M") && !strcmp(nm, "thread_name") && num(e, "pid", &pid) &&
	       num(e, "tid", &tid) && pid >= PT_TRACE_GPU_PID && tid >= PT_REGION_LANE_TID;
}

int pt_rtrace__open(struct pt_rtrace *t, cJSON *doc, char *err, size_t errlen)
{
	cJSON *evs, *e, *next;
	const char *tool;
	size_t cap = 0;

	memset(t, 0, sizeof(*t));
	t->doc = doc;
	evs = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
	tool = str(cJSON_GetObjectItemCaseSensitive(doc, "otherData"), "tool");
	if (!i64(cJSON_GetObjectItemCaseSensitive(doc, "otherData"), "t0_mono_ns", &t->t0_mono_ns))
		t->t0_mono_ns = 0;
	if (!cJSON_IsArray(evs) || !tool || strcmp(tool, "proftrace")) {
		pt_seterr(err, errlen,
			  "not a trace.json written by proftrace (no traceEvents, or "
			  "otherData.tool is not \"proftrace\")");
		return -EINVAL;
	}
	for (e = evs->child; e; e = next) {
		const char *ph = str(e, "ph"), *cat = str(e, "cat"), *nm = str(e, "name");
		double ts, dur;
		int64_t s, d;

		next = e->next;
		if (is_ours(e)) {
			cJSON_Delete(cJSON_DetachItemViaPointer(evs, e));
			t->removed++;
			continue;
		}
		if (!ph || strcmp(ph, "X") || !cat || strcmp(cat, "kernel") || !nm ||
		    !num(e, "ts", &ts) || !num(e, "dur", &dur) || dur < 0 || fabs(ts) > 9e11 ||
		    dur > 9e11)
			continue;
		if (t->n == cap) {
			size_t c = cap ? cap * 2 : 256;
			struct pt_kspan *sp = realloc(t->spans, c * sizeof(*sp));
			cJSON **kv;

			if (!sp)
				return -ENOMEM;
			t->spans = sp;
			kv = realloc(t->kev, c * sizeof(*kv));
			if (!kv)
				return -ENOMEM;
			t->kev = kv;
			cap = c;
		}
		s = llround(ts * 1000.0) + BIAS_NS;
		d = llround(dur * 1000.0);
		t->spans[t->n] = (struct pt_kspan){ nm, (uint64_t)s, (uint64_t)(s + d),
						    str(cJSON_GetObjectItemCaseSensitive(e, "args"),
							"mangled") };
		t->kev[t->n++] = e;
	}
	return 0;
}

void pt_rtrace__free(struct pt_rtrace *t)
{
	if (!t)
		return;
	free(t->spans);
	free(t->kev);
	memset(t, 0, sizeof(*t));
}

/* µs with 3 decimals, as trace.c writes them. */
static cJSON *add_us(cJSON *o, const char *k, int64_t ns)
{
	char buf[48];
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	snprintf(buf, sizeof(buf), "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000,
		 (unsigned int)(a % 1000));
	return cJSON_AddRawToObject(o, k, buf);
}

static cJSON *add_i64(cJSON *o, const char *k, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return cJSON_AddRawToObject(o, k, buf);
}

/* One lane: the ends of the slices open on it, the kernel's at the bottom. */
struct lane {
	uint64_t *end;
	size_t n, cap;
	bool used; /* in this launch */
};

static int push(struct lane *l, uint64_t end)
{
	if (l->n == l->cap) {
		size_t c = l->cap ? l->cap * 2 : 16;
		uint64_t *e = realloc(l->end, c * sizeof(*e));

		if (!e)
			return -ENOMEM;
		l->end = e;
		l->cap = c;
	}
	l->end[l->n++] = end;
	return 0;
}

/* Whether [a, b] nests on lane l (popping what ended by a). */
static bool fits(struct lane *l, uint64_t a, uint64_t b)
{
	while (l->n > 1 && l->end[l->n - 1] <= a)
		l->n--;
	return l->end[l->n - 1] >= b;
}

struct rsort {
	int64_t a, b; /* aligned: may fall before the bias (a region far outside) */
	size_t i;
};

static int rsort_cmp(const void *x, const void *y)
{
	const struct rsort *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b > q->b ? -1 : 1; /* the enclosing one first */
	return p->i < q->i ? -1 : p->i > q->i;
}

/* (pid, tid) of lane tracks named already. */
struct named {
	double (*pt)[2];
	size_t n;
};

static int name_lane(cJSON *evs, struct named *nd, double pid, double tid, double stream,
		     unsigned int lane)
{
	char name[64];
	cJSON *m, *args;
	void *p;

	for (size_t i = 0; i < nd->n; i++)
		if (nd->pt[i][0] == pid && nd->pt[i][1] == tid)
			return 0;
	p = realloc(nd->pt, (nd->n + 1) * sizeof(*nd->pt));
	if (!p)
		return -ENOMEM;
	nd->pt = p;
	nd->pt[nd->n][0] = pid;
	nd->pt[nd->n++][1] = tid;
	snprintf(name, sizeof(name), "stream %.0f regions %u", stream, lane);
	m = cJSON_CreateObject();
	if (!m)
		return -ENOMEM;
	cJSON_AddItemToArray(evs, m);
	args = cJSON_CreateObject();
	if (!cJSON_AddStringToObject(m, "ph", "M") || !cJSON_AddNumberToObject(m, "pid", pid) ||
	    !cJSON_AddNumberToObject(m, "tid", tid) ||
	    !cJSON_AddStringToObject(m, "name", "thread_name") || !args)
		return -ENOMEM;
	cJSON_AddItemToObject(m, "args", args);
	return cJSON_AddStringToObject(args, "name", name) ? 0 : -ENOMEM;
}

static cJSON *slice(cJSON *evs, double pid, double tid, int64_t ts, int64_t dur, const char *name,
		    const char *cat)
{
	cJSON *e = cJSON_CreateObject();

	if (!e)
		return NULL;
	cJSON_AddItemToArray(evs, e);
	if (!cJSON_AddStringToObject(e, "ph", "X") || !cJSON_AddNumberToObject(e, "pid", pid) ||
	    !cJSON_AddNumberToObject(e, "tid", tid) || !add_us(e, "ts", ts) ||
	    !add_us(e, "dur", dur) || !cJSON_AddStringToObject(e, "name", name) ||
	    !cJSON_AddStringToObject(e, "cat", cat))
		return NULL;
	return e;
}

static int merge_launch(struct pt_rtrace *t, cJSON *evs, const struct pt_region_set *s,
			const struct pt_region_launch *l, const struct pt_rmatch *m,
			struct lane *lanes, struct named *nd, struct pt_rtrace_stats *st)
{
	const struct pt_kspan *k = &t->spans[m->span];
	const cJSON *kev = t->kev[m->span];
	const cJSON *kargs = cJSON_GetObjectItemCaseSensitive(kev, "args");
	double pid = 0, tid = 0, corr = 0;
	struct rsort *o = calloc(l->nev + 1, sizeof(*o));
	unsigned int nlanes = 0;
	int e = -ENOMEM;

	if (!o)
		return -ENOMEM;
	num(kev, "pid", &pid);
	num(kev, "tid", &tid);
	num(kargs, "correlation", &corr);
	for (size_t i = 0; i < l->nev; i++) {
		/* wrapping sums: no signed overflow on any input (gcc wraps the casts) */
		int64_t a = (int64_t)(l->ev[i].start_ns + (uint64_t)m->offset_ns);
		int64_t b = (int64_t)((uint64_t)a + l->ev[i].dur_ns);

		o[i] = (struct rsort){ a, b, i };
	}
	qsort(o, l->nev, sizeof(*o), rsort_cmp);
	for (unsigned int j = 0; j < PT_REGION_MAX_LANES; j++) {
		lanes[j].n = 0;
		lanes[j].used = false;
	}
	for (size_t i = 0; i < l->nev; i++) {
		const struct pt_region *r = &l->ev[o[i].i];
		int64_t a = o[i].a, b = o[i].b, ks = (int64_t)k->start_ns, ke = (int64_t)k->end_ns;
		uint64_t ca, cb;
		unsigned int j;
		double ltid;
		cJSON *ev, *args;

		ca = (uint64_t)(a < ks ? ks : a > ke ? ke : a);
		cb = (uint64_t)(b > ke ? ke : b < (int64_t)ca ? (int64_t)ca : b);
		for (j = 0; j < nlanes && !fits(&lanes[j], ca, cb); j++)
			;
		if (j == nlanes) {
			if (nlanes == PT_REGION_MAX_LANES) {
				st->left_out++;
				continue;
			}
			lanes[nlanes].n = 0;
			if (push(&lanes[nlanes], k->end_ns))
				goto out;
			nlanes++;
		}
		if (push(&lanes[j], cb))
			goto out;
		ltid = j ? PT_REGION_LANE_TID + (double)j * 1000000 + tid : tid;
		if (j && !lanes[j].used) {
			cJSON *ke =
				slice(evs, pid, ltid, (int64_t)k->start_ns - BIAS_NS,
				      (int64_t)(k->end_ns - k->start_ns), k->name, "region_kernel");
			cJSON *ka = ke ? cJSON_AddObjectToObject(ke, "args") : NULL;

			if (!ka || !add_i64(ka, "launch", m->launch) ||
			    !cJSON_AddNumberToObject(ka, "correlation", corr) ||
			    name_lane(evs, nd, pid, ltid, tid, j))
				goto out;
		}
		lanes[j].used = true;
		ev = slice(evs, pid, ltid, (int64_t)ca - BIAS_NS, (int64_t)(cb - ca),
			   s->tags[r->tag], "region");
		args = ev ? cJSON_AddObjectToObject(ev, "args") : NULL;
		if (!args || !cJSON_AddStringToObject(args, "kernel", k->name) ||
		    !add_i64(args, "launch", m->launch) ||
		    !cJSON_AddNumberToObject(args, "correlation", corr) ||
		    !add_i64(args, "tid", r->tid) || !cJSON_AddNumberToObject(args, "lane", j))
			goto out;
		if ((int64_t)ca != a || (int64_t)cb != b) {
			uint64_t out1 = a < ks ? (uint64_t)ks - (uint64_t)a : 0;
			uint64_t out2 = b > ke ? (uint64_t)b - (uint64_t)ke : 0;

			if (!add_i64(args, "outside_ns", (int64_t)(out1 > out2 ? out1 : out2)))
				goto out;
			st->clamped++;
		}
		st->written++;
	}
	if (nlanes > st->lanes)
		st->lanes = nlanes;
	e = 0;
out:
	free(o);
	return e;
}

struct esort {
	cJSON *e;
	double ts, dur;
	size_t i;
	bool meta;
};

static int esort_cmp(const void *x, const void *y)
{
	const struct esort *p = x, *q = y;

	if (p->meta != q->meta)
		return p->meta ? -1 : 1;
	if (!p->meta && p->ts != q->ts)
		return p->ts < q->ts ? -1 : 1;
	if (!p->meta && p->dur != q->dur)
		return p->dur > q->dur ? -1 : 1;
	return p->i < q->i ? -1 : p->i > q->i;
}

/* traceEvents by time, metadata first, the enclosing slice first. */
static int sort_events(cJSON *evs)
{
	size_t n = (size_t)cJSON_GetArraySize(evs), i = 0;
	struct esort *a;
	cJSON *e;

	if (n < 2)
		return 0;
	a = calloc(n, sizeof(*a));
	if (!a)
		return -ENOMEM;
	for (e = evs->child; e; e = e->next, i++) {
		const char *ph = str(e, "ph");

		a[i] = (struct esort){ .e = e, .i = i };
		a[i].meta = (ph && !strcmp(ph, "M")) || !num(e, "ts", &a[i].ts);
		if (!num(e, "dur", &a[i].dur))
			a[i].dur = 0;
	}
	qsort(a, n, sizeof(*a), esort_cmp);
	evs->child = a[0].e;
	for (i = 0; i < n; i++) {
		a[i].e->next = i + 1 < n ? a[i + 1].e : NULL;
		a[i].e->prev = i ? a[i - 1].e : a[n - 1].e; /* cJSON: the head's prev is the tail */
	}
	free(a);
	return 0;
}

int pt_rtrace__merge(struct pt_rtrace *t, const struct pt_region_set *s,
		     const struct pt_regions_result *res, struct pt_rtrace_stats *st)
{
	cJSON *evs = cJSON_GetObjectItemCaseSensitive(t->doc, "traceEvents");
	struct lane *lanes = calloc(PT_REGION_MAX_LANES, sizeof(*lanes));
	struct named nd = { 0 };
	cJSON *od;
	int e = 0;

	memset(st, 0, sizeof(*st));
	if (!lanes)
		return -ENOMEM;
	for (size_t i = 0; !e && i < res->nm; i++)
		if (res->m[i].span >= 0)
			e = merge_launch(t, evs, s, &s->l[i], &res->m[i], lanes, &nd, st);
	for (unsigned int j = 0; j < PT_REGION_MAX_LANES; j++)
		free(lanes[j].end);
	free(lanes);
	free(nd.pt);
	if (!e)
		e = sort_events(evs);
	od = cJSON_GetObjectItemCaseSensitive(t->doc, "otherData");
	if (!e && cJSON_IsObject(od)) {
		cJSON_DeleteItemFromObjectCaseSensitive(od, "regions");
		if (!cJSON_AddNumberToObject(od, "regions", (double)st->written))
			e = -ENOMEM;
	}
	return e;
}

static void ms(cJSON *o, const char *k, double ns)
{
	cJSON_AddNumberToObject(o, k, ns / 1e6);
}

static const char *file_of(const struct pt_region_launch *l)
{
	return l->source ? l->source : "";
}

int pt_regions_out__add_summary(cJSON *summary, const struct pt_region_set *s,
				const struct pt_regions_result *res,
				const struct pt_rtrace_stats *st, int64_t t0_mono_ns,
				const char *const *files, size_t nfiles)
{
	cJSON *g = cJSON_GetObjectItemCaseSensitive(summary, "gpu"), *o, *a, *x, *al;

	if (!cJSON_IsObject(g))
		return -EINVAL;
	cJSON_DeleteItemFromObjectCaseSensitive(g, "regions");
	o = cJSON_AddObjectToObject(g, "regions");
	if (!o)
		return -ENOMEM;
	a = cJSON_AddArrayToObject(o, "files");
	for (size_t i = 0; a && i < nfiles; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(files[i]));
	cJSON_AddNumberToObject(o, "launches", (double)res->nm);
	cJSON_AddNumberToObject(o, "launches_matched", (double)res->launches_matched);
	cJSON_AddNumberToObject(o, "regions", (double)res->regions);
	cJSON_AddNumberToObject(o, "regions_written", (double)st->written);
	cJSON_AddNumberToObject(o, "regions_invalid", (double)res->regions_invalid);
	cJSON_AddNumberToObject(o, "regions_left_out", (double)st->left_out);
	cJSON_AddNumberToObject(o, "lanes", (double)st->lanes);
	al = cJSON_AddObjectToObject(o, "alignment");
	if (al) {
		cJSON_AddStringToObject(al, "mode",
					res->global ? "one_offset_per_clock" : "per_launch");
		add_i64(al, "residual_max_ns", (int64_t)res->residual_max_ns);
		cJSON_AddNumberToObject(al, "regions_outside", (double)res->regions_outside);
		cJSON_AddNumberToObject(al, "regions_clamped", (double)st->clamped);
		x = cJSON_AddArrayToObject(al, "clocks");
		for (size_t i = 0; x && i < res->nclocks; i++) {
			const struct pt_rclock *c = &res->clocks[i];
			cJSON *y = cJSON_CreateObject();

			if (!y)
				continue;
			cJSON_AddItemToArray(x, y);
			cJSON_AddStringToObject(y, "clock", c->clock);
			cJSON_AddNumberToObject(y, "launches", (double)c->launches);
			cJSON_AddStringToObject(y, "mode",
						c->one_offset ? "one_offset" : "per_launch");
			/* on CLOCK_MONOTONIC: ts 0 of the trace is t0_mono_ns */
			add_i64(y, "offset_ns",
				(int64_t)((uint64_t)c->offset_ns - BIAS_NS + (uint64_t)t0_mono_ns));
			add_i64(y, "offset_spread_ns",
				(int64_t)((uint64_t)c->offset_max_ns - (uint64_t)c->offset_min_ns));
		}
	}
	a = cJSON_AddArrayToObject(o, "unmatched");
	for (size_t i = 0; a && i < res->nm; i++) {
		const struct pt_rmatch *m = &res->m[i];

		if (m->span >= 0 || !(x = cJSON_CreateObject()))
			continue;
		cJSON_AddItemToArray(a, x);
		if (m->kernel)
			cJSON_AddStringToObject(x, "kernel", m->kernel);
		else
			cJSON_AddNullToObject(x, "kernel");
		if (m->launch >= 0)
			add_i64(x, "launch", m->launch);
		else
			cJSON_AddNullToObject(x, "launch");
		cJSON_AddStringToObject(x, "file", file_of(&s->l[i]));
		cJSON_AddNumberToObject(x, "regions", (double)s->l[i].nev);
		cJSON_AddStringToObject(x, "why", m->why ? m->why : "");
	}
	a = cJSON_AddArrayToObject(o, "overflowed");
	for (size_t i = 0; a && i < res->nm; i++) {
		if (!s->l[i].overflow || !(x = cJSON_CreateObject()))
			continue;
		cJSON_AddItemToArray(a, x);
		if (res->m[i].kernel)
			cJSON_AddStringToObject(x, "kernel", res->m[i].kernel);
		else
			cJSON_AddNullToObject(x, "kernel");
		add_i64(x, "launch", res->m[i].launch);
		cJSON_AddStringToObject(x, "file", file_of(&s->l[i]));
		cJSON_AddNumberToObject(x, "recorded", (double)s->l[i].recorded);
		cJSON_AddNumberToObject(x, "read", (double)s->l[i].nev);
	}
	a = cJSON_AddArrayToObject(o, "kernels");
	for (size_t i = 0; a && i < res->nkernels; i++) {
		if (!(x = cJSON_CreateObject()))
			continue;
		cJSON_AddItemToArray(a, x);
		cJSON_AddStringToObject(x, "name", res->kernels[i].name);
		cJSON_AddNumberToObject(x, "launches", (double)res->kernels[i].launches);
		cJSON_AddNumberToObject(x, "launches_with_regions",
					(double)res->kernels[i].with_regions);
	}
	a = cJSON_AddArrayToObject(o, "tags");
	for (size_t i = 0; a && i < res->ntags; i++) {
		const struct pt_rtag *t = &res->tags[i];

		if (!(x = cJSON_CreateObject()))
			continue;
		cJSON_AddItemToArray(a, x);
		cJSON_AddStringToObject(x, "kernel", t->kernel);
		cJSON_AddStringToObject(x, "tag", s->tags[t->tag]);
		cJSON_AddNumberToObject(x, "count", (double)t->count);
		cJSON_AddNumberToObject(x, "launches", (double)t->launches);
		ms(x, "total_ms", (double)t->total_ns);
		ms(x, "mean_ms", (double)t->mean_ns);
		ms(x, "p50_ms", (double)t->p50_ns);
		ms(x, "p99_ms", (double)t->p99_ns);
		cJSON_AddNumberToObject(x, "share_of_kernel",
					t->kernel_ns ? (double)t->union_ns / (double)t->kernel_ns
						     : 0);
	}
	return 0;
}

/* ---- JSON read back without losing big integers ---- */

/* in the text, an escape (a raw control character is not JSON); parsed, \x01 */
#define RAW_TEXT "\\u0001pt-raw:"
#define RAW_MARK "\x01pt-raw:"

static void restore_raw(cJSON *it)
{
	for (; it; it = it->next) {
		if (cJSON_IsString(it) && it->valuestring &&
		    !strncmp(it->valuestring, RAW_MARK, sizeof(RAW_MARK) - 1)) {
			memmove(it->valuestring, it->valuestring + sizeof(RAW_MARK) - 1,
				strlen(it->valuestring) - (sizeof(RAW_MARK) - 1) + 1);
			it->type = cJSON_Raw;
		}
		if (it->child)
			restore_raw(it->child);
	}
}

cJSON *pt_regions_out__parse_json(const char *txt, size_t len, bool all_raw)
{
	/* each marked integer grows by the marker and two quotes */
	size_t cap = len + 1, n = 0;
	char *out = malloc(cap), *o2;
	bool in_str = false, esc = false;
	cJSON *j;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		char c = txt[i];
		size_t k = i;

		if (!in_str && (c == '-' || (c >= '0' && c <= '9')) &&
		    (!i || !strchr("0123456789.eE+-", txt[i - 1]))) {
			size_t digits = 0;
			bool frac = false;

			if (txt[k] == '-')
				k++;
			while (k < len && txt[k] >= '0' && txt[k] <= '9') {
				k++;
				digits++;
			}
			/* the rest of the number: fraction, exponent */
			if (k < len && txt[k] == '.') {
				frac = true;
				for (k++; k < len && txt[k] >= '0' && txt[k] <= '9'; k++)
					;
			}
			if (k < len && (txt[k] == 'e' || txt[k] == 'E')) {
				frac = true;
				k++;
				if (k < len && (txt[k] == '+' || txt[k] == '-'))
					k++;
				while (k < len && txt[k] >= '0' && txt[k] <= '9')
					k++;
			}
			/* all of them, or integers too long for a double's 53 bits */
			if (digits && (all_raw || (digits >= 16 && !frac))) {
				if (n + (k - i) + sizeof(RAW_TEXT) + 2 >= cap) {
					cap = (cap + (k - i) + sizeof(RAW_TEXT) + 2) * 2;
					o2 = realloc(out, cap);
					if (!o2) {
						free(out);
						return NULL;
					}
					out = o2;
				}
				out[n++] = '"';
				memcpy(out + n, RAW_TEXT, sizeof(RAW_TEXT) - 1);
				n += sizeof(RAW_TEXT) - 1;
				memcpy(out + n, txt + i, k - i);
				n += k - i;
				out[n++] = '"';
				i = k - 1;
				continue;
			}
		}
		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		}
		if (n + 1 >= cap) {
			cap *= 2;
			o2 = realloc(out, cap);
			if (!o2) {
				free(out);
				return NULL;
			}
			out = o2;
		}
		out[n++] = c;
	}
	j = cJSON_ParseWithLength(out, n);
	free(out);
	if (j)
		restore_raw(j);
	return j;
}

int pt_rtrace__write(FILE *f, const cJSON *doc)
{
	const cJSON *evs = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"), *it;
	bool first = true;
	char *txt;

	/* one event a line, as proftrace writes it */
	if (fputs("{\"traceEvents\":[", f) == EOF)
		return -EIO;
	cJSON_ArrayForEach(it, evs)
	{
		txt = cJSON_PrintUnformatted(it);
		if (!txt)
			return -ENOMEM;
		fprintf(f, "%s\n%s", first ? "" : ",", txt);
		free(txt);
		first = false;
	}
	fputs("\n]", f);
	for (it = doc->child; it; it = it->next) {
		if (it == evs || !it->string)
			continue;
		txt = cJSON_PrintUnformatted(it);
		if (!txt)
			return -ENOMEM;
		fputs(",\n", f);
		fputs("\"", f);
		fputs(it->string, f); /* our own keys: no escapes needed */
		fprintf(f, "\":%s", txt);
		free(txt);
	}
	fputs("}\n", f);
	return ferror(f) ? -EIO : 0;
}
