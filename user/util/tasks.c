// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tasks.h"

int pt_tasks__each(int pid, int (*fn)(void *ctx, int tid), void *ctx)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		int tid = isdigit((unsigned char)de->d_name[0]) ? atoi(de->d_name) : 0;

		if (tid > 0)
			ret = fn(ctx, tid);
	}
	closedir(d);
	return ret;
}
