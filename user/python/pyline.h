/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Source lines of CPython bytecode positions: a sample gives a code object
 * and a position in it; the code object's line table (co_lnotab on 3.8/3.9,
 * co_linetable on 3.10+) maps that to a line. The decoding rules are the
 * ones checked against co_lines() in ../shared/notes/cpython.md ("Line
 * tables"), and tests/integration/test_pyline.py checks them again against
 * every interpreter it finds.
 *
 * Pure functions over a buffer (no I/O). The table comes from another
 * process: every read is bounded, malformed tables are rejected, and line
 * numbers that a hostile table pushes out of [0, INT_MAX] are rejected too.
 *
 * Offsets ("addr") are byte offsets from the first instruction, as the
 * tables count them on every version; pt_pyline__addr() converts what a
 * frame holds. Lines: > 0 a source line, 0 no line (3.10's -128 marker,
 * 3.11+'s code 15; also a table's explicit line 0, which 3.11+ give a
 * module's RESUME: no source line either).
 */
#ifndef PT_PYLINE_H
#define PT_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The byte offset addr of a frame's sampled position pos:
 *   3.8, 3.9: pos is f_lasti, in bytes (addr = pos);
 *   3.10:     pos is f_lasti, in code units (addr = 2 * pos);
 *   3.11+:    pos is ip - (code + co_code_adaptive), in bytes.
 * 0 with *addr set. -ERANGE when the frame has not run its first
 * instruction yet (f_lasti == -1 on 3.8-3.10, pos == -2 on 3.11/3.12,
 * whose prev_instr starts one unit before the code; taken the same way on
 * 3.13): its line is co_firstlineno, as CPython itself reports it. The
 * caller answers that without the table. -EINVAL for any other
 * negative or odd position (instructions are 2-byte units: garbage) or an
 * unsupported minor.
 */
int pt_pyline__addr(unsigned int minor, int64_t pos, int64_t *addr);

/*
 * The line of byte offset addr in 3.<minor>'s table tab[0..len), for a
 * code object whose co_firstlineno is firstlineno: the range with
 * start <= addr < end. Returns the line (> 0), 0 for no line, -ERANGE when
 * addr is negative or past the table's last range, -EINVAL when the table
 * is malformed (odd length for the 2-byte formats, truncated entry or
 * varint, line out of range), firstlineno > INT_MAX or minor is not 8..13.
 *
 * Reads the table only up to addr's entry, like CPython: a table broken
 * after that point still answers. 3.8/3.9's table does not say where the
 * code ends, so only INT64_MAX is past it there (the last line answers).
 */
int pt_pyline__line(unsigned int minor, const uint8_t *tab, size_t len, unsigned int firstlineno,
		    int64_t addr);

/*
 * Calls cb for every range [start, end) of the table in order, with its
 * line (0 = none), the way co_lines() lists them on that version:
 *   3.10, 3.11: one range per table entry (empty ones skipped);
 *   3.12+:      consecutive entries of the same line merged;
 *   3.8/3.9:    (no co_lines) from each line start to the next, so ranges
 *               of the same line are merged; the last range ends at
 *               INT64_MAX, since the table does not say where the code ends.
 * Ranges are contiguous from 0. cb returning non-zero stops the walk and
 * that value is returned. Otherwise 0, or -EINVAL as for pt_pyline__line()
 * (the whole table is read: ranges before the damage may have been
 * delivered already).
 */
typedef int (*pt_pyline_range_fn)(void *ctx, int64_t start, int64_t end, int line);
int pt_pyline__ranges(unsigned int minor, const uint8_t *tab, size_t len, unsigned int firstlineno,
		      pt_pyline_range_fn cb, void *ctx);

/*
 * The largest line of any range: where a function's source ends, as far
 * as its bytecode says (3.11+ tables also hold end lines of multi-line
 * expressions, not read here). 0 when no range has a line; -EINVAL as
 * above.
 */
int pt_pyline__last_line(unsigned int minor, const uint8_t *tab, size_t len,
			 unsigned int firstlineno);

#endif
