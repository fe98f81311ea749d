// SPDX-License-Identifier: BSD-2-Clause
/*
 * profile.pb.gz from a flame tree: gunzip'ed and unpacked with protobuf-c
 * again, every sample's stack (leaf first), its two values (cpu: 0 for a
 * stack ending in [off-cpu]; wall), the sample types with cpu the
 * default, functions with their files and lines, and the frame parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <cmocka.h>

#include "aggregate/flame.h"
#include "report/pprof.h"
#include "report/profile.pb-c.h"

static void test_split(void **state)
{
	char buf[256];
	const char *name, *file;
	long line;

	pt_pprof__split_frame("Sched.run (sched.py:42)", buf, sizeof(buf), &name, &file, &line);
	assert_string_equal(name, "Sched.run");
	assert_string_equal(file, "sched.py");
	assert_int_equal(line, 42);
	pt_pprof__split_frame("main (tid 7)", buf, sizeof(buf), &name, &file, &line);
	assert_string_equal(name, "main (tid 7)");
	assert_null(file);
	pt_pprof__split_frame("[off-cpu]", buf, sizeof(buf), &name, &file, &line);
	assert_string_equal(name, "[off-cpu]");
	assert_int_equal(line, 0);
	/* a name with " (" of its own: the last one is the location */
	pt_pprof__split_frame("f (x) (a.py:3)", buf, sizeof(buf), &name, &file, &line);
	assert_string_equal(name, "f (x)");
	assert_string_equal(file, "a.py");
	assert_int_equal(line, 3);
	pt_pprof__split_frame("g (a.py:x)", buf, sizeof(buf), &name, &file, &line);
	assert_string_equal(name, "g (a.py:x)");
	/* a native frame: its library, no line; a C++ name's own parentheses */
	pt_pprof__split_frame("at::native::linear(at::Tensor const&) (libtorch_cpu.so.1.13.0)", buf,
			      sizeof(buf), &name, &file, &line);
	assert_string_equal(name, "at::native::linear(at::Tensor const&)");
	assert_string_equal(file, "libtorch_cpu.so.1.13.0");
	assert_int_equal(line, 0);
	pt_pprof__split_frame("__vdso_clock_gettime ([vdso])", buf, sizeof(buf), &name, &file,
			      &line);
	assert_string_equal(name, "__vdso_clock_gettime");
	assert_string_equal(file, "[vdso]");
	/* not a library: a thread, words, nothing between the parentheses */
	pt_pprof__split_frame("f (two words)", buf, sizeof(buf), &name, &file, &line);
	assert_string_equal(name, "f (two words)");
	assert_null(file);
	pt_pprof__split_frame("f ()", buf, sizeof(buf), &name, &file, &line);
	assert_string_equal(name, "f ()");
	assert_null(file);
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static void test_roundtrip(void **state)
{
	struct pt_flame *fl = pt_flame__new();
	const char *s1[] = { "main (tid 1)", "run (e.py:10)", "step (e.py:20)" };
	const char *s2[] = { "main (tid 1)", "run (e.py:10)", "step (e.py:21)", "a;b" };
	const char *s3[] = { "main (tid 1)", "run (e.py:10)", "[off-cpu]" };
	struct pt_pprof_opts o = { .time_unix_ns = 5, .duration_ns = 6, .period_us = 1000 };
	Perftools__Profiles__Profile *p;
	unsigned char out[1 << 16];
	uLongf outlen = sizeof(out);
	char *buf = NULL;
	size_t len = 0;
	z_stream z = { 0 };
	FILE *f;

	assert_non_null(fl);
	assert_int_equal(pt_flame__add(fl, s1, 3, 700), 0);
	assert_int_equal(pt_flame__add(fl, s2, 4, 300), 0);
	assert_int_equal(pt_flame__add(fl, s3, 3, 5000), 0);
	f = open_memstream(&buf, &len);
	assert_int_equal(pt_pprof__write(fl, f, &o), 0);
	fclose(f);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (unsigned char *)buf;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)outlen;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	outlen = z.total_out;
	inflateEnd(&z);
	p = perftools__profiles__profile__unpack(NULL, outlen, out);
	assert_non_null(p);
	assert_string_equal(str(p, 0), "");
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(str(p, p->sample_type[0]->type), "cpu");
	assert_string_equal(str(p, p->sample_type[0]->unit), "microseconds");
	assert_string_equal(str(p, p->sample_type[1]->type), "wall");
	assert_string_equal(str(p, p->sample_type[1]->unit), "microseconds");
	assert_string_equal(str(p, p->default_sample_type), "cpu");
	assert_string_equal(str(p, p->period_type->type), "cpu");
	assert_int_equal(p->time_nanos, 5);
	assert_int_equal(p->duration_nanos, 6);
	assert_int_equal(p->period, 1000);
	assert_int_equal(p->n_sample, 3);
	/* main, run, step: 2 functions of e.py + main; 4 locations + "a;b";
	 * [off-cpu] */
	assert_int_equal(p->n_function, 5);
	assert_int_equal(p->n_location, 6);
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *sm = p->sample[i];
		const Perftools__Profiles__Location *leaf = NULL, *root = NULL;

		for (size_t k = 0; k < p->n_location; k++) {
			if (p->location[k]->id == sm->location_id[0])
				leaf = p->location[k];
			if (p->location[k]->id == sm->location_id[sm->n_location_id - 1])
				root = p->location[k];
		}
		assert_non_null(leaf);
		assert_non_null(root);
		for (size_t k = 0; k < p->n_function; k++) {
			const Perftools__Profiles__Function *fn = p->function[k];

			if (fn->id == root->line[0]->function_id)
				assert_string_equal(str(p, fn->name), "main (tid 1)");
			if (fn->id != leaf->line[0]->function_id)
				continue;
			assert_int_equal(sm->n_value, 2);
			if (!strcmp(str(p, fn->name), "[off-cpu]")) {
				/* wall time only */
				assert_int_equal(sm->value[0], 0);
				assert_int_equal(sm->value[1], 5000);
			} else if (sm->n_location_id == 3) {
				assert_int_equal(sm->value[0], 700);
				assert_int_equal(sm->value[1], 700);
				assert_string_equal(str(p, fn->name), "step");
				assert_string_equal(str(p, fn->filename), "e.py");
				assert_int_equal(leaf->line[0]->line, 20);
			} else {
				/* escaped ';' comes back as itself */
				assert_int_equal(sm->n_location_id, 4);
				assert_int_equal(sm->value[0], 300);
				assert_int_equal(sm->value[1], 300);
				assert_string_equal(str(p, fn->name), "a;b");
			}
		}
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	pt_flame__free(fl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
