// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for the intra-kernel region readers (gpu/regionfile.c):
 * region files come from elsewhere (a device-side profiler's buffer and
 * tag table, or its Chrome-trace export), so every byte is untrusted.
 * What they give is then matched to kernels and merged into a small
 * trace.json (aggregate/regionmatch.c, report/regions_out.c), so times at the
 * edges of int64 are exercised there too. Build and run with `make fuzz`.
 *
 * Input: byte 0 & 3 == 0: the rest is a Chrome trace; 1 or 3: bytes 1-2
 * (little-endian) are the length of a tag table that follows, the rest
 * is the raw buffer; 2: the rest is a trace.json (its reader keeps
 * numbers exact with a scanner of its own), with fixed regions merged.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/regionmatch.h"
#include "gpu/regionfile.h"
#include "report/regions_out.h"

static const char TRACE[] =
	"{\"traceEvents\":["
	"{\"ph\":\"X\",\"pid\":1500000000,\"tid\":7,\"ts\":10.000,\"dur\":100.000,\"name\":\"k\","
	"\"cat\":\"kernel\",\"args\":{\"correlation\":5}},"
	"{\"ph\":\"X\",\"pid\":1500000000,\"tid\":7,\"ts\":-3.000,\"dur\":1.000,\"name\":\"gemm\","
	"\"cat\":\"kernel\",\"args\":{\"correlation\":6}}"
	"],\"otherData\":{\"tool\":\"proftrace\",\"t0_mono_ns\":100}}";

/* A trace.json from the fuzzer, two fixed launches of regions into it. */
static int fuzz_trace(const char *txt, size_t len)
{
	static const char *const tags[] = { "load", "store" };
	/* clang-format off */
	struct pt_region ev[3] = {
		{ 1000, 500, 0, 0 }, { 1200, 100, 1, 1 }, { 1100, 800, 0, 2 },
	};
	/* clang-format on */
	/* clang-format off */
	struct pt_region_launch l[2] = {
		{ .kernel = "k", .launch = -1, .ev = ev, .nev = 3, .recorded = 3,
		  .source = "a", .clock = PT_REGIONS_GPU_CLOCK },
		{ .kernel = "gemm", .launch = 0, .ev = ev + 1, .nev = 2, .recorded = 2,
		  .source = "b", .clock = "b" },
	};
	/* clang-format on */
	struct pt_region_set s = { (char **)tags, 2, l, 2 };
	struct pt_regions_result res;
	struct pt_rtrace_stats st;
	struct pt_rtrace t;
	char err[256];
	cJSON *doc = pt_regions_out__parse_json(txt, len, len & 1);

	if (!doc)
		return 0;
	if (!pt_rtrace__open(&t, doc, err, sizeof(err))) {
		if (!pt_regionmatch__match(&s, NULL, t.spans, t.n, &res)) {
			if (!pt_rtrace__merge(&t, &s, &res, &st)) {
				char *buf = NULL;
				size_t blen = 0;
				FILE *f = open_memstream(&buf, &blen);

				if (f) {
					pt_rtrace__write(f, doc);
					fclose(f);
				}
				free(buf);
			}
			pt_regionmatch__result_free(&res);
		}
	}
	pt_rtrace__free(&t);
	cJSON_Delete(doc);
	return 0;
}

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
	pt_regionfile__init(&s);
	if ((data[0] & 3) == 2)
		return fuzz_trace((const char *)data + 1, size - 1);
	if (!(data[0] & 1)) {
		char *j = malloc(size);

		if (!j)
			return 0;
		memcpy(j, data + 1, size - 1);
		(void)pt_regionfile__is_tag_table(j, size - 1);
		e = pt_regionfile__read_chrome(&s, j, size - 1, "f.json", err, sizeof(err));
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
		e = pt_regionfile__read_raw(&s, data + 3 + tl, size - 3 - tl, tl ? tags : NULL, tl,
					    "f.bin", err, sizeof(err));
		free(tags);
	}
	if (e) {
		if (!err[0] && e != -12)
			__builtin_trap(); /* every failure says why */
		pt_regionfile__free(&s);
		return 0;
	}
	for (size_t i = 0; i < s.nl; i++)
		for (size_t j = 0; j < s.l[i].nev; j++)
			if (s.l[i].ev[j].tag >= s.ntags)
				__builtin_trap();
	doc = pt_regions_out__parse_json(TRACE, sizeof(TRACE) - 1, true);
	sum = cJSON_Parse("{\"gpu\":{}}");
	if (doc && sum && !pt_rtrace__open(&t, doc, err, sizeof(err))) {
		if (!pt_regionmatch__match(&s, "k", t.spans, t.n, &res)) {
			if (!pt_rtrace__merge(&t, &s, &res, &st))
				pt_regions_out__add_summary(sum, &s, &res, &st, t.t0_mono_ns, NULL,
							    0);
			pt_regionmatch__result_free(&res);
		}
		pt_rtrace__free(&t);
	}
	cJSON_Delete(doc);
	cJSON_Delete(sum);
	pt_regionfile__free(&s);
	return 0;
}
