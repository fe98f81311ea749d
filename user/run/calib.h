/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What one probe hit costs on this machine, per probe-site kind
 * (aggregate/overhead.h), measured by proftrace on a helper process of its
 * own: the helper (this binary, `proftrace __calib-helper`) times loops of
 * calls to three tiny functions whose first instruction is of one kind
 * each, unattached and then while a child proftrace probes them. The
 * difference per call is what a probed call costs an interval that
 * encloses it (pair_ns); the child's own measured time per call, less the
 * unattached time, is the part inside the call's own interval (self_ns).
 * The Python agent's named call, or the frame probe's, is measured the
 * same way on the target's own interpreter (pt_calib__python); a sample's
 * cost is the sampler program's run time in the run itself (BPF stats,
 * run/probecost.c) (docs/summary.md#overhead).
 *
 * The result is kept in /run/proftrace/calibration.json for an hour (same
 * boot, kernel and proftrace version); PT_CALIBRATE=off turns calibration off (no overhead
 * figures), PT_CALIBRATE=fresh ignores the cached one.
 */
#ifndef PT_CALIB_H
#define PT_CALIB_H

#include <stdbool.h>

#include "aggregate/overhead.h"

struct pt_calib {
	bool ok; /* false: off, or failed (why says) */
	double pair_ns[PT_SITE_NKINDS];
	double self_ns[PT_SITE_NKINDS];
	bool measured[PT_SITE_NKINDS]; /* false: the bench's figure */
	bool cached;		       /* read from the cache file */
	double took_s;		       /* wall time calibrating (0 when cached) */
	char why[256];
};

/* Fill c (never fails: c->ok false and c->why set when it could not).
 * exe: this proftrace binary (NULL: /proc/self/exe). */
void pt_calib__get(struct pt_calib *c, const char *exe);
/* A named Python call's cost through kind (PT_SITE_AGENT or
 * PT_SITE_FRAME) on interpreter python (a path that runs it from here,
 * e.g. /proc/PID/exe), measured live (cached an hour per key, the
 * interpreter's own path); on failure the bench's figure stays. Only when
 * c->ok. */
void pt_calib__python(struct pt_calib *c, const char *python, const char *key,
		      enum pt_site_kind kind);
/* `proftrace __calib-helper`: the process the calibration probes. */
int pt_calib__helper_main(void);

#endif
