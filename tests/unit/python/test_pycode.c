// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_pycode: code objects and str objects built with the real per-version
 * layouts in a fake target memory (regions at fixed addresses, reads
 * outside them fail), malformed and truncated objects, line tables (bytes
 * objects: sizes, terminators, cuts), and a live check against every
 * CPython 3.8-3.13 found under pyenv plus Debian's /usr/bin/python3.11,
 * read through process_vm_readv (needs ptrace rights over a child: root,
 * or Yama scope <= 1).
 */
#include <errno.h>
#include <glob.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "python/pycode.h"
#include "python/pylayout.h"
#include "python/pyline.h"

#define CODE_TYPE 0x7f1200001000ull
#define UNICODE_TYPE 0x7f1200002000ull
#define NONE_TYPE 0x7f1200003000ull
#define BYTES_TYPE 0x7f1200004000ull

static const struct pt_pytypes types = { .code_type = CODE_TYPE, .unicode_type = UNICODE_TYPE };

/* PyASCIIObject.state: interned:2 kind:3 compact:1 ascii:1, then ready
 * (< 3.12) or statically_allocated (3.12+), which the reader ignores. */
#define S_INTERNED 1u
#define S_KIND(k) ((uint32_t)(k) << 2)
#define S_COMPACT (1u << 5)
#define S_ASCII (1u << 6)
#define S_BIT7 (1u << 7)
#define S_ASCII_OK (S_INTERNED | S_KIND(1) | S_COMPACT | S_ASCII | S_BIT7)
#define S_UCS(k) (S_KIND(k) | S_COMPACT | S_BIT7)

/* ---- a fake target ---- */

#define MAX_REGIONS 4
#define HEAP_BASE 0x10000ull
#define HEAP_LEN (256u << 10)

struct region {
	uint64_t base;
	uint8_t *buf;
	size_t len;
};

struct fmem {
	struct region r[MAX_REGIONS];
	size_t n;
	uint64_t brk;  /* next free address in r[0] */
	int force_err; /* every read fails with this when set */
};

static int fmem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fmem *m = ctx;
	size_t i;

	if (m->force_err)
		return m->force_err;
	for (i = 0; i < m->n; i++) {
		const struct region *r = &m->r[i];

		if (addr >= r->base && addr - r->base <= r->len &&
		    len <= r->len - (addr - r->base)) {
			memcpy(buf, r->buf + (addr - r->base), len);
			return 0;
		}
	}
	return -EFAULT;
}

static uint8_t *fmem_add(struct fmem *m, uint64_t base, size_t len)
{
	struct region *r;

	assert_true(m->n < MAX_REGIONS);
	r = &m->r[m->n++];
	r->base = base;
	r->len = len;
	/* exact size: ASan notices a read callback that overruns */
	r->buf = calloc(1, len ? len : 1);
	assert_non_null(r->buf);
	return r->buf;
}

static void fmem_init(struct fmem *m, struct pt_tmem *t)
{
	memset(m, 0, sizeof(*m));
	fmem_add(m, HEAP_BASE, HEAP_LEN);
	m->brk = HEAP_BASE + 64; /* nothing at the region's first bytes */
	t->read = fmem_read;
	t->ctx = m;
}

static void fmem_free(struct fmem *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->r[i].buf);
	m->n = 0;
}

static uint64_t fmem_alloc(struct fmem *m, size_t len)
{
	uint64_t a = m->brk;

	m->brk = (m->brk + len + 15) & ~15ull;
	assert_true(m->brk <= HEAP_BASE + HEAP_LEN);
	return a;
}

static uint8_t *at(struct fmem *m, uint64_t addr, size_t len)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		struct region *r = &m->r[i];

		if (addr >= r->base && addr - r->base + len <= r->len)
			return r->buf + (addr - r->base);
	}
	fail_msg("poke outside the fake memory: 0x%llx+%zu", (unsigned long long)addr, len);
	return NULL;
}

static void poke(struct fmem *m, uint64_t addr, const void *p, size_t len)
{
	memcpy(at(m, addr, len), p, len);
}

static void poke64(struct fmem *m, uint64_t addr, uint64_t v)
{
	poke(m, addr, &v, 8);
}

static void poke32(struct fmem *m, uint64_t addr, uint32_t v)
{
	poke(m, addr, &v, 4);
}

/* ---- objects ---- */

/* A str object with the given state, length and data (placed where the
 * state's ascii bit says), with CPython's NUL terminator after it. */
static uint64_t mk_str_raw(struct fmem *m, const struct pt_py_layout *L, uint64_t type,
			   uint32_t state, uint64_t length, const void *data, size_t datalen)
{
	size_t hdr = (state & S_ASCII) ? L->ascii_size : L->compact_size;
	uint64_t a = fmem_alloc(m, hdr + datalen + 4);

	poke64(m, a, 1); /* ob_refcnt */
	poke64(m, a + L->ob_type, type);
	poke64(m, a + L->str_length, length);
	poke64(m, a + 24, (uint64_t)-1); /* hash */
	poke32(m, a + L->str_state, state);
	if (datalen)
		poke(m, a + hdr, data, datalen);
	return a;
}

static size_t utf8_to_cps(const char *s, uint32_t *cp, size_t max)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t n = 0;

	while (*p) {
		uint32_t c;
		int k;

		if (*p < 0x80) {
			c = *p;
			k = 0;
		} else if (*p < 0xe0) {
			c = *p & 0x1f;
			k = 1;
		} else if (*p < 0xf0) {
			c = *p & 0x0f;
			k = 2;
		} else {
			c = *p & 0x07;
			k = 3;
		}
		p++;
		while (k--)
			c = c << 6 | (*p++ & 0x3f);
		assert_true(n < max);
		cp[n++] = c;
	}
	return n;
}

/* The str CPython would make for this UTF-8 text: the narrowest kind. */
static uint64_t mk_str_kind(struct fmem *m, const struct pt_py_layout *L, const char *utf8,
			    unsigned int *kind_out)
{
	static uint32_t cp[PT_PYSTR_MAX + 64];
	static uint8_t data[sizeof(cp)];
	size_t n = utf8_to_cps(utf8, cp, sizeof(cp) / sizeof(cp[0])), i;
	uint32_t max = 0;
	unsigned int kind;

	for (i = 0; i < n; i++)
		if (cp[i] > max)
			max = cp[i];
	if (max < 0x80) {
		if (kind_out)
			*kind_out = 0;
		return mk_str_raw(m, L, UNICODE_TYPE, S_ASCII_OK, n, utf8, n);
	}
	kind = max < 0x100 ? 1 : max < 0x10000 ? 2 : 4;
	for (i = 0; i < n; i++) {
		if (kind == 1)
			data[i] = (uint8_t)cp[i];
		else if (kind == 2)
			memcpy(data + 2 * i, &(uint16_t){ (uint16_t)cp[i] }, 2);
		else
			memcpy(data + 4 * i, &cp[i], 4);
	}
	if (kind_out)
		*kind_out = kind;
	return mk_str_raw(m, L, UNICODE_TYPE, S_UCS(kind), n, data, n * kind);
}

static uint64_t mk_str(struct fmem *m, const struct pt_py_layout *L, const char *utf8)
{
	return mk_str_kind(m, L, utf8, NULL);
}

/* A bytes object of len bytes (data may be NULL: left zero), with the
 * NUL CPython keeps after the data; the size field says size. */
