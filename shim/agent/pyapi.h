/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CPython C API as the agent uses it: looked up at run time with
 * dlsym(RTLD_DEFAULT) in whatever interpreter the process runs (3.8-3.14,
 * a libpython or a static python executable, which exports its API), never
 * linked, so one build serves every version. Only what every GIL build of
 * those versions has in common is assumed: an object starts with its
 * reference count and its type, a PyMethodDef is {name, meth, flags, doc}.
 */
#ifndef PTAG_PYAPI_H
#define PTAG_PYAPI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ptag_object {
	intptr_t ob_refcnt;
	void *ob_type;
} PyObject;

typedef PyObject *(*ptag_fastcall)(PyObject *self, PyObject *const *args, ssize_t nargs);

struct ptag_methoddef {
	const char *ml_name;
	void *ml_meth;
	int ml_flags;
	const char *ml_doc;
};

#define PTAG_METH_FASTCALL 0x0080
#define PTAG_TPFLAGS_HEAPTYPE (1UL << 9)
#define PTAG_TPFLAGS_TYPE_SUBCLASS (1UL << 31)

static inline void *ptag_type(const PyObject *o)
{
	return o->ob_type;
}

struct pt_pyapi {
	unsigned int hex;   /* PY_VERSION_HEX */
	unsigned int minor; /* 3.<minor> */

	const char *(*GetVersion)(void);
	int (*IsInitialized)(void);
	int (*IsFinalizing)(void); /* _Py_IsFinalizing < 3.13, Py_IsFinalizing */
	int (*GILState_Ensure)(void);
	void (*GILState_Release)(int);
	void *(*ThreadState_Get)(void); /* the current PyThreadState, unchecked */
	PyObject *(*Import)(const char *name);
	PyObject *(*GetAttr)(PyObject *o, const char *name);
	PyObject *(*CallObject)(PyObject *callable, PyObject *args);
	PyObject *(*TupleNew)(ssize_t n);
	int (*TupleSetItem)(PyObject *t, ssize_t i, PyObject *o);
	ssize_t (*TupleSize)(PyObject *t);
	PyObject *(*TupleGetItem)(PyObject *t, ssize_t i);
	PyObject *(*LongFromLong)(long v);
	long (*LongAsLong)(PyObject *o);
	PyObject *(*CFunctionNew)(struct ptag_methoddef *def, PyObject *self, PyObject *module);
	void (*ErrClear)(void);
	PyObject *(*ErrOccurred)(void);
	void (*IncRef)(PyObject *o);
	void (*DecRef)(PyObject *o);
	PyObject *(*SysGet)(const char *name);
	int (*DictNext)(PyObject *d, ssize_t *pos, PyObject **k, PyObject **v);
	PyObject *(*DictGetItemString)(PyObject *d, const char *key);
	ssize_t (*DictSize)(PyObject *d);
	PyObject *(*ModuleGetDict)(PyObject *m);
	const char *(*UnicodeAsUTF8)(PyObject *s, ssize_t *len);
	PyObject *(*UnicodeFromString)(const char *s);
	PyObject *(*FunctionGetCode)(PyObject *f);
	PyObject *(*FunctionGetClosure)(PyObject *f);
	PyObject *(*CellGet)(PyObject *c);
	/* the trampolines (3.8-3.11, tramp.c) */
	PyObject *(*RunString)(const char *src, int start, PyObject *globals, PyObject *locals,
			       void *flags);
	PyObject *(*DictNew)(void);
	int (*DictSetItemString)(PyObject *d, const char *key, PyObject *v);
	int (*SetAttr)(PyObject *o, const char *name, PyObject *v);

	/* types, compared by address (no Python code runs to check one) */
	void *FunctionType, *ModuleType, *CodeType, *StaticMethodType, *ClassMethodType;
	void *PropertyType, *TupleType, *CellType, *DictType, *UnicodeType;
	PyObject *None;

	/* the frame evaluator (3.8-3.11) */
	void *(*InterpState_Get)(void);
	void *(*GetEvalFrame)(void *interp);	      /* 3.9+ */
	void (*SetEvalFrame)(void *interp, void *fn); /* 3.9+ */
	void *EvalFrameDefault;
};

/*
 * Is this process a CPython we support? Looks the API up (nothing is
 * called but Py_GetVersion, safe before Py_Initialize). 0; -ENOENT: no
 * CPython in the process (quietly dormant for good); -ENOTSUP: a version
 * or build we do not support, or a symbol missing (why in err).
 */
int pt_pyapi__load(struct pt_pyapi *a, char *err, size_t errlen);

#endif
