// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_flame: weighted call tree, folded text and SVG (see flame.h).
 *
 * Nodes live in one array and refer to each other by index; node 0 is the
 * root above every frames[0]. Two open-addressing tables make an add
 * O(depth): names -> string id (interning: a server's ~10^4 stacks share
 * a few thousand frames) and (parent, string id) -> node, so a wide node
 * (a dispatcher with hundreds of callees) costs no scan of its children.
 * Children are also linked (child/next) for the SVG walk, which sorts them
 * by name only when it draws them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

#define NIL UINT32_MAX

struct flame_str {
	char *s;
	size_t len;
	uint64_t hash;
};

struct flame_node {
	uint64_t self, total;
	uint32_t parent, name; /* name: string id; NIL for the root */
	uint32_t child, next;  /* first child, next sibling; NIL ends */
	uint32_t depth;	       /* root 0, frames[i] i + 1 */
};

/*
 * A table slot carries its key, so a probe that misses reads no node or
 * string: at 10^5 adds a second that is one cache miss per frame, not two.
 */
struct flame_slot {
	uint32_t id;	       /* NIL: empty */
	uint32_t hash;	       /* low 32 bits: the slot, and a quick compare */
	uint32_t parent, name; /* node table only */
};

struct flame_tab {
	struct flame_slot *slots;
	uint32_t mask, count;
};

struct pt_flame {
	struct flame_node *nodes;
	uint32_t nnodes, cap_nodes;
	struct flame_str *strs;
	uint32_t nstrs, cap_strs;
	struct flame_tab node_tab; /* (parent, name) -> node */
	struct flame_tab str_tab;  /* name -> string id */
	uint32_t *path;		   /* the last add's node per frame */
	uint32_t cap_path, path_len;
	uint32_t max_depth;
	uint64_t total;
	uint64_t div; /* weights are written divided by this, rounded */
	size_t nstacks;
};

/* splitmix64's finalizer */
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t load_le64(const char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/*
 * Eight bytes a step, then mixed. Unseeded and byte-order independent on
 * purpose: colours come from it and must match across runs and machines.
 */
static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len, tail = 0;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8)
		h = (h ^ load_le64(s + i)) * 0xff51afd7ed558ccdULL;
	for (; i < len; i++)
		tail = tail << 8 | (unsigned char)s[i];
	return mix64(h ^ tail);
}

static inline uint32_t node_key_hash(uint32_t parent, uint32_t name)
{
	return (uint32_t)mix64((uint64_t)parent << 32 | name);
}

/* Grow an array of *cap elements to hold one more; 0 or -ENOMEM. */
static int grow(void **p, uint32_t *cap, uint32_t n, size_t elsz)
{
	uint32_t ncap;
	void *q;

	if (n < *cap)
		return 0;
	if (*cap >= NIL / 2)
		return -ENOMEM;
	ncap = *cap ? *cap * 2 : 64;
	q = realloc(*p, (size_t)ncap * elsz);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = ncap;
	return 0;
}

