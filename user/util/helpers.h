/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where proftrace's own files are, found from its binary: the helper
 * libraries (the Python agent, the CUPTI shim: what `proftrace env` prints
 * and what proftrace loads into a process itself, PEP 768 or --inject)
 * and the bundled targets (config/targets_list.c).
 */
#ifndef PT_HELPERS_H
#define PT_HELPERS_H

#include <stddef.h>

#define PT_LIBDIR_ENV "PROFTRACE_LIBDIR"
#define PT_AGENT_LIB "libproftrace_agent.so"
#define PT_CUPTI_LIB "libproftrace_cupti.so"

/*
 * The absolute path of helper library name: in $PROFTRACE_LIBDIR, else
 * beside the proftrace binary (a build's .output/, the binary's own
 * folder, ../lib/proftrace when installed). 0 or -ENOENT.
 */
int pt_helper__path(const char *name, char *buf, size_t len);
/* The folder of the running proftrace binary (no trailing '/'): 0, or
 * -errno (-ENAMETOOLONG when it does not fit). */
int pt_exe_dir(char *buf, size_t len);

#endif
