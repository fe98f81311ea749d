/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * report.md's tables of a JSON array's elements, ranked (the threads, the
 * sampled functions, the top lines of a function) or in the array's order
 * (summary.json's top, the runs), cut after a number of rows: one writer,
 * so that each such table is a description (its columns, how many rows,
 * what is said of the rows left out) and a row callback for the cells, and
 * all of them rank, cut and say "N more" the same way.
 */
#ifndef PT_MDTABLE_H
#define PT_MDTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cJSON;

/* A column: its title in the header row, and whether it holds numbers
 * (right-aligned, "---:"). */
struct pt_mdtable_col {
	const char *title;
	bool num;
};

/* An element's rank, larger first; false: the element is no row. */
typedef bool (*pt_mdtable_key_fn)(const struct cJSON *o, double *key);

/* A row's cells, " | " between them: the writer puts "| " before and
 * " |\n" after. arg is pt_mdtable__write()'s. */
typedef void (*pt_mdtable_row_fn)(FILE *f, const struct cJSON *o, const void *arg);

struct pt_mdtable {
	const struct pt_mdtable_col *cols;
	size_t ncols;
	pt_mdtable_row_fn row;
	/* the rows, largest key first, ties in array order; NULL: every
	 * element is a row, in array order */
	pt_mdtable_key_fn key;
	size_t max; /* rows written at most; 0: every row */
	/* After the table when rows were left out: a printf format given
	 * their number (%zu) and the plural's "s" or "" (%s). */
	const char *more;
	const char *intro; /* before the header, when it is written */
	const char *none;  /* instead of the table when there is no row */
	bool head_alone;   /* no row: the header still, and its blank line */
};

/* The table of arr's elements (arr NULL: no element), arg passed to the
 * row callback; *rows (rows NULL: not said) is how many rows it had,
 * written or left out. 0, or -ENOMEM. */
int pt_mdtable__write(FILE *f, const struct pt_mdtable *t, const struct cJSON *arr, const void *arg,
		      size_t *rows);

#endif /* PT_MDTABLE_H */
