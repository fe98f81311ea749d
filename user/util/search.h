/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one binary search over a sorted array that every folder uses: where
 * a key is, or would go.
 */
#ifndef PT_SEARCH_H
#define PT_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The index of the first of v's n elements (size bytes each) that is not
 * before key, n when every one is. v must hold the elements before key
 * first, as a sorted array does: with before(elem, key) "elem < key" this
 * is C++'s lower_bound (the first element >= key, where key goes ahead of
 * its equals), with "elem <= key" its upper_bound (the first element >
 * key, where it goes after them; the one before it is the last <= key).
 * Whether the key is there is the caller's to check: v[i] == key, i < n.
 *
 * A predicate, not a three-way compare: upper bounds and keys of another
 * type than the elements (a line number against a line's record, a
 * (tid, time) pair) are as easy to say as lower bounds. Header-only and
 * static inline: inlined where it is called, with before a static function
 * of the caller's file, the compiler calls before directly and inlines it
 * too, so it costs what the hand-written loop it replaces did.
 */
static inline size_t pt_lower_bound(const void *v, size_t n, size_t size, const void *key,
				    bool (*before)(const void *elem, const void *key))
{
	const char *p = v;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2; /* (lo + hi) / 2 could overflow */

		if (before(p + mid * size, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif /* PT_SEARCH_H */
