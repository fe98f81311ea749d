// SPDX-License-Identifier: BSD-2-Clause
/*
 * Value expressions (valexpr.h): every accepted form with what it parses
 * to, every rejected form with its message, the BPF read each maps to, and
 * the reduction of what BPF read (nearest-rank percentiles on known
 * arrays, statuses passed through, empty lists, count mismatches).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/valexpr.h"

#define NATIVE_HINT                                                                                \
	"argN (integer argument N, 0..5) or ret (integer return value), with :i32 or :u32 "        \
	"for a 32-bit int"
#define PY_HINT                                                                                    \
	"arg:<name>, ret, len(X), sum(X), mean(X), min(X), max(X), p50(X) or p90(X) with X "       \
	"arg:<name>, ret, arg:<name>.<attr> or ret.<attr>"

/* ---- parsing ---- */

static void check_ok(const char *s, bool py, unsigned int src, enum pt_vfn fn, unsigned int argn,
		     const char *name)
{
	struct pt_vexpr e;
	char why[256] = "";
	int ret;

	memset(&e, 0xab, sizeof(e));
	ret = pt_vexpr__parse(s, py, &e, why, sizeof(why));
	if (ret)
		fail_msg("'%s' (%s) rejected: %s", s, py ? "py" : "native", why);
	assert_string_equal(why, "");
	assert_int_equal(e.src, src);
	assert_int_equal(e.fn, fn);
	assert_int_equal(e.argn, argn);
	if (name) {
		assert_non_null(e.name);
		assert_string_equal(e.name, name);
	} else {
		assert_null(e.name);
	}
	assert_non_null(e.text);
	assert_string_equal(e.text, s);
	assert_ptr_not_equal(e.text, s); /* a copy */
	/* role and col are the caller's: left zero */
	assert_int_equal(e.role, 0);
	assert_int_equal(e.col, 0);
	pt_vexpr__free(&e);
	assert_null(e.name);
	assert_null(e.text);
	pt_vexpr__free(&e); /* twice is safe */
}

/* Rejected with exactly want as the reason. */
static void check_bad(const char *s, bool py, const char *want)
{
	struct pt_vexpr e;
	char why[512];

	memset(&e, 0xab, sizeof(e));
	memset(why, 'x', sizeof(why));
	why[sizeof(why) - 1] = '\0';
	assert_int_equal(pt_vexpr__parse(s, py, &e, why, sizeof(why)), -EINVAL);
	if (strcmp(why, want))
		fail_msg("'%s' (%s):\n got  \"%s\"\n want \"%s\"", s, py ? "py" : "native", why,
			 want);
	/* nothing left allocated, nothing dangling */
	assert_null(e.name);
	assert_null(e.text);
	/* no message buffer: still rejected, no crash */
	assert_int_equal(pt_vexpr__parse(s, py, &e, NULL, 0), -EINVAL);
	assert_int_equal(pt_vexpr__parse(s, py, &e, why, 0), -EINVAL);
}

static void test_native_accepted(void **state)
{
	char s[8];

	for (unsigned int n = 0; n <= 5; n++) {
		snprintf(s, sizeof(s), "arg%u", n);
		check_ok(s, false, PT_VSRC_ARG, PT_VFN_NONE, n, NULL);
	}
	check_ok("ret", false, PT_VSRC_RET, PT_VFN_NONE, 0, NULL);
}

/* An attribute expression: its parts, and the BPF side's attr flag. */
static void check_attr(const char *s, unsigned int src, enum pt_vfn fn, const char *name,
		       const char *attr)
{
	struct pt_vexpr e;
	char why[256] = "";

	if (pt_vexpr__parse(s, true, &e, why, sizeof(why)))
		fail_msg("'%s' rejected: %s", s, why);
	assert_int_equal(e.src, src);
	assert_int_equal(e.fn, fn);
	if (name)
		assert_string_equal(e.name, name);
	else
		assert_null(e.name);
	assert_string_equal(e.attr, attr);
	assert_string_equal(e.text, s);
	assert_int_equal(pt_vexpr__bpf(&e, PT_VFN_NONE).attr, 1);
	pt_vexpr__free(&e);
	assert_null(e.attr);
	/* no attribute: no flag */
	assert_int_equal(pt_vexpr__parse("arg:x", true, &e, why, sizeof(why)), 0);
	assert_null(e.attr);
	assert_int_equal(pt_vexpr__bpf(&e, PT_VFN_NONE).attr, 0);
	pt_vexpr__free(&e);
}

