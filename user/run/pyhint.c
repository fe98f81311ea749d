// SPDX-License-Identifier: BSD-2-Clause
/*
 * py: probes that match nothing: a typo (py:server.Engine.stepp), a module
 * never imported (py:serverr.Engine.step), a method named as a function.
 * Said once, within a second of attach, with the closest qualified names
 * the process has (the same edit distance native: probes use,
 * attach/elfsyms.h), and again in the report.
 *
 * What the process has comes from its Python agent, whose walk of
 * sys.modules says which probes' modules are imported (found[]) and, for
 * a probe whose name glob matched nothing there, hands over every code
 * object of that module (near[]): both are read here like candidates,
 * out of the target's memory. Without the agent, the functions the
 * stack samples saw are all that is known: a module none of whose code
 * was sampled may or may not be imported, and nothing is said then.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "pyproc.h"
#include "pyhint.h"

#include "aggregate/stacks.h"
#include "aggregate/top.h"
#include "attach/elfsyms.h"
#include "attach/resolve.h"
#include "config/config.h"
#include "python/agent.h"
#include "python/pycode.h"
#include "python/pymatch.h"
#include "python/pyprobe.h"
#include "shim/ptagent.h"
#include "util/log.h"
#include "util/util.h"

#define CLOSEST 5

/* A code object's names, read once. */
struct cname {
	uint64_t addr;
	char *filename, *qualname; /* NULL: unreadable, or not a function */
};

struct hspec {
	bool known;	/* found_* is what the agent said */
	bool found;	/* the module of the probe as written is imported */
	bool found_alt; /* ... that of its function reading (alt_object) */
	bool said_both; /* both readings matched: said */
	int said;	/* what was said last: 0 nothing, 1 not imported, 2 no match */
	char *why;	/* the last reason (owned), for the report */
};

struct pt_pyhint {
	struct hspec *sp; /* per config spec */
	size_t nspecs;
	struct cname *names;
	size_t nnames, cap;
	uint32_t *slot; /* address hash -> names index + 1 */
	size_t nslots;
	uint64_t *codes; /* candidates and near[] of the last list */
	uint32_t ncodes;
	bool sampled_checked;
	uint64_t final_ns; /* the report's reasons were worked out then */
};

static void hint_free(struct pt_pyhint *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->nspecs; i++)
		free(h->sp[i].why);
	for (size_t i = 0; i < h->nnames; i++) {
		free(h->names[i].filename);
		free(h->names[i].qualname);
	}
	free(h->sp);
	free(h->names);
	free(h->slot);
	free(h->codes);
	free(h);
}

void pt_run__py_hint_free(struct proc *p)
{
	hint_free(p->hint);
	p->hint = NULL;
}

static struct pt_pyhint *hint_of(struct proc *p)
{
	if (!p->hint) {
		struct pt_pyhint *h = calloc(1, sizeof(*h));

		if (!h)
			return NULL;
		h->nspecs = p->run->cfg.nprobes;
		h->sp = calloc(h->nspecs + 1, sizeof(*h->sp));
		if (!h->sp) {
			free(h);
			return NULL;
		}
		p->hint = h;
	}
	return p->hint;
}

int pt_run__py_pairs(const struct run *r, struct pt_agent_spec **pairs, size_t **spec_of, size_t *n)
{
	const struct pt_config *cfg = &r->cfg;
	struct pt_agent_spec *v = pt_zalloc(2 * cfg->nprobes + 1, sizeof(*v));
	size_t *s = pt_zalloc(2 * cfg->nprobes + 1, sizeof(*s)), k = 0;

	if (!v || !s) {
		free(v);
		free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cfg->nprobes; i++) {
		const struct pt_probe_spec *sp = &cfg->probes[i];

		if (sp->kind != PT_PROBE_PY)
			continue;
		s[k] = i;
		v[k++] = (struct pt_agent_spec){ .path = sp->object, .glob = sp->symbol };
		if (sp->alt_object) { /* py:a.b.c: function c of module a.b too */
			s[k] = i;
			v[k++] = (struct pt_agent_spec){ .path = sp->alt_object,
							 .glob = sp->symbol };
		}
	}
	*pairs = v;
	*spec_of = s;
	*n = k;
	return 0;
}

