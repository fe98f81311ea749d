// SPDX-License-Identifier: BSD-2-Clause
/*
 * util/escape: what reaches the terminal. Control bytes (but newline and
 * tab), DEL, C1 controls and invalid UTF-8 become \xNN; valid UTF-8 stays;
 * a short buffer is cut at a character's boundary. And pt_msg() escapes
 * what it prints.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/escape.h"
#include "util/log.h"

static const char *esc(const char *s, size_t n)
{
	static char buf[512];
	size_t need = pt_escape__term(buf, sizeof(buf), s, n);

	assert_int_equal(need, strlen(buf));
	return buf;
}

#define ESC(lit) esc(lit, sizeof(lit) - 1)

static void test_escapes(void **state)
{
	assert_string_equal(ESC("plain text\tand a tab\n"), "plain text\tand a tab\n");
	/* a terminal's escape sequences: shown, not obeyed */
	assert_string_equal(ESC("red \x1b[31mX\x1b]0;title\x07"),
			    "red \\x1b[31mX\\x1b]0;title\\x07");
	assert_string_equal(ESC("cr\rbs\bdel\x7f nul\0end"), "cr\\x0dbs\\x08del\\x7f nul\\x00end");
	/* valid UTF-8 stays: names in any language */
	assert_string_equal(ESC("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80"),
			    "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80");
	/* invalid: a stray continuation, a lone lead, overlong, a surrogate,
	 * past U+10FFFF, cut short; each byte once */
	assert_string_equal(ESC("\x80"), "\\x80");
	assert_string_equal(ESC("\xff\xfe"), "\\xff\\xfe");
	assert_string_equal(ESC("\xc0\xaf"), "\\xc0\\xaf");
	assert_string_equal(ESC("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
	assert_string_equal(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	assert_string_equal(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
	assert_string_equal(ESC("\xe6\x97"), "\\xe6\\x97");
	/* a bad byte does not eat a good character after it */
	assert_string_equal(ESC("\xe6\xc3\xa9"), "\\xe6\xc3\xa9");
	/* C1 controls, as UTF-8 (U+009B is CSI to some terminals) */
	assert_string_equal(ESC("\xc2\x9b"
				"2J"),
			    "\\xc2\\x9b2J");
	assert_string_equal(ESC("\xc2\xa0"), "\xc2\xa0");
}

static void test_short_buffer(void **state)
{
	char buf[8];

	/* the length it needs, what fits, whole characters */
	assert_int_equal(pt_escape__term(buf, sizeof(buf),
					 "ab\x1b"
					 "cd",
					 5),
			 8);
	assert_string_equal(buf, "ab\\x1bc");
	assert_int_equal(pt_escape__term(buf, 4, "ab\x1b", 3), 6);
	assert_string_equal(buf, "ab");
	assert_int_equal(pt_escape__term(buf, 4, "a\xc3\xa9\xc3\xa9", 5), 5);
	assert_string_equal(buf, "a\xc3\xa9");
	assert_int_equal(pt_escape__term(NULL, 0, "\x01", 1), 4);
	assert_int_equal(pt_escape__term(buf, sizeof(buf), "", 0), 0);
	assert_string_equal(buf, "");
}

/* pt_msg(): what it prints is escaped, its own newline kept; a long one
 * whole. */
static void test_msg_escaped(void **state)
{
	const char *want = "proftrace: t.conf: error 'bad\\x1b[2J\\xff'\n";
	char path[] = "/tmp/pt-escape-XXXXXX", got[70000];
	static char big[66000];
	FILE *f;
	size_t n;
	int fd = mkstemp(path), saved = dup(2);

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	pt_msg("proftrace: %s: error '%s'\n", "t.conf", "bad\x1b[2J\xff");
	memset(big, 'y', sizeof(big) - 1);
	pt_msg("%s\n", big);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(fd, "r");
	rewind(f);
	n = fread(got, 1, sizeof(got) - 1, f);
	got[n] = 0;
	fclose(f);
	unlink(path);
	assert_int_equal(strncmp(got, want, strlen(want)), 0);
	assert_int_equal(n, strlen(want) + sizeof(big));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_short_buffer),
		cmocka_unit_test(test_msg_escaped),
	};

	return cmocka_run_group_tests_name("escape", tests, NULL, NULL);
}
