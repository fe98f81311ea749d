// SPDX-License-Identifier: BSD-2-Clause
/*
 * proftrace: attach to live processes, time the functions a targets file
 * names exactly, aggregate them into steps and buckets, write reports.
 *
 * The recipe (user/README.md has the data flow): parse the command line
 * -> open a session (targets file, processes, probes resolved) -> run it
 * (attach BPF, sampler, GPU rings; loop until --duration, a signal or the
 * processes' exit; report) -> exit code. run/session.h has the phases.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/diff.h"
#include "cli/merge.h"
#include "cli/envcmd.h"
#include "cli/importcmd.h"
#include "config/targets_list.h"
#include "run/calib.h"
#include "run/session.h"
#include "util/log.h"
#include "util/util.h"

int main(int argc, char **argv)
{
	struct pt_session *s;
	struct pt_env env;
	int e, code;

	if (argc >= 2 && !strcmp(argv[1], "env")) /* eval "$(proftrace env)" */
		return pt_envcmd__main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "import-regions"))
		return pt_exit_code(pt_importcmd__run(argc - 1, argv + 1));
	if (argc >= 2 && !strcmp(argv[1], "diff")) /* proftrace diff A B */
		return pt_diff__main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "merge")) /* proftrace merge DIR... */
		return pt_merge__main(argc - 1, argv + 1);
	if (argc == 2 && !strcmp(argv[1], "__calib-helper")) /* run/calib.h */
		return pt_calib__helper_main();
	e = pt_cli__parse(&env, argc, argv);
	if (e)
		return e > 0 ? PT_EXIT_OK : PT_EXIT_USAGE; /* help, or a usage error said */
	if (env.list_targets)
		return pt_targets__list(NULL, stdout) < 0 ? PT_EXIT_FAIL : PT_EXIT_OK;
	pt_log__set_verbose(env.verbose);

	e = pt_session__open(&s, &env);
	if (!e && env.dry_run)
		pt_session__dry_run(s);
	else if (!e)
		e = pt_session__run(s); /* attach, loop, report */
	code = pt_session__exit_code(s, e);
	pt_session__free(s);
	return code;
}
