// SPDX-License-Identifier: BSD-2-Clause
/*
 * A C extension of our own, with known native frames, for mixed
 * native/Python stacks (tests/integration/test_mixed_stacks.py,
 * tests/victims/pymixed.py, bench/run.py's native_frames rows).
 *
 *   spin(ns)          busy-loops for ns in ptn_leaf, reached through
 *                     ptn_spin_outer -> ptn_spin_inner -> ptn_leaf;
 *                     returns the ns it spun, on its own clock
 *   call(fn, *args)   calls fn(*args) through ptn_callback, so a stack
 *                     reads Python -> call -> Python -> spin -> ptn_leaf
 *   block(ns)         sleeps ns off the CPU (nanosleep, the GIL released,
 *                     as an extension's blocking call does) in
 *                     ptn_block_outer -> ptn_block_inner -> libc's nanosleep;
 *                     returns the ns it slept, on its own clock
 *
 * Built (harness.build_ptnative) with -O2 -fomit-frame-pointer, as a
 * distribution builds: no frame pointers, the unwinder needs .eh_frame
 * (kept, the default). The helpers are static, so they are named only
 * by .symtab: the .so is never stripped. Each is noinline and uses its
 * callee's result after the call, so none is inlined into its caller or
 * turned into a tail call (a jump would leave its frame off the stack).
 * Builds against CPython 3.8 to 3.13 headers: only the limited, stable
 * calls (PyObject_Call, PyArg_ParseTuple, PyLong_*).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <time.h>

/* noclone too: an IPA clone (ptn_leaf.constprop.0) would change the name */
#if defined(__clang__)
#define PTN_NOINLINE __attribute__((noinline))
#else
#define PTN_NOINLINE __attribute__((noinline, noclone))
#endif

static unsigned long long ptn_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/*
 * The leaf the samples land in. The clock is read once every PTN_CHUNK
 * increments (a few us), so most samples fall in ptn_leaf itself and few
 * in the vDSO's clock_gettime below it; a call overshoots ns by at most
 * one chunk, which the returned ns counts.
 */
#define PTN_CHUNK 1024

static PTN_NOINLINE unsigned long long ptn_leaf(unsigned long long ns)
{
	unsigned long long t0 = ptn_now(), t;
	volatile unsigned long long n = 0;
	int i;

	do {
		for (i = 0; i < PTN_CHUNK; i++)
			n++;
		t = ptn_now();
	} while (t - t0 < ns);
	return t - t0;
}

static PTN_NOINLINE unsigned long long ptn_spin_inner(unsigned long long ns)
{
	unsigned long long r = ptn_leaf(ns);

	/* used after the call: not a tail call */
	asm volatile("" : "+r"(r));
	return r;
}

static PTN_NOINLINE unsigned long long ptn_spin_outer(unsigned long long ns)
{
	unsigned long long r = ptn_spin_inner(ns);

	asm volatile("" : "+r"(r));
	return r;
}

static PTN_NOINLINE unsigned long long ptn_block_inner(unsigned long long ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	unsigned long long t0 = ptn_now(), r;

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	r = ptn_now() - t0;
	asm volatile("" : "+r"(r));
	return r;
}

static PTN_NOINLINE unsigned long long ptn_block_outer(unsigned long long ns)
{
	unsigned long long r = ptn_block_inner(ns);

	asm volatile("" : "+r"(r));
	return r;
}

static PTN_NOINLINE PyObject *ptn_callback(PyObject *fn, PyObject *args)
{
	PyObject *r = PyObject_Call(fn, args, NULL);

	asm volatile("" : "+r"(r));
	return r;
}

static PyObject *spin(PyObject *self, PyObject *args)
{
	unsigned long long ns;

	if (!PyArg_ParseTuple(args, "K", &ns))
		return NULL;
	return PyLong_FromUnsignedLongLong(ptn_spin_outer(ns));
}

static PyObject *block(PyObject *self, PyObject *args)
{
	unsigned long long ns, r;
	PyThreadState *ts;

	if (!PyArg_ParseTuple(args, "K", &ns))
		return NULL;
	ts = PyEval_SaveThread(); /* Py_BEGIN_ALLOW_THREADS */
	r = ptn_block_outer(ns);
	PyEval_RestoreThread(ts);
	return PyLong_FromUnsignedLongLong(r);
}

static PyObject *call(PyObject *self, PyObject *args)
{
	PyObject *fn, *rest, *r;

	if (PyTuple_Size(args) < 1) {
		PyErr_SetString(PyExc_TypeError, "call(fn, *args): fn missing");
		return NULL;
	}
	fn = PyTuple_GetItem(args, 0);
	if (!PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "call(fn, *args): fn is not callable");
		return NULL;
	}
	rest = PyTuple_GetSlice(args, 1, PyTuple_Size(args));
	if (!rest)
		return NULL;
	r = ptn_callback(fn, rest);
	Py_DECREF(rest);
	return r;
}

static PyMethodDef methods[] = {
	{ "spin", spin, METH_VARARGS, "spin(ns): busy-loop ns in ptn_leaf; the ns spun" },
	{ "call", call, METH_VARARGS, "call(fn, *args): fn(*args) through ptn_callback" },
	{ "block", block, METH_VARARGS, "block(ns): sleep ns in ptn_block_inner; the ns slept" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef mod = { PyModuleDef_HEAD_INIT, "ptnative", NULL, -1, methods };

PyMODINIT_FUNC PyInit_ptnative(void)
{
	return PyModule_Create(&mod);
}