static uint64_t mk_bytes_raw(struct fmem *m, const struct pt_py_layout *L, const void *data,
			     size_t len, int64_t size)
{
	uint64_t a = fmem_alloc(m, L->bytes_sval + len + 1);

	poke64(m, a, 1);
	poke64(m, a + L->ob_type, BYTES_TYPE);
	poke64(m, a + L->bytes_size, (uint64_t)size);
	poke64(m, a + 24, (uint64_t)-1); /* ob_shash */
	if (len && data)
		poke(m, a + L->bytes_sval, data, len);
	return a;
}

static uint64_t mk_bytes(struct fmem *m, const struct pt_py_layout *L, const void *data, size_t len)
{
	return mk_bytes_raw(m, L, data, len, (int64_t)len);
}

#define CODE_LEN 256

static uint64_t mk_code(struct fmem *m, const struct pt_py_layout *L, uint64_t filename,
			uint64_t name, uint64_t qualname, uint32_t firstlineno, uint32_t flags)
{
	uint64_t a = fmem_alloc(m, CODE_LEN);

	poke64(m, a, 1);
	poke64(m, a + L->ob_type, CODE_TYPE);
	poke64(m, a + L->code_filename, filename);
	poke64(m, a + L->code_name, name);
	if (L->code_qualname)
		poke64(m, a + L->code_qualname, qualname);
	poke32(m, a + L->code_firstlineno, firstlineno);
	poke32(m, a + L->code_flags, flags);
	return a;
}

static int read_code(const struct pt_tmem *t, const struct pt_py_layout *L, uint64_t addr,
		     struct pt_pycode *out)
{
	memset(out, 0xab, sizeof(*out)); /* everything must be (re)set */
	return pt_pycode__read(t, L, &types, addr, out);
}

#define for_each_version(m, L)                                                                     \
	for ((m) = PT_PY_MINOR_MIN; (m) <= PT_PY_MINOR_MAX; (m)++)                                 \
		if (!((L) = pt_py_layout__get(m)))                                                 \
			fail_msg("no layout for 3.%u", (m));                                       \
		else

/* ---- valid objects ---- */

static void test_ascii_every_version(void **state)
{
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		struct pt_pycode c;
		uint64_t fn, nm, qn, code;

		fmem_init(&m, &t);
		fn = mk_str(&m, L, "/x/a/b/c.py");
		nm = mk_str(&m, L, "probe_me");
		qn = mk_str(&m, L, "K.probe_me");
		code = mk_code(&m, L, fn, nm, qn, 42, PT_CO_OPTIMIZED | PT_CO_NEWLOCALS);

		assert_int_equal(read_code(&t, L, code, &c), 0);
		assert_string_equal(c.filename, "/x/a/b/c.py");
		assert_string_equal(c.name, "probe_me");
		/* the fingerprint BPF checks */
		assert_int_equal(c.filename_obj, fn);
		assert_int_equal(c.name_obj, nm);
		assert_int_equal(c.firstlineno, 42);
		assert_int_equal(c.flags, PT_CO_OPTIMIZED | PT_CO_NEWLOCALS);
		if (minor >= 11) {
			assert_true(c.has_qualname);
			assert_string_equal(c.qualname, "K.probe_me");
		} else {
			assert_false(c.has_qualname);
			assert_string_equal(c.qualname, "");
		}
		fmem_free(&m);
	}
}

static void test_empty_and_edge_strings(void **state)
{
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		struct pt_pycode c;
		uint64_t fn, nm, code;

		fmem_init(&m, &t);
		fn = mk_str(&m, L, "");
		nm = mk_str(&m, L, "~");
		/* the same str for name and qualname, as CPython often has */
		code = mk_code(&m, L, fn, nm, nm, 0xffffffffu, 0xffffffffu);
		assert_int_equal(read_code(&t, L, code, &c), 0);
		assert_string_equal(c.filename, "");
		assert_string_equal(c.name, "~");
		assert_int_equal(c.firstlineno, 0xffffffffu);
		assert_int_equal(c.flags, 0xffffffffu);
		assert_string_equal(c.qualname, minor >= 11 ? "~" : "");
		fmem_free(&m);
	}
}

static void test_non_ascii_every_version(void **state)
{
	static const struct {
		const char *text;
		unsigned int kind;
	} files[] = {
		{ "/srv/caf\xc3\xa9/na\xc3\xafve.py", 1 }, /* latin-1 */
		{ "/srv/\xc3\xbf\xc2\x80.py", 1 },	   /* U+00FF, U+0080 */
		{ "/srv/\xe2\x82\xac"
		  "uro/\xce\xa9mega.py",
		  2 },						       /* U+20AC, U+03A9 */
		{ "/srv/\xef\xbf\xbd\xef\xbf\xbf.py", 2 },	       /* U+FFFD, U+FFFF */
		{ "/srv/\xf0\x9f\x98\x80/emoji.py", 4 },	       /* U+1F600 */
		{ "/srv/\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80.py", 4 }, /* all widths */
		{ "/srv/\xf4\x8f\xbf\xbf.py", 4 },		       /* U+10FFFF */
	};
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			struct fmem m;
			struct pt_tmem t;
			struct pt_pycode c;
			uint64_t fn, nm, qn, code;
			unsigned int kind;

			fmem_init(&m, &t);
			fn = mk_str_kind(&m, L, files[i].text, &kind);
			assert_int_equal(kind, files[i].kind);
			nm = mk_str(&m, L,
				    "gr\xc3\xb6\xc3\x9f"
				    "e"); /* UCS1 name */
			qn = mk_str(&m, L,
				    "\xce\x9a.gr\xc3\xb6\xc3\x9f"
				    "e"); /* UCS2 qualname */
			code = mk_code(&m, L, fn, nm, qn, 7, 0);
			assert_int_equal(read_code(&t, L, code, &c), 0);
			assert_string_equal(c.filename, files[i].text);
			assert_string_equal(c.name, "gr\xc3\xb6\xc3\x9f"
						    "e");
			assert_string_equal(c.qualname, minor >= 11 ? "\xce\x9a.gr\xc3\xb6\xc3\x9f"
								      "e"
								    : "");
			fmem_free(&m);
		}
	}
}

/* A str read directly, bigger buffers than needed. */
static void test_pystr_read(void **state)
{
	const struct pt_py_layout *L = pt_py_layout__get(12);
	struct fmem m;
	struct pt_tmem t;
	char out[64];
	uint64_t s;

	fmem_init(&m, &t);
	s = mk_str(&m, L, "\xf0\x9f\x98\x80");
	assert_int_equal(pt_pystr__read(&t, L, &types, s, out, sizeof(out)), 0);
	assert_string_equal(out, "\xf0\x9f\x98\x80");
	s = mk_str(&m, L, "plain");
	assert_int_equal(pt_pystr__read(&t, L, &types, s, out, sizeof(out)), 0);
	assert_string_equal(out, "plain");
	fmem_free(&m);
}

/* ---- not what it claims to be ---- */