static void test_py_accepted(void **state)
{
	static const struct {
		const char *fn;
		enum pt_vfn v;
	} fns[] = {
		{ "len", PT_VFN_LEN }, { "sum", PT_VFN_SUM }, { "mean", PT_VFN_MEAN },
		{ "min", PT_VFN_MIN }, { "max", PT_VFN_MAX }, { "p50", PT_VFN_P50 },
		{ "p90", PT_VFN_P90 },
	};
	char s[64];

	check_ok("arg:seq_lens", true, PT_VSRC_PYARG, PT_VFN_NONE, 0, "seq_lens");
	check_ok("arg:_x9", true, PT_VSRC_PYARG, PT_VFN_NONE, 0, "_x9");
	check_ok("arg:N", true, PT_VSRC_PYARG, PT_VFN_NONE, 0, "N");
	check_ok("ret", true, PT_VSRC_PYRET, PT_VFN_NONE, 0, NULL);
	check_attr("arg:req.num_tokens", PT_VSRC_PYARG, PT_VFN_NONE, "req", "num_tokens");
	check_attr("ret.n", PT_VSRC_PYRET, PT_VFN_NONE, NULL, "n");
	check_attr("len(arg:batch.reqs)", PT_VSRC_PYARG, PT_VFN_LEN, "batch", "reqs");
	check_attr("p90(ret._seq_lens)", PT_VSRC_PYRET, PT_VFN_P90, NULL, "_seq_lens");
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		snprintf(s, sizeof(s), "%s(arg:reqs)", fns[i].fn);
		check_ok(s, true, PT_VSRC_PYARG, fns[i].v, 0, "reqs");
		snprintf(s, sizeof(s), "%s(ret)", fns[i].fn);
		check_ok(s, true, PT_VSRC_PYRET, fns[i].v, 0, NULL);
	}
}

/* A native integer's width: 32-bit ints are cut (the register's upper
 * half is undefined), 64-bit is the default. */
static void test_native_width(void **state)
{
	static const struct {
		const char *s;
		uint8_t src, argn, width;
	} ok[] = {
		{ "arg0", PT_VSRC_ARG, 0, PT_VW_I64 },
		{ "arg1:i32", PT_VSRC_ARG, 1, PT_VW_I32 },
		{ "arg5:u32", PT_VSRC_ARG, 5, PT_VW_U32 },
		{ "arg2:i64", PT_VSRC_ARG, 2, PT_VW_I64 },
		{ "ret:i32", PT_VSRC_RET, 0, PT_VW_I32 },
		{ "ret:u32", PT_VSRC_RET, 0, PT_VW_U32 },
	};
	struct pt_vexpr e;
	char why[256];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct pt_val_expr x;

		assert_int_equal(pt_vexpr__parse(ok[i].s, false, &e, why, sizeof(why)), 0);
		e.role = PT_VROLE_TOKENS;
		x = pt_vexpr__bpf(&e, PT_VFN_MEAN);
		assert_int_equal(x.src, ok[i].src);
		assert_int_equal(x.argn, ok[i].argn);
		assert_int_equal(x.width, ok[i].width);
		assert_string_equal(e.text, ok[i].s);
		pt_vexpr__free(&e);
	}
	check_bad("arg0:i16", false,
		  "unknown width ':i16' (hint: :i32 or :u32 for a 32-bit int, :i64 (the default) "
		  "for a long or pointer-sized one)");
	check_bad("ret:", false,
		  "unknown width ':' (hint: :i32 or :u32 for a 32-bit int, :i64 (the default) for "
		  "a long or pointer-sized one)");
	check_bad("arg7:i32", false,
		  "argument index out of range (hint: arg0..arg5, the integer arguments passed "
		  "in registers)");
}

