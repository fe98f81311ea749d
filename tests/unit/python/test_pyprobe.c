// SPDX-License-Identifier: BSD-2-Clause
/*
 * pyprobe: a code object announced by BPF resolved against the config,
 * with a fake target memory (3.11 layout, so co_qualname is read): fid for
 * configured code, PT_FID_PY_NONE for the rest, the same answer without
 * re-reading for a re-announced address, and PT_PYPROBE_GONE when the
 * object read is not the one BPF saw (freed and its address reused).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "python/pyprobe.h"

#define BASE 0x100000ull
#define CODE_TYPE 0x7f0000001000ull
#define STR_TYPE 0x7f0000002000ull

static uint8_t mem[4096];
static unsigned int reads;

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	reads++;
	if (addr < BASE || addr - BASE > sizeof(mem) || len > sizeof(mem) - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem + (addr - BASE), &v, 4);
}

/* A compact ASCII str object at addr. */
static void str_at(const struct pt_py_layout *L, uint64_t addr, const char *s)
{
	put64(addr + L->ob_type, STR_TYPE);
	put64(addr + L->str_length, strlen(s));
	put32(addr + L->str_state, (1u << 5) | (1u << 6)); /* compact, ascii */
	memcpy(mem + (addr - BASE) + L->ascii_size, s, strlen(s));
}

static void code_at(const struct pt_py_layout *L, uint64_t addr, uint64_t file, uint64_t name,
		    uint64_t qual, uint32_t line)
{
	put64(addr + L->ob_type, CODE_TYPE);
	put64(addr + L->code_filename, file);
	put64(addr + L->code_name, name);
	put64(addr + L->code_qualname, qual);
	put32(addr + L->code_firstlineno, line);
	put32(addr + L->code_flags, 0x3); /* a function: optimized, new locals */
}

static void test_resolve(void **state)
{
	const struct pt_py_layout *L = pt_py_layout__get(11);
	static char text[] = "bucket engine.churn py:srv.churn::churn_target\n";
	struct pt_config cfg;
	struct pt_resolver_opts ro = { 0 };
	struct pt_pyprobe_opts po = { 0 };
	struct pt_resolver *res;
	struct pt_pyprobe *pp;
	struct pt_py_code seen, val;
	char err[256];
	bool added;
	FILE *f;
	/* two code objects at the same address in turn: C1 then C2 */
	const uint64_t code = BASE + 0x800, file = BASE + 0x100, target = BASE + 0x200,
		       other = BASE + 0x300;

	f = fmemopen(text, strlen(text), "r");
	assert_int_equal(pt_config__parse(&cfg, f, "t.conf", err, sizeof(err)), 0);
	fclose(f);
	ro.cfg = &cfg;
	res = pt_resolver__new(&ro);
	po.cfg = &cfg;
	po.res = res;
	po.layout = L;
	po.types.code_type = CODE_TYPE;
	po.types.unicode_type = STR_TYPE;
	po.mem.read = mem_read;
	pp = pt_pyprobe__new(&po);
	assert_non_null(pp);

	memset(mem, 0, sizeof(mem));
	str_at(L, file, "/srv/churn.py");
	str_at(L, target, "churn_target");
	str_at(L, other, "churn_other");
	code_at(L, code, file, target, target, 1);

	/* configured: fid 0, a new function, BPF gets the fingerprint */
	seen = (struct pt_py_code){ .filename = file, .name = target, .firstlineno = 1 };
	assert_int_equal(pt_pyprobe__resolve(pp, code, &seen, &val, &added), 0);
	assert_true(added);
	assert_int_equal(val.fid, 0);
	assert_true(val.filename == file && val.name == target && val.firstlineno == 1);
	assert_int_equal(pt_pyprobe__fid(pp, code), 0);
	assert_string_equal(pt_resolver__func(res, 0)->symbol, "churn_target");

	/* BPF saw C1 (churn_target) but C2 (churn_other) is there by the time
	 * we read: gone, not C2's answer */
	code_at(L, code, file, other, other, 1);
	assert_int_equal(pt_pyprobe__resolve(pp, code, &seen, &val, &added), PT_PYPROBE_GONE);
	assert_false(added);
	assert_int_equal(pt_pyprobe__fid(pp, code), PT_PYPROBE_GONE);
	assert_int_equal(pt_pyprobe__stats(pp)->gone, 1);

	/* C2 announced with its own fingerprint: not configured */
	seen.name = other;
	assert_int_equal(pt_pyprobe__resolve(pp, code, &seen, &val, &added), PT_FID_PY_NONE);
	assert_int_equal(val.fid, PT_FID_PY_NONE);
	assert_int_equal(val.name, other);
	assert_int_equal(pt_pyprobe__fid(pp, code), PT_FID_PY_NONE);

	/* re-announced (BPF's LRU evicted it): same answer, no string reads */
	reads = 0;
	assert_int_equal(pt_pyprobe__resolve(pp, code, &seen, &val, &added), PT_FID_PY_NONE);
	assert_true(reads <= 6); /* type + fingerprint fields only */

	/* C1 again at the same address: the same function, not a new one */
	code_at(L, code, file, target, target, 1);
	seen.name = target;
	assert_int_equal(pt_pyprobe__resolve(pp, code, &seen, &val, &added), 0);
	assert_false(added);
	assert_int_equal(pt_resolver__nfuncs(res), 1);

	/* not a code object any more (freed, reused by something else):
	 * gone too, and its pending calls must not get fid 0 from before */
	put64(code + L->ob_type, STR_TYPE);
	assert_int_equal(pt_pyprobe__resolve(pp, code, &seen, &val, &added), PT_PYPROBE_GONE);
	assert_int_equal(pt_pyprobe__fid(pp, code), PT_PYPROBE_GONE);
	assert_int_equal(pt_pyprobe__stats(pp)->unreadable, 1);

	pt_pyprobe__free(pp);
	pt_resolver__free(res);
	pt_config__free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
