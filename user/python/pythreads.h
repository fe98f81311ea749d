/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Python thread names (threading.Thread.name), read from outside as
 * py-spy does: the interpreter's sys.modules -> "threading" -> its
 * globals' "_active" (every started, not yet ended Thread, the main
 * thread and _DummyThreads, by ident) -> each Thread's `_name` and
 * `_native_id` (the OS thread id, 3.8+). Through pyattr.h's bounded
 * readers: every object's type checked, every loop bounded, nothing
 * trusted.
 *
 * The tid is as the target sees it: in its own PID namespace.
 */
#ifndef PT_PYTHREADS_H
#define PT_PYTHREADS_H

#include <stddef.h>
#include <stdint.h>

#include "pycode.h"
#include "pylayout.h"

#define PT_PYTHREADS_MAX 4096	       /* threads read at once */
#define PT_PYTHREADS_NAME_MAX 64       /* bytes of a name kept, NUL included */
#define PT_PYTHREADS_MODULES_MAX 65536 /* sys.modules entries searched */

struct pt_pythread {
	uint32_t tid;			  /* Thread._native_id */
	char name[PT_PYTHREADS_NAME_MAX]; /* UTF-8, cut at a character */
};

struct pt_pythreads;

/* runtime: &_PyRuntime in the target. NULL when out of memory. */
struct pt_pythreads *pt_pythreads__new(const struct pt_tmem *m, const struct pt_py_layout *L,
				       const struct pt_pytypes *t, uint64_t runtime);
void pt_pythreads__free(struct pt_pythreads *pt);

/*
 * Read the threads now: 0 with *out (valid until the next call) and *n;
 * -ENOENT when threading is not imported (or has no _active), -ENOTSUP
 * when the layout does not say where sys.modules is, -EINVAL/-EFAULT/
 * -E2BIG when what was read is not what it should be. Threads whose name
 * or id cannot be read are left out.
 */
int pt_pythreads__read(struct pt_pythreads *pt, const struct pt_pythread **out, size_t *n);

/* The name of tid in the last read, NULL when it had none. */
const char *pt_pythreads__name(const struct pt_pythreads *pt, uint32_t tid);

#endif
