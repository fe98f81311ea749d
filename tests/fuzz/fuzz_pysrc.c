// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for python/pysrc.c: the source files of a 3.8-3.10
 * target are read to name its code objects, and they may hold anything
 * (another encoding, a file replaced since import, binary). Build and
 * run with `make fuzz`.
 *
 * Input: [0..1] firstlineno (little-endian, modulo 512 unless bit 15 is
 * set), [2] which co_name (a fixed kind, or the first identifier of the
 * source), [3] the output size (0..255), the rest the source. Beyond
 * sanitizer findings, it traps when the name is not NUL-terminated inside
 * the output, or is not empty on error.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "python/pysrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const kinds[] = { "<lambda>",   "<listcomp>", "<setcomp>",
					     "<dictcomp>", "<genexpr>",	 "<module>",
					     "f",	   "C",		 "inner" };
	char out[256], name[64];
	const char *src, *co_name;
	unsigned int line, outlen;
	size_t len, k = 0;
	int e;

	if (size < 4)
		return 0;
	line = (unsigned int)data[0] | (unsigned int)data[1] << 8;
	if (!(line & 0x8000))
		line %= 512;
	src = (const char *)data + 4;
	len = size - 4;
	if (data[2] < sizeof(kinds) / sizeof(kinds[0])) {
		co_name = kinds[data[2]];
	} else {
		/* the first identifier-like run of the source */
		size_t i = 0;

		while (i < len && !(isalpha((unsigned char)src[i]) || src[i] == '_'))
			i++;
		while (i < len && k + 1 < sizeof(name) &&
		       (isalnum((unsigned char)src[i]) || src[i] == '_'))
			name[k++] = src[i++];
		name[k] = 0;
		co_name = k ? name : "x";
	}
	outlen = data[3];
	memset(out, 'Z', sizeof(out));
	e = pt_pysrc__qualname(src, len, line, co_name, out, outlen);
	if (outlen) {
		if (!memchr(out, 0, outlen))
			__builtin_trap();
		if (e && out[0])
			__builtin_trap();
	}
	if (e && e != -ENOENT && e != -ENAMETOOLONG && e != -E2BIG && e != -EINVAL)
		__builtin_trap();
	return 0;
}
