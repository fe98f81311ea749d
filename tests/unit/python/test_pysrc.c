// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_pysrc: inline fixtures whose expected names were taken from
 * python3.11's co_qualname (each fixture also run with CRLF, lone CR, tab
 * indentation and no final newline), error cases, mutated sources under
 * the sanitizers, and the ground truth: every code object of the Debian
 * python3.11 standard library against co_qualname, plus, where pyenv has
 * them, 3.8-3.10's standard libraries.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "python/pysrc.h"

struct want {
	unsigned int line;
	const char *name, *qual;
};

/* Fixture texts and tables: tables printed by python3.11 compiling each
 * text and walking co_consts. */
/* clang-format off */
static const char classes_py[] =
	"import os\n"
	"\n"
	"\n"
	"class A:\n"
	"    \"\"\"Docstring at column 0 that looks like code:\n"
	"def fake():\n"
	"class Fake:\n"
	"    def fake_method(self): pass\n"
	"\"\"\"\n"
	"    x = 1\n"
	"\n"
	"    def m(self):\n"
	"        def inner():\n"
	"            return 1\n"
	"        return inner\n"
	"\n"
	"    @staticmethod\n"
	"    @deco(\n"
	"        \"a\",\n"
	"        b=2,\n"
	"    )\n"
	"    def s():\n"
	"        pass\n"
	"\n"
	"    async def am(self):\n"
	"        async def ainner():\n"
	"            pass\n"
	"\n"
	"    def __private(self):\n"
	"        pass\n"
	"\n"
	"    class B:\n"
	"        class C:\n"
	"            def deep(self):\n"
	"                pass\n"
	"\n"
	"    # a comment at column 0 does not close A\n"
	"# neither does this one\n"
	"\n"
	"    def after_comments(self):\n"
	"        pass\n"
	"\n"
	"\n"
	"@deco\n"
	"\n"
	"\n"
	"# comments between decorators and the def\n"
	"def decorated(): pass\n"
	"\n"
	"\n"
	"def top(\n"
	"    a,\n"
	"    b=(1,\n"
	"       2),\n"
	") -> dict:\n"
	"    def nested():\n"
	"        class Local:\n"
	"            def lm(self):\n"
	"                pass\n"
	"        return Local\n"
	"    return nested\n"
	"\n"
	"\n"
	"def one(): return 1\n"
	"class Empty: pass\n"
	"def after_one(): pass\n";
/* clang-format on */

static const struct want classes_want[] = {
	{ 1, "<module>", "<module>" },
	{ 4, "A", "A" },
	{ 12, "m", "A.m" },
	{ 13, "inner", "A.m.<locals>.inner" },
	{ 17, "s", "A.s" },
	{ 25, "am", "A.am" },
	{ 26, "ainner", "A.am.<locals>.ainner" },
	{ 29, "__private", "A.__private" },
	{ 32, "B", "A.B" },
	{ 33, "C", "A.B.C" },
	{ 34, "deep", "A.B.C.deep" },
	{ 40, "after_comments", "A.after_comments" },
	{ 44, "decorated", "decorated" },
	{ 51, "top", "top" },
	{ 56, "nested", "top.<locals>.nested" },
	{ 57, "Local", "top.<locals>.nested.<locals>.Local" },
	{ 58, "lm", "top.<locals>.nested.<locals>.Local.lm" },
	{ 64, "one", "one" },
	{ 65, "Empty", "Empty" },
	{ 66, "after_one", "after_one" },
};

/* clang-format off */
static const char strings_py[] =
	"s1 = 'it\\'s ( not a bracket'\n"
	"s2 = r\"raw \\\" still ( open\"\n"
	"s3 = Rb'''multi\n"
	"def not_a_def():\n"
	"    pass\n"
	"'''\n"
	"s4 = f\"{s1!r} {{\" # comment with ' quote and ( bracket\n"
	"s5 = \"a\" \"b\" \\\n"
	"    \"c\" + u'd' + BR\"e\" + rF'{s1}'\n"
	"s6 = \"\"\"one \"\" two \\\"\"\" three\"\"\"\n"
	"s7 = ''''quoted' start'''\n"
	"def after_strings():\n"
	"    return \"\"\"\n"
	"class NotAClass:\n"
	"\"\"\"\n"
	"x = [\n"
	"    1, # ) bracket in a comment\n"
	"    2,\n"
	"]\n"
	"y = {'a': (1, [2,\n"
	"  3])}\n"
	"class K:\n"
	"    def m(self):\n"
	"        return '#', \"'''\"\n"
	"    def n(self): pass\n"
	"def last(): pass\n";
/* clang-format on */

static const struct want strings_want[] = {
	{ 1, "<module>", "<module>" },
	{ 12, "after_strings", "after_strings" },
	{ 22, "K", "K" },
	{ 23, "m", "K.m" },
	{ 25, "n", "K.n" },
	{ 26, "last", "last" },
};

