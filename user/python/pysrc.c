// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_pysrc: co_qualname for CPython 3.8-3.10 code objects, from the source.
 *
 * CPython names a scope at compile time from the stack of scopes around it
 * (compiler_set_qualname() in Python/compile.c, unchanged from 3.3 to 3.11):
 *   - inside a def or a lambda:         parent + ".<locals>." + name
 *   - inside a class or comprehension:  parent + "." + name
 *   - a def/class whose name its parent scope declared `global`, and
 *     anything at module level: just the name.
 * 3.11 stores the result in co_qualname; 3.8-3.10 only hand it to function
 * objects made at run time, which a profiler reading frames never sees.
 *
 * Those scopes are source structure, so no Python parser is needed:
 *   - def and class blocks follow indentation of logical lines; a stack of
 *     open blocks (indent, name, kind) is kept while scanning from the top;
 *   - lambdas and comprehensions live inside one logical line (f-string
 *     fields included); a second stack of brackets and lambdas is kept for
 *     the target line only.
 * Both ride on a tokenizer that only knows what it must to stay in sync on
 * any file: strings (prefixes, triple quotes, escapes), comments, brackets,
 * backslash continuations, CRLF/CR newlines, tabs to multiples of 8.
 *
 * It reads files from the profiled machine, so: no reads past len,
 * fixed-size stacks (CPython's own limits; deeper source cannot have been
 * compiled), recursion only into f-strings nested in f-string fields,
 * FSTRING_DEPTH at most, and work linear in the file up to the target line,
 * plus at most one scan of the target logical line per bracket opened on
 * the target line.
 *
 * Checked against co_qualname of every code object in the standard
 * libraries and test suites of 3.8-3.12 as compiled by 3.11 (tests/unit/
 * test_pysrc.c runs part of it): all defs and classes agree. What it cannot
 * reproduce: two lambdas or two comprehensions of one kind on one line at
 * different depths ("lambda: lambda: 0", "[[y for y in x] for x in z]")
 * have different qualnames but the same (co_name, co_firstlineno); the
 * outermost (first) is returned. Sources in 3.12+ syntax (PEP 701 f-strings
 * reusing their quotes) are not understood, but 3.12+ has co_qualname.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "pysrc.h"
#include "util/util.h"

/* CPython's tokenizer limits (MAXINDENT, MAXLEVEL): a file nesting deeper
 * fails to compile, so it cannot be the source of a live code object. */
#define MAX_BLOCKS 100
#define MAX_BRACKETS 200
/* Brackets plus lambdas open on one line ("lambda: lambda: ..." nests
 * without brackets; CPython's parser stack stops it somewhere too). */
#define MAX_EXPR 256
/* `global` names of the open blocks; more are dropped, which only matters
 * for a def that one of the dropped names re-declares global. */
#define MAX_GLOBALS 256

/* ---- tokenizer ---- */

enum tok_type { T_EOF, T_NEWLINE, T_NAME, T_NUMBER, T_STRING, T_OP };

/* Small and copyable on purpose: rewinding to a logical line or looking
 * ahead is a struct copy. */
struct tok {
	const char *p, *end;
	unsigned int line; /* of p, 1-based */
	int depth;	   /* open brackets; a NEWLINE inside them is not one */
	bool bol;	   /* p starts a physical line that may start a logical one */
	bool field;	   /* an f-string field: newlines are spaces, no NEWLINE */
	int err;	   /* -E2BIG once brackets nest past MAX_BRACKETS */
};

struct token {
	enum tok_type type;
	const char *s;
	size_t n;
	unsigned int line; /* where the token starts */
	size_t indent;	   /* of the logical line; set when first */
	bool first;	   /* first token of a logical line */
};

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Bytes >= 0x80 are parts of UTF-8 identifiers (PEP 3131); the tokenizer
 * need not know which ones CPython would refuse. */
static bool is_id_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool is_id(unsigned char c)
{
	return is_id_start(c) || is_digit(c);
}

