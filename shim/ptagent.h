/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ptagent: the shared-memory ABI between the Python agent
 * (libproftrace_agent.so, inside a CPython process) and proftrace
 * (user/python/agent.c). The one header both sides include: fixed-width
 * types, enums, limits.
 *
 * What the agent is for: timing only the Python functions a targets file
 * names, exactly, with nothing installed for any other call. While
 * proftrace is attached the agent turns on per-function hooks for the named
 * code objects only (3.12+: sys.monitoring local events; 3.8-3.11:
 * trampolines, shim/agent/tramp.h, and for what they cannot wrap a PEP 523
 * frame evaluator that passes every other frame straight on), and each hook
 * calls pt_agent_enter(code, frame) / pt_agent_exit(code, frame, ret),
 * tiny functions of the agent's own file that proftrace probes with BPF. So
 * timing, steps, buckets and values stay in BPF; the agent only decides
 * which calls reach a probe at all.
 *
 * Segment: a memfd named PTAG_MEMFD_NAME, PTAG_SIZE bytes, sealed against
 * shrinking and growing, that the agent keeps open (close-on-exec) and
 * mapped for the process's life; proftrace finds it through /proc/PID/fd
 * (shim/memseg.h says why). agent_pid tells the agent's own segment from
 * one a forked child still holds of its parent's.
 *
 *   [0, 4096)                 struct ptag_header
 *   [files_off, +files_size)  proftrace: the py: probes, as NUL-terminated
 *                             pairs "file suffix\0name glob\0", nfiles pairs
 *   [cand_off, +cand_cap*8)   agent: candidate code objects (u64 addresses)
 *   [arm_off, +arm_cap*8)     proftrace: code objects to hook (u64)
 *   [PTAG_FOUND_OFF, +256)    agent (flags PTAG_FLAG_SPECS): per probe pair,
 *                             1 when a module of sys.modules has its file
 *   [PTAG_NEAR_OFF, +nnear*8) agent (PTAG_FLAG_SPECS): the code objects of a
 *                             probe's module whose name glob matched none of
 *                             them (u64), so proftrace can say which names
 *                             are there; never hooked
 *
 * Protocol (proftrace drives; the agent's thread sleeps on the futex word
 * `wake`, with no timeout while dormant):
 *   attach: proftrace writes the layout fields, files, heartbeat_ns,
 *     reader_pid, attach_seq += 1, attached = 1 (release), then wake += 1
 *     and FUTEX_WAKE.
 *   agent: takes the GIL, installs its callbacks (nothing per call yet:
 *     3.12+ only PY_UNWIND/PY_THROW globally, which cost nothing unless an
 *     exception unwinds; 3.8-3.11 nothing until the first arm), walks
 *     sys.modules for modules whose file ends in a suffix, collects their
 *     code objects whose co_name matches the glob (functions, methods,
 *     nested functions, decorated ones through __wrapped__), writes them
 *     to cand[] (and, PTAG_FLAG_SPECS, found[] and near[]) and cand_seq +=
 *     1 (release); state = ACTIVE.
 *   proftrace: reads each candidate out of the target itself (untrusted),
 *     decides which are named (the same matcher as for every code object),
 *     writes arm[] (narm), arm_seq += 1 (release), wakes the agent.
 *   agent: hooks exactly arm[] (drops what is no longer in it), armed_seq
 *     = arm_seq. Every second while active it rescans when sys.modules
 *     changed (lazy imports) or when rescan_seq moved.
 *   while attached: proftrace refreshes heartbeat_ns at least every
 *     PTAG_HEARTBEAT_NS; the agent wakes every PTAG_TICK_NS to check it.
 *   detach: attached = 0 and a wake: the agent removes every hook, event
 *     and callback, state = DORMANT (reason DETACH).
 *   proftrace killed: the heartbeat ages past PTAG_HEARTBEAT_TIMEOUT_NS and
 *     the agent removes everything itself (reason TIMEOUT).
 *   a conflict (all sys.monitoring tool ids taken; another frame evaluator
 *     installed): nothing is installed, state stays DORMANT with reason
 *     CONFLICT and conflict_text says what holds it.
 *
 * Everything proftrace reads here was written by the target: it is
 * untrusted input, validated field by field (user/python/agent.c, fuzzed).
 */
