// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/proftrace.h"
#include "top.h"
#include "util/search.h"

struct fnrec {
	struct pt_top_fn pub;
	uint64_t key;
	struct pt_top_line *lines;
	size_t cap;
	uint64_t mark;	     /* sample number it was last counted in */
	uint32_t outer_line; /* its outermost frame's line in that sample */
};

struct pt_top {
	struct fnrec *fns;
	size_t nfns, cap;
	uint32_t *slot; /* key hash -> index + 1 */
	size_t nslots;
	size_t nlines; /* over all functions */
	uint64_t nsample;
	struct pt_top_stats st;
};

struct pt_top *pt_top__new(void)
{
	struct pt_top *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nslots = 256;
	t->slot = calloc(t->nslots, sizeof(*t->slot));
	if (!t->slot) {
		free(t);
		return NULL;
	}
	return t;
}

void pt_top__free(struct pt_top *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nfns; i++) {
		free((char *)t->fns[i].pub.qualname);
		free((char *)t->fns[i].pub.filename);
		free(t->fns[i].lines);
	}
	free(t->fns);
	free(t->slot);
	free(t);
}

static bool same(const struct fnrec *r, const struct pt_sframe *f)
{
	return r->key == f->key && r->pub.first_line == f->first_line &&
	       !strcmp(r->pub.qualname, f->qualname) && !strcmp(r->pub.filename, f->filename);
}

static size_t slot_of(const struct pt_top *t, const struct pt_sframe *f)
{
	size_t i = (size_t)((f->key * 0x9e3779b97f4a7c15ull) >> 32) & (t->nslots - 1);

	while (t->slot[i] && !same(&t->fns[t->slot[i] - 1], f))
		i = (i + 1) & (t->nslots - 1);
	return i;
}

static int grow_slots(struct pt_top *t)
{
	size_t n = t->nslots * 2;
	uint32_t *v = calloc(n, sizeof(*v));

	if (!v)
		return -ENOMEM;
	free(t->slot);
	t->slot = v;
	t->nslots = n;
	for (size_t k = 0; k < t->nfns; k++) {
		struct pt_sframe f = { .key = t->fns[k].key,
				       .qualname = t->fns[k].pub.qualname,
				       .filename = t->fns[k].pub.filename,
				       .first_line = t->fns[k].pub.first_line };

		t->slot[slot_of(t, &f)] = (uint32_t)k + 1;
	}
	return 0;
}

/* f's function: its record, NULL when past the bound (*oom: no memory). */
static struct fnrec *fn_of(struct pt_top *t, const struct pt_sframe *f, bool *oom)
{
	size_t i = slot_of(t, f);
	struct fnrec *r;

	if (t->slot[i])
		return &t->fns[t->slot[i] - 1];
	if (t->nfns == PT_TOP_MAX_FUNCS) {
		t->st.frames_not_kept++;
		return NULL;
	}
	if ((t->nfns + 1) * 2 > t->nslots) {
		if (grow_slots(t))
			goto oom;
		i = slot_of(t, f);
	}
	if (t->nfns == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct fnrec *v = realloc(t->fns, cap * sizeof(*v));

		if (!v)
			goto oom;
		t->fns = v;
		t->cap = cap;
	}
	r = &t->fns[t->nfns];
	memset(r, 0, sizeof(*r));
	r->key = f->key;
	r->pub.qualname = strdup(f->qualname);
	r->pub.filename = strdup(f->filename);
	r->pub.first_line = f->first_line;
	r->pub.last_line = f->last_line;
	if (!r->pub.qualname || !r->pub.filename) {
		free((char *)r->pub.qualname);
		free((char *)r->pub.filename);
		goto oom;
	}
	t->slot[i] = (uint32_t)++t->nfns;
	return r;
oom:
	*oom = true;
	return NULL;
}

static bool line_before(const void *elem, const void *ln)
{
	return ((const struct pt_top_line *)elem)->line < *(const uint32_t *)ln;
}

/* Line ln of r, made when new: NULL past the bound or out of memory. */
static struct pt_top_line *line_of(struct pt_top *t, struct fnrec *r, uint32_t ln, bool *oom)
{
	size_t lo = pt_lower_bound(r->lines, r->pub.nlines, sizeof(*r->lines), &ln, line_before);

	if (lo < r->pub.nlines && r->lines[lo].line == ln)
		return &r->lines[lo];
	if (t->nlines == PT_TOP_MAX_LINES) {
		t->st.lines_not_kept++;
		return NULL;
	}
	if (r->pub.nlines == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;
		struct pt_top_line *v = realloc(r->lines, cap * sizeof(*v));

		if (!v) {
			*oom = true;
			return NULL;
		}
		r->lines = v;
		r->pub.lines = v;
		r->cap = cap;
	}
	memmove(&r->lines[lo + 1], &r->lines[lo], (r->pub.nlines - lo) * sizeof(*r->lines));
	memset(&r->lines[lo], 0, sizeof(*r->lines));
	r->lines[lo].line = ln;
	r->pub.nlines++;
	t->nlines++;
	return &r->lines[lo];
}

