// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_escape__term (util/escape.c): every message
 * proftrace prints carries bytes others chose (targets files, a target's
 * symbols and paths). Checked: the length it says is the length it
 * writes; the output has no control byte but newline and tab, no DEL, no
 * C1 control, and is valid UTF-8; a short buffer holds a prefix of the
 * whole, NUL-terminated. Build and run with `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

/* Valid UTF-8 without controls: the length of the character at s, or 0. */
static size_t clean_char(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	uint32_t cp = len == 1 ? s[0] : s[0] & (0x7f >> len);

	if ((s[0] >= 0x80 && s[0] < 0xc2) || s[0] > 0xf4 || n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) ||
	    (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t need = pt_escape__term(NULL, 0, (const char *)data, size), cut;
	char *full = malloc(need + 1), *part;

	CHECK(full);
	CHECK(need >= size && need <= 4 * size);
	CHECK(pt_escape__term(full, need + 1, (const char *)data, size) == need);
	CHECK(strlen(full) == need);
	for (size_t i = 0, k; i < need; i += k) {
		k = clean_char((const unsigned char *)full + i, need - i);
		CHECK(k);
	}
	cut = size ? data[0] % (need + 1) : 0;
	part = malloc(cut + 1);
	CHECK(part);
	CHECK(pt_escape__term(part, cut + 1, (const char *)data, size) == need);
	CHECK(strlen(part) <= cut && !memcmp(part, full, strlen(part)));
	/* cut only where a whole character (or escape) would not fit */
	CHECK(need <= cut || strlen(part) + 4 > cut);
	free(part);
	free(full);
	return 0;
}