/* Make room for one more key: rebuilt at twice the size when half full. */
static int tab_reserve(struct flame_tab *t)
{
	uint32_t size = t->slots ? t->mask + 1 : 0, nsize, i, j;
	struct flame_slot *ns;

	if (size && t->count < size / 2)
		return 0;
	if (size >= (1U << 30))
		return -ENOMEM;
	nsize = size ? size * 2 : 128;
	ns = malloc((size_t)nsize * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (j = 0; j < nsize; j++)
		ns[j].id = NIL;
	for (i = 0; i < size; i++) {
		if (t->slots[i].id == NIL)
			continue;
		for (j = t->slots[i].hash & (nsize - 1); ns[j].id != NIL; j = (j + 1) & (nsize - 1))
			;
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->mask = nsize - 1;
	return 0;
}

static int flame_intern(struct pt_flame *fl, const char *s, uint32_t *id)
{
	size_t len = strlen(s);
	uint64_t h = hash_bytes(s, len);
	struct flame_tab *t = &fl->str_tab;
	struct flame_slot *sl;
	struct flame_str *str;
	uint32_t j;
	int err;

	err = tab_reserve(t);
	if (err)
		return err;
	for (j = (uint32_t)h & t->mask; (sl = &t->slots[j])->id != NIL; j = (j + 1) & t->mask) {
		if (sl->hash != (uint32_t)h)
			continue;
		str = &fl->strs[sl->id];
		if (str->len == len && !memcmp(str->s, s, len)) {
			*id = sl->id;
			return 0;
		}
	}
	err = grow((void **)&fl->strs, &fl->cap_strs, fl->nstrs, sizeof(*fl->strs));
	if (err)
		return err;
	str = &fl->strs[fl->nstrs];
	str->s = malloc(len + 1);
	if (!str->s)
		return -ENOMEM;
	memcpy(str->s, s, len + 1);
	str->len = len;
	str->hash = h;
	*sl = (struct flame_slot){ .id = fl->nstrs, .hash = (uint32_t)h };
	t->count++;
	*id = fl->nstrs++;
	return 0;
}

static int flame_child(struct pt_flame *fl, uint32_t parent, uint32_t name, uint32_t *id)
{
	uint32_t h = node_key_hash(parent, name), j;
	struct flame_tab *t = &fl->node_tab;
	struct flame_slot *sl;
	struct flame_node *nd;
	int err;

	err = tab_reserve(t);
	if (err)
		return err;
	for (j = h & t->mask; (sl = &t->slots[j])->id != NIL; j = (j + 1) & t->mask) {
		if (sl->parent == parent && sl->name == name) {
			*id = sl->id;
			return 0;
		}
	}
	err = grow((void **)&fl->nodes, &fl->cap_nodes, fl->nnodes, sizeof(*fl->nodes));
	if (err)
		return err;
	nd = &fl->nodes[fl->nnodes];
	memset(nd, 0, sizeof(*nd));
	nd->parent = parent;
	nd->name = name;
	nd->child = NIL;
	nd->next = fl->nodes[parent].child;
	nd->depth = fl->nodes[parent].depth + 1;
	fl->nodes[parent].child = fl->nnodes;
	if (nd->depth > fl->max_depth)
		fl->max_depth = nd->depth;
	*sl = (struct flame_slot){ .id = fl->nnodes, .hash = h, .parent = parent, .name = name };
	t->count++;
	*id = fl->nnodes++;
	return 0;
}

struct pt_flame *pt_flame__new(void)
{
	struct pt_flame *fl = calloc(1, sizeof(*fl));

	if (!fl)
		return NULL;
	if (grow((void **)&fl->nodes, &fl->cap_nodes, 0, sizeof(*fl->nodes))) {
		free(fl);
		return NULL;
	}
	memset(&fl->nodes[0], 0, sizeof(fl->nodes[0]));
	fl->nodes[0].parent = NIL;
	fl->nodes[0].name = NIL;
	fl->nodes[0].child = NIL;
	fl->nodes[0].next = NIL;
	fl->nnodes = 1;
	return fl;
}

void pt_flame__free(struct pt_flame *fl)
{
	uint32_t i;

	if (!fl)
		return;
	for (i = 0; i < fl->nstrs; i++)
		free(fl->strs[i].s);
	free(fl->strs);
	free(fl->str_tab.slots);
	free(fl->nodes);
	free(fl->node_tab.slots);
	free(fl->path);
	free(fl);
}

int pt_flame__add(struct pt_flame *fl, const char *const *frames, size_t n, uint64_t weight)
{
	uint32_t node = 0, name;
	size_t i;
	int err;

	if (!fl || !frames || !n || n >= NIL / 2)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!frames[i] || !frames[i][0])
			return -EINVAL;
	if (weight > UINT64_MAX - fl->total)
		return -EOVERFLOW;
	if (!weight)
		return 0;
	while (fl->cap_path < n)
		if (grow((void **)&fl->path, &fl->cap_path, fl->cap_path, sizeof(*fl->path)))
			return -ENOMEM;
	/* A thread sampled again mostly repeats its last stack from the root
	 * on: those frames cost a compare with names already in cache. */
	for (i = 0; i < n && i < fl->path_len; i++) {
		if (strcmp(frames[i], fl->strs[fl->nodes[fl->path[i]].name].s))
			break;
		node = fl->path[i];
	}
	/* On -ENOMEM below, the path so far stays with zero weight: it is
	 * neither written nor drawn. */
	fl->path_len = 0;
	for (; i < n; i++) {
		err = flame_intern(fl, frames[i], &name);
		if (err)
			return err;
		err = flame_child(fl, node, name, &node);
		if (err)
			return err;
		fl->path[i] = node;
	}
	if (!fl->nodes[node].self)
		fl->nstacks++;
	fl->nodes[node].self += weight;
	/* No node's total can pass the root's, which was checked above. By
	 * index rather than up the parent links: the loads do not wait on
	 * each other. */
	for (i = 0; i < n; i++)
		fl->nodes[fl->path[i]].total += weight;
	fl->nodes[0].total += weight;
	fl->total += weight;
	fl->path_len = (uint32_t)n;
	return 0;
}

struct pt_flame *pt_flame__copy(const struct pt_flame *fl, const char *drop_leaf)
{
	struct pt_flame *out = pt_flame__new();
	const char **frames = NULL;
	uint32_t i, d, nd;

	if (!out || !fl)
		goto fail;
	out->div = fl->div;
	frames = calloc(fl->max_depth + 1, sizeof(*frames));
	if (!frames)
		goto fail;
	/* the stacks with weight, leaf up; parents come first in the array,
	 * so the copy's nodes are made in the same order */
	for (i = 1; i < fl->nnodes; i++) {
		const char *leaf = fl->strs[fl->nodes[i].name].s;

		if (!fl->nodes[i].self || (drop_leaf && !strcmp(leaf, drop_leaf)))
			continue;
		d = fl->nodes[i].depth;
		for (nd = i; nd; nd = fl->nodes[nd].parent)
			frames[--d] = fl->strs[fl->nodes[nd].name].s;
		if (pt_flame__add(out, frames, fl->nodes[i].depth, fl->nodes[i].self))
			goto fail;
	}
	free(frames);
	return out;
fail:
	free(frames);
	pt_flame__free(out);
	return NULL;
}

void pt_flame__set_div(struct pt_flame *fl, uint64_t div)
{
	if (fl)
		fl->div = div ? div : 1;
}

/* A weight as written: divided by div, rounded half up. */
static uint64_t scaled(const struct pt_flame *fl, uint64_t w)
{
	return fl->div > 1 ? w / fl->div + (w % fl->div >= (fl->div + 1) / 2) : w;
}

uint64_t pt_flame__total(const struct pt_flame *fl)
{
	return fl ? fl->total : 0;
}

size_t pt_flame__nstacks(const struct pt_flame *fl)
{
	return fl ? fl->nstacks : 0;
}

/* ---- folded text ---- */

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t more)
{
	size_t ncap;
	char *q;

	if (more <= b->cap - b->len)
		return 0;
	if (more > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	ncap = b->cap ? b->cap : 4096;
	while (ncap - b->len < more)
		ncap *= 2;
	q = realloc(b->p, ncap);
	if (!q)
		return -ENOMEM;
	b->p = q;
	b->cap = ncap;
	return 0;
}

static bool folded_needs_escape(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == ';' || c == '\\';
}

/* Append name escaped as flame.h describes. */
static int folded_escape(struct buf *b, const char *name, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char c;
	size_t i;
	int err;

	/* Worst case: every byte becomes four. */
	err = buf_reserve(b, len * 4 + 1);
	if (err)
		return err;
	for (i = 0; i < len; i++) {
		c = name[i];
		if (folded_needs_escape(c)) {
			b->p[b->len++] = '\\';
			b->p[b->len++] = 'x';
			b->p[b->len++] = hex[c >> 4];
			b->p[b->len++] = hex[c & 15];
		} else {
			b->p[b->len++] = c;
		}
	}
	return 0;
}

struct folded_line {
	union {
		size_t off; /* into the text buffer while it may move */
		const char *text;
	};
	uint64_t weight;
};

static int cmp_line(const void *pa, const void *pb)
{
	const struct folded_line *a = pa, *b = pb;

	return strcmp(a->text, b->text);
}

int pt_flame__write_folded(const struct pt_flame *fl, FILE *f)
{
	struct folded_line *lines = NULL;
	uint32_t *path = NULL, i, d, nd;
	struct buf text = { 0 };
	const struct flame_str *s;
	size_t nlines = 0, k;
	int err = -ENOMEM;

	if (!fl || !f)
		return -EINVAL;
	if (fl->nstacks) {
		lines = calloc(fl->nstacks, sizeof(*lines));
		path = calloc(fl->max_depth, sizeof(*path));
		if (!lines || !path)
			goto out;
	}
	/* Parents come before their children in the array, but the text of a
	 * line is cheapest built leaf-up: only lines with weight cost. */
	for (i = 1; i < fl->nnodes; i++) {
		if (!fl->nodes[i].self)
			continue;
		d = 0;
		for (nd = i; nd; nd = fl->nodes[nd].parent)
			path[d++] = fl->nodes[nd].name;
		lines[nlines].off = text.len;
		lines[nlines].weight = fl->nodes[i].self;
		nlines++;
		while (d--) {
			s = &fl->strs[path[d]];
			if (folded_escape(&text, s->s, s->len))
				goto out;
			if (d)
				text.p[text.len++] = ';';
		}
		if (buf_reserve(&text, 1))
			goto out;
		text.p[text.len++] = '\0';
	}
	for (k = 0; k < nlines; k++)
		lines[k].text = text.p + lines[k].off;
	if (nlines)
		qsort(lines, nlines, sizeof(*lines), cmp_line);
	for (k = 0; k < nlines; k++)
		if (scaled(fl, lines[k].weight))
			fprintf(f, "%s %" PRIu64 "\n", lines[k].text, scaled(fl, lines[k].weight));
	err = fflush(f) || ferror(f) ? -EIO : 0;
out:
	free(text.p);
	free(path);
	free(lines);
	return err;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int ferr(char *err, size_t errlen, size_t lineno, int ret, const char *what)
{
	if (err && errlen)
		snprintf(err, errlen, "line %zu: %s", lineno, what);
	return ret;
}

/*
 * One line, without its '\n', NUL-terminated at len. Splits and decodes it
 * in place into frames (growing *frames as needed).
 */
static int folded_line(struct pt_flame *fl, char *line, size_t len, size_t lineno,
		       const char ***frames, size_t *cap, char *err, size_t errlen)
{
	char msg[96], *sp, *p, *q, *start;
	uint64_t w = 0;
	size_t n = 0;
	const char **fr;
	int ret, hi, lo;

	if (memchr(line, '\0', len))
		return ferr(err, errlen, lineno, -EINVAL, "NUL byte in line");
	sp = memrchr(line, ' ', len);
	if (!sp)
		return ferr(err, errlen, lineno, -EINVAL,
			    "missing weight (want \"frame;frame;... weight\")");
	if (sp + 1 == line + len)
		return ferr(err, errlen, lineno, -EINVAL, "missing weight after the last space");
	for (p = sp + 1; p < line + len; p++) {
		if (*p < '0' || *p > '9')
			return ferr(err, errlen, lineno, -EINVAL, "weight is not a decimal number");
		if (w > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return ferr(err, errlen, lineno, -EINVAL, "weight overflows u64");
		w = w * 10 + (uint64_t)(*p - '0');
	}
	*sp = '\0';

	/* Decode in place: the text only shrinks. */
	for (p = q = start = line;; p++) {
		if (*p == ';' || !*p) {
			if (q == start) {
				snprintf(msg, sizeof(msg), "frame %zu is empty", n + 1);
				return ferr(err, errlen, lineno, -EINVAL, msg);
			}
			if (n == *cap) {
				size_t ncap = *cap ? *cap * 2 : 64;

				fr = realloc(*frames, ncap * sizeof(*fr));
				if (!fr)
					return ferr(err, errlen, lineno, -ENOMEM, "out of memory");
				*frames = fr;
				*cap = ncap;
			}
			(*frames)[n++] = start;
			if (!*p) {
				*q = '\0';
				break;
			}
			*q++ = '\0';
			start = q;
			continue;
		}
		if (p[0] == '\\' && p[1] == 'x' && (hi = hexval(p[2])) >= 0 &&
		    (lo = hexval(p[3])) >= 0) {
			if (!hi && !lo) {
				snprintf(msg, sizeof(msg), "frame %zu: \\x00 is not allowed",
					 n + 1);
				return ferr(err, errlen, lineno, -EINVAL, msg);
			}
			*q++ = (char)(hi << 4 | lo);
			p += 3;
			continue;
		}
		*q++ = *p;
	}

	ret = pt_flame__add(fl, *frames, n, w);
	if (ret == -EOVERFLOW)
		return ferr(err, errlen, lineno, ret, "total weight overflows u64");
	if (ret == -ENOMEM)
		return ferr(err, errlen, lineno, ret, "out of memory");
	if (ret)
		return ferr(err, errlen, lineno, ret, "cannot add stack");
	return 0;
}

int pt_flame__read_folded(struct pt_flame *fl, FILE *f, char *err, size_t errlen)
{
	const char **frames = NULL;
	size_t cap = 0, bufsz = 0, lineno = 0, len;
	char *line = NULL;
	ssize_t got;
	int ret = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!fl || !f)
		return -EINVAL;
	/* errno tells getline's out-of-memory from the end of the file. */
	for (errno = 0; (got = getline(&line, &bufsz, f)) >= 0; errno = 0) {
		lineno++;
		len = (size_t)got;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (!len)
			continue;
		ret = folded_line(fl, line, len, lineno, &frames, &cap, err, errlen);
		if (ret)
			goto out;
	}
	if (ferror(f))
		ret = ferr(err, errlen, lineno + 1, -EIO, "read error");
	else if (errno == ENOMEM && !feof(f))
		ret = ferr(err, errlen, lineno + 1, -ENOMEM, "out of memory");
out:
	free(line);
	free(frames);
	return ret;
}

/* ---- SVG ---- */

#define SVG_PAD 10 /* px left and right of the plot */
#define SVG_TOP 60 /* title, subtitle, reset */
#define SVG_BOTTOM 10
#define SVG_ROW 16     /* px per depth; rects are one less */
#define SVG_CHAR_W 7.2 /* 0.6em at 12 px */

struct svg {
	FILE *f;
	const struct pt_flame *fl;
	const char *unit;
	double plot_w, min_w;
	uint32_t max_depth; /* of drawn frames */
};

/* Strict UTF-8 decode of one code point; anything else is one byte of
 * U+FFFD. The string is NUL-terminated, which no continuation byte is. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t n, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		goto bad;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			goto bad;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		goto bad;
	*cp = c;
	return n;
bad:
	*cp = 0xfffd;
	return 1;
}

/* What XML text gets for cp: NIL to drop it. XML 1.0 forbids most C0
 * controls and U+FFFE/U+FFFF; C1 and DEL are legal but print as junk. */
static uint32_t xml_cp(uint32_t cp)
{
	if (cp == '\t' || cp == '\n' || cp == '\r')
		return ' ';
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
		return NIL;
	if (cp == 0xfffe || cp == 0xffff)
		return 0xfffd;
	return cp;
}

/* Code points xml_put() would write for s. */
static size_t xml_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	uint32_t cp;

	while (*p) {
		p += utf8_next(p, &cp);
		if (xml_cp(cp) != NIL)
			n++;
	}
	return n;
}

/* Write at most max code points of s, escaped for text and attributes. */
static void xml_put(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	char u[4];
	uint32_t cp;

	while (*p && max) {
		p += utf8_next(p, &cp);
		cp = xml_cp(cp);
		if (cp == NIL)
			continue;
		max--;
		switch (cp) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			if (cp < 0x80) {
				putc((int)cp, f);
			} else if (cp < 0x800) {
				u[0] = (char)(0xc0 | cp >> 6);
				u[1] = (char)(0x80 | (cp & 0x3f));
				fwrite(u, 1, 2, f);
			} else if (cp < 0x10000) {
				u[0] = (char)(0xe0 | cp >> 12);
				u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
				u[2] = (char)(0x80 | (cp & 0x3f));
				fwrite(u, 1, 3, f);
			} else {
				u[0] = (char)(0xf0 | cp >> 18);
				u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
				u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
				u[3] = (char)(0x80 | (cp & 0x3f));
				fwrite(u, 1, 4, f);
			}
		}
	}
}