static void test_wrong_types(void **state)
{
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		struct pt_pycode c;
		uint64_t fn, nm, qn, code, bad, none;

		fmem_init(&m, &t);
		fn = mk_str(&m, L, "f.py");
		nm = mk_str(&m, L, "f");
		qn = mk_str(&m, L, "f");
		code = mk_code(&m, L, fn, nm, qn, 1, 0);
		assert_int_equal(read_code(&t, L, code, &c), 0);

		/* the code object's type */
		poke64(&m, code + L->ob_type, UNICODE_TYPE);
		assert_int_equal(read_code(&t, L, code, &c), -EINVAL);
		poke64(&m, code + L->ob_type, 0);
		assert_int_equal(read_code(&t, L, code, &c), -EINVAL);
		poke64(&m, code + L->ob_type, CODE_TYPE);
		/* a str where a code object should be */
		assert_int_equal(read_code(&t, L, fn, &c), -EINVAL);
		/* 3.13's shim frame has Py_None as its executable */
		none = fmem_alloc(&m, 16);
		poke64(&m, none, 1);
		poke64(&m, none + L->ob_type, NONE_TYPE);
		assert_int_equal(read_code(&t, L, none, &c), -EINVAL);

		/* each string's type */
		bad = mk_str_raw(&m, L, CODE_TYPE, S_ASCII_OK, 3, "bad", 3);
		poke64(&m, code + L->code_filename, bad);
		assert_int_equal(read_code(&t, L, code, &c), -EINVAL);
		poke64(&m, code + L->code_filename, fn);
		poke64(&m, code + L->code_name, bad);
		assert_int_equal(read_code(&t, L, code, &c), -EINVAL);
		poke64(&m, code + L->code_name, nm);
		/* the code object itself as a string */
		poke64(&m, code + L->code_filename, code);
		assert_int_equal(read_code(&t, L, code, &c), -EINVAL);
		poke64(&m, code + L->code_filename, fn);
		if (L->code_qualname) {
			poke64(&m, code + L->code_qualname, bad);
			assert_int_equal(read_code(&t, L, code, &c), -EINVAL);
			poke64(&m, code + L->code_qualname, qn);
		} else {
			/* no co_qualname before 3.11: whatever is at 128 is not read */
			poke64(&m, code + 128, bad);
			assert_int_equal(read_code(&t, L, code, &c), 0);
			poke64(&m, code + 128, 0xdead0000dead0000ull);
			assert_int_equal(read_code(&t, L, code, &c), 0);
		}
		assert_int_equal(read_code(&t, L, code, &c), 0);
		fmem_free(&m);
	}
}

static void test_malformed_strings(void **state)
{
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		char out[64];
		uint32_t u4[2];
		uint16_t u2[2];
		uint64_t s;

#define STR_EINVAL(state_, len_, data_, dlen_)                                                     \
	do {                                                                                       \
		s = mk_str_raw(&m, L, UNICODE_TYPE, (state_), (len_), (data_), (dlen_));           \
		assert_int_equal(pt_pystr__read(&t, L, &types, s, out, sizeof(out)), -EINVAL);     \
	} while (0)

		fmem_init(&m, &t);
		/* not compact: its data is behind a pointer, not read */
		STR_EINVAL(S_ASCII_OK & ~S_COMPACT, 3, "abc", 3);
		STR_EINVAL(S_UCS(1) & ~S_COMPACT, 3, "\xe9\xe9\xe9", 3);
		STR_EINVAL(S_KIND(1) | S_ASCII, 3, "abc", 3);
		STR_EINVAL(0, 0, NULL, 0);
		/* "ASCII" with a NUL or a high byte: garbage */
		STR_EINVAL(S_ASCII_OK, 3, "a\0c", 3);
		STR_EINVAL(S_ASCII_OK, 3, "ab\0", 3);
		STR_EINVAL(S_ASCII_OK, 1, "\0", 1);
		STR_EINVAL(S_ASCII_OK, 3,
			   "a\x80"
			   "c",
			   3);
		STR_EINVAL(S_ASCII_OK, 3, "ab\xff", 3);
		STR_EINVAL(S_ASCII_OK, 2, "\xc3\xa9", 2); /* UTF-8 is not ASCII */
		/* kinds other than 1, 2, 4 */
		STR_EINVAL(S_UCS(0), 3, "abc", 3);
		STR_EINVAL(S_UCS(3), 1, "abc", 3);
		STR_EINVAL(S_UCS(5), 1, "abcde", 5);
		STR_EINVAL(S_UCS(7), 1, "abcdefg", 7);
		/* code point 0 in every kind, beyond U+10FFFF in UCS4 */
		STR_EINVAL(S_UCS(1), 2, "\xe9\0", 2);
		u2[0] = 0x20ac;
		u2[1] = 0;
		STR_EINVAL(S_UCS(2), 2, u2, 4);
		u4[0] = 0x1f600;
		u4[1] = 0;
		STR_EINVAL(S_UCS(4), 2, u4, 8);
		u4[1] = 0x110000;
		STR_EINVAL(S_UCS(4), 2, u4, 8);
		u4[1] = 0xffffffffu;
		STR_EINVAL(S_UCS(4), 2, u4, 8);
		/* state's other bits do not matter */
		s = mk_str_raw(&m, L, UNICODE_TYPE, S_ASCII_OK | 0xffffff00u | 3, 2, "ok", 2);
		assert_int_equal(pt_pystr__read(&t, L, &types, s, out, sizeof(out)), 0);
		assert_string_equal(out, "ok");
#undef STR_EINVAL
		fmem_free(&m);
	}
}

/* ---- lengths ---- */

static void test_too_long(void **state)
{
	static char big[PT_PYSTR_MAX + 2];
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		struct pt_pycode c;
		uint64_t fn, nm, qn, code, s;
		char out[PT_PYSTR_MAX + 1];

		fmem_init(&m, &t);
		/* over PT_PYSTR_MAX: refused from the length alone (no data here) */
		s = mk_str_raw(&m, L, UNICODE_TYPE, S_ASCII_OK, PT_PYSTR_MAX + 1, NULL, 0);
		assert_int_equal(pt_pystr__read(&t, L, &types, s, out, sizeof(out)), -ENAMETOOLONG);
		s = mk_str_raw(&m, L, UNICODE_TYPE, S_UCS(4), PT_PYSTR_MAX + 1, NULL, 0);
		assert_int_equal(pt_pystr__read(&t, L, &types, s, out, sizeof(out)), -ENAMETOOLONG);
		s = mk_str_raw(&m, L, UNICODE_TYPE, S_UCS(2), UINT64_MAX, NULL, 0);
		assert_int_equal(pt_pystr__read(&t, L, &types, s, out, sizeof(out)), -ENAMETOOLONG);
		s = mk_str_raw(&m, L, UNICODE_TYPE, S_UCS(4), 1ull << 62, NULL, 0);
		assert_int_equal(pt_pystr__read(&t, L, &types, s, out, sizeof(out)), -ENAMETOOLONG);

		/* PT_PYSTR_MAX ASCII characters: the longest filename */
		memset(big, 'f', PT_PYSTR_MAX);
		big[PT_PYSTR_MAX] = 0;
		fn = mk_str(&m, L, big);
		nm = mk_str(&m, L, "n");
		qn = mk_str(&m, L, "q");
		code = mk_code(&m, L, fn, nm, qn, 1, 0);
		assert_int_equal(read_code(&t, L, code, &c), 0);
		assert_int_equal(strlen(c.filename), PT_PYSTR_MAX);
		/* PT_PYSTR_MAX characters that need more than PT_PYSTR_MAX bytes */
		for (size_t i = 0; i < PT_PYSTR_MAX; i += 4)
			memcpy(big + i, "\xf0\x9f\x98\x80", 4); /* 1024 emoji */
		fn = mk_str(&m, L, big);
		poke64(&m, code + L->code_filename, fn);
		assert_int_equal(read_code(&t, L, code, &c), 0);
		assert_string_equal(c.filename, big);
		memcpy(big, "\xc3\xa9", 2); /* 4096 UCS1 characters: 4097 bytes of UTF-8 */
		memset(big + 2, 'x', PT_PYSTR_MAX - 1);
		big[PT_PYSTR_MAX + 1] = 0;
		fn = mk_str(&m, L, big);
		poke64(&m, code + L->code_filename, fn);
		assert_int_equal(read_code(&t, L, code, &c), -ENAMETOOLONG);

		/* name[256], qualname[1024]: one less character fits */
		memset(big, 'n', 255);
		big[255] = 0;
		poke64(&m, code + L->code_filename, mk_str(&m, L, "f.py"));
		poke64(&m, code + L->code_name, mk_str(&m, L, big));
		assert_int_equal(read_code(&t, L, code, &c), 0);
		assert_int_equal(strlen(c.name), 255);
		big[255] = 'n';
		big[256] = 0;
		poke64(&m, code + L->code_name, mk_str(&m, L, big));
		assert_int_equal(read_code(&t, L, code, &c), -ENAMETOOLONG);
		poke64(&m, code + L->code_name, nm);
		if (L->code_qualname) {
			memset(big, 'q', 1024);
			big[1023] = 0;
			poke64(&m, code + L->code_qualname, mk_str(&m, L, big));
			assert_int_equal(read_code(&t, L, code, &c), 0);
			assert_int_equal(strlen(c.qualname), 1023);
			big[1023] = 'q';
			big[1024] = 0;
			poke64(&m, code + L->code_qualname, mk_str(&m, L, big));
			assert_int_equal(read_code(&t, L, code, &c), -ENAMETOOLONG);
		}
		fmem_free(&m);
	}
}

