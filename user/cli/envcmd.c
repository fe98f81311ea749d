// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
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

/* The folder of a helper's path (no trailing '/'). */
static void folder_of(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	snprintf(buf, len, "%.*s", slash ? (int)(slash - path) : 0, path);
}

int pt_envcmd__print(FILE *out, bool docker)
{
	char agent[PATH_MAX], cupti[PATH_MAX], dir[PATH_MAX], exe[PATH_MAX];
	bool shim;

	if (pt_helper__path(PT_AGENT_LIB, agent, sizeof(agent))) {
		if (pt_exe_dir(exe, sizeof(exe)))
			snprintf(exe, sizeof(exe), "?");
		fprintf(stderr,
			"proftrace: env: no %s in %s/.output, %s or %s/../lib/proftrace (build "
			"it with `make`, install with `make install`, or set %s)\n",
			PT_AGENT_LIB, exe, exe, exe, PT_LIBDIR_ENV);
		return -PT_EUSAGE;
	}
	if (!preloadable(agent)) {
		fprintf(stderr,
			"proftrace: env: %s has a space, colon or quote in its path: "
			"LD_PRELOAD cannot name it (install it elsewhere and set %s)\n",
			agent, PT_LIBDIR_ENV);
		return -PT_EUSAGE;
	}
	shim = !pt_helper__path(PT_CUPTI_LIB, cupti, sizeof(cupti)) && preloadable(cupti);
	folder_of(agent, dir, sizeof(dir));
	if (docker) {
		/* the shim's folder too when it is another (PROFTRACE_LIBDIR is one) */
		fprintf(out, "-v %s:%s:ro -e LD_PRELOAD=%s", dir, dir, agent);
		if (shim) {
			char sdir[PATH_MAX];

			folder_of(cupti, sdir, sizeof(sdir));
			if (strcmp(sdir, dir))
				fprintf(out, " -v %s:%s:ro", sdir, sdir);
			fprintf(out, " -e CUDA_INJECTION64_PATH=%s", cupti);
		}
		fputc('\n', out);
		return fflush(out) ? -errno : 0;
	}
	fprintf(out,
		"# proftrace's helpers (%s), dormant until proftrace attaches: eval \"$(proftrace "
		"env)\" before starting a server\n",
		dir);
	fprintf(out, "# the Python agent: exact timing of the py: functions named, nothing for the "
		     "rest\n");
	fprintf(out, "export LD_PRELOAD=%s${LD_PRELOAD:+:$LD_PRELOAD}\n", agent);
	if (shim) {
		fprintf(out, "# the CUPTI shim: GPU kernels, copies and idle time (CUDA "
			     "processes only)\n");
		fprintf(out, "export CUDA_INJECTION64_PATH=%s\n", cupti);
	} else {
		fprintf(out, "# no CUPTI shim was built (no CUDA at build time): no GPU figures\n");
	}
	return fflush(out) ? -errno : 0;
}

static const char usage[] =
	"Usage: proftrace env [--docker]\n"
	"\n"
	"Print the environment to start a server with, so proftrace times its Python\n"
	"functions exactly (the Python agent) and sees its GPU (the CUPTI shim); both\n"
	"stay dormant until proftrace attaches:\n"
	"\n"
	"  eval \"$(proftrace env)\"; python -m my_server ...\n"
	"\n"
	"  --docker   the same for a server in a container, as docker/podman run\n"
	"             options: the helpers' folder mounted read-only at the same path\n"
	"             and the two variables:\n"
	"             docker run $(proftrace env --docker) IMAGE ...\n"
	"             (docs/containers.md: Kubernetes, --inject from the host)\n";

int pt_envcmd__main(int argc, char **argv)
{
	bool docker = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--docker")) {
			docker = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return 0;
		} else {
			fprintf(stderr,
				"proftrace: env: unknown argument '%s' (proftrace env "
				"[--docker])\n",
				argv[i]);
			return pt_exit_code(-PT_EUSAGE);
		}
	}
	return pt_exit_code(pt_envcmd__print(stdout, docker));
}
