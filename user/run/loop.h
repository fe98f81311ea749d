/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The event loop (loop.c).
 */
#ifndef PT_RUN_LOOP_H
#define PT_RUN_LOOP_H

struct run;

/* loop.c: until --duration, SIGINT/SIGTERM or every process ended; the
 * one file that registers fds with the loop's epoll (the others hand
 * theirs over: proc's pidfd, pt_run__metrics_fd) */
int pt_run__loop(struct run *r);

#endif
