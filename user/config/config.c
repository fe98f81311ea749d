// SPDX-License-Identifier: BSD-2-Clause
/*
 * targets.conf parser, format version 1 (docs/targets.md).
 *
 * The file is written by hand, so errors read like a compiler's
 * ("file:line:col: error: ... 'token' (hint: ...)") and parsing stops at the
 * first one: a profiler that silently ignores a mistyped probe produces a
 * report that looks plausible and is wrong.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "util/util.h"

#define LINE_MAX_CHARS 4096
/* Every token is at least one char plus one separator. */
#define MAX_TOKENS (LINE_MAX_CHARS / 2 + 1)
/* Long tokens are cut in messages so the hint still fits in err. */
#define TOKEN_SHOW_MAX 100

#define NATIVE_FORM "native:<object>:<symbol>"
#define PY_FORM "py:<module>.<Class>.<method> or py:<module>::<function>"

struct tok {
	char *s;
	int col;
};

enum set_key {
	KEY_WARMUP_STEPS,
	KEY_RINGBUF_MB,
	KEY_POLL_MS,
	KEY_PROLOGUE_SKIP,
	KEY_RINGBUF_WAKEUP,
	KEY_PY_SESSION,
	KEY_PY_TRAMPOLINES,
	KEY_SAMPLE_HZ,
	KEY_PYTHON_MODE,
	KEY_KV_LEN_REDUCE,
	KEY_KV_BINS,
	KEY_RUN_GAP_MS,
	KEY_WARMUP_RUNS,
	KEY_NATIVE_FRAMES,
	NR_KEYS,
};

static const char *const key_names[NR_KEYS] = {
	[KEY_WARMUP_STEPS] = "warmup_steps",
	[KEY_RINGBUF_MB] = "ringbuf_mb",
	[KEY_POLL_MS] = "poll_ms",
	[KEY_PROLOGUE_SKIP] = "prologue_skip",
	[KEY_RINGBUF_WAKEUP] = "ringbuf_wakeup",
	[KEY_PY_SESSION] = "py_session",
	[KEY_PY_TRAMPOLINES] = "py_trampolines",
	[KEY_SAMPLE_HZ] = "sample_hz",
	[KEY_PYTHON_MODE] = "python_mode",
	[KEY_KV_LEN_REDUCE] = "kv_len_reduce",
	[KEY_KV_BINS] = "kv_bins",
	[KEY_RUN_GAP_MS] = "run_gap_ms",
	[KEY_WARMUP_RUNS] = "warmup_runs",
	[KEY_NATIVE_FRAMES] = "native_frames",
};

#define KNOWN_KEYS                                                                                 \
	"warmup_steps, ringbuf_mb, poll_ms, prologue_skip, ringbuf_wakeup, py_session, "           \
	"py_trampolines, sample_hz, python_mode, kv_len_reduce, kv_bins, run_gap_ms, "             \
	"warmup_runs, "                                                                            \
	"native_frames"

static const char *const keywords[] = { "step", "bucket", "set", "lines", "count" };

struct parser {
	struct pt_config *cfg;
	const char *path;
	char *err;
	size_t errlen;
	int line;
	int step_line;
	int key_line[NR_KEYS];
	struct tok toks[MAX_TOKENS];
	int ntok;
};

/*
 * One error line: "path:line:col: error: what 'tok' (hint: ...)". tok and
 * hint may be NULL for the few errors that have none.
 */
static int perr(struct parser *p, int col, const char *tok, const char *what, const char *hintfmt,
		...) __attribute__((format(printf, 5, 6)));

static int perr(struct parser *p, int col, const char *tok, const char *what, const char *hintfmt,
		...)
{
	size_t off = 0;
	va_list ap;
	char hint[512];

	if (!p->err || !p->errlen)
		return -EINVAL;
	pt_appendf(p->err, p->errlen, &off, "%s:%d:%d: error: %s", p->path, p->line, col, what);
	if (tok) {
		if (strlen(tok) > TOKEN_SHOW_MAX)
			pt_appendf(p->err, p->errlen, &off, " '%.*s...'", TOKEN_SHOW_MAX - 3, tok);
		else
			pt_appendf(p->err, p->errlen, &off, " '%s'", tok);
	}
	if (hintfmt) {
		va_start(ap, hintfmt);
		vsnprintf(hint, sizeof(hint), hintfmt, ap);
		va_end(ap);
		pt_appendf(p->err, p->errlen, &off, " (hint: %s)", hint);
	}
	return -EINVAL;
}

static int oom(struct parser *p)
{
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s:%d: error: out of memory", p->path, p->line);
	return -ENOMEM;
}

/* Case-insensitive edit distance, so "Step" and "POLL_MS" get a suggestion. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[64], i, j, diag, up;

	if (lb >= ARRAY_SIZE(row) || la >= 64)
		return SIZE_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			up = row[j];
			row[j] = diag + (tolower((unsigned char)a[i - 1]) !=
					 tolower((unsigned char)b[j - 1]));
			if (up + 1 < row[j])
				row[j] = up + 1;
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			diag = up;
		}
	}
	return row[lb];
}

/* The closest of names to s, when it looks like a typo of it; else NULL. */
static const char *closest(const char *s, const char *const *names, size_t n)
{
	size_t best = SIZE_MAX, d, i;
	const char *pick = NULL;

	for (i = 0; i < n; i++) {
		d = edit_distance(s, names[i]);
		if (d < best) {
			best = d;
			pick = names[i];
		}
	}
	return best <= 2 ? pick : NULL;
}