/*
 * Every output size for strings of every kind: the result fits with its
 * NUL or is -ENAMETOOLONG, and nothing past outlen is written. (The reader
 * may refuse a non-ASCII string up to 4 bytes before it stops fitting,
 * so only the clear cases are pinned down.)
 */
static void test_small_out_buffer(void **state)
{
	/* clang-format off */
	static const char *const texts[] = {
		"abcd",
		"caf\xc3\xa9",
		"\xe2\x82\xac\xe2\x82\xac",
		"a\xf0\x9f\x98\x80" "b",
		"",
	};
	/* clang-format on */
	const struct pt_py_layout *L = pt_py_layout__get(11);
	struct fmem m;
	struct pt_tmem t;
	size_t i, n, k;

	fmem_init(&m, &t);
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		uint64_t s = mk_str(&m, L, texts[i]);
		size_t need = strlen(texts[i]) + 1;
		bool ascii = true;

		for (k = 0; texts[i][k]; k++)
			if (texts[i][k] & 0x80)
				ascii = false;

		for (n = 0; n <= need + 8; n++) {
			char out[64];
			int ret;

			memset(out, 0x5a, sizeof(out));
			ret = pt_pystr__read(&t, L, &types, s, out, n);
			for (k = n; k < sizeof(out); k++)
				if (out[k] != 0x5a)
					fail_msg("\"%s\", outlen %zu: byte %zu written", texts[i],
						 n, k);
			if (n < need) {
				assert_int_equal(ret, -ENAMETOOLONG);
			} else if (ret == 0) {
				assert_string_equal(out, texts[i]);
			} else {
				assert_int_equal(ret, -ENAMETOOLONG);
				assert_true(n < need + 4);
			}
			/* an ASCII string fits exactly */
			if (n >= need && ascii)
				assert_int_equal(ret, 0);
		}
	}
	fmem_free(&m);
}

/* ---- memory that is not there ---- */

/* The reads a code object needs, end offset. */
static size_t code_needs(const struct pt_py_layout *L)
{
	size_t end = L->ob_type + 8;

#define NEED(off, len)                                                                             \
	if ((size_t)(off) + (len) > end)                                                           \
		end = (size_t)(off) + (len);
	NEED(L->code_filename, 8);
	NEED(L->code_name, 8);
	NEED(L->code_firstlineno, 4);
	NEED(L->code_flags, 4);
	if (L->code_qualname)
		NEED(L->code_qualname, 8);
#undef NEED
	return end;
}

#define CUT_BASE 0x40000000ull

/* A valid code object copied into a region cut after each byte. */
static void test_truncated_code(void **state)
{
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		size_t need = code_needs(L), cut;

		for (cut = 0; cut <= need + 8; cut++) {
			struct fmem m;
			struct pt_tmem t;
			struct pt_pycode c;
			uint64_t fn, nm, qn, code;
			int ret;

			fmem_init(&m, &t);
			fn = mk_str(&m, L, "/x/f.py");
			nm = mk_str(&m, L, "f");
			qn = mk_str(&m, L, "K.f");
			code = mk_code(&m, L, fn, nm, qn, 5, 3);
			memcpy(fmem_add(&m, CUT_BASE, cut), at(&m, code, cut), cut);
			ret = read_code(&t, L, CUT_BASE, &c);
			if (cut < need) {
				if (ret != -EFAULT)
					fail_msg("3.%u, code cut at %zu: got %d, want -EFAULT",
						 minor, cut, ret);
			} else {
				assert_int_equal(ret, 0);
				assert_string_equal(c.filename, "/x/f.py");
			}
			fmem_free(&m);
		}
	}
}

/* A valid str (each kind) copied into a region cut after each byte. */
static void test_truncated_str(void **state)
{
	static const char *const texts[] = { "/abc/def.py", "caf\xc3\xa9.py", "\xe2\x82\xac.py",
					     "\xf0\x9f\x98\x80.py", "" };
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
			struct fmem m0;
			struct pt_tmem t0;
			unsigned int kind;
			uint64_t s, len;
			size_t need, cut;

			fmem_init(&m0, &t0);
			s = mk_str_kind(&m0, L, texts[i], &kind);
			memcpy(&len, at(&m0, s + L->str_length, 8), 8);
			need = L->str_state + 4;
			if (len)
				need = kind ? L->compact_size + len * kind : L->ascii_size + len;
			for (cut = 0; cut <= need + 4; cut++) {
				struct fmem m;
				struct pt_tmem t;
				char out[64];
				int ret;

				fmem_init(&m, &t);
				memcpy(fmem_add(&m, CUT_BASE, cut), at(&m0, s, cut), cut);
				ret = pt_pystr__read(&t, L, &types, CUT_BASE, out, sizeof(out));
				if (cut < need) {
					if (ret != -EFAULT)
						fail_msg("3.%u, \"%s\" cut at %zu: got %d, want "
							 "-EFAULT",
							 minor, texts[i], cut, ret);
				} else {
					assert_int_equal(ret, 0);
					assert_string_equal(out, texts[i]);
				}
				fmem_free(&m);
			}
			fmem_free(&m0);
		}
	}
}

