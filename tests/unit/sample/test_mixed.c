// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_mixed: a sample's Python frames and native frames merged into one
 * stack, per CPython version (one C eval call per frame before 3.11, an
 * entry-marked frame per call on 3.11, shim frames on 3.12+), the
 * interpreter's and proftrace's own frames left out, a native unwind that
 * stopped early or does not pair up, and native labels. On live processes:
 * tests/integration/test_mixed_stacks.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sample/mixed.h"

#define N PT_UNWIND_NATIVE
#define E PT_UNWIND_EVAL
#define I PT_UNWIND_INTERP
#define O PT_UNWIND_OWN

/* "p3" for Python frame 3, "n1" for native frame 1, "w2"/"g2" for the
 * GIL's pseudo frame (wait / not) at native frame 2: the merged stack,
 * innermost first, as one string */
static const char *spell(const struct pt_mixed_ref *r, size_t n)
{
	static char buf[512];
	size_t at = 0;

	buf[0] = 0;
	for (size_t k = 0; k < n && at + 8 < sizeof(buf); k++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%c%u", k ? " " : "",
				       "pngw"[r[k].native], r[k].i);
	return buf;
}

static void natives(struct pt_unwind_frame *v, const int *kinds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (struct pt_unwind_frame){ .pc = 0x1000 + i, .kind = kinds[i] };
}

static const char *merge(unsigned int minor, const struct pt_sample_frame *f, size_t n,
			 const int *kinds, size_t nn, enum pt_unwind_end end,
			 enum pt_mixed_how *how)
{
	struct pt_unwind_frame nat[32];
	struct pt_mixed_ref out[64];
	size_t k;

	natives(nat, kinds, nn);
	k = pt_mixed__merge(minor, f, n, nat, nn, end, out, 64, how);
	return spell(out, k);
}

/* 3.10: leaf C (libc) under a C extension under two Python frames, each
 * its own eval call; the interpreter's frames and the agent's between;
 * the process's start (native, under the outermost Python frame) cut */
static void test_per_frame(void **state)
{
	const struct pt_sample_frame f[] = { { .code = 0xa }, { .code = 0xb }, { .code = 0xc } };
	const int k[] = { N, N, I, E, O, I, E, I, E, I, N };
	enum pt_mixed_how how;

	assert_string_equal(merge(10, f, 3, k, 11, PT_UNWIND_END_BOTTOM, &how), "n0 n1 p0 p1 p2");
	assert_int_equal(how, PT_MIXED_WHOLE);
}

/* 3.11: an eval call runs its entry frame and the frames inlined into
 * it; a C extension calls back into Python between two entries */
static void test_entry_311(void **state)
{
	const struct pt_sample_frame f[] = {
		{ .code = 0xa },			   /* inlined callee */
		{ .code = 0xb, .flags = PT_SFRAME_ENTRY }, /* the callback */
		{ .code = 0xc },			   /* inlined */
		{ .code = 0xd, .flags = PT_SFRAME_ENTRY }, /* main */
	};
	const int k[] = { N, I, E, I, N, N, I, E, I, N };
	enum pt_mixed_how how;

	assert_string_equal(merge(11, f, 4, k, 10, PT_UNWIND_END_BOTTOM, &how),
			    "n0 p0 p1 n4 n5 p2 p3");
	assert_int_equal(how, PT_MIXED_WHOLE);
	/* the entry flag means nothing before 3.11: one frame per call */
	assert_string_equal(merge(10, f, 4, k, 10, PT_UNWIND_END_COPY, &how),
			    "n0 p0 n4 n5 p1 n9 p2 p3");
	assert_int_equal(how, PT_MIXED_PARTIAL);
}

/* 3.12+: the shim frame an eval call pushes ends its group and is never
 * shown; a stack that is only a shim yet (entered, nothing pushed) */
static void test_shim_312(void **state)
{
	const struct pt_sample_frame f[] = {
		{ .code = 0xa }, { .code = 0xb }, { .code = 0 }, { .code = 0xc }, { .code = 0 },
	};
	const struct pt_sample_frame fresh[] = { { .code = 0 }, { .code = 0xa }, { .code = 0 } };
	const int k[] = { N, E, I, N, I, E, I, N };
	const int k2[] = { E, I, E, I };
	enum pt_mixed_how how;

	assert_string_equal(merge(12, f, 5, k, 8, PT_UNWIND_END_BOTTOM, &how), "n0 p0 p1 n3 p3");
	assert_int_equal(how, PT_MIXED_WHOLE);
	assert_string_equal(merge(13, fresh, 3, k2, 4, PT_UNWIND_END_BOTTOM, &how), "p1");
	assert_int_equal(how, PT_MIXED_WHOLE);
}

