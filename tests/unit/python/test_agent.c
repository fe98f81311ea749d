// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_agent (proftrace's side of the Python agent) over a segment in plain
 * memory, written the way the agent writes it: the header checks (each
 * field that places something refused when moved), printable conflict
 * text, counts clamped, the attach that fills files and layout, another
 * live proftrace refused and a dead one's place taken, candidates taken
 * once per sequence and not while being rewritten, arm bounds, detach.
 * The agent itself in live interpreters: tests/integration/test_agent.py;
 * the segment under random bytes: tests/fuzz/fuzz_agent.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "python/agent.h"
#include "shim/memseg.h"

static uint8_t seg[PTAG_SIZE] __attribute__((aligned(64)));

static struct ptag_header *fresh(void)
{
	struct ptag_header *h = (struct ptag_header *)seg;

	memset(seg, 0, sizeof(seg));
	h->version = PTAG_VERSION;
	h->header_size = PTAG_HEADER_SIZE;
	h->total_size = PTAG_SIZE;
	h->agent_pid = 4242;
	h->py_hex = 0x030c01f0;
	h->tool_id = -1;
	h->files_off = PTAG_FILES_OFF;
	h->files_size = PTAG_FILES_SIZE;
	h->cand_off = PTAG_CAND_OFF;
	h->cand_cap = PTAG_MAX_CODES;
	h->arm_off = PTAG_ARM_OFF;
	h->arm_cap = PTAG_MAX_CODES;
	h->enter_addr = 0x7f0000001000;
	h->exit_addr = 0x7f0000001010;
	memcpy(h->magic, PTAG_MAGIC, PTAG_MAGIC_LEN);
	return h;
}

static void test_check_good(void **state)
{
	struct ptag_header *h = fresh();
	struct pt_agent_info in;
	char err[256] = "";

	(void)state;
	h->state = PTAG_STATE_ACTIVE;
	h->mechanism = PTAG_MECH_MONITORING;
	h->tool_id = 4;
	h->ncand = 7;
	strcpy(h->conflict_text, "tool 3 held by\n\x1b[31mcoverage");
	assert_int_equal(pt_agent__check(seg, sizeof(seg), &in, err, sizeof(err)), 0);
	assert_int_equal(in.py_hex, 0x030c01f0);
	assert_int_equal(in.state, PTAG_STATE_ACTIVE);
	assert_int_equal(in.tool_id, 4);
	assert_int_equal(in.ncand, 7);
	assert_int_equal(in.agent_pid, 4242);
	assert_int_equal(in.enter_addr, 0x7f0000001000);
	/* control characters never reach a terminal or JSON */
	assert_string_equal(in.conflict_text, "tool 3 held by??[31mcoverage");
}

static void test_check_refuses(void **state)
{
	struct pt_agent_info in;
	char err[256];
	struct ptag_header *h;

	(void)state;
	/* each field that places something, moved by one */
	/* clang-format off */
	size_t fields[] = {
		offsetof(struct ptag_header, version),  offsetof(struct ptag_header, header_size),
		offsetof(struct ptag_header, total_size), offsetof(struct ptag_header, files_off),
		offsetof(struct ptag_header, files_size), offsetof(struct ptag_header, cand_off),
		offsetof(struct ptag_header, cand_cap), offsetof(struct ptag_header, arm_off),
		offsetof(struct ptag_header, arm_cap),
	};
	/* clang-format on */
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		fresh();
		seg[fields[i]] ^= 1;
		err[0] = 0;
		assert_int_equal(pt_agent__check(seg, sizeof(seg), &in, err, sizeof(err)), -EPROTO);
		assert_true(err[0]);
	}
	h = fresh();
	h->magic[7] = 'X';
	assert_int_equal(pt_agent__check(seg, sizeof(seg), &in, err, sizeof(err)), -EPROTO);
	fresh();
	assert_int_equal(pt_agent__check(seg, PTAG_HEADER_SIZE - 1, &in, err, sizeof(err)),
			 -EPROTO);
	assert_int_equal(pt_agent__check(seg, PTAG_SIZE - 1, &in, err, sizeof(err)), -EPROTO);
	h = fresh();
	h->state = 2;
	assert_int_equal(pt_agent__check(seg, sizeof(seg), &in, err, sizeof(err)), -EPROTO);
	h = fresh();
	h->mechanism = 9;
	assert_int_equal(pt_agent__check(seg, sizeof(seg), &in, err, sizeof(err)), -EPROTO);
	/* counts beyond the areas are clamped, not trusted */
	h = fresh();
	h->ncand = 0xffffffff;
	h->narmed = PTAG_MAX_CODES + 1;
	memset(h->conflict_text, 'a', sizeof(h->conflict_text)); /* no NUL */
	assert_int_equal(pt_agent__check(seg, sizeof(seg), &in, err, sizeof(err)), 0);
	assert_int_equal(in.ncand, PTAG_MAX_CODES);
	assert_int_equal(in.narmed, PTAG_MAX_CODES);
	assert_int_equal(strlen(in.conflict_text), sizeof(in.conflict_text) - 1);
}

