/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Load a shared library into a live process (proftrace --inject): borrow
 * one of its threads with ptrace and have it call its own libc's dlopen().
 * Nothing is written into the target's code and nothing is allocated in
 * it; every other thread keeps running. x86-64, glibc.
 *
 * How (inject.c has the details):
 *  - a thread at a safe point (safepoint.h: blocked in, or just back from,
 *    a wait libc issued, never a lock wait) is seized and interrupted
 *    alone (PTRACE_SEIZE + PTRACE_INTERRUPT) and checked again stopped:
 *    the syscall in its registers, its pc in libc, no signal handler on
 *    its stack, SIGSEGV neither blocked nor ignored;
 *  - its registers (orig_rax included) and its whole xstate are saved;
 *    below its red zone goes a frame: the path, a signal frame of the
 *    saved state (the hand-off below), and a return slot holding a page-0
 *    address; dlopen(path, RTLD_NOW) is called there (errno, read first
 *    through __errno_location, is put back after);
 *  - the return faults; the SIGSEGV stops the thread before the program
 *    sees it: registers and xstate are put back at that signal-delivery
 *    stop and the SIGSEGV suppressed, so an interrupted syscall is
 *    restarted by the kernel exactly as after any stop; signals that came
 *    for the thread meanwhile are held and delivered after, none lost;
 *  - a job-control stop is not held: delivered at once, it stops every
 *    other thread then, and the borrowed one as it is let go (the kernel
 *    puts a thread detached in a group stop back in it); a stop seen
 *    before the call ends the injection there, with nothing loaded. So a
 *    process stopped while we work is left stopped (-EAGAIN);
 *  - a call that does not return in time (a constructor that waits on a
 *    lock held by a stopped thread, say) is handed back rather than
 *    waited on: its return slot is pointed at libc's rt_sigreturn
 *    trampoline, so when dlopen returns the signal frame puts the thread
 *    back where it was (a sleep it was in returns EINTR then), and the
 *    thread is detached; -ETIMEDOUT.
 * Not covered: an injector killed with SIGKILL (or crashing) while it
 * holds a thread. The kernel then lets the thread go as it is; inside the
 * call, it returns to the page-0 address and the program gets a SIGSEGV.
 * (A hardware breakpoint on the trampoline would outlive the tracer on
 * x86 and trap as well; catching the return through PTRACE_SYSCALL would
 * stop at every syscall of dlopen.) The window is the pause, ms.
 * While a thread is borrowed, proftrace's own SIGINT/TERM/HUP/QUIT wait,
 * and it and the thread run at nice -20 (the thread gets its own nice back
 * before it runs its own code): on a busy machine the pause is mostly
 * waiting for a CPU otherwise.
 */
#ifndef PT_INJECT_H
#define PT_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_inject_opts {
	unsigned int wait_ms; /* look for a thread at a safe point this long (0: 2000) */
	unsigned int call_ms; /* the call's time before its thread is handed back (0: 2000) */
	bool allow_epoll;     /* borrow a thread in epoll_wait (it sees EINTR) */
	int tid;	      /* only this thread (0: any, the main thread first) */
};

struct pt_inject_result {
	uint64_t handle;	   /* dlopen's: 0 when it failed or was not called */
	bool already;		   /* the library was mapped already: nothing done */
	bool handed_off;	   /* timed out: the thread finishes the call on its own */
	int tid;		   /* the thread borrowed */
	long sysno;		   /* the syscall it was in (or just back from) */
	char syscall[24];	   /* its name */
	double wait_ms;		   /* looking for a safe point */
	double pause_ms;	   /* the thread held: interrupt to release */
	double call_ms;		   /* dlopen itself */
	unsigned int tries;	   /* threads interrupted and found unsuitable, + 1 */
	unsigned int held_signals; /* signals for it held during the call, then delivered */
	bool stopped; /* a job-control stop came meanwhile: the process is left in it */
};

/*
 * dlopen(path) in process pid. path is absolute and as the target sees
 * it. 0 (res filled), or -errno with one line in err:
 * -ESRCH gone or a zombie; -EBUSY another tracer; -EAGAIN stopped, or
 * stopped (job control) while we worked: left so, res->stopped, res->handle
 * whether the library was loaded first;
 * -EPERM ptrace not allowed (no CAP_SYS_PTRACE, Yama); -ENOEXEC not a
 * 64-bit x86 process or static (no dlopen); -EACCES the target's user
 * cannot read path; -EXDEV path is not that file in its mount namespace;
 * -ETIME no thread at a safe point in wait_ms (err says what each did);
 * -ELIBACC dlopen failed (dlerror's text in err); -ETIMEDOUT the call was
 * handed back; -ENOTSUP shadow stacks; -EFAULT the call faulted (the
 * program gets the fault).
 */
int pt_inject__dlopen(int pid, const char *path, const struct pt_inject_opts *opts,
		      struct pt_inject_result *res, char *err, size_t errlen);

/*
 * How the borrowed thread's syscall goes on when it is given back without
 * the kernel's restart (the hand-off frame, rt_sigreturn) or after its
 * restart block was lost (lost: a signal or group stop interrupted a
 * sleep inside the call): from the registers saved at the interrupt
 * (orig_rax, *rax, *rip), what to put in rax and rip. -ERESTARTSYS,
 * -ERESTARTNOINTR, -ERESTARTNOHAND: the syscall again (rip back over it,
 * rax its number) unless !handoff; -ERESTART_RESTARTBLOCK: -EINTR when
 * handoff or lost; anything else as it is.
 */
void pt_inject__resume_regs(int64_t orig_rax, uint64_t *rax, uint64_t *rip, bool handoff,
			    bool lost);

/* Is a file with path's device and inode mapped in pid? 1, 0, -errno. */
int pt_inject__mapped(int pid, const char *path);

#endif