/* The unwind stopped before the outer eval calls (a copy too short): the
 * Python frames no eval call took follow in order, said partial */
static void test_partial(void **state)
{
	const struct pt_sample_frame f[] = { { .code = 0xa }, { .code = 0xb }, { .code = 0xc } };
	const int k[] = { N, N, I, E };
	enum pt_mixed_how how;

	assert_string_equal(merge(9, f, 3, k, 4, PT_UNWIND_END_COPY, &how), "n0 n1 p0 p1 p2");
	assert_int_equal(how, PT_MIXED_PARTIAL);
	/* nothing unwound at all: the Python stack as it is */
	assert_string_equal(merge(9, f, 3, k, 0, PT_UNWIND_END_NOINFO, &how), "p0 p1 p2");
	assert_int_equal(how, PT_MIXED_PARTIAL);
	/* no Python frame left over: whole, however the unwind ended */
	assert_string_equal(merge(9, f, 1, k, 4, PT_UNWIND_END_COPY, &how), "n0 n1 p0");
	assert_int_equal(how, PT_MIXED_WHOLE);
}

/* A whole native stack whose eval calls and Python frames do not pair up
 * (more calls than frames; frames left over): said, frames all kept */
static void test_mismatch(void **state)
{
	const struct pt_sample_frame f[] = { { .code = 0xa }, { .code = 0xb } };
	const int more[] = { N, E, E, E, N };
	const int fewer[] = { N, E, N };
	enum pt_mixed_how how;

	assert_string_equal(merge(8, f, 2, more, 5, PT_UNWIND_END_BOTTOM, &how), "n0 p0 p1");
	assert_int_equal(how, PT_MIXED_MISMATCH);
	assert_string_equal(merge(8, f, 2, fewer, 3, PT_UNWIND_END_BOTTOM, &how), "n0 p0 n2 p1");
	assert_int_equal(how, PT_MIXED_MISMATCH);
}

/* Before 3.12 a frame with code 0 is one that could not be read, not a
 * shim: never shown, but still its own eval call (found by the fuzzer) */
static void test_unreadable_code_before_312(void **state)
{
	const struct pt_sample_frame f[] = { { .code = 0xa }, { .code = 0 }, { .code = 0xc } };
	const int k[] = { N, E, E, E };
	enum pt_mixed_how how;

	assert_string_equal(merge(10, f, 3, k, 4, PT_UNWIND_END_BOTTOM, &how), "n0 p0 p2");
	assert_int_equal(how, PT_MIXED_WHOLE);
}

/* A thread without Python frames: its native frames alone; and the
 * output bounded by max */
static void test_native_only_and_max(void **state)
{
	const int k[] = { N, N, I, N };
	struct pt_unwind_frame nat[4];
	struct pt_mixed_ref out[2];
	enum pt_mixed_how how;

	assert_string_equal(merge(12, NULL, 0, k, 4, PT_UNWIND_END_BOTTOM, &how), "n0 n1 n3");
	assert_int_equal(how, PT_MIXED_WHOLE);
	natives(nat, k, 4);
	assert_int_equal(pt_mixed__merge(12, NULL, 0, nat, 4, PT_UNWIND_END_BOTTOM, out, 2, &how),
			 2);
	assert_string_equal(spell(out, 2), "n0 n1");
}

/* The GIL: libc's condition wait right under the interpreter's frames
 * (Debian's 3.11: take_gil not named), the same named (pyenv), on the
 * CPU signalling, and what is not the GIL: an extension's own condition
 * variable, a libc wait under the eval loop itself, a semaphore (a
 * threading.Lock) under the interpreter */