static const struct pt_py_layout *layout(void)
{
	static struct pt_py_layout L;

	L.tstate_frame = 0x38;
	L.cframe_frame = -1;
	L.frame_code = 0;
	L.frame_owner = 70;
	L.code_flags = 0x30;
	L.type_dict = 0x108;
	L.type_flags = 0xa8;
	L.interp_eval_frame = 0x1234;
	L.stackref_tag = 3; /* as 3.14 */
	return &L;
}

static void test_attach_writes_probes_and_layout(void **state)
{
	const struct pt_agent_spec specs[] = {
		{ "vllm/v1/engine/core", "EngineCore.step" },
		{ "sched", "*" },
	};
	struct ptag_header *h = fresh();
	struct pt_agent *a;
	char err[256];
	const char *f = (const char *)seg + PTAG_FILES_OFF;

	(void)state;
	assert_int_equal(pt_agent__open_mem(&a, seg, sizeof(seg), err, sizeof(err)), 0);
	assert_int_equal(pt_agent__attach(a, specs, 2, layout(), 1000), 0);
	assert_int_equal(h->attached, 1);
	assert_int_equal(h->attach_seq, 1);
	assert_int_equal(h->reader_pid, (uint32_t)getpid());
	assert_int_equal(h->heartbeat_ns, 1000);
	assert_int_equal(h->wake, 1);
	assert_int_equal(h->nfiles, 2);
	assert_string_equal(f, "vllm/v1/engine/core");
	f += strlen(f) + 1;
	assert_string_equal(f, "EngineCore.step");
	f += strlen(f) + 1;
	assert_string_equal(f, "sched");
	assert_string_equal(f + 6, "*");
	assert_int_equal(h->tstate_frame, 0x38);
	assert_int_equal(h->cframe_frame, -1);
	assert_int_equal(h->frame_owner, 70);
	assert_int_equal(h->interp_eval_frame, 0x1234);
	assert_true(h->code_mask == ~3ull);
	pt_agent__heartbeat(a, 5000);
	assert_int_equal(h->heartbeat_ns, 5000);
	/* it answers: hooks are in when armed_seq reaches ours */
	assert_false(pt_agent__armed(a));
	h->armed_seq = h->arm_seq;
	assert_true(pt_agent__armed(a));
	pt_agent__detach(a, 0);
	assert_int_equal(h->attached, 0);
	pt_agent__close(a);
}

static void test_attach_too_many_probes(void **state)
{
	static char big[PTAG_FILES_SIZE];
	struct pt_agent_spec s = { big, "*" };
	struct pt_agent *a;
	char err[256];

	(void)state;
	fresh();
	memset(big, 'm', sizeof(big) - 1);
	assert_int_equal(pt_agent__open_mem(&a, seg, sizeof(seg), err, sizeof(err)), 0);
	assert_int_equal(pt_agent__attach(a, &s, 1, layout(), 1), -E2BIG);
	assert_int_equal(((struct ptag_header *)seg)->attached, 0);
	pt_agent__close(a);
}

static void test_another_proftrace(void **state)
{
	const struct pt_agent_spec s = { "m", "f" };
	const uint64_t now = 10ull * 1000 * 1000 * 1000;
	struct ptag_header *h = fresh();
	struct pt_agent *a;
	char err[256];

	(void)state;
	h->attached = 1;
	h->reader_pid = 1; /* not us */
	h->heartbeat_ns = now - PTAG_HEARTBEAT_NS;
	assert_int_equal(pt_agent__open_mem(&a, seg, sizeof(seg), err, sizeof(err)), 0);
	assert_int_equal(pt_agent__attach(a, &s, 1, layout(), now), -EBUSY);
	/* its heartbeat stopped: it is gone, the agent is ours */
	h->heartbeat_ns = now - PTAG_HEARTBEAT_TIMEOUT_NS - 1;
	assert_int_equal(pt_agent__attach(a, &s, 1, layout(), now), 0);
	assert_int_equal(h->reader_pid, (uint32_t)getpid());
	pt_agent__close(a);
}