static size_t slot_of(const struct pt_pyhint *h, uint64_t addr)
{
	size_t i = (size_t)(((addr >> 4) * 0x9e3779b97f4a7c15ull) >> 32) & (h->nslots - 1);

	while (h->slot[i] && h->names[h->slot[i] - 1].addr != addr)
		i = (i + 1) & (h->nslots - 1);
	return i;
}

/* The names of the code object at addr (read once): NULL when it cannot
 * be read or is not a function (a module or class body). */
static const struct cname *name_of(struct proc *p, struct pt_pyhint *h, uint64_t addr)
{
	struct pt_pytypes t = { .code_type = p->python.rt.code_type,
				.unicode_type = p->python.rt.unicode_type };
	struct pt_pycode *c;
	struct cname *e;

	size_t i;

	if ((h->nnames + 1) * 2 > h->nslots) {
		size_t n = h->nslots ? h->nslots * 2 : 1024;
		uint32_t *v = calloc(n, sizeof(*v));

		if (!v)
			return NULL;
		free(h->slot);
		h->slot = v;
		h->nslots = n;
		for (size_t k = 0; k < h->nnames; k++) {
			i = slot_of(h, h->names[k].addr);
			h->slot[i] = (uint32_t)k + 1;
		}
	}
	i = slot_of(h, addr);
	if (h->slot[i])
		return h->names[h->slot[i] - 1].qualname ? &h->names[h->slot[i] - 1] : NULL;
	if (h->nnames == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		struct cname *v = realloc(h->names, cap * sizeof(*v));

		if (!v)
			return NULL;
		h->names = v;
		h->cap = cap;
	}
	h->slot[i] = (uint32_t)h->nnames + 1;
	e = &h->names[h->nnames++];
	memset(e, 0, sizeof(*e));
	e->addr = addr;
	c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	if (!pt_pycode__read_head(&p->python.mem, &p->python.rt.L, &t, addr, c) &&
	    (c->flags & PT_CO_OPTIMIZED) &&
	    !pt_pycode__read_names(&p->python.mem, &p->python.rt.L, &t, c)) {
		if (p->python.probe)
			pt_pyprobe__qualname(p->python.probe, c);
		else if (!c->has_qualname)
			snprintf(c->qualname, sizeof(c->qualname), "%s", c->name);
		e->filename = strdup(c->filename);
		e->qualname = strdup(c->qualname);
		if (!e->filename || !e->qualname) {
			free(e->filename);
			free(e->qualname);
			e->filename = e->qualname = NULL;
		}
	}
	free(c);
	return e->qualname ? e : NULL;
}

/* "a/b/c" as the module's dotted name into buf. */
static const char *dotted(const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s", path);
	for (char *q = buf; *q; q++)
		if (*q == '/')
			*q = '.';
	return buf;
}

/* The probe that names the function (filename, qualname) of one of s's
 * modules, as s would be written: py:mod.Class.meth, py:mod::func (or
 * py:mod.func when s is dotted, for the comparison only). */
static void probe_text(const struct pt_probe_spec *s, const char *filename, const char *qualname,
		       bool as_written, char *buf, size_t len)
{
	struct pt_probe_spec one = *s;
	const char *path = s->object;
	char mod[512];

	one.alt_object = NULL;
	if (s->alt_object && !pt_pymatch__file(&one, filename))
		path = s->alt_object; /* a file of the other reading's module */
	dotted(path, mod, sizeof(mod));
	if (strchr(qualname, '.') || (as_written && s->dotted))
		snprintf(buf, len, "py:%s.%s", mod, qualname);
	else
		snprintf(buf, len, "py:%s::%s", mod, qualname);
}

/* Anonymous and local code is named only by probes that ask for it. */
static bool shown(const struct pt_probe_spec *s, const char *qualname)
{
	return !strchr(qualname, '<') || strchr(s->symbol, '<') || (s->cls && strchr(s->cls, '<'));
}

