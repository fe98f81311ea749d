// SPDX-License-Identifier: BSD-2-Clause
#include <stdint.h>
#include <string.h>

#include "escape.h"

/* The length of the valid UTF-8 character at s (n bytes left): 1-4, or
 * 0 (invalid: a stray continuation, overlong, a surrogate, past U+10FFFF,
 * cut short). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	/* C1 controls: some terminals take U+009B as CSI */
	if (cp >= 0x80 && cp <= 0x9f)
		return 0;
	return len;
}

size_t pt_escape__term(char *dst, size_t dstlen, const char *src, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t out = 0, kept = 0, i = 0;

	while (i < n) {
		size_t len = utf8_len(s + i, n - i), w;
		const char *from = (const char *)s + i;
		char esc[4];

		if (len == 1 && (s[i] < 0x20 || s[i] == 0x7f) && s[i] != '\n' && s[i] != '\t')
			len = 0;
		if (len) {
			w = len;
			i += len;
		} else {
			/* one byte of a bad sequence: the next may start a good one */
			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hex[s[i] >> 4];
			esc[3] = hex[s[i] & 15];
			from = esc;
			w = 4;
			i++;
		}
		/* whole characters only, and room for the NUL */
		if (kept == out && out + w < dstlen) {
			memcpy(dst + out, from, w);
			kept += w;
		}
		out += w;
	}
	if (dstlen)
		dst[kept] = 0;
	return out;
}
