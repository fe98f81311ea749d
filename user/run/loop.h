/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The event loop (loop.c).
 */
#ifndef PT_RUN_LOOP_H
#define PT_RUN_LOOP_H

struct epoll_event;
struct run;

/* loop.c: until --duration, SIGINT/SIGTERM or every process ended; the
 * one file that registers fds with the loop's epoll (the others hand
 * theirs over: proc's pidfd, pt_run__metrics_fd) */
int pt_run__loop(struct run *r);

/* Why the loop stops; PT_LOOP_GO: it goes on. */
enum pt_loop_stop { PT_LOOP_GO, PT_LOOP_SIGNAL, PT_LOOP_DURATION, PT_LOOP_EXIT };

/* The n events epoll gave (their data.u32 a TAG_* of run.h): a stop
 * signal read from sfd (PT_LOOP_SIGNAL), the timer's expiries read from
 * tfd, the --metrics socket served, the process of a pidfd ended
 * ("exited"); the ring's and any other tag, or a pidfd's past the table,
 * nothing. */
enum pt_loop_stop pt_run__dispatch(struct run *r, const struct epoll_event *evs, int n, int sfd,
				   int tfd);

#endif
