// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stddef.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "util/segment.h"
#include "util/util.h"

struct pt_agent {
	struct pt_segment seg; /* fd -1: an image given by the caller */
	char *mem;
	size_t len;
	struct ptag_header *hdr;
	uint64_t cand_seq_seen;
	uint64_t arm_seq;
	bool attached;
	bool lost;		   /* its file was truncated: not touched again */
	struct pt_agent_info last; /* what it said last, for after that */
	/* with the candidates last read (PTAG_FLAG_SPECS): which probes'
	 * modules are loaded, and near[] */
	bool has_specs;
	uint32_t options; /* PTAG_OPT_* for the next attach */
	uint8_t found[PTAG_MAX_SPECS];
	uint64_t *near;
	uint32_t nnear;
};

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define LD_ACQ(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ST_REL(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

int pt_agent__check(const void *mem, size_t len, struct pt_agent_info *out, char *err,
		    size_t errlen)
{
	const struct ptag_header *h = mem;
	struct ptag_header c;

	if (len < PTAG_HEADER_SIZE) {
		snprintf(err, errlen, "agent segment: %zu bytes, too short", len);
		return -EPROTO;
	}
	/* one copy: the target may change it while we look */
	memcpy(&c, h, sizeof(c));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (memcmp(c.magic, PTAG_MAGIC, PTAG_MAGIC_LEN)) {
		snprintf(err, errlen, "agent segment: no magic (not published yet, or not ours)");
		return -EPROTO;
	}
	if (c.version != PTAG_VERSION || c.header_size != PTAG_HEADER_SIZE ||
	    c.total_size != PTAG_SIZE || len < PTAG_SIZE) {
		snprintf(err, errlen,
			 "agent segment: version %u, %u/%u bytes: this proftrace reads "
			 "version %u (use the agent built with it: `proftrace env`)",
			 c.version, c.header_size, c.total_size, PTAG_VERSION);
		return -EPROTO;
	}
	if (c.files_off != PTAG_FILES_OFF || c.files_size != PTAG_FILES_SIZE ||
	    c.cand_off != PTAG_CAND_OFF || c.cand_cap != PTAG_MAX_CODES ||
	    c.arm_off != PTAG_ARM_OFF || c.arm_cap != PTAG_MAX_CODES) {
		snprintf(err, errlen, "agent segment: areas not where version %u puts them",
			 PTAG_VERSION);
		return -EPROTO;
	}
	memset(out, 0, sizeof(*out));
	out->py_hex = c.py_hex;
	out->state = c.state;
	out->reason = c.dormant_reason;
	out->mechanism = c.mechanism;
	out->conflict = c.conflict;
	memcpy(out->conflict_text, c.conflict_text, sizeof(out->conflict_text));
	out->conflict_text[sizeof(out->conflict_text) - 1] = 0;
	/* printable only: it goes to a terminal and into JSON */
	for (char *p = out->conflict_text; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			*p = '?';
	out->attach_seq = c.attach_seq;
	out->active_seq = c.active_seq;
	out->scans = c.scans;
	out->cand_seq = c.cand_seq;
	out->armed_seq = c.armed_seq;
	out->activations = c.activations;
	out->hook_lost = c.hook_lost;
	out->ncand = c.ncand > PTAG_MAX_CODES ? PTAG_MAX_CODES : c.ncand;
	out->cand_dropped = c.cand_dropped;
	out->narmed = c.narmed > PTAG_MAX_CODES ? PTAG_MAX_CODES : c.narmed;
	out->tool_id = c.tool_id;
	out->scan_ns = c.scan_ns;
	out->arm_ns = c.arm_ns;
	out->enter_addr = c.enter_addr;
	out->exit_addr = c.exit_addr;
	out->agent_pid = c.agent_pid;
	out->clocks = (c.flags & PTAG_FLAG_CLOCKS) != 0;
	if (c.flags & PTAG_FLAG_HOW) {
		out->has_how = true;
		/* not bound by narmed: that is zeroed when the agent goes
		 * dormant (the process exiting, say), these stay for us */
		out->ntramp = c.ntramp > PTAG_MAX_CODES ? PTAG_MAX_CODES : c.ntramp;
		out->evaluator_on = c.evaluator_on != 0;
		out->tramp_lost = c.tramp_lost;
	}
	if (out->state > PTAG_STATE_ACTIVE || out->mechanism > PTAG_MECH_EVALFRAME) {
		snprintf(err, errlen, "agent segment: state %u, mechanism %u unknown", out->state,
			 out->mechanism);
		return -EPROTO;
	}
	return 0;
}

static int setup(struct pt_agent *a, char *err, size_t errlen)
{
	struct pt_agent_info in;
	int e = pt_agent__check(a->mem, a->len, &in, err, errlen);

	if (e)
		return e;
	a->hdr = (struct ptag_header *)a->mem;
	a->cand_seq_seen = LD_ACQ(a->hdr->cand_seq);
	a->arm_seq = LD(a->hdr->arm_seq);
	a->last = in;
	return 0;
}

int pt_agent__open_mem(struct pt_agent **out, void *mem, size_t len, char *err, size_t errlen)
{
	struct pt_agent *a = calloc(1, sizeof(*a));
	int e;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->seg.fd = -1;
	a->mem = mem;
	a->len = len;
	e = setup(a, err, errlen);
	if (e) {
		free(a);
		return e;
	}
	*out = a;
	return 0;
}

static const struct pt_segment_kind agent_segment = {
	.name = PTAG_MEMFD_NAME,
	.magic = PTAG_MAGIC,
	.magic_len = PTAG_MAGIC_LEN,
	.pid_off = offsetof(struct ptag_header, agent_pid),
	.min = PTAG_SIZE,
	.max = PTAG_SIZE,
	.what = "Python agent",
	.hint = "start the server after `eval \"$(proftrace env)\"`, or attach with --inject "
		"(3.14+: proftrace loads it itself)",
};

const struct pt_segment_kind *pt_agent__segment_kind(void)
{
	return &agent_segment;
}

int pt_agent__open(struct pt_agent **out, int pid, char *err, size_t errlen)
{
	struct pt_agent *a = calloc(1, sizeof(*a));
	int e;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	e = pt_segment__open(&a->seg, pid, &agent_segment, err, errlen);
	if (!e) {
		a->mem = a->seg.map;
		a->len = a->seg.len;
		e = setup(a, err, errlen);
	}
	if (e) {
		pt_segment__close(&a->seg);
		free(a);
		return e;
	}
	*out = a;
	return 0;
}

void pt_agent__close(struct pt_agent *a)
{
	if (!a)
		return;
	if (a->seg.fd >= 0)
		pt_segment__close(&a->seg);
	free(a->near);
	free(a);
}

static void wake(struct pt_agent *a)
{
	if (a->lost)
		return;
	__atomic_fetch_add(&a->hdr->wake, 1, __ATOMIC_RELEASE);
	/* a shared futex: the agent sleeps on this word in its mapping */
	if (a->seg.fd >= 0)
		syscall(SYS_futex, &a->hdr->wake, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static bool hb_fresh(uint64_t hb, uint64_t now)
{
	int64_t age = (int64_t)(now - hb);

	return hb && age < (int64_t)PTAG_HEARTBEAT_TIMEOUT_NS &&
	       age > -(int64_t)PTAG_HEARTBEAT_TIMEOUT_NS;
}

void pt_agent__set_options(struct pt_agent *a, uint32_t options)
{
	a->options = options;
}

int pt_agent__attach(struct pt_agent *a, const struct pt_agent_spec *specs, size_t n,
		     const struct pt_py_layout *L, uint64_t now)
{
	struct ptag_header *h = a->hdr;
	uint32_t other = LD(h->reader_pid);
	char *files = a->mem + PTAG_FILES_OFF;
	size_t used = 0;
	uint64_t seq;

	if (a->lost)
		return -EIO;
	if (!a->attached && LD(h->attached) && other && other != (uint32_t)getpid() &&
	    hb_fresh(LD(h->heartbeat_ns), now))
		return -EBUSY;
	for (size_t i = 0; i < n; i++) {
		size_t lp = strlen(specs[i].path) + 1, lg = strlen(specs[i].glob) + 1;

		if (used + lp + lg > PTAG_FILES_SIZE)
			return -E2BIG;
		memcpy(files + used, specs[i].path, lp);
		memcpy(files + used + lp, specs[i].glob, lg);
		used += lp + lg;
	}
	ST(h->nfiles, (uint32_t)n);
	ST(h->tstate_frame, L->tstate_frame);
	ST(h->cframe_frame, L->cframe_frame);
	ST(h->frame_code, L->frame_code);
	ST(h->frame_owner, L->frame_owner);
	ST(h->code_flags, L->code_flags);
	ST(h->type_dict, L->type_dict);
	ST(h->type_flags, L->type_flags);
	ST(h->interp_eval_frame, L->interp_eval_frame);
	ST(h->code_mask, ~L->stackref_tag); /* 3.14: the frame's code is a tagged _PyStackRef */
	ST(h->options, a->options);
	ST(h->narm, 0);
	a->arm_seq = LD(h->arm_seq) + 1;
	ST_REL(h->arm_seq, a->arm_seq);
	ST(h->heartbeat_ns, now);
	ST(h->reader_pid, (uint32_t)getpid());
	seq = LD(h->attach_seq) + 1;
	ST(h->attach_seq, seq);
	a->cand_seq_seen = LD_ACQ(h->cand_seq);
	/* last: the agent acts on attached with everything above in place */
	ST_REL(h->attached, 1);
	a->attached = true;
	wake(a);
	return 0;
}

void pt_agent__heartbeat(struct pt_agent *a, uint64_t now)
{
	if (a->attached && !a->lost)
		ST_REL(a->hdr->heartbeat_ns, now);
}

/* found[] and near[] as the agent wrote them with the candidates being
 * read (an agent without PTAG_FLAG_SPECS writes neither). -ENOMEM. */
static int copy_specs(struct pt_agent *a)
{
	const uint8_t *found = (const uint8_t *)(a->mem + PTAG_FOUND_OFF);
	const uint64_t *near = (const uint64_t *)(a->mem + PTAG_NEAR_OFF);
	uint32_t k = LD(a->hdr->nnear), flags = LD(a->hdr->flags);
	/* how[] takes the end of the segment where the agent writes it */
	uint32_t max = flags & PTAG_FLAG_HOW ? PTAG_MAX_NEAR_HOW : PTAG_MAX_NEAR;

	a->has_specs = false;
	if (!(flags & PTAG_FLAG_SPECS))
		return 0;
	if (k > max)
		k = max;
	if (!a->near) {
		a->near = malloc(PTAG_MAX_NEAR * sizeof(*a->near));
		if (!a->near)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < PTAG_MAX_SPECS; i++)
		a->found[i] = LD(found[i]) != 0;
	for (uint32_t i = 0; i < k; i++)
		a->near[i] = LD(near[i]);
	a->nnear = k;
	a->has_specs = true;
	return 0;
}

int pt_agent__candidates(struct pt_agent *a, uint64_t **codes, uint32_t *n)
{
	const uint64_t *src = (const uint64_t *)(a->mem + PTAG_CAND_OFF);
	uint64_t seq, again;
	uint32_t k;
	uint64_t *v;

	*codes = NULL;
	*n = 0;
	if (a->lost)
		return 0;
	seq = LD_ACQ(a->hdr->cand_seq);
	if (seq == a->cand_seq_seen)
		return 0;
	k = LD(a->hdr->ncand);
	if (k > PTAG_MAX_CODES)
		k = PTAG_MAX_CODES;
	v = malloc((k ? k : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < k; i++)
		v[i] = LD(src[i]);
	if (copy_specs(a)) {
		free(v);
		return -ENOMEM;
	}
	/* written again while we copied: take the next one; truncated
	 * meanwhile: what we copied may be zeros */
	again = LD_ACQ(a->hdr->cand_seq);
	if (again != seq || pt_agent__lost(a)) {
		free(v);
		a->has_specs = false;
		return 0;
	}
	a->cand_seq_seen = seq;
	*codes = v;
	*n = k;
	return 1;
}

int pt_agent__specs(const struct pt_agent *a, const uint8_t **found, const uint64_t **near,
		    uint32_t *nnear)
{
	*found = a->found;
	*near = a->near;
	*nnear = a->has_specs ? a->nnear : 0;
	return a->has_specs;
}

int pt_agent__arm(struct pt_agent *a, const uint64_t *codes, uint32_t n)
{
	uint64_t *dst = (uint64_t *)(a->mem + PTAG_ARM_OFF);

	if (a->lost)
		return -EIO;
	if (n > PTAG_MAX_CODES)
		return -E2BIG;
	for (uint32_t i = 0; i < n; i++)
		ST(dst[i], codes[i]);
	ST(a->hdr->narm, n);
	a->arm_seq = LD(a->hdr->arm_seq) + 1;
	ST_REL(a->hdr->arm_seq, a->arm_seq);
	wake(a);
	return 0;
}

void pt_agent__rescan(struct pt_agent *a)
{
	if (a->lost)
		return;
	__atomic_fetch_add(&a->hdr->rescan_seq, 1, __ATOMIC_RELEASE);
	wake(a);
}

bool pt_agent__trampolined(const struct pt_agent *a, uint32_t i)
{
	const uint8_t *how = (const uint8_t *)(a->mem + PTAG_HOW_OFF);

	if (a->lost || i >= PTAG_MAX_CODES || !(LD(a->hdr->flags) & PTAG_FLAG_HOW))
		return false;
	return (LD(how[i / 8]) >> (i % 8)) & 1;
}

bool pt_agent__armed(const struct pt_agent *a)
{
	return !a->lost && LD_ACQ(a->hdr->armed_seq) == a->arm_seq;
}

void pt_agent__detach(struct pt_agent *a, unsigned int timeout_ms)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	uint64_t deadline = pt_now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000;

	if (!a || !a->attached || pt_agent__lost(a))
		return;
	ST_REL(a->hdr->attached, 0);
	a->attached = false;
	wake(a);
	while (LD_ACQ(a->hdr->state) == PTAG_STATE_ACTIVE && !pt_agent__lost(a) &&
	       pt_now_ns(CLOCK_MONOTONIC) < deadline)
		nanosleep(&ts, NULL);
}

void pt_agent__info(struct pt_agent *a, struct pt_agent_info *out)
{
	char err[8];

	if (!a->lost && !pt_agent__check(a->mem, a->len, out, err, sizeof(err)) &&
	    !pt_agent__lost(a)) {
		a->last = *out;
		return;
	}
	/* truncated (zeros read meanwhile) or unreadable: what it said last */
	*out = a->last;
}

bool pt_agent__lost(struct pt_agent *a)
{
	if (!a->lost && a->seg.fd >= 0 && pt_segment__lost(&a->seg)) {
		a->lost = true;
		a->attached = false;
	}
	return a->lost;
}

const char *pt_agent__path(const struct pt_agent *a)
{
	return a->seg.fd >= 0 ? a->seg.path : "(memory)";
}