static void test_native_rejected(void **state)
{
	check_bad("arg6", false,
		  "argument index out of range (hint: arg0..arg5, the integer arguments passed "
		  "in registers)");
	check_bad("arg9", false,
		  "argument index out of range (hint: arg0..arg5, the integer arguments passed "
		  "in registers)");
	check_bad("arg10", false,
		  "argument index out of range (hint: arg0..arg5, the integer arguments passed "
		  "in registers)");
	check_bad("arg:x", false,
		  "arg:<name> reads a Python argument (hint: a native probe takes " NATIVE_HINT
		  ")");
	check_bad("len(arg0)", false,
		  "len() reads a Python object (hint: a native probe takes " NATIVE_HINT ")");
	check_bad("sum(ret)", false,
		  "sum() reads a Python object (hint: a native probe takes " NATIVE_HINT ")");
	check_bad("p90(arg:x)", false,
		  "p90() reads a Python object (hint: a native probe takes " NATIVE_HINT ")");
	check_bad("foo", false, "unknown value (hint: a native probe takes " NATIVE_HINT ")");
	check_bad("arg", false, "unknown value (hint: a native probe takes " NATIVE_HINT ")");
	check_bad("arg:", false, "unknown value (hint: a native probe takes " NATIVE_HINT ")");
	check_bad("Ret", false, "unknown value (hint: a native probe takes " NATIVE_HINT ")");
	check_bad("ret0", false, "unknown value (hint: a native probe takes " NATIVE_HINT ")");
	check_bad("arg0x", false,
		  "argument index out of range (hint: arg0..arg5, the integer "
		  "arguments passed in registers)");
	check_bad("", false, "empty value (hint: " NATIVE_HINT ")");
	check_bad("arg0)", false, "unbalanced parentheses");
	check_bad("foo(arg0)", false,
		  "unknown function 'foo' (hint: len, sum, mean, min, max, p50 or p90)");
}

static void test_py_rejected(void **state)
{
	check_bad("arg0", true, "a Python probe names its argument (hint: arg:<name>)");
	check_bad("arg5", true, "a Python probe names its argument (hint: arg:<name>)");
	check_bad("len(arg1)", true, "a Python probe names its argument (hint: arg:<name>)");
	check_bad("arg:a.b.c", true,
		  "one attribute level at most (hint: read an object nearer the value, e.g. "
		  "arg:a.b)");
	check_bad("len(arg:req.sched.tokens)", true,
		  "one attribute level at most (hint: read an object nearer the value, e.g. "
		  "arg:req.sched)");
	check_bad("arg:a.", true,
		  "not a Python attribute name after '.' (hint: "
		  "arg:<name>.<attr>, e.g. arg:req.num_tokens)");
	check_bad("arg:a.1x", true,
		  "not a Python attribute name after '.' (hint: "
		  "arg:<name>.<attr>, e.g. arg:req.num_tokens)");
	check_bad("foo.bar", true,
		  "an attribute of what? (hint: arg:<name>.<attr> or "
		  "ret.<attr>)");
	check_bad("arg:.x", true,
		  "an attribute of what? (hint: arg:<name>.<attr> or "
		  "ret.<attr>)");
	check_bad("arg:1x.y", true,
		  "not a Python name (hint: arg:<name>, the name of an "
		  "argument of the function)");
	check_bad("arg:1x", true,
		  "not a Python name (hint: arg:<name>, the name of an argument "
		  "of the function)");
	check_bad("arg:a-b", true,
		  "not a Python name (hint: arg:<name>, the name of an argument "
		  "of the function)");
	check_bad("arg:a[0]", true,
		  "not a Python name (hint: arg:<name>, the name of an argument "
		  "of the function)");
	check_bad("median(arg:x)", true,
		  "unknown function 'median' (hint: len, sum, mean, min, max, p50 or p90)");
	check_bad("Len(ret)", true,
		  "unknown function 'Len' (hint: len, sum, mean, min, max, p50 or p90)");
	check_bad("(ret)", true,
		  "unknown function '' (hint: len, sum, mean, min, max, p50 or p90)");
	check_bad("len(arg:x", true, "unbalanced parentheses (hint: len(arg:<name>))");
	check_bad("len(ret)x", true, "unbalanced parentheses (hint: len(arg:<name>))");
	check_bad("p50(", true, "unbalanced parentheses (hint: p50(arg:<name>))");
	check_bad("len()", true, "unbalanced parentheses (hint: len(arg:<name>))");
	check_bad("ret)", true, "unbalanced parentheses");
	check_bad("arg:x)", true, "unbalanced parentheses");
	check_bad("len(len(arg:x))", true, "one function at most (hint: len(arg:<name>))");
	check_bad("sum(p90(ret))", true, "one function at most (hint: sum(arg:<name>))");
	check_bad("len(foo)", true, "unknown value (hint: a py: probe takes " PY_HINT ")");
	check_bad("foo", true, "unknown value (hint: a py: probe takes " PY_HINT ")");
	check_bad("arg:", true, "unknown value (hint: a py: probe takes " PY_HINT ")");
	check_bad("", true, "empty value (hint: " PY_HINT ")");
}

