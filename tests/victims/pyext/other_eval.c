// SPDX-License-Identifier: BSD-2-Clause
/*
 * Another tool's PEP 523 frame evaluator (as a JIT or a debugger installs
 * one), for CPython 3.9 and 3.10: it counts frames and hands each to the
 * default evaluator. tests/integration/test_agent.py builds it against an
 * interpreter's headers and checks that the agent leaves it in place.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static unsigned long long frames;

/* exported, as a JIT's entry point is: the agent names it */
PyObject *other_eval(PyThreadState *ts, PyFrameObject *f, int throwflag);

PyObject *other_eval(PyThreadState *ts, PyFrameObject *f, int throwflag)
{
	frames++;
	return _PyEval_EvalFrameDefault(ts, f, throwflag);
}

static PyObject *install(PyObject *self, PyObject *unused)
{
	_PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), other_eval);
	Py_RETURN_NONE;
}

static PyObject *installed(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(_PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) ==
			       other_eval);
}

static PyObject *count(PyObject *self, PyObject *unused)
{
	return PyLong_FromUnsignedLongLong(frames);
}

static PyMethodDef methods[] = {
	{ "install", install, METH_NOARGS, NULL },
	{ "installed", installed, METH_NOARGS, NULL },
	{ "frames", count, METH_NOARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef mod = { PyModuleDef_HEAD_INIT, "other_eval", NULL, -1, methods };

PyMODINIT_FUNC PyInit_other_eval(void)
{
	return PyModule_Create(&mod);
}
