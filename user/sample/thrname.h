/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a sampled thread is called in the flame graphs and the thread
 * tables, decided once, when it is first seen:
 *
 *  - proftrace's own threads in the target (the Python agent's
 *    "proftrace-py", shim/agent/agent.c; the CUPTI shim's control thread
 *    "proftrace-cupti", shim/inject.c), by their comm: kept apart from
 *    the target's figures (aggregate/stacks.h, pt_stacks__own_thread);
 *  - else its Python name (threading.Thread.name, python/pythreads.h)
 *    when the interpreter has one for it;
 *  - else its comm; else "?" (the flame root adds the tid either way).
 *
 * Python names are read again when a thread is not in the last read and
 * that read is at least PT_THRNAME_REREAD_NS old (PT_THRNAME_RETRY_NS
 * when it failed), so a server starting a pool of threads costs a read
 * per period, not one per thread.
 */
#ifndef PT_THRNAME_H
#define PT_THRNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_THRNAME_REREAD_NS 50000000ull /* 50 ms */
/* After a read that failed (threading not imported yet, a target whose
 * sys.modules is too big to search), the next one waits longer: a
 * thread-churning server must not keep proftrace searching. */
#define PT_THRNAME_RETRY_NS 1000000000ull /* 1 s */

struct pt_pythreads;

/* Is comm the name of one of proftrace's own threads? */
bool pt_thrname__own(const char *comm);

struct pt_thrname_stats {
	uint64_t reads;	 /* of threading._active */
	uint64_t failed; /* ... that gave no names (threading not imported, ...) */
	uint64_t python; /* threads named by their Python name */
	uint64_t comm;	 /* ... by their comm */
	uint64_t own;	 /* proftrace's own threads seen */
	int last_error;	 /* of the last failed read, -errno */
};

struct pt_thrname;

/* py: the interpreter's thread names; NULL for none (the comm then). */
struct pt_thrname *pt_thrname__new(struct pt_pythreads *py);
void pt_thrname__free(struct pt_thrname *tn);

/*
 * The name of a thread first seen now: its comm (as read from /proc;
 * empty when it could not be read) and its tid in the target's own PID
 * namespace. Writes the name into name; true when the thread is
 * proftrace's own.
 */
bool pt_thrname__name(struct pt_thrname *tn, uint32_t ns_tid, const char *comm, uint64_t now_ns,
		      char *name, size_t len);

void pt_thrname__stats(const struct pt_thrname *tn, struct pt_thrname_stats *st);

#endif
