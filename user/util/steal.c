// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steal.h"

int pt_steal__parse(FILE *f, uint64_t *ticks)
{
	char line[512], *p, *end;
	uint64_t v = 0;
	int i;

	if (!fgets(line, sizeof(line), f) || strncmp(line, "cpu ", 4))
		return -EINVAL;
	p = line + 4;
	/* user nice system idle iowait irq softirq steal */
	for (i = 0; i < 8; i++) {
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9') /* no field, or a sign strtoull takes */
			return i < 4 || (*p && *p != '\n') ? -EINVAL : -ENODATA;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno)
			return -EINVAL;
		p = end;
	}
	*ticks = v;
	return 0;
}

int pt_steal__now(uint64_t *ns)
{
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t ticks;
	FILE *f;
	int e;

	if (hz <= 0)
		return -EINVAL;
	f = fopen("/proc/stat", "re");
	if (!f)
		return -errno;
	e = pt_steal__parse(f, &ticks);
	fclose(f);
	if (!e)
		*ns = ticks * (1000000000ull / (uint64_t)hz);
	return e;
}