static bool is_hex(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Length of the newline at p: "\n", "\r\n" or a lone "\r" (importlib reads
 * sources with universal newlines, so all three end a line). */
static size_t nl_len(const struct tok *t, const char *p)
{
	if (p >= t->end)
		return 0;
	if (*p == '\n')
		return 1;
	if (*p == '\r')
		return p + 1 < t->end && p[1] == '\n' ? 2 : 1;
	return 0;
}

/* Saturating: only lines up to firstlineno matter, and len is unbounded. */
static void line_inc(struct tok *t)
{
	if (t->line < UINT_MAX)
		t->line++;
}

static bool is_str_prefix(const char *s, size_t n)
{
	char a, b;

	if (n == 1) {
		a = s[0] | 0x20;
		return a == 'r' || a == 'b' || a == 'u' || a == 'f';
	}
	if (n == 2) {
		a = s[0] | 0x20;
		b = s[1] | 0x20;
		/* rb br fr rf; there is no "ur" in Python 3 */
		return (a == 'r' && (b == 'b' || b == 'f')) || ((a == 'b' || a == 'f') && b == 'r');
	}
	return false;
}

/* p is at the opening quote. Backslash escapes the next character in raw
 * strings too, as far as finding the end goes (r"\"" is one string). A
 * one-quote string with no end on its line is a SyntaxError for CPython;
 * stopping at the newline keeps the rest of the file in sync. */
static const char *scan_string(struct tok *t, const char *p)
{
	char q = *p;
	bool triple = p + 2 < t->end && p[1] == q && p[2] == q;
	size_t nl;

	p += triple ? 3 : 1;
	while (p < t->end) {
		if (*p == '\\') {
			p++;
			nl = nl_len(t, p);
			if (nl) {
				p += nl;
				line_inc(t);
			} else if (p < t->end) {
				p++;
			}
			continue;
		}
		nl = nl_len(t, p);
		if (nl) {
			if (!triple)
				return p;
			p += nl;
			line_inc(t);
			continue;
		}
		if (*p == q) {
			if (!triple)
				return p + 1;
			if (p + 2 < t->end && p[1] == q && p[2] == q)
				return p + 3;
		}
		p++;
	}
	return p;
}

/* Enough of a number that keywords glued to it still come out on their
 * own: "1if x else 2" is 1, if, x, else, 2 for CPython too. */
static const char *scan_number(const char *p, const char *end)
{
	const char *q;

	if (*p == '0' && p + 1 < end &&
	    (p[1] == 'x' || p[1] == 'X' || p[1] == 'o' || p[1] == 'O' || p[1] == 'b' ||
	     p[1] == 'B')) {
		p += 2;
		while (p < end && (is_hex(*p) || *p == '_'))
			p++;
		return p;
	}
	while (p < end && (is_digit(*p) || *p == '_' || *p == '.'))
		p++;
	if (p < end && (*p == 'e' || *p == 'E')) {
		q = p + 1;
		if (q < end && (*q == '+' || *q == '-'))
			q++;
		if (q < end && is_digit(*q)) {
			p = q;
			while (p < end && (is_digit(*p) || *p == '_'))
				p++;
		}
	}
	if (p < end && (*p == 'j' || *p == 'J'))
		p++;
	return p;
}

static void tok_init(struct tok *t, const char *src, size_t len)
{
	memset(t, 0, sizeof(*t));
	t->p = src;
	t->end = src + len;
	t->line = 1;
	t->bol = true;
	/* A UTF-8 BOM is not indentation. */
	if (len >= 3 && !memcmp(src, "\xef\xbb\xbf", 3))
		t->p += 3;
}

/* Only the significant tokens: comments, blank lines, continuation lines
 * and INDENT/DEDENT (indent is a field of a line's first token instead)
 * never come out. A last line without a newline still ends in T_NEWLINE. */
static void tok_next(struct tok *t, struct token *k)
{
	const char *p = t->p, *q;
	unsigned char c;
	size_t nl, col;

	k->first = false;
	k->indent = 0;
	if (t->err)
		goto eof;
	while (t->bol) {
		/* Tab to the next multiple of 8 and form feed resets, as in
		 * CPython's tok_get(). */
		col = 0;
		for (; p < t->end; p++) {
			if (*p == ' ')
				col++;
			else if (*p == '\t')
				col = (col / 8 + 1) * 8;
			else if (*p == '\f')
				col = 0;
			else
				break;
		}
		if (p >= t->end)
			goto eof;
		if (*p == '#' || nl_len(t, p)) {
			/* Blank and comment-only lines have no indentation. */
			while (p < t->end && !nl_len(t, p))
				p++;
			if (p < t->end) {
				p += nl_len(t, p);
				line_inc(t);
			}
			continue;
		}
		t->bol = false;
		k->first = true;
		k->indent = col;
	}

	for (;;) {
		while (p < t->end && (*p == ' ' || *p == '\t' || *p == '\f'))
			p++;
		if (p >= t->end) {
			if (t->field)
				goto eof;
			/* bol is false: a logical line is open; close it, then
			 * the next call finds bol at the end and says EOF. */
			t->p = p;
			t->bol = true;
			k->type = T_NEWLINE;
			k->s = p;
			k->n = 0;
			k->line = t->line;
			return;
		}
		if (*p == '#') {
			while (p < t->end && !nl_len(t, p))
				p++;
			continue;
		}
		nl = nl_len(t, p);
		if (nl) {
			k->line = t->line;
			k->s = p;
			k->n = 0;
			p += nl;
			line_inc(t);
			if (t->depth == 0 && !t->field) {
				t->p = p;
				t->bol = true;
				k->type = T_NEWLINE;
				return;
			}
			continue;
		}
		if (*p == '\\') {
			nl = nl_len(t, p + 1);
			if (nl) {
				p += 1 + nl;
				line_inc(t);
				continue;
			}
			p++; /* stray: a SyntaxError for CPython, skip it */
			continue;
		}
		break;
	}

	k->s = p;
	k->line = t->line;
	c = *p;
	if (is_id_start(c)) {
		q = p;
		while (q < t->end && is_id(*q))
			q++;
		if (q < t->end && (*q == '\'' || *q == '"') && is_str_prefix(p, q - p)) {
			q = scan_string(t, q);
			k->type = T_STRING;
		} else {
			k->type = T_NAME;
		}
	} else if (c == '\'' || c == '"') {
		q = scan_string(t, p);
		k->type = T_STRING;
	} else if (is_digit(c) || (c == '.' && p + 1 < t->end && is_digit(p[1]))) {
		q = scan_number(p, t->end);
		k->type = T_NUMBER;
	} else {
		q = p + 1;
		k->type = T_OP;
		switch (c) {
		case '(':
		case '[':
		case '{':
			if (++t->depth > MAX_BRACKETS) {
				t->err = -E2BIG;
				goto eof;
			}
			break;
		case ')':
		case ']':
		case '}':
			if (t->depth > 0) /* unbalanced: CPython refuses it */
				t->depth--;
			break;
		case ':': /* ":=" and "==" are not ':' and '=' */
		case '=':
		case '<':
		case '>':
		case '!':
			if (q < t->end && *q == '=')
				q++;
			break;
		case '-':
			if (q < t->end && *q == '>')
				q++;
			break;
		}
	}
	k->n = q - p;
	t->p = q;
	return;
eof:
	t->p = p;
	k->type = T_EOF;
	k->s = p;
	k->n = 0;
	k->line = t->line;
}

static bool tok_is(const struct token *k, enum tok_type type, const char *s)
{
	size_t n = strlen(s);

	return k->type == type && k->n == n && !memcmp(k->s, s, n);
}

static bool tok_op(const struct token *k, char c)
{
	return k->type == T_OP && k->n == 1 && k->s[0] == c;
}

/* ---- scopes ---- */

/* An open def or class block. */
struct block {
	size_t indent;
	const char *name;
	size_t n;
	bool is_class;
	bool force_global; /* its parent declared the name global */
};

/* A name declared `global` in block number owner. */
struct gdecl {
	unsigned int owner;
	const char *name;
	size_t n;
};

enum comp_state {
	C_ELEM,	   /* before the first `for`: the element, inside the scope */
	C_TARGETS, /* for x, y ... in: inside */
	C_ITER,	   /* the first iterable: evaluated *outside*, by the parent */
	C_INNER,   /* later for/if clauses: inside */
};

/* On the target line: an open bracket, or a lambda. */
struct expr {
	bool is_lambda;
	bool body;	  /* lambda: past its ':' (the parameters and their
			   * defaults belong to the parent) */
	char open;	  /* bracket: ( [ { */
	signed char comp; /* bracket: -1 not known yet, 0 no, 1 comprehension */
	bool colon;	  /* bracket: a ':' at its own level before any `for`
			   * (a dict, for '{') */
	enum comp_state state;
};

struct ctx {
	struct block blocks[MAX_BLOCKS];
	unsigned int nblocks;
	struct gdecl globals[MAX_GLOBALS];
	unsigned int nglobals;
	struct expr es[MAX_EXPR];
	unsigned int nes;
	struct expr scratch[MAX_EXPR]; /* lookahead's copy of es */
};

enum want {
	W_NAME, /* a def or class */
	W_LAMBDA,
	W_LISTCOMP,
	W_SETCOMP,
	W_DICTCOMP,
	W_GENEXPR,
};

/* A logical line starting at indent closes every block at or right of it. */
static void close_blocks(struct ctx *c, size_t indent)
{
	while (c->nblocks && c->blocks[c->nblocks - 1].indent >= indent)
		c->nblocks--;
	/* globals[] is sorted by owner: appends go to the innermost block. */
	while (c->nglobals && c->globals[c->nglobals - 1].owner >= c->nblocks)
		c->nglobals--;
}

/* compiler_set_qualname(): a def/class whose parent scope (not the module)
 * declared its name global is named as if at module level. Mangling
 * (__x in a class) does not matter: CPython mangles the declaration and the
 * name alike before comparing them. */
static bool declared_global(const struct ctx *c, const char *name, size_t n)
{
	unsigned int i;

	if (!c->nblocks)
		return false;
	for (i = 0; i < c->nglobals; i++) {
		const struct gdecl *g = &c->globals[i];

		if (g->owner == c->nblocks - 1 && g->n == n && !memcmp(g->name, name, n))
			return true;
	}
	return false;
}

static int push_block(struct ctx *c, size_t indent, const char *name, size_t n, bool is_class)
{
	struct block *b;

	if (c->nblocks >= MAX_BLOCKS)
		return -E2BIG;
	b = &c->blocks[c->nblocks];
	b->indent = indent;
	b->name = name;
	b->n = n;
	b->is_class = is_class;
	b->force_global = declared_global(c, name, n);
	c->nblocks++;
	return 0;
}

enum line_kind { L_OTHER, L_DECORATOR, L_DEF, L_CLASS };

struct line_info {
	enum line_kind kind;
	const char *name; /* L_DEF, L_CLASS */
	size_t n;
	bool has_body;	       /* L_DEF, L_CLASS: a statement after the ':' */
	unsigned int end_line; /* of the line's NEWLINE */
};

/*
 * Reads the rest of the logical line whose first token is k: what kind of
 * line it is, whether a def/class has its body on the same line (then it
 * opens no block), and `global` declarations, which belong to the innermost
 * block (any statement of its body at any depth, bar nested defs/classes).
 */
static int scan_line(struct ctx *c, struct tok *t, struct token *k, struct line_info *li)
{
	unsigned int lambdas = 0; /* at depth 0, waiting for their ':' */
	bool colon = false;
	int gstate = 0; /* 1: "global" seen, want a name; 2: want ',' */

	memset(li, 0, sizeof(*li));
	if (tok_op(k, '@')) {
		li->kind = L_DECORATOR;
		tok_next(t, k);
	} else if (tok_is(k, T_NAME, "def") || tok_is(k, T_NAME, "class") ||
		   tok_is(k, T_NAME, "async")) {
		bool is_class = tok_is(k, T_NAME, "class");

		if (tok_is(k, T_NAME, "async")) {
			tok_next(t, k);
			if (!tok_is(k, T_NAME, "def"))
				goto rest; /* async for/with */
		}
		tok_next(t, k);
		if (k->type != T_NAME)
			goto rest;
		li->kind = is_class ? L_CLASS : L_DEF;
		li->name = k->s;
		li->n = k->n;
		tok_next(t, k);
	}
rest:
	for (; k->type != T_NEWLINE; tok_next(t, k)) {
		if (k->type == T_EOF)
			return t->err ? t->err : -ENOENT;
		if (li->kind == L_DEF || li->kind == L_CLASS) {
			/* The header ends at the first ':' outside brackets that
			 * is not a lambda's ("def f() -> lambda: 0: ..." is
			 * legal). */
			if (colon) {
				li->has_body = true;
			} else if (t->depth == 0 && tok_is(k, T_NAME, "lambda")) {
				lambdas++;
			} else if (t->depth == 0 && tok_op(k, ':')) {
				if (lambdas)
					lambdas--;
				else
					colon = true;
			}
			continue;
		}
		if (li->kind != L_OTHER || !c->nblocks)
			continue;
		if (tok_is(k, T_NAME, "global")) {
			gstate = 1;
		} else if (gstate == 1 && k->type == T_NAME) {
			if (c->nglobals < MAX_GLOBALS) {
				struct gdecl *g = &c->globals[c->nglobals++];

				g->owner = c->nblocks - 1;
				g->name = k->s;
				g->n = k->n;
			}
			gstate = 2;
		} else if (gstate == 2 && tok_op(k, ',')) {
			gstate = 1;
		} else {
			gstate = 0;
		}
	}
	li->end_line = k->line;
	return 0;
}

/* ---- output ---- */

struct out {
	char *s;
	size_t cap, len;
	bool overflow;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->overflow || n >= o->cap - o->len) {
		o->overflow = true;
		return;
	}
	memcpy(o->s + o->len, s, n);
	o->len += n;
	o->s[o->len] = '\0';
}

