// SPDX-License-Identifier: BSD-2-Clause
/*
 * Value expressions (valexpr.h): parse, map to a BPF read, reduce.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "valexpr.h"
#include "util/util.h"

/* clang-format off */
static const char *const fn_names[] = {
	[PT_VFN_NONE] = "", [PT_VFN_LEN] = "len", [PT_VFN_SUM] = "sum", [PT_VFN_MEAN] = "mean",
	[PT_VFN_MIN] = "min", [PT_VFN_MAX] = "max", [PT_VFN_P50] = "p50", [PT_VFN_P90] = "p90",
};
/* clang-format on */

const char *pt_vexpr__fn_name(enum pt_vfn fn)
{
	return fn <= PT_VFN_P90 ? fn_names[fn] : "?";
}

const char *pt_vexpr__role_name(enum pt_vrole role)
{
	static const char *const names[] = { "tokens", "kv_len", "batch", "count tokens" };

	return role < PT_VROLE_MAX ? names[role] : "?";
}

const char *pt_vexpr__status_name(unsigned int status)
{
	static const char *const names[] = {
		[PT_VST_OK] = "ok",
		[PT_VST_UNREAD] = "not_read",
		[PT_VST_FAULT] = "unreadable",
		[PT_VST_TYPE] = "wrong_type",
		[PT_VST_RANGE] = "out_of_range",
		[PT_VST_NONAME] = "no_such_argument",
		[PT_VST_UNSET] = "unset",
		[PT_VST_TRUNC] = "list_too_long",
		[PT_VST_ATTR_PENDING] = "type_pending",
		[PT_VST_ATTR_MISSING] = "no_attribute",
		[PT_VST_ATTR_UNREADABLE] = "attribute_not_readable",
		[PT_VST_ATTR_UNDECIDED] = "attribute_undecided",
	};

	return status < PT_VST_MAX ? names[status] : "?";
}

static int fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool ident(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

#define PY_FORMS                                                                                   \
	"arg:<name>, ret, len(X), sum(X), mean(X), min(X), max(X), p50(X) or p90(X) "              \
	"with X arg:<name>, ret, arg:<name>.<attr> or ret.<attr>"
#define NATIVE_FORMS                                                                               \
	"argN (integer argument N, 0..5) or ret (integer return value), "                          \
	"with :i32 or :u32 for a 32-bit int"

/* The operand: arg:<name> / ret (py), argN / ret (native). A py:
 * operand may end in one attribute, .<attr>. */
/* A native register's width: ":i32", ":u32" (the upper half of the
 * register is not part of a 32-bit value: x86-64 leaves it undefined) or
 * ":i64" (the default). Cut from the end of [s, s+*n). */
static int width(const char *s, size_t *n, struct pt_vexpr *e, char *why, size_t len)
{
	static const struct {
		const char *sfx;
		uint8_t w;
	} ws[] = { { ":i32", PT_VW_I32 }, { ":u32", PT_VW_U32 }, { ":i64", PT_VW_I64 } };
	const char *colon = memchr(s, ':', *n);

	if (!colon)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(ws); i++)
		if ((size_t)(s + *n - colon) == 4 && !strncmp(colon, ws[i].sfx, 4)) {
			e->width = ws[i].w;
			*n = (size_t)(colon - s);
			return 0;
		}
	return fail(why, len,
		    "unknown width '%.*s' (hint: :i32 or :u32 for a 32-bit int, :i64 "
		    "(the default) for a long or pointer-sized one)",
		    (int)(s + *n - colon), colon);
}

