// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "envcmd.h"
#include "util/helpers.h"
#include "util/util.h"

/* LD_PRELOAD splits on spaces and colons, and the line is eval'ed by a
 * shell: such a path cannot be given. */
static int preloadable(const char *path)
{
	return !strpbrk(path, " :\t\n'\"$`\\");
}

int pt_envcmd__print(FILE *out)
{
	char agent[PATH_MAX], cupti[PATH_MAX];

	if (pt_helper__path(PT_AGENT_LIB, agent, sizeof(agent))) {
		fprintf(stderr,
			"proftrace: env: no %s beside proftrace (build it with `make`, or set "
			"%s)\n",
			PT_AGENT_LIB, PT_LIBDIR_ENV);
		return -PT_EUSAGE;
	}
	if (!preloadable(agent)) {
		fprintf(stderr,
			"proftrace: env: %s has a space, colon or quote in its path: "
			"LD_PRELOAD cannot name it (install it elsewhere and set %s)\n",
			agent, PT_LIBDIR_ENV);
		return -PT_EUSAGE;
	}
	fprintf(out, "# proftrace's helpers, dormant until proftrace attaches: eval \"$(proftrace "
		     "env)\" before starting a server\n");
	fprintf(out, "# the Python agent: exact timing of the py: functions named, nothing for the "
		     "rest\n");
	fprintf(out, "export LD_PRELOAD=%s${LD_PRELOAD:+:$LD_PRELOAD}\n", agent);
	if (!pt_helper__path(PT_CUPTI_LIB, cupti, sizeof(cupti)) && preloadable(cupti)) {
		fprintf(out, "# the CUPTI shim: GPU kernels, copies and idle time (CUDA "
			     "processes only)\n");
		fprintf(out, "export CUDA_INJECTION64_PATH=%s\n", cupti);
	} else {
		fprintf(out, "# no CUPTI shim was built (no CUDA at build time): no GPU figures\n");
	}
	return fflush(out) ? -errno : 0;
}
