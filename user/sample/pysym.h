/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Names and lines for sampled Python frames: a code object address is
 * read out of the target once (names, first line, line table, which py:
 * function it is) and cached; a frame's line is decoded from the cached
 * table. Reads are asynchronous to the sample (milliseconds later), so a
 * code object freed in between reads as unknown, never as another one's
 * name when the type check catches it (see the note in pysym.c).
 */
#ifndef PT_PYSYM_H
#define PT_PYSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/pycode.h"
#include "python/pylayout.h"

struct pt_pyprobe;

struct pt_pysym_opts {
	const struct pt_py_layout *layout;
	struct pt_pytypes types;
	struct pt_tmem mem;
	struct pt_pyprobe *pyprobe; /* matching to py: functions, qualnames < 3.11 */
};

struct pt_pysym_code {
	uint64_t addr;
	bool ok; /* read and named; else the other fields are empty */
	/* the agent's trampoline around a named function (shim/agent/
	 * tramp.h): not the program's frame, left out of stacks */
	bool hidden;
	char *filename; /* co_filename */
	char *qualname;
	const char *base; /* the last part of filename shown in frame labels */
	uint32_t firstlineno;
	uint8_t *tab; /* line table, NULL when unreadable */
	size_t tablen;
	uint32_t fid; /* the py: function, or PT_FID_PY_NONE */
	/* its identity for the top tables: a hash of qualname, filename and
	 * firstlineno (0 when not ok); the last line of its line table (0:
	 * unknown) */
	uint64_t key;
	unsigned int last_line;
	/* pysym's own: the last position decoded and its line. A caller's
	 * frame stays at one position while its callees run, so most frames
	 * of a sample repeat the previous sample's. */
	int32_t memo_pos;
	unsigned int memo_line;
	bool memo;
};

struct pt_pysym;

struct pt_pysym *pt_pysym__new(const struct pt_pysym_opts *o);
void pt_pysym__free(struct pt_pysym *ps);

/* The code object at addr (cached). NULL only when out of memory. */
const struct pt_pysym_code *pt_pysym__code(struct pt_pysym *ps, uint64_t addr);
/* The line a frame of c at sampled position pos is on; 0 when unknown. */
unsigned int pt_pysym__line(const struct pt_pysym *ps, const struct pt_pysym_code *c, int32_t pos);
/* "qualname (base:line)" into buf; "qualname (base)" when line is 0. */
void pt_pysym__label(const struct pt_pysym_code *c, unsigned int line, char *buf, size_t len);
/* The last line of c's function per its line table; 0 when unknown. */
unsigned int pt_pysym__last_line(const struct pt_pysym *ps, const struct pt_pysym_code *c);

#endif
