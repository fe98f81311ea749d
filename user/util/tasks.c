// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
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

int pt_tasks__parse_nspid(FILE *f, int *outer, int *inner, uint32_t *depth)
{
	char line[512];

	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;
		uint32_t n = 0;
		long v;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (;;) {
			errno = 0;
			v = strtol(p, &end, 10);
			if (end == p)
				break;
			if (errno || v <= 0 || v > INT_MAX)
				return -EINVAL;
			if (!n)
				*outer = (int)v;
			*inner = (int)v;
			n++;
			p = end;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (!n || (*p && *p != '\n'))
			return -EINVAL;
		*depth = n;
		return 0;
	}
	return -ENODATA;
}

int pt_tasks__ns_pid(int pid)
{
	char path[64];
	int outer, ns = pid;
	uint32_t depth;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	if (pt_tasks__parse_nspid(f, &outer, &ns, &depth))
		ns = pid;
	fclose(f);
	return ns;
}

void pt_tasks__comm(int pid, uint32_t tid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	comm[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", pid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
}