static void put_str(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_blocks(struct out *o, const struct ctx *c)
{
	unsigned int i, from = 0;

	for (i = 0; i < c->nblocks; i++)
		if (c->blocks[i].force_global)
			from = i;
	for (i = from; i < c->nblocks; i++) {
		put(o, c->blocks[i].name, c->blocks[i].n);
		put_str(o, c->blocks[i].is_class ? "." : ".<locals>.");
	}
}

static const char *comp_name(const struct expr *e)
{
	switch (e->open) {
	case '(':
		return "<genexpr>";
	case '[':
		return "<listcomp>";
	default:
		return e->colon ? "<dictcomp>" : "<setcomp>";
	}
}

/* Parents contributed by the target line: lambdas past their ':' and the
 * comprehensions whose scope we are in (not their first iterable). */
static void put_exprs(struct out *o, const struct expr *es, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct expr *e = &es[i];

		if (e->is_lambda) {
			if (e->body)
				put_str(o, "<lambda>.<locals>.");
		} else if (e->comp == 1 && e->state != C_ITER) {
			put_str(o, comp_name(e));
			put_str(o, ".");
		}
	}
}

/* ---- scopes inside a logical line: brackets and lambdas ---- */

enum ev {
	EV_NONE,
	EV_FOR,	     /* a bracket saw a `for` at its own level: a comprehension */
	EV_CLOSE,    /* a bracket closed */
	EV_TOPCOLON, /* a ':' outside brackets and lambdas: a statement header's */
	EV_FULL,     /* no room to push */
};