static bool valid_class(const char *s, size_t len)
{
	static const char *const classes[] = {
		"alnum", "alpha", "blank", "cntrl", "digit", "graph",
		"lower", "print", "punct", "space", "upper", "xdigit",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(classes); i++)
		if (strlen(classes[i]) == len && !strncmp(classes[i], s, len))
			return true;
	return false;
}

/*
 * fnmatch(3) treats an unclosed '[' as a literal, so "libcuda[.so" would
 * silently match nothing; reject it here instead. NULL when g is fine.
 */
static const char *glob_problem(const char *g)
{
	const char *s = g, *q, *e;
	char d;
	int rc;

	while (*s) {
		if (*s == '\\') {
			if (!s[1])
				return "trailing '\\' escapes nothing";
			s += 2;
			continue;
		}
		if (*s != '[') {
			s++;
			continue;
		}
		q = s + 1;
		if (*q == '!' || *q == '^')
			q++;
		if (*q == ']') /* a leading ']' is a member, not the end */
			q++;
		for (;;) {
			if (!*q)
				return "unbalanced '['";
			if (*q == ']')
				break;
			if (*q == '\\') {
				if (!q[1])
					return "unbalanced '['";
				q += 2;
				continue;
			}
			if (*q == '[' && (q[1] == ':' || q[1] == '.' || q[1] == '=')) {
				d = q[1];
				for (e = q + 2; *e && !(e[0] == d && e[1] == ']'); e++)
					;
				if (!*e)
					return "unbalanced '['";
				if (d == ':' && !valid_class(q + 2, e - (q + 2)))
					return "unknown character class";
				q = e + 2;
				continue;
			}
			q++;
		}
		s = q + 1;
	}
	rc = fnmatch(g, "", 0);
	if (rc != 0 && rc != FNM_NOMATCH)
		return "not a valid fnmatch(3) pattern";
	return NULL;
}

/* Append a probe spec; takes ownership of the strings (freed on error). */
static int spec_add(struct parser *p, const struct tok *t, enum pt_probe_kind kind, char *object,
		    char *symbol, char *cls, char *text, int *idx)
{
	struct pt_config *cfg = p->cfg;
	struct pt_probe_spec *spec, *grown;

	grown = realloc(cfg->probes, (cfg->nprobes + 1) * sizeof(*grown));
	if (!grown) {
		free(object);
		free(symbol);
		free(cls);
		free(text);
		return oom(p);
	}
	cfg->probes = grown;
	spec = &cfg->probes[cfg->nprobes];
	memset(spec, 0, sizeof(*spec));
	spec->kind = kind;
	spec->text = text;
	spec->object = object;
	spec->symbol = symbol;
	spec->cls = cls;
	spec->line = p->line;
	spec->col = t->col;
	*idx = (int)cfg->nprobes++;
	return 0;
}

static bool is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || (unsigned char)c >= 0x80;
}

/* A name without glob characters: it can be a module's. */
static bool plain_name(const char *s)
{
	for (; *s; s++)
		if (!is_ident_char(*s))
			return false;
	return true;
}

/*
 * py:<module>.<Class>.<method> or py:<module>::<function>. The module is
 * a dotted name (no globs: it selects a file by path suffix); the class
 * and function parts are globs over the code object's qualified name.
 * Written with dots only, py:mod.func (one dot) is a module-level
 * function, and py:a.b.c (two or more) is read both ways: method c of
 * class b in module a, and function c of module a.b (alt_object), since
 * a Python user names a function by its dotted import path.
 */
static int py_probe(struct parser *p, const struct tok *t, int *idx)
{
	const char *body = t->s + 3, *sep = strstr(body, "::"), *mod_end, *why;
	char *module = NULL, *cls = NULL, *func = NULL, *text = NULL;
	const char *c1, *c2;
	int ret;

	if (!sep && strchr(body, ':'))
		return perr(p, t->col, t->s, "Python probe with a single ':'",
			    "name the module as imported (dots, no .py) and put '::' before a "
			    "module-level function: py:pkg.mod::func, or py:pkg.mod.Class.method");
	if (sep) {
		mod_end = sep;
		func = strdup(sep + 2);
	} else {
		/* the last two dot-separated parts are Class.method */
		c2 = strrchr(body, '.');
		c1 = NULL;
		if (c2)
			for (const char *q = c2 - 1; q >= body; q--)
				if (*q == '.') {
					c1 = q;
					break;
				}
		if (!c2)
			return perr(p, t->col, t->s, "Python probe needs a module and a name",
				    PY_FORM " (or py:<module>.<function>), e.g. "
					    "py:vllm.v1.engine.core.EngineCore.step");
		if (c1) {
			mod_end = c1;
			cls = strndup(c1 + 1, (size_t)(c2 - c1 - 1));
			if (!cls) {
				ret = oom(p);
				goto fail;
			}
		} else {
			mod_end = c2; /* py:mod.func: a module-level function */
		}
		func = strdup(c2 + 1);
	}
	module = strndup(body, (size_t)(mod_end - body));
	text = strdup(t->s);
	if (!module || !func || !text) {
		ret = oom(p);
		goto fail;
	}
	if (!*module) {
		ret = perr(p, t->col, t->s, "empty module in Python probe",
			   "name the module as imported, e.g. py:pkg.sub.mod::func");
		goto fail;
	}
	for (char *q = module; *q; q++) {
		if (*q == '.' && q[1] != '.' && q[1] && q != module)
			continue;
		if (!is_ident_char(*q)) {
			ret = perr(p, t->col + (int)(q - module) + 3, t->s,
				   "bad module name in Python probe",
				   "a dotted module name without globs, e.g. pkg.sub.mod");
			goto fail;
		}
	}
	if (!*func || (cls && !*cls)) {
		ret = perr(p, t->col, t->s, "empty class or function in Python probe", PY_FORM);
		goto fail;
	}
	why = glob_problem(func);
	if (!why && cls)
		why = glob_problem(cls);
	if (why) {
		ret = perr(p, t->col, t->s, "bad glob in Python probe",
			   "%s; fnmatch(3) syntax: * ? [abc] [!a-z], '\\' escapes", why);
		goto fail;
	}
	/* the module as a path: a.b.c -> a/b/c (matched as a suffix of
	 * co_filename, with .py or /__init__.py) */
	for (char *q = module; *q; q++)
		if (*q == '.')
			*q = '/';
	ret = spec_add(p, t, PT_PROBE_PY, module, func, cls, text, idx);
	if (ret || sep)
		return ret;
	p->cfg->probes[*idx].dotted = true;
	/* py:a.b.c: also function c of module a.b, when b can be a module */
	if (cls && plain_name(cls)) {
		size_t n = strlen(p->cfg->probes[*idx].object) + strlen(cls) + 2;
		char *alt = malloc(n);

		if (!alt)
			return oom(p);
		snprintf(alt, n, "%s/%s", p->cfg->probes[*idx].object, cls);
		p->cfg->probes[*idx].alt_object = alt;
	}
	return 0;
fail:
	free(module);
	free(cls);
	free(func);
	free(text);
	return ret;
}

