// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pymatch.h"
#include "pyprobe.h"
#include "pysrc.h"

#define MAX_SRC (64u << 20) /* a module source larger than this is not read */

/* code address -> what we answered, open addressing */
struct centry {
	uint64_t code; /* 0: empty */
	struct pt_py_code val;
};

struct src {
	char *filename;
	char *buf; /* NULL: unreadable */
	size_t len;
};

struct pt_pyprobe {
	struct pt_pyprobe_opts o;
	struct centry *tab;
	size_t cap, n;
	struct src *srcs;
	size_t nsrcs;
	size_t *specs; /* scratch: matching spec indices */
	struct pt_pyprobe_stats st;
};

struct pt_pyprobe *pt_pyprobe__new(const struct pt_pyprobe_opts *opts)
{
	struct pt_pyprobe *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	pp->o = *opts;
	pp->cap = 1024;
	pp->tab = calloc(pp->cap, sizeof(*pp->tab));
	pp->specs = calloc(opts->cfg->nprobes + 1, sizeof(*pp->specs));
	if (!pp->tab || !pp->specs) {
		pt_pyprobe__free(pp);
		return NULL;
	}
	return pp;
}

void pt_pyprobe__free(struct pt_pyprobe *pp)
{
	if (!pp)
		return;
	for (size_t i = 0; i < pp->nsrcs; i++) {
		free(pp->srcs[i].filename);
		free(pp->srcs[i].buf);
	}
	free(pp->srcs);
	free(pp->tab);
	free(pp->specs);
	free(pp);
}

static size_t slot_of(const struct pt_pyprobe *pp, uint64_t code)
{
	/* code objects are 16-byte aligned: mix the high bits in */
	uint64_t h = (code >> 4) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 20) & (pp->cap - 1);

	while (pp->tab[i].code && pp->tab[i].code != code)
		i = (i + 1) & (pp->cap - 1);
	return i;
}