static void pop_lambda_bodies(struct expr *es, unsigned int *n)
{
	while (*n && es[*n - 1].is_lambda && es[*n - 1].body)
		(*n)--;
}

/*
 * One token through the bracket/lambda machine. A lambda's body ends at a
 * ',' ':' ';' or `for` at its own level, or where its bracket closes; its
 * parameters end at its ':'. A bracket is a comprehension once a `for`
 * shows up at its own level (nothing else puts a `for` inside brackets).
 * *idx is the bracket an EV_FOR/EV_CLOSE is about.
 */
static enum ev step(struct expr *es, unsigned int *n, const struct token *k, unsigned int *idx)
{
	struct expr *top;

	if (k->type == T_NAME) {
		if (tok_is(k, T_NAME, "lambda")) {
			if (*n >= MAX_EXPR)
				return EV_FULL;
			memset(&es[*n], 0, sizeof(es[*n]));
			es[(*n)++].is_lambda = true;
			return EV_NONE;
		}
		if (tok_is(k, T_NAME, "for")) {
			pop_lambda_bodies(es, n);
			if (!*n || es[*n - 1].is_lambda)
				return EV_NONE;
			top = &es[*n - 1];
			top->comp = 1;
			if (top->state == C_ELEM)
				top->state = C_TARGETS;
			else if (top->state == C_ITER)
				top->state = C_INNER;
			*idx = *n - 1;
			return EV_FOR;
		}
		if (!*n || es[*n - 1].is_lambda)
			return EV_NONE;
		top = &es[*n - 1];
		if (tok_is(k, T_NAME, "in") && top->state == C_TARGETS)
			top->state = C_ITER;
		else if ((tok_is(k, T_NAME, "if") || tok_is(k, T_NAME, "async")) &&
			 top->state == C_ITER)
			top->state = C_INNER;
		return EV_NONE;
	}
	if (k->type != T_OP || k->n != 1)
		return EV_NONE;
	switch (k->s[0]) {
	case '(':
	case '[':
	case '{':
		if (*n >= MAX_EXPR)
			return EV_FULL;
		memset(&es[*n], 0, sizeof(es[*n]));
		es[*n].open = k->s[0];
		es[*n].comp = -1;
		es[*n].state = C_ELEM;
		(*n)++;
		return EV_NONE;
	case ')':
	case ']':
	case '}':
		while (*n && es[*n - 1].is_lambda)
			(*n)--;
		if (!*n)
			return EV_NONE;
		*idx = --(*n);
		return EV_CLOSE;
	case ',':
		pop_lambda_bodies(es, n);
		return EV_NONE;
	case ';':
		while (*n && es[*n - 1].is_lambda)
			(*n)--;
		return EV_NONE;
	case ':':
		/* "lambda x=lambda: 0: x": the inner body ends at the outer
		 * lambda's ':'. */
		pop_lambda_bodies(es, n);
		if (!*n)
			return EV_TOPCOLON;
		top = &es[*n - 1];
		if (top->is_lambda)
			top->body = true;
		else if (top->state == C_ELEM)
			top->colon = true; /* dict key, or a slice: no `for` then */
		return EV_NONE;
	}
	return EV_NONE;
}