static int find_probe(const struct pt_config *cfg, const char *text)
{
	size_t i;

	for (i = 0; i < cfg->nprobes; i++)
		if (!strcmp(cfg->probes[i].text, text))
			return (int)i;
	return -1;
}

/*
 * Index of the probe spec for t, added on first use. The same text in several
 * places is one spec with several roles, so each function is probed once.
 */
static int probe_get(struct parser *p, const struct tok *t, int *idx)
{
	struct pt_config *cfg = p->cfg;
	const char *rest, *colon, *why;
	char *object = NULL, *symbol = NULL, *text = NULL, *at;
	int i, ret;

	i = find_probe(cfg, t->s);
	if (i >= 0) {
		*idx = i;
		return 0;
	}

	if (!strncmp(t->s, "py:", 3))
		return py_probe(p, t, idx);
	if (strncmp(t->s, "native:", 7)) {
		if (strchr(t->s, ':'))
			return perr(p, t->col, t->s, "unknown probe kind",
				    "supported: " NATIVE_FORM " and " PY_FORM
				    ", e.g. native:libc.so*:malloc");
		return perr(p, t->col, t->s, "not a probe",
			    "write " NATIVE_FORM " or " PY_FORM ", e.g. native:exe:main_loop");
	}
	rest = t->s + 7;
	colon = strchr(rest, ':');
	if (!colon)
		return perr(p, t->col, t->s, "probe has no symbol",
			    "write " NATIVE_FORM ", e.g. native:exe:main_loop");
	if (colon == rest)
		return perr(p, t->col, t->s, "empty object in probe",
			    "name a library glob (libfoo.so*) or 'exe' for the main executable");

	object = strndup(rest, colon - rest);
	symbol = strdup(colon + 1);
	text = strdup(t->s);
	if (!object || !symbol || !text) {
		ret = oom(p);
		goto fail;
	}
	/* Version suffixes (foo@@GLIBC_2.17) are not part of the name in the
	 * symbol table the attacher searches. */
	at = strchr(symbol, '@');
	if (at)
		*at = '\0';
	if (!*symbol) {
		ret = perr(
			p, t->col, t->s, "empty symbol in probe",
			"name a symbol or a glob after the second ':', e.g. native:exe:engine_*");
		goto fail;
	}
	why = glob_problem(object);
	if (why) {
		ret = perr(p, t->col, t->s, "bad object glob in probe",
			   "%s; fnmatch(3) syntax: * ? [abc] [!a-z], '\\' escapes", why);
		goto fail;
	}
	why = glob_problem(symbol);
	if (why) {
		ret = perr(p, t->col, t->s, "bad symbol glob in probe",
			   "%s; fnmatch(3) syntax: * ? [abc] [!a-z], '\\' escapes", why);
		goto fail;
	}

	return spec_add(p, t, PT_PROBE_NATIVE, object, symbol, NULL, text, idx);

fail:
	free(object);
	free(symbol);
	free(text);
	return ret;
}

#define STEP_FORM "step <probe> [mode=call|iteration] [tokens=<v>] [kv_len=<v>] [batch=<v>]"

