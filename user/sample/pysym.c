// SPDX-License-Identifier: BSD-2-Clause
/*
 * A cached code object is never read again: code objects of functions
 * live as long as their module (they are constants of the module's code),
 * so an address normally names one object for the whole run. One created
 * and freed at run time (exec(), compile()) whose address is then taken by
 * another code object would keep the first one's name; such churn is rare
 * in servers and is not checked per sample (that would be one target read
 * per frame per sample).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/proftrace.h"
#include "python/pyline.h"
#include "python/pyprobe.h"
#include "pysym.h"
#include "shim/ptagent.h"

struct pt_pysym {
	struct pt_pysym_opts o;
	struct pt_pysym_code **tab; /* open addressing by address */
	size_t cap, n;
	struct pt_pycode *scratch;
};

struct pt_pysym *pt_pysym__new(const struct pt_pysym_opts *o)
{
	struct pt_pysym *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->o = *o;
	ps->cap = 1024;
	ps->tab = calloc(ps->cap, sizeof(*ps->tab));
	ps->scratch = malloc(sizeof(*ps->scratch));
	if (!ps->tab || !ps->scratch) {
		pt_pysym__free(ps);
		return NULL;
	}
	return ps;
}

static void code_free(struct pt_pysym_code *c)
{
	if (!c)
		return;
	free(c->filename);
	free(c->qualname);
	free(c->tab);
	free(c);
}

void pt_pysym__free(struct pt_pysym *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; ps->tab && i < ps->cap; i++)
		code_free(ps->tab[i]);
	free(ps->tab);
	free(ps->scratch);
	free(ps);
}

static size_t slot_of(const struct pt_pysym *ps, uint64_t addr)
{
	uint64_t h = (addr >> 4) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 24) & (ps->cap - 1);

	while (ps->tab[i] && ps->tab[i]->addr != addr)
		i = (i + 1) & (ps->cap - 1);
	return i;
}

static int grow(struct pt_pysym *ps)
{
	struct pt_pysym_code **old = ps->tab;
	size_t oldcap = ps->cap;

	ps->tab = calloc(oldcap * 2, sizeof(*ps->tab));
	if (!ps->tab) {
		ps->tab = old;
		return -ENOMEM;
	}
	ps->cap = oldcap * 2;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			ps->tab[slot_of(ps, old[i]->addr)] = old[i];
	free(old);
	return 0;
}

/* "engine.py", or "pkg/__init__.py" where the file name says little. */
static const char *short_name(const char *path)
{
	const char *b = strrchr(path, '/'), *p;

	if (!b)
		return path;
	if (strcmp(b + 1, "__init__.py") && strcmp(b + 1, "__main__.py"))
		return b + 1;
	for (p = b; p > path && p[-1] != '/'; p--)
		;
	return p;
}

/* FNV-1a over s and its NUL, on top of h. */
static uint64_t fnv(uint64_t h, const char *s)
{
	do {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	} while (*s++);
	return h;
}

static void fill(struct pt_pysym *ps, struct pt_pysym_code *c)
{
	struct pt_pycode *pc = ps->scratch;
	bool added;
	int64_t fid;

	c->fid = PT_FID_PY_NONE;
	if (pt_pycode__read(&ps->o.mem, ps->o.layout, &ps->o.types, c->addr, pc))
		return;
	if (ps->o.pyprobe)
		pt_pyprobe__qualname(ps->o.pyprobe, pc);
	else if (!pc->has_qualname)
		snprintf(pc->qualname, sizeof(pc->qualname), "%s", pc->name);
	c->filename = strdup(pc->filename);
	c->qualname = strdup(pc->qualname);
	if (!c->filename || !c->qualname)
		return;
	c->firstlineno = pc->firstlineno;
	c->hidden = !strcmp(c->filename, PTAG_TRAMP_FILE);
	c->base = short_name(c->filename);
	if (pt_pycode__read_linetable(&ps->o.mem, ps->o.layout, c->addr, &c->tab, &c->tablen))
		c->tab = NULL;
	c->ok = true;
	c->last_line = pt_pysym__last_line(ps, c);
	c->key = fnv(fnv(0xcbf29ce484222325ull, c->qualname), c->filename) ^ c->firstlineno;
	if (!c->key)
		c->key = 1; /* 0 says unknown */
	if (!ps->o.pyprobe)
		return;
	fid = pt_pyprobe__match(ps->o.pyprobe, pc, &added);
	if (fid >= 0 && fid != PT_FID_PY_NONE)
		c->fid = (uint32_t)fid;
}

const struct pt_pysym_code *pt_pysym__code(struct pt_pysym *ps, uint64_t addr)
{
	struct pt_pysym_code *c;
	size_t i = slot_of(ps, addr);

	if (ps->tab[i])
		return ps->tab[i];
	if ((ps->n + 1) * 2 > ps->cap) {
		if (grow(ps))
			return NULL;
		i = slot_of(ps, addr);
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->addr = addr;
	fill(ps, c);
	if (!c->ok) {
		/* keep it, empty: unreadable once is unreadable for good */
		free(c->filename);
		free(c->qualname);
		free(c->tab);
		memset(c, 0, sizeof(*c));
		c->addr = addr;
		c->fid = PT_FID_PY_NONE;
	}
	ps->tab[i] = c;
	ps->n++;
	return c;
}

unsigned int pt_pysym__line(const struct pt_pysym *ps, const struct pt_pysym_code *c, int32_t pos)
{
	struct pt_pysym_code *m = (struct pt_pysym_code *)c; /* ours: see memo */
	unsigned int minor = ps->o.layout->minor;
	int64_t addr;
	int e, line;

	if (!c->ok)
		return 0;
	if (c->memo && c->memo_pos == pos)
		return c->memo_line;
	e = pt_pyline__addr(minor, pos, &addr);
	if (e == -ERANGE)
		line = (int)c->firstlineno; /* not started yet: CPython says the def line */
	else if (e || !c->tab)
		line = 0;
	else
		line = pt_pyline__line(minor, c->tab, c->tablen, c->firstlineno, addr);
	m->memo = true;
	m->memo_pos = pos;
	m->memo_line = line > 0 ? (unsigned int)line : 0;
	return m->memo_line;
}

unsigned int pt_pysym__last_line(const struct pt_pysym *ps, const struct pt_pysym_code *c)
{
	int line;

	if (!c->ok || !c->tab)
		return 0;
	line = pt_pyline__last_line(ps->o.layout->minor, c->tab, c->tablen, c->firstlineno);
	return line > 0 ? (unsigned int)line : 0;
}

void pt_pysym__label(const struct pt_pysym_code *c, unsigned int line, char *buf, size_t len)
{
	if (!c->ok)
		snprintf(buf, len, "[unknown code]");
	else if (line)
		snprintf(buf, len, "%s (%s:%u)", c->qualname, c->base, line);
	else
		snprintf(buf, len, "%s (%s)", c->qualname, c->base);
}