/* ---- f-strings ---- */

/*
 * Lambdas and comprehensions also live in f-string replacement fields
 * (f'{", ".join([x for x in y])}'), where they are scopes like any other.
 * 3.8-3.11 (before PEP 701) tokenize an f-string as one string and parse
 * its fields afterwards; the fields cannot hold the string's own quote, so
 * the tokenizer above already finds where the string ends, and each field
 * is tokenized on its own as an expression. Nested f-strings in a field
 * recurse, at most FSTRING_DEPTH deep (3.8-3.11 run out of quote kinds
 * at 4).
 */
#define FSTRING_DEPTH 4

/* Calls fn for each replacement field's expression text [a, b), and for the
 * fields nested in its format spec ("{x:{width}}"), with the line where it
 * starts; stops at fn's first non-zero return. Conversions ("!r") and
 * format specs are not expressions. */
static int for_each_field(const struct tok *t, const struct token *k,
			  int (*fn)(void *arg, const char *a, const char *b, unsigned int line),
			  void *arg)
{
	const char *p = k->s, *end = k->s + k->n, *a = NULL;
	unsigned int line = k->line;
	bool raw = false, triple, in_spec = false;
	int nest = 0, ret;
	char q;
	size_t nl;
	enum { LIT, EXPR, CONV, SPEC } mode = LIT;

	for (; p < end && *p != '\'' && *p != '"'; p++)
		raw |= (*p | 0x20) == 'r';
	if (p >= end)
		return 0;
	q = *p;
	triple = p + 2 < end && p[1] == q && p[2] == q;
	p += triple ? 3 : 1;
	/* Without its closing quotes, when it has them. */
	if (end - p >= (triple ? 3 : 1) && end[-1] == q)
		end -= triple ? 3 : 1;

	while (p < end) {
		nl = nl_len(t, p);
		if (nl) {
			p += nl;
			if (line < UINT_MAX)
				line++;
			continue;
		}
		switch (mode) {
		case LIT:
		case SPEC:
			if (*p == '\\' && !raw) {
				/* "\N{DASH}" is a character, not a field; "\{"
				 * is a backslash and a field. */
				if (p + 2 < end && p[1] == 'N' && p[2] == '{') {
					while (p < end && *p != '}' && !nl_len(t, p))
						p++;
				} else if (p + 1 < end && p[1] != '{' && p[1] != '}' &&
					   !nl_len(t, p + 1)) {
					p++;
				}
				p++;
				continue;
			}
			if (*p == '{' && mode == LIT && p + 1 < end && p[1] == '{') {
				p += 2; /* literal brace */
				continue;
			}
			if (*p == '{') {
				in_spec = mode == SPEC;
				mode = EXPR;
				nest = 0;
				a = ++p;
				continue;
			}
			if (*p == '}' && mode == SPEC)
				mode = LIT;
			p++;
			continue;
		case EXPR:
			if (*p == '\'' || *p == '"') {
				/* A string inside the field, in other quotes. */
				struct tok sub = *t;

				sub.end = end;
				p = scan_string(&sub, p);
				if (line < UINT_MAX)
					line += sub.line - t->line;
				continue;
			}
			if (*p == '(' || *p == '[' || *p == '{') {
				nest++;
			} else if ((*p == ')' || *p == ']' || *p == '}') && nest > 0) {
				nest--;
			} else if (nest == 0 && (*p == '}' || *p == ':' ||
						 (*p == '!' && !(p + 1 < end && p[1] == '=')))) {
				ret = fn(arg, a, p, line);
				if (ret)
					return ret;
				if (*p == '}')
					mode = in_spec ? SPEC : LIT;
				else
					mode = *p == ':' ? SPEC : CONV;
			}
			p++;
			continue;
		case CONV:
			if (*p == ':')
				mode = SPEC;
			else if (*p == '}')
				mode = in_spec ? SPEC : LIT;
			p++;
			continue;
		}
	}
	if (mode == EXPR && a) /* unterminated field: still an expression */
		return fn(arg, a, p, line);
	return 0;
}

