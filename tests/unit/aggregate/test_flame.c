// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_flame: merging, folded text (exact, sorted, escaped, round trip, every
 * reader error with its line), and the SVG: well-formed (xmllint when it is
 * installed, a structural check always), widths proportional to weight,
 * narrow frames left out, escaping, labels, stable colours.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "aggregate/flame.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ADD(fl, w, ...)                                                                            \
	do {                                                                                       \
		const char *fr_[] = { __VA_ARGS__ };                                               \
		assert_int_equal(pt_flame__add((fl), fr_, ARRAY_SIZE(fr_), (w)), 0);               \
	} while (0)

static char *folded(const struct pt_flame *fl)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(pt_flame__write_folded(fl, f), 0);
	fclose(f);
	return buf;
}

static char *svg(const struct pt_flame *fl, const struct pt_flame_svg_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(pt_flame__write_svg(fl, f, o), 0);
	fclose(f);
	return buf;
}

/* text may hold NULs, hence len. */
static int read_buf(struct pt_flame *fl, const char *text, size_t len, char *err, size_t errlen)
{
	FILE *f;
	int ret;

	/* fmemopen wants a writable buffer type even in "r" mode */
	f = fmemopen((void *)text, len, "r");
	assert_non_null(f);
	ret = pt_flame__read_folded(fl, f, err, errlen);
	fclose(f);
	return ret;
}

static int read_str(struct pt_flame *fl, const char *text, char *err, size_t errlen)
{
	return read_buf(fl, text, strlen(text), err, errlen);
}

static void read_ok(struct pt_flame *fl, const char *text)
{
	char err[256] = "x";
	int ret = read_str(fl, text, err, sizeof(err));

	if (ret)
		print_error("unexpected error: %s\n", err);
	assert_int_equal(ret, 0);
	assert_string_equal(err, "");
}

/* ---- the tree ---- */

static void test_new_free(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	char *out;

	pt_flame__free(NULL);
	assert_non_null(fl);
	assert_int_equal(pt_flame__total(fl), 0);
	assert_int_equal(pt_flame__nstacks(fl), 0);
	assert_int_equal(pt_flame__total(NULL), 0);
	assert_int_equal(pt_flame__nstacks(NULL), 0);
	out = folded(fl);
	assert_string_equal(out, "");
	free(out);
	pt_flame__free(fl);
}

static void test_add_args(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	const char *ok[] = { "a", "b" }, *null[] = { "a", NULL }, *empty[] = { "a", "" };

	assert_int_equal(pt_flame__add(NULL, ok, 2, 1), -EINVAL);
	assert_int_equal(pt_flame__add(fl, NULL, 2, 1), -EINVAL);
	assert_int_equal(pt_flame__add(fl, ok, 0, 1), -EINVAL);
	assert_int_equal(pt_flame__add(fl, null, 2, 1), -EINVAL);
	assert_int_equal(pt_flame__add(fl, empty, 2, 1), -EINVAL);
	assert_int_equal(pt_flame__add(fl, empty, 2, 0), -EINVAL);
	/* weight 0: checked, not counted */
	assert_int_equal(pt_flame__add(fl, ok, 2, 0), 0);
	assert_int_equal(pt_flame__nstacks(fl), 0);

	assert_int_equal(pt_flame__add(fl, ok, 2, UINT64_MAX - 1), 0);
	assert_int_equal(pt_flame__add(fl, ok, 1, 2), -EOVERFLOW);
	assert_int_equal(pt_flame__total(fl), UINT64_MAX - 1);
	assert_int_equal(pt_flame__nstacks(fl), 1);
	assert_int_equal(pt_flame__add(fl, ok, 1, 1), 0);
	assert_int_equal(pt_flame__total(fl), UINT64_MAX);
	assert_int_equal(pt_flame__nstacks(fl), 2);
	pt_flame__free(fl);
}

