// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_flame__read_folded(): folded files come from
 * other tools and from hand edits, so any bytes may reach the reader. Past
 * the reader it checks what the writers promise for whatever was read:
 * folded text reads back to the same bytes, one line per stack, and the
 * SVG is valid UTF-8 with no control bytes and balanced groups. Build and
 * run with `make fuzz`.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/flame.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

/* The checks are not under test; instrumented, they took half the time. */
#define NO_COVERAGE __attribute__((no_sanitize("coverage"), noinline))

NO_COVERAGE static size_t count(const char *s, size_t len, const char *what)
{
	size_t n = 0, wl = strlen(what);
	const char *p = s, *end = s + len;

	while ((p = memmem(p, (size_t)(end - p), what, wl))) {
		n++;
		p += wl;
	}
	return n;
}

/* XML 1.0 text: strict UTF-8, no C0 control but \t and \n, no U+FFFE/F. */
NO_COVERAGE static void check_svg_text(const unsigned char *s, size_t len)
{
	size_t i = 0, n, k;
	uint32_t c;

	while (i < len) {
		if (s[i] < 0x80) {
			CHECK(s[i] >= 0x20 || s[i] == '\n' || s[i] == '\t');
			i++;
			continue;
		}
		n = s[i] >= 0xf0 ? 4 : s[i] >= 0xe0 ? 3 : s[i] >= 0xc2 ? 2 : 0;
		CHECK(n && s[i] <= 0xf4 && i + n <= len);
		c = s[i] & (0x7f >> n);
		for (k = 1; k < n; k++) {
			CHECK((s[i + k] & 0xc0) == 0x80);
			c = c << 6 | (s[i + k] & 0x3f);
		}
		CHECK(c >= (n == 2 ? 0x80u : n == 3 ? 0x800u : 0x10000u));
		CHECK(c <= 0x10ffff && (c < 0xd800 || c > 0xdfff) && c != 0xfffe && c != 0xffff);
		i += n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_flame_svg_opts o = { .title = "fuzz", .unit = "µs" };
	char err[48], *t1 = NULL, *t2 = NULL, *svg = NULL;
	size_t l1 = 0, l2 = 0, ls = 0;
	struct pt_flame *fl, *back;
	FILE *f;
	int ret;

	if (!size)
		return 0;
	fl = pt_flame__new();
	back = pt_flame__new();
	CHECK(fl && back);
	f = fmemopen((void *)data, size, "r");
	CHECK(f);
	/* A small err buffer: truncated messages must stay NUL-terminated. */
	memset(err, 'x', sizeof(err));
	ret = pt_flame__read_folded(fl, f, err, sizeof(err));
	fclose(f);
	if (ret) {
		CHECK(ret == -EINVAL || ret == -EOVERFLOW || ret == -ENOMEM);
		CHECK(memchr(err, '\0', sizeof(err)) && !strncmp(err, "line ", 5));
	} else {
		CHECK(!err[0]);
	}

	/* Whatever was read (all of it, or the lines before the bad one)
	 * writes out and reads back to the same bytes. */
	f = open_memstream(&t1, &l1);
	CHECK(f);
	CHECK(!pt_flame__write_folded(fl, f));
	fclose(f);
	CHECK(count(t1, l1, "\n") == pt_flame__nstacks(fl));
	CHECK(!l1 || t1[l1 - 1] == '\n');
	CHECK(!memchr(t1, '\0', l1) && !memchr(t1, '\r', l1));
	if (l1) {
		f = fmemopen(t1, l1, "r");
		CHECK(f);
		CHECK(!pt_flame__read_folded(back, f, err, sizeof(err)));
		fclose(f);
	}
	CHECK(pt_flame__total(back) == pt_flame__total(fl));
	CHECK(pt_flame__nstacks(back) == pt_flame__nstacks(fl));
	f = open_memstream(&t2, &l2);
	CHECK(f);
	CHECK(!pt_flame__write_folded(back, f));
	fclose(f);
	CHECK(l1 == l2 && !memcmp(t1, t2, l1));

	/* Width from the input, so narrow-frame cut-offs move around. */
	o.width = 200 + (unsigned int)(data[0] * 37u);
	f = open_memstream(&svg, &ls);
	CHECK(f);
	CHECK(!pt_flame__write_svg(fl, f, &o));
	fclose(f);
	check_svg_text((const unsigned char *)svg, ls);
	CHECK(count(svg, ls, "<g>") + count(svg, ls, "<g ") == count(svg, ls, "</g>"));
	CHECK(count(svg, ls, "<title>") == count(svg, ls, "</title>"));
	CHECK(count(svg, ls, "<svg ") == 1 && count(svg, ls, "</svg>") == 1);

	free(t1);
	free(t2);
	free(svg);
	pt_flame__free(fl);
	pt_flame__free(back);
	return 0;
}
