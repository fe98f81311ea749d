/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CPython 3.14's remote debugging interface (PEP 768, what
 * sys.remote_exec() does), driven from outside: ask the main thread of a
 * live interpreter to run a Python file at its next safe point. proftrace
 * uses it to load the Python agent into a 3.14 process started without it
 * (nothing to set at start there). The protocol, from CPython's
 * Python/remote_debugging.c: read _Py_DebugOffsets at the start of
 * _PyRuntime, check remote debugging is enabled, write the script's path
 * into the main thread state's debugger support, set its pending flag and
 * the eval breaker's "please stop" bit. Every word read from the target is
 * checked before it is used as an offset.
 */
#ifndef PT_PEP768_H
#define PT_PEP768_H

#include <stddef.h>
#include <stdint.h>

/* _Py_DebugOffsets of 3.14 (760 bytes: 95 u64 words) */
#define PT_PEP768_OFFSETS_LEN 760

struct pt_pep768 {
	uint32_t hexversion;
	uint64_t interpreters_head; /* _PyRuntime -> first interpreter */
	uint64_t finalizing;	    /* _PyRuntime._finalizing (thread state while finalizing) */
	uint64_t threads_main;	    /* interpreter -> main thread state */
	uint64_t enabled;	    /* interpreter -> int config.remote_debug */
	uint64_t eval_breaker;	    /* thread state -> uintptr_t eval_breaker */
	uint64_t support;	    /* thread state -> _PyRemoteDebuggerSupport */
	uint64_t pending;	    /* support -> int32 debugger_pending_call */
	uint64_t path;		    /* support -> char debugger_script_path[] */
	uint64_t path_size;
};

/* Parse and check the offsets (buf: len bytes from the target). 0, or
 * -ENOTSUP/-EINVAL with one line in err. */
int pt_pep768__parse(const void *buf, size_t len, struct pt_pep768 *out, char *err, size_t errlen);

/*
 * Ask process pid (its &_PyRuntime at runtime) to run the Python file at
 * path (absolute, as the target sees it). 0; -EPERM: remote debugging is
 * disabled there (PYTHON_DISABLE_REMOTE_DEBUG, -X disable-remote-debug, or
 * a build without it); -ESRCH: finalizing or no main thread; -errno.
 * One line in err.
 */
int pt_pep768__exec(int pid, uint64_t runtime, const char *path, char *err, size_t errlen);

#endif