struct known {
	char **cmp, **show; /* compare with the probe as written; show */
	size_t n, cap;
};

static void known_free(struct known *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->cmp[i]);
		free(k->show[i]);
	}
	free(k->cmp);
	free(k->show);
}

static void known_add(struct known *k, const struct pt_probe_spec *s, const char *filename,
		      const char *qualname)
{
	char cmp[1200], show[1200];

	if (!pt_pymatch__file(s, filename) || !shown(s, qualname))
		return;
	probe_text(s, filename, qualname, true, cmp, sizeof(cmp));
	probe_text(s, filename, qualname, false, show, sizeof(show));
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(k->show[i], show))
			return;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 64;
		char **a = realloc(k->cmp, cap * sizeof(*a)), **b;

		if (!a)
			return;
		k->cmp = a;
		b = realloc(k->show, cap * sizeof(*b));
		if (!b)
			return;
		k->show = b;
		k->cap = cap;
	}
	k->cmp[k->n] = strdup(cmp);
	k->show[k->n] = strdup(show);
	if (!k->cmp[k->n] || !k->show[k->n]) {
		free(k->cmp[k->n]);
		free(k->show[k->n]);
		return;
	}
	k->n++;
}

/* What p has of s's modules: from the agent's lists, else the samples. */
static void collect(struct proc *p, struct pt_pyhint *h, const struct pt_probe_spec *s,
		    struct known *k)
{
	const struct pt_top *top = p->v.stk ? pt_stacks__top(p->v.stk) : NULL;

	for (uint32_t i = 0; i < h->ncodes; i++) {
		const struct cname *c = name_of(p, h, h->codes[i]);

		if (c)
			known_add(k, s, c->filename, c->qualname);
	}
	for (size_t i = 0; i < pt_top__nfuncs(top); i++) {
		const struct pt_top_fn *f = pt_top__func(top, i);

		known_add(k, s, f->filename, f->qualname);
	}
}

/* s under one reading: as written (alt false), or as function s->symbol
 * of module alt_object. */
static struct pt_probe_spec reading(const struct pt_probe_spec *s, bool alt)
{
	struct pt_probe_spec v = *s;

	v.alt_object = NULL;
	if (alt) {
		v.object = s->alt_object;
		v.cls = NULL;
	}
	return v;
}

/* Why s matches nothing in p, into buf: 1 not imported (or cannot be
 * told), 2 no function matches (with the closest names), 0 nothing to
 * say yet. */
