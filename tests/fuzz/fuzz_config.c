// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_config__parse(): the targets file is written by
 * hand, so any bytes at all may reach the parser. Build and run with
 * `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_config cfg;
	char err[256];
	size_t i;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	/* A small err buffer: truncated messages must stay NUL-terminated. */
	if (!pt_config__parse(&cfg, f, "fuzz.conf", err, sizeof(err))) {
		if (cfg.step_probe >= 0 && (size_t)cfg.step_probe >= cfg.nprobes)
			__builtin_trap();
		for (i = 0; i < cfg.nprobes; i++)
			if (!cfg.probes[i].object || !cfg.probes[i].symbol)
				__builtin_trap();
		for (i = 0; i < cfg.nbuckets; i++)
			if (strlen(cfg.buckets[i].domain) >= strlen(cfg.buckets[i].name))
				__builtin_trap();
		pt_config__free(&cfg);
	} else if (memchr(err, '\0', sizeof(err)) == NULL) {
		__builtin_trap();
	}
	fclose(f);
	return 0;
}
