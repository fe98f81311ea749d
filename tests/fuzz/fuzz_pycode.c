// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_pycode__read(), pt_pystr__read() and
 * pt_py_layout__from_debug_offsets(): code objects, strings and
 * _Py_DebugOffsets are all read from the target's memory.
 * Build and run with `make fuzz`.
 *
 * The input is a memory image mapped at IMAGE_BASE; its first bytes also
 * steer the harness:
 *   [0]    CPython 3.(8 + n % 6) layout
 *   [1..2] code object at IMAGE_BASE + u16 (little-endian)
 *   [3]    bit 0: take the layout from _Py_DebugOffsets at [8..] when it
 *          parses; bit 1: also read the str at [5..6] into [4] bytes
 *   [4]    output size for that str (0..255)
 *   [5..6] str at IMAGE_BASE + u16
 *   [7]    unused
 * Seeds: tests/fuzz/corpus/pycode/.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/pycode.h"
#include "python/pylayout.h"

#define IMAGE_BASE 0x10000ull
#define HDR 8

static const struct pt_pytypes types = {
	.code_type = 0x7f1200001000ull,
	.unicode_type = 0x7f1200002000ull,
};

struct image {
	const uint8_t *data;
	size_t size;
};

/* The only way the code under test sees memory: anything not entirely
 * inside the image fails, so ASan flags any other access. */
static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;
	uint64_t off;

	if (addr < IMAGE_BASE)
		return -EFAULT;
	off = addr - IMAGE_BASE;
	if (off > im->size || len > im->size - off)
		return -EFAULT;
	memcpy(buf, im->data + off, len);
	return 0;
}

static uint16_t u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = { data, size };
	struct pt_tmem m = { image_read, &im };
	const struct pt_py_layout *L;
	struct pt_py_layout dl;
	struct pt_pycode c;
	uint32_t hex = 0;
	char err[40];
	int ret;

	if (size < HDR)
		return 0;
	L = pt_py_layout__get(PT_PY_MINOR_MIN + data[0] % (PT_PY_MINOR_MAX - PT_PY_MINOR_MIN + 1));
	if (!L)
		__builtin_trap();

	/* a short err buffer: messages must be cut, not overflow it */
	ret = pt_py_layout__from_debug_offsets(&dl, data + HDR, size - HDR, &hex, err, sizeof(err));
	if (ret == 0) {
		if (dl.minor != 13 || (hex >> 16) != 0x030d || dl.ob_type != 8 ||
		    dl.code_name != dl.code_filename + 8 || dl.compact_size != dl.ascii_size + 16)
			__builtin_trap();
		/* Not checked: code_filename + 8 <= code size etc.; an offset
		 * near 2^64 wraps that check (reported, not fixed yet). */
		if (data[3] & 1)
			L = &dl;
	} else if (ret != -EINVAL || !err[0] || strlen(err) >= sizeof(err)) {
		__builtin_trap();
	}

	ret = pt_pycode__read(&m, L, &types, IMAGE_BASE + u16(data + 1), &c);
	if (ret == 0) {
		if (strlen(c.filename) > PT_PYSTR_MAX || strlen(c.name) >= sizeof(c.name) ||
		    strlen(c.qualname) >= sizeof(c.qualname) ||
		    c.has_qualname != (L->code_qualname != 0) || (!c.has_qualname && c.qualname[0]))
			__builtin_trap();
	}

	if (data[3] & 2) {
		/* exactly data[4] bytes on the heap, so ASan sees any overrun */
		size_t outlen = data[4];
		char *out = malloc(outlen ? outlen : 1);

		if (!out)
			return 0;
		ret = pt_pystr__read(&m, L, &types, IMAGE_BASE + u16(data + 5), out, outlen);
		if (ret == 0 && strnlen(out, outlen) >= outlen)
			__builtin_trap();
		free(out);
	}
	return 0;
}
