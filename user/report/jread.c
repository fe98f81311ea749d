// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "jread.h"

cJSON *pt_jread__file(const char *path)
{
	FILE *f = fopen(path, "r");
	cJSON *doc = NULL;
	char *text;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		errno = EIO;
		return NULL;
	}
	text = malloc((size_t)n + 1);
	if (text && fread(text, 1, (size_t)n, f) == (size_t)n) {
		text[n] = '\0';
		doc = cJSON_Parse(text);
	}
	free(text);
	fclose(f);
	if (!doc)
		errno = EINVAL;
	return doc;
}
