/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flame graphs of sampled stacks: a weighted call tree that adds a stack in
 * O(depth) (frame names interned, one (parent, frame) -> node hash), and
 * writes it as folded text or as a self-contained SVG.
 *
 * Folded format, one line per distinct stack with self weight:
 *
 *   root;caller;callee 1234\n
 *
 * Frames are root-first and joined by ';'; the weight is a u64 in decimal
 * after the last space. Lines are sorted by the stack text, byte by byte
 * (strcmp), so two runs diff cleanly. A frame name is written as is except
 * for these bytes, written as "\xHH" (two lowercase hex digits):
 *
 *   ';'  (the separator)   '\'  (the escape itself)
 *   0x00-0x1f, 0x7f        (newline, tab and the other control bytes)
 *
 * Bytes 0x80-0xff pass through untouched, so UTF-8 stays UTF-8 (and the
 * format stays byte-transparent: invalid UTF-8 round-trips too). Spaces
 * need no escape because the weight follows the *last* space.
 *
 * The reader decodes "\xHH" (either case) and takes any other '\' as a
 * literal, so files from other tools with a stray backslash still load.
 * It also skips empty lines and drops one '\r' before a line's end.
 * Rejected (-EINVAL, err "line N: what"): no space or no digits after it,
 * a weight that is not a plain decimal or overflows u64, an empty frame
 * (";a", "a;;b", "a;", " 1"), "\x00", a NUL byte.
 */
#ifndef PT_FLAME_H
#define PT_FLAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pt_flame;

struct pt_flame_svg_opts {
	const char *title;    /* NULL: "Flame Graph" */
	const char *subtitle; /* e.g. "1000 Hz, 12.3 s wall"; NULL: none. The
			       * total weight is appended either way. */
	const char *unit;     /* weight unit in tooltips, e.g. "µs"; NULL: "samples" */
	unsigned int width;   /* px, 200..100000; 0: 1200 */
};

/* NULL when out of memory. */
struct pt_flame *pt_flame__new(void);
void pt_flame__free(struct pt_flame *fl);

/*
 * Add one stack of n frames, frames[0] the root (e.g. "MainThread (tid 1)").
 * Names are copied. Identical stacks merge. Weight 0 checks the frames and
 * adds nothing. 0, -EINVAL (n == 0, a NULL or empty name), -EOVERFLOW (the
 * total would pass UINT64_MAX; nothing is added) or -ENOMEM.
 */
int pt_flame__add(struct pt_flame *fl, const char *const *frames, size_t n, uint64_t weight);

/*
 * A new tree with every stack of fl whose leaf (last frame) is not
 * drop_leaf, with its weight (NULL drop_leaf: every stack); the
 * divisor is kept. The on-CPU view of a wall-time tree whose off-CPU
 * stacks end in "[off-cpu]". NULL when out of memory.
 */
struct pt_flame *pt_flame__copy(const struct pt_flame *fl, const char *drop_leaf);

/* Sum of all weights added. */
uint64_t pt_flame__total(const struct pt_flame *fl);
/* Write weights divided by div (rounded half up, per line: adding ns and
 * writing us keeps the lines' sum within half a unit per line of the
 * total, where rounding each stack added would drift). A line whose
 * weight rounds to 0 is left out of the folded text. 0 or 1: as added. */
void pt_flame__set_div(struct pt_flame *fl, uint64_t div);
/* Distinct stacks with weight: the number of lines write_folded writes. */
size_t pt_flame__nstacks(const struct pt_flame *fl);

/* 0, -EINVAL (NULL fl or f), -ENOMEM or -EIO. */
int pt_flame__write_folded(const struct pt_flame *fl, FILE *f);

/*
 * Add every line of a folded file to fl (which may already hold stacks).
 * 0; -EINVAL for a bad line, -EOVERFLOW when the total would pass
 * UINT64_MAX, -ENOMEM, -EIO: then err (if errlen > 0) holds "line N: what"
 * and fl keeps the lines before the bad one.
 */
int pt_flame__read_folded(struct pt_flame *fl, FILE *f, char *err, size_t errlen);

/*
 * A self-contained SVG flame graph (no external scripts, fonts or CSS): an
 * "all" bar at the bottom, frames[0] above it, one 16 px row per depth,
 * children sorted by name, x and width proportional to inclusive weight.
 * Frames narrower than 0.1% of the plot or 1 px are not drawn. Labels are
 * cut with ".." to fit (0.6em per character at 12 px); each frame has a
 * tooltip "name (N unit, P%)". Colours come from a hash of the name: warm
 * for code, blue for names starting "[off-cpu", grey for other "[...]"
 * pseudo-frames. A small inline script adds click-to-zoom and "Reset Zoom";
 * without it the graph renders the same (zoomed labels are cut from the
 * tooltip before its last " (", so a unit should not contain " ("). Text
 * is XML-escaped; control bytes are dropped (tab, CR, LF become spaces) and
 * invalid UTF-8 becomes U+FFFD. An empty flame writes a valid SVG saying
 * "no samples". o may be NULL.
 * 0, -EINVAL (width out of range), -ENOMEM or -EIO.
 */
int pt_flame__write_svg(const struct pt_flame *fl, FILE *f, const struct pt_flame_svg_opts *o);

#endif