static void test_candidates(void **state)
{
	struct ptag_header *h = fresh();
	uint64_t *cand = (uint64_t *)(seg + PTAG_CAND_OFF);
	const uint64_t arm[] = { 0x1000, 0x3000 };
	struct pt_agent *a;
	uint64_t *codes;
	uint32_t n;
	char err[256];

	(void)state;
	h->cand_seq = 3; /* before we came: not ours */
	assert_int_equal(pt_agent__open_mem(&a, seg, sizeof(seg), err, sizeof(err)), 0);
	assert_int_equal(pt_agent__candidates(a, &codes, &n), 0);
	cand[0] = 0x1000;
	cand[1] = 0x2000;
	cand[2] = 0x3000;
	h->ncand = 3;
	h->cand_seq = 4;
	assert_int_equal(pt_agent__candidates(a, &codes, &n), 1);
	assert_int_equal(n, 3);
	assert_int_equal(codes[2], 0x3000);
	free(codes);
	/* once per sequence */
	assert_int_equal(pt_agent__candidates(a, &codes, &n), 0);
	assert_null(codes);
	/* a count past the area is clamped to it */
	h->ncand = 0x7fffffff;
	h->cand_seq = 5;
	assert_int_equal(pt_agent__candidates(a, &codes, &n), 1);
	assert_int_equal(n, PTAG_MAX_CODES);
	free(codes);
	/* arm: the list and a new sequence, bounded */
	assert_int_equal(pt_agent__arm(a, arm, 2), 0);
	assert_int_equal(h->narm, 2);
	assert_int_equal(((uint64_t *)(seg + PTAG_ARM_OFF))[1], 0x3000);
	assert_int_equal(h->arm_seq, 1);
	assert_int_equal(pt_agent__arm(a, arm, PTAG_MAX_CODES + 1), -E2BIG);
	assert_int_equal(h->arm_seq, 1);
	pt_agent__rescan(a);
	assert_int_equal(h->rescan_seq, 1);
	pt_agent__close(a);
}

/* found[] and near[] come with the candidates of one sequence, only from
 * an agent that says it writes them, near's count clamped to its area. */
static void test_specs(void **state)
{
	struct ptag_header *h = fresh();
	uint8_t *found = seg + PTAG_FOUND_OFF;
	uint64_t *near = (uint64_t *)(seg + PTAG_NEAR_OFF);
	const uint8_t *f;
	const uint64_t *nr;
	struct pt_agent *a;
	uint64_t *codes;
	uint32_t n, nn;
	char err[256];

	(void)state;
	assert_int_equal(pt_agent__open_mem(&a, seg, sizeof(seg), err, sizeof(err)), 0);
	/* an agent built before: nothing said, whatever the areas hold */
	found[1] = 1;
	near[0] = 0x5000;
	h->nnear = 1;
	h->cand_seq = 1;
	assert_int_equal(pt_agent__candidates(a, &codes, &n), 1);
	free(codes);
	assert_int_equal(pt_agent__specs(a, &f, &nr, &nn), 0);
	assert_int_equal(nn, 0);
	/* one that says: pair 1's module is there, pair 0's not; near[] */
	h->flags = PTAG_FLAG_SPECS;
	found[0] = 0;
	found[1] = 7; /* any non-zero byte */
	near[1] = 0x6000;
	h->nnear = 2;
	h->cand_seq = 2;
	assert_int_equal(pt_agent__candidates(a, &codes, &n), 1);
	free(codes);
	assert_int_equal(pt_agent__specs(a, &f, &nr, &nn), 1);
	assert_int_equal(f[0], 0);
	assert_int_equal(f[1], 1);
	assert_int_equal(f[PTAG_MAX_SPECS - 1], 0);
	assert_int_equal(nn, 2);
	assert_int_equal(nr[1], 0x6000);
	/* a count past the area is clamped to it */
	h->nnear = 0xffffffff;
	h->cand_seq = 3;
	assert_int_equal(pt_agent__candidates(a, &codes, &n), 1);
	free(codes);
	assert_int_equal(pt_agent__specs(a, &f, &nr, &nn), 1);
	assert_int_equal(nn, PTAG_MAX_NEAR);
	/* with how[] at the segment's end, near[] stops before it */
	h->flags = PTAG_FLAG_SPECS | PTAG_FLAG_HOW;
	h->cand_seq = 4;
	assert_int_equal(pt_agent__candidates(a, &codes, &n), 1);
	free(codes);
	assert_int_equal(pt_agent__specs(a, &f, &nr, &nn), 1);
	assert_int_equal(nn, PTAG_MAX_NEAR_HOW);
	pt_agent__close(a);
}

