/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proftrace's side of the Python agent (shim/ptagent.h has the protocol):
 * find a process's agent segment, wake it with the py: probes and the
 * interpreter's layout, read the code objects it found, tell it which to
 * hook, keep its heartbeat, and detach. Everything read from the segment
 * is untrusted: pt_agent__check() validates the header (and is fuzzed),
 * candidate lists are bounded and copied out before use.
 */
#ifndef PT_AGENT_H
#define PT_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pylayout.h"
#include "shim/ptagent.h"

struct pt_agent;
struct pt_segment_kind;

/* What the segment says, copied out and checked. */
struct pt_agent_info {
	uint32_t py_hex;
	uint32_t state;	    /* enum ptag_state */
	uint32_t reason;    /* enum ptag_reason */
	uint32_t mechanism; /* enum ptag_mechanism */
	uint32_t conflict;  /* enum ptag_conflict */
	char conflict_text[128];
	uint64_t attach_seq, active_seq;
	uint64_t scans, cand_seq, armed_seq, activations, hook_lost;
	uint32_t ncand, cand_dropped, narmed;
	int32_t tool_id;
	uint64_t scan_ns, arm_ns;
	uint64_t enter_addr, exit_addr;
	uint32_t agent_pid;
	/* PTAG_FLAG_HOW (3.8-3.11): named code objects hooked by trampolines,
	 * the frame evaluator installed, wrappers found replaced */
	bool has_how;
	uint32_t ntramp;
	bool evaluator_on;
	uint64_t tramp_lost;
	/* PTAG_FLAG_CLOCKS: its probe sites pass its clock reads */
	bool clocks;
};

/*
 * Check a segment image (len bytes at mem, the target's): magic, version,
 * sizes, the areas inside it, the strings terminated. 0 with *out filled,
 * or -EPROTO with one line in err.
 */
int pt_agent__check(const void *mem, size_t len, struct pt_agent_info *out, char *err,
		    size_t errlen);

/* The agent of process pid, its segment found among the process's open
 * files (util/segment.h). -ENOENT: none (err says how to get one), -EPERM:
 * a memfd of its name that it did not make, -EPROTO, -errno. */
int pt_agent__open(struct pt_agent **out, int pid, char *err, size_t errlen);
/* What the agent's segment is (util/segment.h): for a reader of its own,
 * a test's. */
const struct pt_segment_kind *pt_agent__segment_kind(void);
/* The same over a mapped image (tests, fuzzing); not unmapped at close. */
int pt_agent__open_mem(struct pt_agent **out, void *mem, size_t len, char *err, size_t errlen);
void pt_agent__close(struct pt_agent *a);

/* One py: probe: its module as a path ("a/b/c") and its name glob. */
struct pt_agent_spec {
	const char *path;
	const char *glob;
};

/*
 * Wake the agent for these probes. L: the interpreter's layout (the
 * offsets the agent needs). -EBUSY: another live proftrace is attached;
 * -E2BIG: the probes do not fit the segment.
 */
/* Options for the next attach: PTAG_OPT_* (shim/ptagent.h). */
void pt_agent__set_options(struct pt_agent *a, uint32_t options);
int pt_agent__attach(struct pt_agent *a, const struct pt_agent_spec *specs, size_t n,
		     const struct pt_py_layout *L, uint64_t now);
/* At least every PTAG_HEARTBEAT_NS while attached. */
void pt_agent__heartbeat(struct pt_agent *a, uint64_t now);
/* A new candidate list since the last call: 1 with *codes (malloc()ed,
 * free() it) and *n; 0 when nothing new; -ENOMEM. */
int pt_agent__candidates(struct pt_agent *a, uint64_t **codes, uint32_t *n);
/*
 * What the agent said of the probes with the candidates last read
 * (shim/ptagent.h, PTAG_FLAG_SPECS): *found, PTAG_MAX_SPECS bytes, 1 where
 * pair i's module is in sys.modules; *near, *nnear: code objects of
 * modules whose probe matched nothing (untrusted addresses, as candidates
 * are). Valid until the next pt_agent__candidates(). 1 with them, 0 when
 * the agent does not say (one built before they were added).
 */
int pt_agent__specs(const struct pt_agent *a, const uint8_t **found, const uint64_t **near,
		    uint32_t *nnear);
/* Hook exactly these (of the candidates). -E2BIG beyond PTAG_MAX_CODES. */
int pt_agent__arm(struct pt_agent *a, const uint64_t *codes, uint32_t n);
/* Walk the modules again (a py: probe that has not matched yet). */
void pt_agent__rescan(struct pt_agent *a);
/* Detach and wait (at most timeout_ms) until it says dormant. */
void pt_agent__detach(struct pt_agent *a, unsigned int timeout_ms);
/* The segment as it is now (once lost: as it was last). */
void pt_agent__info(struct pt_agent *a, struct pt_agent_info *out);
/*
 * Its file was truncated under us (by the target's user: util/segment.h):
 * from then on nothing touches it, attach and arm give -EIO, the others do
 * nothing. Once true, stays true.
 */
bool pt_agent__lost(struct pt_agent *a);
/* Its file, for messages. */
const char *pt_agent__path(const struct pt_agent *a);
/* The arm the agent applied is the last one asked? */
bool pt_agent__armed(const struct pt_agent *a);
/* Is arm[] slot i (as last given to pt_agent__arm) hooked by a trampoline
 * (shim/agent/tramp.h)? false too for an agent that does not say. */
bool pt_agent__trampolined(const struct pt_agent *a, uint32_t i);

#endif
