/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CPython interpreter inside a target: which file holds it (a static
 * python3.X executable or libpython3.X.so), its version, its layout, where
 * _PyEval_EvalFrameDefault is, and whether the perf trampoline is on.
 */
#ifndef PT_PYTHON_H
#define PT_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attach/maps.h"
#include "attach/prologue.h"
#include "pylayout.h"

struct pt_python {
	char *path;	     /* as the target sees it (maps) */
	char *host_path;     /* to open and probe from here */
	uint32_t hexversion; /* PY_VERSION_HEX; micro/level 0 when not known */
	char version[32];    /* "3.11.7", or "3.9" when the micro is not known */
	struct pt_py_layout L;
	uint64_t evalframe_off; /* file offset of _PyEval_EvalFrameDefault */
	struct pt_probe_site site;
	uint64_t runtime;      /* &_PyRuntime in the target */
	uint64_t code_type;    /* &PyCode_Type */
	uint64_t unicode_type; /* &PyUnicode_Type */
	uint64_t trampoline;   /* py_trampoline_evaluator; 0: not in the symbols */
};

/*
 * Find the interpreter among the target's mappings. 0; -ENOENT when the
 * process has no CPython; -ENOTSUP for a version proftrace cannot read;
 * other -errno. Messages are one line in err, saying what was found, not
 * what to do: that depends on why the caller wanted Python (py: probes,
 * or only stack sampling).
 */
int pt_python__find(struct pt_python *py, const struct pt_maps *maps, int pid, char *err,
		    size_t errlen);
void pt_python__free(struct pt_python *py);

/* Read len bytes of the target at addr: 0, or -errno (-EFAULT when short). */
int pt_python__read(int pid, uint64_t addr, void *buf, size_t len);

/*
 * Is the perf trampoline (3.12+ PYTHONPERFSUPPORT=1, -X perf,
 * sys.activate_stack_trampoline) installed as the main interpreter's
 * eval_frame hook? With it every Python call enters
 * _PyEval_EvalFrameDefault. 1 yes, 0 no, -errno when it cannot be read.
 */
int pt_python__trampoline(const struct pt_python *py, int pid);

#endif
