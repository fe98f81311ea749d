/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading the summary document back, for the emitters that render from it
 * (report_md.c, report_lines.c). A missing key or one of the wrong type
 * reads as absent: renderers print "–", never crash.
 */
#ifndef PT_JREAD_H
#define PT_JREAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

/* A whole JSON file parsed; NULL with errno set (EINVAL: not JSON). */
cJSON *pt_jread__file(const char *path);

static inline const cJSON *pt_jget(const cJSON *o, const char *k)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

/* The builder writes exact big integers as raw text (summary.c); a
 * document parsed back from a file has them as numbers. Accept both. */
static inline bool pt_jnum(const cJSON *o, const char *k, double *v)
{
	const cJSON *it = pt_jget(o, k);
	char *end;

	if (cJSON_IsNumber(it)) {
		*v = it->valuedouble;
		return true;
	}
	if (cJSON_IsRaw(it) && it->valuestring) {
		*v = strtod(it->valuestring, &end);
		return end != it->valuestring && !*end;
	}
	return false;
}

static inline bool pt_ju64(const cJSON *o, const char *k, uint64_t *v)
{
	const cJSON *it = pt_jget(o, k);
	char *end;
	double d;

	if (cJSON_IsRaw(it) && it->valuestring) {
		*v = strtoull(it->valuestring, &end, 10);
		return end != it->valuestring && !*end;
	}
	if (pt_jnum(o, k, &d) && d >= 0) {
		*v = (uint64_t)d;
		return true;
	}
	return false;
}

static inline const char *pt_jstr(const cJSON *o, const char *k)
{
	const cJSON *it = pt_jget(o, k);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static inline const cJSON *pt_jarr(const cJSON *o, const char *k)
{
	const cJSON *it = pt_jget(o, k);

	return cJSON_IsArray(it) ? it : NULL;
}

#endif
