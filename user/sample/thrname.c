// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/pythreads.h"
#include "thrname.h"

/* The names shim/agent/agent.c and shim/inject.c give their threads
 * (pthread_setname_np); tests/integration/test_flame_threads.py checks
 * they are left out of a real run's outputs. */
static const char *const own_names[] = { "proftrace-py", "proftrace-cupti" };

struct pt_thrname {
	struct pt_pythreads *py;
	bool read_once;
	uint64_t next_read; /* not before: CLOCK_MONOTONIC ns */
	struct pt_thrname_stats st;
};

bool pt_thrname__own(const char *comm)
{
	for (size_t i = 0; i < sizeof(own_names) / sizeof(own_names[0]); i++)
		if (!strcmp(comm, own_names[i]))
			return true;
	return false;
}

struct pt_thrname *pt_thrname__new(struct pt_pythreads *py)
{
	struct pt_thrname *tn = calloc(1, sizeof(*tn));

	if (tn)
		tn->py = py;
	return tn;
}

void pt_thrname__free(struct pt_thrname *tn)
{
	free(tn);
}

static const char *python_name(struct pt_thrname *tn, uint32_t tid, uint64_t now_ns)
{
	const struct pt_pythread *v;
	const char *s;
	size_t n;
	int e;

	if (!tn->py)
		return NULL;
	s = tn->read_once ? pt_pythreads__name(tn->py, tid) : NULL;
	if (s || (tn->read_once && now_ns < tn->next_read))
		return s;
	tn->read_once = true;
	tn->st.reads++;
	e = pt_pythreads__read(tn->py, &v, &n);
	tn->next_read = now_ns + (e ? PT_THRNAME_RETRY_NS : PT_THRNAME_REREAD_NS);
	if (e) {
		tn->st.failed++;
		tn->st.last_error = e;
		return NULL;
	}
	return pt_pythreads__name(tn->py, tid);
}

bool pt_thrname__name(struct pt_thrname *tn, uint32_t ns_tid, const char *comm, uint64_t now_ns,
		      char *name, size_t len)
{
	const char *py;

	if (comm[0] && pt_thrname__own(comm)) {
		tn->st.own++;
		snprintf(name, len, "%s", comm);
		return true;
	}
	py = python_name(tn, ns_tid, now_ns);
	if (py) {
		tn->st.python++;
		snprintf(name, len, "%s", py);
	} else {
		tn->st.comm++;
		snprintf(name, len, "%s", comm[0] ? comm : "?");
	}
	return false;
}

void pt_thrname__stats(const struct pt_thrname *tn, struct pt_thrname_stats *st)
{
	*st = tn->st;
}
