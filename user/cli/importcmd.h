/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef PT_IMPORTCMD_H
#define PT_IMPORTCMD_H

/* proftrace import-regions [--kernel NAME] [--tags FILE] REGIONS... OUTDIR
 * (argv[0] is "import-regions"). 0, -PT_EUSAGE (exit 2) or -errno. */
int pt_importcmd__run(int argc, char **argv);

#endif
