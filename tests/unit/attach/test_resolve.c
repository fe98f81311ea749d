// SPDX-License-Identifier: BSD-2-Clause
/*
 * Resolver: config probes x mapped objects -> functions. Runs on the fixture
 * binaries (tests/fixtures/elf_fixture.c) with hand-made maps, so object
 * globs, `exe`, dedupe, aliases, ifuncs and late libraries are all checked
 * against files whose symbols we know.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config/config.h"
#include "attach/elfsyms.h"
#include "attach/maps.h"
#include "attach/resolve.h"

static char pie[PATH_MAX], lib[PATH_MAX];

/* Absolute paths, as /proc/PID/maps has them. */
static void fixture_paths(void)
{
	const char *dir = getenv("PT_FIXTURES");
	char p[PATH_MAX];

	if (!dir)
		dir = ".output/fixtures";
	snprintf(p, sizeof(p), "%s/elf_pie", dir);
	assert_non_null(realpath(p, pie));
	snprintf(p, sizeof(p), "%s/libelf_fixture.so", dir);
	assert_non_null(realpath(p, lib));
}

/* Maps with the PIE as the executable, and optionally the library. */
static void make_maps(struct pt_maps *m, bool with_lib)
{
	char buf[4 * PATH_MAX];
	FILE *f;

	snprintf(buf, sizeof(buf),
		 "55d0c0000000-55d0c0001000 r--p 00000000 fe:01 100 %s\n"
		 "55d0c0001000-55d0c0002000 r-xp 00001000 fe:01 100 %s\n"
		 "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
		 "%s%s%s"
		 "7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]\n",
		 pie, pie, with_lib ? "7f1000000000-7f1000001000 r-xp 00001000 fe:01 200 " : "",
		 with_lib ? lib : "", with_lib ? "\n" : "");
	f = fmemopen(buf, strlen(buf), "r");
	assert_non_null(f);
	assert_int_equal(pt_maps__parse(m, f), 0);
	fclose(f);
}

static void parse(struct pt_config *cfg, const char *text)
{
	char err[512] = "";
	FILE *f = fmemopen((void *)text, strlen(text), "r");

	assert_non_null(f);
	if (pt_config__parse(cfg, f, "t.conf", err, sizeof(err)))
		fail_msg("config: %s", err);
	fclose(f);
}

static struct pt_resolver *resolver(const struct pt_config *cfg)
{
	struct pt_resolver_opts o = { .cfg = cfg, .exe = pie };
	struct pt_resolver *r = pt_resolver__new(&o);

	assert_non_null(r);
	return r;
}

static const struct pt_func *by_symbol(const struct pt_resolver *r, const char *sym)
{
	for (size_t i = 0; i < pt_resolver__nfuncs(r); i++)
		if (!strcmp(pt_resolver__func(r, i)->symbol, sym))
			return pt_resolver__func(r, i);
	return NULL;
}

/* The offset the ELF reader computes independently (tested against the
 * kernel's loader in test_elfsyms). */
static uint64_t elf_off(const char *path, const char *sym)
{
	struct pt_elf *e;
	uint64_t off = 0;

	assert_int_equal(pt_elf__open(&e, path), 0);
	for (size_t i = 0; i < e->nsyms; i++)
		if (!strcmp(e->syms[i].name, sym))
			off = e->syms[i].file_off;
	pt_elf__free(e);
	assert_true(off != 0);
	return off;
}

static void test_exe_and_roles(void **state)
{
	struct pt_config cfg;
	struct pt_maps m = { 0 };
	struct pt_resolver *r;
	const struct pt_func *f;
	char err[512];

	parse(&cfg, "step native:exe:fx_mul\n"
		    "bucket a.x native:exe:fx_mul native:exe:fx_asm_push_rbp\n"
		    "bucket b.y native:elf_pie:fx_asm_push_rbp\n");
	make_maps(&m, false);
	r = resolver(&cfg);
	assert_int_equal(pt_resolver__update(r, &m, true, err, sizeof(err)), 2);
	assert_int_equal(pt_resolver__nfuncs(r), 2);
	f = by_symbol(r, "fx_mul");
	assert_non_null(f);
	assert_true(f->is_step);
	assert_int_equal(f->bucket_mask, 1);
	assert_string_equal(f->object, pie);
	assert_int_equal(f->file_off, elf_off(pie, "fx_mul"));
	/* Two probes (exe and a basename glob) name one function: one row,
	 * both buckets. */
	f = by_symbol(r, "fx_asm_push_rbp");
	assert_non_null(f);
	assert_false(f->is_step);
	assert_int_equal(f->bucket_mask, 3);
	assert_int_equal(f->site.cls, PT_INSN_EMULATED);
	/* A second scan of the same maps adds nothing. */
	assert_int_equal(pt_resolver__update(r, &m, true, err, sizeof(err)), 0);
	pt_resolver__free(r);
	pt_maps__free(&m);
	pt_config__free(&cfg);
}

static void test_aliases_attach_once(void **state)
{
	struct pt_config cfg;
	struct pt_maps m = { 0 };
	struct pt_resolver *r;
	const struct pt_func *f;
	char err[512];

	/* The glob matches both fx_add and fx_add_alias: one address. */
	parse(&cfg, "bucket a.x native:exe:fx_add*\n");
	make_maps(&m, false);
	r = resolver(&cfg);
	assert_int_equal(pt_resolver__update(r, &m, true, err, sizeof(err)), 1);
	f = pt_resolver__func(r, 0);
	assert_string_equal(f->symbol, "fx_add");
	assert_int_equal(f->naliases, 1);
	assert_string_equal(f->aliases[0], "fx_add_alias");
	pt_resolver__free(r);
	pt_maps__free(&m);
	pt_config__free(&cfg);
}