static void test_bad_addresses(void **state)
{
	static const uint64_t bad[] = {
		0,
		8,
		HEAP_BASE - 16, /* ob_type just before the heap */
		HEAP_BASE + HEAP_LEN - 8,
		HEAP_BASE + HEAP_LEN,
		UINT64_MAX,
		UINT64_MAX - 4,
		UINT64_MAX - 7,
		UINT64_MAX - 8,
		UINT64_MAX - 127,
		1ull << 63,
	};
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		struct pt_pycode c;
		char out[64];
		uint64_t fn, nm, qn, code;
		size_t i;

		fmem_init(&m, &t);
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			assert_int_equal(read_code(&t, L, bad[i], &c), -EFAULT);
			assert_int_equal(pt_pystr__read(&t, L, &types, bad[i], out, sizeof(out)),
					 -EFAULT);
		}
		/* ... and as the code object's string pointers */
		fn = mk_str(&m, L, "f.py");
		nm = mk_str(&m, L, "f");
		qn = mk_str(&m, L, "f");
		code = mk_code(&m, L, fn, nm, qn, 1, 0);
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			poke64(&m, code + L->code_filename, bad[i]);
			assert_int_equal(read_code(&t, L, code, &c), -EFAULT);
			poke64(&m, code + L->code_filename, fn);
			poke64(&m, code + L->code_name, bad[i]);
			assert_int_equal(read_code(&t, L, code, &c), -EFAULT);
			poke64(&m, code + L->code_name, nm);
			if (L->code_qualname) {
				poke64(&m, code + L->code_qualname, bad[i]);
				assert_int_equal(read_code(&t, L, code, &c), -EFAULT);
				poke64(&m, code + L->code_qualname, qn);
			}
		}
		assert_int_equal(read_code(&t, L, code, &c), 0);

		/* the reader's own errors come back as they are */
		m.force_err = -ESRCH;
		assert_int_equal(read_code(&t, L, code, &c), -ESRCH);
		assert_int_equal(pt_pystr__read(&t, L, &types, fn, out, sizeof(out)), -ESRCH);
		fmem_free(&m);
	}
}

/* ---- line tables ---- */

static int read_tab(const struct pt_tmem *t, const struct pt_py_layout *L, uint64_t code,
		    uint8_t **tab, size_t *len)
{
	int e;

	*tab = (uint8_t *)(uintptr_t)0x1; /* must be reset, also on error */
	*len = 12345;
	e = pt_pycode__read_linetable(t, L, code, tab, len);
	if (e) {
		assert_null(*tab);
		assert_int_equal(*len, 0);
	}
	return e;
}

static void test_linetable_every_version(void **state)
{
	static const uint8_t tab[] = { 0x80, 0x00, 0xd8, 0x04, 0x05, 0xf0, 0x00, 0x7f };
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		uint64_t fn, nm, code;
		uint8_t *got;
		size_t len;

		fmem_init(&m, &t);
		fn = mk_str(&m, L, "f.py");
		nm = mk_str(&m, L, "f");
		code = mk_code(&m, L, fn, nm, nm, 1, 0);
		poke64(&m, code + L->code_linetable, mk_bytes(&m, L, tab, sizeof(tab)));
		assert_int_equal(read_tab(&t, L, code, &got, &len), 0);
		assert_int_equal(len, sizeof(tab));
		assert_memory_equal(got, tab, sizeof(tab));
		free(got);
		/* an empty table (3.8's for a one-line function): a buffer
		 * to free all the same */
		poke64(&m, code + L->code_linetable, mk_bytes(&m, L, NULL, 0));
		assert_int_equal(read_tab(&t, L, code, &got, &len), 0);
		assert_int_equal(len, 0);
		assert_non_null(got);
		free(got);
		/* the other fields of the code object are not needed */
		poke64(&m, code + L->ob_type, NONE_TYPE);
		poke64(&m, code + L->code_filename, 0);
		assert_int_equal(read_tab(&t, L, code, &got, &len), 0);
		free(got);
		fmem_free(&m);
	}
}

#define BIG_BASE 0x100000000ull

static void test_linetable_sizes(void **state)
{
	static const int64_t bad_size[] = { -1, -2, INT64_MIN, -(int64_t)PT_PYLINETAB_MAX };
	static const int64_t too_big[] = { PT_PYLINETAB_MAX + 1ll, 1ll << 32, 1ll << 40,
					   INT64_MAX };
	const struct pt_py_layout *L = pt_py_layout__get(12);
	struct fmem m;
	struct pt_tmem t;
	uint64_t code, b;
	uint8_t *got, *big;
	size_t len, i;

	fmem_init(&m, &t);
	code = mk_code(&m, L, 0, 0, 0, 1, 0);
	for (i = 0; i < sizeof(bad_size) / sizeof(bad_size[0]); i++) {
		poke64(&m, code + L->code_linetable, mk_bytes_raw(&m, L, "ab", 2, bad_size[i]));
		assert_int_equal(read_tab(&t, L, code, &got, &len), -EINVAL);
	}
	for (i = 0; i < sizeof(too_big) / sizeof(too_big[0]); i++) {
		poke64(&m, code + L->code_linetable, mk_bytes_raw(&m, L, "ab", 2, too_big[i]));
		assert_int_equal(read_tab(&t, L, code, &got, &len), -E2BIG);
	}
	/* no NUL after the data: not a bytes object */
	b = mk_bytes(&m, L, "abc", 3);
	poke(&m, b + L->bytes_sval + 3, "x", 1);
	poke64(&m, code + L->code_linetable, b);
	assert_int_equal(read_tab(&t, L, code, &got, &len), -EINVAL);
	/* the size says less than is there: read what it says */
	poke64(&m, b + L->bytes_size, 2);
	assert_int_equal(read_tab(&t, L, code, &got, &len), -EINVAL); /* 'c' is no NUL */
	poke(&m, b + L->bytes_sval + 2, "", 1);
	assert_int_equal(read_tab(&t, L, code, &got, &len), 0);
	assert_int_equal(len, 2);
	assert_memory_equal(got, "ab", 2);
	free(got);

	/* exactly PT_PYLINETAB_MAX bytes, in a region of its own */
	big = fmem_add(&m, BIG_BASE, L->bytes_sval + PT_PYLINETAB_MAX + 1);
	memcpy(big + L->ob_type, &(uint64_t){ BYTES_TYPE }, 8);
	memcpy(big + L->bytes_size, &(uint64_t){ PT_PYLINETAB_MAX }, 8);
	for (i = 0; i < PT_PYLINETAB_MAX; i++)
		big[L->bytes_sval + i] = (uint8_t)(i * 7 + 1);
	poke64(&m, code + L->code_linetable, BIG_BASE);
	assert_int_equal(read_tab(&t, L, code, &got, &len), 0);
	assert_int_equal(len, PT_PYLINETAB_MAX);
	assert_memory_equal(got, big + L->bytes_sval, PT_PYLINETAB_MAX);
	free(got);
	/* one more does not fit the cap (nor the region) */
	memcpy(big + L->bytes_size, &(uint64_t){ PT_PYLINETAB_MAX + 1 }, 8);
	assert_int_equal(read_tab(&t, L, code, &got, &len), -E2BIG);
	fmem_free(&m);
}

/* A code object and a table, each copied into a region cut after each byte. */
static void test_linetable_truncated(void **state)
{
	static const uint8_t tab[] = { 6, 0, 4, 1, 2, 0x80 };
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		size_t need_code = L->code_linetable + 8;
		size_t need_bytes = L->bytes_sval + sizeof(tab) + 1; /* and the NUL */
		size_t cut;

		for (cut = 0; cut <= need_code + 4; cut++) {
			struct fmem m;
			struct pt_tmem t;
			uint64_t code;
			uint8_t *got;
			size_t len;
			int ret;

			fmem_init(&m, &t);
			code = mk_code(&m, L, 0, 0, 0, 1, 0);
			poke64(&m, code + L->code_linetable, mk_bytes(&m, L, tab, sizeof(tab)));
			memcpy(fmem_add(&m, CUT_BASE, cut), at(&m, code, cut), cut);
			ret = read_tab(&t, L, CUT_BASE, &got, &len);
			if (cut < need_code) {
				if (ret != -EFAULT)
					fail_msg("3.%u, code cut at %zu: got %d", minor, cut, ret);
			} else {
				assert_int_equal(ret, 0);
				free(got);
			}
			fmem_free(&m);
		}
		for (cut = 0; cut <= need_bytes + 4; cut++) {
			struct fmem m;
			struct pt_tmem t;
			uint64_t code, b;
			uint8_t *got;
			size_t len;
			int ret;

			fmem_init(&m, &t);
			code = mk_code(&m, L, 0, 0, 0, 1, 0);
			b = mk_bytes(&m, L, tab, sizeof(tab));
			memcpy(fmem_add(&m, CUT_BASE, cut), at(&m, b, cut), cut);
			poke64(&m, code + L->code_linetable, CUT_BASE);
			ret = read_tab(&t, L, code, &got, &len);
			/* the terminator is read too */
			if (cut < need_bytes) {
				if (ret != -EFAULT)
					fail_msg("3.%u, bytes cut at %zu: got %d", minor, cut, ret);
			} else {
				assert_int_equal(ret, 0);
				assert_int_equal(len, sizeof(tab));
				assert_memory_equal(got, tab, sizeof(tab));
				free(got);
			}
			fmem_free(&m);
		}
	}
}