/* Add expression text (at tok's column, after skip chars) to probe idx in role. */
static int add_vexpr(struct parser *p, int idx, enum pt_vrole role, const struct tok *t,
		     size_t skip)
{
	struct pt_probe_spec *ps = &p->cfg->probes[idx];
	char why[256];
	unsigned int k;
	int ret;

	for (k = 0; k < ps->nvals; k++)
		if (ps->vals[k].role == role ||
		    (role == PT_VROLE_COUNT && ps->vals[k].role == PT_VROLE_TOKENS) ||
		    (role == PT_VROLE_TOKENS && ps->vals[k].role == PT_VROLE_COUNT)) {
			char what[64];

			snprintf(what, sizeof(what), "%s of this probe given twice",
				 role == PT_VROLE_COUNT ? "tokens" : pt_vexpr__role_name(role));
			return perr(p, t->col, t->s, what, "%s already reads %s '%s'; keep one",
				    ps->text, pt_vexpr__role_name(ps->vals[k].role),
				    ps->vals[k].text);
		}
	if (ps->nvals >= PT_MAX_VALS)
		return perr(p, t->col, t->s, "too many values on one probe", "at most %d per probe",
			    PT_MAX_VALS);
	ret = pt_vexpr__parse(t->s + skip, ps->kind == PT_PROBE_PY, &ps->vals[ps->nvals], why,
			      sizeof(why));
	if (ret == -ENOMEM)
		return oom(p);
	if (ret) {
		char what[300];

		/* why is "what (hint: ...)": split it for perr */
		char *h = strstr(why, " (hint: ");

		if (h) {
			size_t hl;

			*h = '\0';
			h += 8;
			hl = strlen(h);
			if (hl && h[hl - 1] == ')')
				h[hl - 1] = '\0';
		}
		snprintf(what, sizeof(what), "bad value expression: %s", why);
		return perr(p, t->col + (int)skip, t->s + skip, what, h ? "%s" : NULL, h);
	}
	ps->vals[ps->nvals].role = role;
	ps->vals[ps->nvals].col = t->col + (int)skip;
	ps->vals[ps->nvals].line = p->line;
	ps->nvals++;
	p->cfg->nvals++;
	return 0;
}

static bool keeps_elems(const struct pt_vexpr *e, enum pt_vfn kv_reduce)
{
	struct pt_val_expr x = pt_vexpr__bpf(e, kv_reduce);

	return x.op == PT_VOP_ELEMS || x.op == PT_VOP_AUTO_ELEMS;
}

/* One list per call can travel with its elements (for a percentile):
 * checked at the end, when kv_len_reduce is known wherever it was set. */
static int check_percentiles(struct parser *p)
{
	const struct pt_config *cfg = p->cfg;

	for (size_t i = 0; i < cfg->nprobes; i++) {
		const struct pt_probe_spec *ps = &cfg->probes[i];
		int first = -1;

		for (unsigned int k = 0; k < ps->nvals; k++) {
			if (!keeps_elems(&ps->vals[k], cfg->kv_reduce))
				continue;
			if (first < 0) {
				first = (int)k;
				continue;
			}
			p->line = ps->vals[k].line;
			if (ps->vals[first].fn == PT_VFN_NONE)
				return perr(p, ps->vals[k].col, ps->vals[k].text,
					    "two percentiles on one probe",
					    "one list per call can be kept for a percentile, and "
					    "'%s' is one through kv_len_reduce %s; use mean, min, "
					    "max or sum for one of them",
					    ps->vals[first].text,
					    pt_vexpr__fn_name(cfg->kv_reduce));
			return perr(p, ps->vals[k].col, ps->vals[k].text,
				    "two percentiles on one probe",
				    "one list per call can be kept for a percentile, and '%s' is "
				    "one; use mean, min, max or sum for the other",
				    ps->vals[first].text);
		}
	}
	return 0;
}