static int operand(const char *s, size_t n, bool py, struct pt_vexpr *e, char *why, size_t len)
{
	const char *dot = memchr(s, '.', n);

	if (dot && py) {
		/* one attribute of an ordinary instance (docs/targets.md) */
		size_t an = n - (size_t)(dot + 1 - s);
		const char *dot2 = memchr(dot + 1, '.', an);

		if (dot2)
			return fail(why, len,
				    "one attribute level at most (hint: read an object "
				    "nearer the value, e.g. %.*s)",
				    (int)(dot2 - s), s);
		if (!ident(dot + 1, an))
			return fail(why, len,
				    "not a Python attribute name after '.' (hint: "
				    "arg:<name>.<attr>, e.g. arg:req.num_tokens)");
		if (an > PT_VEXPR_ATTR_MAX)
			return fail(why, len, "attribute name longer than %d characters",
				    PT_VEXPR_ATTR_MAX);
		n = (size_t)(dot - s);
		if (!(n == 3 && !strncmp(s, "ret", 3)) && !(n > 4 && !strncmp(s, "arg:", 4)))
			return fail(why, len,
				    "an attribute of what? (hint: arg:<name>.<attr> or "
				    "ret.<attr>)");
		e->attr = strndup(dot + 1, an);
		if (!e->attr)
			return -ENOMEM;
	}
	if (!py && strncmp(s, "arg:", 4) && width(s, &n, e, why, len))
		return -EINVAL;
	if (n == 3 && !strncmp(s, "ret", 3)) {
		e->src = py ? PT_VSRC_PYRET : PT_VSRC_RET;
		return 0;
	}
	if (!py) {
		if (n == 4 && !strncmp(s, "arg", 3) && s[3] >= '0' && s[3] <= '5') {
			e->src = PT_VSRC_ARG;
			e->argn = (uint8_t)(s[3] - '0');
			return 0;
		}
		if (n > 3 && !strncmp(s, "arg", 3) && isdigit((unsigned char)s[3]))
			return fail(why, len,
				    "argument index out of range (hint: arg0..arg5, the "
				    "integer arguments passed in registers)");
		if (n > 4 && !strncmp(s, "arg:", 4))
			return fail(why, len,
				    "arg:<name> reads a Python argument (hint: a native "
				    "probe takes " NATIVE_FORMS ")");
		return fail(why, len,
			    "unknown value (hint: a native probe takes " NATIVE_FORMS ")");
	}
	if (n > 4 && !strncmp(s, "arg:", 4)) {
		if (!ident(s + 4, n - 4))
			return fail(why, len,
				    "not a Python name (hint: arg:<name>, the name of an "
				    "argument of the function)");
		e->src = PT_VSRC_PYARG;
		e->name = strndup(s + 4, n - 4);
		return e->name ? 0 : -ENOMEM;
	}
	if (n >= 4 && !strncmp(s, "arg", 3) && isdigit((unsigned char)s[3]))
		return fail(why, len, "a Python probe names its argument (hint: arg:<name>)");
	return fail(why, len, "unknown value (hint: a py: probe takes " PY_FORMS ")");
}

int pt_vexpr__parse(const char *s, bool py, struct pt_vexpr *e, char *why, size_t len)
{
	const char *open = strchr(s, '(');
	size_t n = strlen(s);
	int ret;

	memset(e, 0, sizeof(*e));
	if (!n)
		return fail(why, len, "empty value (hint: %s)", py ? PY_FORMS : NATIVE_FORMS);
	if (open) {
		size_t fl = (size_t)(open - s);
		enum pt_vfn fn = PT_VFN_NONE;

		for (int i = PT_VFN_LEN; i <= PT_VFN_P90; i++)
			if (strlen(fn_names[i]) == fl && !strncmp(s, fn_names[i], fl))
				fn = (enum pt_vfn)i;
		if (fn == PT_VFN_NONE)
			return fail(why, len,
				    "unknown function '%.*s' (hint: len, sum, mean, min, "
				    "max, p50 or p90)",
				    (int)fl, s);
		if (!py)
			return fail(why, len,
				    "%s() reads a Python object (hint: a native probe "
				    "takes " NATIVE_FORMS ")",
				    fn_names[fn]);
		if (s[n - 1] != ')' || n < fl + 3)
			return fail(why, len, "unbalanced parentheses (hint: %s(arg:<name>))",
				    fn_names[fn]);
		if (memchr(open + 1, '(', n - fl - 2))
			return fail(why, len, "one function at most (hint: %s(arg:<name>))",
				    fn_names[fn]);
		if (memchr(open + 1, ')', n - fl - 2))
			return fail(why, len, "unbalanced parentheses (hint: %s(arg:<name>))",
				    fn_names[fn]);
		e->fn = fn;
		ret = operand(open + 1, n - fl - 2, true, e, why, len);
	} else {
		if (strchr(s, ')'))
			return fail(why, len, "unbalanced parentheses");
		ret = operand(s, n, py, e, why, len);
	}
	if (!ret) {
		e->text = strdup(s);
		if (!e->text)
			ret = -ENOMEM;
	}
	if (ret)
		pt_vexpr__free(e);
	return ret;
}