/* Same name, same colour, in every run and on every machine. */
static void frame_rgb(const char *name, uint64_t h, unsigned int rgb[3])
{
	unsigned int v;

	if (name[0] == '[' && !strncmp(name, "[off-cpu", 8)) {
		rgb[0] = 70 + h % 40;
		rgb[1] = 130 + (h >> 8) % 50;
		rgb[2] = 205 + (h >> 16) % 45;
	} else if (name[0] == '[') {
		v = 165 + h % 40;
		rgb[0] = rgb[1] = rgb[2] = v;
	} else {
		rgb[0] = 215 + h % 40;
		rgb[1] = 60 + (h >> 8) % 160;
		rgb[2] = 20 + (h >> 16) % 50;
	}
}

static inline double svg_width(const struct svg *c, uint64_t w)
{
	return c->plot_w * ((double)w / (double)c->fl->total);
}

static void svg_frame(const struct svg *c, const char *name, uint64_t hash, uint64_t off,
		      uint64_t w, uint32_t depth)
{
	double x = SVG_PAD + svg_width(c, off), wd = svg_width(c, w), fit;
	unsigned long y = SVG_TOP + (unsigned long)(c->max_depth - depth) * SVG_ROW;
	unsigned int rgb[3];
	size_t len = xml_len(name), show;
	FILE *f = c->f;

	/* The root is no code: it gets a pseudo-frame's grey. */
	frame_rgb(depth ? name : "[all]", hash, rgb);
	fputs("<g><title>", f);
	xml_put(f, name, SIZE_MAX);
	fprintf(f, " (%" PRIu64 " ", scaled(c->fl, w));
	xml_put(f, c->unit, SIZE_MAX);
	fprintf(f, ", %.2f%%)</title>", 100.0 * ((double)w / (double)c->fl->total));
	fprintf(f,
		"<rect x=\"%.2f\" y=\"%lu\" width=\"%.2f\" height=\"%u\" "
		"fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/>",
		x, y, wd, SVG_ROW - 1, rgb[0], rgb[1], rgb[2]);
	fprintf(f, "<text x=\"%.2f\" y=\"%lu\">", x + 3, y + 11);
	fit = (wd - 6) / SVG_CHAR_W;
	show = fit > 0 ? (size_t)fit : 0;
	if (len <= show) {
		xml_put(f, name, SIZE_MAX);
	} else if (show >= 3) {
		xml_put(f, name, show - 2);
		fputs("..", f);
	}
	fputs("</text></g>\n", f);
}

