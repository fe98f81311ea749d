/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * When a thread of a live process may be borrowed to call dlopen() (the
 * injector, inject.c), decided from /proc text alone so tests feed saved
 * samples: the process's status (another tracer, stopped, gone, its
 * credentials), a thread's /proc/PID/task/TID/syscall and stat, and the fd
 * a read-like call waits on.
 *
 * The rule (deadlock avoidance): a thread blocked in, or just back from, a
 * waiting syscall that libc issues for the program itself (sleeps, poll,
 * select, wait4, read/recv/accept on a pipe, socket or tty) holds no lock
 * of libc's: glibc waits with a lock held are futex waits (malloc arenas,
 * stdio, the loader lock), so a futex wait is never borrowed. epoll_wait
 * is refused too unless asked for: interrupting it hands EINTR to the
 * program (it is not restarted).
 */
#ifndef PT_SAFEPOINT_H
#define PT_SAFEPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* /proc/PID/task/TID/syscall: "NR a1 .. a6 sp pc", "-1 sp pc" (blocked
 * outside a syscall) or "running". */
struct pt_sysline {
	bool running; /* "running": on a CPU, no syscall known */
	long nr;      /* -1: blocked, not in a syscall */
	uint64_t args[6];
	uint64_t sp, pc;
};

/* 0 or -EINVAL. */
int pt_sysline__parse(const char *text, struct pt_sysline *out);

/* The state letter of a /proc/.../stat line (after the comm, which may
 * hold spaces and parentheses), or 0 when malformed. */
char pt_stat__state(const char *text);

/* What /proc/PID/status says that matters to a tracer. */
struct pt_procstatus {
	char state;		     /* 'S', 'R', 'T', 't', 'Z', ... 0: not seen */
	int tracer;		     /* TracerPid */
	unsigned int uid[4], gid[4]; /* real, effective, saved, fs */
	unsigned int groups[64];
	int ngroups;
	uint64_t sigblk, sigign, sigcgt;
	uint64_t sigpnd, shdpnd; /* pending: for the thread, for the process */
	bool shstk;		 /* x86 user shadow stack enabled (CET) */
	bool have_uid;
};

/* Parse a whole status file. 0 or -EINVAL (no State line). */
int pt_procstatus__parse(const char *text, struct pt_procstatus *st);

/*
 * May the process be traced at all (before anything is stopped)? 0, or
 * -ESRCH (zombie or dead), -EBUSY (another tracer: its pid in err),
 * -EAGAIN (stopped: job control or a debugger), -EPERM (Yama scope 3:
 * yama is /proc/sys/kernel/yama/ptrace_scope, -1 when absent), -ENOTSUP
 * (user shadow stacks: a bogus return address would be fatal), with one
 * line in err.
 */
int pt_safepoint__check_proc(const struct pt_procstatus *st, int pid, int yama, char *err,
			     size_t errlen);

/*
 * The job-control stop a thread's status shows: a stop signal pending for
 * it or its process whose action is to stop (SIGSTOP; SIGTSTP, SIGTTIN,
 * SIGTTOU unless caught or ignored), the lowest such; else -1 when it is
 * stopped already (state T); else 0. A tracer that holds the thread keeps
 * such a signal pending (nothing else may take it in a process of one
 * thread): the stop is on its way all the same.
 */
int pt_safepoint__stop_signal(const struct pt_procstatus *st);

enum pt_safe {
	PT_SAFE_YES = 0, /* borrow it (re-checked once stopped) */
	PT_SAFE_NOT_NOW, /* running, in a lock wait, in another syscall: look again */
	PT_SAFE_NEVER,	 /* its state rules it out for good (a zombie thread) */
};

struct pt_safe_opts {
	bool allow_epoll; /* borrow threads in epoll_wait (they see EINTR) */
};

/*
 * Classify a thread from its syscall line, its state letter, and, for a
 * read-like syscall, the link of the fd it waits on (/proc/PID/fd/N:
 * "pipe:[..]", "socket:[..]", "/dev/pts/3"; NULL: unknown). why: a few
 * words for the refusal line ("futex wait", "running").
 */
enum pt_safe pt_safepoint__classify(const struct pt_sysline *sl, char state, const char *fdlink,
				    const struct pt_safe_opts *o, const char **why);

/* Is nr a syscall whose first argument is the fd it waits on? */
bool pt_safepoint__waits_on_fd(long nr);

/* The name of x86-64 syscall nr ("nanosleep"), "syscall N" for the rest
 * (buf: at least 24 bytes). */
const char *pt_safepoint__sysname(long nr, char *buf, size_t len);

/* Is this stopped register state (orig_rax, rax) at one of the safe
 * syscalls: in it (an -ERESTART* or -EINTR in rax) or just back? */
bool pt_safepoint__regs_ok(long orig_rax, const struct pt_safe_opts *o);

#endif
