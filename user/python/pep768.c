// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "pep768.h"
#include "python.h"

/* Word indices in 3.14's _Py_DebugOffsets (every field a u64, in the
 * order of Include/internal/pycore_debug_offsets.h; read off a 3.14.7
 * build, whose struct has 95 words where 3.14's early alphas had 89, so
 * the sizes and bounds below are checked before any is used): runtime_state {size, finalizing,
 * interpreters_head}, interpreter_state {size, id, next, threads_head, threads_main, ...16},
 * thread_state {...9}, ..., debugger_support {eval_breaker,
 * remote_debugger_support, remote_debugging_enabled,
 * debugger_pending_call, debugger_script_path, debugger_script_path_size}. */
enum {
	W_VERSION = 1,
	W_FREE_THREADED = 2,
	W_RT_SIZE = 3,
	W_RT_FINALIZING = 4,
	W_RT_INTERP_HEAD = 5,
	W_INTERP_SIZE = 6,
	W_INTERP_THREADS_MAIN = 10,
	W_TSTATE_SIZE = 22,
	W_DBG_EVAL_BREAKER = 89,
	W_DBG_SUPPORT = 90,
	W_DBG_ENABLED = 91,
	W_DBG_PENDING = 92,
	W_DBG_PATH = 93,
	W_DBG_PATH_SIZE = 94,
	W_COUNT = 95,
};

#define PLEASE_STOP_BIT (1ull << 5) /* _PY_EVAL_PLEASE_STOP_BIT */

/* [off, off + len) within a struct of size bytes, without wrapping */
static bool inside(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

int pt_pep768__parse(const void *buf, size_t len, struct pt_pep768 *o, char *err, size_t errlen)
{
	uint64_t w[W_COUNT];
	unsigned int minor;

	if (len < sizeof(w) || memcmp(buf, "xdebugpy", 8)) {
		snprintf(err, errlen, "no _Py_DebugOffsets at _PyRuntime");
		return -EINVAL;
	}
	memcpy(w, buf, sizeof(w));
	minor = (unsigned int)(w[W_VERSION] >> 16) & 0xff;
	if ((w[W_VERSION] >> 24) != 3 || minor != 14) {
		snprintf(err, errlen,
			 "remote debugging offsets of Python 3.%u are not known to this "
			 "proftrace (3.14 only)",
			 minor);
		return -ENOTSUP;
	}
	if (w[W_FREE_THREADED]) {
		snprintf(err, errlen, "a free-threaded Python build is not supported");
		return -ENOTSUP;
	}
	o->hexversion = (uint32_t)w[W_VERSION];
	o->interpreters_head = w[W_RT_INTERP_HEAD];
	o->finalizing = w[W_RT_FINALIZING];
	o->threads_main = w[W_INTERP_THREADS_MAIN];
	o->enabled = w[W_DBG_ENABLED];
	o->eval_breaker = w[W_DBG_EVAL_BREAKER];
	o->support = w[W_DBG_SUPPORT];
	o->pending = w[W_DBG_PENDING];
	o->path = w[W_DBG_PATH];
	o->path_size = w[W_DBG_PATH_SIZE];
	/* every offset inside its struct (each size bounded first, so no
	 * sum below can wrap) */
	if (w[W_TSTATE_SIZE] > (1u << 20) || w[W_INTERP_SIZE] > (1u << 24) ||
	    w[W_RT_SIZE] > (1u << 24) || o->path_size < 64 || o->path_size > 4096 ||
	    !inside(o->interpreters_head, 8, w[W_RT_SIZE]) ||
	    !inside(o->finalizing, 8, w[W_RT_SIZE]) ||
	    !inside(o->threads_main, 8, w[W_INTERP_SIZE]) ||
	    !inside(o->enabled, 4, w[W_INTERP_SIZE]) ||
	    !inside(o->eval_breaker, 8, w[W_TSTATE_SIZE]) ||
	    !inside(o->support, 0, w[W_TSTATE_SIZE]) ||
	    !inside(o->path, o->path_size, w[W_TSTATE_SIZE] - o->support) ||
	    !inside(o->pending, 4, w[W_TSTATE_SIZE] - o->support)) {
		snprintf(err, errlen, "implausible remote debugging offsets");
		return -EINVAL;
	}
	return 0;
}

static int wr(int pid, uint64_t addr, const void *src, size_t len)
{
	struct iovec l = { (void *)src, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}

int pt_pep768__exec(int pid, uint64_t runtime, const char *path, char *err, size_t errlen)
{
	uint8_t buf[PT_PEP768_OFFSETS_LEN];
	struct pt_pep768 o;
	uint64_t interp = 0, tstate = 0, fin = 0, eb = 0;
	int32_t enabled = 0, one = 1;
	size_t len = strlen(path);
	int e;

	e = pt_python__read(pid, runtime, buf, sizeof(buf));
	if (e) {
		snprintf(err, errlen, "cannot read _PyRuntime: %s", strerror(-e));
		return e;
	}
	e = pt_pep768__parse(buf, sizeof(buf), &o, err, errlen);
	if (e)
		return e;
	if (path[0] != '/' || len + 1 > o.path_size) {
		snprintf(err, errlen, "the script path must be absolute and under %llu bytes",
			 (unsigned long long)o.path_size);
		return -EINVAL;
	}
	if ((e = pt_python__read(pid, runtime + o.interpreters_head, &interp, 8)) || !interp ||
	    (e = pt_python__read(pid, interp + o.enabled, &enabled, 4)) ||
	    (e = pt_python__read(pid, runtime + o.finalizing, &fin, 8))) {
		snprintf(err, errlen, "cannot read its interpreter state: %s",
			 strerror(e ? -e : EFAULT));
		return e ? e : -EFAULT;
	}
	if (enabled != 1) {
		snprintf(err, errlen,
			 "remote debugging is disabled in it (PYTHON_DISABLE_REMOTE_DEBUG, "
			 "-X disable-remote-debug, or a build without it)");
		return -EPERM;
	}
	if (fin) {
		snprintf(err, errlen, "the interpreter is finalizing");
		return -ESRCH;
	}
	if ((e = pt_python__read(pid, interp + o.threads_main, &tstate, 8)) || !tstate) {
		snprintf(err, errlen, "no main thread state");
		return -ESRCH;
	}
	/* the order CPython's own sender keeps: the path, the flag, then the
	 * breaker bit that makes the thread look at them */
	e = wr(pid, tstate + o.support + o.path, path, len + 1);
	if (!e)
		e = wr(pid, tstate + o.support + o.pending, &one, sizeof(one));
	if (!e)
		e = pt_python__read(pid, tstate + o.eval_breaker, &eb, sizeof(eb));
	if (!e) {
		/* other bits of the word may change meanwhile (a race CPython's
		 * sender has too): a lost bit only delays their next check */
		eb |= PLEASE_STOP_BIT;
		e = wr(pid, tstate + o.eval_breaker, &eb, sizeof(eb));
	}
	if (e)
		snprintf(err, errlen, "cannot write its debugger request: %s", strerror(-e));
	return e;
}