static int why_of(struct proc *p, struct pt_pyhint *h, size_t si, bool final, char *buf, size_t len)
{
	const struct pt_probe_spec *s = &p->run->cfg.probes[si];
	const struct hspec *hs = &h->sp[si];
	struct pt_probe_spec first = reading(s, false), alt = reading(s, true);
	bool use_first = !hs->known || hs->found,
	     use_alt = s->alt_object && (!hs->known || hs->found_alt);
	struct known k = { 0 };
	const char *near[CLOSEST];
	char a[256], b[256];
	size_t nnear, n, nfirst;
	bool is_class = false;

	dotted(s->object, a, sizeof(a));
	if (s->alt_object)
		dotted(s->alt_object, b, sizeof(b));
	if (!use_first && !use_alt) {
		if (s->alt_object)
			snprintf(buf, len,
				 "neither module %s nor %s is imported (sys.modules has no module "
				 "of their files); its functions are hooked if one is",
				 a, b);
		else
			snprintf(buf, len,
				 "module %s is not imported (sys.modules has no module of its "
				 "file); its functions are hooked if it is",
				 a);
		return 1;
	}
	if (use_first)
		collect(p, h, &first, &k);
	nfirst = k.n;
	if (use_alt)
		collect(p, h, &alt, &k);
	if (!hs->known) {
		/* from the samples: the modules whose code ran */
		use_first = nfirst > 0;
		use_alt = k.n > nfirst;
	}
	if (!hs->known && !k.n) {
		/* no agent, and no sampled code of its module */
		known_free(&k);
		if (!final || !p->python.sampled)
			return 0;
		snprintf(buf, len,
			 "no code of module %s%s%s was sampled, and without the Python agent "
			 "proftrace cannot tell whether it is imported",
			 a, s->alt_object ? " or " : "", s->alt_object ? b : "");
		return 1;
	}
	/* py:mod.Engine with Engine a class: its methods are what it has */
	if (!s->cls && s->dotted) {
		char needle[300];

		snprintf(needle, sizeof(needle), "py:%.200s.%.80s.", a, s->symbol);
		for (size_t i = 0; i < k.n; i++)
			is_class |= !strncmp(k.show[i], needle, strlen(needle));
	}
	nnear = pt_closest((const char *const *)k.cmp, k.n, s->text, near, CLOSEST);
	n = (size_t)snprintf(buf, len, "no %sfunction of module %s%s%s matches",
			     hs->known ? "" : "sampled ", use_first ? a : b,
			     use_first && use_alt ? " or " : "", use_first && use_alt ? b : "");
	for (size_t i = 0; i < nnear && n < len; i++) {
		size_t idx = 0;

		while (idx < k.n && k.cmp[idx] != near[i])
			idx++;
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      i ? ", " : " (closest: ", idx < k.n ? k.show[idx] : near[i]);
	}
	if (nnear && n < len)
		n += (size_t)snprintf(buf + n, len - n, ")");
	if (n < len && !hs->known)
		n += (size_t)snprintf(buf + n, len - n,
				      " (without the Python agent only the functions that ran are "
				      "seen)");
	if (n < len && is_class)
		n += (size_t)snprintf(
			buf + n, len - n,
			"; %.200s is a class: name a method, py:%.200s.%.200s.<method>", s->symbol,
			a, s->symbol);
	else if (n < len && use_first && use_alt && hs->known)
		n += (size_t)snprintf(
			buf + n, len - n,
			"; it reads as method %.200s of class %.200s in module %.200s "
			"or as function %.200s of module %.200s (py:%.200s::%.200s)",
			s->symbol, s->cls, a, s->symbol, b, b, s->symbol);
	known_free(&k);
	return 2;
}

/* Both readings of a dotted probe matched: said once. */
static void check_both(struct proc *p, struct pt_pyhint *h, size_t si)
{
	const struct pt_probe_spec *s = &p->run->cfg.probes[si];
	unsigned int seen = 0;
	char mod[512], alt[512];

	if (!s->alt_object || h->sp[si].said_both)
		return;
	for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		if (f->py && (size_t)f->spec == si)
			seen |= pt_pymatch__code(s, f->object, f->symbol);
	}
	if (seen != (PT_PYMATCH_FIRST | PT_PYMATCH_ALT))
		return;
	h->sp[si].said_both = true;
	pt_msg("proftrace: warning: pid %d: %s:%d:%d: %s names both method %s of class %s in "
	       "module %s and function %s of module %s: both are timed (hint: write "
	       "py:%s.%s.%s or py:%s::%s for one)\n",
	       p->tracee.pid, p->run->cfg.path, s->line, s->col, s->text, s->symbol, s->cls,
	       dotted(s->object, mod, sizeof(mod)), s->symbol,
	       dotted(s->alt_object, alt, sizeof(alt)), mod, s->cls, s->symbol, alt, s->symbol);
}

/* Every py: probe of p that matches nothing: its reason, said when it
 * changed (quiet: kept for the report only). */