#ifndef PTAGENT_H
#define PTAGENT_H

#include <stdint.h>

#define PTAG_MAGIC "PTPYAGNT" /* 8 bytes, no NUL stored */
#define PTAG_MAGIC_LEN 8
#define PTAG_VERSION 1
#define PTAG_MEMFD_NAME "proftrace-py"
#define PTAG_SIZE (64u << 10)
#define PTAG_HEADER_SIZE 4096u
#define PTAG_FILES_SIZE (8u << 10)
#define PTAG_MAX_CODES 3072u /* candidates, and hooked code objects */

/* The symbols proftrace probes (in the agent's .dynsym). */
#define PTAG_SYM_ENTER "pt_agent_enter"
#define PTAG_SYM_EXIT "pt_agent_exit"

#define PTAG_HEARTBEAT_NS (100ull * 1000 * 1000)
#define PTAG_HEARTBEAT_TIMEOUT_NS (1000ull * 1000 * 1000)
#define PTAG_TICK_NS (200ull * 1000 * 1000)
#define PTAG_RESCAN_NS (1000ull * 1000 * 1000)

enum ptag_state {
	PTAG_STATE_DORMANT = 0,
	PTAG_STATE_ACTIVE = 1,
};

enum ptag_reason {
	PTAG_DORMANT_NEVER = 0,	     /* never attached */
	PTAG_DORMANT_DETACH = 1,     /* attached cleared */
	PTAG_DORMANT_TIMEOUT = 2,    /* heartbeat too old: proftrace gone */
	PTAG_DORMANT_CONFLICT = 3,   /* another tool holds what we need */
	PTAG_DORMANT_RESTART = 4,    /* a new attach_seq while active */
	PTAG_DORMANT_FAILED = 5,     /* a Python call failed (conflict_text) */
	PTAG_DORMANT_WAITING = 6,    /* attached, the interpreter not initialised yet */
	PTAG_DORMANT_FINALIZING = 7, /* the interpreter is shutting down */
};

enum ptag_mechanism {
	PTAG_MECH_NONE = 0,
	PTAG_MECH_MONITORING = 1, /* 3.12+: sys.monitoring local events */
	PTAG_MECH_EVALFRAME = 2,  /* 3.8-3.11: a PEP 523 frame evaluator */
};

enum ptag_conflict {
	PTAG_CONFLICT_NONE = 0,
	PTAG_CONFLICT_TOOL_IDS = 1,	/* every sys.monitoring tool id is taken */
	PTAG_CONFLICT_EVAL_FRAME = 2,	/* another frame evaluator is installed */
	PTAG_CONFLICT_UNSUPPORTED = 3,	/* interpreter version or build */
	PTAG_CONFLICT_PYTHON_ERROR = 4, /* a call into the interpreter failed */
};

struct ptag_header {
	/* Line 0: identity, written once before magic (release). */
	uint8_t magic[PTAG_MAGIC_LEN];
	uint32_t version;
	uint32_t header_size; /* PTAG_HEADER_SIZE */
	uint32_t total_size;  /* PTAG_SIZE */
	uint32_t agent_pid;   /* getpid() in the agent's PID namespace */
	uint32_t py_hex;      /* the interpreter's PY_VERSION_HEX */
	uint32_t flags;	      /* PTAG_FLAG_* */
	uint64_t created_ns;  /* CLOCK_MONOTONIC */
	uint64_t enter_addr;  /* &pt_agent_enter, &pt_agent_exit in the agent */
	uint64_t exit_addr;
	uint64_t reserved0;

