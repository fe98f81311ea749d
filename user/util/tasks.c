// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int pt_tasks__ns_pid(int pid)
{
	char path[64], line[256];
	int ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;
		long v;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (;;) {
			v = strtol(p, &end, 10);
			if (end == p)
				break;
			if (v > 0 && v <= 0x7fffffff)
				ns = (int)v;
			p = end;
		}
		break;
	}
	fclose(f);
	return ns;
}
