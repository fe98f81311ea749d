/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A proftrace session, as main() drives it: an opaque handle and the
 * calls that take it through its phases, in this order only:
 *
 *   open -> (dry run | attach -> run -> report) -> done
 *
 * open finds the processes and resolves the probes (nothing is attached);
 * attach loads BPF, the sampler and the GPU rings and starts the clock;
 * run is the event loop, until --duration, a signal or the processes'
 * exit; report writes what was taken, also after a failed loop. What a
 * session holds (struct run, run.h) is private to user/run/.
 */
#ifndef PT_RUN_SESSION_H
#define PT_RUN_SESSION_H

struct pt_session;
struct pt_env;

enum pt_session_phase {
	PT_SESSION_OPEN,     /* processes found, probes resolved */
	PT_SESSION_ATTACHED, /* probes in, clock started */
	PT_SESSION_STOPPED,  /* the loop ended: what was taken is in */
	PT_SESSION_DONE,     /* reported, dry-run printed, or failed */
};

/* A new session for env, opened: 0, or -errno (-PT_EUSAGE: exit 2) with
 * its error said on stderr. *out is set either way (NULL: no memory);
 * free it with pt_session__free. */
int pt_session__open(struct pt_session **out, const struct pt_env *env);
/* --dry-run: what would be attached, on stdout. Then done. */
void pt_session__dry_run(struct pt_session *s);
/* attach, run, report: as far as it gets. 0 or -errno (said); -EINVAL
 * when s is not open. A stop asked for while attaching undoes the attach
 * and takes nothing (pt_session__exit_code says so). */
int pt_session__run(struct pt_session *s);
enum pt_session_phase pt_session__phase(const struct pt_session *s);
/* The exit status for e, the last call's result: 128 + the signal that
 * stopped the attach, else pt_exit_code(e). */
int pt_session__exit_code(const struct pt_session *s, int e);
void pt_session__free(struct pt_session *s);

#endif