	/* Line 1: agent state (the agent writes). */
	uint32_t state;		 /* enum ptag_state */
	uint32_t dormant_reason; /* enum ptag_reason */
	uint32_t mechanism;	 /* enum ptag_mechanism in use (or tried) */
	uint32_t conflict;	 /* enum ptag_conflict */
	uint64_t active_seq;	 /* the attach_seq it went ACTIVE for */
	uint64_t scans;		 /* module walks done */
	uint64_t cand_seq;	 /* bumped (release) once cand[]/ncand are written */
	uint32_t ncand;
	uint32_t cand_dropped; /* candidates beyond cand_cap */
	uint64_t armed_seq;    /* the arm_seq in effect */
	uint32_t narmed;       /* code objects hooked */
	int32_t tool_id;       /* sys.monitoring tool id held, -1: none */

	/* Line 2: more agent state. */
	uint64_t hook_lost; /* our frame evaluator found replaced (PEP 523) */
	uint64_t activations;
	uint64_t scan_ns;      /* GIL held by the last walk */
	uint64_t arm_ns;       /* GIL held by the last arm */
	uint32_t nnear;	       /* PTAG_FLAG_SPECS: code objects in near[] */
	uint32_t near_dropped; /* beyond PTAG_MAX_NEAR */
	/* PTAG_FLAG_HOW (3.8-3.11), as of the last arm (kept after detach, for
	 * the report): armed code objects hooked by trampolines, whether the
	 * frame evaluator was installed; and the named functions whose
	 * __code__ the program replaced since we wrapped them (looked at
	 * every tick; their calls are no longer timed) */
	uint32_t ntramp;
	uint32_t evaluator_on;
	uint64_t tramp_lost;
	uint64_t reserved2[1];

	/* Lines 3-4: what holds what we need, or what failed; NUL-terminated. */
	char conflict_text[128];

	/* Line 5: proftrace writes. */
	uint64_t attach_seq;
	uint64_t heartbeat_ns; /* CLOCK_MONOTONIC */
	uint32_t attached;     /* 1 while proftrace wants hooks */
	uint32_t reader_pid;
	uint32_t wake; /* futex word: += 1 and FUTEX_WAKE after a change */
	uint32_t narm;
	uint64_t arm_seq;
	uint64_t rescan_seq;
	uint32_t options; /* PTAG_OPT_*, read by the agent at each attach */
	uint32_t reserved5a;
	uint64_t reserved5[1];

	/* Line 6: the interpreter's layout as proftrace knows it (written
	 * before attached): where the agent finds the current frame (3.12+)
	 * and tells a generator's creation frame (3.11), a type's dict. */
	uint32_t tstate_frame;	    /* PyThreadState -> frame (cframe on 3.12) */
	int32_t cframe_frame;	    /* >= 0: tstate_frame is a _PyCFrame, frame here */
	uint32_t frame_code;	    /* frame -> code object */
	uint32_t frame_owner;	    /* owner byte (3.11+), 0: none */
	uint32_t code_flags;	    /* co_flags */
	uint32_t type_dict;	    /* PyTypeObject.tp_dict */
	uint32_t interp_eval_frame; /* PyInterpreterState.eval_frame (3.8 only needs it) */
	uint32_t type_flags;	    /* PyTypeObject.tp_flags */
	uint64_t code_mask;	    /* frame's code word & code_mask: the object (3.14 tags it) */
	uint64_t reserved6[3];

	/* Line 7: the areas (offsets from the segment start). */
	uint32_t nfiles;
	uint32_t files_off, files_size;
	uint32_t cand_off, cand_cap;
	uint32_t arm_off, arm_cap;
	uint32_t reserved7[9];
};

_Static_assert(sizeof(struct ptag_header) == 512, "ptag_header layout");
_Static_assert(__builtin_offsetof(struct ptag_header, state) == 64, "state line");
_Static_assert(__builtin_offsetof(struct ptag_header, hook_lost) == 128, "line 2");
_Static_assert(__builtin_offsetof(struct ptag_header, conflict_text) == 192, "text");
_Static_assert(__builtin_offsetof(struct ptag_header, attach_seq) == 320, "proftrace line");
_Static_assert(__builtin_offsetof(struct ptag_header, tstate_frame) == 384, "layout line");
_Static_assert(__builtin_offsetof(struct ptag_header, nfiles) == 448, "areas line");