static int parse_step(struct parser *p)
{
	struct pt_config *cfg = p->cfg;
	const struct tok *t = p->toks;
	enum pt_step_mode mode = PT_STEP_CALL;
	bool seen_mode = false;
	int i, idx, err;

	if (p->step_line)
		return perr(p, t[0].col, t[0].s, "second step line",
			    "only one step per file; the first is at line %d", p->step_line);
	if (p->ntok < 2)
		return perr(p, t[0].col, t[0].s, "step has no probe", STEP_FORM);
	err = probe_get(p, &t[1], &idx);
	if (err)
		return err;
	for (i = 2; i < p->ntok; i++) {
		static const char *const roles[] = { "tokens=", "kv_len=", "batch=" };
		int r;

		for (r = 0; r < 3; r++)
			if (!strncmp(t[i].s, roles[r], strlen(roles[r])))
				break;
		if (r < 3) {
			err = add_vexpr(p, idx, (enum pt_vrole)r, &t[i], strlen(roles[r]));
			if (err)
				return err;
			continue;
		}
		if (strncmp(t[i].s, "mode=", 5) || seen_mode)
			return perr(p, t[i].col, t[i].s, "unexpected token on step line",
				    STEP_FORM);
		seen_mode = true;
		if (!strcmp(t[i].s + 5, "call"))
			mode = PT_STEP_CALL;
		else if (!strcmp(t[i].s + 5, "iteration"))
			mode = PT_STEP_ITERATION;
		else
			return perr(p, t[i].col, t[i].s, "unknown step mode",
				    "mode=call (entry to return) or mode=iteration "
				    "(entry to the next entry)");
	}
	cfg->probes[idx].is_step = true;
	cfg->step_probe = idx;
	cfg->step_mode = mode;
	p->step_line = p->line;
	return 0;
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

static int check_bucket_name(struct parser *p, const struct tok *t)
{
	const char *s = t->s, *dot = strchr(s, '.');

	for (; *s; s++)
		if (!name_char(*s))
			return perr(p, t->col, t->s, "bad character in bucket name",
				    "use letters, digits, '_', '-' and '.', as in engine.schedule");
	if (!dot)
		return perr(p, t->col, t->s, "bucket name has no domain",
			    "name it <domain>.<name>, e.g. engine.schedule; the domain groups "
			    "buckets in the report");
	if (dot == t->s)
		return perr(p, t->col, t->s, "empty domain in bucket name",
			    "put the domain before the first '.', e.g. engine.schedule");
	if (!dot[1])
		return perr(p, t->col, t->s, "empty name after the domain in bucket name",
			    "put a name after the first '.', e.g. engine.schedule");
	return 0;
}

static int parse_bucket(struct parser *p)
{
	struct pt_config *cfg = p->cfg;
	const struct tok *t = p->toks;
	struct pt_bucket_cfg *b, *grown;
	unsigned long long bit;
	size_t bi, i;
	int k, idx, err;

	if (p->ntok < 2)
		return perr(p, t[0].col, t[0].s, "bucket has no name",
			    "bucket <domain.name> <probe> [<probe> ...]");
	err = check_bucket_name(p, &t[1]);
	if (err)
		return err;
	for (i = 0; i < cfg->nbuckets; i++)
		if (!strcmp(cfg->buckets[i].name, t[1].s))
			return perr(p, t[1].col, t[1].s, "duplicate bucket",
				    "first defined at line %d; list all its probes on that line",
				    cfg->buckets[i].line);
	if (cfg->nbuckets >= PT_MAX_BUCKETS)
		return perr(p, t[1].col, t[1].s, "too many buckets",
			    "at most %d buckets; merge some, a bucket takes several probes",
			    PT_MAX_BUCKETS);
	if (p->ntok < 3)
		return perr(p, t[1].col, t[1].s, "bucket has no probes",
			    "bucket %s " NATIVE_FORM " [<probe> ...]", t[1].s);

	grown = realloc(cfg->buckets, (cfg->nbuckets + 1) * sizeof(*grown));
	if (!grown)
		return oom(p);
	cfg->buckets = grown;
	bi = cfg->nbuckets;
	b = &cfg->buckets[bi];
	memset(b, 0, sizeof(*b));
	b->line = p->line;
	b->name = strdup(t[1].s);
	b->domain = strndup(t[1].s, strchr(t[1].s, '.') - t[1].s);
	/* counted now so pt_config__free releases the names on any error below */
	cfg->nbuckets++;
	if (!b->name || !b->domain)
		return oom(p);

	bit = 1ULL << bi;
	for (k = 2; k < p->ntok; k++) {
		err = probe_get(p, &t[k], &idx);
		if (err)
			return err;
		if (cfg->probes[idx].bucket_mask & bit)
			return perr(p, t[k].col, t[k].s, "probe listed twice in bucket",
				    "remove the repeat from bucket %s", t[1].s);
		cfg->probes[idx].bucket_mask |= bit;
	}
	return 0;
}

/* count tokens <probe> <expr>: tokens added to the step running on the
 * calling thread (a sampler's return, say). */
static int parse_count(struct parser *p)
{
	const struct tok *t = p->toks;
	int idx, err;

	if (p->ntok < 2 || strcmp(t[1].s, "tokens"))
		return perr(p, p->ntok < 2 ? t[0].col : t[1].col, p->ntok < 2 ? t[0].s : t[1].s,
			    "count needs what it counts", "count tokens <probe> <value>");
	if (p->ntok != 4)
		return perr(p, t[p->ntok < 4 ? 1 : 4].col, t[p->ntok < 4 ? 1 : 4].s,
			    p->ntok < 4 ? "count tokens needs a probe and a value"
					: "unexpected token on count line",
			    "count tokens <probe> <value>, e.g. count tokens "
			    "py:engine.Sampler.sample len(ret)");
	err = probe_get(p, &t[2], &idx);
	if (err)
		return err;
	return add_vexpr(p, idx, PT_VROLE_COUNT, &t[3], 0);
}

/* lines <py-probe> [<py-probe> ...]: functions for the per-line report. */
static int parse_lines(struct parser *p)
{
	struct pt_config *cfg = p->cfg;
	const struct tok *t = p->toks;
	int k, idx, err;

	if (p->ntok < 2)
		return perr(p, t[0].col, t[0].s, "lines has no probe",
			    "lines py:<module>.<Class>.<method> or py:<module>::<function>");
	for (k = 1; k < p->ntok; k++) {
		if (strncmp(t[k].s, "py:", 3))
			return perr(p, t[k].col, t[k].s, "lines takes py: probes only",
				    "per-line times come from sampled Python stacks, e.g. "
				    "lines py:engine.Scheduler.schedule");
		err = probe_get(p, &t[k], &idx);
		if (err)
			return err;
		cfg->probes[idx].is_lines = true;
		cfg->nlines++;
	}
	return 0;
}

/* Decimal only: a config value like "010" or "0x10" should not change base. */
static bool parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (max - (unsigned)(*s - '0')) / 10)
			return false;
		v = v * 10 + (unsigned)(*s - '0');
	}
	*out = v;
	return true;
}

static bool parse_onoff(const char *s, bool *out)
{
	if (!strcmp(s, "on"))
		*out = true;
	else if (!strcmp(s, "off"))
		*out = false;
	else
		return false;
	return true;
}

/* ---- set <key> <value>: one parser per key (v: the value's token;
 * what: "bad value for <key>", the message of every refusal) ---- */

/* A whole number in [min, max] into *out; else the hint. */
static int set_uint(struct parser *p, const struct tok *v, const char *what, unsigned long long min,
		    unsigned long long max, unsigned long long *out, const char *hint)
{
	if (!parse_uint(v->s, max, out) || *out < min)
		return perr(p, v->col, v->s, what, "%s", hint);
	return 0;
}

static int set_warmup_steps(struct parser *p, const struct tok *v, const char *what)
{
	unsigned long long n;
	int e = set_uint(p, v, what, 0, UINT_MAX, &n, "a whole number of steps, 0..4294967295");

	if (!e)
		p->cfg->warmup_steps = n;
	return e;
}