static void test_linetable_bad_addresses(void **state)
{
	/* clang-format off */
	static const uint64_t bad[] = {
		/* (HEAP_BASE - 16 would be a valid empty bytes object: the
		 * heap's first bytes are zero) */
		0, 8, HEAP_BASE - 40, HEAP_BASE + HEAP_LEN - 8, HEAP_BASE + HEAP_LEN,
		UINT64_MAX, UINT64_MAX - 7, UINT64_MAX - 31, UINT64_MAX - 39, 1ull << 63,
	};
	/* clang-format on */
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		uint64_t code, b;
		uint8_t *got;
		size_t len, i;

		fmem_init(&m, &t);
		code = mk_code(&m, L, 0, 0, 0, 1, 0);
		b = mk_bytes(&m, L, "\x80\x00", 2);
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			assert_int_equal(read_tab(&t, L, bad[i], &got, &len), -EFAULT);
			poke64(&m, code + L->code_linetable, bad[i]);
			assert_int_equal(read_tab(&t, L, code, &got, &len), -EFAULT);
		}
		poke64(&m, code + L->code_linetable, b);
		assert_int_equal(read_tab(&t, L, code, &got, &len), 0);
		free(got);
		m.force_err = -ESRCH;
		assert_int_equal(read_tab(&t, L, code, &got, &len), -ESRCH);
		fmem_free(&m);
	}
}

/* ---- real interpreters ---- */

struct live {
	pid_t pid;
	int in, out; /* its stdin (ours to close), its stdout */
	unsigned long long code, code_type, str_type, firstlineno, flags, filename_obj, name_obj,
		runtime;
	unsigned int major, minor;
	char filename[PT_PYSTR_MAX + 1];
	unsigned long long mod_code; /* the script's own <module> code */
	char tab_hex[2][4096];	     /* line tables of probe_me and <module> */
};

/* The victim: prints where things are, then waits for stdin to close.
 * probe_me's def is on line 3 (kept in sync with LIVE_LINE). */
static const char live_script[] =
	"import sys\n"
	"class K:\n"
	"    def probe_me(): pass\n"
	"c = K.probe_me.__code__\n"
	"try:\n"
	"    import ctypes\n"
	"    rt = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime'))\n"
	"except Exception:\n"
	"    rt = 0\n"
	"def tab(co):\n"
	"    t = co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab\n"
	"    return t.hex() or '-'\n"
	"mc = sys._getframe().f_code\n"
	"print(id(c), id(type(c)), id(str), c.co_firstlineno, c.co_flags,\n"
	"      id(c.co_filename), id(c.co_name), rt, *sys.version_info[:2],\n"
	"      tab(c), id(mc), tab(mc), flush=True)\n"
	"sys.stdin.read()\n";
#define LIVE_LINE 3