/* clang-format off */
static const char exprs_py[] =
	"class C:\n"
	"    def m(self, xs):\n"
	"        f = lambda x: x\n"
	"        g = [y for y in xs]\n"
	"        h = {y for y in xs}\n"
	"        d = {k: v for k, v in xs}\n"
	"        e = list(z for z in xs)\n"
	"        n = [[a for a in b] for b in xs]\n"
	"        return sorted(xs, key=lambda v: (\n"
	"            v))\n"
	"    k = [q for q in range(3)]\n"
	"    lam = lambda self: [w for w in\n"
	"                        self]\n"
	"    it = [r for r in [lambda: 0 for s in k]]\n"
	"\n"
	"\n"
	"def outer(a=lambda: 0):\n"
	"    return [lambda: i for i in a]\n"
	"\n"
	"\n"
	"def multi(\n"
	"    x=[i for i in\n"
	"       range(3)]):\n"
	"    return {k: lambda: k\n"
	"            for k in x}\n"
	"\n"
	"\n"
	"def one_liner(xs): return [x for x in xs]\n"
	"class OneLine: attr = [x for x in range(2)]\n"
	"squares = {\n"
	"    x: x * x\n"
	"    for x in range(10)\n"
	"}\n"
	"gen = sum(\n"
	"    x for x in range(3))\n"
	"keyed = {lambda: 0 for _ in range(2)}\n";
/* clang-format on */

/* clang-format off */
static const struct want exprs_want[] = {
	{ 1, "<module>", "<module>" },
	{ 1, "C", "C" },
	{ 2, "m", "C.m" },
	{ 3, "<lambda>", "C.m.<locals>.<lambda>" },
	{ 4, "<listcomp>", "C.m.<locals>.<listcomp>" },
	{ 5, "<setcomp>", "C.m.<locals>.<setcomp>" },
	{ 6, "<dictcomp>", "C.m.<locals>.<dictcomp>" },
	{ 7, "<genexpr>", "C.m.<locals>.<genexpr>" },
	{ 8, "<listcomp>", "C.m.<locals>.<listcomp>" },
	/* { 8, "<listcomp>", "C.m.<locals>.<listcomp>.<listcomp>" }: same
	 * (line, co_name) as the outer one, which is what comes back. */
	{ 9, "<lambda>", "C.m.<locals>.<lambda>" },
	{ 11, "<listcomp>", "C.<listcomp>" },
	{ 12, "<lambda>", "C.<lambda>" },
	{ 12, "<listcomp>", "C.<lambda>.<locals>.<listcomp>" },
	{ 14, "<lambda>", "C.<listcomp>.<lambda>" },
	{ 14, "<listcomp>", "C.<listcomp>" }, /* both of them: the inner one is
						* in the outer's first iterable */
	{ 17, "<lambda>", "<lambda>" },
	{ 17, "outer", "outer" },
	{ 18, "<lambda>", "outer.<locals>.<listcomp>.<lambda>" },
	{ 18, "<listcomp>", "outer.<locals>.<listcomp>" },
	{ 21, "multi", "multi" },
	{ 22, "<listcomp>", "<listcomp>" },
	{ 24, "<dictcomp>", "multi.<locals>.<dictcomp>" },
	{ 24, "<lambda>", "multi.<locals>.<dictcomp>.<lambda>" },
	{ 28, "<listcomp>", "one_liner.<locals>.<listcomp>" },
	{ 28, "one_liner", "one_liner" },
	{ 29, "<listcomp>", "OneLine.<listcomp>" },
	{ 29, "OneLine", "OneLine" },
	{ 30, "<dictcomp>", "<dictcomp>" },
	{ 34, "<genexpr>", "<genexpr>" },
	{ 36, "<lambda>", "<setcomp>.<lambda>" },
	{ 36, "<setcomp>", "<setcomp>" },
};
/* clang-format on */

/* clang-format off */
static const char misc_py[] =
	"x = 1 + \\\n"
	"    2\n"
	"\n"
	"\n"
	"def f(a, \\\n"
	"      b):\n"
	"    if a and \\\n"
	"b:\n"
	"        def g():\n"
	"            pass\n"
	"    return g\n"
	"\n"
	"\n"
	"def glob():\n"
	"    global gf, gc\n"
	"    def gf(): pass\n"
	"    def lf(): pass\n"
	"    if True:\n"
	"        class gc:\n"
	"            def m(self): pass\n"
	"\n"
	"\n"
	"class Cg:\n"
	"    global cm\n"
	"    def cm(self): pass\n"
	"    def __mangled(self): pass\n"
	"\n"
	"\n"
	"def h():\n"
	"    x = 1; y = 2\n"
	"    def hi(): pass\n"
	"    return hi\n";
/* clang-format on */