static int set_ringbuf_mb(struct parser *p, const struct tok *v, const char *what)
{
	unsigned long long n;

	/* BPF ring buffers must be a power-of-two number of pages. */
	if (!parse_uint(v->s, 1024, &n) || !n || (n & (n - 1)))
		return perr(p, v->col, v->s, what, "a power of two from 1 to 1024 (MiB), e.g. 16");
	p->cfg->ringbuf_mb = n;
	return 0;
}

static int set_poll_ms(struct parser *p, const struct tok *v, const char *what)
{
	unsigned long long n;
	int e = set_uint(p, v, what, 1, 1000, &n, "milliseconds, 1..1000");

	if (!e)
		p->cfg->poll_ms = n;
	return e;
}

static int set_sample_hz(struct parser *p, const struct tok *v, const char *what)
{
	unsigned long long n;
	/* cpu-clock periods below 100 us cost the target more than they
	 * tell; 0 turns sampling off. */
	int e = set_uint(p, v, what, 0, 10000, &n,
			 "samples per second per thread, 0 (off) to 10000, e.g. 1000");

	if (!e)
		p->cfg->sample_hz = n;
	return e;
}

static int set_python_mode(struct parser *p, const struct tok *v, const char *what)
{
	static const struct {
		const char *name;
		enum pt_python_mode mode;
	} modes[] = {
		{ "auto", PT_PYMODE_AUTO },
		{ "agent", PT_PYMODE_AGENT },
		{ "evalframe", PT_PYMODE_EVALFRAME },
		{ "sampled", PT_PYMODE_SAMPLED },
	};

	for (size_t k = 0; k < ARRAY_SIZE(modes); k++)
		if (!strcmp(v->s, modes[k].name)) {
			p->cfg->python_mode = modes[k].mode;
			return 0;
		}
	if (!strcmp(v->s, "usdt"))
		return perr(p, v->col, v->s, "python_mode usdt is not offered",
			    "where an interpreter's USDT probes time every call, the agent times "
			    "only the named calls, exactly (docs/targets.md); use auto or agent");
	return perr(p, v->col, v->s, what,
		    "auto (the agent where the process has it, else sampled), agent, evalframe "
		    "or sampled");
}

static int set_run_gap_ms(struct parser *p, const struct tok *v, const char *what)
{
	unsigned long long n;
	/* below a step's own length every step would be a run */
	int e = set_uint(p, v, what, 1, 3600000, &n,
			 "milliseconds of no steps that end a run, 1..3600000, e.g. 1000");

	if (!e)
		p->cfg->run_gap_ms = (unsigned int)n;
	return e;
}

static int set_warmup_runs(struct parser *p, const struct tok *v, const char *what)
{
	unsigned long long n;
	int e = set_uint(p, v, what, 0, UINT_MAX, &n, "a whole number of runs, 0..4294967295");

	if (!e)
		p->cfg->warmup_runs = (unsigned int)n;
	return e;
}

static int set_kv_len_reduce(struct parser *p, const struct tok *v, const char *what)
{
	static const enum pt_vfn ok[] = { PT_VFN_MEAN, PT_VFN_MAX, PT_VFN_MIN,
					  PT_VFN_SUM,  PT_VFN_P50, PT_VFN_P90 };

	for (size_t k = 0; k < ARRAY_SIZE(ok); k++)
		if (!strcmp(v->s, pt_vexpr__fn_name(ok[k]))) {
			p->cfg->kv_reduce = ok[k];
			return 0;
		}
	return perr(p, v->col, v->s, what,
		    "mean, max, min, sum, p50 or p90: how a kv_len list becomes one number per "
		    "step");
}

static int set_kv_bins(struct parser *p, const struct tok *v, const char *what)
{
	struct pt_config *cfg = p->cfg;
	char buf[LINE_MAX_CHARS + 1], *s = buf, *comma;
	unsigned long long n;
	size_t nb = 0;

	snprintf(buf, sizeof(buf), "%s", v->s); /* cut at commas; v stays whole for messages */
	for (;;) {
		comma = strchr(s, ',');
		if (comma)
			*comma = '\0';
		if (nb == PT_MAX_KV_BINS || !parse_uint(s, UINT64_MAX / 2, &n) ||
		    (nb == 0 && n != 0) || (nb && n <= cfg->kv_bins[nb - 1]))
			return perr(
				p, v->col, v->s, what,
				"increasing lower bounds starting at 0, comma-separated, at most "
				"%d, e.g. 0,512,1024,2048 (the last bin is open-ended)",
				PT_MAX_KV_BINS);
		cfg->kv_bins[nb++] = n;
		if (!comma)
			break;
		s = comma + 1;
	}
	cfg->nkv_bins = nb;
	return 0;
}

static int set_onoff(struct parser *p, const struct tok *v, const char *what, bool *out)
{
	if (!parse_onoff(v->s, out))
		return perr(p, v->col, v->s, what, "on or off");
	return 0;
}

static int set_prologue_skip(struct parser *p, const struct tok *v, const char *what)
{
	return set_onoff(p, v, what, &p->cfg->prologue_skip);
}

static int set_ringbuf_wakeup(struct parser *p, const struct tok *v, const char *what)
{
	return set_onoff(p, v, what, &p->cfg->ringbuf_wakeup);
}

static int set_py_session(struct parser *p, const struct tok *v, const char *what)
{
	return set_onoff(p, v, what, &p->cfg->py_session);
}