static void test_merge(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	/* Equal text at other addresses: names are compared, not pointers. */
	char a1[] = "MainThread (tid 7)", b1[] = "main", c1[] = "work";
	char a2[] = "MainThread (tid 7)", b2[] = "main", c2[] = "work";
	const char *s1[] = { a1, b1, c1 }, *s2[] = { a2, b2, c2 };
	char *out;

	assert_int_equal(pt_flame__add(fl, s1, 3, 1), 0);
	a1[0] = 'X'; /* copied: changing the caller's buffer changes nothing */
	assert_int_equal(pt_flame__add(fl, s2, 3, 2), 0);
	assert_int_equal(pt_flame__add(fl, s2, 3, 3), 0);
	assert_int_equal(pt_flame__nstacks(fl), 1);
	assert_int_equal(pt_flame__total(fl), 6);
	/* a prefix of it is another stack */
	assert_int_equal(pt_flame__add(fl, s2, 2, 4), 0);
	assert_int_equal(pt_flame__nstacks(fl), 2);
	assert_int_equal(pt_flame__total(fl), 10);
	out = folded(fl);
	assert_string_equal(out, "MainThread (tid 7);main 4\n"
				 "MainThread (tid 7);main;work 6\n");
	free(out);
	pt_flame__free(fl);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Against a model: stacks over a 3-name alphabet (so prefixes repeat and
 * consecutive stacks share, extend and cut each other's paths), added in
 * two orders, must give the folded text that sorting and merging the
 * joined lines gives.
 */
static void test_model(void **state)
{
	enum { N = 3000, MAXD = 10 };
	static const char *const alpha[] = { "x", "y", "z (w.py:1)" };
	struct pt_flame *f1 = pt_flame__new(), *f2 = pt_flame__new();
	const char *st[N][MAXD];
	char *lines[N], *want, *p, *o1, *o2;
	size_t n[N], i, j, k, len = 0;
	uint64_t seed = 42, w;

	for (i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		n[i] = 1 + (seed >> 33) % MAXD;
		p = lines[i] = calloc(1, MAXD * 16);
		for (j = 0; j < n[i]; j++) {
			st[i][j] = alpha[(seed >> (2 * j + 3)) % 3];
			p += sprintf(p, "%s%s", j ? ";" : "", st[i][j]);
		}
		assert_int_equal(pt_flame__add(f1, st[i], n[i], 1), 0);
	}
	for (i = N; i--;)
		assert_int_equal(pt_flame__add(f2, st[i], n[i], 1), 0);
	qsort(lines, N, sizeof(lines[0]), cmp_str);
	want = p = calloc(N, MAXD * 16 + 24);
	for (i = 0, k = 0; i < N; i = j, k++) {
		for (j = i, w = 0; j < N && !strcmp(lines[j], lines[i]); j++)
			w++;
		p += sprintf(p, "%s %" PRIu64 "\n", lines[i], w);
	}
	len = strlen(want);
	o1 = folded(f1);
	o2 = folded(f2);
	assert_int_equal(strlen(o1), len);
	assert_string_equal(o1, want);
	assert_string_equal(o2, want);
	assert_int_equal(pt_flame__nstacks(f1), k);
	assert_int_equal(pt_flame__total(f2), N);
	for (i = 0; i < N; i++)
		free(lines[i]);
	free(want);
	free(o1);
	free(o2);
	pt_flame__free(f1);
	pt_flame__free(f2);
}

/* ---- folded text ---- */

static void test_folded_sorted(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	char *out;

	ADD(fl, 3, "T2", "z");
	ADD(fl, 5, "T1", "main", "run", "b");
	ADD(fl, 2, "T1", "main", "run", "a");
	ADD(fl, 1, "T1", "main");
	/* ' ' sorts before ';': a tree walk would put "f;g" first */
	ADD(fl, 7, "T1", "f", "g");
	ADD(fl, 4, "T1", "f (x)");
	ADD(fl, 9, "T1", "f");
	out = folded(fl);
	assert_string_equal(out, "T1;f 9\n"
				 "T1;f (x) 4\n"
				 "T1;f;g 7\n"
				 "T1;main 1\n"
				 "T1;main;run;a 2\n"
				 "T1;main;run;b 5\n"
				 "T2;z 3\n");
	assert_int_equal(pt_flame__nstacks(fl), 7);
	assert_int_equal(pt_flame__total(fl), 31);
	free(out);
	pt_flame__free(fl);
}

static void test_folded_escape(void **state)
{
	struct pt_flame *fl = pt_flame__new(), *back = pt_flame__new();
	char *out, *out2;

	ADD(fl, 1, "semi;colon", "new\nline", "back\\slash", "tab\tcr\rdel\x7f",
	    "utf8 é 日本 \xf0\x9f\x94\xa5", "sp ace ", "lit \\x41");
	out = folded(fl);
	assert_string_equal(out, "semi\\x3bcolon;new\\x0aline;back\\x5cslash;"
				 "tab\\x09cr\\x0ddel\\x7f;utf8 é 日本 \xf0\x9f\x94\xa5;"
				 "sp ace ;lit \\x5cx41 1\n");
	/* exactly one line: the newline in the name did not split it */
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);

	/* and it decodes to the same names: adding them directly merges */
	read_ok(back, out);
	ADD(back, 1, "semi;colon", "new\nline", "back\\slash", "tab\tcr\rdel\x7f",
	    "utf8 é 日本 \xf0\x9f\x94\xa5", "sp ace ", "lit \\x41");
	assert_int_equal(pt_flame__nstacks(back), 1);
	assert_int_equal(pt_flame__total(back), 2);
	out2 = folded(back);
	assert_string_equal(out2, "semi\\x3bcolon;new\\x0aline;back\\x5cslash;"
				  "tab\\x09cr\\x0ddel\\x7f;utf8 é 日本 \xf0\x9f\x94\xa5;"
				  "sp ace ;lit \\x5cx41 2\n");
	free(out);
	free(out2);
	pt_flame__free(fl);
	pt_flame__free(back);
}

static void test_round_trip(void **state)
{
	struct pt_flame *fl = pt_flame__new(), *back = pt_flame__new();
	char *out, *out2, name[32];
	int i;

	ADD(fl, 100, "MainThread (tid 1)", "<module> (app.py:1)", "main (app.py:10)");
	ADD(fl, 250, "MainThread (tid 1)", "<module> (app.py:1)", "main (app.py:10)", "[off-cpu]");
	ADD(fl, 1, "Thread-1 (tid 2)", "a;b", "c\nd", "\xff\xfe invalid utf-8");
	ADD(fl, UINT64_MAX / 2, "Thread-1 (tid 2)", "big");
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "f%d", i * 7919 % 50);
		ADD(fl, i + 1, "T", "loop", name);
	}
	out = folded(fl);
	read_ok(back, out);
	assert_int_equal(pt_flame__total(back), pt_flame__total(fl));
	assert_int_equal(pt_flame__nstacks(back), pt_flame__nstacks(fl));
	out2 = folded(back);
	assert_string_equal(out2, out);
	free(out);
	free(out2);
	pt_flame__free(fl);
	pt_flame__free(back);
}

