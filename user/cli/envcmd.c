// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "envcmd.h"
#include "util/util.h"

int pt_envcmd__lib(const char *name, char *buf, size_t len)
{
	/* a build tree (proftrace beside .output/), a binary inside its
	 * output folder (.output-asan/proftrace), an install */
	static const char *const rel[] = { "/.output/", "/", "/../lib/proftrace/" };
	const char *env = getenv(PT_LIBDIR_ENV);
	char exe[PATH_MAX], *slash, real[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		if ((size_t)snprintf(buf, len, "%s/%s", env, name) >= len)
			return -ENAMETOOLONG;
		return access(buf, R_OK) ? -ENOENT : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
		char cand[PATH_MAX + 64];

		snprintf(cand, sizeof(cand), "%s%s%s", exe, rel[i], name);
		if (access(cand, R_OK) || !realpath(cand, real))
			continue;
		if ((size_t)snprintf(buf, len, "%s", real) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	return -ENOENT;
}

/* LD_PRELOAD splits on spaces and colons: such a path cannot be given. */
static int preloadable(const char *path)
{
	return !strpbrk(path, " :\t\n'\"$`\\");
}

int pt_envcmd__print(FILE *out)
{
	char agent[PATH_MAX], cupti[PATH_MAX];

	if (pt_envcmd__lib(PT_AGENT_LIB, agent, sizeof(agent))) {
		fprintf(stderr, "proftrace: env: no %s beside proftrace (build it with `make`, or set "
			"%s)\n", PT_AGENT_LIB, PT_LIBDIR_ENV);
		return -PT_EUSAGE;
	}
	if (!preloadable(agent)) {
		fprintf(stderr, "proftrace: env: %s has a space, colon or quote in its path: "
			"LD_PRELOAD cannot name it (install it elsewhere and set %s)\n", agent,
			PT_LIBDIR_ENV);
		return -PT_EUSAGE;
	}
	fprintf(out, "# proftrace's helpers, dormant until proftrace attaches: eval \"$(proftrace "
		     "env)\" before starting a server\n");
	fprintf(out, "# the Python agent: exact timing of the py: functions named, nothing for the "
		     "rest\n");
	fprintf(out, "export LD_PRELOAD=%s${LD_PRELOAD:+:$LD_PRELOAD}\n", agent);
	if (!pt_envcmd__lib(PT_CUPTI_LIB, cupti, sizeof(cupti)) && preloadable(cupti)) {
		fprintf(out, "# the CUPTI shim: GPU kernels, copies and idle time (CUDA "
			     "processes only)\n");
		fprintf(out, "export CUDA_INJECTION64_PATH=%s\n", cupti);
	} else {
		fprintf(out, "# no CUPTI shim was built (no CUDA at build time): no GPU figures\n");
	}
	return fflush(out) ? -errno : 0;
}
