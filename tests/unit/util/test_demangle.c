// SPDX-License-Identifier: BSD-2-Clause
/*
 * C++ names: libstdc++'s demangler on real manglings (as g++ and libtorch
 * emit them), the qualified name a glob without parameters sees, the
 * identifier that pre-filters symbols, and glob matching.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/demangle.h"

static void check_dem(const char *mangled, const char *want)
{
	char *d = pt_demangle(mangled);

	assert_non_null(d);
	assert_string_equal(d, want);
	free(d);
}

static void test_demangle(void **state)
{
	check_dem("_ZN2at4_ops6linear4callERKNS_6TensorES4_RKSt8optionalIS2_E",
		  "at::_ops::linear::call(at::Tensor const&, at::Tensor const&, "
		  "std::optional<at::Tensor> const&)");
	check_dem("_ZN3eng5scaleIdEET_S1_", "double eng::scale<double>(double)");
	check_dem("_ZNK3eng7FunctorclEi", "eng::Functor::operator()(int) const");
	/* C names, broken manglings and NULL are not C++ */
	assert_null(pt_demangle("malloc"));
	assert_null(pt_demangle("_Zjunk"));
	assert_null(pt_demangle(NULL));
}

static void check_base(const char *d, const char *want)
{
	char buf[256];

	assert_string_equal(pt_demangle__base(d, buf, sizeof(buf)), want);
}

static void test_base(void **state)
{
	check_base("at::_ops::linear::call(at::Tensor const&, at::Tensor const&)",
		   "at::_ops::linear::call");
	check_base("double eng::scale<double>(double)", "eng::scale<double>");
	check_base("eng::Functor::operator()(int) const", "eng::Functor::operator()");
	check_base("bool ns::operator< <int>(ns::X<int> const&, ns::X<int> const&)",
		   "ns::operator< <int>");
	check_base("std::ostream& ns::operator<<(std::ostream&, ns::X const&)", "ns::operator<<");
	check_base("ns::X::operator unsigned long() const", "ns::X::operator unsigned long");
	check_base("ns::X::operator new(unsigned long)", "ns::X::operator new");
	check_base("(anonymous namespace)::helper()", "(anonymous namespace)::helper");
	check_base("ns::f(int) [clone .cold]", "ns::f");
	check_base("ns::f()::{lambda(int)#1}::operator()(int) const",
		   "ns::f()::{lambda(int)#1}::operator()");
	check_base("std::vector<int, std::allocator<int> >::push_back(int const&)",
		   "std::vector<int, std::allocator<int> >::push_back");
	/* thunks keep their whole name: `ns::C::f` is not a thunk */
	check_base("non-virtual thunk to ns::C::f()", "non-virtual thunk to ns::C::f()");
	/* truncation stays a C string */
	{
		char small[4];

		assert_string_equal(pt_demangle__base("abcdef()", small, sizeof(small)), "abc");
	}
}

static void check_short(const char *name, size_t width, const char *want)
{
	char buf[256];

	assert_string_equal(pt_demangle__short(name, width, buf, sizeof(buf)), want);
	assert_true(strlen(buf) <= width);
}

/* PyTorch's kernels as CUPTI names them, and as report.md's tables show
 * them: whole when they fit, else template argument lists collapsed from
 * the innermost out, then cut. */