static void test_read_lenient(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	char *out;

	/* CRLF, blank lines, leading zeros, a duplicate line, \x in upper
	 * case, a stray backslash, weight 0, no newline at the end */
	read_ok(fl, "a;b 1\r\n\n\r\na;b 002\na\\x3Bb 4\nc\\d 5\nc\\x4 6\nz 0\ne;f 7");
	assert_int_equal(pt_flame__total(fl), 25);
	out = folded(fl);
	assert_string_equal(out, "a;b 3\n"
				 "a\\x3bb 4\n"
				 "c\\x5cd 5\n"
				 "c\\x5cx4 6\n"
				 "e;f 7\n");
	free(out);
	/* an empty file is no error */
	read_ok(fl, "\n");
	assert_int_equal(pt_flame__total(fl), 25);
	pt_flame__free(fl);
}

static void read_error(const char *text, size_t len, int want_ret, const char *want_err)
{
	struct pt_flame *fl = pt_flame__new();
	char err[256];

	memset(err, 'x', sizeof(err));
	assert_int_equal(read_buf(fl, text, len, err, sizeof(err)), want_ret);
	assert_string_equal(err, want_err);
	pt_flame__free(fl);
}

#define READ_ERROR(text, ret, want) read_error(text, sizeof(text) - 1, ret, want)

static void test_read_errors(void **state)
{
	READ_ERROR("a;b 1\nc;d\n", -EINVAL,
		   "line 2: missing weight (want \"frame;frame;... weight\")");
	READ_ERROR("a;b 1\n\nc;d \n", -EINVAL, "line 3: missing weight after the last space");
	READ_ERROR("a x1\n", -EINVAL, "line 1: weight is not a decimal number");
	READ_ERROR("a -1\n", -EINVAL, "line 1: weight is not a decimal number");
	READ_ERROR("a +1\n", -EINVAL, "line 1: weight is not a decimal number");
	READ_ERROR("a 1.5\n", -EINVAL, "line 1: weight is not a decimal number");
	READ_ERROR("a 0x10\n", -EINVAL, "line 1: weight is not a decimal number");
	READ_ERROR("a 18446744073709551616\n", -EINVAL, "line 1: weight overflows u64");
	READ_ERROR("a 1\nb 99999999999999999999999\n", -EINVAL, "line 2: weight overflows u64");
	READ_ERROR("a;;b 1\n", -EINVAL, "line 1: frame 2 is empty");
	READ_ERROR(";a 1\n", -EINVAL, "line 1: frame 1 is empty");
	READ_ERROR("a;b; 1\n", -EINVAL, "line 1: frame 3 is empty");
	READ_ERROR(" 1\n", -EINVAL, "line 1: frame 1 is empty");
	READ_ERROR("a 1\na;b\\x00c 1\n", -EINVAL, "line 2: frame 2: \\x00 is not allowed");
	READ_ERROR("a\0b 1\n", -EINVAL, "line 1: NUL byte in line");
	READ_ERROR("a 18446744073709551615\nb 1\n", -EOVERFLOW,
		   "line 2: total weight overflows u64");
}

