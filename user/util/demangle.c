// SPDX-License-Identifier: BSD-2-Clause
/*
 * C++ names through libstdc++'s demangler. __cxa_demangle has C linkage
 * (the Itanium C++ ABI, section 3.4), so C calls it directly: no C++
 * translation unit, only -lstdc++ at link time.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *pt_demangle(const char *name)
{
	int status = 0;
	char *d;

	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status) {
		free(d);
		return NULL;
	}
	return d;
}

/* clang-format off */
static const char *const thunks[] = {
	"virtual thunk to ", "non-virtual thunk to ", "covariant return thunk to ",
	"transaction clone for ",
};
/* clang-format on */

/* Length of the operator token after "operator" at s ("()", "[]", "<<=",
 * ...); 0 for conversion operators and "new"/"delete", which end at '('. */
static size_t op_len(const char *s)
{
	size_t n = 0;

	if ((s[0] == '(' && s[1] == ')') || (s[0] == '[' && s[1] == ']'))
		return 2;
	while (s[n] && strchr("<>=!+-*/%^&|~,", s[n]))
		n++;
	return n;
}

static bool at_operator(const char *d, size_t i)
{
	return !strncmp(d + i, "operator", 8) && (i == 0 || d[i - 1] == ':' || d[i - 1] == ' ') &&
	       !isalnum((unsigned char)d[i + 8]) && d[i + 8] != '_';
}

/* The ')' closing the '(' at d[i], or the terminating NUL. */
static size_t close_paren(const char *d, size_t i)
{
	int depth = 0;

	for (; d[i]; i++) {
		if (d[i] == '(')
			depth++;
		else if (d[i] == ')' && !--depth)
			break;
	}
	return i;
}

/* The qualified name inside demangled name d: [*start, *end). */
static void base_span(const char *d, size_t *start_out, size_t *end_out)
{
	size_t i, n = strlen(d), end = n, start = 0, op = (size_t)-1;
	int angle = 0, paren = 0, brace = 0;

	*start_out = 0;
	*end_out = n;
	for (i = 0; i < sizeof(thunks) / sizeof(thunks[0]); i++)
		if (!strncmp(d, thunks[i], strlen(thunks[i])))
			return;
	for (i = 0; i < n; i++) {
		char c = d[i];

		if (at_operator(d, i)) {
			if (!angle && !paren && !brace)
				op = i;
			i += 8;
			while (d[i] == ' ')
				i++;
			i += op_len(d + i);
			i--;
			continue;
		}
		if (c == '{')
			brace++;
		else if (c == '}')
			brace -= brace > 0;
		else if (brace)
			continue;
		else if (c == '<')
			angle++;
		else if (c == '>')
			angle -= angle > 0;
		else if (c == '(' && !angle && !paren &&
			 strncmp(d + i, "(anonymous namespace)", 21)) {
			size_t j = close_paren(d, i);

			/* "f()::{lambda(int)#1}": a local scope, not the end */
			if (d[j] == ')' && !strncmp(d + j + 1, "::", 2)) {
				i = j;
				continue;
			}
			end = i;
			break;
		} else if (c == '(')
			paren++;
		else if (c == ')')
			paren -= paren > 0;
		else if (c == ' ' && !angle && !paren && op == (size_t)-1)
			/* a return type (template functions): the name follows
			 * the last space outside brackets, before any operator */
			start = i + 1;
	}
	*start_out = start;
	*end_out = end;
}

char *pt_demangle__base(const char *d, char *out, size_t len)
{
	size_t start, end, n;

	if (!len)
		return out;
	base_span(d, &start, &end);
	n = end - start;
	if (n >= len)
		n = len - 1;
	memcpy(out, d + start, n);
	out[n] = '\0';
	return out;
}

/* Appends to a fixed buffer, always NUL-terminated; n counts what would
 * have been written. */
struct sbuf {
	char *p;
	size_t len, n;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, b->n++)
		if (b->n + 1 < b->len)
			b->p[b->n] = s[i];
	if (b->len)
		b->p[b->n < b->len ? b->n : b->len - 1] = '\0';
}

/* The length of "operator<tok>" at d[i] (see base_span), 0 when none. */
static size_t operator_len(const char *d, size_t i)
{
	size_t j = i + 8;

	if (!at_operator(d, i))
		return 0;
	while (d[j] == ' ')
		j++;
	return j + op_len(d + j) - i;
}

/* The '>' closing the '<' at base[i], or n. */
static size_t close_angle(const char *base, size_t n, size_t i)
{
	int angle = 0;

	for (; i < n; i++) {
		size_t k = operator_len(base, i);

		if (k)
			i += k - 1;
		else if (base[i] == '<')
			angle++;
		else if (base[i] == '>' && !--angle)
			return i;
	}
	return n;
}

/* base (n bytes) with every template argument list that opens at angle
 * depth >= depth written "<...>" (not one as short as that: "<int>"),
 * then params. */