static const struct want misc_want[] = {
	{ 1, "<module>", "<module>" },
	{ 5, "f", "f" },
	{ 9, "g", "f.<locals>.g" },
	{ 14, "glob", "glob" },
	{ 16, "gf", "gf" },
	{ 17, "lf", "glob.<locals>.lf" },
	{ 19, "gc", "gc" },
	{ 20, "m", "gc.m" },
	{ 23, "Cg", "Cg" },
	{ 25, "cm", "cm" },
	{ 26, "__mangled", "Cg.__mangled" },
	{ 29, "h", "h" },
	{ 31, "hi", "h.<locals>.hi" },
};

/* clang-format off */
static const char fstr_py[] =
	"def f(xs, w):\n"
	"    a = f'{[x for x in xs]}'\n"
	"    b = f\"{', '.join(str(x) for x in xs)!r:>{w}}\"\n"
	"    c = f'''\n"
	"{ {k: v for k, v in xs} }'''\n"
	"    d = (f'head'\n"
	"         f'{[y for y in xs]}')\n"
	"    e = f'{w!r:{[z for z in w][0]}}'\n"
	"    g = rf'\\{[q for q in xs]}' + f'\\N{BULLET} {[r for r in xs]}'\n"
	"    h = f'{f\"{[s for s in xs]}\"}'\n"
	"    i = f'{(lambda: [t for t in xs])()}'\n"
	"    return [f'{[u for u in x]}' for x in xs]\n";
/* clang-format on */