static void test_read_error_state(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	char err[8];

	/* the lines before the bad one stay; the sum was guarded */
	assert_int_equal(read_str(fl, "a 18446744073709551615\nb 1\n", NULL, 0), -EOVERFLOW);
	assert_int_equal(pt_flame__total(fl), UINT64_MAX);
	assert_int_equal(pt_flame__nstacks(fl), 1);
	/* a short err buffer gets a cut, terminated message */
	pt_flame__free(fl);
	fl = pt_flame__new();
	memset(err, 'x', sizeof(err));
	assert_int_equal(read_str(fl, "a 1\nb\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 2:");
	pt_flame__free(fl);
}

/* ---- SVG ---- */

/* Strict UTF-8; and XML 1.0 allows no C0 control but \t \n \r. */
static void check_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t c;
	int n, i;

	while (*p) {
		if (*p < 0x80) {
			assert_true(*p >= 0x20 || *p == '\n' || *p == '\t');
			p++;
			continue;
		}
		n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc2 ? 2 : 0;
		assert_true(n && *p <= 0xf4);
		c = *p & (0x7f >> n);
		for (i = 1; i < n; i++) {
			assert_int_equal(p[i] & 0xc0, 0x80);
			c = c << 6 | (p[i] & 0x3f);
		}
		assert_true(c >= (n == 2 ? 0x80u : n == 3 ? 0x800u : 0x10000u));
		assert_true(c <= 0x10ffff && (c < 0xd800 || c > 0xdfff));
		assert_true(c != 0xfffe && c != 0xffff);
		p += n;
	}
}

static bool is_entity(const char *p)
{
	static const char *const ents[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ents); i++)
		if (!strncmp(p, ents[i], strlen(ents[i])))
			return true;
	if (p[1] != '#')
		return false;
	p += 2;
	if (*p == 'x')
		p++;
	if (!strchr("0123456789abcdefABCDEF", *p) || !*p)
		return false;
	while (*p && strchr("0123456789abcdefABCDEF", *p))
		p++;
	return *p == ';';
}

/*
 * Enough of XML for what we write: one root element, every element closed
 * by its own name, attributes quoted, no raw '<' or '&' in text or values.
 */
static void check_xml(const char *s)
{
	char stack[64][32];
	int depth = 0, roots = 0;
	const char *p = s, *e, *q;
	size_t n;

	check_utf8(s);
	assert_true(!strncmp(p, "<?xml ", 6));
	p = strstr(p, "?>") + 2;
	while (*p) {
		if (*p == '&') {
			assert_true(is_entity(p));
			p++;
			continue;
		}
		if (*p == '>')
			fail_msg("raw '>' in text at %.20s", p);
		if (*p != '<') {
			assert_true(depth > 0 || *p == '\n');
			p++;
			continue;
		}
		if (!strncmp(p, "<![CDATA[", 9)) {
			assert_true(depth > 0);
			e = strstr(p, "]]>");
			assert_non_null(e);
			p = e + 3;
			continue;
		}
		if (p[1] == '/') {
			assert_true(depth > 0);
			depth--;
			n = strlen(stack[depth]);
			if (strncmp(p + 2, stack[depth], n) || p[2 + n] != '>')
				fail_msg("</%s> expected at %.30s", stack[depth], p);
			p += 3 + n;
			continue;
		}
		/* a start tag: name, then attributes name="value" */
		for (e = p + 1; *e && !strchr(" />", *e); e++)
			;
		n = (size_t)(e - p - 1);
		assert_true(n > 0 && n < sizeof(stack[0]));
		if (!depth)
			roots++;
		assert_true(depth < (int)ARRAY_SIZE(stack));
		memcpy(stack[depth], p + 1, n);
		stack[depth][n] = '\0';
		while (*e == ' ') {
			e++;
			for (q = e; *q && *q != '='; q++)
				assert_true(*q > ' ' && *q != '<' && *q != '>' && *q != '"');
			assert_true(q > e && q[1] == '"');
			for (q += 2; *q && *q != '"'; q++) {
				assert_true(*q != '<');
				if (*q == '&')
					assert_true(is_entity(q));
			}
			assert_int_equal(*q, '"');
			e = q + 1;
		}
		if (e[0] == '/' && e[1] == '>') {
			p = e + 2;
		} else {
			assert_int_equal(*e, '>');
			depth++;
			p = e + 1;
		}
	}
	assert_int_equal(depth, 0);
	assert_int_equal(roots, 1);
}

/* xmllint, when the machine has it, for a second opinion. */
static void check_xmllint(const char *s)
{
	char path[] = "/tmp/test_flame_XXXXXX", cmd[128];
	int fd;

	if (system("command -v xmllint >/dev/null 2>&1"))
		return;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	assert_int_equal(system(cmd), 0);
	unlink(path);
}

struct svg_rect {
	char name[512]; /* title text before its last " (" */
	char label[128];
	double x, w;
	long y;
	unsigned int rgb[3];
};

static const char *attr(const char *tag, const char *name)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), " %s=\"", name);
	p = strstr(tag, key);
	assert_non_null(p);
	return p + strlen(key);
}

