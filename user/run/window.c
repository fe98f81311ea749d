// SPDX-License-Identifier: BSD-2-Clause
/*
 * --interval SEC: every SEC seconds, the figures of the window just ended
 * (its steps, buckets, functions, values, probe cost) as a summary of its
 * own, window-NNNN.json in the output folder (the last WINDOWS_KEPT are
 * kept); the final summary.json covers the whole run, as without it. Each
 * process has a second view fed with the same records (its window view,
 * view.c), written here and started afresh at each window's end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "run.h"
#include "view.h"
#include "report.h"
#include "window.h"

#include "aggregate/agg.h"
#include "report/emit.h"
#include "report/outdir.h"
#include "util/log.h"

#define WINDOWS_KEPT 100

/* how many windows are kept: WINDOWS_KEPT, or PT_WINDOWS_KEPT (tests) */
static unsigned int kept(void)
{
	const char *s = getenv("PT_WINDOWS_KEPT");
	int n = s ? atoi(s) : 0;

	return n > 0 ? (unsigned int)n : WINDOWS_KEPT;
}

static int emit_doc(FILE *f, const void *ctx)
{
	return pt_summary__write_json(f, ctx);
}

/* The window's document: its own duration and start, "window" added. */
static void write_window(struct run *r, struct proc *p, uint64_t t0, uint64_t t1)
{
	uint64_t keep0 = r->t0_mono, keep_end = r->t_end_mono, keep_unix = r->t0_unix;
	char name[64], err[512], old[4200];
	cJSON *doc, *w;

	pt_agg__finish(p->window_view->agg);
	/* the document's clock is the window's */
	r->t0_unix = keep_unix + (t0 - keep0);
	r->t0_mono = t0;
	r->t_end_mono = t1;
	doc = pt_run__view_doc(r, p, p->window_view);
	r->t0_mono = keep0;
	r->t_end_mono = keep_end;
	r->t0_unix = keep_unix;
	if (!doc)
		return;
	w = cJSON_AddObjectToObject(doc, "window");
	if (w) {
		cJSON_AddNumberToObject(w, "index", r->nwindows);
		cJSON_AddNumberToObject(w, "start_s", (double)(t0 - keep0) / 1e9);
		cJSON_AddNumberToObject(w, "end_s", (double)(t1 - keep0) / 1e9);
		cJSON_AddNumberToObject(w, "interval_s", r->env.interval_s);
	}
	if (r->multi)
		snprintf(name, sizeof(name), "window-%04u-%d.json", r->nwindows, p->tracee.pid);
	else
		snprintf(name, sizeof(name), "window-%04u.json", r->nwindows);
	if (r->out && pt_outdir__write(r->out, name, emit_doc, doc, err, sizeof(err)))
		pt_msg("proftrace: warning: window %u not written: %s\n", r->nwindows, err);
	cJSON_Delete(doc);
	if (r->out && r->nwindows > kept()) {
		if (r->multi)
			snprintf(old, sizeof(old), "%s/window-%04u-%d.json",
				 pt_outdir__path(r->out), r->nwindows - kept(), p->tracee.pid);
		else
			snprintf(old, sizeof(old), "%s/window-%04u.json", pt_outdir__path(r->out),
				 r->nwindows - kept());
		unlink(old);
	}
}

void pt_run__window_tick(struct run *r, uint64_t now)
{
	uint64_t len = (uint64_t)(r->env.interval_s * 1e9), t0;

	if (!r->env.interval_s)
		return;
	if (!r->next_window)
		r->next_window = r->t0_mono + len;
	if (now < r->next_window)
		return;
	t0 = r->next_window - len;
	r->nwindows++;
	for (size_t i = 0; i < r->procs.n; i++) {
		struct proc *p = r->procs.v[i];

		if (!p->window_view)
			continue;
		write_window(r, p, t0 > p->t_added ? t0 : p->t_added, r->next_window);
		pt_run__free_view(p->window_view);
		free(p->window_view);
		p->window_view = NULL;
		if (pt_proc__live(p) && pt_run__window_open(p))
			pt_msg("proftrace: warning: out of memory: no more windows for pid %d\n",
			       p->tracee.pid);
	}
	r->next_window += len;
	if (r->next_window <= now) /* a stall: skip windows, do not write them all */
		r->next_window = now + len;
}