/*
 * Regression: an extra ')' is reported as unbalanced parentheses, not as
 * a bad name.
 */
static void test_py_rejected_extra_close_paren(void **state)
{
	check_bad("len(arg:x))", true, "unbalanced parentheses (hint: len(arg:<name>))");
}

/* A long message is cut to the buffer, NUL-terminated. */
static void test_short_why_buffer(void **state)
{
	struct pt_vexpr e;
	char why[8];

	memset(why, 'x', sizeof(why));
	assert_int_equal(pt_vexpr__parse("arg7", false, &e, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "argumen");
}

static void test_names(void **state)
{
	assert_string_equal(pt_vexpr__fn_name(PT_VFN_NONE), "");
	assert_string_equal(pt_vexpr__fn_name(PT_VFN_LEN), "len");
	assert_string_equal(pt_vexpr__fn_name(PT_VFN_MEAN), "mean");
	assert_string_equal(pt_vexpr__fn_name(PT_VFN_P90), "p90");
	assert_string_equal(pt_vexpr__fn_name((enum pt_vfn)(PT_VFN_P90 + 1)), "?");
	assert_string_equal(pt_vexpr__role_name(PT_VROLE_TOKENS), "tokens");
	assert_string_equal(pt_vexpr__role_name(PT_VROLE_KVLEN), "kv_len");
	assert_string_equal(pt_vexpr__role_name(PT_VROLE_BATCH), "batch");
	assert_string_equal(pt_vexpr__role_name(PT_VROLE_COUNT), "count tokens");
	assert_string_equal(pt_vexpr__role_name(PT_VROLE_MAX), "?");
	assert_string_equal(pt_vexpr__status_name(PT_VST_OK), "ok");
	assert_string_equal(pt_vexpr__status_name(PT_VST_UNREAD), "not_read");
	assert_string_equal(pt_vexpr__status_name(PT_VST_FAULT), "unreadable");
	assert_string_equal(pt_vexpr__status_name(PT_VST_TYPE), "wrong_type");
	assert_string_equal(pt_vexpr__status_name(PT_VST_RANGE), "out_of_range");
	assert_string_equal(pt_vexpr__status_name(PT_VST_NONAME), "no_such_argument");
	assert_string_equal(pt_vexpr__status_name(PT_VST_UNSET), "unset");
	assert_string_equal(pt_vexpr__status_name(PT_VST_TRUNC), "list_too_long");
	assert_string_equal(pt_vexpr__status_name(PT_VST_MAX), "?");
	assert_string_equal(pt_vexpr__status_name(0xffffffffu), "?");
}

/* ---- the BPF read ---- */

static struct pt_val_expr bpf_of(const char *s, bool py, enum pt_vrole role, enum pt_vfn kv_reduce)
{
	struct pt_vexpr e;
	struct pt_val_expr x;
	char why[256];

	if (pt_vexpr__parse(s, py, &e, why, sizeof(why)))
		fail_msg("'%s': %s", s, why);
	e.role = role;
	x = pt_vexpr__bpf(&e, kv_reduce);
	pt_vexpr__free(&e);
	return x;
}

#define assert_bpf(s, py, role, kvr, want_src, want_op, want_argn)                                 \
	do {                                                                                       \
		struct pt_val_expr x_ = bpf_of((s), (py), (role), (kvr));                          \
		if (x_.src != (want_src) || x_.op != (want_op) || x_.argn != (want_argn) ||        \
		    x_.width)                                                                      \
			fail_msg("%s role %d kv_reduce %d: src %u op %u argn %u pad %u, "          \
				 "want src %u op %u argn %u",                                      \
				 (s), (role), (kvr), x_.src, x_.op, x_.argn, x_.width, (want_src), \
				 (want_op), (want_argn));                                          \
	} while (0)

static void test_bpf_ops(void **state)
{
	static const enum pt_vfn agg_reduce[] = { PT_VFN_MEAN, PT_VFN_MAX, PT_VFN_MIN, PT_VFN_SUM };
	static const enum pt_vfn pct_reduce[] = { PT_VFN_P50, PT_VFN_P90 };

	/* bare kv_len: an int or a list, its elements when the reduction is a
	 * percentile */
	for (size_t i = 0; i < sizeof(agg_reduce) / sizeof(agg_reduce[0]); i++) {
		assert_bpf("arg:seq_lens", true, PT_VROLE_KVLEN, agg_reduce[i], PT_VSRC_PYARG,
			   PT_VOP_AUTO, 0);
		assert_bpf("ret", true, PT_VROLE_KVLEN, agg_reduce[i], PT_VSRC_PYRET, PT_VOP_AUTO,
			   0);
	}
	for (size_t i = 0; i < sizeof(pct_reduce) / sizeof(pct_reduce[0]); i++) {
		assert_bpf("arg:seq_lens", true, PT_VROLE_KVLEN, pct_reduce[i], PT_VSRC_PYARG,
			   PT_VOP_AUTO_ELEMS, 0);
		assert_bpf("ret", true, PT_VROLE_KVLEN, pct_reduce[i], PT_VSRC_PYRET,
			   PT_VOP_AUTO_ELEMS, 0);
	}
	/* bare tokens, batch, count: an int, whatever kv_len_reduce says */
	assert_bpf("arg:n", true, PT_VROLE_TOKENS, PT_VFN_MEAN, PT_VSRC_PYARG, PT_VOP_INT, 0);
	assert_bpf("arg:n", true, PT_VROLE_TOKENS, PT_VFN_P90, PT_VSRC_PYARG, PT_VOP_INT, 0);
	assert_bpf("ret", true, PT_VROLE_TOKENS, PT_VFN_P50, PT_VSRC_PYRET, PT_VOP_INT, 0);
	assert_bpf("arg:b", true, PT_VROLE_BATCH, PT_VFN_P90, PT_VSRC_PYARG, PT_VOP_INT, 0);
	assert_bpf("ret", true, PT_VROLE_COUNT, PT_VFN_P90, PT_VSRC_PYRET, PT_VOP_INT, 0);
	/* functions */
	assert_bpf("len(arg:reqs)", true, PT_VROLE_TOKENS, PT_VFN_MEAN, PT_VSRC_PYARG, PT_VOP_LEN,
		   0);
	assert_bpf("len(ret)", true, PT_VROLE_COUNT, PT_VFN_MEAN, PT_VSRC_PYRET, PT_VOP_LEN, 0);
	/* len() of kv_len stays len() when kv_len_reduce is a percentile */
	assert_bpf("len(arg:x)", true, PT_VROLE_KVLEN, PT_VFN_P90, PT_VSRC_PYARG, PT_VOP_LEN, 0);
	assert_bpf("sum(arg:x)", true, PT_VROLE_TOKENS, PT_VFN_MEAN, PT_VSRC_PYARG, PT_VOP_AGG, 0);
	assert_bpf("mean(ret)", true, PT_VROLE_KVLEN, PT_VFN_MEAN, PT_VSRC_PYRET, PT_VOP_AGG, 0);
	assert_bpf("min(arg:x)", true, PT_VROLE_BATCH, PT_VFN_MEAN, PT_VSRC_PYARG, PT_VOP_AGG, 0);
	assert_bpf("max(arg:x)", true, PT_VROLE_KVLEN, PT_VFN_P90, PT_VSRC_PYARG, PT_VOP_AGG, 0);
	assert_bpf("p50(arg:x)", true, PT_VROLE_KVLEN, PT_VFN_MEAN, PT_VSRC_PYARG, PT_VOP_ELEMS, 0);
	assert_bpf("p90(arg:x)", true, PT_VROLE_TOKENS, PT_VFN_MEAN, PT_VSRC_PYARG, PT_VOP_ELEMS,
		   0);
	assert_bpf("p90(ret)", true, PT_VROLE_KVLEN, PT_VFN_SUM, PT_VSRC_PYRET, PT_VOP_ELEMS, 0);
	/* native: a register, always */
	for (unsigned int n = 0; n <= 5; n++) {
		char s[8];

		snprintf(s, sizeof(s), "arg%u", n);
		assert_bpf(s, false, PT_VROLE_TOKENS, PT_VFN_MEAN, PT_VSRC_ARG, PT_VOP_INT, n);
		assert_bpf(s, false, PT_VROLE_KVLEN, PT_VFN_P90, PT_VSRC_ARG, PT_VOP_INT, n);
	}
	assert_bpf("ret", false, PT_VROLE_KVLEN, PT_VFN_P50, PT_VSRC_RET, PT_VOP_INT, 0);
	assert_bpf("ret", false, PT_VROLE_BATCH, PT_VFN_MEAN, PT_VSRC_RET, PT_VOP_INT, 0);
}

static void test_reduce_fn(void **state)
{
	struct pt_vexpr e;
	char why[256];

	assert_int_equal(pt_vexpr__parse("arg:kv", true, &e, why, sizeof(why)), 0);
	e.role = PT_VROLE_KVLEN;
	assert_int_equal(pt_vexpr__reduce_fn(&e, PT_VFN_P90), PT_VFN_P90);
	assert_int_equal(pt_vexpr__reduce_fn(&e, PT_VFN_MAX), PT_VFN_MAX);
	e.role = PT_VROLE_TOKENS;
	assert_int_equal(pt_vexpr__reduce_fn(&e, PT_VFN_P90), PT_VFN_NONE);
	e.role = PT_VROLE_BATCH;
	assert_int_equal(pt_vexpr__reduce_fn(&e, PT_VFN_P90), PT_VFN_NONE);
	pt_vexpr__free(&e);

	assert_int_equal(pt_vexpr__parse("min(arg:kv)", true, &e, why, sizeof(why)), 0);
	e.role = PT_VROLE_KVLEN;
	assert_int_equal(pt_vexpr__reduce_fn(&e, PT_VFN_P90), PT_VFN_MIN);
	pt_vexpr__free(&e);
}

/* ---- reduce ---- */

static struct pt_val scalar(int64_t v)
{
	return (struct pt_val){ .v = v, .status = PT_VST_OK, .kind = PT_VKIND_SCALAR };
}

/* A list as BPF reports it: n, sum, min, max of elem. */
static struct pt_val list_of(const int64_t *elem, size_t n)
{
	struct pt_val v = { .status = PT_VST_OK, .kind = PT_VKIND_LIST, .n = (uint32_t)n };

	for (size_t i = 0; i < n; i++) {
		v.v += elem[i];
		if (!i || elem[i] < v.min)
			v.min = elem[i];
		if (!i || elem[i] > v.max)
			v.max = elem[i];
	}
	return v;
}

/* 0 and the figure, or fail. */
static double reduce_ok(const struct pt_val *v, enum pt_vfn fn, const int64_t *elem, size_t n)
{
	double out = -12345.5;
	int st = pt_vexpr__reduce(v, fn, elem, n, &out);

	if (st)
		fail_msg("reduce %s: status %d", pt_vexpr__fn_name(fn), st);
	return out;
}

static int reduce_st(const struct pt_val *v, enum pt_vfn fn, const int64_t *elem, size_t n)
{
	double out = -12345.5;
	int st = pt_vexpr__reduce(v, fn, elem, n, &out);

	assert_true(out == -12345.5); /* not written on failure */
	return st;
}

static void test_reduce_scalar(void **state)
{
	struct pt_val v = scalar(-42);

	/* every reduction of one int is itself; no elements needed */
	for (int fn = PT_VFN_NONE; fn <= PT_VFN_P90; fn++)
		assert_true(reduce_ok(&v, (enum pt_vfn)fn, NULL, 0) == -42.0);
	v = scalar(1LL << 60);
	assert_true(reduce_ok(&v, PT_VFN_NONE, NULL, 0) == 1152921504606846976.0);
	v = scalar(0);
	assert_true(reduce_ok(&v, PT_VFN_LEN, NULL, 0) == 0.0);
}

static void test_reduce_list_aggregates(void **state)
{
	static const int64_t e[] = { 7, -3, 12, 4 };
	struct pt_val v = list_of(e, 4);

	assert_true(reduce_ok(&v, PT_VFN_SUM, NULL, 0) == 20.0);
	assert_true(reduce_ok(&v, PT_VFN_MEAN, NULL, 0) == 5.0);
	assert_true(reduce_ok(&v, PT_VFN_MIN, NULL, 0) == -3.0);
	assert_true(reduce_ok(&v, PT_VFN_MAX, NULL, 0) == 12.0);
	/* a mean that is not whole */
	v = list_of(e, 3); /* 7, -3, 12 */
	assert_true(reduce_ok(&v, PT_VFN_MEAN, NULL, 0) == 16.0 / 3.0);
	/* the figures come from BPF's n/sum/min/max, not from elem */
	assert_true(reduce_ok(&v, PT_VFN_SUM, e, 4) == 16.0);
}

/* Percentile of elem[0..n) through reduce. */
static double pct(enum pt_vfn fn, const int64_t *elem, size_t n)
{
	struct pt_val v = list_of(elem, n);

	return reduce_ok(&v, fn, elem, n);
}

static void test_reduce_percentiles(void **state)
{
	static const int64_t one[] = { 7 };
	static const int64_t odd[] = { 5, 1, 4, 2, 3 };
	static const int64_t even[] = { 40, 10, 30, 20 };
	static const int64_t dup[] = { 3, 1, 3, 1, 3 };
	static const int64_t same[] = { 9, 9, 9, 9 };
	static const int64_t neg[] = { -5, 10, -1, 0 };
	static const int64_t ext[] = { INT64_MAX, INT64_MIN, 0 };
	int64_t ten[10], copy[5];

	assert_true(pct(PT_VFN_P50, one, 1) == 7);
	assert_true(pct(PT_VFN_P90, one, 1) == 7);
	/* nearest rank: ceil(q * n)-th smallest */
	assert_true(pct(PT_VFN_P50, odd, 5) == 3);   /* rank 3 of 1..5 */
	assert_true(pct(PT_VFN_P90, odd, 5) == 5);   /* rank 5 */
	assert_true(pct(PT_VFN_P50, even, 4) == 20); /* rank 2 of 10,20,30,40 */
	assert_true(pct(PT_VFN_P90, even, 4) == 40); /* rank 4 */
	assert_true(pct(PT_VFN_P50, dup, 5) == 3);   /* 1,1,3,3,3: rank 3 */
	assert_true(pct(PT_VFN_P90, dup, 5) == 3);
	assert_true(pct(PT_VFN_P50, dup, 4) == 1); /* 1,1,3,3: rank 2 */
	assert_true(pct(PT_VFN_P50, same, 4) == 9);
	assert_true(pct(PT_VFN_P50, neg, 4) == -1); /* -5,-1,0,10: rank 2 */
	assert_true(pct(PT_VFN_P90, neg, 4) == 10);
	assert_true(pct(PT_VFN_P50, ext, 3) == 0); /* rank 2 of MIN,0,MAX */
	assert_true(pct(PT_VFN_P90, ext, 3) == (double)INT64_MAX);
	/* q * n whole: rank q * n exactly, not one above */
	for (int i = 0; i < 10; i++)
		ten[i] = 10 - i; /* 10..1 */
	assert_true(pct(PT_VFN_P50, ten, 10) == 5);
	assert_true(pct(PT_VFN_P90, ten, 10) == 9);

	/* the caller's elements are not sorted in place */
	memcpy(copy, odd, sizeof(copy));
	assert_true(pct(PT_VFN_P90, copy, 5) == 5);
	assert_memory_equal(copy, odd, sizeof(copy));
}

/* Against ceil(q * n) computed in integers, for every n up to 1000 and
 * a few beyond. */
static void test_reduce_percentile_ranks(void **state)
{
	static int64_t e[PT_VAL_MAX_ELEMS];
	static const size_t big[] = { 1999, 2000, 2001, 4095, PT_VAL_MAX_ELEMS };

	/* descending, so a reduction that forgot to sort would be caught */
	for (size_t i = 0; i < PT_VAL_MAX_ELEMS; i++)
		e[i] = (int64_t)(PT_VAL_MAX_ELEMS - i) * 3 - 1000;
	for (size_t n = 1; n <= 1000 + sizeof(big) / sizeof(big[0]); n++) {
		size_t len = n <= 1000 ? n : big[n - 1001];
		int64_t *tail = e + (PT_VAL_MAX_ELEMS - len); /* the len smallest */
		size_t r50 = (len + 1) / 2, r90 = (9 * len + 9) / 10;
		double w50 = (double)(tail[len - r50]), w90 = (double)(tail[len - r90]);
		double g50 = pct(PT_VFN_P50, tail, len), g90 = pct(PT_VFN_P90, tail, len);

		if (g50 != w50 || g90 != w90)
			fail_msg("n %zu: p50 %.0f want %.0f, p90 %.0f want %.0f", len, g50, w50,
				 g90, w90);
	}
}

static void test_reduce_empty_and_type(void **state)
{
	static const int64_t e[] = { 1, 2, 3 };
	struct pt_val v = list_of(NULL, 0);
	struct pt_val l = list_of(e, 3);

	/* the sum of nothing is 0; nothing else of nothing is defined */
	assert_true(reduce_ok(&v, PT_VFN_SUM, NULL, 0) == 0.0);
	assert_int_equal(reduce_st(&v, PT_VFN_MEAN, NULL, 0), PT_VST_TYPE);
	assert_int_equal(reduce_st(&v, PT_VFN_MIN, NULL, 0), PT_VST_TYPE);
	assert_int_equal(reduce_st(&v, PT_VFN_MAX, NULL, 0), PT_VST_TYPE);
	assert_int_equal(reduce_st(&v, PT_VFN_P50, NULL, 0), PT_VST_TYPE);
	assert_int_equal(reduce_st(&v, PT_VFN_P90, e, 0), PT_VST_TYPE);
	assert_int_equal(reduce_st(&v, PT_VFN_NONE, NULL, 0), PT_VST_TYPE);

	/* a list where an int is wanted */
	assert_int_equal(reduce_st(&l, PT_VFN_NONE, NULL, 0), PT_VST_TYPE);
	assert_int_equal(reduce_st(&l, PT_VFN_LEN, NULL, 0), PT_VST_TYPE);

	/* a kind BPF never sends */
	l.kind = 0;
	assert_int_equal(reduce_st(&l, PT_VFN_SUM, NULL, 0), PT_VST_TYPE);
	l.kind = 3;
	assert_int_equal(reduce_st(&l, PT_VFN_NONE, NULL, 0), PT_VST_TYPE);
}

static void test_reduce_status_passthrough(void **state)
{
	for (unsigned int st = PT_VST_UNREAD; st < PT_VST_MAX; st++) {
		struct pt_val v = scalar(5);

		v.status = (uint16_t)st;
		for (int fn = PT_VFN_NONE; fn <= PT_VFN_P90; fn++)
			assert_int_equal(reduce_st(&v, (enum pt_vfn)fn, NULL, 0), (int)st);
		v.kind = PT_VKIND_LIST;
		assert_int_equal(reduce_st(&v, PT_VFN_SUM, NULL, 0), (int)st);
	}
}

static void test_reduce_elements_mismatch(void **state)
{
	static const int64_t e[] = { 4, 8, 15, 16, 23 };
	struct pt_val v = list_of(e, 5);

	assert_int_equal(reduce_st(&v, PT_VFN_P50, e, 4), PT_VST_FAULT);
	assert_int_equal(reduce_st(&v, PT_VFN_P90, e, 6), PT_VST_FAULT);
	assert_int_equal(reduce_st(&v, PT_VFN_P90, NULL, 5), PT_VST_FAULT);
	assert_int_equal(reduce_st(&v, PT_VFN_P50, NULL, 0), PT_VST_FAULT);
	/* the aggregates do not need them */
	assert_true(reduce_ok(&v, PT_VFN_MAX, NULL, 0) == 23.0);
	assert_true(reduce_ok(&v, PT_VFN_P50, e, 5) == 15.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native_accepted),
		cmocka_unit_test(test_py_accepted),
		cmocka_unit_test(test_native_width),
		cmocka_unit_test(test_native_rejected),
		cmocka_unit_test(test_py_rejected),
		cmocka_unit_test(test_py_rejected_extra_close_paren),
		cmocka_unit_test(test_short_why_buffer),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_bpf_ops),
		cmocka_unit_test(test_reduce_fn),
		cmocka_unit_test(test_reduce_scalar),
		cmocka_unit_test(test_reduce_list_aggregates),
		cmocka_unit_test(test_reduce_percentiles),
		cmocka_unit_test(test_reduce_percentile_ranks),
		cmocka_unit_test(test_reduce_empty_and_type),
		cmocka_unit_test(test_reduce_status_passthrough),
		cmocka_unit_test(test_reduce_elements_mismatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