static const struct want fstr_want[] = {
	{ 1, "<module>", "<module>" },
	{ 1, "f", "f" },
	{ 2, "<listcomp>", "f.<locals>.<listcomp>" },
	{ 3, "<genexpr>", "f.<locals>.<genexpr>" },
	{ 5, "<dictcomp>", "f.<locals>.<dictcomp>" },
	{ 7, "<listcomp>", "f.<locals>.<listcomp>" },
	{ 8, "<listcomp>", "f.<locals>.<listcomp>" },
	{ 9, "<listcomp>", "f.<locals>.<listcomp>" },
	{ 10, "<listcomp>", "f.<locals>.<listcomp>" },
	{ 11, "<lambda>", "f.<locals>.<lambda>" },
	{ 11, "<listcomp>", "f.<locals>.<lambda>.<locals>.<listcomp>" },
	{ 12, "<listcomp>", "f.<locals>.<listcomp>" },
	/* { 12, "<listcomp>", "f.<locals>.<listcomp>.<listcomp>" }: the
	 * same (line, co_name) as the outer one. */
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static char got[1024];

/* The name, or "error N" so that a failure prints both sides. */
static const char *qn(const char *src, size_t len, unsigned int line, const char *name)
{
	int err = pt_pysrc__qualname(src, len, line, name, got, sizeof(got));

	if (err)
		snprintf(got, sizeof(got), "error %d", err);
	return got;
}

static const char *qs(const char *src, unsigned int line, const char *name)
{
	return qn(src, strlen(src), line, name);
}

enum variant { V_LF, V_CRLF, V_CR, V_TABS, V_NO_FINAL_NL, V_COUNT };
static const char *const variant_names[] = { "LF", "CRLF", "CR", "tabs", "no final newline" };

/*
 * The fixture rewritten, in a buffer of exactly its length (no NUL), so a
 * read past len trips ASan. Tabs: each leading group of 4 spaces becomes a
 * tab, on every line (python3.11 gives the same tables for all variants).
 */
static char *variant(const char *src, enum variant v, size_t *len)
{
	size_t n = strlen(src), i, o = 0;
	char *tmp = malloc(2 * n + 1), *out;
	bool bol = true;

	assert_non_null(tmp);
	for (i = 0; i < n; i++) {
		if (src[i] == '\n') {
			if (v == V_CRLF)
				tmp[o++] = '\r';
			tmp[o++] = v == V_CR ? '\r' : '\n';
			bol = true;
			continue;
		}
		if (v == V_TABS && bol && !strncmp(src + i, "    ", 4)) {
			tmp[o++] = '\t';
			i += 3;
			continue;
		}
		bol = false;
		tmp[o++] = src[i];
	}
	if (v == V_NO_FINAL_NL)
		while (o && tmp[o - 1] == '\n')
			o--;
	out = malloc(o ? o : 1);
	assert_non_null(out);
	memcpy(out, tmp, o);
	free(tmp);
	*len = o;
	return out;
}

static void check_table(const char *what, const char *src, const struct want *w, size_t n)
{
	enum variant v;
	size_t i, len;
	char *buf;

	for (v = 0; v < V_COUNT; v++) {
		buf = variant(src, v, &len);
		for (i = 0; i < n; i++) {
			const char *q = qn(buf, len, w[i].line, w[i].name);

			if (strcmp(q, w[i].qual))
				fail_msg("%s (%s):%u %s: got \"%s\", want \"%s\"", what,
					 variant_names[v], w[i].line, w[i].name, q, w[i].qual);
		}
		free(buf);
	}
}

/* Methods, nested classes and functions, async def, decorators spanning
 * lines, a docstring at column 0 holding "def"/"class" lines, comments at
 * column 0 inside a class, bracketed signatures, one-line defs. */
static void test_classes(void **state)
{
	check_table("classes.py", classes_py, classes_want, ARRAY_SIZE(classes_want));
	/* co_firstlineno is the first decorator's line, but the def line, or
	 * a later decorator's, is accepted too (a caller holding the line of
	 * the def from elsewhere). */
	assert_string_equal(qs(classes_py, 22, "s"), "A.s");
	assert_string_equal(qs(classes_py, 48, "decorated"), "decorated");
	assert_string_equal(qs(classes_py, 18, "s"), "A.s");
}

/* Quotes, prefixes, escapes, triple quotes, '#' and brackets inside
 * strings, quotes and brackets inside comments, implicit concatenation
 * across a backslash. */
static void test_strings(void **state)
{
	check_table("strings.py", strings_py, strings_want, ARRAY_SIZE(strings_want));
	assert_string_equal(qs(strings_py, 4, "not_a_def"), "error -2");
	assert_string_equal(qs(strings_py, 14, "NotAClass"), "error -2");
}

/* Lambdas and comprehensions: in methods and class bodies, in defaults
 * (the parent's), in a comprehension's first iterable (the parent's too),
 * spanning lines, one-line bodies, a lambda as a set element. */
static void test_exprs(void **state)
{
	check_table("exprs.py", exprs_py, exprs_want, ARRAY_SIZE(exprs_want));
	/* Present on the line, but not that kind. */
	assert_string_equal(qs(exprs_py, 5, "<listcomp>"), "error -2");
	assert_string_equal(qs(exprs_py, 5, "<dictcomp>"), "error -2");
	assert_string_equal(qs(exprs_py, 6, "<setcomp>"), "error -2");
	assert_string_equal(qs(exprs_py, 9, "<genexpr>"), "error -2");
	assert_string_equal(qs(exprs_py, 2, "<lambda>"), "error -2");
	/* A lambda's body continued on the next line is still the line of
	 * `lambda`. */
	assert_string_equal(qs(exprs_py, 10, "<lambda>"), "error -2");
	assert_string_equal(qs(exprs_py, 13, "<listcomp>"), "error -2");
}

/* Comprehensions and lambdas in f-string fields: conversions, format specs
 * with fields of their own, triple quotes, raw and \\N{...}, f-strings in
 * fields, implicit concatenation. */
static void test_fstrings(void **state)
{
	check_table("fstr.py", fstr_py, fstr_want, ARRAY_SIZE(fstr_want));
	/* 3.8 puts fields of the later strings of a concatenation on the
	 * line of the first string. */
	assert_string_equal(qs(fstr_py, 6, "<listcomp>"), "f.<locals>.<listcomp>");
	assert_string_equal(qs(fstr_py, 4, "<dictcomp>"), "error -2");
	/* Doubled braces are text. */
	assert_string_equal(qs("x = f'{{[y for y in z]}}'\n", 1, "<listcomp>"), "error -2");
}

/* Backslash continuations (one landing at column 0 inside a def), `global`
 * declarations that put a def/class at module level, private names, ';'. */
static void test_misc(void **state)
{
	check_table("misc.py", misc_py, misc_want, ARRAY_SIZE(misc_want));
}

static void test_small(void **state)
{
	/* co_qualname does not mangle: C.__m, not C._C__m. */
	assert_string_equal(qs("class C:\n    def __m(self): pass\n", 2, "__m"), "C.__m");
	/* Non-ASCII identifiers are bytes to compare. */
	assert_string_equal(qs("class Ä:\n    def ñ(self): pass\n", 2, "ñ"), "Ä.ñ");
	/* BOM. */
	assert_string_equal(qs("\xef\xbb\xbf"
			       "class C:\n    def m(self): pass\n",
			       2, "m"),
			    "C.m");
	/* Form feed resets the column, as in CPython. */
	assert_string_equal(qs("class C:\n    pass\n\f"
			       "def f(): pass\n",
			       3, "f"),
			    "f");
	/* A dict in a lambda default, a lambda in a return annotation. */
	assert_string_equal(qs("def f(x=lambda a={1: 2}: a) -> lambda: 0: return [y for y in x]\n",
			       1, "<listcomp>"),
			    "f.<locals>.<listcomp>");
	assert_string_equal(qs("def f(x=lambda a={1: 2}: a) -> lambda: 0: return [y for y in x]\n",
			       1, "<lambda>"),
			    "<lambda>");
	/* A lambda's default: the parent's. */
	assert_string_equal(
		qs("def f():\n    return lambda x=[i for i in y]: x\n", 2, "<listcomp>"),
		"f.<locals>.<listcomp>");
	assert_string_equal(qs("def f():\n    return lambda: [i for i in y]\n", 2, "<listcomp>"),
			    "f.<locals>.<lambda>.<locals>.<listcomp>");
	/* async comprehension clauses. */
	assert_string_equal(
		qs("async def f():\n    return [lambda: 0 async for i in y]\n", 2, "<lambda>"),
		"f.<locals>.<listcomp>.<lambda>");
	/* A genexpr in a decorator, and its def. */
	assert_string_equal(
		qs("class C:\n    @d(x for x in y)\n    def m(self): pass\n", 2, "<genexpr>"),
		"C.<genexpr>");
	assert_string_equal(qs("class C:\n    @d(x for x in y)\n    def m(self): pass\n", 2, "m"),
			    "C.m");
	/* Dedent into a class after a nested def. */
	assert_string_equal(qs("class C:\n    def m(self):\n        def i(): pass\n    x = 1\n"
			       "    def n(self): pass\n",
			       5, "n"),
			    "C.n");
	/* Numbers glued to keywords. */
	assert_string_equal(
		qs("def f():\n    return [1if x else 0x1f for x in y]\n", 2, "<listcomp>"),
		"f.<locals>.<listcomp>");
	/* match/case blocks are not scopes. */
	assert_string_equal(
		qs("def f(v):\n    match v:\n        case 1:\n            def g(): pass\n", 4, "g"),
		"f.<locals>.g");
	/* A class body code object under a decorator. */
	assert_string_equal(qs("def f():\n    @dataclass(\n        frozen=True)\n    class P:\n"
			       "        x: int\n",
			       2, "P"),
			    "f.<locals>.P");
}

static void test_module_and_not_found(void **state)
{
	assert_string_equal(qs(classes_py, 1, "<module>"), "<module>");
	assert_string_equal(qs("", 0, "<module>"), "<module>");
	/* Lines that do not start that def: inside a docstring, another
	 * name, blank, inside a decorator's arguments, past the end, 0. */
	assert_string_equal(qs(classes_py, 6, "fake"), "error -2");
	assert_string_equal(qs(classes_py, 7, "Fake"), "error -2");
	assert_string_equal(qs(classes_py, 8, "fake_method"), "error -2");
	assert_string_equal(qs(classes_py, 12, "inner"), "error -2");
	assert_string_equal(qs(classes_py, 13, "m"), "error -2");
	assert_string_equal(qs(classes_py, 11, "m"), "error -2");
	assert_string_equal(qs(classes_py, 19, "s"), "error -2");
	assert_string_equal(qs(classes_py, 1000, "m"), "error -2");
	assert_string_equal(qs(classes_py, 0, "m"), "error -2");
	assert_string_equal(qs(classes_py, 12, "<lambda>"), "error -2");
	assert_string_equal(qs(classes_py, 12, "<string>"), "error -2");
	/* Empty input. */
	assert_string_equal(qs("", 1, "f"), "error -2");
	assert_string_equal(qn(NULL, 0, 1, "f"), "error -2");
	assert_string_equal(qn(NULL, 0, 1, "<module>"), "<module>");
	/* An unterminated triple-quoted string swallows the rest; a one-quote
	 * string ends at its line, as CPython's error recovery would. */
	assert_string_equal(qs("def a(): pass\ns = '''\ndef b(): pass\n", 1, "a"), "a");
	assert_string_equal(qs("def a(): pass\ns = '''\ndef b(): pass\n", 3, "b"), "error -2");
	assert_string_equal(qs("s = 'abc\ndef f(): pass\n", 2, "f"), "f");
	assert_string_equal(qs(")]\ndef f(): pass\n", 2, "f"), "f");
	assert_string_equal(qs("x = \\", 1, "<lambda>"), "error -2");
	assert_string_equal(qs("\\\n\\\n", 2, "f"), "error -2");
}

static void test_bad_args(void **state)
{
	char out[8];

	assert_int_equal(pt_pysrc__qualname("def f(): pass\n", 14, 1, "f", NULL, 8), -EINVAL);
	assert_int_equal(pt_pysrc__qualname("def f(): pass\n", 14, 1, "f", out, 0), -EINVAL);
	assert_int_equal(pt_pysrc__qualname("def f(): pass\n", 14, 1, NULL, out, 8), -EINVAL);
	assert_int_equal(pt_pysrc__qualname("def f(): pass\n", 14, 1, "", out, 8), -EINVAL);
	assert_int_equal(pt_pysrc__qualname(NULL, 14, 1, "f", out, 8), -EINVAL);
}

static void test_name_too_long(void **state)
{
	const char *want = "A.m.<locals>.inner";
	size_t n = strlen(want);
	char out[64];

	memset(out, 'x', sizeof(out));
	assert_int_equal(pt_pysrc__qualname(classes_py, strlen(classes_py), 13, "inner", out, n),
			 -ENAMETOOLONG);
	assert_string_equal(out, "");
	assert_int_equal(
		pt_pysrc__qualname(classes_py, strlen(classes_py), 13, "inner", out, n + 1), 0);
	assert_string_equal(out, want);
	assert_int_equal(pt_pysrc__qualname(classes_py, strlen(classes_py), 1, "<module>", out, 8),
			 -ENAMETOOLONG);
	assert_int_equal(pt_pysrc__qualname(classes_py, strlen(classes_py), 1, "<module>", out, 9),
			 0);
}

/* CPython's limits: 100 indentation levels, 200 open brackets. */
static void test_nesting_limits(void **state)
{
	size_t cap = 1 << 20, o = 0;
	char *s = malloc(cap), want[1024] = "", name[16];
	int i;

	assert_non_null(s);
	for (i = 0; i < 120; i++)
		o += snprintf(s + o, cap - o, "%*sdef f%d():\n", i, "", i);
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "f%d.<locals>.", i);
		strcat(want, name);
	}
	strcat(want, "f50");
	assert_string_equal(qn(s, o, 51, "f50"), want);
	assert_string_equal(qn(s, o, 119, "f118"), "error -7");

	o = 0;
	o += snprintf(s + o, cap - o, "x = ");
	for (i = 0; i < 200; i++)
		s[o++] = '(';
	for (i = 0; i < 200; i++)
		s[o++] = ')';
	o += snprintf(s + o, cap - o, "\ndef f(): pass\n");
	assert_string_equal(qn(s, o, 2, "f"), "f");
	o = 0;
	o += snprintf(s + o, cap - o, "x = ");
	for (i = 0; i < 201; i++)
		s[o++] = '(';
	o += snprintf(s + o, cap - o, "\ndef f(): pass\n");
	assert_string_equal(qn(s, o, 2, "f"), "error -7");

	/* Lambdas nest without brackets. */
	o = 0;
	o += snprintf(s + o, cap - o, "x = ");
	for (i = 0; i < 1000; i++)
		o += snprintf(s + o, cap - o, "lambda: ");
	o += snprintf(s + o, cap - o, "0\n");
	assert_string_equal(qn(s, o, 1, "<lambda>"), "<lambda>");
	free(s);
}

