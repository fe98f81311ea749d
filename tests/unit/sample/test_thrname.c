// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_thrname: proftrace's own threads told by their comm (and nothing
 * read for them), the comm when the interpreter gives no name ("?" when
 * there is no comm either), threading._active read again only when a
 * thread is not in the last read and that read is old enough (longer
 * after a failed one), and why the reads failed. Python names from a live interpreter:
 * tests/integration/test_flame_threads.py.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "python/pythreads.h"
#include "sample/thrname.h"

#define MS 1000000ull

static unsigned long nreads;

/* a target whose memory cannot be read */
static int no_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	nreads++;
	return -EFAULT;
}

static const struct pt_tmem mem = { .read = no_read };
static const struct pt_pytypes types = { 0x1000, 0x2000 };

static void test_own(void **state)
{
	struct pt_thrname *tn = pt_thrname__new(NULL);
	struct pt_thrname_stats st;
	char name[64];

	assert_non_null(tn);
	assert_true(pt_thrname__own("proftrace-py"));
	assert_true(pt_thrname__own("proftrace-cupti"));
	assert_false(pt_thrname__own("proftrace-pyx"));
	assert_false(pt_thrname__own("proftrace"));
	assert_false(pt_thrname__own(""));
	assert_true(pt_thrname__name(tn, 7, "proftrace-py", 0, name, sizeof(name)));
	assert_string_equal(name, "proftrace-py");
	assert_true(pt_thrname__name(tn, 8, "proftrace-cupti", 0, name, sizeof(name)));
	assert_false(pt_thrname__name(tn, 9, "python3", 0, name, sizeof(name)));
	assert_string_equal(name, "python3");
	assert_false(pt_thrname__name(tn, 10, "", 0, name, sizeof(name)));
	assert_string_equal(name, "?");
	/* cut to the buffer */
	assert_false(pt_thrname__name(tn, 11, "abcdefgh", 0, name, 4));
	assert_string_equal(name, "abc");
	pt_thrname__stats(tn, &st);
	assert_int_equal(st.own, 2);
	assert_int_equal(st.comm, 3);
	assert_int_equal(st.python, 0);
	assert_int_equal(st.reads, 0);
	pt_thrname__free(tn);
	pt_thrname__free(NULL);
}

static void test_rereads(void **state)
{
	const struct pt_py_layout *L = pt_py_layout__get(12);
	struct pt_pythreads *py = pt_pythreads__new(&mem, L, &types, 0x7f0000001000ull);
	struct pt_thrname *tn = pt_thrname__new(py);
	struct pt_thrname_stats st;
	char name[64];

	assert_non_null(tn);
	nreads = 0;
	/* proftrace's own: nothing read */
	assert_true(pt_thrname__name(tn, 7, "proftrace-py", 100 * MS, name, sizeof(name)));
	assert_int_equal(nreads, 0);
	/* the first thread: one read, which fails: its comm */
	assert_false(pt_thrname__name(tn, 8, "python3", 100 * MS, name, sizeof(name)));
	assert_string_equal(name, "python3");
	assert_true(nreads > 0);
	pt_thrname__stats(tn, &st);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.last_error, -EFAULT);
	/* more threads within PT_THRNAME_REREAD_NS: no read */
	for (uint32_t t = 9; t < 100; t++)
		assert_false(
			pt_thrname__name(tn, t, "w", 100 * MS + t * 100000, name, sizeof(name)));
	pt_thrname__stats(tn, &st);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.comm, 92);
	/* the read failed: not again within PT_THRNAME_RETRY_NS, then again */
	assert_false(pt_thrname__name(tn, 200, "w", 100 * MS + PT_THRNAME_REREAD_NS, name,
				      sizeof(name)));
	assert_false(pt_thrname__name(tn, 201, "w", 100 * MS + PT_THRNAME_RETRY_NS - 1, name,
				      sizeof(name)));
	pt_thrname__stats(tn, &st);
	assert_int_equal(st.reads, 1);
	assert_false(
		pt_thrname__name(tn, 202, "w", 100 * MS + PT_THRNAME_RETRY_NS, name, sizeof(name)));
	pt_thrname__stats(tn, &st);
	assert_int_equal(st.reads, 2);
	pt_thrname__free(tn);
	pt_pythreads__free(py);
}

/* A layout that does not say where sys.modules is: -ENOTSUP, nothing read. */
static void test_no_modules_offset(void **state)
{
	const struct pt_py_layout *L = pt_py_layout__get(14);
	struct pt_pythreads *py = pt_pythreads__new(&mem, L, &types, 0x7f0000001000ull);
	const struct pt_pythread *v;
	size_t n = 5;

	assert_int_equal(L->interp_modules, 0);
	nreads = 0;
	assert_int_equal(pt_pythreads__read(py, &v, &n), -ENOTSUP);
	assert_int_equal(n, 0);
	assert_int_equal(nreads, 0);
	assert_null(pt_pythreads__name(py, 1));
	pt_pythreads__free(py);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own),
		cmocka_unit_test(test_rereads),
		cmocka_unit_test(test_no_modules_offset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
