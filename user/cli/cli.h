/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef PT_CLI_H
#define PT_CLI_H

#include "run/env.h"

/* 0 ok, 1 help was printed (exit 0), -EINVAL usage error (message printed,
 * exit 2). With --list-targets, -p and --targets are not required. */
int pt_cli__parse(struct pt_env *env, int argc, char **argv);

#endif
