// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_pymatch: co_filename suffixes at path boundaries, qualname against
 * the class/function globs of both py: forms, hidden local and anonymous
 * code. Specs come from pt_config__parse, so a py: probe is checked from
 * its text in a config file to the match decision.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "python/pymatch.h"

/* "step <probe>" through the real parser; the probe is cfg->probes[0]. */
static const struct pt_probe_spec *spec_of(struct pt_config *cfg, const char *probe)
{
	char text[512], err[1024] = "";
	FILE *f;
	int ret;

	snprintf(text, sizeof(text), "step %s\n", probe);
	/* fmemopen wants a writable buffer type even in "r" mode */
	f = fmemopen(text, strlen(text), "r");
	assert_non_null(f);
	ret = pt_config__parse(cfg, f, "t.conf", err, sizeof(err));
	fclose(f);
	if (ret)
		print_error("%s: unexpected error: %s\n", probe, err);
	assert_int_equal(ret, 0);
	assert_int_equal(cfg->nprobes, 1);
	return &cfg->probes[0];
}

/* ---- file part ---- */

static void test_file_suffix_at_boundary(void **state)
{
	static const char *const yes[] = {
		"/x/a/b/c.py",
		"a/b/c.py",
		"/x/a/b/c/__init__.py",
		"a/b/c/__init__.py",
		"/a/b/c.py",
		"//a/b/c.py",
		"/usr/lib/python3.11/site-packages/a/b/c.py",
	};
	/* clang-format off */
	static const char *const no[] = {
		"/x/za/b/c.py",      /* 'a' is not at a '/' */
		"/x/a/b/c.pyc",      /* wrong extension */
		"/x/a/b/cc.py",      /* longer last part */
		"/x/a/b/c.py.bak",
		"/x/a/b/c",          /* no extension */
		"/x/a/b/c.PY",       /* case matters */
		"/x/a/b/c/__init__.pyc",
		"/x/a/b/c/__main__.py",
		"/x/a/b/c/d.py",     /* a submodule, not the module */
		"/x/a/bb/c.py",
		"/x/a.b.c.py",       /* dots are not directories */
		"/x/a/b/xc/__init__.py",
		"/x/b/c.py",         /* too short: only part of the module */
		"c.py",
		".py",
		"",
		"<string>",
		"<frozen a.b.c>",
	};
	/* clang-format on */
	struct pt_config cfg;
	const struct pt_probe_spec *s;
	size_t i;

	/* Both forms select files the same way. */
	for (int form = 0; form < 2; form++) {
		s = spec_of(&cfg, form ? "py:a.b.c::f" : "py:a.b.c.K.m");
		assert_string_equal(s->object, "a/b/c");
		for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
			if (!pt_pymatch__file(s, yes[i]))
				fail_msg("%s should match module a/b/c", yes[i]);
		}
		for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
			if (pt_pymatch__file(s, no[i]))
				fail_msg("%s should not match module a/b/c", no[i]);
		}
		pt_config__free(&cfg);
	}
}

static void test_file_single_part_module(void **state)
{
	struct pt_config cfg;
	const struct pt_probe_spec *s = spec_of(&cfg, "py:pyengine::postprocess");

	assert_string_equal(s->object, "pyengine");
	assert_true(pt_pymatch__file(s, "pyengine.py"));
	assert_true(pt_pymatch__file(s, "/tmp/t/pyengine.py"));
	assert_true(pt_pymatch__file(s, "/tmp/t/pyengine/__init__.py"));
	assert_false(pt_pymatch__file(s, "/tmp/t/my_pyengine.py"));
	assert_false(pt_pymatch__file(s, "/tmp/t/pyengine_lazy.py"));
	assert_false(pt_pymatch__file(s, "/tmp/pyengine/t.py"));
	pt_config__free(&cfg);
}

/* ---- Class.method form ---- */