static void check(struct proc *p, bool quiet, bool final)
{
	struct pt_pyhint *h = hint_of(p);
	const struct pt_config *cfg = &p->run->cfg;
	char why[8192];

	if (!h)
		return;
	for (size_t si = 0; si < cfg->nprobes; si++) {
		const struct pt_probe_spec *s = &cfg->probes[si];
		struct hspec *hs = &h->sp[si];
		int k;

		if (s->kind != PT_PROBE_PY)
			continue;
		if (pt_resolver__spec_nfuncs(p->res, si)) {
			check_both(p, h, si);
			free(hs->why);
			hs->why = NULL;
			continue;
		}
		k = why_of(p, h, si, final, why, sizeof(why));
		if (!k)
			continue;
		free(hs->why);
		hs->why = strdup(why);
		if (quiet || k == hs->said)
			continue;
		hs->said = k;
		pt_msg("proftrace: %spid %d: %s:%d:%d: %s: %s\n", k == 2 ? "warning: " : "",
		       p->tracee.pid, cfg->path, s->line, s->col, s->text, why);
	}
}

static void hint_agent(struct proc *p, struct pt_agent *a, const uint64_t *cands, uint32_t n,
		       bool quiet);

void pt_run__py_hint_agent(struct proc *p, const uint64_t *cands, uint32_t n)
{
	hint_agent(p, p->agent.handle, cands, n, false);
}

/* a: p's agent, its lists at hand (NULL: none) */
static void hint_agent(struct proc *p, struct pt_agent *a, const uint64_t *cands, uint32_t n,
		       bool quiet)
{
	struct pt_pyhint *h = hint_of(p);
	struct pt_agent_spec *pairs = NULL;
	size_t *spec_of = NULL, npairs = 0;
	const uint8_t *found;
	const uint64_t *near;
	uint32_t nnear = 0;
	uint64_t *v;
	bool said;

	if (!h || pt_run__py_pairs(p->run, &pairs, &spec_of, &npairs))
		return;
	said = a && pt_agent__specs(a, &found, &near, &nnear) == 1;
	v = malloc(((size_t)n + nnear + 1) * sizeof(*v));
	if (!v)
		goto out;
	memcpy(v, cands, n * sizeof(*v));
	if (said)
		memcpy(v + n, near, nnear * sizeof(*v));
	free(h->codes);
	h->codes = v;
	h->ncodes = n + nnear;
	for (size_t i = 0; said && i < h->nspecs; i++) {
		h->sp[i].known = true;
		h->sp[i].found = h->sp[i].found_alt = false;
	}
	/* a probe's pairs: its module as written, then its function reading */
	for (size_t k = 0; said && k < npairs && k < PTAG_MAX_SPECS; k++) {
		if (k && spec_of[k - 1] == spec_of[k])
			h->sp[spec_of[k]].found_alt = found[k];
		else
			h->sp[spec_of[k]].found = found[k];
	}
	check(p, quiet, false);
out:
	free(pairs);
	free(spec_of);
}

void pt_run__py_hint_samples(struct proc *p)
{
	struct pt_pyhint *h = hint_of(p);

	/* only for a process without an agent: samples.c checks (pyagent.c,
	 * which calls this file, is not asked from here) */
	if (!h || h->sampled_checked)
		return;
	h->sampled_checked = true;
	check(p, false, false);
}

const char *pt_run__py_hint_why(struct proc *p, size_t spec)
{
	uint64_t now = pt_now_ns(CLOCK_MONOTONIC);
	struct pt_pyhint *h;

	if (!p->python.have || !p->run->want_py)
		return NULL;
	h = hint_of(p);
	if (!h)
		return NULL;
	/* with everything the run saw; once per document (a second apart) */
	if (!h->final_ns || now - h->final_ns > 1000000000ull) {
		check(p, true, true);
		h->final_ns = now;
	}
	return spec < h->nspecs ? h->sp[spec].why : NULL;
}

/* --dry-run: the code objects p's agent finds for the probes now, read
 * and matched as at attach (the agent is woken, walks sys.modules,
 * hooks nothing, and is detached). 0 with the agent (still attached)
 * in *ap, or -errno with why in err. The process's own agent (p->agent)
 * is pyagent.c's: this one is the dry run's. */