/* Every frame of the SVG, in file order; returns how many. */
static size_t svg_rects(const char *s, struct svg_rect *r, size_t max)
{
	const char *p = s, *t, *e;
	size_t n = 0, len;

	while ((p = strstr(p, "<g><title>"))) {
		assert_true(n < max);
		t = p + 10;
		e = strstr(t, "</title>");
		assert_non_null(e);
		len = (size_t)(e - t);
		assert_true(len < sizeof(r[n].name));
		memcpy(r[n].name, t, len);
		r[n].name[len] = '\0';
		*strrchr(r[n].name, '(') = '\0';
		r[n].name[strlen(r[n].name) - 1] = '\0';
		t = strstr(e, "<rect ");
		r[n].x = strtod(attr(t, "x"), NULL);
		r[n].w = strtod(attr(t, "width"), NULL);
		r[n].y = strtol(attr(t, "y"), NULL, 10);
		assert_int_equal(sscanf(attr(t, "fill"), "rgb(%u,%u,%u)", &r[n].rgb[0],
					&r[n].rgb[1], &r[n].rgb[2]),
				 3);
		t = strchr(strstr(t, "<text "), '>') + 1;
		e = strstr(t, "</text>");
		len = (size_t)(e - t);
		assert_true(len < sizeof(r[n].label));
		memcpy(r[n].label, t, len);
		r[n].label[len] = '\0';
		n++;
		p = e;
	}
	return n;
}

static const struct svg_rect *find(const struct svg_rect *r, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(r[i].name, name))
			return &r[i];
	return NULL;
}

static void test_svg_wellformed(void **state)
{
	struct pt_flame_svg_opts o = {
		.title = "py <app> & \"co\"",
		.subtitle = "1000 Hz, 12.3 s wall, on-CPU + off-CPU",
		.unit = "µs",
	};
	struct pt_flame *fl = pt_flame__new();
	char *out;

	ADD(fl, 500, "MainThread (tid 1)", "<module> (app.py:1)", "main (app.py:10)");
	ADD(fl, 300, "MainThread (tid 1)", "<module> (app.py:1)", "[off-cpu]");
	ADD(fl, 200, "Thread-1 (tid 2)", "a\x01\x02\x1f\x7f<&>\"'\n\tz",
	    "\xff\xc0\x80\xed\xa0\x80 bad", "\xef\xbf\xbe nonchar", "]]> cdata-end");
	out = svg(fl, &o);
	check_xml(out);
	check_xmllint(out);
	assert_non_null(strstr(out, ">py &lt;app&gt; &amp; &quot;co&quot;</text>"));
	assert_non_null(strstr(out, ">1000 Hz, 12.3 s wall, on-CPU + off-CPU; "
				    "total 1000 µs in 3 stacks</text>"));
	assert_non_null(strstr(out, "<title>main (app.py:10) (500 µs, 50.00%)</title>"));
	assert_non_null(strstr(out, "<title>all (1000 µs, 100.00%)</title>"));
	/* the script is there, and small */
	assert_non_null(strstr(out, "<script type=\"text/ecmascript\"><![CDATA["));
	assert_true(strlen(strstr(out, "<script")) < 3000);
	free(out);

	/* defaults, and an empty flame */
	pt_flame__free(fl);
	fl = pt_flame__new();
	out = svg(fl, NULL);
	check_xml(out);
	check_xmllint(out);
	assert_non_null(strstr(out, ">no samples</text>"));
	assert_non_null(strstr(out, ">Flame Graph</text>"));
	assert_non_null(strstr(out, ">total 0 samples in 0 stacks</text>"));
	assert_null(strstr(out, "<script"));
	free(out);
	pt_flame__free(fl);
}

static void test_svg_escape(void **state)
{
	struct pt_flame_svg_opts o = { .unit = "<u>", .width = 2000 };
	struct pt_flame *fl = pt_flame__new();
	struct svg_rect r[8];
	char *out, *p;
	size_t n;

	ADD(fl, 1, "<&>\"'", "ctl\x01\x1b[0m\x7f\xc2\x85", "tab\tnl\ncr\r", "bad \xff\xfe end");
	out = svg(fl, &o);
	check_xml(out);
	check_xmllint(out);
	assert_non_null(
		strstr(out, "<title>&lt;&amp;&gt;&quot;&#39; (1 &lt;u&gt;, 100.00%)</title>"));
	assert_non_null(strstr(out, ">&lt;&amp;&gt;&quot;&#39;</text>"));
	/* control bytes (C0, DEL, C1) dropped; tab, LF, CR become spaces */
	assert_non_null(strstr(out, "<title>ctl[0m (1 &lt;u&gt;"));
	assert_non_null(strstr(out, "<title>tab nl cr  (1 &lt;u&gt;"));
	/* each bad byte is one U+FFFD */
	assert_non_null(strstr(out, "<title>bad \xef\xbf\xbd\xef\xbf\xbd end (1 "));
	/* no raw markup characters outside tags and the script */
	p = strstr(out, "<script");
	*p = '\0';
	for (p = out; (p = strchr(p, '"')); p++)
		assert_true(p[-1] == '=' || strchr(" />?", p[1]));
	n = svg_rects(out, r, ARRAY_SIZE(r));
	assert_int_equal(n, 5);
	free(out);
	pt_flame__free(fl);
}