static bool is_fstring(const struct token *k)
{
	const char *p;

	for (p = k->s; p < k->s + k->n && *p != '\'' && *p != '"'; p++)
		if ((*p | 0x20) == 'f')
			return true;
	return false;
}

/* ---- the target line: lambdas and comprehensions ---- */

/* The walk over the target line, through f-string fields. Level 0 is the
 * logical line; level L > 0 a field, tokenized by chain[L], whose scopes
 * sit on es[floor[L]..]. */
struct walk {
	struct ctx *c;
	const struct line_info *li;
	unsigned int firstlineno;
	enum want w;
	const char *co_name;
	struct out *o;
	bool header; /* a def/class line whose ':' is still ahead */
	size_t indent;
	unsigned int level;
	struct tok *chain[FSTRING_DEPTH + 1];
	unsigned int floor[FSTRING_DEPTH + 1];
	/* 3.8 gives everything in the fields of an implicitly concatenated
	 * f-string the line of the first string of the run (its
	 * fstring_fix_node_location()); 3.9+ the field's own line. Either is
	 * accepted: alt_line[L] is the run's first line for a field in a later
	 * string, else 0. */
	unsigned int alt_line[FSTRING_DEPTH + 1];
};

/* step() on the scopes of the current level only: a stray ')' in a field
 * must not close what is open around the f-string. */
static enum ev step_at(struct expr *es, unsigned int *n, unsigned int floor, const struct token *k,
		       unsigned int *idx)
{
	unsigned int rel = *n - floor;
	enum ev ev = step(es + floor, &rel, k, idx);

	*n = floor + rel;
	*idx += floor;
	return ev;
}

/*
 * Whether the open brackets es[0..nes) not known yet are comprehensions
 * depends on what follows ("[f(x),\n lambda: 0,\n ... for x in y]"): run
 * the machine ahead on copies of the tokenizers and the stack, to each such
 * bracket's `for` or close; from inside a field, the rest of the field,
 * then the rest of the enclosing levels (other fields are self-contained).
 * Entries below the lowest point the copy's stack reached are still the
 * originals, so events about them are facts about es[]. Linear in the rest
 * of the logical line.
 */