struct svg_kid {
	const char *name;
	uint32_t node;
};

static int cmp_kid(const void *pa, const void *pb)
{
	const struct svg_kid *a = pa, *b = pb;

	return strcmp(a->name, b->name);
}

struct svg_todo {
	uint32_t node;
	uint64_t off;
};

/* Depth-first without recursion: stacks may be thousands deep. */
static int svg_frames(const struct svg *c)
{
	const struct pt_flame *fl = c->fl;
	struct svg_todo *todo = NULL, t;
	struct svg_kid *kids = NULL;
	uint32_t ntodo = 0, cap_todo = 0, nkids, cap_kids = 0, k, i;
	const struct flame_node *nd;
	uint64_t off;
	int err = 0;

	svg_frame(c, "all", hash_bytes("[all]", 5), 0, fl->total, 0);
	if (grow((void **)&todo, &cap_todo, 0, sizeof(*todo)))
		return -ENOMEM;
	todo[ntodo++] = (struct svg_todo){ 0, 0 };
	while (ntodo) {
		t = todo[--ntodo];
		nd = &fl->nodes[t.node];
		if (t.node)
			svg_frame(c, fl->strs[nd->name].s, fl->strs[nd->name].hash, t.off,
				  nd->total, nd->depth);
		nkids = 0;
		for (k = nd->child; k != NIL; k = fl->nodes[k].next) {
			if (!fl->nodes[k].total)
				continue;
			err = grow((void **)&kids, &cap_kids, nkids, sizeof(*kids));
			if (err)
				goto out;
			kids[nkids].name = fl->strs[fl->nodes[k].name].s;
			kids[nkids++].node = k;
		}
		if (nkids > 1)
			qsort(kids, nkids, sizeof(*kids), cmp_kid);
		/* Narrow kids keep their place but are not drawn. Pushed in
		 * reverse so the file lists frames left to right. */
		off = t.off;
		for (i = 0; i < nkids; i++)
			off += fl->nodes[kids[i].node].total;
		for (i = nkids; i--;) {
			k = kids[i].node;
			off -= fl->nodes[k].total;
			if (svg_width(c, fl->nodes[k].total) < c->min_w)
				continue;
			err = grow((void **)&todo, &cap_todo, ntodo, sizeof(*todo));
			if (err)
				goto out;
			todo[ntodo++] = (struct svg_todo){ k, off };
		}
	}
out:
	free(kids);
	free(todo);
	return err;
}