static void test_short(void **state)
{
	static const char reduce[] =
		"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_"
		"11sum_functorIfffEclERNS_18TensorIteratorBaseEEUlffE_EEjfLi4ELi4EEEEEvT1_";
	static const char fill[] = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
				   "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
	char *r = pt_demangle(reduce), *f = pt_demangle(fill), buf[8];

	assert_non_null(r);
	assert_non_null(f);
	assert_int_equal(strncmp(r, "void at::native::reduce_kernel<512, 1, ", 39), 0);
	/* fits: whole, return type and all */
	check_short(f, 200, f);
	check_short("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", 41,
		    "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN");
	/* the qualified name, "(...)"; then the innermost lists first */
	check_short(f, 120,
		    "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
		    "std::array<char*, 1ul> >(...)");
	check_short(f, 100,
		    "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<...>, "
		    "std::array<...> >(...)");
	check_short(f, 80, "at::native::vectorized_elementwise_kernel<...>(...)");
	check_short(r, 100, "at::native::reduce_kernel<512, 1, at::native::ReduceOp<...> >(...)");
	check_short(r, 60, "at::native::reduce_kernel<...>(...)");
	/* lists no longer than "<...>" stay; operators are no brackets */
	check_short("void ns::k<int, ns::T<float, double> >(ns::T<float, double>)", 30,
		    "ns::k<int, ns::T<...> >(...)");
	check_short("void ns::k<int, ns::T<float, double> >(ns::T<float, double>)", 25,
		    "ns::k<...>(...)");
	check_short("void ns::k<int>(ns::T<float, double>, int, int, int)", 30, "ns::k<int>(...)");
	check_short("bool ns::operator< <ns::X<int, int> >(ns::X<int> const&)", 30,
		    "ns::operator< <...>(...)");
	check_short("void ns::f<ns::X<int> >()::{lambda(int)#1}::operator()(int) const", 60,
		    "ns::f<ns::X<int> >()::{lambda(int)#1}::operator()(...)");
	check_short("void ns::f<ns::X<int> >()::{lambda(int)#1}::operator()(int) const", 50,
		    "ns::f<...>()::{lambda(int)#1}::operator()(...)");
	/* still too long, or a long C name: cut, as PyTorch's tables do */
	check_short(r, 20, "at::native::reduc...");
	check_short("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0", 20,
		    "triton_per_fused_...");
	/* never mid UTF-8 character; out is cut at len */
	check_short("ab\xc3\xa9"
		    "cdefghijkl",
		    6, "ab...");
	pt_demangle__short(r, 100, buf, sizeof(buf));
	assert_string_equal(buf, "at::nat");
	free(r);
	free(f);
}

static void check_lit(const char *glob, const char *want)
{
	char buf[64];

	pt_demangle__literal(glob, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_literal(void **state)
{
	check_lit("at::_ops::linear::call", "linear");
	check_lit("at::native::*softmax*", "softmax");
	check_lit("std::vector<unsigned_long>::push_back", "push_back");
	/* template arguments, parameters, std, operators, bracket sets and
	 * the anonymous namespace are not spelled out in the symbol */
	check_lit("ns::f<verylongtypename>(verylongparameter)", "ns");
	check_lit("std::*", "");
	check_lit("X::operator()", "X");
	check_lit("[abcdefgh]x::y", "x");
	check_lit("(anonymous?namespace)::helper", "helper");
	check_lit("*", "");
}

static void test_match(void **state)
{
	const char *lin = "at::_ops::linear::call(at::Tensor const&, at::Tensor const&)";

	assert_true(pt_demangle__match("at::_ops::linear::call", lin));
	assert_true(pt_demangle__match("at::*::call", lin));
	assert_false(pt_demangle__match("at::_ops::linear", lin));
	assert_false(pt_demangle__match("_ops::linear::call", lin));
	/* a parameter list: the whole name, no space after commas */
	assert_true(pt_demangle__match("at::_ops::linear::call(at::Tensor?const&,*)", lin));
	assert_false(pt_demangle__match("at::_ops::linear::call(int)", lin));
	assert_true(pt_demangle__match("eng::add(int)", "eng::add(int)"));
	assert_false(pt_demangle__match("eng::add(int)", "eng::add(double)"));
	assert_true(pt_demangle__match("eng::add", "eng::add(double)"));
	assert_true(pt_demangle__match("eng::Functor::operator()",
				       "eng::Functor::operator()(int) const"));
	assert_true(pt_demangle__match("eng::Functor::operator()(int)?const",
				       "eng::Functor::operator()(int) const"));
	assert_true(pt_demangle__match("eng::scale<*>", "double eng::scale<double>(double)"));
	assert_false(pt_demangle__match("ns::C::f", "non-virtual thunk to ns::C::f()"));
	assert_true(pt_demangle__is_cxx_glob("a::b"));
	assert_true(pt_demangle__is_cxx_glob("f(int)"));
	assert_false(pt_demangle__is_cxx_glob("engine_*"));
	assert_false(pt_demangle__is_cxx_glob("(anonymous"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle), cmocka_unit_test(test_base),
		cmocka_unit_test(test_short),	 cmocka_unit_test(test_literal),
		cmocka_unit_test(test_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
