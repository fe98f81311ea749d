// SPDX-License-Identifier: BSD-2-Clause
/*
 * The records of py: functions: a code object BPF has no answer for
 * (PT_REC_PYCODE: which function is it, and the frame slots of its
 * argument values), an attribute location wanted (PT_REC_ATTR), and the
 * calls that began before their code object was known.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "funcs.h"
#include "pyrec.h"

#include "aggregate/stepvals.h"
#include "attach/attach.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "config/config.h"
#include "config/valexpr.h"
#include "python/pyattr.h"
#include "python/pycode.h"
#include "python/pyprobe.h"
#include "util/log.h"
#include "util/util.h"

/* The frame slots of a py: function's argument values in code object
 * code (they differ per code object: two functions can match a probe). */
static void set_py_slots(struct proc *p, uint64_t code, struct pt_py_code *val)
{
	const struct pt_func *f;
	const struct pt_probe_spec *ps;
	const char *names[PT_MAX_VALS] = { 0 };
	int16_t slots[PT_MAX_VALS];
	struct pt_pytypes t = { .code_type = p->python.rt.code_type,
				.unicode_type = p->python.rt.unicode_type };

	for (int k = 0; k < PT_MAX_VALS; k++)
		val->slot[k] = PT_PY_SLOT_NONE;
	val->vals = 0;
	if (val->fid >= pt_resolver__nfuncs(p->res))
		return;
	f = pt_resolver__func(p->res, val->fid);
	if (f->vals_spec < 0)
		return;
	ps = &p->run->cfg.probes[f->vals_spec];
	for (unsigned int k = 0; k < ps->nvals && k < PT_MAX_VALS; k++)
		names[k] = ps->vals[k].src == PT_VSRC_PYARG ? ps->vals[k].name : NULL;
	if (pt_pycode__slots(&p->python.mem, &p->python.rt.L, &t, code, names, PT_MAX_VALS,
			     slots) == 0)
		memcpy(val->slot, slots, sizeof(slots));
	for (unsigned int k = 0; k < ps->nvals && k < PT_MAX_VALS; k++)
		if (names[k] && val->slot[k] < 0)
			pt_msg("proftrace: warning: %s (%s:%u) has no argument '%s': %s=%s is "
			       "missing for it\n",
			       f->symbol, f->object, f->py_line, names[k],
			       pt_vexpr__role_name(ps->vals[k].role), ps->vals[k].text);
	val->vals = 1;
}

/* A code object BPF has not seen: tell BPF whether it is ours. */
void pt_run__on_pycode(struct proc *p, const struct pt_rec_pycode *rec)
{
	struct pt_py_code seen = { .filename = rec->filename,
				   .name = rec->name,
				   .firstlineno = rec->firstlineno };
	struct pt_py_code val;
	bool added;
	int64_t fid = pt_pyprobe__resolve(p->python.probe, rec->code, &seen, &val, &added);

	/* out of memory: BPF keeps it pending, its calls are dropped;
	 * gone: the object now there announces itself */
	if (fid < 0 || fid == PT_PYPROBE_GONE)
		return;
	if (added)
		pt_run__sync_py_funcs(p); /* before the answer: BPF needs the fid's value spec */
	if (fid != PT_FID_PY_NONE && pt_stepvals__active(&p->v.sv))
		set_py_slots(p, rec->code, &val);
	if (val.fid != PT_FID_PY_NONE && val.fid != PT_FID_PY_PENDING)
		val.fid = PT_FID_MAKE(p->idx, val.fid);
	pt_attach__py_code(p->run->att, p->tracee.pid, rec->code, &val);
}

/* Ask BPF to ask again about key in a second: the type's location was
 * not found yet (no instance holds the name yet, or it was freed). */
static void retry_attr(struct proc *p, const struct pt_attr_key *key)
{
	struct attr_retry *v = realloc(p->retries, (p->nretries + 1) * sizeof(*v));

	if (!v)
		return; /* it stays pending: counted, never guessed */
	p->retries = v;
	v[p->nretries++] = (struct attr_retry){ .key = *key,
						.due = pt_now_ns(CLOCK_MONOTONIC) + 1000000000ull };
}

void pt_run__attr_retries(struct proc *p, uint64_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < p->nretries; i++) {
		if (p->retries[i].due > now)
			p->retries[k++] = p->retries[i];
		else
			pt_attach__attr_forget(p->run->att, &p->retries[i].key);
	}
	p->nretries = k;
}

/* Was the attribute of expression k of spec said missing already? */
static bool warned_once(struct run *r, size_t spec, unsigned int k)
{
	size_t i = spec * PT_MAX_VALS + k;

	if (!r->attr_warned)
		r->attr_warned = calloc(r->cfg.nprobes * PT_MAX_VALS + 1, 1);
	if (!r->attr_warned || r->attr_warned[i])
		return true;
	r->attr_warned[i] = 1;
	return false;
}

