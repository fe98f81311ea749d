// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pycode.h"

/* PyASCIIObject.state bits, the same on 3.8-3.13: interned:2 kind:3
 * compact:1 ascii:1. */
#define ST_KIND(s) (((s) >> 2) & 7u)
#define ST_COMPACT(s) (((s) >> 5) & 1u)
#define ST_ASCII(s) (((s) >> 6) & 1u)

/* len bytes at base + off; the addresses come from the target: no wrap */
static int rd(const struct pt_tmem *m, uint64_t base, uint64_t off, void *buf, size_t len)
{
	uint64_t addr = base + off;

	if (!base || addr < base || addr + len < addr)
		return -EFAULT;
	return m->read(m->ctx, addr, buf, len);
}

static size_t utf8_len(uint32_t c)
{
	return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

static size_t put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

int pt_pystr__read(const struct pt_tmem *m, const struct pt_py_layout *L,
		   const struct pt_pytypes *t, uint64_t addr, char *out, size_t outlen)
{
	uint8_t raw[PT_PYSTR_MAX * 4]; /* 16 KiB: the widest string we accept */
	uint64_t type, length;
	uint32_t state, kind;
	size_t o = 0;
	int e;

	if (!outlen)
		return -ENAMETOOLONG;
	out[0] = 0;
	if ((e = rd(m, addr, L->ob_type, &type, sizeof(type))) ||
	    (e = rd(m, addr, L->str_length, &length, sizeof(length))) ||
	    (e = rd(m, addr, L->str_state, &state, sizeof(state))))
		return e;
	if (type != t->unicode_type || !ST_COMPACT(state))
		return -EINVAL;
	if (length > PT_PYSTR_MAX)
		return -ENAMETOOLONG;
	if (ST_ASCII(state)) {
		if (length + 1 > outlen)
			return -ENAMETOOLONG;
		if (length && (e = rd(m, addr, L->ascii_size, out, length)))
			return e;
		out[length] = 0;
		/* ASCII by its own flag: a NUL or high byte means garbage */
		for (size_t i = 0; i < length; i++)
			if (!out[i] || (uint8_t)out[i] >= 0x80)
				return -EINVAL;
		return 0;
	}
	kind = ST_KIND(state);
	if (kind != 1 && kind != 2 && kind != 4)
		return -EINVAL;
	if (length && (e = rd(m, addr, L->compact_size, raw, length * kind)))
		return e;
	for (size_t i = 0; i < length; i++) {
		uint32_t c;

		if (kind == 1)
			c = raw[i];
		else if (kind == 2)
			c = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else
			memcpy(&c, raw + 4 * i, 4);
		if (!c || c > 0x10ffff)
			return -EINVAL;
		if (o + utf8_len(c) + 1 > outlen)
			return -ENAMETOOLONG;
		o += put_utf8(out + o, c);
	}
	out[o] = 0;
	return 0;
}

int pt_pycode__read_head(const struct pt_tmem *m, const struct pt_py_layout *L,
			 const struct pt_pytypes *t, uint64_t addr, struct pt_pycode *out)
{
	uint64_t type;
	int e;

	memset(out, 0, offsetof(struct pt_pycode, filename));
	out->filename[0] = out->name[0] = out->qualname[0] = 0;
	if ((e = rd(m, addr, L->ob_type, &type, sizeof(type))))
		return e;
	if (type != t->code_type)
		return -EINVAL;
	if ((e = rd(m, addr, L->code_filename, &out->filename_obj, 8)) ||
	    (e = rd(m, addr, L->code_name, &out->name_obj, 8)) ||
	    (e = rd(m, addr, L->code_firstlineno, &out->firstlineno, 4)) ||
	    (e = rd(m, addr, L->code_flags, &out->flags, 4)) ||
	    (L->code_qualname && (e = rd(m, addr, L->code_qualname, &out->qualname_obj, 8))))
		return e;
	return 0;
}

int pt_pycode__read_names(const struct pt_tmem *m, const struct pt_py_layout *L,
			  const struct pt_pytypes *t, struct pt_pycode *c)
{
	int e;

	if ((e = pt_pystr__read(m, L, t, c->filename_obj, c->filename, sizeof(c->filename))) ||
	    (e = pt_pystr__read(m, L, t, c->name_obj, c->name, sizeof(c->name))))
		return e;
	if (L->code_qualname) {
		e = pt_pystr__read(m, L, t, c->qualname_obj, c->qualname, sizeof(c->qualname));
		if (e)
			return e;
		c->has_qualname = true;
	}
	return 0;
}

int pt_pycode__read(const struct pt_tmem *m, const struct pt_py_layout *L,
		    const struct pt_pytypes *t, uint64_t addr, struct pt_pycode *out)
{
	int e = pt_pycode__read_head(m, L, t, addr, out);

	return e ? e : pt_pycode__read_names(m, L, t, out);
}

int pt_pycode__read_linetable(const struct pt_tmem *m, const struct pt_py_layout *L,
			      uint64_t code_addr, uint8_t **tab, size_t *len)
{
	uint64_t obj;
	int64_t size;
	uint8_t *buf;
	int e;

	*tab = NULL;
	*len = 0;
	if ((e = rd(m, code_addr, L->code_linetable, &obj, sizeof(obj))) ||
	    (e = rd(m, obj, L->bytes_size, &size, sizeof(size))))
		return e;
	if (size < 0)
		return -EINVAL;
	if ((uint64_t)size > PT_PYLINETAB_MAX)
		return -E2BIG;
	/* with the terminator every bytes object has: a cheap check that
	 * this is one */
	buf = malloc((size_t)size + 1);
	if (!buf)
		return -ENOMEM;
	if ((e = rd(m, obj, L->bytes_sval, buf, (size_t)size + 1))) {
		free(buf);
		return e;
	}
	if (buf[size]) {
		free(buf);
		return -EINVAL;
	}
	*tab = buf;
	*len = (size_t)size;
	return 0;
}

/*
 * The frame slot of each name in names[] (argument or local) for the code
 * object at code_addr: its index in co_varnames (< 3.11) or
 * co_localsplusnames, -1 when absent. Both tuples list the arguments
 * first, in the order the frame holds them.
 */
int pt_pycode__slots(const struct pt_tmem *m, const struct pt_py_layout *L,
		     const struct pt_pytypes *t, uint64_t code_addr, const char *const *names,
		     size_t n, int16_t *slots)
{
	uint64_t tup, size, item;
	char s[256];
	int e;

	for (size_t k = 0; k < n; k++)
		slots[k] = -1;
	if (!L->code_varnames)
		return -EINVAL;
	if ((e = rd(m, code_addr, L->code_varnames, &tup, sizeof(tup))) ||
	    (e = rd(m, tup, 16, &size, sizeof(size)))) /* ob_size */
		return e;
	if (size > 0x7fff) /* slots are s16 in BPF; real code has a few hundred */
		return -E2BIG;
	for (uint64_t i = 0; i < size; i++) {
		if ((e = rd(m, tup, 24 + i * 8, &item, sizeof(item)))) /* ob_item[i] */
			return e;
		if (pt_pystr__read(m, L, t, item, s, sizeof(s)))
			continue; /* not a short str: no name we look for */
		for (size_t k = 0; k < n; k++)
			if (slots[k] < 0 && names[k] && !strcmp(names[k], s))
				slots[k] = (int16_t)i;
	}
	return 0;
}