static int set_py_trampolines(struct parser *p, const struct tok *v, const char *what)
{
	return set_onoff(p, v, what, &p->cfg->py_trampolines);
}

static int set_native_frames(struct parser *p, const struct tok *v, const char *what)
{
	return set_onoff(p, v, what, &p->cfg->native_frames);
}

static int (*const set_fns[NR_KEYS])(struct parser *p, const struct tok *v, const char *what) = {
	[KEY_WARMUP_STEPS] = set_warmup_steps,
	[KEY_RINGBUF_MB] = set_ringbuf_mb,
	[KEY_POLL_MS] = set_poll_ms,
	[KEY_PROLOGUE_SKIP] = set_prologue_skip,
	[KEY_RINGBUF_WAKEUP] = set_ringbuf_wakeup,
	[KEY_PY_SESSION] = set_py_session,
	[KEY_PY_TRAMPOLINES] = set_py_trampolines,
	[KEY_SAMPLE_HZ] = set_sample_hz,
	[KEY_PYTHON_MODE] = set_python_mode,
	[KEY_KV_LEN_REDUCE] = set_kv_len_reduce,
	[KEY_KV_BINS] = set_kv_bins,
	[KEY_RUN_GAP_MS] = set_run_gap_ms,
	[KEY_WARMUP_RUNS] = set_warmup_runs,
	[KEY_NATIVE_FRAMES] = set_native_frames,
};

static int parse_set(struct parser *p)
{
	const struct tok *t = p->toks;
	const char *sugg;
	char what[64];
	int key, e;

	if (p->ntok < 2)
		return perr(p, t[0].col, t[0].s, "set has no key",
			    "set <key> <value>; keys: " KNOWN_KEYS);
	for (key = 0; key < NR_KEYS; key++)
		if (!strcmp(t[1].s, key_names[key]))
			break;
	if (key == NR_KEYS) {
		sugg = closest(t[1].s, key_names, NR_KEYS);
		if (sugg)
			return perr(p, t[1].col, t[1].s, "unknown key",
				    "did you mean %s? known keys: " KNOWN_KEYS, sugg);
		return perr(p, t[1].col, t[1].s, "unknown key", "known keys: " KNOWN_KEYS);
	}
	if (p->ntok < 3)
		return perr(p, t[1].col, t[1].s, "missing value for key", "set %s <value>",
			    key_names[key]);
	if (p->ntok > 3)
		return perr(p, t[3].col, t[3].s, "unexpected token on set line",
			    "set takes one key and one value");
	if (p->key_line[key])
		return perr(p, t[1].col, t[1].s, "key set twice", "first set at line %d; keep one",
			    p->key_line[key]);
	snprintf(what, sizeof(what), "bad value for %s", key_names[key]);
	e = set_fns[key](p, &t[2], what);
	if (!e)
		p->key_line[key] = p->line;
	return e;
}

/* Split in place on spaces and tabs; a '#' anywhere starts a comment. */
static void tokenize(struct parser *p, char *line)
{
	char *s = line;

	p->ntok = 0;
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			return;
		p->toks[p->ntok].s = s;
		p->toks[p->ntok].col = (int)(s - line) + 1;
		p->ntok++;
		while (*s && *s != ' ' && *s != '\t' && *s != '#')
			s++;
		if (*s == '#') {
			*s = '\0';
			return;
		}
		if (*s)
			*s++ = '\0';
	}
}

/* What to do with a line over LINE_MAX_CHARS, by what it is. */
static const char *long_line_hint(const char *line)
{
	line += strspn(line, " \t");
	if (*line == '#')
		return "shorten the comment, or split it over several lines";
	if (!strncmp(line, "bucket", 6) && strchr(" \t", line[6]))
		return "split the bucket into several, or cover symbols with one glob";
	if (!strncmp(line, "step", 4) && strchr(" \t", line[4]))
		return "a step line names one probe (and tokens=, kv_len=, batch=): is a name "
		       "that long? a glob can shorten it";
	if ((!strncmp(line, "lines", 5) && strchr(" \t", line[5])) ||
	    (!strncmp(line, "count", 5) && strchr(" \t", line[5])))
		return "split it over several lines, or cover functions with one glob";
	return "shorten it";
}

static int parse_line(struct parser *p, char *line, size_t len)
{
	const struct tok *t = p->toks;
	const char *sugg;

	if (len > LINE_MAX_CHARS)
		return perr(p, LINE_MAX_CHARS + 1, NULL, "line longer than 4096 characters", "%s",
			    long_line_hint(line));
	if (strlen(line) != len)
		return perr(p, (int)strlen(line) + 1, NULL, "NUL byte in line",
			    "targets files are plain text");
	tokenize(p, line);
	if (!p->ntok)
		return 0;
	if (!strcmp(t[0].s, "step"))
		return parse_step(p);
	if (!strcmp(t[0].s, "bucket"))
		return parse_bucket(p);
	if (!strcmp(t[0].s, "set"))
		return parse_set(p);
	if (!strcmp(t[0].s, "lines"))
		return parse_lines(p);
	if (!strcmp(t[0].s, "count"))
		return parse_count(p);
	sugg = closest(t[0].s, keywords, ARRAY_SIZE(keywords));
	if (sugg)
		return perr(
			p, t[0].col, t[0].s, "unknown keyword",
			"did you mean %s? a line is step, bucket, lines, count, set or a # comment",
			sugg);
	return perr(p, t[0].col, t[0].s, "unknown keyword",
		    "a line is step, bucket, lines, count, set or a # comment");
}