static int remember(struct pt_pyprobe *pp, uint64_t code, const struct pt_py_code *val)
{
	size_t i;

	if ((pp->n + 1) * 2 > pp->cap) {
		struct centry *old = pp->tab, *nt;
		size_t oldcap = pp->cap;

		nt = calloc(oldcap * 2, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		pp->tab = nt;
		pp->cap = oldcap * 2;
		for (size_t k = 0; k < oldcap; k++)
			if (old[k].code)
				pp->tab[slot_of(pp, old[k].code)] = old[k];
		free(old);
	}
	i = slot_of(pp, code);
	if (!pp->tab[i].code)
		pp->n++;
	pp->tab[i].code = code;
	pp->tab[i].val = *val;
	return 0;
}

uint32_t pt_pyprobe__fid(const struct pt_pyprobe *pp, uint64_t code)
{
	size_t i = slot_of(pp, code);

	return pp->tab[i].code ? pp->tab[i].val.fid : PT_FID_PY_NONE;
}

const struct pt_pyprobe_stats *pt_pyprobe__stats(const struct pt_pyprobe *pp)
{
	return &pp->st;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (n == cap) {
			char *nb;

			if (cap >= MAX_SRC)
				goto fail;
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb)
				goto fail;
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
		goto fail;
	fclose(f);
	*len = n;
	return buf;
fail:
	fclose(f);
	free(buf);
	return NULL;
}

/* The module source, read once per file (only files some py: probe names). */
static const struct src *source(struct pt_pyprobe *pp, const char *filename)
{
	char path[PATH_MAX];
	struct src *v, *s;

	for (size_t i = 0; i < pp->nsrcs; i++)
		if (!strcmp(pp->srcs[i].filename, filename))
			return &pp->srcs[i];
	v = realloc(pp->srcs, (pp->nsrcs + 1) * sizeof(*v));
	if (!v)
		return NULL;
	pp->srcs = v;
	s = &v[pp->nsrcs];
	memset(s, 0, sizeof(*s));
	s->filename = strdup(filename);
	if (!s->filename)
		return NULL;
	if (filename[0] == '/')
		snprintf(path, sizeof(path), "%s%s", pp->o.root ? pp->o.root : "", filename);
	else
		snprintf(path, sizeof(path), "%s/%s", pp->o.cwd ? pp->o.cwd : ".", filename);
	s->buf = read_all(path, &s->len);
	pp->nsrcs++;
	return s;
}

const char *pt_pyprobe__source(struct pt_pyprobe *pp, const char *filename, size_t *len)
{
	const struct src *s = source(pp, filename);

	*len = s && s->buf ? s->len : 0;
	return s ? s->buf : NULL;
}

/* Before 3.11: the qualname from the source; co_name when it cannot be. */
static void qualname_from_source(struct pt_pyprobe *pp, struct pt_pycode *c)
{
	const struct src *s = source(pp, c->filename);

	if (s && s->buf &&
	    pt_pysrc__qualname(s->buf, s->len, c->firstlineno, c->name, c->qualname,
			       sizeof(c->qualname)) == 0)
		return;
	snprintf(c->qualname, sizeof(c->qualname), "%s", c->name);
	if (!pp->st.no_source++)
		snprintf(pp->st.no_source_file, sizeof(pp->st.no_source_file), "%s", c->filename);
}

void pt_pyprobe__qualname(struct pt_pyprobe *pp, struct pt_pycode *c)
{
	if (!c->has_qualname)
		qualname_from_source(pp, c);
	c->has_qualname = true; /* filled: not again */
}

int64_t pt_pyprobe__match(struct pt_pyprobe *pp, struct pt_pycode *c, bool *added)
{
	const struct pt_config *cfg = pp->o.cfg;
	size_t nspecs = 0;
	int r;

	*added = false;
	/* Module and class bodies run once at import: not functions. */
	for (size_t s = 0; s < cfg->nprobes && (c->flags & PT_CO_OPTIMIZED); s++)
		if (pt_pymatch__file(&cfg->probes[s], c->filename))
			pp->specs[nspecs++] = s;
	if (nspecs) {
		size_t k = 0;

		if (!c->has_qualname)
			qualname_from_source(pp, c);
		for (size_t j = 0; j < nspecs; j++)
			if (pt_pymatch__code(&cfg->probes[pp->specs[j]], c->filename, c->qualname))
				pp->specs[k++] = pp->specs[j];
		nspecs = k;
	}
	if (!nspecs)
		return PT_FID_PY_NONE;
	r = pt_resolver__nfuncs(pp->o.res);
	{
		size_t before = (size_t)r;

		r = pt_resolver__add_py(pp->o.res, pp->specs, nspecs, c->filename, c->qualname,
					c->firstlineno);
		if (r < 0)
			return r;
		*added = pt_resolver__nfuncs(pp->o.res) > before;
	}
	pp->st.matched++;
	return r;
}

int64_t pt_pyprobe__resolve(struct pt_pyprobe *pp, uint64_t code, const struct pt_py_code *seen,
			    struct pt_py_code *val, bool *added)
{
	size_t i = slot_of(pp, code);
	struct pt_pycode *c;
	int64_t fid = PT_FID_PY_NONE;
	int e;

	*added = false;
	memset(val, 0, sizeof(*val));
	val->fid = PT_FID_PY_NONE;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	e = pt_pycode__read_head(&pp->o.mem, pp->o.layout, &pp->o.types, code, c);
	pp->st.codes++;
	if (e) {
		pp->st.unreadable++; /* freed before we looked */
		goto gone;
	}
	val->filename = c->filename_obj;
	val->name = c->name_obj;
	val->firstlineno = c->firstlineno;
	if (val->filename != seen->filename || val->name != seen->name ||
	    val->firstlineno != seen->firstlineno) {
		pp->st.gone++; /* freed, and another object took its place */
		goto gone;
	}
	/* Seen before with the same fingerprint (the BPF entry was evicted
	 * from its LRU map): same answer, no string work. */
	if (pp->tab[i].code && pp->tab[i].val.filename == val->filename &&
	    pp->tab[i].val.name == val->name && pp->tab[i].val.firstlineno == val->firstlineno) {
		fid = pp->tab[i].val.fid;
		val->fid = (uint32_t)fid;
		goto out;
	}
	if (pt_pycode__read_names(&pp->o.mem, pp->o.layout, &pp->o.types, c)) {
		pp->st.unreadable++; /* freed while we read it */
		goto gone;
	}
	fid = pt_pyprobe__match(pp, c, added);
	if (fid < 0) {
		free(c);
		return fid;
	}
	val->fid = (uint32_t)fid;
	if (remember(pp, code, val)) {
		free(c);
		return -ENOMEM;
	}
out:
	free(c);
	return fid;
gone:
	/* The object BPF saw is no longer there: what ran is unknown, and
	 * its pending records must not take an older answer for this
	 * address. No fingerprint is kept, so nothing else matches it. */
	free(c);
	memset(val, 0, sizeof(*val));
	val->fid = PT_PYPROBE_GONE;
	return remember(pp, code, val) ? -ENOMEM : (int64_t)PT_PYPROBE_GONE;
}
