/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Thread ids across PID namespaces. CUPTI (in the server) reports the
 * thread id the server sees, in its own PID namespace; BPF reports the
 * host's. In a container the two differ, and every launch would miss its
 * step. /proc/PID/task/TID/status has both in its NSpid line: the first
 * field is TID as this /proc sees it (the host), the last the TID in the
 * innermost namespace (the server's).
 *
 * The NSpid line is read by pt_tasks__parse_nspid (util/tasks.h).
 *
 * The map is read when opened and kept fresh: pt_nstid__refresh reads
 * the status of threads it has not seen yet (one readdir otherwise), and
 * a lookup that misses refreshes once more (at most every
 * PT_NSTID_MISS_REFRESH_NS), so threads started since are found. Threads
 * that ended stay in the map: their records may still be in the ring.
 * An inner tid taken again by a new thread is remapped when the new
 * thread is read.
 */
#ifndef PT_NSTID_H
#define PT_NSTID_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PT_NSTID_MISS_REFRESH_NS 20000000ull /* 20 ms */

struct pt_nstid;

struct pt_nstid_stats {
	int ns_pid;	     /* the process's pid in its own namespace */
	uint32_t depth;	     /* NSpid fields: 1 same namespace as our /proc */
	uint64_t threads;    /* threads mapped */
	uint64_t refreshes;  /* /proc/PID/task reads */
	uint64_t translated; /* lookups that found a host tid */
	uint64_t unmapped;   /* lookups that found none (left as 0) */
};

/*
 * The map of process pid, under proc_root ("/proc"; tests give a tree of
 * their own). 0 and *out NULL when the process is in the same PID
 * namespace as proc_root's (nothing to map); 0 and a map when it is in
 * another; -errno when its status cannot be read (-ENOMEM).
 */
int pt_nstid__open(struct pt_nstid **out, const char *proc_root, int pid);
void pt_nstid__free(struct pt_nstid *m);

/* Read the threads not seen yet. 0 or -errno (-ENOENT: the process is gone). */
int pt_nstid__refresh(struct pt_nstid *m);

/*
 * The host tid of inner tid t, 0 when unknown (after a refresh if now_ns
 * allows one: now_ns - the last miss refresh >= PT_NSTID_MISS_REFRESH_NS).
 */
uint32_t pt_nstid__host_tid(struct pt_nstid *m, uint32_t t, uint64_t now_ns);

void pt_nstid__stats(const struct pt_nstid *m, struct pt_nstid_stats *st);

#endif