int pt_top__add(struct pt_top *t, const struct pt_stacks_sample *s)
{
	size_t n = s->n < PT_STACKS_MAX_FRAMES ? s->n : PT_STACKS_MAX_FRAMES;
	uint32_t seen[PT_STACKS_MAX_FRAMES];
	size_t nseen = 0;
	bool oom = false;

	if (!s->weight_ns)
		return 0;
	t->nsample++;
	/* innermost to outermost: a function's last frame is its outermost */
	for (size_t i = 0; i < n && !oom; i++) {
		const struct pt_sframe *f = &s->f[i];
		struct fnrec *r;

		if (!f->key || !f->qualname || !f->filename)
			continue;
		r = fn_of(t, f, &oom);
		if (!r)
			continue;
		if (!i) {
			struct pt_top_line *l = f->line ? line_of(t, r, f->line, &oom) : NULL;

			pt_stacks_time__add(&r->pub.self, s);
			if (l)
				pt_stacks_time__add(&l->self, s);
		}
		if (r->mark != t->nsample) {
			r->mark = t->nsample;
			pt_stacks_time__add(&r->pub.total, s);
			seen[nseen++] = (uint32_t)(r - t->fns);
		}
		r->outer_line = f->line;
	}
	for (size_t k = 0; k < nseen && !oom; k++) {
		struct fnrec *r = &t->fns[seen[k]];
		struct pt_top_line *l = r->outer_line ? line_of(t, r, r->outer_line, &oom) : NULL;

		if (l)
			pt_stacks_time__add(&l->total, s);
	}
	return oom ? -ENOMEM : 0;
}

size_t pt_top__nfuncs(const struct pt_top *t)
{
	return t ? t->nfns : 0;
}

const struct pt_top_fn *pt_top__func(const struct pt_top *t, size_t i)
{
	return t && i < t->nfns ? &t->fns[i].pub : NULL;
}

const struct pt_top_stats *pt_top__stats(const struct pt_top *t)
{
	return &t->st;
}

/* -1 when a ranks before b. */
static int cmp_time(const struct pt_stacks_time *as, const struct pt_stacks_time *at,
		    const struct pt_stacks_time *bs, const struct pt_stacks_time *bt)
{
	if (as->on_ns != bs->on_ns)
		return as->on_ns > bs->on_ns ? -1 : 1;
	if (as->off_ns != bs->off_ns)
		return as->off_ns > bs->off_ns ? -1 : 1;
	if (at->on_ns != bt->on_ns)
		return at->on_ns > bt->on_ns ? -1 : 1;
	if (at->off_ns != bt->off_ns)
		return at->off_ns > bt->off_ns ? -1 : 1;
	return 0;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct pt_top_fn *x = *(const struct pt_top_fn *const *)a;
	const struct pt_top_fn *y = *(const struct pt_top_fn *const *)b;
	int c = cmp_time(&x->self, &x->total, &y->self, &y->total);

	if (c)
		return c;
	c = strcmp(x->qualname, y->qualname);
	if (c)
		return c;
	c = strcmp(x->filename, y->filename);
	return c ? c : (x->first_line > y->first_line) - (x->first_line < y->first_line);
}

static int cmp_line(const void *a, const void *b)
{
	const struct pt_top_lref *x = a, *y = b;
	int c = cmp_time(&x->line->self, &x->line->total, &y->line->self, &y->line->total);

	if (c)
		return c;
	c = cmp_fn(&x->fn, &y->fn);
	return c ? c : (x->line->line > y->line->line) - (x->line->line < y->line->line);
}

static bool has_time(const struct pt_stacks_time *t)
{
	return t->on_ns || t->off_ns;
}

size_t pt_top__rank_funcs(const struct pt_top *t, const struct pt_top_fn **out, size_t max)
{
	const struct pt_top_fn **v;
	size_t n = 0;

	if (!t || !max || !t->nfns)
		return 0;
	v = malloc(t->nfns * sizeof(*v));
	if (!v)
		return 0;
	for (size_t i = 0; i < t->nfns; i++)
		if (has_time(&t->fns[i].pub.total))
			v[n++] = &t->fns[i].pub;
	qsort(v, n, sizeof(*v), cmp_fn);
	n = n < max ? n : max;
	memcpy(out, v, n * sizeof(*v));
	free(v);
	return n;
}

size_t pt_top__rank_lines(const struct pt_top *t, struct pt_top_lref *out, size_t max)
{
	struct pt_top_lref *v;
	size_t n = 0;

	if (!t || !max || !t->nlines)
		return 0;
	v = malloc(t->nlines * sizeof(*v));
	if (!v)
		return 0;
	for (size_t i = 0; i < t->nfns; i++)
		for (size_t k = 0; k < t->fns[i].pub.nlines; k++)
			if (has_time(&t->fns[i].lines[k].self))
				v[n++] =
					(struct pt_top_lref){ &t->fns[i].pub, &t->fns[i].lines[k] };
	qsort(v, n, sizeof(*v), cmp_line);
	n = n < max ? n : max;
	memcpy(out, v, n * sizeof(*v));
	free(v);
	return n;
}
