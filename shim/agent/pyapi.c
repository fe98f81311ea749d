// SPDX-License-Identifier: BSD-2-Clause
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyapi.h"

/* "3.11.7 (main, ...)" -> 0x030b07f0 (the release level is not needed). */
static unsigned int parse_version(const char *v)
{
	unsigned long major, minor, micro;
	char *end;

	major = strtoul(v, &end, 10);
	if (*end != '.')
		return 0;
	minor = strtoul(end + 1, &end, 10);
	micro = *end == '.' ? strtoul(end + 1, &end, 10) : 0;
	if (major != 3 || minor > 255 || micro > 255)
		return 0;
	return (unsigned int)(major << 24 | minor << 16 | micro << 8 | 0xf0);
}

#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&a->field = dlsym(RTLD_DEFAULT, name);                                   \
		if (!a->field) {                                                                   \
			snprintf(err, errlen, "Python %u.%u has no %s", 3, a->minor, name);        \
			return -ENOTSUP;                                                           \
		}                                                                                  \
	} while (0)

int pt_pyapi__load(struct pt_pyapi *a, char *err, size_t errlen)
{
	const char *v;

	memset(a, 0, sizeof(*a));
	*(void **)&a->GetVersion = dlsym(RTLD_DEFAULT, "Py_GetVersion");
	*(void **)&a->IsInitialized = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	if (!a->GetVersion || !a->IsInitialized) {
		snprintf(err, errlen, "no CPython in this process");
		return -ENOENT;
	}
	v = a->GetVersion();
	a->hex = v ? parse_version(v) : 0;
	a->minor = (a->hex >> 16) & 0xff;
	if (!a->hex || a->minor < 8 || a->minor > 14) {
		snprintf(err, errlen, "Python %.20s is not supported (3.8 to 3.14)", v ? v : "?");
		return -ENOTSUP;
	}
	/* a free-threaded build says so in its version string */
	if (strstr(v, "free-threading")) {
		snprintf(err, errlen, "a free-threaded Python build is not supported");
		return -ENOTSUP;
	}
	SYM(IsFinalizing, a->minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
	SYM(GILState_Ensure, "PyGILState_Ensure");
	SYM(GILState_Release, "PyGILState_Release");
	SYM(ThreadState_Get,
	    a->minor >= 13 ? "PyThreadState_GetUnchecked" : "_PyThreadState_UncheckedGet");
	SYM(Import, "PyImport_ImportModule");
	SYM(GetAttr, "PyObject_GetAttrString");
	SYM(CallObject, "PyObject_CallObject");
	SYM(TupleNew, "PyTuple_New");
	SYM(TupleSetItem, "PyTuple_SetItem");
	SYM(TupleSize, "PyTuple_Size");
	SYM(TupleGetItem, "PyTuple_GetItem");
	SYM(LongFromLong, "PyLong_FromLong");
	SYM(LongAsLong, "PyLong_AsLong");
	SYM(CFunctionNew, "PyCFunction_NewEx");
	SYM(ErrClear, "PyErr_Clear");
	SYM(ErrOccurred, "PyErr_Occurred");
	SYM(IncRef, "Py_IncRef");
	SYM(DecRef, "Py_DecRef");
	SYM(SysGet, "PySys_GetObject");
	SYM(DictNext, "PyDict_Next");
	SYM(DictGetItemString, "PyDict_GetItemString");
	SYM(DictSize, "PyDict_Size");
	SYM(ModuleGetDict, "PyModule_GetDict");
	SYM(UnicodeAsUTF8, "PyUnicode_AsUTF8AndSize");
	SYM(UnicodeFromString, "PyUnicode_FromString");
	SYM(FunctionGetCode, "PyFunction_GetCode");
	SYM(FunctionGetClosure, "PyFunction_GetClosure");
	SYM(CellGet, "PyCell_Get");
	SYM(RunString, "PyRun_StringFlags");
	SYM(DictNew, "PyDict_New");
	SYM(DictSetItemString, "PyDict_SetItemString");
	SYM(SetAttr, "PyObject_SetAttrString");
	SYM(FunctionType, "PyFunction_Type");
	SYM(ModuleType, "PyModule_Type");
	SYM(CodeType, "PyCode_Type");
	SYM(StaticMethodType, "PyStaticMethod_Type");
	SYM(ClassMethodType, "PyClassMethod_Type");
	SYM(PropertyType, "PyProperty_Type");
	SYM(TupleType, "PyTuple_Type");
	SYM(CellType, "PyCell_Type");
	SYM(DictType, "PyDict_Type");
	SYM(UnicodeType, "PyUnicode_Type");
	SYM(None, "_Py_NoneStruct");
	if (a->minor <= 11) {
		/* 3.8 may not export it: PyThreadState.interp (at 16 on
		 * 3.8-3.14) is read instead (agent.c) */
		if (a->minor == 8)
			*(void **)&a->InterpState_Get =
				dlsym(RTLD_DEFAULT, "_PyInterpreterState_Get");
		else
			SYM(InterpState_Get, "PyInterpreterState_Get");
		SYM(EvalFrameDefault, "_PyEval_EvalFrameDefault");
		if (a->minor >= 9) {
			SYM(GetEvalFrame, "_PyInterpreterState_GetEvalFrameFunc");
			SYM(SetEvalFrame, "_PyInterpreterState_SetEvalFrameFunc");
		}
	}
	return 0;
}
