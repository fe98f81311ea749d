// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "mdtable.h"

/* Array elements ranked by a key, largest first; ties keep array order
 * (qsort is not stable: the index breaks them). */
struct ranked {
	const cJSON *o;
	double key;
	size_t idx;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Without a key every element ranks 0: array order, one path for both.
 * *out is NULL when there is no row; -ENOMEM only on allocation failure. */
static int rank(const cJSON *arr, pt_mdtable_key_fn key, struct ranked **out, size_t *n)
{
	size_t cap = arr ? (size_t)cJSON_GetArraySize(arr) : 0, i = 0;
	struct ranked *r;
	const cJSON *o;

	*out = NULL;
	*n = 0;
	if (!cap)
		return 0;
	r = calloc(cap, sizeof(*r));
	if (!r)
		return -ENOMEM;
	cJSON_ArrayForEach(o, arr)
	{
		if (!key || key(o, &r[*n].key)) {
			r[*n].o = o;
			r[*n].idx = i;
			(*n)++;
		}
		i++;
	}
	qsort(r, *n, sizeof(*r), cmp_ranked);
	*out = r;
	return 0;
}

static void put_head(FILE *f, const struct pt_mdtable *t)
{
	for (size_t i = 0; i < t->ncols; i++)
		fprintf(f, "| %s ", t->cols[i].title);
	fputs("|\n", f);
	for (size_t i = 0; i < t->ncols; i++)
		fputs(t->cols[i].num ? "|---:" : "|---", f);
	fputs("|\n", f);
}

int pt_mdtable__write(FILE *f, const struct pt_mdtable *t, const cJSON *arr, const void *arg,
		      size_t *rows)
{
	size_t n, shown;
	struct ranked *r;
	int err = rank(arr, t->key, &r, &n);

	if (err)
		return err;
	if (rows)
		*rows = n;
	if (!n && !t->head_alone) {
		if (t->none)
			fputs(t->none, f);
		free(r); /* every element left out by the key */
		return 0;
	}
	if (t->intro)
		fputs(t->intro, f);
	put_head(f, t);
	shown = t->max && n > t->max ? t->max : n;
	for (size_t i = 0; i < shown; i++) {
		fputs("| ", f);
		t->row(f, r[i].o, arg);
		fputs(" |\n", f);
	}
	fputs("\n", f);
	if (shown < n && t->more)
		fprintf(f, t->more, n - shown, n - shown == 1 ? "" : "s");
	free(r);
	return 0;
}
