// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

int pt_exe_dir(char *buf, size_t len)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		return -errno;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	if ((size_t)snprintf(buf, len, "%s", exe) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int pt_helper__path(const char *name, char *buf, size_t len)
{
	/* a build tree (proftrace beside .output/), a binary inside its
	 * output folder (.output-asan/proftrace), an install */
	static const char *const rel[] = { "/.output/", "/", "/../lib/proftrace/" };
	const char *env = getenv(PT_LIBDIR_ENV);
	char exe[PATH_MAX], real[PATH_MAX];
	int e;

	if (env && *env) {
		if ((size_t)snprintf(buf, len, "%s/%s", env, name) >= len)
			return -ENAMETOOLONG;
		return access(buf, R_OK) ? -ENOENT : 0;
	}
	e = pt_exe_dir(exe, sizeof(exe));
	if (e)
		return e;
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
