// SPDX-License-Identifier: BSD-2-Clause
/* Regions to kernel launches: matching by name and launch order, one
 * offset per clock or per launch, residual, figures per tag. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aggregate/regionmatch.h"

/* A set built by hand: tags "a", "b". */
static void set_init(struct pt_region_set *s)
{
	pt_regionfile__init(s);
	s->tags = calloc(2, sizeof(*s->tags));
	s->tags[0] = strdup("a");
	s->tags[1] = strdup("b");
	s->ntags = 2;
}

static struct pt_region_launch *add(struct pt_region_set *s, const char *kernel, int64_t launch,
				    const char *clock)
{
	struct pt_region_launch *l;

	s->l = realloc(s->l, (s->nl + 1) * sizeof(*s->l));
	l = &s->l[s->nl++];
	memset(l, 0, sizeof(*l));
	l->kernel = kernel ? strdup(kernel) : NULL;
	l->launch = launch;
	l->source = strdup("src");
	l->clock = clock ? clock : PT_REGIONS_GPU_CLOCK;
	return l;
}

static void ev(struct pt_region_launch *l, uint64_t start, uint64_t dur, uint32_t tag)
{
	l->ev = realloc(l->ev, (l->nev + 1) * sizeof(*l->ev));
	l->ev[l->nev++] = (struct pt_region){ start, dur, tag, 0 };
	l->recorded = l->nev;
}

#define G 1000000ull /* GPU clock = trace + G */

/* gemm launches at 100, 300, 500 (100 long), on two streams in the
 * trace; attn at 200 (50 long). Given out of order. */
/* clang-format off */
static const struct pt_kspan SP[] = {
	{ "gemm", 500, 600 }, { "attn", 200, 250 }, { "gemm", 100, 200 }, { "gemm", 300, 400 },
};
/* clang-format on */

static void test_match_order_and_figures(void **state)
{
	struct pt_regions_result r;
	struct pt_region_set s;
	struct pt_region_launch *l;

	set_init(&s);
	/* gemm in order: launch 0 (t 100) and 1 (t 300); "a" twice
	 * overlapping in launch 0 */
	l = add(&s, "gemm", -1, NULL);
	ev(l, G + 110, 40, 0);
	ev(l, G + 130, 40, 0); /* union 110..170: 60 */
	ev(l, G + 180, 10, 1);
	l = add(&s, "gemm", -1, NULL);
	ev(l, G + 310, 20, 0);
	/* attn by default kernel, launch 0 */
	l = add(&s, NULL, -1, NULL);
	ev(l, G + 210, 30, 1);
	assert_int_equal(pt_regionmatch__match(&s, "attn", SP, 4, &r), 0);
	assert_int_equal(r.launches_matched, 3);
	assert_int_equal(r.unmatched, 0);
	assert_int_equal(r.m[0].span, 2); /* gemm at 100 */
	assert_int_equal(r.m[1].span, 3); /* gemm at 300 */
	assert_int_equal(r.m[1].launch, 1);
	assert_int_equal(r.m[2].span, 1);
	assert_true(r.global);
	assert_int_equal(r.nclocks, 1);
	assert_int_equal(r.clocks[0].launches, 3);
	/* every launch allows [-G - 10 .. -G + 10] or wider: the middle */
	assert_true(r.m[0].offset_ns == r.m[1].offset_ns && r.m[1].offset_ns == r.m[2].offset_ns);
	assert_int_equal(r.residual_max_ns, 0);
	assert_int_equal(r.regions_outside, 0);
	assert_int_equal(r.ntags, 3); /* gemm a, gemm b, attn b */
	for (size_t i = 0; i < r.ntags; i++) {
		const struct pt_rtag *t = &r.tags[i];

		if (!strcmp(t->kernel, "gemm") && t->tag == 0) {
			assert_int_equal(t->count, 3);
			assert_int_equal(t->total_ns, 100);
			assert_int_equal(t->launches, 2);
			assert_int_equal(t->union_ns, 80);
			assert_int_equal(t->kernel_ns, 200);
			assert_int_equal(t->p50_ns, 20); /* per launch: 80 and 20 */
			assert_int_equal(t->p99_ns, 80);
			assert_int_equal(t->mean_ns, 50);
		} else if (!strcmp(t->kernel, "gemm")) {
			assert_int_equal(t->count, 1);
			assert_int_equal(t->kernel_ns, 200);
		} else {
			assert_string_equal(t->kernel, "attn");
			assert_int_equal(t->union_ns, 30);
			assert_int_equal(t->kernel_ns, 50);
		}
	}
	assert_int_equal(r.nkernels, 2);
	pt_regionmatch__result_free(&r);
	pt_regionfile__free(&s);
}