/* splitmix64: the same mutations on every run. */
static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Mutated fixtures (bytes overwritten with the characters the tokenizer
 * cares about, truncations), every line asked for every kind of name: no
 * crash, no read past len (exact-size buffers under ASan), only documented
 * errors, out always a terminated string.
 */
static void test_mutations(void **state)
{
	static const char *const srcs[] = { classes_py, strings_py, exprs_py, misc_py, fstr_py };
	static const char special[] = "'\"\\\n\r\t #([{}])@:;,=\x80\f";
	static const char *const names[] = { "m",	  "A",		"<lambda>",  "<listcomp>",
					     "<setcomp>", "<dictcomp>", "<genexpr>", "inner" };
	char out[32];
	size_t si, len, i, k;
	unsigned int iter, line;
	char *buf;
	int err;

	rng_state = 42;
	for (iter = 0; iter < 400; iter++) {
		const char *src = srcs[iter % ARRAY_SIZE(srcs)];

		len = strlen(src);
		if (iter % 5 == 4)
			len = rng() % (len + 1);
		buf = malloc(len ? len : 1);
		assert_non_null(buf);
		memcpy(buf, src, len);
		for (k = rng() % 8; len && k; k--)
			buf[rng() % len] = special[rng() % (sizeof(special) - 1)];
		for (line = 0; line < 72; line++) {
			for (si = 0; si < ARRAY_SIZE(names); si++) {
				memset(out, 'x', sizeof(out));
				err = pt_pysrc__qualname(buf, len, line, names[si], out,
							 1 + rng() % sizeof(out));
				if (err && err != -ENOENT && err != -ENAMETOOLONG && err != -E2BIG)
					fail_msg("unexpected error %d", err);
				for (i = 0; i < sizeof(out) && out[i]; i++)
					;
				assert_true(i < sizeof(out));
			}
		}
		free(buf);
	}
}

