// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_prologue: hand-written byte sequences for every case, then the real
 * first bytes of the fx_asm_* functions in the fixture binaries (read
 * through pt_elf, so a wrong file offset shows up here too). Those
 * functions are top-level asm in tests/fixtures/elf_fixture.c, so their
 * encodings below are known without running a disassembler.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "elfsyms.h"
#include "prologue.h"

#define ENDBR 0xf3, 0x0f, 0x1e, 0xfa
#define NOP5 0x0f, 0x1f, 0x44, 0x00, 0x00

struct case_ {
	const char *what;
	uint8_t code[16];
	size_t len;
	int skip_endbr;
	unsigned int skip;
	enum pt_insn_class cls;
};

static const struct case_ cases[] = {
	{ "push rbp", { 0x55, 0x48, 0x89, 0xe5 }, 4, 1, 0, PT_INSN_EMULATED },
	{ "push rax", { 0x50 }, 1, 1, 0, PT_INSN_EMULATED },
	{ "push rdi", { 0x57 }, 1, 1, 0, PT_INSN_EMULATED },
	{ "push rbx", { 0x53, 0xc3 }, 2, 0, 0, PT_INSN_EMULATED },
	{ "push r12", { 0x41, 0x54, 0x55 }, 3, 1, 0, PT_INSN_EMULATED },
	{ "push r15", { 0x41, 0x57 }, 2, 1, 0, PT_INSN_EMULATED },
	/* REX.W push: not what the kernel emulates. */
	{ "rex.w push", { 0x48, 0x55 }, 2, 1, 0, PT_INSN_SINGLESTEP },
	{ "41 non-push", { 0x41, 0x89, 0xf8 }, 3, 1, 0, PT_INSN_SINGLESTEP },
	{ "pop rbp", { 0x5d, 0xc3 }, 2, 1, 0, PT_INSN_SINGLESTEP },
	{ "mov rdi,rax", { 0x48, 0x89, 0xf8, 0xc3 }, 4, 1, 0, PT_INSN_SINGLESTEP },
	{ "sub rsp", { 0x48, 0x83, 0xec, 0x08 }, 4, 1, 0, PT_INSN_SINGLESTEP },
	{ "ret", { 0xc3 }, 1, 1, 0, PT_INSN_SINGLESTEP },
	{ "nop5", { NOP5, 0x55 }, 6, 1, 0, PT_INSN_NOP5 },
	{ "nop5 exact", { NOP5 }, 5, 0, 0, PT_INSN_NOP5 },
	{ "nop4", { 0x0f, 0x1f, 0x40, 0x00 }, 4, 1, 0, PT_INSN_SINGLESTEP },
	{ "nop6 (66 prefix)", { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 6, 1, 0, PT_INSN_SINGLESTEP },
	{ "endbr push", { ENDBR, 0x55, 0x48, 0x89, 0xe5 }, 7, 1, 4, PT_INSN_EMULATED },
	{ "endbr push r12", { ENDBR, 0x41, 0x54 }, 6, 1, 4, PT_INSN_EMULATED },
	{ "endbr nop5", { ENDBR, NOP5 }, 9, 1, 4, PT_INSN_NOP5 },
	/* Skipping endbr64 only to single-step the next one buys nothing. */
	{ "endbr mov", { ENDBR, 0x48, 0x89, 0xf8 }, 7, 1, 0, PT_INSN_SINGLESTEP },
	{ "endbr sub", { ENDBR, 0x48, 0x83, 0xec, 0x08 }, 8, 1, 0, PT_INSN_SINGLESTEP },
	{ "endbr endbr push", { ENDBR, ENDBR, 0x55 }, 9, 1, 0, PT_INSN_SINGLESTEP },
	{ "endbr, skip off", { ENDBR, 0x55 }, 5, 0, 0, PT_INSN_SINGLESTEP },
	{ "endbr32 push", { 0xf3, 0x0f, 0x1e, 0xfb, 0x55 }, 5, 1, 0, PT_INSN_SINGLESTEP },
	/* Too short to know. */
	{ "empty", { 0 }, 0, 1, 0, PT_INSN_UNKNOWN },
	{ "41 alone", { 0x41 }, 1, 1, 0, PT_INSN_UNKNOWN },
	{ "half nop5", { 0x0f, 0x1f, 0x44 }, 3, 1, 0, PT_INSN_UNKNOWN },
	{ "half endbr", { 0xf3, 0x0f }, 2, 1, 0, PT_INSN_UNKNOWN },
	/* ...but not when what we have already rules the pattern out. */
	{ "f3 90 (pause)", { 0xf3, 0x90 }, 2, 1, 0, PT_INSN_SINGLESTEP },
	{ "0f 1f 40", { 0x0f, 0x1f, 0x40 }, 3, 1, 0, PT_INSN_SINGLESTEP },
	/* endbr64 and nothing after it: probe the endbr64 itself. */
	{ "endbr only", { ENDBR }, 4, 1, 0, PT_INSN_SINGLESTEP },
	{ "endbr 41", { ENDBR, 0x41 }, 5, 1, 0, PT_INSN_SINGLESTEP },
	{ "endbr half nop5", { ENDBR, 0x0f, 0x1f }, 6, 1, 0, PT_INSN_SINGLESTEP },
	/* Shorter len than the bytes present: only len counts. */
	{ "len cuts push r12", { 0x41, 0x54 }, 1, 1, 0, PT_INSN_UNKNOWN },
	{ "len cuts after endbr", { ENDBR, 0x55 }, 4, 1, 0, PT_INSN_SINGLESTEP },
};

static void test_cases(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *c = &cases[i];
		struct pt_probe_site s = pt_prologue__site(c->code, c->len, c->skip_endbr);

		if (s.skip != c->skip || s.cls != c->cls)
			fail_msg("%s: got skip=%u %s, want skip=%u %s", c->what, s.skip,
				 pt_insn_class__str(s.cls), c->skip, pt_insn_class__str(c->cls));
	}
}