static void test_unmatched(void **state)
{
	struct pt_regions_result r;
	struct pt_region_set s;
	struct pt_region_launch *l;

	set_init(&s);
	ev(add(&s, "nope", -1, NULL), G, 10, 0);      /* no such kernel */
	ev(add(&s, "gemm", 3, NULL), G, 10, 0);	      /* past the 3 launches */
	ev(add(&s, "gemm", 1, NULL), G + 310, 10, 0); /* explicit */
	ev(add(&s, "gemm", 1, NULL), G + 310, 10, 0); /* the same launch again */
	ev(add(&s, NULL, -1, NULL), G, 10, 0);	      /* no name, no default */
	add(&s, "gemm", -1, NULL);		      /* no regions */
	l = add(&s, "gemm", -1, NULL);		      /* in order: 0 (1 is taken) */
	ev(l, G + 120, 10, 0);
	l = add(&s, "gemm", -1, NULL); /* in order: 2 */
	ev(l, G + 520, 10, 0);
	l = add(&s, "gemm", -1, NULL); /* none left */
	ev(l, G + 720, 10, 0);
	l = add(&s, "attn", -1, NULL);
	ev(l, G, 10, 0);
	l->overflow = true;
	assert_int_equal(pt_regionmatch__match(&s, NULL, SP, 4, &r), 0);
	assert_int_equal(r.m[0].span, -1);
	assert_non_null(strstr(r.m[0].why, "no kernel of that name"));
	assert_non_null(strstr(r.m[1].why, "launch index past"));
	assert_int_equal(r.m[2].span, 3);
	assert_non_null(strstr(r.m[3].why, "another file"));
	assert_non_null(strstr(r.m[4].why, "no kernel name"));
	assert_non_null(strstr(r.m[5].why, "no valid regions"));
	assert_int_equal(r.m[6].span, 2);
	assert_int_equal(r.m[6].launch, 0);
	assert_int_equal(r.m[7].span, 0);
	assert_int_equal(r.m[7].launch, 2);
	assert_non_null(strstr(r.m[8].why, "more region launches"));
	assert_int_equal(r.m[9].span, 1);
	assert_int_equal(r.launches_matched, 4);
	assert_int_equal(r.unmatched, 6);
	assert_int_equal(r.overflowed, 1);
	pt_regionmatch__result_free(&r);
	pt_regionfile__free(&s);
}

/* Offsets that do not agree: each launch its own, spread reported; a
 * launch longer than its kernel is centred and its residual said. Two
 * clocks each fit their own offset. */
static void test_alignment(void **state)
{
	struct pt_regions_result r;
	struct pt_region_set s;
	struct pt_region_launch *l;

	set_init(&s);
	l = add(&s, "gemm", 0, NULL);
	ev(l, G + 100, 100, 0); /* exactly: offset -G */
	l = add(&s, "gemm", 1, NULL);
	ev(l, G + 350, 50, 0); /* allows [-G - 50, -G]: not -G... */
	ev(l, G + 300, 10, 0); /* ...pinned: [-G, -G]; drifted below */
	l->ev[0].start_ns += 1000;
	l->ev[1].start_ns += 1000; /* -G - 1000 only */
	l = add(&s, "gemm", 2, NULL);
	ev(l, G + 490, 120, 1); /* 120 in a kernel of 100: centred, 10 out each side */
	assert_int_equal(pt_regionmatch__match(&s, NULL, SP, 4, &r), 0);
	assert_false(r.global);
	assert_int_equal(r.nclocks, 1);
	assert_false(r.clocks[0].one_offset);
	assert_int_equal(r.m[0].offset_ns, -(int64_t)G);
	assert_int_equal(r.m[1].offset_ns, -(int64_t)G - 1000);
	assert_int_equal(r.m[2].offset_ns, -(int64_t)G);
	assert_int_equal(r.clocks[0].offset_min_ns, -(int64_t)G - 1000);
	assert_int_equal(r.clocks[0].offset_max_ns, -(int64_t)G);
	assert_int_equal(r.residual_max_ns, 10);
	assert_int_equal(r.regions_outside, 1);
	assert_int_equal(r.m[2].outside, 1);
	pt_regionmatch__result_free(&r);
	pt_regionfile__free(&s);

	set_init(&s);
	ev(add(&s, "gemm", 0, "x.json"), 5100, 100, 0);
	ev(add(&s, "gemm", 1, "x.json"), 5300, 100, 0);
	ev(add(&s, "gemm", 2, NULL), G + 500, 100, 0);
	assert_int_equal(pt_regionmatch__match(&s, NULL, SP, 4, &r), 0);
	assert_true(r.global);
	assert_int_equal(r.nclocks, 2);
	assert_int_equal(r.m[0].offset_ns, -5000);
	assert_int_equal(r.m[1].offset_ns, -5000);
	assert_int_equal(r.m[2].offset_ns, -(int64_t)G);
	pt_regionmatch__result_free(&r);
	pt_regionfile__free(&s);
}

/* trace.json names a C++ kernel demangled and keeps CUPTI's name in
 * args.mangled: a region file may use either. */
static void test_match_mangled(void **state)
{
	static const struct pt_kspan sp[] = {
		{ "void ns::k<4>(float*)", 100, 200, "_ZN2ns1kILi4EEEvPf" },
		{ "void ns::k<4>(float*)", 300, 400, "_ZN2ns1kILi4EEEvPf" },
	};
	struct pt_regions_result r;
	struct pt_region_set s;

	set_init(&s);
	ev(add(&s, "_ZN2ns1kILi4EEEvPf", -1, NULL), G + 110, 10, 0);
	ev(add(&s, "void ns::k<4>(float*)", 1, NULL), G + 310, 10, 0);
	ev(add(&s, "_ZN2ns1kILi5EEEvPf", -1, NULL), G + 110, 10, 0);
	assert_int_equal(pt_regionmatch__match(&s, NULL, sp, 2, &r), 0);
	assert_int_equal(r.m[0].span, 0);
	assert_int_equal(r.m[1].span, 1);
	assert_int_equal(r.m[2].span, -1);
	assert_int_equal(r.launches_matched, 2);
	pt_regionmatch__result_free(&r);
	pt_regionfile__free(&s);
}

static void test_empty(void **state)
{
	struct pt_regions_result r;
	struct pt_region_set s;

	pt_regionfile__init(&s);
	assert_int_equal(pt_regionmatch__match(&s, NULL, NULL, 0, &r), 0);
	assert_int_equal(r.launches_matched, 0);
	assert_false(r.global);
	pt_regionmatch__result_free(&r);
	pt_regionmatch__result_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_order_and_figures),
		cmocka_unit_test(test_unmatched),
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_match_mangled),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests_name("regions_match", tests, NULL, NULL);
}