/* ---- ground truth from real interpreters ---- */

/*
 * Run by python3.11 (the only one with co_qualname) on stdin:
 *   argv[1]  a Lib directory: its top-level modules and the json, asyncio
 *            and email packages;
 *   argv[2]  optional, an older interpreter: files where it puts code
 *            objects at other (co_firstlineno, co_name) pairs than 3.11
 *            does are left out and counted, so that what remains shows
 *            3.11's qualnames are those of that version's code objects.
 * Prints "path\tco_firstlineno\tco_name\tco_qualname" per code object and
 * "#" lines to report.
 */
#define GT_SCRIPT                                                                                  \
	"import collections, os, subprocess, sys, types, warnings\n"                               \
	"warnings.simplefilter('ignore')\n"                                                        \
	"sys.stdout.reconfigure(encoding='utf-8', errors='surrogateescape')\n"                     \
	"root = sys.argv[1]\n"                                                                     \
	"paths = sorted(os.path.join(root, n) for n in os.listdir(root) if n.endswith('.py'))\n"   \
	"for pkg in ('json', 'asyncio', 'email'):\n"                                               \
	"    for d, dirs, files in os.walk(os.path.join(root, pkg)):\n"                            \
	"        dirs[:] = sorted(x for x in dirs if x != '__pycache__')\n"                        \
	"        paths += sorted(os.path.join(d, n) for n in files if n.endswith('.py'))\n"        \
	"WALK = '''\n"                                                                             \
	"import sys, types, warnings\n"                                                            \
	"warnings.simplefilter('ignore')\n"                                                        \
	"for path in sys.stdin.read().split(chr(10)):\n"                                           \
	"    try:\n"                                                                               \
	"        todo = [compile(open(path, 'rb').read(), path, 'exec', dont_inherit=True)]\n"     \
	"    except Exception:\n"                                                                  \
	"        continue\n"                                                                       \
	"    while todo:\n"                                                                        \
	"        co = todo.pop()\n"                                                                \
	"        print(path, co.co_firstlineno, co.co_name, sep=chr(9))\n"                         \
	"        todo += [c for c in co.co_consts if isinstance(c, types.CodeType)]\n"             \
	"'''\n"                                                                                    \
	"old = None\n"                                                                             \
	"if len(sys.argv) > 2:\n"                                                                  \
	"    old = collections.defaultdict(collections.Counter)\n"                                 \
	"    r = subprocess.run([sys.argv[2], '-I', '-c', WALK], input='\\n'.join(paths),\n"       \
	"                       capture_output=True, text=True, errors='surrogateescape')\n"       \
	"    for ln in r.stdout.splitlines():\n"                                                   \
	"        p, l, n = ln.split('\\t')\n"                                                      \
	"        if n != '<module>':\n"                                                            \
	"            old[p][(int(l), n)] += 1\n"                                                   \
	"nfiles = skipped = differ = 0\n"                                                          \
	"for path in paths:\n"                                                                     \
	"    try:\n"                                                                               \
	"        todo = [compile(open(path, 'rb').read(), path, 'exec', dont_inherit=True)]\n"     \
	"    except Exception:\n"                                                                  \
	"        skipped += 1\n"                                                                   \
	"        continue\n"                                                                       \
	"    rows = []\n"                                                                          \
	"    while todo:\n"                                                                        \
	"        co = todo.pop()\n"                                                                \
	"        rows.append((co.co_firstlineno, co.co_name, co.co_qualname))\n"                   \
	"        todo += [c for c in co.co_consts if isinstance(c, types.CodeType)]\n"             \
	"    here = collections.Counter((l, n) for l, n, q in rows if n != '<module>')\n"          \
	"    if old is not None and old[path] != here:\n"                                          \
	"        differ += 1\n"                                                                    \
	"        print('# differs from', sys.argv[2], path)\n"                                     \
	"        continue\n"                                                                       \
	"    nfiles += 1\n"                                                                        \
	"    for l, n, q in rows:\n"                                                               \
	"        print(path, l, n, q, sep='\\t')\n"                                                \
	"print('# %d files, %d failed to compile, %d with other code objects' %\n"                 \
	"      (nfiles, skipped, differ))\n"

