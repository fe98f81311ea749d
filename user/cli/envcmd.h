/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `proftrace env`: the environment a server is started with so proftrace
 * can time its Python functions exactly (the agent, LD_PRELOAD) and its
 * GPU (the CUPTI shim, CUDA_INJECTION64_PATH), as `export NAME=VALUE`
 * lines for `eval "$(proftrace env)"`. Both helpers stay dormant until
 * proftrace attaches.
 */
#ifndef PT_ENVCMD_H
#define PT_ENVCMD_H

#include <stddef.h>
#include <stdio.h>

#define PT_LIBDIR_ENV "PROFTRACE_LIBDIR"
#define PT_AGENT_LIB "libproftrace_agent.so"
#define PT_CUPTI_LIB "libproftrace_cupti.so"

/*
 * The absolute path of helper library name: in $PROFTRACE_LIBDIR, else
 * beside the proftrace binary (a build's .output/, the binary's own
 * folder, ../lib/proftrace when installed). 0 or -ENOENT.
 */
int pt_envcmd__lib(const char *name, char *buf, size_t len);

/* Print the exports. 0, or -PT_EUSAGE when the agent is not built (said
 * on stderr). */
int pt_envcmd__print(FILE *out);

#endif