static void test_gil(void **state)
{
	const struct pt_sample_frame f[] = { { .code = 0xa }, { .code = 0xb } };
	struct pt_unwind_frame nat[8];
	struct pt_mixed_ref out[16];
	enum pt_mixed_how how;
	size_t k;
#define F(s, m, kd) ((struct pt_unwind_frame){ .pc = 1, .sym = (s), .module = (m), .kind = (kd) })
#define MERGE(...)                                                                                 \
	do {                                                                                       \
		const struct pt_unwind_frame v[] = { __VA_ARGS__ };                                \
		memcpy(nat, v, sizeof(v));                                                         \
		k = pt_mixed__merge(10, f, 2, nat, sizeof(v) / sizeof(v[0]), PT_UNWIND_END_BOTTOM, \
				    out, 16, &how);                                                \
	} while (0)

	/* time.sleep's return: PyEval_RestoreThread -> take_gil (unnamed) */
	MERGE(F("__futex_abstimed_wait_common", "libc.so.6", N),
	      F("pthread_cond_timedwait", "libc.so.6", N), F(NULL, "python3.11", I),
	      F("PyEval_RestoreThread", "python3.11", I), F(NULL, "python3.11", I),
	      F("_PyEval_EvalFrameDefault", "python3.11", E),
	      F("_PyEval_EvalFrameDefault", "python3.11", E));
	assert_string_equal(spell(out, k), "n0 n1 w2 p0 p1");
	/* named, a mutex wait inside the condition wait */
	MERGE(F("__GI___lll_lock_wait", "libc.so.6", N), F(NULL, "libc.so.6", N),
	      F("take_gil", "libpython3.12.so.1.0", I),
	      F("_PyEval_EvalFrameDefault", "libpython3.12.so.1.0", E));
	assert_string_equal(spell(out, k), "n0 n1 w2 p0 p1");
	/* on the CPU: drop_gil signalling the next thread */
	MERGE(F("pthread_cond_signal", "libc.so.6", N), F("drop_gil", "python3.11", I),
	      F("_PyEval_EvalFrameDefault", "python3.11", E));
	assert_string_equal(spell(out, k), "n0 g1 p0 p1");
	/* on the CPU in take_gil itself */
	MERGE(F("take_gil", "python3.11", I), F("_PyEval_EvalFrameDefault", "python3.11", E));
	assert_string_equal(spell(out, k), "g0 p0 p1");
	/* an extension re-taking the GIL after its own blocking call */
	MERGE(F("pthread_cond_timedwait", "libc.so.6", N), F(NULL, "python3.11", I),
	      F("PyEval_RestoreThread", "python3.11", I), F("ext_call", "ext.so", N),
	      F(NULL, "python3.11", I), F("_PyEval_EvalFrameDefault", "python3.11", E));
	assert_string_equal(spell(out, k), "n0 w1 n3 p0 p1");
	/* not the GIL: the extension's own condition variable */
	MERGE(F("pthread_cond_wait", "libc.so.6", N), F("ext_wait", "ext.so", N),
	      F(NULL, "python3.11", I), F("_PyEval_EvalFrameDefault", "python3.11", E));
	assert_string_equal(spell(out, k), "n0 n1 p0 p1");
	/* nor libc called from the eval loop, nor a semaphore under the
	 * interpreter (threading.Lock.acquire), nor an unnamed interpreter
	 * frame at the leaf */
	MERGE(F("pthread_cond_wait", "libc.so.6", N),
	      F("_PyEval_EvalFrameDefault", "python3.11", E));
	assert_string_equal(spell(out, k), "n0 p0 p1");
	MERGE(F("do_futex_wait", "libc.so.6", N), F("sem_clockwait", "libc.so.6", N),
	      F("PyThread_acquire_lock_timed", "python3.11", I),
	      F("_PyEval_EvalFrameDefault", "python3.11", E));
	assert_string_equal(spell(out, k), "n0 n1 p0 p1");
	MERGE(F(NULL, "python3.11", I), F("_PyEval_EvalFrameDefault", "python3.11", E));
	assert_string_equal(spell(out, k), "p0 p1");
#undef MERGE
#undef F
}

static void test_labels(void **state)
{
	struct pt_unwind_frame f = { .pc = 0x7f0000001234,
				     .sym = "at::_ops::linear::call",
				     .module = "libtorch_cpu.so.1.13",
				     .modoff = 0x1234 };
	char buf[128];

	pt_mixed__label(&f, buf, sizeof(buf));
	assert_string_equal(buf, "at::_ops::linear::call (libtorch_cpu.so.1.13)");
	f.sym = NULL;
	pt_mixed__label(&f, buf, sizeof(buf));
	assert_string_equal(buf, "libtorch_cpu.so.1.13+0x1234");
	f.module = NULL;
	pt_mixed__label(&f, buf, sizeof(buf));
	assert_string_equal(buf, "[unknown]");
	assert_int_not_equal(pt_mixed__key("a (b)"), 0);
	assert_int_not_equal(pt_mixed__key("a (b)"), pt_mixed__key("a (c)"));
	assert_int_equal(pt_mixed__key("a (b)"), pt_mixed__key("a (b)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_frame),
		cmocka_unit_test(test_entry_311),
		cmocka_unit_test(test_shim_312),
		cmocka_unit_test(test_partial),
		cmocka_unit_test(test_mismatch),
		cmocka_unit_test(test_native_only_and_max),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_gil),
		cmocka_unit_test(test_unreadable_code_before_312),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