static void test_svg_widths(void **state)
{
	struct pt_flame_svg_opts o = { .width = 1200 };
	struct pt_flame *fl = pt_flame__new();
	const struct svg_rect *all, *a, *b, *c, *d, *x;
	struct svg_rect r[16];
	double plot = 1200 - 20;
	size_t n;
	char *out;

	ADD(fl, 100, "T", "A");	     /* A self */
	ADD(fl, 300, "T", "A", "C"); /* sorted by name: B left of C */
	ADD(fl, 200, "T", "A", "B");
	ADD(fl, 250, "T", "D", "X", "Y"); /* deepest */
	ADD(fl, 150, "T", "D");
	out = svg(fl, &o);
	check_xml(out);
	n = svg_rects(out, r, ARRAY_SIZE(r));
	assert_int_equal(n, 8);
	all = find(r, n, "all");
	a = find(r, n, "A");
	b = find(r, n, "B");
	c = find(r, n, "C");
	d = find(r, n, "D");
	x = find(r, n, "X");
	assert_non_null(all);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_non_null(d);
	assert_non_null(x);
	assert_float_equal(all->w, plot, 0.01);
	assert_float_equal(all->x, 10, 0.01);
	assert_float_equal(a->w, plot * 600 / 1000, 0.01);
	assert_float_equal(a->x, 10, 0.01);
	assert_float_equal(b->w, plot * 200 / 1000, 0.01);
	assert_float_equal(b->x, 10, 0.01);
	assert_float_equal(c->w, plot * 300 / 1000, 0.01);
	assert_float_equal(c->x, 10 + plot * 200 / 1000, 0.01);
	assert_float_equal(d->w, plot * 400 / 1000, 0.01);
	assert_float_equal(d->x, 10 + plot * 600 / 1000, 0.01);
	assert_float_equal(x->w, plot * 250 / 1000, 0.01);
	assert_float_equal(x->x, d->x, 0.01);
	/* root at the bottom, one 16 px row per depth, height from depth 4 */
	assert_int_equal(all->y - find(r, n, "T")->y, 16);
	assert_int_equal(find(r, n, "T")->y - a->y, 16);
	assert_int_equal(a->y - b->y, 16);
	assert_int_equal(b->y, x->y);
	assert_int_equal(x->y - find(r, n, "Y")->y, 16);
	assert_int_equal(find(r, n, "Y")->y, 60);
	assert_non_null(strstr(out, "height=\"150\" viewBox=\"0 0 1200 150\""));
	/* labels: whole when they fit */
	assert_string_equal(a->label, "A");
	free(out);
	pt_flame__free(fl);
}

static void test_svg_narrow(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	struct svg_rect r[16];
	size_t n;
	char *out;

	/* plot 1180 px: 0.1% is 1.18 px, so 1 in 20000 (0.06 px) goes, a
	 * deep stack under it adds no height, and 40 in 20000 (2.36 px) stays */
	ADD(fl, 19959, "T", "wide");
	ADD(fl, 1, "T", "narrow", "n2", "n3", "n4", "n5", "n6");
	ADD(fl, 40, "T", "small");
	out = svg(fl, NULL);
	check_xml(out);
	n = svg_rects(out, r, ARRAY_SIZE(r));
	assert_int_equal(n, 4);
	assert_null(find(r, n, "narrow"));
	assert_null(find(r, n, "n6"));
	assert_non_null(find(r, n, "small"));
	/* the narrow frame keeps its place: "small" sorts after it */
	assert_float_equal(find(r, n, "small")->x, 10 + 1180.0 * 1 / 20000, 0.005);
	assert_float_equal(find(r, n, "wide")->x, 10 + 1180.0 * 41 / 20000, 0.005);
	assert_non_null(strstr(out, "height=\"118\""));
	free(out);

	/* at 200 px (plot 180) the 1 px floor is what counts, not 0.18 px:
	 * 1 in 128 is 1.4 px, 1 in 256 is 0.7 px */
	pt_flame__free(fl);
	fl = pt_flame__new();
	ADD(fl, 127, "T", "wide");
	ADD(fl, 1, "T", "one");
	out = svg(fl, &(struct pt_flame_svg_opts){ .width = 200 });
	n = svg_rects(out, r, ARRAY_SIZE(r));
	assert_non_null(find(r, n, "one"));
	free(out);
	pt_flame__free(fl);
	fl = pt_flame__new();
	ADD(fl, 255, "T", "wide");
	ADD(fl, 1, "T", "one");
	out = svg(fl, &(struct pt_flame_svg_opts){ .width = 200 });
	n = svg_rects(out, r, ARRAY_SIZE(r));
	assert_null(find(r, n, "one"));
	free(out);
	pt_flame__free(fl);
}