void pt_vexpr__free(struct pt_vexpr *e)
{
	free(e->name);
	free(e->text);
	free(e->attr);
	e->name = e->text = e->attr = NULL;
}

enum pt_vfn pt_vexpr__reduce_fn(const struct pt_vexpr *e, enum pt_vfn kv_reduce)
{
	if (e->fn == PT_VFN_NONE && e->role == PT_VROLE_KVLEN)
		return kv_reduce;
	return e->fn;
}

struct pt_val_expr pt_vexpr__bpf(const struct pt_vexpr *e, enum pt_vfn kv_reduce)
{
	struct pt_val_expr x = { .src = e->src,
				 .argn = e->argn,
				 .op = PT_VOP_INT,
				 .width = e->width,
				 .attr = e->attr != NULL };
	enum pt_vfn fn = pt_vexpr__reduce_fn(e, kv_reduce);
	bool pct = fn == PT_VFN_P50 || fn == PT_VFN_P90;

	if (e->src == PT_VSRC_ARG || e->src == PT_VSRC_RET)
		return x; /* a register */
	if (e->fn == PT_VFN_LEN)
		x.op = PT_VOP_LEN;
	else if (e->fn == PT_VFN_NONE && e->role == PT_VROLE_KVLEN)
		x.op = pct ? PT_VOP_AUTO_ELEMS : PT_VOP_AUTO; /* an int, or a list */
	else if (e->fn != PT_VFN_NONE)
		x.op = pct ? PT_VOP_ELEMS : PT_VOP_AGG;
	return x;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int pt_vexpr__reduce(const struct pt_val *v, enum pt_vfn fn, const int64_t *elem, size_t nelem,
		     double *out)
{
	int64_t *s;
	size_t k;
	double q;

	if (v->status != PT_VST_OK)
		return v->status;
	if (v->kind == PT_VKIND_SCALAR) {
		*out = (double)v->v; /* an int: every reduction of one value is itself */
		return 0;
	}
	if (v->kind != PT_VKIND_LIST)
		return PT_VST_TYPE;
	if (fn == PT_VFN_SUM) {
		*out = (double)v->v;
		return 0;
	}
	if (!v->n)
		return PT_VST_TYPE; /* no mean, min, max or percentile of nothing */
	switch (fn) {
	case PT_VFN_MEAN:
		*out = (double)v->v / v->n;
		return 0;
	case PT_VFN_MIN:
		*out = (double)v->min;
		return 0;
	case PT_VFN_MAX:
		*out = (double)v->max;
		return 0;
	case PT_VFN_P50:
	case PT_VFN_P90:
		if (!elem || nelem != v->n)
			return PT_VST_FAULT;
		s = malloc(nelem * sizeof(*s));
		if (!s)
			return PT_VST_FAULT;
		memcpy(s, elem, nelem * sizeof(*s));
		qsort(s, nelem, sizeof(*s), cmp_i64);
		/* nearest rank: the smallest element with at least q of
		 * the list at or below it */
		q = fn == PT_VFN_P50 ? 0.5 : 0.9;
		k = (size_t)(q * (double)nelem + 0.999999999);
		k = k ? k - 1 : 0;
		*out = (double)s[k < nelem ? k : nelem - 1];
		free(s);
		return 0;
	default:
		return PT_VST_TYPE; /* a list where an int is wanted */
	}
}
