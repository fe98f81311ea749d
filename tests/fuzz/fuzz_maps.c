// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_maps__parse(): /proc/PID/maps belongs to the
 * target, and a path in it is whatever name the target mapped.
 * Build and run with `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attach/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_maps m;
	size_t i;
	FILE *f;

	/* fmemopen() rejects a zero-length buffer. */
	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	if (!pt_maps__parse(&m, f)) {
		/* Touch every field so ASan sees any bad path pointer. */
		for (i = 0; i < m.n; i++) {
			const struct pt_mapping *mp = &m.v[i];

			if (mp->end < mp->start)
				__builtin_trap();
			if (mp->path && strlen(mp->path) > size)
				__builtin_trap();
			(void)pt_mapping__is_exec_file(mp);
		}
		pt_maps__free(&m);
	}
	fclose(f);
	return 0;
}