static void lookahead(struct walk *wk)
{
	struct ctx *c = wk->c;
	unsigned int i, n = c->nes, low = c->nes, idx = 0, unknown = 0, lvl = wk->level;
	struct token k;
	struct tok t;
	enum ev ev;

	for (i = 0; i < c->nes; i++)
		unknown += !c->es[i].is_lambda && c->es[i].comp < 0;
	memcpy(c->scratch, c->es, c->nes * sizeof(c->es[0]));
	t = *wk->chain[lvl];
	while (unknown) {
		tok_next(&t, &k);
		if (k.type == T_NEWLINE || k.type == T_EOF) {
			if (!lvl)
				break;
			/* End of a field: back out to the string's level. */
			n = wk->floor[lvl];
			if (n < low)
				low = n;
			t = *wk->chain[--lvl];
			continue;
		}
		idx = 0;
		ev = step_at(c->scratch, &n, wk->floor[lvl], &k, &idx);
		if (ev == EV_FULL)
			break;
		if ((ev == EV_FOR || ev == EV_CLOSE) && idx < low && c->es[idx].comp < 0) {
			c->es[idx].comp = ev == EV_FOR;
			c->es[idx].colon = c->scratch[idx].colon;
			unknown--;
		}
		if (n < low)
			low = n;
	}
	/* Cut off by the end of the line: not comprehensions. */
	for (i = 0; i < c->nes; i++)
		if (!c->es[i].is_lambda && c->es[i].comp < 0)
			c->es[i].comp = 0;
}

static bool bracket_is(const struct expr *e, enum want w)
{
	if (e->comp != 1)
		return false;
	switch (w) {
	case W_LISTCOMP:
		return e->open == '[';
	case W_GENEXPR:
		return e->open == '(';
	case W_SETCOMP:
		return e->open == '{' && !e->colon;
	case W_DICTCOMP:
		return e->open == '{' && e->colon;
	default:
		return false;
	}
}

static int walk_tokens(struct walk *wk, struct tok *t);

static int walk_field(void *arg, const char *a, const char *b, unsigned int line)
{
	struct walk *wk = arg;
	struct tok sub;
	int ret;

	memset(&sub, 0, sizeof(sub));
	sub.p = a;
	sub.end = b;
	sub.line = line;
	sub.field = true;
	wk->level++;
	wk->chain[wk->level] = &sub;
	wk->floor[wk->level] = wk->c->nes;
	ret = walk_tokens(wk, &sub);
	/* Whatever the field left open closes with it. */
	wk->c->nes = wk->floor[wk->level];
	wk->level--;
	return ret;
}

/*
 * Walks the tokens of one level up to the first lambda or comprehension of
 * the wanted kind that starts on firstlineno. 1: found, written out; 0:
 * this field ended without it; < 0: stop (-ENOENT once past the line).
 */
static int walk_tokens(struct walk *wk, struct tok *t)
{
	struct ctx *c = wk->c;
	unsigned int idx, lvl = wk->level, run = 0, line;
	struct token k;
	bool here;
	enum ev ev;
	int err;

	for (;;) {
		tok_next(t, &k);
		if (k.type == T_EOF && t->err)
			return t->err;
		if (k.type == T_EOF || k.type == T_NEWLINE)
			return lvl ? 0 : -ENOENT;
		if (lvl == 0 && k.first)
			wk->indent = k.indent;
		/* A run of strings is one atom, on the line of its first. */
		if (k.type != T_STRING)
			run = 0;
		else if (!run)
			run = k.line;
		line = k.type == T_STRING ? run : k.line;
		here = k.line == wk->firstlineno || (lvl && wk->alt_line[lvl] == wk->firstlineno);
		if (line > wk->firstlineno && !(lvl && wk->alt_line[lvl] == wk->firstlineno))
			return -ENOENT;

		if (k.type == T_STRING) {
			/* Fields can only matter when the string reaches the
			 * line (t->line: where it ends). */
			if (lvl < FSTRING_DEPTH && is_fstring(&k) &&
			    (t->line >= wk->firstlineno || run == wk->firstlineno)) {
				wk->alt_line[lvl + 1] = k.line != run ? run : 0;
				err = for_each_field(t, &k, walk_field, wk);
				if (err)
					return err;
			}
			continue;
		}

		idx = 0;
		ev = step_at(c->es, &c->nes, wk->floor[lvl], &k, &idx);
		if (ev == EV_FULL)
			return -E2BIG;
		if (ev == EV_TOPCOLON && lvl == 0 && wk->header) {
			/* The rest of the line is the def/class's own body. */
			wk->header = false;
			err = push_block(c, wk->indent, wk->li->name, wk->li->n,
					 wk->li->kind == L_CLASS);
			if (err)
				return err;
		}
		if (!here)
			continue;
		if (wk->w == W_LAMBDA ? !tok_is(&k, T_NAME, "lambda")
				      : !(tok_op(&k, '(') || tok_op(&k, '[') || tok_op(&k, '{')))
			continue;
		/* The candidate is es[nes - 1], just pushed. */
		wk->chain[lvl] = t;
		lookahead(wk);
		if (wk->w != W_LAMBDA && !bracket_is(&c->es[c->nes - 1], wk->w))
			continue;
		put_blocks(wk->o, c);
		put_exprs(wk->o, c->es, c->nes - 1);
		put_str(wk->o, wk->co_name);
		return 1;
	}
}

