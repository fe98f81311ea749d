/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Value expressions: what to read out of the target at a call, for the
 * per-step token, KV-length and batch figures (docs/targets.md, "Tokens
 * and sequence lengths"):
 *
 *   native:  argN (integer argument N, 0..5)   ret (integer return value),
 *            either with :i32, :u32 or :i64 (default) for the integer's width
 *   py:      arg:<name>   ret   len(X)   sum(X) mean(X) min(X) max(X)
 *            p50(X) p90(X)        where X is arg:<name> or ret, or one
 *            attribute of either: arg:<name>.<attr>, ret.<attr>
 *
 * Parsing is pure (config.c reports errors with file:line:col); the
 * reading happens in BPF (struct pt_val_expr) and pt_vexpr__reduce()
 * turns what BPF read into the figure.
 */
#ifndef PT_VALEXPR_H
#define PT_VALEXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"

/* What a value is for. */
enum pt_vrole {
	PT_VROLE_TOKENS = 0, /* tokens= on the step line */
	PT_VROLE_KVLEN,	     /* kv_len= */
	PT_VROLE_BATCH,	     /* batch= */
	PT_VROLE_COUNT,	     /* count tokens <probe> <expr>: added to the step's tokens */
	PT_VROLE_MAX
};

#define PT_VEXPR_ATTR_MAX 255 /* longest attribute name */

enum pt_vfn {
	PT_VFN_NONE = 0, /* bare: an int (kv_len: or a list, reduced by kv_len_reduce) */
	PT_VFN_LEN,
	PT_VFN_SUM,
	PT_VFN_MEAN,
	PT_VFN_MIN,
	PT_VFN_MAX,
	PT_VFN_P50,
	PT_VFN_P90,
};

struct pt_vexpr {
	enum pt_vrole role;
	enum pt_vfn fn;
	uint8_t src;   /* enum pt_val_src */
	uint8_t argn;  /* PT_VSRC_ARG */
	uint8_t width; /* native: enum pt_val_width */
	char *name;    /* PT_VSRC_PYARG: the argument's name */
	char *attr;    /* py: the attribute read from the object, or NULL */
	char *text;    /* as written */
	int line, col;
};

/*
 * Parse s (one token, no spaces) for a probe of kind py or native into e
 * (e->name and e->text allocated; role and col are the caller's). 0, or
 * -EINVAL with what is wrong and a hint in why ("what (hint: ...)").
 */
int pt_vexpr__parse(const char *s, bool py, struct pt_vexpr *e, char *why, size_t len);
void pt_vexpr__free(struct pt_vexpr *e);

/* The BPF read for e; kv_reduce: how a bare kv_len list is reduced. */
struct pt_val_expr pt_vexpr__bpf(const struct pt_vexpr *e, enum pt_vfn kv_reduce);

/* The reduction a list read for e gets: e->fn, or kv_reduce for a bare
 * kv_len. */
enum pt_vfn pt_vexpr__reduce_fn(const struct pt_vexpr *e, enum pt_vfn kv_reduce);

/*
 * The figure from what BPF read: v (status OK) and, for a percentile, the
 * elements elem[0..nelem). 0 with *out, or the enum pt_val_status why
 * not (PT_VST_TYPE for an empty list where a mean, min, max or
 * percentile is wanted; PT_VST_TYPE for a list where an int is wanted).
 */
int pt_vexpr__reduce(const struct pt_val *v, enum pt_vfn fn, const int64_t *elem, size_t nelem,
		     double *out);

const char *pt_vexpr__fn_name(enum pt_vfn fn);
const char *pt_vexpr__role_name(enum pt_vrole role);
const char *pt_vexpr__status_name(unsigned int status);

#endif
