// SPDX-License-Identifier: BSD-2-Clause
/*
 * A C++ "engine" for the demangled-name tests: namespaces, a class, an
 * overload set, a function template, an operator and an anonymous
 * namespace, each measuring itself (victim.h). Protocol as victim_engine:
 * "ready <pid>", wait for a line, run --steps steps, write --truth FILE.
 */
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "victim.h"

#define US 1000ull

static struct vt_truth t_step, t_linear, t_softmax_f, t_softmax_b, t_add_i, t_add_d, t_scale,
	t_call_op, t_anon;

namespace eng {
namespace ops {
struct linear {
	VT_FN static void call(int n)
	{
		uint64_t t0 = vt_now();

		vt_spin((uint64_t)n * US);
		vt_add(&t_linear, t0);
	}
};

VT_FN void softmax_forward(float x)
{
	uint64_t t0 = vt_now();

	vt_spin(30 * US + (x > 1e9f));
	vt_add(&t_softmax_f, t0);
}

VT_FN void log_softmax_backward(double x)
{
	uint64_t t0 = vt_now();

	vt_spin(20 * US + (x > 1e9));
	vt_add(&t_softmax_b, t0);
}
} // namespace ops

/* an overload set: `eng::add` selects both, `eng::add(int)` one */
VT_FN void add(int x)
{
	uint64_t t0 = vt_now();

	vt_spin(10 * US + (x > 1 << 30));
	vt_add(&t_add_i, t0);
}

VT_FN void add(double x)
{
	uint64_t t0 = vt_now();

	vt_spin(15 * US + (x > 1e9));
	vt_add(&t_add_d, t0);
}

template <typename T> VT_FN T scale(T x)
{
	uint64_t t0 = vt_now();

	vt_spin(5 * US);
	vt_add(&t_scale, t0);
	return x * 2;
}

struct Functor {
	int k;
	VT_FN void operator()(int n) const
	{
		uint64_t t0 = vt_now();

		vt_spin((uint64_t)(n + k) * US);
		vt_add(&t_call_op, t0);
	}
};

class Runner {
public:
	VT_FN void step(int i);
};
} // namespace eng

namespace {
VT_FN void helper(void)
{
	uint64_t t0 = vt_now();

	vt_spin(5 * US);
	vt_add(&t_anon, t0);
}
} // namespace

void eng::Runner::step(int i)
{
	uint64_t t0 = vt_now();
	eng::Functor fn{2};

	VT_CALL(&t_linear, ops::linear::call(40));
	VT_CALL(&t_softmax_f, ops::softmax_forward((float)i));
	VT_CALL(&t_softmax_b, ops::log_softmax_backward((double)i));
	VT_CALL(&t_add_i, add(i));
	VT_CALL(&t_add_d, add((double)i));
	VT_CALL(&t_scale, scale<double>((double)i));
	VT_CALL(&t_call_op, fn(3));
	VT_CALL(&t_anon, helper());
	vt_spin(10 * US);
	vt_add(&t_step, t0);
}

static void dump(FILE *f, const char *name, const struct vt_truth *t, int last)
{
	fprintf(f, "    \"%s\": {\"calls\": %llu, \"total_ns\": %llu, \"outer_ns\": %llu}%s\n", name,
		(unsigned long long)t->calls, (unsigned long long)t->total_ns,
		(unsigned long long)t->outer_ns, last ? "" : ",");
}

int main(int argc, char **argv)
{
	const char *truth = NULL;
	int nsteps = 100;
	char buf[64];
	eng::Runner r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			nsteps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else
			return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(buf, sizeof(buf), stdin))
		return 3;
	for (int i = 0; i < nsteps; i++)
		VT_CALL(&t_step, r.step(i));
	if (truth) {
		FILE *f = fopen(truth, "w");

		if (!f)
			return 1;
		fprintf(f, "{\n  \"steps\": %d,\n  \"functions\": {\n", nsteps);
		dump(f, "step", &t_step, 0);
		dump(f, "linear", &t_linear, 0);
		dump(f, "softmax_forward", &t_softmax_f, 0);
		dump(f, "log_softmax_backward", &t_softmax_b, 0);
		dump(f, "add_int", &t_add_i, 0);
		dump(f, "add_double", &t_add_d, 0);
		dump(f, "scale", &t_scale, 0);
		dump(f, "call_op", &t_call_op, 0);
		dump(f, "anon", &t_anon, 1);
		fprintf(f, "  }\n}\n");
		fclose(f);
	}
	return 0;
}