/* The areas of a PTAG_SIZE segment. */
#define PTAG_FILES_OFF PTAG_HEADER_SIZE
#define PTAG_CAND_OFF (PTAG_FILES_OFF + PTAG_FILES_SIZE)
#define PTAG_ARM_OFF (PTAG_CAND_OFF + PTAG_MAX_CODES * 8u)
_Static_assert(PTAG_ARM_OFF + PTAG_MAX_CODES * 8u <= PTAG_SIZE, "areas fit");

/*
 * flags: what an agent writes beyond version 1's first areas. An agent
 * without a flag (built before it) leaves its area zero, and proftrace
 * then does not read it.
 */
#define PTAG_FLAG_SPECS 1u /* found[] and near[]: which probes' modules are loaded */
#define PTAG_FLAG_HOW 2u   /* how[], ntramp, evaluator_on, tramp_lost */
/* The probe sites take the agent's clock reads: pt_agent_enter(code,
 * frame, prev) and pt_agent_exit(code, frame, ret, end, prev), end read
 * right before the call, prev right after the thread's last enter
 * returned (CLOCK_MONOTONIC ns; shim/agent/hooks.c says why). Without
 * the flag the extra argument registers hold whatever they held. */
#define PTAG_FLAG_CLOCKS 4u
#define PTAG_MAX_SPECS 256u /* probe pairs the agent reads (and found[] holds) */
#define PTAG_FOUND_OFF (PTAG_ARM_OFF + PTAG_MAX_CODES * 8u)
#define PTAG_NEAR_OFF (PTAG_FOUND_OFF + PTAG_MAX_SPECS)
#define PTAG_MAX_NEAR ((PTAG_SIZE - PTAG_NEAR_OFF) / 8u)
_Static_assert(PTAG_NEAR_OFF % 8 == 0 && PTAG_MAX_NEAR >= 256, "near[] fits");

/*
 * how[] (PTAG_FLAG_HOW): a bit per arm[] slot, set when that code object
 * is hooked by a trampoline (shim/agent/tramp.h), clear when by the frame
 * evaluator or sys.monitoring (the header's mechanism) or not hooked. It
 * takes the end of the segment, so an agent with the flag keeps near[]
 * to PTAG_MAX_NEAR_HOW entries (one without it may use PTAG_MAX_NEAR).
 */
#define PTAG_HOW_OFF (PTAG_SIZE - PTAG_MAX_CODES / 8u)
#define PTAG_MAX_NEAR_HOW ((PTAG_HOW_OFF - PTAG_NEAR_OFF) / 8u)
_Static_assert(PTAG_MAX_NEAR_HOW >= 256, "near[] still fits beside how[]");

/* options: set py_trampolines off (the frame evaluator for every named
 * function, as before trampolines; an agent without them ignores it). */
#define PTAG_OPT_NO_TRAMPOLINES 1u

/* A sampled frame of this file is a trampoline's: not the program's. */
#define PTAG_TRAMP_FILE "<proftrace>"

enum ptag_hook {
	PTAG_HOOK_NONE = 0,
	PTAG_HOOK_MONITORING = 1,
	PTAG_HOOK_EVALFRAME = 2,
	PTAG_HOOK_TRAMPOLINE = 3,
};

static inline const char *ptag_reason_name(uint32_t r)
{
	static const char *const names[] = {
		[PTAG_DORMANT_NEVER] = "never attached",
		[PTAG_DORMANT_DETACH] = "detached",
		[PTAG_DORMANT_TIMEOUT] = "heartbeat timeout",
		[PTAG_DORMANT_CONFLICT] = "conflict",
		[PTAG_DORMANT_RESTART] = "restarted",
		[PTAG_DORMANT_FAILED] = "failed",
		[PTAG_DORMANT_WAITING] = "interpreter not initialised yet",
		[PTAG_DORMANT_FINALIZING] = "interpreter finalizing",
	};

	return r < sizeof(names) / sizeof(names[0]) && names[r] ? names[r] : "unknown";
}

#endif