struct gt {
	char path[PATH_MAX];
	char *src;
	size_t len;
	unsigned long names, names_bad, exprs, exprs_bad;
	char shown[20][640];
	unsigned int nshown;
};

static void gt_load(struct gt *g, const char *path)
{
	FILE *f;
	long n;

	if (!strcmp(g->path, path))
		return;
	free(g->src);
	g->src = NULL;
	g->len = 0;
	snprintf(g->path, sizeof(g->path), "%s", path);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	g->src = malloc(n ? n : 1);
	assert_non_null(g->src);
	assert_int_equal(fread(g->src, 1, n, f), (size_t)n);
	g->len = n;
	fclose(f);
}

/* One "path\tline\tname\tqualname" row. */
static void gt_row(struct gt *g, char *row)
{
	char *f[4], *p = row;
	unsigned int line;
	const char *q;
	bool is_expr;
	int i;

	for (i = 0; i < 4; i++) {
		f[i] = p;
		p = strchr(p, i < 3 ? '\t' : '\n');
		if (!p && i == 3)
			break;
		if (!p)
			fail_msg("bad row from python: %s", row);
		*p++ = '\0';
	}
	line = strtoul(f[1], NULL, 10);
	gt_load(g, f[0]);
	q = qn(g->src, g->len, line, f[2]);
	is_expr = f[2][0] == '<' && strcmp(f[2], "<module>");
	if (is_expr)
		g->exprs++;
	else
		g->names++;
	if (!strcmp(q, f[3]))
		return;
	if (is_expr)
		g->exprs_bad++;
	else
		g->names_bad++;
	if (getenv("PT_PYSRC_VERBOSE"))
		printf("  %s:%u: %s: want %s, got %s\n", f[0], line, f[2], f[3], q);
	if (g->nshown < ARRAY_SIZE(g->shown))
		snprintf(g->shown[g->nshown++], sizeof(g->shown[0]),
			 "%.200s:%u: %.100s: want %.100s, got %.100s", f[0], line, f[2], f[3], q);
}