/*
 * 3.8-3.11's trampolines: what the agent says of them (PTAG_FLAG_HOW) is
 * read only from an agent that sets the flag; the counts survive the
 * agent going dormant (narmed zeroed as the process exits, before
 * proftrace reads them for the report); how[] is a bit per arm[] slot.
 */
static void test_trampolines(void **state)
{
	struct ptag_header *h = fresh();
	uint8_t *how = seg + PTAG_HOW_OFF;
	struct pt_agent_info in;
	struct pt_agent *a;
	char err[256];

	(void)state;
	h->mechanism = PTAG_MECH_EVALFRAME;
	h->ntramp = 5;
	h->evaluator_on = 1;
	h->tramp_lost = 2;
	how[0] = 0x05; /* slots 0 and 2 */
	how[PTAG_MAX_CODES / 8 - 1] = 0x80;
	assert_int_equal(pt_agent__open_mem(&a, seg, sizeof(seg), err, sizeof(err)), 0);
	/* an agent built before trampolines: none said */
	pt_agent__info(a, &in);
	assert_false(in.has_how);
	assert_int_equal(in.ntramp, 0);
	assert_false(pt_agent__trampolined(a, 0));
	h->flags = PTAG_FLAG_SPECS | PTAG_FLAG_HOW;
	h->narmed = 0; /* gone dormant */
	pt_agent__info(a, &in);
	assert_true(in.has_how);
	assert_int_equal(in.ntramp, 5);
	assert_true(in.evaluator_on);
	assert_int_equal(in.tramp_lost, 2);
	assert_true(pt_agent__trampolined(a, 0));
	assert_false(pt_agent__trampolined(a, 1));
	assert_true(pt_agent__trampolined(a, 2));
	assert_true(pt_agent__trampolined(a, PTAG_MAX_CODES - 1));
	assert_false(pt_agent__trampolined(a, PTAG_MAX_CODES)); /* past the area */
	/* a count past every code object is clamped */
	h->ntramp = 0xffffffff;
	pt_agent__info(a, &in);
	assert_int_equal(in.ntramp, PTAG_MAX_CODES);
	pt_agent__close(a);
}

/*
 * The issue-27 attack on the reader: the target's user truncates the
 * segment while proftrace is attached (it once died of SIGBUS). The agent
 * makes its segment a sealed memfd (shim/memseg.h), found through
 * /proc/PID/fd: the truncation is refused, and the reader goes on.
 */
static void test_sealed_segment(void **state)
{
	const struct pt_agent_spec s = { "m", "f" };
	struct ptag_header *h;
	struct pt_agent_info in;
	struct pt_agent *a;
	char err[256], path[64];
	void *mem = NULL;
	int fd = -1, other;

	(void)state;
	fresh()->state = PTAG_STATE_ACTIVE;
	assert_int_equal(pt_memseg__create(PTAG_MEMFD_NAME, sizeof(seg), &mem, &fd), 0);
	memcpy(mem, seg, sizeof(seg));
	h = mem;
	h->agent_pid = (uint32_t)getpid();
	assert_int_equal(pt_agent__open(&a, getpid(), err, sizeof(err)), 0);
	assert_non_null(strstr(pt_agent__path(a), "memfd:" PTAG_MEMFD_NAME));
	assert_int_equal(pt_agent__attach(a, &s, 1, layout(), 1000), 0);
	/* as the target's user would: reopen it, shrink it */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), fd);
	other = open(path, O_RDWR);
	assert_true(other >= 0);
	assert_int_equal(ftruncate(other, 0), -1);
	assert_int_equal(errno, EPERM);
	close(other);
	pt_agent__heartbeat(a, 2000);
	assert_false(pt_agent__lost(a));
	pt_agent__info(a, &in);
	assert_int_equal(in.agent_pid, (uint32_t)getpid());
	pt_agent__detach(a, 0); /* no agent here to answer */
	pt_agent__close(a);
	munmap(mem, sizeof(seg));
	close(fd);
	/* none: what to start the server with */
	assert_int_equal(pt_agent__open(&a, getpid(), err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "proftrace env"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_good),
		cmocka_unit_test(test_check_refuses),
		cmocka_unit_test(test_attach_writes_probes_and_layout),
		cmocka_unit_test(test_attach_too_many_probes),
		cmocka_unit_test(test_another_proftrace),
		cmocka_unit_test(test_candidates),
		cmocka_unit_test(test_specs),
		cmocka_unit_test(test_trampolines),
		cmocka_unit_test(test_sealed_segment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
