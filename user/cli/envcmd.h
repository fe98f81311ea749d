/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `proftrace env`: the environment a server is started with so proftrace
 * can time its Python functions exactly (the agent, LD_PRELOAD) and its
 * GPU (the CUPTI shim, CUDA_INJECTION64_PATH), as `export NAME=VALUE`
 * lines for `eval "$(proftrace env)"`. Both helpers stay dormant until
 * proftrace attaches. They are found beside the binary: a build's
 * .output/, or PREFIX/lib/proftrace/ after `make install`
 * (util/helpers.h).
 *
 * `proftrace env --docker`: the same for a server in a container, as
 * docker/podman run options on one line: the helpers' folder mounted
 * read-only at the same path (so --inject from the host finds the same
 * files there too) and the two variables (docs/containers.md).
 */
#ifndef PT_ENVCMD_H
#define PT_ENVCMD_H

#include <stdbool.h>
#include <stdio.h>

/* Print the exports (docker: the run options). 0, or -PT_EUSAGE when the
 * agent is not built (said on stderr). */
int pt_envcmd__print(FILE *out, bool docker);

/* `proftrace env [--docker]`: argv[0] is "env". An exit code. */
int pt_envcmd__main(int argc, char **argv);

#endif