/* Every setting as a file without set lines has it. */
static void set_defaults(struct pt_config *cfg)
{
	static const uint64_t bins[] = { 0, 512, 1024, 2048, 4096, 8192, 16384 };

	cfg->step_probe = -1;
	cfg->step_mode = PT_STEP_CALL;
	cfg->ringbuf_mb = 16;
	cfg->poll_ms = 20;
	cfg->prologue_skip = true;
	cfg->ringbuf_wakeup = false;
	cfg->py_session = true;
	cfg->py_trampolines = true;
	cfg->native_frames = true;
	cfg->sample_hz = 1000;
	cfg->python_mode = PT_PYMODE_AUTO;
	cfg->kv_reduce = PT_VFN_MEAN;
	cfg->run_gap_ms = 1000;
	memcpy(cfg->kv_bins, bins, sizeof(bins));
	cfg->nkv_bins = ARRAY_SIZE(bins);
}

void pt_config__sampling_only(struct pt_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	set_defaults(cfg);
}

int pt_config__parse(struct pt_config *cfg, FILE *f, const char *path, char *err, size_t errlen)
{
	struct parser *p;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	if (!cfg)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	if (err && errlen)
		err[0] = '\0';
	if (!path)
		path = "<targets>";
	if (!f) {
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot read targets file: no file", path);
		return -EINVAL;
	}
	/* The token table is 32 KiB: keep it off the stack. */
	p = calloc(1, sizeof(*p));
	if (!p) {
		if (err && errlen)
			snprintf(err, errlen, "%s: error: out of memory", path);
		return -ENOMEM;
	}
	p->cfg = cfg;
	p->path = path;
	p->err = err;
	p->errlen = errlen;

	set_defaults(cfg);
	cfg->path = strdup(path);
	if (!cfg->path) {
		ret = oom(p);
		goto out;
	}

	errno = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		p->line++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n > 0 && line[n - 1] == '\r') /* files edited on Windows */
			line[--n] = '\0';
		ret = parse_line(p, line, (size_t)n);
		if (ret)
			goto out;
	}
	if (ferror(f)) {
		ret = errno ? -errno : -EIO;
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot read targets file: %s", path,
				 strerror(-ret));
		goto out;
	}
	ret = check_percentiles(p);
	if (ret)
		goto out;
	if (cfg->nvals && cfg->step_probe < 0) {
		p->line = 1;
		ret = perr(p, 1, NULL, "count tokens without a step line",
			   "tokens are counted per step: add 'step <probe>'");
	} else if (cfg->step_probe < 0 && !cfg->nbuckets && !cfg->nlines) {
		/* about the whole file: point at its start */
		p->line = 1;
		ret = perr(p, 1, NULL, "nothing to profile: no step, bucket or lines line",
			   "add 'step " NATIVE_FORM "', 'bucket <domain.name> <probe>...' or "
			   "'lines py:<module>::<function>'");
	}
out:
	free(line);
	free(p);
	if (ret)
		pt_config__free(cfg);
	return ret;
}

int pt_config__load(struct pt_config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f;
	int ret;

	if (!cfg || !path)
		return -EINVAL;
	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		memset(cfg, 0, sizeof(*cfg));
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot read targets file: %s", path,
				 strerror(-ret));
		return ret;
	}
	ret = pt_config__parse(cfg, f, path, err, errlen);
	fclose(f);
	return ret;
}

void pt_config__free(struct pt_config *cfg)
{
	size_t i;

	if (!cfg)
		return;
	for (i = 0; i < cfg->nprobes; i++) {
		for (unsigned int k = 0; k < cfg->probes[i].nvals; k++)
			pt_vexpr__free(&cfg->probes[i].vals[k]);
		free(cfg->probes[i].text);
		free(cfg->probes[i].object);
		free(cfg->probes[i].symbol);
		free(cfg->probes[i].cls);
		free(cfg->probes[i].alt_object);
	}
	free(cfg->probes);
	for (i = 0; i < cfg->nbuckets; i++) {
		free(cfg->buckets[i].name);
		free(cfg->buckets[i].domain);
	}
	free(cfg->buckets);
	free(cfg->path);
	memset(cfg, 0, sizeof(*cfg));
}

bool pt_config__py_has_roles(const struct pt_config *cfg)
{
	for (size_t i = 0; i < cfg->nprobes; i++)
		if (cfg->probes[i].kind == PT_PROBE_PY &&
		    (cfg->probes[i].is_step || cfg->probes[i].bucket_mask || cfg->probes[i].nvals))
			return true;
	return false;
}

int pt_config__check_modes(const struct pt_config *cfg, char *err, size_t errlen)
{
	if (cfg->nlines && !cfg->sample_hz) {
		snprintf(err, errlen,
			 "%s: lines needs stack sampling, which `set sample_hz 0` "
			 "turns off (hint: remove that line)",
			 cfg->path);
		return -EINVAL;
	}
	if (cfg->python_mode != PT_PYMODE_SAMPLED)
		return 0;
	if (!cfg->sample_hz) {
		snprintf(err, errlen,
			 "%s: python_mode sampled needs stack sampling, which `set "
			 "sample_hz 0` turns off (hint: remove one of the two lines)",
			 cfg->path);
		return -EINVAL;
	}
	if (pt_config__py_has_roles(cfg)) {
		snprintf(err, errlen,
			 "%s: python_mode sampled cannot time a py: probe used as a "
			 "step, in a bucket or read for values: they need every call (hint: "
			 "use python_mode auto or agent)",
			 cfg->path);
		return -EINVAL;
	}
	return 0;
}