static void test_class_method(void **state)
{
	struct pt_config cfg;
	const struct pt_probe_spec *s = spec_of(&cfg, "py:vllm.v1.engine.core.EngineCore.step");

	assert_string_equal(s->object, "vllm/v1/engine/core");
	assert_string_equal(s->cls, "EngineCore");
	assert_string_equal(s->symbol, "step");
	assert_true(pt_pymatch__file(s, "/site-packages/vllm/v1/engine/core.py"));
	assert_true(pt_pymatch__name(s, "EngineCore.step"));
	assert_false(pt_pymatch__name(s, "step")); /* module-level */
	assert_false(pt_pymatch__name(s, "EngineCore.step2"));
	assert_false(pt_pymatch__name(s, "EngineCore.ste"));
	assert_false(pt_pymatch__name(s, "EngineCoreProc.step"));
	assert_false(pt_pymatch__name(s, "XEngineCore.step"));
	assert_false(pt_pymatch__name(s, "engineCore.step")); /* case matters */
	assert_false(pt_pymatch__name(
		s, "Outer.EngineCore.step")); /* nested: cls is "Outer.EngineCore" */
	assert_false(pt_pymatch__name(s, "EngineCore.step.<locals>.inner"));
	assert_false(pt_pymatch__name(s, "EngineCore."));
	assert_false(pt_pymatch__name(s, ".step"));
	assert_false(pt_pymatch__name(s, ""));
	pt_config__free(&cfg);
}

static void test_class_globs(void **state)
{
	struct pt_config cfg;
	const struct pt_probe_spec *s = spec_of(&cfg, "py:pkg.mod.Sched*.forward_*");

	assert_string_equal(s->object, "pkg/mod");
	assert_string_equal(s->cls, "Sched*");
	assert_string_equal(s->symbol, "forward_*");
	assert_true(pt_pymatch__name(s, "Scheduler.forward_pass"));
	assert_true(pt_pymatch__name(s, "Sched.forward_"));
	assert_true(pt_pymatch__name(s, "SchedV2.forward_x_y"));
	assert_false(pt_pymatch__name(s, "Scheduler.forward"));
	assert_false(pt_pymatch__name(s, "Scheduler.backward_pass"));
	assert_false(pt_pymatch__name(s, "MySched.forward_pass"));
	assert_false(pt_pymatch__name(s, "forward_pass"));
	/* '*' crosses dots (no FNM_PERIOD/PATHNAME): a class nested in Sched* */
	assert_true(pt_pymatch__name(s, "Sched.Inner.forward_pass"));
	assert_false(pt_pymatch__name(s, "Scheduler.forward_pass.<locals>.forward_x"));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:m.K.[gs]et_?");
	assert_true(pt_pymatch__name(s, "K.get_x"));
	assert_true(pt_pymatch__name(s, "K.set_y"));
	assert_false(pt_pymatch__name(s, "K.pet_x"));
	assert_false(pt_pymatch__name(s, "K.get_xy"));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:m.[!_]*.*");
	assert_true(pt_pymatch__name(s, "K.f"));
	assert_false(pt_pymatch__name(s, "_Private.f"));
	pt_config__free(&cfg);
}

static void test_nested_classes(void **state)
{
	struct pt_config cfg;
	struct pt_probe_spec hand;
	const struct pt_probe_spec *s;

	/* cls "*" takes any class path before the last dot */
	s = spec_of(&cfg, "py:a.b.c.*.m");
	assert_string_equal(s->cls, "*");
	assert_true(pt_pymatch__name(s, "K.m"));
	assert_true(pt_pymatch__name(s, "Outer.Inner.m"));
	assert_true(pt_pymatch__name(s, "A.B.C.m"));
	assert_false(pt_pymatch__name(s, "m"));
	assert_false(pt_pymatch__name(s, "Outer.Inner.n"));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:a.b.c.Outer*.m");
	assert_true(pt_pymatch__name(s, "Outer.Inner.m"));
	assert_true(pt_pymatch__name(s, "Outer.m"));
	assert_false(pt_pymatch__name(s, "Inner.m"));
	pt_config__free(&cfg);

	/* A dotted class glob cannot be written in a py: probe (the parser
	 * takes the last two parts as Class.method), so build the spec the
	 * matcher is documented to take. */
	memset(&hand, 0, sizeof(hand));
	hand.kind = PT_PROBE_PY;
	hand.object = (char *)"a/b/c";
	hand.cls = (char *)"Outer.Inner";
	hand.symbol = (char *)"m";
	assert_true(pt_pymatch__name(&hand, "Outer.Inner.m"));
	assert_false(pt_pymatch__name(&hand, "Outer.m"));
	assert_false(pt_pymatch__name(&hand, "Inner.m"));
	assert_false(pt_pymatch__name(&hand, "X.Outer.Inner.m"));
	assert_false(pt_pymatch__name(&hand, "Outer.Inner.Deeper.m"));
	hand.cls = (char *)"Outer.*";
	assert_true(pt_pymatch__name(&hand, "Outer.Inner.m"));
	assert_true(pt_pymatch__name(&hand, "Outer.Inner.Deeper.m"));
	assert_false(pt_pymatch__name(&hand, "Outer.m"));
}