static void collapse(struct sbuf *b, const char *base, size_t n, int depth, const char *params)
{
	int angle = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = operator_len(base, i), j;

		if (k) { /* "operator<" and "operator->" open and close nothing */
			k = k < n - i ? k : n - i;
			sb_put(b, base + i, k);
			i += k - 1;
		} else if (base[i] == '<' && angle + 1 == depth) {
			j = close_angle(base, n, i);
			if (j < n && j - i < 5)
				sb_put(b, base + i, j - i + 1);
			else
				sb_put(b, "<...>", 5);
			i = j;
		} else {
			angle += base[i] == '<';
			angle -= base[i] == '>' && angle > 0;
			sb_put(b, base + i, 1);
		}
	}
	sb_put(b, params, strlen(params));
}

/* The deepest template argument list of base (n bytes). */
static int max_depth(const char *base, size_t n)
{
	int angle = 0, max = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = operator_len(base, i);

		if (k) {
			i += k - 1;
			continue;
		}
		if (base[i] == '<' && ++angle > max)
			max = angle;
		else if (base[i] == '>' && angle > 0)
			angle--;
	}
	return max;
}

char *pt_demangle__short(const char *name, size_t width, char *out, size_t len)
{
	size_t n = strlen(name), start, end;
	struct sbuf b = { out, len, 0 };
	const char *params = "";

	if (!len)
		return out;
	if (width < 4)
		width = 4;
	if (n <= width) {
		sb_put(&b, name, n);
		return out;
	}
	if (strpbrk(name, "<(")) { /* a C++ name: the qualified name, then less */
		base_span(name, &start, &end);
		if (name[end] == '(')
			params = name[end + 1] == ')' ? "()" : "(...)";
		for (int depth = max_depth(name + start, end - start) + 1; depth >= 1; depth--) {
			b.n = 0;
			collapse(&b, name + start, end - start, depth, params);
			if (b.n <= width && b.n < len)
				return out;
		}
		name = out; /* cut the shortest form */
		n = b.n < len ? b.n : len - 1;
	}
	/* cut to width - 3 and "...", not inside a UTF-8 character */
	n = width - 3 < n ? width - 3 : n;
	while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
		n--;
	if (name == out) {
		b.n = n;
		sb_put(&b, "...", 3);
	} else {
		b.n = 0;
		sb_put(&b, name, n);
		sb_put(&b, "...", 3);
	}
	return out;
}

const char *pt_demangle__params(const char *glob)
{
	const char *p = glob;

	while ((p = strchr(p, '('))) {
		if (p - glob >= 8 && !strncmp(p - 8, "operator", 8) && p[1] == ')')
			p += 2;
		else if (!strncmp(p, "(anonymous", 10) || !strncmp(p, "(anonymous?namespace)", 21))
			p++;
		else
			return p;
	}
	return NULL;
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

void pt_demangle__literal(const char *glob, char *out, size_t len)
{
	const char *params = pt_demangle__params(glob);
	size_t best = 0, i = 0, end = params ? (size_t)(params - glob) : strlen(glob);
	int angle = 0;

	if (len)
		out[0] = '\0';
	for (; i < end;) {
		size_t j = i;

		if (glob[i] == '<')
			angle++;
		else if (glob[i] == '>')
			angle -= angle > 0;
		else if (!strncmp(glob + i, "(anonymous", 10)) {
			/* spelled _GLOBAL__N_1 in the symbol */
			while (i < end && glob[i] != ')')
				i++;
			continue;
		} else if (glob[i] == '[') {
			/* a bracket expression: its letters are alternatives */
			while (glob[i] && glob[i] != ']')
				i++;
			if (!glob[i])
				break;
		}
		if (!ident_char(glob[i])) {
			i++;
			continue;
		}
		while (ident_char(glob[j]))
			j++;
		/* builtin types, std and operators are encoded, not spelled */
		if (!angle && j - i > best && j - i < len &&
		    !(j - i == 3 && !strncmp(glob + i, "std", 3)) &&
		    !(j - i == 8 && !strncmp(glob + i, "operator", 8)) &&
		    (i == 0 || glob[i - 1] != '\\')) {
			best = j - i;
			memcpy(out, glob + i, best);
			out[best] = '\0';
		}
		i = j;
	}
}

bool pt_demangle__is_cxx_glob(const char *glob)
{
	return strstr(glob, "::") || pt_demangle__params(glob);
}

bool pt_demangle__match(const char *glob, const char *d)
{
	char buf[4096];
	size_t i, n;

	if (!pt_demangle__params(glob))
		return fnmatch(glob, pt_demangle__base(d, buf, sizeof(buf)), 0) == 0;
	for (i = n = 0; d[i] && n + 1 < sizeof(buf); i++) {
		if (d[i] == ' ' && i && d[i - 1] == ',')
			continue;
		buf[n++] = d[i];
	}
	buf[n] = '\0';
	return fnmatch(glob, buf, 0) == 0;
}
