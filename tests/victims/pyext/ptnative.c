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
 *   gil(ns)           block(ns)'s sleep, then re-takes the GIL in
 *                     ptn_gil_take (PyEval_RestoreThread: take_gil, which
 *                     waits while another thread holds it); returns
 *                     (ns slept, ns the GIL took to get back), own clock
 *   pool(ns)          runs a job of ns on a worker thread of its own (no
 *                     Python thread state: an OpenMP or tokenizer pool's
 *                     kind, named "ptn-pool", made at the first call),
 *                     spinning in ptn_pool_main -> ptn_pool_work ->
 *                     ptn_leaf, while the caller waits off the CPU (the
 *                     GIL released) in ptn_pool_wait; returns the job's
 *                     CPU time on the worker's own thread clock, in ns
 *   adopt(ns, fn)     a thread of its own ("ptn-adopt") spins ns with no
 *                     Python thread state (a native thread), then takes
 *                     one (PyGILState_Ensure, as a library's callback
 *                     thread does), calls fn() and ends; the caller
 *                     waits, the GIL released. Returns (tid, life_ns,
 *                     spun_ns, spun_cpu_ns): the thread's id, the time
 *                     from its first instruction to its last, and the
 *                     spin's, on its own clocks (wall, thread CPU)
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
#include <pthread.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* The GIL back after a blocking call (Py_END_ALLOW_THREADS): the ns
 * PyEval_RestoreThread took, the wait for the GIL included. */
static PTN_NOINLINE unsigned long long ptn_gil_take(PyThreadState *ts)
{
	unsigned long long t0 = ptn_now(), r;

	PyEval_RestoreThread(ts);
	r = ptn_now() - t0;
	asm volatile("" : "+r"(r));
	return r;
}

/* The worker: one job at a time, handed over under the lock. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool started, busy;
	unsigned long long ns, cpu_ns;
} ptn_pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };

static unsigned long long ptn_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static PTN_NOINLINE unsigned long long ptn_pool_work(unsigned long long ns)
{
	unsigned long long c0 = ptn_thread_cpu(), r;

	r = ptn_leaf(ns);
	asm volatile("" : "+r"(r));
	return ptn_thread_cpu() - c0;
}

static PTN_NOINLINE void *ptn_pool_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&ptn_pool.mu);
	for (;;) {
		unsigned long long ns, cpu;

		while (!ptn_pool.busy)
			pthread_cond_wait(&ptn_pool.cv, &ptn_pool.mu);
		ns = ptn_pool.ns;
		pthread_mutex_unlock(&ptn_pool.mu);
		cpu = ptn_pool_work(ns);
		pthread_mutex_lock(&ptn_pool.mu);
		ptn_pool.cpu_ns = cpu;
		ptn_pool.busy = false;
		pthread_cond_broadcast(&ptn_pool.cv);
	}
	return NULL;
}

/* Hands ns to the worker and waits for it; its CPU time, or -1ull when
 * the worker could not be made. */
static PTN_NOINLINE unsigned long long ptn_pool_wait(unsigned long long ns)
{
	unsigned long long r;

	pthread_mutex_lock(&ptn_pool.mu);
	if (!ptn_pool.started) {
		pthread_t t;

		if (pthread_create(&t, NULL, ptn_pool_main, NULL)) {
			pthread_mutex_unlock(&ptn_pool.mu);
			return -1ull;
		}
		pthread_setname_np(t, "ptn-pool");
		pthread_detach(t);
		ptn_pool.started = true;
	}
	ptn_pool.ns = ns;
	ptn_pool.busy = true;
	pthread_cond_broadcast(&ptn_pool.cv);
	while (ptn_pool.busy)
		pthread_cond_wait(&ptn_pool.cv, &ptn_pool.mu);
	r = ptn_pool.cpu_ns;
	pthread_mutex_unlock(&ptn_pool.mu);
	asm volatile("" : "+r"(r));
	return r;
}

struct ptn_adopt {
	PyObject *fn;
	unsigned long long ns, t0, t1, spun, spun_cpu;
	int tid;
	bool failed;
};

static PTN_NOINLINE void *ptn_adopt_main(void *arg)
{
	struct ptn_adopt *a = arg;
	PyGILState_STATE g;
	PyObject *r;

	a->t0 = ptn_now();
	a->tid = (int)syscall(SYS_gettid);
	a->spun_cpu = ptn_thread_cpu();
	a->spun = ptn_leaf(a->ns);
	a->spun_cpu = ptn_thread_cpu() - a->spun_cpu;
	g = PyGILState_Ensure();
	r = PyObject_CallObject(a->fn, NULL);
	if (r)
		Py_DECREF(r);
	else
		PyErr_Print();
	a->failed = !r;
	PyGILState_Release(g);
	a->t1 = ptn_now();
	return NULL;
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

static PyObject *gil(PyObject *self, PyObject *args)
{
	unsigned long long ns, slept, took;
	PyThreadState *ts;

	if (!PyArg_ParseTuple(args, "K", &ns))
		return NULL;
	ts = PyEval_SaveThread();
	slept = ptn_block_outer(ns);
	took = ptn_gil_take(ts);
	return Py_BuildValue("(KK)", slept, took);
}

static PyObject *pool(PyObject *self, PyObject *args)
{
	unsigned long long ns, r;
	PyThreadState *ts;

	if (!PyArg_ParseTuple(args, "K", &ns))
		return NULL;
	ts = PyEval_SaveThread();
	r = ptn_pool_wait(ns);
	PyEval_RestoreThread(ts);
	if (r == -1ull)
		return PyErr_Format(PyExc_OSError, "pool: the worker thread could not be made");
	return PyLong_FromUnsignedLongLong(r);
}

static PyObject *adopt(PyObject *self, PyObject *args)
{
	struct ptn_adopt a = { 0 };
	PyThreadState *ts;
	pthread_t t;
	int e;

	if (!PyArg_ParseTuple(args, "KO", &a.ns, &a.fn))
		return NULL;
	ts = PyEval_SaveThread();
	e = pthread_create(&t, NULL, ptn_adopt_main, &a);
	if (!e) {
		pthread_setname_np(t, "ptn-adopt");
		pthread_join(t, NULL);
	}
	PyEval_RestoreThread(ts);
	if (e)
		return PyErr_Format(PyExc_OSError, "adopt: the thread could not be made");
	if (a.failed)
		return PyErr_Format(PyExc_RuntimeError, "adopt: fn() raised (printed above)");
	return Py_BuildValue("(iKKK)", a.tid, a.t1 - a.t0, a.spun, a.spun_cpu);
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
	{ "gil", gil, METH_VARARGS, "gil(ns): block(ns), then the GIL back; (slept, took) ns" },
	{ "pool", pool, METH_VARARGS, "pool(ns): spin ns on the ptn-pool thread; its CPU ns" },
	{ "adopt", adopt, METH_VARARGS,
	  "adopt(ns, fn): a native thread spins ns, then calls fn() with a thread state of its "
	  "own; "
	  "(tid, life ns, spun ns)" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef mod = { PyModuleDef_HEAD_INIT, "ptnative", NULL, -1, methods };

PyMODINIT_FUNC PyInit_ptnative(void)
{
	return PyModule_Create(&mod);
}