static void test_svg_labels(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	char name[2 * 100 + 1] = "", *out;
	struct svg_rect r[8];
	size_t n, i;

	/* 100 two-byte characters in 1180 * 100 / 1021 = 115.6 px:
	 * (115.6 - 6) / 7.2 = 15.2, so 13 characters and ".." */
	for (i = 0; i < 100; i++)
		strcat(name, "é");
	ADD(fl, 900, "T", "short");
	ADD(fl, 100, "T", name);
	/* 24.3 px: room for 2 characters, too few for "x.." */
	ADD(fl, 21, "U", "abcdef");
	out = svg(fl, NULL);
	check_xml(out);
	n = svg_rects(out, r, ARRAY_SIZE(r));
	assert_string_equal(find(r, n, "short")->label, "short");
	assert_string_equal(find(r, n, name)->label, "ééééééééééééé..");
	assert_string_equal(find(r, n, "abcdef")->label, "");
	free(out);
	pt_flame__free(fl);
}

static void test_svg_colours(void **state)
{
	struct pt_flame *f1 = pt_flame__new(), *f2 = pt_flame__new();
	const struct svg_rect *p, *q;
	struct svg_rect r1[16], r2[16];
	char *o1, *o2, *o3;
	size_t n1, n2;

	ADD(f1, 10, "MainThread (tid 1)", "work", "[off-cpu]");
	ADD(f1, 10, "MainThread (tid 1)", "[native]", "memcpy");
	ADD(f1, 10, "MainThread (tid 1)", "[truncated]");
	/* another tree, other weights and places */
	ADD(f2, 1, "Other", "x", "y", "work");
	ADD(f2, 5, "Other", "memcpy");
	ADD(f2, 3, "Other", "z", "[off-cpu]");
	o1 = svg(f1, NULL);
	o2 = svg(f2, NULL);
	n1 = svg_rects(o1, r1, ARRAY_SIZE(r1));
	n2 = svg_rects(o2, r2, ARRAY_SIZE(r2));
	p = find(r1, n1, "work");
	q = find(r2, n2, "work");
	assert_memory_equal(p->rgb, q->rgb, sizeof(p->rgb));
	assert_memory_equal(find(r1, n1, "memcpy")->rgb, find(r2, n2, "memcpy")->rgb,
			    sizeof(p->rgb));
	/* different names, different colours (for these, at least) */
	assert_memory_not_equal(p->rgb, find(r1, n1, "memcpy")->rgb, sizeof(p->rgb));
	/* warm code frames */
	assert_true(p->rgb[0] >= 200 && p->rgb[0] > p->rgb[2]);
	/* blue off-CPU, grey pseudo-frames and root */
	p = find(r1, n1, "[off-cpu]");
	assert_true(p->rgb[2] > p->rgb[0] + 60 && p->rgb[2] > p->rgb[1]);
	assert_memory_equal(p->rgb, find(r2, n2, "[off-cpu]")->rgb, sizeof(p->rgb));
	p = find(r1, n1, "[native]");
	assert_true(p->rgb[0] == p->rgb[1] && p->rgb[1] == p->rgb[2]);
	p = find(r1, n1, "[truncated]");
	assert_true(p->rgb[0] == p->rgb[1] && p->rgb[1] == p->rgb[2]);
	p = find(r1, n1, "all");
	assert_true(p->rgb[0] == p->rgb[1] && p->rgb[1] == p->rgb[2]);
	/* the same flame writes the same bytes */
	o3 = svg(f1, NULL);
	assert_string_equal(o1, o3);
	free(o1);
	free(o2);
	free(o3);
	pt_flame__free(f1);
	pt_flame__free(f2);
}

static void test_svg_opts(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	FILE *f = fopen("/dev/null", "w");
	char *out;

	assert_non_null(f);
	ADD(fl, 1, "a");
	assert_int_equal(pt_flame__write_svg(fl, f, &(struct pt_flame_svg_opts){ .width = 199 }),
			 -EINVAL);
	assert_int_equal(pt_flame__write_svg(fl, f, &(struct pt_flame_svg_opts){ .width = 100001 }),
			 -EINVAL);
	assert_int_equal(pt_flame__write_svg(NULL, f, NULL), -EINVAL);
	fclose(f);
	out = svg(fl, &(struct pt_flame_svg_opts){ .width = 640, .title = "t" });
	assert_non_null(strstr(out, "width=\"640\""));
	assert_non_null(strstr(out, "var W = 620.00"));
	check_xml(out);
	free(out);
	pt_flame__free(fl);
}