/*
 * t is rewound to the start of the logical line holding firstlineno, the
 * blocks around it are open. A def/class header on this line is its
 * parent's up to the header's ':' (defaults, annotations, bases), its own
 * after (a one-line body).
 */
static int find_expr(struct ctx *c, struct tok *t, const struct line_info *li,
		     unsigned int firstlineno, enum want w, const char *co_name, struct out *o)
{
	struct walk wk;
	int ret;

	memset(&wk, 0, sizeof(wk));
	wk.c = c;
	wk.li = li;
	wk.firstlineno = firstlineno;
	wk.w = w;
	wk.co_name = co_name;
	wk.o = o;
	wk.header = li->kind == L_DEF || li->kind == L_CLASS;
	wk.chain[0] = t;
	c->nes = 0;
	ret = walk_tokens(&wk, t);
	return ret == 1 ? 0 : ret < 0 ? ret : -ENOENT;
}

/* The def/class at firstlineno, possibly under decorators: li is the line
 * starting there, already read. */
static int find_def(struct ctx *c, struct tok *t, struct token *k, struct line_info *li,
		    const char *co_name, struct out *o)
{
	int err;

	while (li->kind == L_DECORATOR) {
		do
			tok_next(t, k);
		while (k->type == T_NEWLINE);
		if (k->type == T_EOF)
			return t->err ? t->err : -ENOENT;
		close_blocks(c, k->indent);
		err = scan_line(c, t, k, li);
		if (err)
			return err;
	}
	if (li->kind != L_DEF && li->kind != L_CLASS)
		return -ENOENT;
	if (li->n != strlen(co_name) || memcmp(li->name, co_name, li->n))
		return -ENOENT;
	if (!declared_global(c, li->name, li->n))
		put_blocks(o, c);
	put(o, li->name, li->n);
	return 0;
}

static enum want classify(const char *co_name)
{
	static const struct {
		const char *name;
		enum want w;
	} special[] = {
		{ "<lambda>", W_LAMBDA },   { "<listcomp>", W_LISTCOMP },
		{ "<setcomp>", W_SETCOMP }, { "<dictcomp>", W_DICTCOMP },
		{ "<genexpr>", W_GENEXPR },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(special); i++)
		if (!strcmp(co_name, special[i].name))
			return special[i].w;
	return W_NAME;
}

static int qualname(struct ctx *c, const char *src, size_t len, unsigned int firstlineno,
		    const char *co_name, struct out *o)
{
	enum want w = classify(co_name);
	struct line_info li;
	struct tok t, start;
	struct token k;
	unsigned int line;
	size_t indent;
	int err;

	if (w == W_NAME && co_name[0] == '<')
		return -ENOENT; /* "<string>" and the like: no source to match */
	tok_init(&t, src, len);
	for (;;) {
		start = t;
		tok_next(&t, &k);
		if (k.type == T_EOF)
			return t.err ? t.err : -ENOENT;
		if (k.type == T_NEWLINE)
			continue; /* a lone backslash continuation */
		if (k.line > firstlineno)
			return -ENOENT; /* a blank or comment line, or past EOF */
		line = k.line;
		indent = k.indent;
		close_blocks(c, indent);
		err = scan_line(c, &t, &k, &li);
		if (err)
			return err;

		if (li.end_line >= firstlineno) {
			if (w == W_NAME) {
				/* A def/class starts a logical line. */
				if (line != firstlineno)
					return -ENOENT;
				return find_def(c, &t, &k, &li, co_name, o);
			}
			t = start;
			return find_expr(c, &t, &li, firstlineno, w, co_name, o);
		}

		if ((li.kind == L_DEF || li.kind == L_CLASS) && !li.has_body) {
			err = push_block(c, indent, li.name, li.n, li.kind == L_CLASS);
			if (err)
				return err;
		}
	}
}

int pt_pysrc__qualname(const char *src, size_t len, unsigned int firstlineno, const char *co_name,
		       char *out, size_t outlen)
{
	struct out o = { .s = out, .cap = outlen };
	struct ctx c;
	int err;

	if (!out || !outlen || !co_name || !co_name[0] || (!src && len))
		return -EINVAL;
	out[0] = '\0';
	if (!strcmp(co_name, "<module>")) {
		put_str(&o, co_name);
		err = 0;
	} else {
		c.nblocks = 0;
		c.nglobals = 0;
		c.nes = 0;
		err = qualname(&c, src ? src : "", len, firstlineno, co_name, &o);
	}
	if (!err && o.overflow)
		err = -ENAMETOOLONG;
	if (err)
		out[0] = '\0';
	return err;
}
