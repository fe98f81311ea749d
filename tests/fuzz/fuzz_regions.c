// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for the intra-kernel region readers (gpu/regions.c):
 * region files come from elsewhere (a device-side profiler's buffer and
 * tag table, or its Chrome-trace export), so every byte is untrusted.
 * What they give is then matched to kernels and merged into a small
 * trace.json (aggregate/regions.c, report/regions_out.c), so times at the
 * edges of int64 are exercised there too. Build and run with `make fuzz`.
 *
 * Input: byte 0 even: the whole rest is a Chrome trace. Odd: bytes 1-2
 * (little-endian) are the length of a tag table that follows, the rest
 * is the raw buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/regions.h"
#include "gpu/regions.h"
#include "report/regions_out.h"

static const char TRACE[] =
	"{\"traceEvents\":["
	"{\"ph\":\"X\",\"pid\":1500000000,\"tid\":7,\"ts\":10.000,\"dur\":100.000,\"name\":\"k\","
	"\"cat\":\"kernel\",\"args\":{\"correlation\":5}},"
	"{\"ph\":\"X\",\"pid\":1500000000,\"tid\":7,\"ts\":-3.000,\"dur\":1.000,\"name\":\"gemm\","
	"\"cat\":\"kernel\",\"args\":{\"correlation\":6}}"
	"],\"otherData\":{\"tool\":\"proftrace\",\"t0_mono_ns\":100}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_regions_result res;
	struct pt_rtrace_stats st;
	struct pt_region_set s;
	struct pt_rtrace t;
	char err[256];
	cJSON *doc, *sum;
	int e;

	if (!size)
		return 0;
	pt_regions__init(&s);
	if (!(data[0] & 1)) {
		char *j = malloc(size);

		if (!j)
			return 0;
		memcpy(j, data + 1, size - 1);
		(void)pt_regions__is_tag_table(j, size - 1);
		e = pt_regions__read_chrome(&s, j, size - 1, "f.json", err, sizeof(err));
		free(j);
	} else {
		size_t tl = size >= 3 ? (size_t)(data[1] | data[2] << 8) : 0;
		char *tags;

		if (size < 3 || tl > size - 3)
			return 0;
		tags = malloc(tl + 1);
		if (!tags)
			return 0;
		memcpy(tags, data + 3, tl);
		e = pt_regions__read_raw(&s, data + 3 + tl, size - 3 - tl, tl ? tags : NULL, tl,
					 "f.bin", err, sizeof(err));
		free(tags);
	}
	if (e) {
		if (!err[0] && e != -12)
			__builtin_trap(); /* every failure says why */
		pt_regions__free(&s);
		return 0;
	}
	for (size_t i = 0; i < s.nl; i++)
		for (size_t j = 0; j < s.l[i].nev; j++)
			if (s.l[i].ev[j].tag >= s.ntags)
				__builtin_trap();
	doc = pt_regions__parse_json(TRACE, sizeof(TRACE) - 1, true);
	sum = cJSON_Parse("{\"gpu\":{}}");
	if (doc && sum && !pt_rtrace__open(&t, doc, err, sizeof(err))) {
		if (!pt_regions__match(&s, "k", t.spans, t.n, &res)) {
			if (!pt_rtrace__merge(&t, &s, &res, &st))
				pt_regions__add_summary(sum, &s, &res, &st, t.t0_mono_ns, NULL, 0);
			pt_regions__result_free(&res);
		}
		pt_rtrace__free(&t);
	}
	cJSON_Delete(doc);
	cJSON_Delete(sum);
	pt_regions__free(&s);
	return 0;
}