/*
 * Click a frame: it and its ancestors span the plot, its descendants scale
 * with it, everything else hides. Labels are recut from the tooltip (the
 * name before its last " ("), with the same 0.6em rule as the C side.
 */
static const char svg_script[] =
	"(function () {\n"
	"var fr = document.getElementById(\"frames\").getElementsByTagName(\"g\");\n"
	"var rs = document.getElementById(\"reset\"), E = 0.02;\n"
	"function label(s, w) {\n"
	"\tvar a = Array.from(s), n = Math.floor((w - 6) / CW);\n"
	"\tif (a.length <= n)\n"
	"\t\treturn s;\n"
	"\treturn n < 3 ? \"\" : a.slice(0, n - 2).join(\"\") + \"..\";\n"
	"}\n"
	"function place(g, x, w) {\n"
	"\tvar r = g.getElementsByTagName(\"rect\")[0], t = g.getElementsByTagName(\"text\")[0];\n"
	"\tr.setAttribute(\"x\", x.toFixed(2));\n"
	"\tr.setAttribute(\"width\", w.toFixed(2));\n"
	"\tt.setAttribute(\"x\", (x + 3).toFixed(2));\n"
	"\tt.textContent = label(g.nm, w);\n"
	"\tg.removeAttribute(\"display\");\n"
	"}\n"
	"function zoom(z) {\n"
	"\tvar i, g, s = W / z.w0;\n"
	"\tfor (i = 0; i < fr.length; i++) {\n"
	"\t\tg = fr[i];\n"
	"\t\tif (g.y0 >= z.y0 && g.x0 <= z.x0 + E && g.x0 + g.w0 >= z.x0 + z.w0 - E)\n"
	"\t\t\tplace(g, X0, W);\n"
	"\t\telse if (g.y0 < z.y0 && g.x0 >= z.x0 - E && g.x0 + g.w0 <= z.x0 + z.w0 + E)\n"
	"\t\t\tplace(g, X0 + (g.x0 - z.x0) * s, g.w0 * s);\n"
	"\t\telse\n"
	"\t\t\tg.setAttribute(\"display\", \"none\");\n"
	"\t}\n"
	"\trs.removeAttribute(\"display\");\n"
	"}\n"
	"function reset() {\n"
	"\tfor (var i = 0; i < fr.length; i++)\n"
	"\t\tplace(fr[i], fr[i].x0, fr[i].w0);\n"
	"\trs.setAttribute(\"display\", \"none\");\n"
	"}\n"
	"for (var i = 0; i < fr.length; i++) {\n"
	"\tvar g = fr[i], r = g.getElementsByTagName(\"rect\")[0];\n"
	"\tvar t = g.getElementsByTagName(\"title\")[0].textContent;\n"
	"\tg.x0 = +r.getAttribute(\"x\");\n"
	"\tg.w0 = +r.getAttribute(\"width\");\n"
	"\tg.y0 = +r.getAttribute(\"y\");\n"
	"\tg.nm = t.slice(0, t.lastIndexOf(\" (\"));\n"
	"\tg.onclick = function () { zoom(this); };\n"
	"\tg.style.cursor = \"pointer\";\n"
	"}\n"
	"rs.onclick = reset;\n"
	"rs.style.cursor = \"pointer\";\n"
	"})();\n"
	"]]></script>\n";