/* Wide nodes and many stacks: quadratic child scans would show here. */
/* The on-CPU view of a wall tree: every stack but those ending in the
 * dropped leaf, the same weights, the divisor kept; a frame that has
 * both self time and an "[off-cpu]" child keeps its self time. */
static void test_copy(void **state)
{
	struct pt_flame *fl = pt_flame__new(), *cp, *all;
	char *out;

	pt_flame__set_div(fl, 1000);
	ADD(fl, 3000, "main (tid 1)", "run", "spin");
	ADD(fl, 5000, "main (tid 1)", "run", "sleep", "[off-cpu]");
	ADD(fl, 2000, "main (tid 1)", "run");
	ADD(fl, 7000, "main (tid 1)", "run", "[off-cpu]");
	ADD(fl, 1400, "w (tid 2)", "[off-cpu]");
	ADD(fl, 600, "w (tid 2)", "[off-cpu]", "x"); /* not a leaf there: kept */
	cp = pt_flame__copy(fl, "[off-cpu]");
	assert_non_null(cp);
	assert_int_equal(pt_flame__total(cp), 3000 + 2000 + 600);
	assert_int_equal(pt_flame__nstacks(cp), 3);
	out = folded(cp);
	assert_string_equal(out, "main (tid 1);run 2\n"
				 "main (tid 1);run;spin 3\n"
				 "w (tid 2);[off-cpu];x 1\n");
	free(out);
	/* NULL: every stack, as written by the original */
	all = pt_flame__copy(fl, NULL);
	assert_non_null(all);
	assert_int_equal(pt_flame__total(all), pt_flame__total(fl));
	assert_int_equal(pt_flame__nstacks(all), pt_flame__nstacks(fl));
	{
		char *a = folded(all), *b = folded(fl);

		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	pt_flame__free(all);
	pt_flame__free(cp);
	/* an empty tree, a tree that is all dropped */
	pt_flame__free(fl);
	fl = pt_flame__new();
	cp = pt_flame__copy(fl, "[off-cpu]");
	assert_non_null(cp);
	assert_int_equal(pt_flame__total(cp), 0);
	pt_flame__free(cp);
	ADD(fl, 9, "t", "[off-cpu]");
	cp = pt_flame__copy(fl, "[off-cpu]");
	assert_int_equal(pt_flame__nstacks(cp), 0);
	out = svg(cp, NULL);
	assert_non_null(strstr(out, "no samples"));
	free(out);
	pt_flame__free(cp);
	pt_flame__free(fl);
	assert_null(pt_flame__copy(NULL, NULL));
}

static void test_many_stacks(void **state)
{
	struct pt_flame *fl = pt_flame__new(), *back = pt_flame__new();
	char names[32][16], leaf[16];
	const char *fr[34];
	char *out, *out2;
	size_t i, d;
	FILE *f;

	for (d = 0; d < 32; d++)
		snprintf(names[d], sizeof(names[d]), "frame_%zu", d);
	fr[0] = "MainThread (tid 1)";
	fr[1] = "dispatch";
	for (i = 0; i < 100000; i++) {
		/* 5000 callees of one node, each with its own short tail */
		snprintf(leaf, sizeof(leaf), "h%zu", i % 5000);
		fr[2] = leaf;
		for (d = 0; d < 8 + i % 24; d++)
			fr[3 + d] = names[d];
		assert_int_equal(pt_flame__add(fl, fr, 3 + d, 1 + i % 3), 0);
	}
	/* (i % 5000, i % 24) pairs: 5000 * 24 / gcd(5000, 24) */
	assert_int_equal(pt_flame__nstacks(fl), 15000);
	out = folded(fl);
	read_ok(back, out);
	out2 = folded(back);
	assert_string_equal(out, out2);
	assert_int_equal(pt_flame__total(back), pt_flame__total(fl));
	f = fopen("/dev/null", "w");
	assert_int_equal(pt_flame__write_svg(fl, f, NULL), 0);
	fclose(f);
	free(out);
	free(out2);
	pt_flame__free(fl);
	pt_flame__free(back);
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_free),
		cmocka_unit_test(test_add_args),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_folded_sorted),
		cmocka_unit_test(test_folded_escape),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_read_lenient),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_read_error_state),
		cmocka_unit_test(test_svg_wellformed),
		cmocka_unit_test(test_svg_escape),
		cmocka_unit_test(test_svg_widths),
		cmocka_unit_test(test_svg_narrow),
		cmocka_unit_test(test_svg_labels),
		cmocka_unit_test(test_svg_colours),
		cmocka_unit_test(test_svg_opts),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_many_stacks),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, NULL, NULL);
}