/* ---- module::function form ---- */

static void test_module_level(void **state)
{
	struct pt_config cfg;
	const struct pt_probe_spec *s;

	s = spec_of(&cfg, "py:pyengine::postprocess");
	assert_null(s->cls);
	assert_string_equal(s->symbol, "postprocess");
	assert_true(pt_pymatch__name(s, "postprocess"));
	assert_false(pt_pymatch__name(s, "K.postprocess")); /* a method is not module-level */
	assert_false(pt_pymatch__name(s, "postprocess.<locals>.g"));
	assert_false(pt_pymatch__name(s, "postprocess2"));
	assert_false(pt_pymatch__name(s, "post"));
	assert_false(pt_pymatch__name(s, ""));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:m::*");
	assert_true(pt_pymatch__name(s, "f"));
	assert_true(pt_pymatch__name(s, "_private"));
	assert_false(pt_pymatch__name(s, "K.f"));
	assert_false(pt_pymatch__name(s, ""));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:m::forward_*");
	assert_true(pt_pymatch__name(s, "forward_pass"));
	assert_false(pt_pymatch__name(s, "Sched.forward_pass"));
	assert_false(pt_pymatch__name(s, "backward_pass"));
	pt_config__free(&cfg);
}

/* ---- local and anonymous code ---- */

static void test_hidden_unless_asked(void **state)
{
	struct pt_config cfg;
	const struct pt_probe_spec *s;

	/* wildcards do not pick up anonymous code */
	s = spec_of(&cfg, "py:m::*");
	assert_false(pt_pymatch__name(s, "<lambda>"));
	assert_false(pt_pymatch__name(s, "<genexpr>"));
	assert_false(pt_pymatch__name(s, "<listcomp>"));
	assert_false(pt_pymatch__name(s, "<module>"));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:m.*.*");
	assert_true(pt_pymatch__name(s, "K.f"));
	assert_false(pt_pymatch__name(s, "K.<lambda>"));
	assert_false(pt_pymatch__name(s, "K.<genexpr>"));
	assert_false(pt_pymatch__name(s, "f.<locals>.g"));
	assert_false(pt_pymatch__name(s, "K.f.<locals>.g"));
	assert_false(pt_pymatch__name(s, "f.<locals>.<lambda>"));
	pt_config__free(&cfg);

	/* ... a '<' in the pattern asks for them */
	s = spec_of(&cfg, "py:m::<lambda>");
	assert_true(pt_pymatch__name(s, "<lambda>"));
	assert_false(pt_pymatch__name(s, "<genexpr>"));
	assert_false(pt_pymatch__name(s, "f.<locals>.<lambda>"));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:m::<*>");
	assert_true(pt_pymatch__name(s, "<lambda>"));
	assert_true(pt_pymatch__name(s, "<genexpr>"));
	assert_false(pt_pymatch__name(s, "f"));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:m.K.<genexpr>");
	assert_true(pt_pymatch__name(s, "K.<genexpr>"));
	assert_false(pt_pymatch__name(s, "K.<lambda>"));
	pt_config__free(&cfg);

	/* a function local to f: the class part is "f.<locals>" */
	s = spec_of(&cfg, "py:m.*<locals>.g");
	assert_string_equal(s->cls, "*<locals>");
	assert_true(pt_pymatch__name(s, "f.<locals>.g"));
	assert_true(pt_pymatch__name(s, "K.f.<locals>.g"));
	assert_false(pt_pymatch__name(s, "K.g"));
	pt_config__free(&cfg);

	/* '<' in the class glob does not reveal an anonymous method name */
	s = spec_of(&cfg, "py:m.*<locals>.*");
	assert_true(pt_pymatch__name(s, "f.<locals>.g"));
	assert_false(pt_pymatch__name(s, "f.<locals>.<lambda>"));
	pt_config__free(&cfg);

	s = spec_of(&cfg, "py:m.*<locals>.<*>");
	assert_true(pt_pymatch__name(s, "f.<locals>.<lambda>"));
	pt_config__free(&cfg);
}