int pt_flame__write_svg(const struct pt_flame *fl, FILE *f, const struct pt_flame_svg_opts *o)
{
	const char *title = o && o->title ? o->title : "Flame Graph";
	const char *sub = o && o->subtitle ? o->subtitle : NULL;
	unsigned int width = o && o->width ? o->width : 1200;
	unsigned long height;
	struct svg c = { .f = f, .fl = fl };
	uint32_t i;
	int err;

	if (!fl || !f || width < 200 || width > 100000)
		return -EINVAL;
	c.unit = o && o->unit ? o->unit : "samples";
	c.plot_w = width - 2 * SVG_PAD;
	c.min_w = c.plot_w / 1000 > 1.0 ? c.plot_w / 1000 : 1.0;
	if (fl->total) {
		for (i = 1; i < fl->nnodes; i++)
			if (fl->nodes[i].depth > c.max_depth &&
			    svg_width(&c, fl->nodes[i].total) >= c.min_w)
				c.max_depth = fl->nodes[i].depth;
		height = SVG_TOP + ((unsigned long)c.max_depth + 1) * SVG_ROW + SVG_BOTTOM;
	} else {
		height = SVG_TOP + 50;
	}

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" "
		"height=\"%lu\" viewBox=\"0 0 %u %lu\">\n"
		"<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%lu\" fill=\"rgb(250,250,250)\"/>\n"
		"<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-family=\"sans-serif\" "
		"font-size=\"17\" font-weight=\"bold\">",
		width, height, width, height, width, height, width / 2.0);
	xml_put(f, title, SIZE_MAX);
	fprintf(f,
		"</text>\n<text x=\"%.1f\" y=\"44\" text-anchor=\"middle\" "
		"font-family=\"sans-serif\" font-size=\"12\" fill=\"rgb(80,80,80)\">",
		width / 2.0);
	if (sub) {
		xml_put(f, sub, SIZE_MAX);
		fputs("; ", f);
	}
	fprintf(f, "total %" PRIu64 " ", scaled(fl, fl->total));
	xml_put(f, c.unit, SIZE_MAX);
	fprintf(f, " in %zu stack%s</text>\n", fl->nstacks, fl->nstacks == 1 ? "" : "s");

	if (!fl->total) {
		fprintf(f,
			"<text x=\"%.1f\" y=\"%u\" text-anchor=\"middle\" "
			"font-family=\"sans-serif\" font-size=\"14\" "
			"fill=\"rgb(80,80,80)\">no samples</text>\n</svg>\n",
			width / 2.0, SVG_TOP + 25);
		return fflush(f) || ferror(f) ? -EIO : 0;
	}

	fputs("<text id=\"reset\" x=\"10\" y=\"24\" font-family=\"sans-serif\" font-size=\"12\" "
	      "fill=\"rgb(0,0,160)\" display=\"none\">Reset Zoom</text>\n"
	      "<g id=\"frames\" font-family=\"monospace\" font-size=\"12\">\n",
	      f);
	err = svg_frames(&c);
	if (err)
		return err;
	fprintf(f,
		"</g>\n<script type=\"text/ecmascript\"><![CDATA[\n"
		"var W = %.2f, X0 = %d, CW = %.1f;\n",
		c.plot_w, SVG_PAD, SVG_CHAR_W);
	fputs(svg_script, f);
	fputs("</svg>\n", f);
	return fflush(f) || ferror(f) ? -EIO : 0;
}
