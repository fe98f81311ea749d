// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/proctable.c: processes made by pt_run__open_proc (children of this
 * test, waiting) join the table in order; a pid finds its live process,
 * the newest first, and none once it ended; BPF slots are taken one each,
 * an exited process's recycled (the one freed longest ago first), an
 * exec'ed one's never, one freed unused at once.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "run/run.h"
#include "run/procstate.h"
#include "run/proctable.h"
#include "run/procs.h"
#include "runfx.h"

/* What the targets file names in the children (this binary). */
RUNFX_VICTIM(proctable_victim);

static const char conf[] = "step native:exe:proctable_victim\n";

#define NKIDS 3

struct fx {
	struct run r;
	pid_t kid[NKIDS];
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x || runfx__config(&x->r, conf))
		return -1;
	for (int i = 0; i < NKIDS; i++)
		if ((x->kid[i] = runfx__child()) < 0)
			return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	for (size_t i = 0; i < x->r.procs.n; i++)
		pt_run__free_proc(x->r.procs.v[i]);
	pt_proctable__free(&x->r.procs);
	for (int i = 0; i < NKIDS; i++)
		runfx__reap(x->kid[i]);
	pt_config__free(&x->r.cfg);
	unsetenv("PT_TEST_MAX_PROCS");
	free(x);
	return 0;
}

/* The process of pid, opened and added to the table. */
static struct proc *open_one(struct run *r, pid_t pid)
{
	struct proc *p;
	char err[512];

	assert_int_equal(pt_run__open_proc(r, pid, true, &p, err, sizeof(err)), 0);
	assert_int_equal(pt_proctable__add(&r->procs, p), 0);
	return p;
}

/* pt_run__end_proc's part of it, without BPF. */
static void end(struct run *r, struct proc *p, bool exited, uint64_t now)
{
	assert_int_equal(pt_proc__set_state(p, PT_PROC_ENDED), 0);
	pt_proctable__ended(&r->procs, p, exited, now);
}

static void test_add_and_find(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;
	struct proc *a = open_one(r, x->kid[0]), *b = open_one(r, x->kid[1]);

	assert_int_equal(r->procs.n, 2);
	assert_ptr_equal(r->procs.v[0], a);
	assert_ptr_equal(r->procs.v[1], b);
	assert_int_equal(a->pos, 0);
	assert_int_equal(b->pos, 1);
	assert_ptr_equal(pt_proctable__find(&r->procs, (uint32_t)x->kid[1]), b);
	assert_ptr_equal(pt_proctable__find(&r->procs, (uint32_t)x->kid[0]), a);
	assert_ptr_equal(pt_proctable__find(&r->procs, (uint32_t)x->kid[0]), a); /* the last */
	assert_null(pt_proctable__find(&r->procs, (uint32_t)x->kid[2]));
	assert_true(pt_proctable__traced(&r->procs, x->kid[1]));
	assert_false(pt_proctable__traced(&r->procs, x->kid[2]));
	assert_false(pt_proctable__all_ended(&r->procs));
	/* one that ended is found no more, though the table keeps it */
	end(r, a, true, 1000);
	assert_null(pt_proctable__find(&r->procs, (uint32_t)x->kid[0]));
	assert_false(pt_proctable__traced(&r->procs, x->kid[0]));
	assert_int_equal(r->procs.n, 2);
	assert_false(pt_proctable__all_ended(&r->procs));
	end(r, b, false, 2000);
	assert_true(pt_proctable__all_ended(&r->procs));
}

/* An exec'ed pid's new image is opened again: its records go to the new
 * process, not the old one. */
static void test_new_image_of_a_pid(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;
	struct proc *old = open_one(r, x->kid[0]), *img;

	assert_int_equal(pt_proc__set_state(old, PT_PROC_EXECED), 0);
	assert_ptr_equal(pt_proctable__find(&r->procs, (uint32_t)x->kid[0]), old);
	end(r, old, false, 1000);
	img = open_one(r, x->kid[0]);
	assert_int_not_equal(img->idx, old->idx); /* an exec'ed image's slot is kept */
	assert_ptr_equal(pt_proctable__find(&r->procs, (uint32_t)x->kid[0]), img);
}

static void test_slots(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;
	struct proc *a, *b, *c, *p;
	char err[512];

	setenv("PT_TEST_MAX_PROCS", "2", 1);
	assert_int_equal(pt_proctable__nslots(), 2);
	a = open_one(r, x->kid[0]);
	b = open_one(r, x->kid[1]);
	assert_int_equal(a->idx, 0);
	assert_int_equal(b->idx, 1);
	/* out of slots: said, not traced */
	assert_int_equal(pt_run__open_proc(r, x->kid[2], true, &p, err, sizeof(err)), 1);
	assert_null(p);
	assert_non_null(strstr(err, "more than 2 processes traced at once"));
	/* b exited, then a: a freed last, b's slot goes first */
	end(r, b, true, 1000);
	end(r, a, true, 2000);
	c = open_one(r, x->kid[2]);
	assert_int_equal(c->idx, 1);
	/* one freed before it ended gives its slot back at once */
	assert_int_equal(pt_run__open_proc(r, x->kid[1], true, &p, err, sizeof(err)), 0);
	assert_int_equal(p->idx, 0);
	assert_int_equal(pt_proctable__take_slot(&r->procs), -1);
	pt_run__free_proc(p);
	assert_int_equal(pt_proctable__take_slot(&r->procs), 0);
	assert_int_equal(pt_proctable__take_slot(&r->procs), -1);
	pt_proctable__put_slot(&r->procs, 0);
	/* an exec'ed one's is never reused */
	end(r, c, false, 3000);
	assert_int_equal(pt_proctable__take_slot(&r->procs), 0);
	assert_int_equal(pt_proctable__take_slot(&r->procs), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_add_and_find, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_image_of_a_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slots, setup, teardown),
	};

	return cmocka_run_group_tests_name("proctable", tests, NULL, NULL);
}