static void test_unknown_symbol_closest(void **state)
{
	struct pt_config cfg;
	struct pt_maps m = { 0 };
	struct pt_resolver *r;
	char err[1024];

	parse(&cfg, "step native:exe:fx_mull\n");
	make_maps(&m, false);
	r = resolver(&cfg);
	assert_int_equal(pt_resolver__update(r, &m, true, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "t.conf:1:6: error: no function matches 'fx_mull' in "));
	assert_non_null(strstr(err, "(closest: fx_mul,"));
	assert_null(strchr(err, '\n'));
	/* Not strict (a later scan): no error, nothing found. */
	pt_resolver__free(r);
	r = resolver(&cfg);
	assert_int_equal(pt_resolver__update(r, &m, false, err, sizeof(err)), 0);
	assert_int_equal(pt_resolver__spec_nobjects(r, 0), 1);
	assert_int_equal(pt_resolver__spec_nfuncs(r, 0), 0);
	pt_resolver__free(r);
	pt_maps__free(&m);
	pt_config__free(&cfg);
}

static void test_library_later(void **state)
{
	struct pt_config cfg;
	struct pt_maps m0 = { 0 }, m1 = { 0 };
	struct pt_resolver *r;
	const struct pt_func *f;
	char err[512];

	parse(&cfg, "step native:exe:fx_mul\nbucket a.x native:libelf_fixture.so*:fx_mul\n");
	make_maps(&m0, false);
	make_maps(&m1, true);
	r = resolver(&cfg);
	/* Library not mapped: pending, not an error. */
	assert_int_equal(pt_resolver__update(r, &m0, true, err, sizeof(err)), 1);
	assert_int_equal(pt_resolver__spec_nobjects(r, 1), 0);
	assert_int_equal(pt_resolver__spec_nfuncs(r, 1), 0);
	/* dlopen: the next scan finds it, as a second function (other file). */
	assert_int_equal(pt_resolver__update(r, &m1, false, err, sizeof(err)), 1);
	f = pt_resolver__func(r, 1);
	assert_string_equal(f->symbol, "fx_mul");
	assert_string_equal(f->object, lib);
	assert_int_equal(f->fid, 1);
	assert_int_equal(f->bucket_mask, 1);
	assert_false(f->is_step);
	assert_int_equal(f->file_off, elf_off(lib, "fx_mul"));
	pt_resolver__free(r);
	pt_maps__free(&m0);
	pt_maps__free(&m1);
	pt_config__free(&cfg);
}

static void test_ifunc_unusable_and_versions(void **state)
{
	struct pt_config cfg;
	struct pt_maps m = { 0 };
	struct pt_resolver *r;
	const struct pt_func *f;
	char err[512];

	parse(&cfg, "bucket a.x native:libelf_fixture.so:fx_ifunc\n"
		    "bucket b.y native:libelf_fixture.so:fx_versioned@@FX_2\n");
	make_maps(&m, true);
	r = resolver(&cfg);
	/* two versions of fx_versioned live at two addresses: two rows */
	assert_int_equal(pt_resolver__update(r, &m, true, err, sizeof(err)), 3);
	f = by_symbol(r, "fx_ifunc");
	assert_non_null(f);
	assert_non_null(f->unusable);
	assert_non_null(strstr(f->unusable, "ifunc"));
	f = pt_resolver__func(r, 1);
	assert_string_equal(f->symbol, "fx_versioned");
	assert_null(f->unusable);
	pt_resolver__free(r);
	pt_maps__free(&m);
	pt_config__free(&cfg);
}

/* A path that does not exist here (another mount namespace): the file is
 * reached through /proc/PID/map_files, shown with the target's path. */
static void test_unreachable_path_uses_map_files(void **state)
{
	struct pt_config cfg;
	struct pt_maps self = { 0 }, m = { 0 };
	struct pt_resolver_opts o = { .pid = getpid(), .exe = "/nonexistent/elf_x" };
	struct pt_resolver *r;
	char exe[PATH_MAX], err[512], want[128];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = 0;
	assert_int_equal(pt_maps__read_pid(&self, getpid()), 0);
	/* keep only our executable's code mapping, under another name */
	for (size_t i = 0; i < self.n; i++) {
		struct pt_mapping *mp = &self.v[i];

		if (!mp->path || strcmp(mp->path, exe) || mp->perms[2] != 'x')
			continue;
		m.v = calloc(1, sizeof(*m.v));
		m.v[0] = *mp;
		m.v[0].path = strdup("/nonexistent/elf_x");
		m.n = 1;
		snprintf(want, sizeof(want), "/proc/%d/map_files/%llx-%llx", getpid(),
			 (unsigned long long)mp->start, (unsigned long long)mp->end);
		break;
	}
	assert_int_equal(m.n, 1);
	parse(&cfg, "step native:exe:main\n");
	o.cfg = &cfg;
	r = pt_resolver__new(&o);
	if (pt_resolver__update(r, &m, true, err, sizeof(err)) != 1)
		fail_msg("%s", err);
	assert_string_equal(pt_resolver__func(r, 0)->host_path, want);
	assert_string_equal(pt_resolver__func(r, 0)->object, "/nonexistent/elf_x");
	pt_resolver__free(r);
	pt_maps__free(&m);
	pt_maps__free(&self);
	pt_config__free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exe_and_roles),
		cmocka_unit_test(test_aliases_attach_once),
		cmocka_unit_test(test_unknown_symbol_closest),
		cmocka_unit_test(test_library_later),
		cmocka_unit_test(test_ifunc_unusable_and_versions),
		cmocka_unit_test(test_unreachable_path_uses_map_files),
	};

	fixture_paths();
	return cmocka_run_group_tests_name("resolve", tests, NULL, NULL);
}