/*
 * Every code object of the modules under lib, as compiled by python3.11,
 * against pt_pysrc__qualname. All def/class names must agree; lambdas and
 * comprehensions at least 99% (same-line ambiguity, see pysrc.c).
 */
static void ground_truth(const char *what, const char *lib, const char *old)
{
	static const char py[] = "/usr/bin/python3.11";
	char cmd[sizeof(GT_SCRIPT) + 2 * PATH_MAX + 128];
	struct gt *g = calloc(1, sizeof(*g));
	char *row = NULL;
	size_t cap = 0;
	unsigned int i;
	FILE *f;
	int rc;

	assert_non_null(g);
	snprintf(cmd, sizeof(cmd), "%s -I - '%s' %s%s%s <<'PT_EOF'\n%sPT_EOF\n", py, lib,
		 old ? "'" : "", old ? old : "", old ? "'" : "", GT_SCRIPT);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (getline(&row, &cap, f) > 0) {
		if (row[0] == '#') {
			if (strncmp(row, "# differs", 9) || getenv("PT_PYSRC_VERBOSE"))
				printf("pysrc: %s: %s", what, row + 2);
			continue;
		}
		gt_row(g, row);
	}
	free(row);
	rc = pclose(f);
	if (rc)
		fail_msg("%s: python3.11 failed (status %d)", what, rc);

	printf("pysrc: %s: %lu code objects: %lu def/class/module, %lu mismatches; "
	       "%lu lambda/comprehension, %lu mismatches (%.3f%% agree)\n",
	       what, g->names + g->exprs, g->names, g->names_bad, g->exprs, g->exprs_bad,
	       g->exprs ? 100.0 * (g->exprs - g->exprs_bad) / g->exprs : 100.0);
	if (g->names_bad || g->exprs_bad * 100 > g->exprs)
		for (i = 0; i < g->nshown; i++)
			printf("  %s\n", g->shown[i]);
	/* A broken script must not pass by comparing nothing. */
	assert_true(g->names > 1000);
	assert_int_equal(g->names_bad, 0);
	assert_true(g->exprs_bad * 100 <= g->exprs);
	free(g->src);
	free(g);
}

static void test_ground_truth_debian(void **state)
{
	if (access("/usr/bin/python3.11", X_OK) || access("/usr/lib/python3.11/os.py", R_OK)) {
		printf("pysrc: skipped: no /usr/bin/python3.11 with its /usr/lib/python3.11\n");
		skip();
	}
	ground_truth("python3.11", "/usr/lib/python3.11", NULL);
}

/*
 * 3.8-3.10 under pyenv, when there: their own standard libraries, with
 * 3.11's co_qualname as the truth for the files where both interpreters
 * make the same code objects at the same lines (all of them, so far).
 */
static void test_ground_truth_pyenv(void **state)
{
	const char *root = getenv("PYENV_ROOT"), *home = getenv("HOME");
	char pat[PATH_MAX], lib[PATH_MAX], what[32];
	unsigned int minor, ran = 0;
	glob_t gl;

	if (access("/usr/bin/python3.11", X_OK))
		skip();
	for (minor = 8; minor <= 10; minor++) {
		if (root)
			snprintf(pat, sizeof(pat), "%s/versions/3.%u.*/bin/python3.%u", root, minor,
				 minor);
		else
			snprintf(pat, sizeof(pat), "%s/.pyenv/versions/3.%u.*/bin/python3.%u",
				 home ? home : "/root", minor, minor);
		if (glob(pat, 0, NULL, &gl))
			continue;
		/* .../versions/3.X.Y/bin/python3.X -> .../versions/3.X.Y/lib/python3.X */
		snprintf(lib, sizeof(lib), "%s", gl.gl_pathv[0]);
		*strrchr(lib, '/') = '\0';
		*strrchr(lib, '/') = '\0';
		snprintf(lib + strlen(lib), sizeof(lib) - strlen(lib), "/lib/python3.%u", minor);
		snprintf(what, sizeof(what), "pyenv 3.%u", minor);
		if (!access(lib, R_OK)) {
			ground_truth(what, lib, gl.gl_pathv[0]);
			ran++;
		}
		globfree(&gl);
	}
	if (!ran) {
		printf("pysrc: skipped: no pyenv python3.8-3.10\n");
		skip();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_exprs),
		cmocka_unit_test(test_fstrings),
		cmocka_unit_test(test_misc),
		cmocka_unit_test(test_small),
		cmocka_unit_test(test_module_and_not_found),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_name_too_long),
		cmocka_unit_test(test_nesting_limits),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_ground_truth_debian),
		cmocka_unit_test(test_ground_truth_pyenv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