static int live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct live *v = ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(v->pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Start python (script file, or -c when script is NULL); 0 or -1. */
static int live_start(struct live *v, const char *python, const char *script)
{
	int pin[2], pout[2];
	struct pollfd p;
	char line[12288];
	ssize_t n;
	size_t got = 0;

	memset(v, 0, sizeof(*v));
	assert_int_equal(pipe(pin), 0);
	assert_int_equal(pipe(pout), 0);
	v->pid = fork();
	assert_true(v->pid >= 0);
	if (!v->pid) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		/* -I: no user site or PYTHON* variables; -X utf8: the path
		 * decodes the same whatever the locale */
		if (script)
			execl(python, python, "-I", "-X", "utf8", script, (char *)NULL);
		else
			execl(python, python, "-I", "-X", "utf8", "-c", live_script, (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	v->in = pin[1];
	v->out = pout[0];

	/* one line, within 30 s */
	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		p.fd = v->out;
		p.events = POLLIN;
		if (poll(&p, 1, 30000) <= 0)
			return -1;
		n = read(v->out, line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	line[got] = 0;
	if (sscanf(line, "%llu %llu %llu %llu %llu %llu %llu %llu %u %u %4095s %llu %4095s",
		   &v->code, &v->code_type, &v->str_type, &v->firstlineno, &v->flags,
		   &v->filename_obj, &v->name_obj, &v->runtime, &v->major, &v->minor, v->tab_hex[0],
		   &v->mod_code, v->tab_hex[1]) != 13) {
		print_error("unexpected output: %s", line);
		return -1;
	}
	snprintf(v->filename, sizeof(v->filename), "%s", script ? script : "<string>");
	return 0;
}

static void live_stop(struct live *v)
{
	int status;

	if (v->in > 0)
		close(v->in);
	if (v->out > 0)
		close(v->out);
	if (v->pid > 0) {
		assert_int_equal(waitpid(v->pid, &status, 0), v->pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

/* The table pt_pycode__read_linetable() reads equals the one the child
 * printed ("-": empty). */
static void live_check_table(const struct pt_tmem *t, const struct pt_py_layout *L, uint64_t code,
			     const char *hex, const char *what)
{
	size_t n = strcmp(hex, "-") ? strlen(hex) / 2 : 0, len, i;
	uint8_t *tab;
	int e = pt_pycode__read_linetable(t, L, code, &tab, &len);

	if (e)
		fail_msg("%s: pt_pycode__read_linetable: %d", what, e);
	if (len != n)
		fail_msg("%s: %zu bytes, the interpreter has %zu", what, len, n);
	for (i = 0; i < n; i++) {
		unsigned int byte;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
		if (tab[i] != byte)
			fail_msg("%s: byte %zu is 0x%02x, the interpreter has 0x%02x", what, i,
				 tab[i], byte);
	}
	free(tab);
}

/* One interpreter, one way of running the script: everything checked. */
static void live_check(const char *python, const char *script, unsigned int *minor_out)
{
	const struct pt_py_layout *L;
	struct pt_py_layout dl;
	struct pt_pytypes ty;
	struct pt_pycode c;
	struct pt_tmem t;
	struct live v;
	char what[64] = "table";

	if (live_start(&v, python, script))
		fail_msg("%s did not start or print its addresses", python);
	t.read = live_read;
	t.ctx = &v;
	assert_int_equal(v.major, 3);
	L = pt_py_layout__get(v.minor);
	if (!L)
		fail_msg("%s is 3.%u: no layout", python, v.minor);
	/* 3.13: also from the live _Py_DebugOffsets when ctypes found it */
	if (v.minor == 13 && v.runtime) {
		uint8_t b[PT_PY_DEBUG_OFFSETS_LEN];
		uint32_t hex;
		char err[256];

		assert_int_equal(live_read(&v, v.runtime, b, sizeof(b)), 0);
		if (pt_py_layout__from_debug_offsets(&dl, b, sizeof(b), &hex, err, sizeof(err)))
			fail_msg("%s: live _Py_DebugOffsets: %s", python, err);
		assert_int_equal(hex >> 16, 0x030d);
		assert_int_equal(dl.code_filename, L->code_filename);
		assert_int_equal(dl.code_qualname, L->code_qualname);
		assert_int_equal(dl.code_firstlineno, L->code_firstlineno);
		assert_int_equal(dl.ascii_size, L->ascii_size);
		assert_int_equal(dl.compact_size, L->compact_size);
		assert_int_equal(dl.code_linetable, L->code_linetable);
		assert_int_equal(dl.bytes_size, L->bytes_size);
		assert_int_equal(dl.bytes_sval, L->bytes_sval);
		L = &dl;
		snprintf(what, sizeof(what), "_Py_DebugOffsets 0x%08x", hex);
	}
	ty.code_type = v.code_type;
	ty.unicode_type = v.str_type;
	memset(&c, 0xab, sizeof(c));
	if (pt_pycode__read(&t, L, &ty, v.code, &c))
		fail_msg("%s (3.%u): pt_pycode__read failed", python, v.minor);
	assert_string_equal(c.filename, v.filename);
	assert_string_equal(c.name, "probe_me");
	assert_int_equal(c.firstlineno, LIVE_LINE);
	assert_int_equal(c.firstlineno, v.firstlineno);
	assert_int_equal(c.flags, v.flags);
	assert_true(c.flags & PT_CO_OPTIMIZED);
	assert_int_equal(c.filename_obj, v.filename_obj);
	assert_int_equal(c.name_obj, v.name_obj);
	if (v.minor >= 11) {
		assert_true(c.has_qualname);
		assert_string_equal(c.qualname, "K.probe_me");
	} else {
		assert_false(c.has_qualname);
	}
	/* line tables, and what they say: probe_me is all on its line */
	live_check_table(&t, L, v.code, v.tab_hex[0], "probe_me");
	live_check_table(&t, L, v.mod_code, v.tab_hex[1], "<module>");
	{
		uint8_t *tab;
		size_t len;

		assert_int_equal(pt_pycode__read_linetable(&t, L, v.code, &tab, &len), 0);
		assert_int_equal(pt_pyline__last_line(v.minor, tab, len, c.firstlineno), LIVE_LINE);
		assert_int_equal(pt_pyline__line(v.minor, tab, len, c.firstlineno, 0), LIVE_LINE);
		free(tab);
	}
	print_message("  %s 3.%u (%s): %s:%u %s ok, line tables of %zu and %zu bytes\n", python,
		      v.minor, what, c.filename, c.firstlineno,
		      v.minor >= 11 ? "K.probe_me" : "probe_me", strlen(v.tab_hex[0]) / 2,
		      strlen(v.tab_hex[1]) / 2);
	/* the str type is not the code type, and vice versa */
	ty.code_type = v.str_type;
	assert_int_equal(pt_pycode__read(&t, L, &ty, v.code, &c), -EINVAL);
	ty.code_type = v.code_type;
	ty.unicode_type = v.code_type;
	assert_int_equal(pt_pycode__read(&t, L, &ty, v.code, &c), -EINVAL);
	live_stop(&v);
	*minor_out = v.minor;
}

static const char *pyenv_root(char *buf, size_t len)
{
	const char *r = getenv("PYENV_ROOT"), *home = getenv("HOME");

	if (r && *r)
		return r;
	snprintf(buf, len, "%s/.pyenv", home ? home : "/root");
	return buf;
}

/* Script directories whose names make co_filename a UCS1, UCS2, UCS4 str. */
/* clang-format off */
static const char *const live_dirs[] = {
	"caf\xc3\xa9",
	"\xe2\x82\xac" "uro",
	"caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80",
};
/* clang-format on */
#define NDIRS (sizeof(live_dirs) / sizeof(live_dirs[0]))

static void test_live_interpreters(void **state)
{
	char root[4096], pat[4200], dir[] = "/tmp/pt_pycode_XXXXXX", sub[NDIRS][256],
				    script[NDIRS][512];
	const char *pythons[16], *proot;
	unsigned int minor;
	glob_t g[PT_PY_MINOR_MAX + 1];
	bool have_g[PT_PY_MINOR_MAX + 1] = { false };
	size_t n = 0, i, d;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	for (d = 0; d < NDIRS; d++) {
		snprintf(sub[d], sizeof(sub[d]), "%s/%s", dir, live_dirs[d]);
		assert_int_equal(mkdir(sub[d], 0755), 0);
		snprintf(script[d], sizeof(script[d]), "%s/victim.py", sub[d]);
		f = fopen(script[d], "w");
		assert_non_null(f);
		fputs(live_script, f);
		assert_int_equal(fclose(f), 0);
	}

	proot = pyenv_root(root, sizeof(root));
	for (minor = PT_PY_MINOR_MIN; minor <= PT_PY_MINOR_MAX; minor++) {
		snprintf(pat, sizeof(pat), "%s/versions/3.%u.*/bin/python3", proot, minor);
		if (glob(pat, 0, NULL, &g[minor]) != 0) {
			print_message("note: no %s: 3.%u not checked live\n", pat, minor);
			continue;
		}
		have_g[minor] = true;
		for (i = 0; i < g[minor].gl_pathc && n < 15; i++)
			pythons[n++] = g[minor].gl_pathv[i];
	}
	if (access("/usr/bin/python3.11", X_OK) == 0)
		pythons[n++] = "/usr/bin/python3.11";
	else
		print_message("note: no /usr/bin/python3.11\n");

	for (i = 0; i < n; i++) {
		unsigned int m1, m2;

		live_check(pythons[i], NULL, &m1);
		for (d = 0; d < NDIRS; d++) {
			live_check(pythons[i], script[d], &m2);
			assert_int_equal(m1, m2);
		}
	}
	for (minor = PT_PY_MINOR_MIN; minor <= PT_PY_MINOR_MAX; minor++)
		if (have_g[minor])
			globfree(&g[minor]);
	for (d = 0; d < NDIRS; d++) {
		unlink(script[d]);
		rmdir(sub[d]);
	}
	rmdir(dir);
	if (!n) {
		print_message("note: no CPython 3.8-3.13 found: nothing checked live\n");
		skip();
	}
}

/* ---- frame slots of argument names (pt_pycode__slots) ---- */

/* A tuple whose ob_size says size and that holds n items. */
static uint64_t mk_tuple(struct fmem *m, const struct pt_py_layout *L, const uint64_t *items,
			 size_t n, uint64_t size)
{
	uint64_t a = fmem_alloc(m, 24 + n * 8);

	poke64(m, a, 1);
	poke64(m, a + L->ob_type, 0x7f1200005000ull); /* tuple type: not checked */
	poke64(m, a + 16, size);
	for (size_t i = 0; i < n; i++)
		poke64(m, a + 24 + i * 8, items[i]);
	return a;
}

/* A code object whose co_varnames / co_localsplusnames is that tuple. */
static uint64_t mk_code_names(struct fmem *m, const struct pt_py_layout *L, uint64_t tuple)
{
	uint64_t fn = mk_str(m, L, "e.py"), nm = mk_str(m, L, "step");
	uint64_t code = mk_code(m, L, fn, nm, nm, 1, PT_CO_OPTIMIZED | PT_CO_NEWLOCALS);

	assert_true(L->code_varnames && L->code_varnames + 8 <= CODE_LEN);
	poke64(m, code + L->code_varnames, tuple);
	return code;
}

static int slots_of(const struct pt_tmem *t, const struct pt_py_layout *L, uint64_t code,
		    const char *const *names, size_t n, int16_t *slots)
{
	for (size_t k = 0; k < n; k++)
		slots[k] = 1234; /* must be (re)set */
	return pt_pycode__slots(t, L, &types, code, names, n, slots);
}

static void test_slots_every_version(void **state)
{
	static const char *const names[] = { "seq_lens", "self", "missing", NULL,
					     "tmp",	 "reqs", "größe",   "self" };
	static const int16_t want[] = { 2, 0, -1, -1, 4, 1, 5, 0 };
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		uint64_t items[6], code;
		int16_t slots[8];

		fmem_init(&m, &t);
		items[0] = mk_str(&m, L, "self");
		items[1] = mk_str(&m, L, "reqs");
		items[2] = mk_str(&m, L, "seq_lens");
		items[3] = mk_str(&m, L, "self"); /* a name twice: the first wins */
		items[4] = mk_str(&m, L, "tmp");
		items[5] = mk_str(&m, L, "größe"); /* UCS1, not ASCII */
		code = mk_code_names(&m, L, mk_tuple(&m, L, items, 6, 6));
		assert_int_equal(slots_of(&t, L, code, names, 8, slots), 0);
		assert_memory_equal(slots, want, sizeof(want));

		/* no names asked: nothing read, nothing written */
		assert_int_equal(pt_pycode__slots(&t, L, &types, code, names, 0, slots), 0);
		/* an empty tuple (a function without arguments or locals) */
		poke64(&m, code + L->code_varnames, mk_tuple(&m, L, NULL, 0, 0));
		assert_int_equal(slots_of(&t, L, code, names, 8, slots), 0);
		for (size_t k = 0; k < 8; k++)
			assert_int_equal(slots[k], -1);
		fmem_free(&m);
	}
}

/* Items that are not names (not a str, a malformed or too long str, an
 * unreadable pointer) are skipped; the names after them still count. */
static void test_slots_skip_non_str(void **state)
{
	static const char *const names[] = { "a", "b", "c", "d" };
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		uint64_t items[8], none, code;
		int16_t slots[4];
		char longname[300];

		fmem_init(&m, &t);
		none = fmem_alloc(&m, 32);
		poke64(&m, none, 1);
		poke64(&m, none + L->ob_type, NONE_TYPE);
		memset(longname, 'x', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		items[0] = none;
		items[1] = mk_str(&m, L, "a");
		items[2] = mk_bytes(&m, L, "b", 1);   /* bytes b'b': not a str */
		items[3] = 0;			      /* NULL */
		items[4] = HEAP_BASE + HEAP_LEN + 64; /* unreadable */
		items[5] = mk_str(&m, L, longname);   /* longer than any name read */
		/* a str whose state says not compact */
		items[6] = mk_str_raw(&m, L, UNICODE_TYPE, S_ASCII | S_KIND(1), 1, "c", 1);
		items[7] = mk_str(&m, L, "d");
		code = mk_code_names(&m, L, mk_tuple(&m, L, items, 8, 8));
		assert_int_equal(slots_of(&t, L, code, names, 4, slots), 0);
		assert_int_equal(slots[0], 1);
		assert_int_equal(slots[1], -1);
		assert_int_equal(slots[2], -1);
		assert_int_equal(slots[3], 7);
		fmem_free(&m);
	}
}

static void test_slots_errors(void **state)
{
	static const char *const names[] = { "a", "b" };
	unsigned int minor;
	const struct pt_py_layout *L;

	for_each_version(minor, L)
	{
		struct fmem m;
		struct pt_tmem t;
		struct pt_py_layout nolayout;
		uint64_t items[2], tuple, code, end;
		int16_t slots[2];

		fmem_init(&m, &t);
		items[0] = mk_str(&m, L, "a");
		items[1] = mk_str(&m, L, "b");
		tuple = mk_tuple(&m, L, items, 2, 2);
		code = mk_code_names(&m, L, tuple);
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), 0);
		assert_int_equal(slots[1], 1);

		/* an implausible size: slots are s16 in BPF */
		poke64(&m, tuple + 16, 0x8000);
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), -E2BIG);
		assert_int_equal(slots[0], -1);
		assert_int_equal(slots[1], -1);
		poke64(&m, tuple + 16, UINT64_MAX); /* a negative ob_size */
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), -E2BIG);
		assert_int_equal(slots[0], -1);

		/* a size the memory does not hold: the items past the end of
		 * the fake memory cannot be read */
		end = HEAP_BASE + HEAP_LEN - 24 - 16; /* room for 2 items */
		poke64(&m, end + 16, 3);
		poke64(&m, end + 24, items[0]);
		poke64(&m, end + 32, items[1]);
		poke64(&m, code + L->code_varnames, end);
		/* (slots are not to be used after an error: "a" may be there) */
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), -EFAULT);
		poke64(&m, end + 16, 2);
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), 0);
		assert_int_equal(slots[1], 1);

		/* the tuple pointer: NULL, unreadable */
		poke64(&m, code + L->code_varnames, 0);
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), -EFAULT);
		poke64(&m, code + L->code_varnames, HEAP_BASE + HEAP_LEN);
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), -EFAULT);
		poke64(&m, code + L->code_varnames, UINT64_MAX - 8);
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), -EFAULT);
		poke64(&m, code + L->code_varnames, tuple);
		poke64(&m, tuple + 16, 2);

		/* the code object itself */
		assert_int_equal(slots_of(&t, L, 0, names, 2, slots), -EFAULT);
		assert_int_equal(slots_of(&t, L, UINT64_MAX - 4, names, 2, slots), -EFAULT);
		assert_int_equal(slots_of(&t, L, HEAP_BASE + HEAP_LEN, names, 2, slots), -EFAULT);
		assert_int_equal(slots[0], -1);

		/* the reader's own errors come back as they are */
		m.force_err = -ESRCH;
		assert_int_equal(slots_of(&t, L, code, names, 2, slots), -ESRCH);
		assert_int_equal(slots[0], -1);
		m.force_err = 0;

		/* a layout without the names tuple */
		nolayout = *L;
		nolayout.code_varnames = 0;
		assert_int_equal(slots_of(&t, &nolayout, code, names, 2, slots), -EINVAL);
		assert_int_equal(slots[0], -1);
		assert_int_equal(slots[1], -1);

		assert_int_equal(slots_of(&t, L, code, names, 2, slots), 0);
		assert_int_equal(slots[0], 0);
		fmem_free(&m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ascii_every_version),
		cmocka_unit_test(test_empty_and_edge_strings),
		cmocka_unit_test(test_non_ascii_every_version),
		cmocka_unit_test(test_pystr_read),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_malformed_strings),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_small_out_buffer),
		cmocka_unit_test(test_truncated_code),
		cmocka_unit_test(test_truncated_str),
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test(test_linetable_every_version),
		cmocka_unit_test(test_linetable_sizes),
		cmocka_unit_test(test_linetable_truncated),
		cmocka_unit_test(test_linetable_bad_addresses),
		cmocka_unit_test(test_slots_every_version),
		cmocka_unit_test(test_slots_skip_non_str),
		cmocka_unit_test(test_slots_errors),
		cmocka_unit_test(test_live_interpreters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