/* An attribute is wanted from an object of a type BPF has no location
 * for: find where that type keeps it (user/pyattr.c), once. */
void pt_run__on_attr(struct proc *p, const struct pt_rec_attr *a)
{
	struct pt_attr_key key = { .type = a->obj_type, .fid = a->fid, .k = a->k };
	uint32_t fid = a->fid & PT_FID_LOCAL_MASK;
	const struct pt_probe_spec *ps;
	struct pt_pyattr_loc loc;
	const struct pt_func *f;
	const char *attr;
	char why[256];
	int ret;

	if (PT_FID_PROC(a->fid) != p->idx || fid >= p->nfs || !p->python.have)
		return;
	f = pt_resolver__func(p->res, fid);
	ps = f->vals_spec >= 0 ? &p->run->cfg.probes[f->vals_spec] : NULL;
	if (!ps || a->k >= ps->nvals || !ps->vals[a->k].attr)
		return;
	attr = ps->vals[a->k].attr;
	/* the instance BPF saw helps find the name's key; if it was freed
	 * and its memory reused meanwhile, the type alone must do, whatever
	 * the object there now says (even "cannot have it": that is about
	 * its own type, loc.type, set once its type was read) */
	ret = pt_pyattr__resolve_obj(&p->python.mem, &p->python.rt.L, a->obj, attr, &loc, why,
				     sizeof(why));
	if ((ret && ret != -EOPNOTSUPP && ret != -ENOENT) || loc.type != a->obj_type)
		ret = pt_pyattr__resolve(&p->python.mem, &p->python.rt.L, a->obj_type, attr, &loc,
					 why, sizeof(why));
	if (ret == -EFAULT) { /* the type went away under us: ask again */
		retry_attr(p, &key);
		pt_vlog("proftrace: pid %d: %s.%s: %s (asking again)\n", p->tracee.pid, f->symbol,
			attr, why);
		return;
	}
	if (ret == -EAGAIN) {
		/* Neither the type nor this instance has the name: objects of
		 * the type lack it for now. Asked again each second, so the
		 * first instance that has it gets it read. */
		memset(&loc, 0, sizeof(loc));
		loc.kind = PT_PYATTR_K_NONE;
		loc.vst = PT_VST_ATTR_MISSING;
		retry_attr(p, &key);
		if (!warned_once(p->run, (size_t)f->vals_spec, a->k)) {
			pt_msg("proftrace: warning: %s=%s in %s (pid %d): %s: counted as "
			       "no_attribute until an object has it\n",
			       pt_vexpr__role_name(ps->vals[a->k].role), ps->vals[a->k].text,
			       f->symbol, p->tracee.pid, why);
		}
	} else if (ret) {
		memset(&loc, 0, sizeof(loc));
		loc.kind = PT_PYATTR_K_NONE;
		loc.vst = ret == -ENOENT ? PT_VST_ATTR_MISSING : PT_VST_ATTR_UNREADABLE;
		pt_msg("proftrace: warning: %s=%s in %s (pid %d): %s: counted as %s\n",
		       pt_vexpr__role_name(ps->vals[a->k].role), ps->vals[a->k].text, f->symbol,
		       p->tracee.pid, why, pt_vexpr__status_name(loc.vst));
	} else {
		pt_vlog("proftrace: pid %d: %s.%s: %s\n", p->tracee.pid, f->symbol, attr, why);
	}
	loc.type = a->obj_type;
	if (pt_attach__attr_loc(p->run->att, &key, &loc))
		retry_attr(p, &key); /* the map is full: stays pending */
}

/*
 * A call recorded while its code object was pending (fid
 * PT_FID_PY_PENDING): its function now that the PYCODE record (first in
 * the ring) has been answered. false: not one of ours, or no longer known
 * (counted); *fid: its local fid.
 */
bool pt_run__py_pending_fid(struct proc *p, const struct pt_rec *rec, uint32_t *fid)
{
	struct run *r = p->run;
	uint32_t f = p->python.probe ? pt_pyprobe__fid(p->python.probe, rec->code) : PT_FID_PY_NONE;

	if (f == PT_PYPROBE_GONE && rec->type == PT_REC_EXIT)
		p->py_unresolved++; /* ours or not: unknown, and said so */
	if (f == PT_FID_PY_NONE || f == PT_PYPROBE_GONE)
		return false;
	/* its code was not known at entry: BPF could not read its values */
	if (f < p->nfs) {
		int spec = pt_resolver__func(p->res, f)->vals_spec;
		bool at_exit = rec->type == PT_REC_EXIT;

		pt_stepvals__missed(&p->v.sv, spec, at_exit, PT_VST_FIRST_CALL);
		if (r->multi)
			pt_stepvals__missed(&r->all.sv, spec, at_exit, PT_VST_FIRST_CALL);
	}
	*fid = f;
	return true;
}