static void test_null(void **state)
{
	struct pt_probe_site s = pt_prologue__site(NULL, 0, 1);

	assert_int_equal(s.skip, 0);
	assert_int_equal(s.cls, PT_INSN_UNKNOWN);
}

static void test_str(void **state)
{
	assert_string_equal(pt_insn_class__str(PT_INSN_EMULATED), "emulated");
	assert_string_equal(pt_insn_class__str(PT_INSN_NOP5), "nop5");
	assert_string_equal(pt_insn_class__str(PT_INSN_SINGLESTEP), "single-step");
	assert_string_equal(pt_insn_class__str(PT_INSN_UNKNOWN), "unknown");
	assert_string_equal(pt_insn_class__str((enum pt_insn_class)77), "unknown");
}

/* ---- real code in the fixture binaries ---- */

struct real {
	const char *sym;
	uint8_t bytes[8]; /* the encoding the assembler must have produced */
	size_t nbytes;
	unsigned int skip;
	enum pt_insn_class cls;
	unsigned int skip_off; /* skip when skip_endbr=0 is always 0 */
	enum pt_insn_class cls_off;
};

static const struct real reals[] = {
	{ "fx_asm_push_rbp", { 0x55, 0x48, 0x89, 0xe5 }, 4, 0, PT_INSN_EMULATED, 0,
	  PT_INSN_EMULATED },
	{ "fx_asm_push_r12", { 0x41, 0x54, 0x48, 0x89, 0xf8 }, 5, 0, PT_INSN_EMULATED, 0,
	  PT_INSN_EMULATED },
	{ "fx_asm_mov_first", { 0x48, 0x89, 0xf8, 0xc3 }, 4, 0, PT_INSN_SINGLESTEP, 0,
	  PT_INSN_SINGLESTEP },
	{ "fx_asm_endbr_push", { ENDBR, 0x55, 0x48, 0x89, 0xf8 }, 8, 4, PT_INSN_EMULATED, 0,
	  PT_INSN_SINGLESTEP },
	{ "fx_asm_endbr_mov", { ENDBR, 0x48, 0x89, 0xf8, 0xc3 }, 8, 0, PT_INSN_SINGLESTEP, 0,
	  PT_INSN_SINGLESTEP },
	{ "fx_asm_nop5", { NOP5, 0x48, 0x89, 0xf8 }, 8, 0, PT_INSN_NOP5, 0, PT_INSN_NOP5 },
};

static const struct pt_sym *find_sym(const struct pt_elf *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->nsyms; i++)
		if (!strcmp(e->syms[i].name, name))
			return &e->syms[i];
	return NULL;
}

static void check_real(const char *file)
{
	const char *dir = getenv("PT_FIXTURES");
	char path[PATH_MAX];
	struct pt_elf *e;
	size_t i;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".output/fixtures", file);
	err = pt_elf__open(&e, path);
	if (err)
		fail_msg("pt_elf__open(%s): %s (make the fixtures first)", path, strerror(-err));

	for (i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
		const struct real *r = &reals[i];
		const struct pt_sym *s = find_sym(e, r->sym);
		struct pt_probe_site site;
		uint8_t code[16];

		if (!s)
			fail_msg("%s: no symbol %s", file, r->sym);
		assert_int_equal(pt_elf__read(e, s->file_off, code, sizeof(code)), sizeof(code));
		if (memcmp(code, r->bytes, r->nbytes))
			fail_msg("%s: %s does not start with the expected bytes", file, r->sym);

		site = pt_prologue__site(code, sizeof(code), 1);
		if (site.skip != r->skip || site.cls != r->cls)
			fail_msg("%s: %s: skip=%u %s, want skip=%u %s", file, r->sym, site.skip,
				 pt_insn_class__str(site.cls), r->skip, pt_insn_class__str(r->cls));
		site = pt_prologue__site(code, sizeof(code), 0);
		assert_int_equal(site.skip, r->skip_off);
		assert_int_equal(site.cls, r->cls_off);
	}
	pt_elf__free(e);
}

static void test_real_pie(void **state)
{
	check_real("elf_pie");
}

static void test_real_nopie(void **state)
{
	check_real("elf_nopie");
}

static void test_real_stripped(void **state)
{
	check_real("elf_stripped");
}

static void test_real_lib(void **state)
{
	check_real("libelf_fixture.so");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_null),
		cmocka_unit_test(test_str),
		cmocka_unit_test(test_real_pie),
		cmocka_unit_test(test_real_nopie),
		cmocka_unit_test(test_real_stripped),
		cmocka_unit_test(test_real_lib),
	};

	return cmocka_run_group_tests_name("prologue", tests, NULL, NULL);
}
