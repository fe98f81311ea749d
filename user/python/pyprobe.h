/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * py: probes at run time. BPF announces each code object it has not seen
 * (PT_REC_PYCODE); this reads it out of the target, works out its
 * qualified name (co_qualname on 3.11+, the module source before: see
 * pysrc.h), matches it against the config and answers with the fid to
 * store in BPF's py_codes map, or PT_FID_PY_NONE.
 */
#ifndef PT_PYPROBE_H
#define PT_PYPROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/proftrace.h"
#include "config/config.h"
#include "pycode.h"
#include "python.h"
#include "attach/resolve.h"

struct pt_pyprobe_opts {
	const struct pt_config *cfg;
	struct pt_resolver *res; /* Python functions are added here */
	const struct pt_py_layout *layout;
	struct pt_pytypes types;
	struct pt_tmem mem; /* the target's memory */
	/* Where the target's files are, from here: co_filename is opened
	 * as root + co_filename when absolute, cwd + "/" + co_filename when
	 * relative (/proc/PID/root and /proc/PID/cwd for a live target). */
	const char *root;
	const char *cwd;
};

struct pt_pyprobe_stats {
	uint64_t codes;	     /* code objects resolved */
	uint64_t matched;    /* of which configured */
	uint64_t unreadable; /* could not be read (freed already, not a code object) */
	uint64_t gone;	     /* replaced by another code object before we read it */
	uint64_t no_source;  /* < 3.11: source unreadable, qualname = co_name */
	char no_source_file[PT_PYSTR_MAX + 1]; /* the first such file */
};

struct pt_pyprobe;

struct pt_pyprobe *pt_pyprobe__new(const struct pt_pyprobe_opts *opts);
void pt_pyprobe__free(struct pt_pyprobe *pp);

/* pt_pyprobe__fid() for code that was freed, and its address reused,
 * before it could be read: its pending calls cannot be attributed. */
#define PT_PYPROBE_GONE 0xfffffffdu

/*
 * Resolve the code object at code, which BPF saw with the fingerprint
 * seen (filename, name, firstlineno). *val is what BPF's map must hold
 * for it. Returns the fid; PT_FID_PY_NONE (not configured: val->fid is
 * PT_FID_PY_NONE too); PT_PYPROBE_GONE when the object there can no
 * longer be read or no longer has that fingerprint (nothing to store in
 * BPF then: a new object announces itself); -ENOMEM. *added: a function
 * new to the resolver.
 */
int64_t pt_pyprobe__resolve(struct pt_pyprobe *pp, uint64_t code, const struct pt_py_code *seen,
			    struct pt_py_code *val, bool *added);
/* The answer of the last resolve for code (records of calls that started
 * while it was pending): a fid, PT_FID_PY_NONE (not ours or unknown) or
 * PT_PYPROBE_GONE. */
uint32_t pt_pyprobe__fid(const struct pt_pyprobe *pp, uint64_t code);
/*
 * The configured function code object c (read with its names) belongs to:
 * its fid (added to the resolver when new: *added), or PT_FID_PY_NONE, or
 * -ENOMEM. Unlike pt_pyprobe__resolve() this remembers nothing about c's
 * address: the stack sampler uses it, and must not change the answers
 * pending probe records wait for.
 */
int64_t pt_pyprobe__match(struct pt_pyprobe *pp, struct pt_pycode *c, bool *added);
/* Fill c->qualname from the module source when the code object has no
 * co_qualname (< 3.11); co_name when the source does not tell. */
void pt_pyprobe__qualname(struct pt_pyprobe *pp, struct pt_pycode *c);
/* A module's source as the target sees it (read once, cached): NULL when
 * it cannot be read. */
const char *pt_pyprobe__source(struct pt_pyprobe *pp, const char *filename, size_t *len);
const struct pt_pyprobe_stats *pt_pyprobe__stats(const struct pt_pyprobe *pp);

#endif