static int dry_candidates(struct proc *p, struct pt_agent **ap, uint64_t **codes, uint32_t *n,
			  char *err, size_t errlen)
{
	struct pt_agent_spec *pairs;
	struct pt_agent_info in;
	size_t *spec_of, npairs;
	uint64_t deadline;
	int e;

	e = pt_agent__open(ap, p->tracee.pid, err, errlen);
	if (e)
		return e;
	e = pt_run__py_pairs(p->run, &pairs, &spec_of, &npairs);
	if (e)
		goto out;
	e = pt_agent__attach(*ap, pairs, npairs, &p->python.rt.L, pt_now_ns(CLOCK_MONOTONIC));
	free(pairs);
	free(spec_of);
	if (e) {
		snprintf(err, errlen, "%s",
			 e == -EBUSY ? "another proftrace is attached to its Python agent"
				     : "the py: probes do not fit the agent's segment");
		goto out;
	}
	deadline = pt_now_ns(CLOCK_MONOTONIC) + 3000000000ull;
	for (;;) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		uint64_t now = pt_now_ns(CLOCK_MONOTONIC);

		pt_agent__heartbeat(*ap, now);
		e = pt_agent__candidates(*ap, codes, n);
		if (e)
			break;
		pt_agent__info(*ap, &in);
		if (in.conflict) {
			snprintf(err, errlen, "the Python agent cannot walk its modules: %s",
				 in.conflict_text);
			e = -EBUSY;
			break;
		}
		if (now >= deadline) {
			snprintf(err, errlen,
				 "the Python agent has not answered in 3 s (%s): it needs the GIL",
				 ptag_reason_name(in.reason));
			e = -ETIMEDOUT;
			break;
		}
		nanosleep(&ts, NULL);
	}
	if (e == 1)
		return 0; /* attached still: its lists are read, then it is detached */
	pt_agent__detach(*ap, 500);
	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory");
out:
	pt_agent__close(*ap);
	*ap = NULL;
	return e;
}

void pt_run__py_dry_run(struct proc *p)
{
	const struct pt_config *cfg = &p->run->cfg;
	struct pt_agent *a = NULL;
	uint64_t *codes = NULL;
	uint32_t n = 0;
	char err[512];
	int e;

	/* as at attach: names, < 3.11 from the source */
	if (pt_run__py_start(p))
		return;
	e = dry_candidates(p, &a, &codes, &n, err, sizeof(err));
	if (e) {
		for (size_t s = 0; s < cfg->nprobes; s++)
			if (cfg->probes[s].kind == PT_PROBE_PY)
				printf("%-40s python %s (%s): %s; found at attach, by code "
				       "object\n",
				       cfg->probes[s].text, p->python.rt.version, p->python.rt.path,
				       e == -ENOENT ? "no Python agent to ask now" : err);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct pt_pytypes t = { .code_type = p->python.rt.code_type,
					.unicode_type = p->python.rt.unicode_type };
		struct pt_pycode *c = malloc(sizeof(*c));
		bool added;

		if (!c)
			break;
		if (!pt_pycode__read_head(&p->python.mem, &p->python.rt.L, &t, codes[i], c) &&
		    !pt_pycode__read_names(&p->python.mem, &p->python.rt.L, &t, c))
			pt_pyprobe__match(p->python.probe, c, &added);
		free(c);
	}
	hint_agent(p, a, codes, n, true); /* while the agent's lists are at hand */
	pt_agent__detach(a, 500);
	pt_agent__close(a);
	free(codes);
	for (size_t s = 0; s < cfg->nprobes; s++) {
		const struct pt_probe_spec *sp = &cfg->probes[s];
		const char *why;
		bool any = false;

		if (sp->kind != PT_PROBE_PY)
			continue;
		for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++) {
			const struct pt_func *f = pt_resolver__func(p->res, i);

			if (!f->py || !pt_pymatch__code(sp, f->object, f->symbol))
				continue;
			any = true;
			printf("%-40s %-10s %s:%u (the agent hooks it at attach)\n", sp->text,
			       f->symbol, f->object, f->py_line);
		}
		why = any ? NULL : pt_run__py_hint_why(p, s);
		if (!any)
			printf("%-40s matches nothing now: %s\n", sp->text,
			       why ? why : "no code object of this name");
	}
}