/* ---- what never matches ---- */

static void test_native_never_matches(void **state)
{
	struct pt_config cfg;
	const struct pt_probe_spec *s = spec_of(&cfg, "native:exe:*");

	assert_int_equal(s->kind, PT_PROBE_NATIVE);
	assert_false(pt_pymatch__file(s, "exe"));
	assert_false(pt_pymatch__file(s, "/x/exe.py"));
	assert_false(pt_pymatch__name(s, "f"));
	assert_false(pt_pymatch__name(s, "K.f"));
	pt_config__free(&cfg);
}

static void test_empty_qualname(void **state)
{
	static const char *const probes[] = { "py:m::*", "py:m.*.*", "py:m::?*", "py:m.K.f" };
	struct pt_config cfg;
	const struct pt_probe_spec *s;
	size_t i;

	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		s = spec_of(&cfg, probes[i]);
		assert_false(pt_pymatch__name(s, ""));
		assert_false(pt_pymatch__name(s, "."));
		assert_false(pt_pymatch__name(s, ".."));
		pt_config__free(&cfg);
	}
}

static void test_long_qualname(void **state)
{
	struct pt_config cfg;
	const struct pt_probe_spec *s = spec_of(&cfg, "py:m.*.f");
	char q[4096];

	/* a class path longer than the matcher's buffer is refused, not cut */
	memset(q, 'A', sizeof(q));
	memcpy(q + sizeof(q) - 3, ".f", 3);
	assert_false(pt_pymatch__name(s, q));
	/* 1000 characters of class still fit */
	memset(q, 'A', 1000);
	memcpy(q + 1000, ".f", 3);
	assert_true(pt_pymatch__name(s, q));
	pt_config__free(&cfg);
}

/* py:a.b.c written with dots: method c of class b in a, or function c of
 * module a.b; which reading matched is told apart. py:m.f: function f. */
static void test_dotted_readings(void **state)
{
	struct pt_config cfg;
	const struct pt_probe_spec *s = spec_of(&cfg, "py:pkg.mod.run*");

	(void)state;
	/* function run_all of module pkg.mod */
	assert_true(pt_pymatch__file(s, "/srv/pkg/mod.py"));
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg/mod.py", "run_all"), PT_PYMATCH_ALT);
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg/mod/__init__.py", "run"), PT_PYMATCH_ALT);
	/* a method there is no module-level function */
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg/mod.py", "Sched.run"), 0);
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg/mod.py", "f.<locals>.run"), 0);
	/* method run of class mod in module pkg */
	assert_true(pt_pymatch__file(s, "/srv/pkg/__init__.py"));
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg/__init__.py", "mod.run"), PT_PYMATCH_FIRST);
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg.py", "mod.run_x"), PT_PYMATCH_FIRST);
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg.py", "run"), 0);
	/* other files, other names */
	assert_false(pt_pymatch__file(s, "/srv/pkg/other.py"));
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg/other.py", "run"), 0);
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg/mod.py", "walk"), 0);
	pt_config__free(&cfg);

	/* one dot: function step of module engine, nothing else */
	s = spec_of(&cfg, "py:engine.step");
	assert_int_equal(pt_pymatch__code(s, "/srv/engine.py", "step"), PT_PYMATCH_FIRST);
	assert_int_equal(pt_pymatch__code(s, "/srv/engine.py", "Engine.step"), 0);
	pt_config__free(&cfg);

	/* "::" is one reading only: a module-level function */
	s = spec_of(&cfg, "py:pkg.mod::run");
	assert_false(pt_pymatch__file(s, "/srv/pkg.py"));
	assert_int_equal(pt_pymatch__code(s, "/srv/pkg/mod.py", "run"), PT_PYMATCH_FIRST);
	pt_config__free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_suffix_at_boundary),
		cmocka_unit_test(test_file_single_part_module),
		cmocka_unit_test(test_class_method),
		cmocka_unit_test(test_class_globs),
		cmocka_unit_test(test_nested_classes),
		cmocka_unit_test(test_module_level),
		cmocka_unit_test(test_hidden_unless_asked),
		cmocka_unit_test(test_native_never_matches),
		cmocka_unit_test(test_empty_qualname),
		cmocka_unit_test(test_long_qualname),
		cmocka_unit_test(test_dotted_readings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
