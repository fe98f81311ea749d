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

#include <stdio.h>

/* Print the exports. 0, or -PT_EUSAGE when the agent is not built (said
 * on stderr). */
int pt_envcmd__print(FILE *out);

#endif
