// SPDX-License-Identifier: BSD-2-Clause
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "mixed.h"
#include "util/util.h"

struct out {
	struct pt_mixed_ref *v;
	size_t n, max;
};

static void put(struct out *o, uint32_t i, uint8_t native)
{
	if (o->n < o->max)
		o->v[o->n++] = (struct pt_mixed_ref){ .i = i, .native = native };
}

static bool libc_frame(const struct pt_unwind_frame *f)
{
	return f->kind == PT_UNWIND_NATIVE && f->module &&
	       (!strncmp(f->module, "libc.so", 7) || !strncmp(f->module, "libpthread", 10));
}

static bool named(const struct pt_unwind_frame *f, const char *sym)
{
	return f->sym && !strcmp(f->sym, sym);
}

/* The GIL (pt_mixed__merge): PT_MIXED_GIL, or PT_MIXED_GIL_WAIT where
 * libc's frames wait (pthread_cond_timedwait, __lll_lock_wait, ...); its
 * first interpreter frame in *at; 0: not the GIL. */
static uint8_t gil(const struct pt_unwind_frame *nat, size_t nn, size_t *at)
{
	bool cond = false, wait = false;
	size_t k = 0;

	for (; k < nn && libc_frame(&nat[k]); k++) {
		cond |= nat[k].sym && strstr(nat[k].sym, "pthread_cond_");
		wait |= nat[k].sym && strstr(nat[k].sym, "wait");
	}
	if (k == nn || nat[k].kind != PT_UNWIND_INTERP)
		return 0;
	if (!cond && !named(&nat[k], "take_gil") && !named(&nat[k], "drop_gil"))
		return 0;
	*at = k;
	return wait ? PT_MIXED_GIL_WAIT : PT_MIXED_GIL;
}

/* How many refs from the start are native before the first Python one:
 * all of them when there is none. */
static size_t natives_only(const struct out *o)
{
	size_t k = 0;

	while (k < o->n && o->v[k].native)
		k++;
	return k;
}

/* The next group of Python frames one eval call runs, from *at: its
 * frames go out (shim frames, code 0, do not), *at moves past it. False
 * when no frame is left. */
static bool group(unsigned int minor, const struct pt_sample_frame *f, size_t n, size_t *at,
		  struct out *o)
{
	size_t i = *at;

	if (i >= n)
		return false;
	for (; i < n; i++) {
		if (minor >= 12 && !f[i].code) {
			i++; /* the shim ends its eval call's group */
			break;
		}
		if (f[i].code) /* 0 before 3.12: unreadable, one call all the same */
			put(o, (uint32_t)i, PT_MIXED_PY);
		if (minor < 11 || (minor == 11 && (f[i].flags & PT_SFRAME_ENTRY))) {
			i++;
			break;
		}
	}
	*at = i;
	return true;
}

/* 3.12+: a shim frame where a group should start: the eval call pushed
 * it and no Python frame yet. */
static bool empty_group(unsigned int minor, const struct pt_sample_frame *f, size_t n, size_t at)
{
	return minor >= 12 && at < n && !f[at].code;
}

size_t pt_mixed__merge(unsigned int minor, const struct pt_sample_frame *f, size_t n,
		       const struct pt_unwind_frame *nat, size_t nn, enum pt_unwind_end end,
		       struct pt_mixed_ref *out, size_t max, enum pt_mixed_how *how)
{
	struct out o = { .v = out, .max = max };
	size_t at = 0, unmatched = 0, rest = 0, gil_at = nn;
	uint8_t g = gil(nat, nn, &gil_at);

	for (size_t j = 0; j < nn; j++) {
		if (j == gil_at && g)
			put(&o, (uint32_t)j, g);
		switch (nat[j].kind) {
		case PT_UNWIND_NATIVE:
			put(&o, (uint32_t)j, PT_MIXED_NATIVE);
			break;
		case PT_UNWIND_EVAL:
			if (empty_group(minor, f, n, at))
				at++; /* entered, its shim pushed, no frame yet */
			else if (!group(minor, f, n, &at, &o))
				unmatched++;
			break;
		default: /* the interpreter's own code, proftrace's helpers */
			break;
		}
	}
	/* what no eval call took: the outer frames, still in their order */
	for (; at < n; at++) {
		if (!f[at].code)
			continue;
		put(&o, (uint32_t)at, PT_MIXED_PY);
		rest++;
	}
	/* Native frames under the outermost Python frame (the process's or
	 * thread's start: __libc_start_main, start_thread) are left out:
	 * off-CPU intervals have Python frames only, and one stack must not
	 * be two towers in flame-wall.svg. A thread without Python keeps all. */
	if (natives_only(&o) < o.n)
		while (o.v[o.n - 1].native)
			o.n--;
	*how = PT_MIXED_WHOLE;
	if (end != PT_UNWIND_END_BOTTOM && rest)
		*how = PT_MIXED_PARTIAL;
	else if (unmatched || rest)
		*how = PT_MIXED_MISMATCH;
	return o.n;
}

void pt_mixed__label(const struct pt_unwind_frame *nf, char *buf, size_t len)
{
	if (nf->sym && nf->module)
		snprintf(buf, len, "%s (%s)", nf->sym, nf->module);
	else if (nf->sym)
		snprintf(buf, len, "%s", nf->sym);
	else if (nf->module)
		snprintf(buf, len, "%s+0x%" PRIx64, nf->module, nf->modoff);
	else
		snprintf(buf, len, "[unknown]");
}

uint64_t pt_mixed__key(const char *label)
{
	uint64_t h = pt_fnv1a(label);

	return h ? h : 1; /* 0 says unknown */
}
