// SPDX-License-Identifier: BSD-2-Clause
/*
 * The injector (inject.h says what it does and why it is safe; the
 * choice of thread is safepoint.c's). Kernel behaviour this relies on,
 * x86-64 (arch/x86/kernel/signal.c, kernel/signal.c, kernel/ptrace.c):
 *  - a PTRACE_INTERRUPT stop and a signal-delivery stop both happen
 *    inside get_signal(); when it returns with no signal to deliver, the
 *    syscall restart is decided from the registers as they are then
 *    (orig_ax >= 0 and ax = -ERESTART*: ip -= 2, ax = orig_ax). So the
 *    call is set up with orig_rax = -1 (no restart of our frame), and
 *    the saved registers, put back at the SIGSEGV stop, make the kernel
 *    restart the program's syscall exactly as after any stop;
 *  - a signal-delivery stop resumed with signal 0 drops that signal;
 *    PTRACE_DETACH with a signal at such a stop delivers it (with the
 *    siginfo set by PTRACE_SETSIGINFO when its si_signo matches);
 *  - rt_sigreturn takes its frame at sp - 8 after the `ret` into libc's
 *    __restore_rt, restores every register and the xstate from it and
 *    never restarts (orig_ax = -1): the hand-off frame applies the
 *    restart itself;
 *  - a synchronous SIGSEGV that is blocked or ignored has its handler
 *    reset to SIG_DFL by force_sig_fault(): such a thread is not used.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"

#include "attach/elfsyms.h"
#include "attach/maps.h"
#include "attach/resolve.h"
#include "attach/safepoint.h"
#include "util/log.h"
#include "util/tasks.h"
#include "util/util.h"

/* The return address of a call: page 0, never mapped (mmap_min_addr). */
#define RET_ADDR 0xd1ull
#define RED_ZONE 128
#define XSAVE_MAX (16 << 10)
/* room dlopen may use below the frame before our check would matter */
#define STACK_ROOM (64 << 10)
/* how far up the stack a signal frame is looked for */
#define SCAN_BYTES (64 << 10)
#define MAX_HELD 32
#define BOOST_NICE (-20)
#define RTLD_NOW_ 2
#define RTLD_DLOPEN_ 0x80000000 /* __libc_dlopen_mode's callers add it */

/* errno values the kernel keeps to itself (include/linux/errno.h) */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* libc's __restore_rt: mov $15, %rax; syscall (rt_sigreturn) */
static const uint8_t restorer_code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

/* The kernel's rt_sigframe on x86-64 (arch/x86/include/asm/sigframe.h),
 * spelled out: glibc's headers and the kernel's clash. */
struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;
	uint64_t reserved1[8];
};

struct k_stack {
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t pad;
	uint64_t ss_size;
};

struct k_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	struct k_stack uc_stack;
	struct k_sigcontext uc_mcontext;
	uint64_t uc_sigmask;
};

struct k_rt_sigframe {
	uint64_t pretcode; /* the return slot */
	struct k_ucontext uc;
	uint8_t info[128];
};

_Static_assert(sizeof(struct k_sigcontext) == 256, "sigcontext layout");
_Static_assert(sizeof(struct k_ucontext) == 304, "ucontext layout");
_Static_assert(offsetof(struct k_rt_sigframe, info) == 312, "rt_sigframe layout");

#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#ifndef FP_XSTATE_MAGIC1
#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u
#endif
#define FX_SW_OFF 464 /* fxsave's sw_reserved: struct _fpx_sw_bytes */

/* Where to call in the target (addresses there). */
struct target_fns {
	uint64_t dlopen, dlerror, errno_loc, restorer;
	int dlopen_mode;
	uint64_t libc_lo, libc_hi; /* libc's executable mapping */
	const char *dlopen_from;   /* "libc", "libdl", "__libc_dlopen_mode" */
};

struct held {
	int sig;
	siginfo_t si;
};

/* One borrowed thread. */
struct borrow {
	int pid, tid;
	struct user_regs_struct saved;
	uint8_t xsave[XSAVE_MAX];
	size_t xsize;
	uint64_t frame;	  /* the return slot; the rt_sigframe starts here */
	uint64_t fpstate; /* the hand-off frame's xstate copy */
	uint64_t path_at;
	uint64_t errno_at; /* 0: not known */
	uint32_t errno_val;
	struct held held[MAX_HELD];
	int nheld;
	bool group_stop;
	int stop_sig;	   /* a job-control stop that came meanwhile (its signal) */
	bool at_signal;	   /* call()'s -EAGAIN: at a signal-delivery stop */
	bool boosted;	   /* its nice is BOOST_NICE while it is ours */
	int nice;	   /* its own */
	uint64_t deadline; /* of the current wait, CLOCK_MONOTONIC ns */
};

static uint64_t now_ns(void)
{
	return pt_now_ns(CLOCK_MONOTONIC);
}

static ssize_t read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = 0;
	close(fd);
	return n;
}

static int mem_read(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

static int mem_write(int pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/* Tests only (PT_TEST_INJECT_PAUSE=MOMENT:MS): a pause at one moment of
 * an injection, said on stderr, for a test to stop the process there
 * (tests/integration/test_inject_stop.py). */
static void test_pause(const char *moment, int tid)
{
	const char *v = getenv("PT_TEST_INJECT_PAUSE");
	size_t n = strlen(moment);
	long ms;

	if (!v || strncmp(v, moment, n) || v[n] != ':')
		return;
	ms = strtol(v + n + 1, NULL, 10);
	if (ms <= 0)
		return;
	pt_msg("proftrace: test: pausing %ld ms at %s (thread %d)\n", ms, moment, tid);
	usleep((useconds_t)ms * 1000);
}

/* ---- before anything is stopped ---- */

static int yama_scope(void)
{
	char buf[16];

	if (read_text("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) <= 0)
		return -1;
	return atoi(buf);
}

static int read_status(int pid, int tid, struct pt_procstatus *st)
{
	char path[64], buf[4096];

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (read_text(path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	return pt_procstatus__parse(buf, st) ? -ESRCH : 0;
}

static int not_permitted(int pid, int e, char *err, size_t errlen)
{
	int y = yama_scope();

	snprintf(err, errlen,
		 "ptrace is not permitted on process %d: %s (needs root or "
		 "CAP_SYS_PTRACE%s)",
		 pid, strerror(-e),
		 y == 1	  ? "; Yama ptrace_scope is 1"
		 : y == 2 ? "; Yama ptrace_scope is 2: CAP_SYS_PTRACE only"
			  : "");
	return -EPERM;
}

static int check_exe(int pid, char *err, size_t errlen)
{
	unsigned char h[20];
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;

		/* the same access check as ptrace's (PTRACE_MODE_READ) */
		if (e == -EACCES || e == -EPERM)
			return not_permitted(pid, e, err, errlen);
		snprintf(err, errlen, "cannot read the executable of %d: %s", pid, strerror(-e));
		return e == -ENOENT ? -ESRCH : e;
	}
	if (read(fd, h, sizeof(h)) != sizeof(h))
		h[0] = 0;
	close(fd);
	if (memcmp(h, ELFMAG, SELFMAG) || h[EI_CLASS] != ELFCLASS64 ||
	    (h[18] | h[19] << 8) != EM_X86_64) {
		snprintf(err, errlen,
			 "process %d is not a 64-bit x86 program (%s): --inject "
			 "serves x86-64 only",
			 pid, h[EI_CLASS] == ELFCLASS32 ? "32-bit" : "another architecture");
		return -ENOEXEC;
	}
	return 0;
}

/* The target opens path as itself: the same file must be there in its
 * root, and its user must be able to read it. */
static int check_library(int pid, const char *path, const struct pt_procstatus *st, char *err,
			 size_t errlen)
{
	char there[PATH_MAX];
	struct stat ours, theirs;
	pid_t child;
	int wst;

	if (path[0] != '/') {
		snprintf(err, errlen, "%s: the library's path must be absolute", path);
		return -EINVAL;
	}
	if (stat(path, &ours)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	snprintf(there, sizeof(there), "/proc/%d/root%s", pid, path);
	if (stat(there, &theirs) || theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino) {
		snprintf(err, errlen,
			 "%s is not visible to process %d (it runs in another mount "
			 "namespace, a container): put the library inside it",
			 path, pid);
		return -EXDEV;
	}
	if (!st->have_uid || st->uid[3] == 0)
		return 0; /* root reads anything */
	/* ask the kernel, as the target's user */
	child = fork();
	if (child < 0)
		return 0; /* the dlopen will say */
	if (child == 0) {
		gid_t g[64];
		int fd;

		for (int i = 0; i < st->ngroups; i++)
			g[i] = st->groups[i];
		if (setgroups((size_t)st->ngroups, g) ||
		    setresgid(st->gid[3], st->gid[3], st->gid[3]) ||
		    setresuid(st->uid[3], st->uid[3], st->uid[3]))
			_exit(0);
		fd = open(there, O_RDONLY | O_CLOEXEC);
		_exit(fd < 0 ? 1 : 0);
	}
	if (waitpid(child, &wst, 0) == child && WIFEXITED(wst) && WEXITSTATUS(wst) == 1) {
		snprintf(err, errlen,
			 "%s cannot be read by process %d's user (uid %u): make it "
			 "and its folders readable (chmod a+rX)",
			 path, pid, st->uid[3]);
		return -EACCES;
	}
	return 0;
}

static bool same_file(const struct pt_mapping *mp, const struct stat *s)
{
	return mp->inode == s->st_ino && mp->dev_major == major(s->st_dev) &&
	       mp->dev_minor == minor(s->st_dev);
}

int pt_inject__mapped(int pid, const char *path)
{
	struct pt_maps maps = { 0 };
	char there[PATH_MAX];
	struct stat s;
	int found = 0;

	snprintf(there, sizeof(there), "/proc/%d/root%s", pid, path);
	if (stat(there, &s) && stat(path, &s))
		return -errno;
	if (pt_maps__read_pid(&maps, pid))
		return -ESRCH;
	for (size_t i = 0; i < maps.n && !found; i++)
		found = maps.v[i].path && same_file(&maps.v[i], &s);
	pt_maps__free(&maps);
	return found;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static bool is_libc(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-2.", 7);
}

static bool is_libdl(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "libdl.so", 8) || !strncmp(b, "libdl-2.", 8);
}

/* The address in pid of the symbol at file offset off of the file that
 * mapping ref belongs to. */
static uint64_t sym_addr(const struct pt_maps *m, const struct pt_mapping *ref, uint64_t off)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct pt_mapping *mp = &m->v[i];

		if (mp->inode != ref->inode || mp->dev_major != ref->dev_major ||
		    mp->dev_minor != ref->dev_minor || !mp->path || strcmp(mp->path, ref->path))
			continue;
		if (off >= mp->offset && off < mp->offset + (mp->end - mp->start))
			return mp->start + off - mp->offset;
	}
	return 0;
}

static uint64_t find_sym(const struct pt_elf *e, const struct pt_maps *m,
			 const struct pt_mapping *ref, const char *name)
{
	for (size_t i = 0; i < e->nsyms; i++)
		if (e->syms[i].global && !e->syms[i].ifunc && !strcmp(e->syms[i].name, name))
			return sym_addr(m, ref, e->syms[i].file_off);
	return 0;
}

/* libc's rt_sigreturn trampoline, by its code (it has no exported name). */
static uint64_t find_restorer(const struct pt_elf *e, const struct pt_mapping *mp)
{
	size_t len = mp->end - mp->start, n = sizeof(restorer_code);
	uint8_t *buf = malloc(len);
	uint64_t at = 0;
	ssize_t got;

	if (!buf)
		return 0;
	got = pt_elf__read(e, mp->offset, buf, len);
	for (ssize_t i = 0; got > 0 && i + (ssize_t)n <= got && !at; i++)
		if (buf[i] == restorer_code[0] && !memcmp(buf + i, restorer_code, n))
			at = mp->start + (uint64_t)i;
	free(buf);
	return at;
}

static int open_lib(int pid, const struct pt_mapping *mp, struct pt_elf **e)
{
	char *host = pt_resolver__host_path(pid, mp);
	int r;

	if (!host)
		return -ENOMEM;
	r = pt_elf__open(e, host);
	free(host);
	return r;
}

static int target_fns(int pid, struct target_fns *f, char *err, size_t errlen)
{
	struct pt_maps m = { 0 };
	const struct pt_mapping *libc = NULL, *libdl = NULL;
	struct pt_elf *e = NULL;
	int r;

	memset(f, 0, sizeof(*f));
	if (pt_maps__read_pid(&m, pid)) {
		snprintf(err, errlen, "cannot read the maps of %d", pid);
		return -ESRCH;
	}
	for (size_t i = 0; i < m.n; i++) {
		const struct pt_mapping *mp = &m.v[i];

		if (mp->start <= RET_ADDR) {
			snprintf(err, errlen, "process %d has page 0 mapped", pid);
			r = -ENOTSUP;
			goto out;
		}
		if (!pt_mapping__is_exec_file(mp))
			continue;
		if (!libc && is_libc(mp->path))
			libc = mp;
		else if (!libdl && is_libdl(mp->path))
			libdl = mp;
	}
	if (!libc) {
		snprintf(err, errlen,
			 "process %d has no libc mapped (a static binary): there is "
			 "no dlopen to call",
			 pid);
		r = -ENOEXEC;
		goto out;
	}
	r = open_lib(pid, libc, &e);
	if (r) {
		snprintf(err, errlen, "cannot read %s: %s", libc->path, strerror(-r));
		goto out;
	}
	f->libc_lo = libc->start;
	f->libc_hi = libc->end;
	f->errno_loc = find_sym(e, &m, libc, "__errno_location");
	f->restorer = find_restorer(e, libc);
	f->dlopen = find_sym(e, &m, libc, "dlopen");
	f->dlerror = find_sym(e, &m, libc, "dlerror");
	f->dlopen_mode = RTLD_NOW_;
	f->dlopen_from = "libc";
	if (!f->dlopen && libdl) {
		struct pt_elf *d = NULL;

		if (!open_lib(pid, libdl, &d)) {
			f->dlopen = find_sym(d, &m, libdl, "dlopen");
			f->dlerror = find_sym(d, &m, libdl, "dlerror");
			f->dlopen_from = "libdl";
			pt_elf__free(d);
		}
	}
	if (!f->dlopen) {
		/* glibc < 2.34 without libdl loaded: its private entry point */
		f->dlopen = find_sym(e, &m, libc, "__libc_dlopen_mode");
		f->dlopen_mode = RTLD_NOW_ | RTLD_DLOPEN_;
		f->dlerror = 0;
		f->dlopen_from = "__libc_dlopen_mode";
	}
	if (!f->dlopen || !f->errno_loc) {
		snprintf(err, errlen, "%s has no %s: not a glibc this can call", libc->path,
			 !f->dlopen ? "dlopen" : "__errno_location");
		r = -ENOEXEC;
	} else if (!f->restorer) {
		snprintf(err, errlen,
			 "%s: no rt_sigreturn trampoline found, so a slow call could "
			 "not be handed back: not injecting",
			 libc->path);
		r = -ENOEXEC;
	}
out:
	pt_elf__free(e);
	pt_maps__free(&m);
	return r;
}

/* ---- the borrowed thread ---- */

/* Wait for tid to stop, at most until b->deadline. 1: stopped (status in
 * *st); 0: deadline; -ESRCH: it exited. */
static int wait_stop(struct borrow *b, int *st)
{
	for (unsigned int i = 0;; i++) {
		pid_t r = waitpid(b->tid, st, __WALL | WNOHANG);

		if (r == b->tid) {
			if (WIFEXITED(*st) || WIFSIGNALED(*st))
				return -ESRCH;
			return 1;
		}
		if (r < 0)
			return -ESRCH;
		if (now_ns() >= b->deadline)
			return 0;
		if (i < 200) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 20 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

/* ---- job control ----
 * A stop (SIGSTOP, or a tty stop signal not caught) that comes while we
 * work is kept: the process is left stopped, as it would have been
 * without us. The kernel's part (kernel/signal.c, kernel/ptrace.c): a
 * stop signal taken by a traced thread is a signal-delivery stop, lost if
 * resumed with signal 0; delivered, it starts the group stop, which each
 * seized thread reports as a PTRACE_EVENT_STOP (PTRACE_CONT runs it on
 * while the others stay stopped); PTRACE_DETACH puts a thread back in a
 * group stop that is in effect or under way, and only then; a stop
 * signal stays pending while the only thread that could take it is held.
 */

/* Does sig, delivered now, stop the process (its default action: not
 * caught, not ignored)? */
static bool stops(int pid, int sig)
{
	struct pt_procstatus st;

	if (sig == SIGSTOP)
		return true;
	if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
		return false;
	return !read_status(pid, 0, &st) && !((st.sigcgt | st.sigign) & (1ull << (sig - 1)));
}

#define STATE_T 0x10000 /* stop_of_task: no signal, state T */

static int stop_of_task(void *ctx, int tid)
{
	struct pt_procstatus st;
	int sig;

	if (read_status(*(int *)ctx, tid, &st))
		return 0;
	sig = pt_safepoint__stop_signal(&st);
	return sig < 0 ? STATE_T : sig;
}

/* Is pid in a job-control stop, or is one on its way (a thread stopped,
 * a stop signal pending)? Its signal, -1 (a thread in state T), 0. */
static int stop_seen(int pid)
{
	int r = pt_tasks__each(pid, stop_of_task, &pid);

	return r == STATE_T ? -1 : r < 0 ? 0 : r;
}

static const char *stop_what(int sig)
{
	switch (sig) {
	case SIGSTOP:
		return "SIGSTOP";
	case SIGTSTP:
		return "SIGTSTP";
	case SIGTTIN:
		return "SIGTTIN";
	case SIGTTOU:
		return "SIGTTOU";
	default:
		return "state T";
	}
}

static void hold(struct borrow *b, int sig)
{
	/* a standard signal pending merges with the same one anyway: one
	 * entry each, so that no other is crowded out */
	for (int i = 0; i < b->nheld && sig < SIGRTMIN; i++)
		if (b->held[i].sig == sig)
			return;
	if (b->nheld >= MAX_HELD)
		return;
	b->held[b->nheld].sig = sig;
	if (ptrace(PTRACE_GETSIGINFO, b->tid, 0, &b->held[b->nheld].si))
		memset(&b->held[b->nheld].si, 0, sizeof(siginfo_t));
	b->nheld++;
}

static bool cont_held(const struct borrow *b)
{
	for (int i = 0; i < b->nheld; i++)
		if (b->held[i].sig == SIGCONT)
			return true;
	return false;
}

/* Held signals but the skip-th, queued for the thread again. Not a
 * SIGCONT when a stop came after it (stopping): queued again, it would
 * continue the process a second time, ending that stop (it did its
 * continuing when it was sent; only a handler of the program's is left
 * to run, and release() gives it to the thread itself when it can). */
static void resend(struct borrow *b, int skip, bool stopping)
{
	for (int i = 0; i < b->nheld; i++)
		if (i != skip && !(b->held[i].sig == SIGCONT && stopping))
			syscall(SYS_tgkill, b->pid, b->tid, b->held[i].sig);
}

static void unboost(struct borrow *b)
{
	if (b->boosted)
		setpriority(PRIO_PROCESS, (id_t)b->tid, b->nice);
	b->boosted = false;
}

/* Let go of the thread, which is at a stop (at a signal-delivery stop
 * when sigstop is true): held signals go back to it, the first through
 * the detach itself with its own siginfo, the others queued again. A
 * group stop needs nothing: a thread detached while its process is in
 * one (or has one under way) is put back in it by the kernel
 * (__ptrace_unlink), and is not when a SIGCONT ended it meanwhile. */
static void release(struct borrow *b, bool sigstop)
{
	bool stopping = !sigstop && cont_held(b) && (b->stop_sig || stop_seen(b->pid));
	int first = -1;

	unboost(b);
	if (b->nheld && sigstop) {
		siginfo_t si;

		/* a SIGCONT goes with the detach: delivered, not sent again */
		first = 0;
		for (int i = 0; i < b->nheld; i++)
			if (b->held[i].sig == SIGCONT)
				first = i;
		si = b->held[first].si;
		si.si_signo = b->held[first].sig;
		ptrace(PTRACE_SETSIGINFO, b->tid, 0, &si);
	}
	ptrace(PTRACE_DETACH, b->tid, 0, (void *)(uintptr_t)(first >= 0 ? b->held[first].sig : 0));
	resend(b, first, stopping);
}

/* After the thread was let go: is the process stopped (or about to be)?
 * A stop seen while it was held, one pending or in effect: the thread
 * let go goes into it within microseconds, unless a SIGCONT ended it.
 * Its signal, -1 (state T, signal unknown), 0. */
static int left_stopped(const struct borrow *b)
{
	uint64_t deadline = now_ns() + 200 * 1000000ull;
	struct timespec ms = { 0, 1000 * 1000 };
	int sig = stop_seen(b->pid);

	if (!sig && !b->stop_sig)
		return 0;
	for (;;) {
		struct pt_procstatus st;

		if (read_status(b->pid, b->tid, &st))
			return 0; /* gone */
		if (st.state == 'T')
			return b->stop_sig ? b->stop_sig : sig ? sig : -1;
		if (now_ns() >= deadline)
			return stop_seen(b->pid);
		nanosleep(&ms, NULL);
	}
}

/* Stopped by PTRACE_INTERRUPT. A signal that stops it first is the
 * program's business: delivered at once, then the thread is looked at
 * wherever that leaves it. 0, -EAGAIN (a group stop: its signal in
 * b->stop_sig), -ETIMEDOUT, -ESRCH. */
static int interrupt(struct borrow *b, uint64_t ns)
{
	int st, r;

	if (ptrace(PTRACE_INTERRUPT, b->tid, 0, 0))
		return -errno;
	b->deadline = now_ns() + ns;
	for (;;) {
		r = wait_stop(b, &st);
		if (r <= 0)
			return r ? r : -ETIMEDOUT;
		if ((st >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(st) == SIGTRAP)
			return 0;
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			b->stop_sig = WSTOPSIG(st); /* a group stop */
			return -EAGAIN;
		}
		/* a signal came first: it is the program's, delivered now (the
		 * interrupt stop follows, wherever its handler leaves it) */
		ptrace(PTRACE_CONT, b->tid, 0, (void *)(uintptr_t)WSTOPSIG(st));
	}
}

/* Has the call begun? The stops before its first instruction are the
 * signals and group stops that were pending as it was let go. */
static bool started(const struct borrow *b, uint64_t fn)
{
	struct user_regs_struct r;

	return ptrace(PTRACE_GETREGS, b->tid, 0, &r) || r.rip != fn || r.rsp != b->frame;
}

/* Call fn(a0, a1) on the thread, from the frame; *ret: its rax. -ETIMEDOUT
 * when it has not returned by b->deadline (the thread runs on, inside);
 * -EFAULT when it faulted elsewhere (*fault: that stop's signal, left
 * undelivered); -EAGAIN when a job-control stop came before it ran
 * anything (the thread at that stop, b->at_signal: a signal-delivery stop
 * whose signal is held); -ESRCH when the process went. */
static int call(struct borrow *b, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t *ret, int *fault)
{
	struct user_regs_struct r = b->saved;
	uint64_t slot = RET_ADDR;
	siginfo_t si;
	int st, w;

	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1; /* not in a syscall: nothing to restart */
	r.rsp = b->frame;
	if (mem_write(b->pid, b->frame, &slot, sizeof(slot)) ||
	    ptrace(PTRACE_SETREGS, b->tid, 0, &r) || ptrace(PTRACE_CONT, b->tid, 0, 0))
		return -ESRCH;
	for (;;) {
		w = wait_stop(b, &st);
		if (w < 0)
			return w;
		if (!w)
			return -ETIMEDOUT;
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			/* a group stop: the other threads are in it; this one
			 * finishes the call first and is put in it as it is let
			 * go (release) */
			if (WSTOPSIG(st) != SIGTRAP) {
				b->stop_sig = WSTOPSIG(st);
				if (!started(b, fn)) {
					b->at_signal = false;
					return -EAGAIN;
				}
				b->group_stop = true;
			}
			ptrace(PTRACE_CONT, b->tid, 0, 0);
			continue;
		}
		if (WSTOPSIG(st) == SIGSEGV && !ptrace(PTRACE_GETSIGINFO, b->tid, 0, &si) &&
		    (uint64_t)(uintptr_t)si.si_addr == RET_ADDR && si.si_code > 0) {
			if (ptrace(PTRACE_GETREGS, b->tid, 0, &r))
				return -ESRCH;
			if (r.rip == RET_ADDR) {
				*ret = r.rax;
				return 0;
			}
		}
		if ((WSTOPSIG(st) == SIGSEGV || WSTOPSIG(st) == SIGBUS || WSTOPSIG(st) == SIGILL ||
		     WSTOPSIG(st) == SIGFPE) &&
		    !ptrace(PTRACE_GETSIGINFO, b->tid, 0, &si) && si.si_code > 0) {
			*fault = WSTOPSIG(st);
			return -EFAULT;
		}
		if (stops(b->pid, WSTOPSIG(st))) {
			if (!started(b, fn)) {
				b->stop_sig = WSTOPSIG(st);
				b->at_signal = true;
				hold(b, WSTOPSIG(st));
				return -EAGAIN;
			}
			/* job control is the program's, at once: the stop starts
			 * now for every other thread, and this one reports it
			 * next (above) */
			ptrace(PTRACE_CONT, b->tid, 0, (void *)(uintptr_t)WSTOPSIG(st));
			continue;
		}
		if (WSTOPSIG(st) == SIGCONT)
			b->stop_sig = 0; /* it ended the stop */
		hold(b, WSTOPSIG(st));
		ptrace(PTRACE_CONT, b->tid, 0, 0);
	}
}

/* The registers the thread resumes with from the hand-off frame:
 * rt_sigreturn never restarts, so a syscall that would have been
 * restarted is re-issued here, and one whose restart needs the kernel's
 * restart block (a relative sleep) returns EINTR, as after a signal. */
void pt_inject__resume_regs(int64_t orig_rax, uint64_t *rax, uint64_t *rip, bool handoff, bool lost)
{
	if (orig_rax < 0)
		return; /* not in a syscall */
	switch (-(int64_t)*rax) {
	case ERESTARTSYS:
	case ERESTARTNOINTR:
	case ERESTARTNOHAND:
		if (handoff) {
			*rax = (uint64_t)orig_rax;
			*rip -= 2; /* `syscall` is 2 bytes */
		}
		break;
	case ERESTART_RESTARTBLOCK:
		if (handoff || lost)
			*rax = (uint64_t)-EINTR;
		break;
	}
}

static void handoff_regs(const struct user_regs_struct *s, struct k_sigcontext *sc)
{
	uint64_t rax = s->rax, rip = s->rip;

	pt_inject__resume_regs((int64_t)s->orig_rax, &rax, &rip, true, false);
	sc->r8 = s->r8, sc->r9 = s->r9, sc->r10 = s->r10, sc->r11 = s->r11;
	sc->r12 = s->r12, sc->r13 = s->r13, sc->r14 = s->r14, sc->r15 = s->r15;
	sc->rdi = s->rdi, sc->rsi = s->rsi, sc->rbp = s->rbp, sc->rbx = s->rbx;
	sc->rdx = s->rdx, sc->rax = rax, sc->rcx = s->rcx, sc->rsp = s->rsp;
	sc->rip = rip, sc->eflags = s->eflags;
	sc->cs = (uint16_t)s->cs, sc->ss = (uint16_t)s->ss;
}

/* The hand-off frame above the return slot: the saved state as a signal
 * frame, for libc's __restore_rt to return to (inject.h). */
static int write_handoff(struct borrow *b, uint64_t sigmask)
{
	struct k_ucontext uc = { 0 };
	uint32_t magic2 = FP_XSTATE_MAGIC2;
	uint8_t *x = malloc(b->xsize);
	uint64_t xfeatures;
	uint32_t v32;
	int e = 0;

	if (!x || b->xsize < 576) {
		free(x);
		return -ENOMEM;
	}
	memcpy(x, b->xsave, b->xsize);

	uc.uc_flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	/* rt_sigreturn sets the alternate signal stack from uc_stack and
	 * ignores a failure: an invalid mode leaves the thread's as it is */
	uc.uc_stack.ss_flags = SS_ONSTACK | SS_DISABLE;
	handoff_regs(&b->saved, &uc.uc_mcontext);
	uc.uc_mcontext.fpstate = b->fpstate;
	uc.uc_sigmask = sigmask;
	/* the xstate as a signal frame wants it: struct _fpx_sw_bytes in
	 * fxsave's software bytes, FP_XSTATE_MAGIC2 right after it */
	xfeatures = *(uint64_t *)(x + 512); /* XSTATE_BV: what the buffer holds */
	v32 = FP_XSTATE_MAGIC1;
	memcpy(x + FX_SW_OFF, &v32, 4);
	v32 = (uint32_t)b->xsize + 4;
	memcpy(x + FX_SW_OFF + 4, &v32, 4);
	memcpy(x + FX_SW_OFF + 8, &xfeatures, 8);
	v32 = (uint32_t)b->xsize;
	memcpy(x + FX_SW_OFF + 16, &v32, 4);
	if (mem_write(b->pid, b->frame + 8, &uc, sizeof(uc)) ||
	    mem_write(b->pid, b->fpstate, x, b->xsize) ||
	    mem_write(b->pid, b->fpstate + b->xsize, &magic2, sizeof(magic2)))
		e = -EFAULT;
	free(x);
	return e;
}

/* A signal handler on the stack: its return address, libc's
 * __restore_rt, is somewhere above sp. */
static bool handler_on_stack(int pid, uint64_t sp, uint64_t top, uint64_t restorer)
{
	size_t len = top - sp > SCAN_BYTES ? SCAN_BYTES : top - sp;
	uint64_t *w = malloc(len);
	bool found = false;

	if (!w)
		return true;
	if (mem_read(pid, sp, w, len & ~7ul)) {
		free(w);
		return true;
	}
	for (size_t i = 0; i < len / 8 && !found; i++)
		found = w[i] == restorer;
	free(w);
	return found;
}

/* The stack mapping sp is in: [lo, hi); grows: the main thread's,
 * which the kernel extends as the thread touches it (not as we write). */
static int stack_vma(int pid, uint64_t sp, uint64_t *lo, uint64_t *hi, bool *grows)
{
	struct pt_maps m = { 0 };
	int r = -ENOENT;

	if (pt_maps__read_pid(&m, pid))
		return -ESRCH;
	for (size_t i = 0; i < m.n; i++)
		if (sp >= m.v[i].start && sp < m.v[i].end && m.v[i].perms[1] == 'w') {
			*lo = m.v[i].start;
			*hi = m.v[i].end;
			*grows = m.v[i].path && !strcmp(m.v[i].path, "[stack]");
			r = 0;
		}
	pt_maps__free(&m);
	return r;
}

/* Lay out the frame below the red zone, 16-byte aligned as a call wants
 * it (the return slot at 8 mod 16): return slot + rt_sigframe, xstate
 * (64-aligned) + MAGIC2, the path. */
static int layout(struct borrow *b, const char *path, uint64_t vma_lo, bool grows)
{
	size_t plen = strlen(path) + 1;
	uint64_t top = b->saved.rsp - RED_ZONE;
	uint64_t p, fp, frame;

	p = (top - plen) & ~15ull;
	fp = (p - b->xsize - 4) & ~63ull;
	frame = ((fp - sizeof(struct k_rt_sigframe)) & ~15ull) - 8;
	if (frame < vma_lo + (grows ? 0 : STACK_ROOM))
		return -ENOSPC;
	b->path_at = p;
	b->fpstate = fp;
	b->frame = frame;
	return mem_write(b->pid, p, path, plen);
}

struct job {
	int pid;
	const char *path;
	const struct pt_inject_opts *o;
	const struct target_fns *fns;
	struct pt_inject_result *res;
	char *err;
	size_t errlen;
	uint64_t call_ns;
};

/* One line for a stop that came while we worked: -EAGAIN. */
static int say_stopped(const struct job *j, int sig, const char *when, bool loaded)
{
	snprintf(j->err, j->errlen,
		 "process %d was stopped (%s) %s: %s, and it is left stopped; continue it "
		 "(kill -CONT %d) and attach again",
		 j->pid, stop_what(sig), when,
		 loaded ? "the library is loaded" : "nothing was loaded", j->pid);
	j->res->stopped = true;
	return -EAGAIN;
}

static long read_errno_word(struct borrow *b, uint64_t at, uint32_t *v)
{
	return mem_read(b->pid, at, v, sizeof(*v));
}

/* Does the thread wait with a signal mask of the syscall's own (ppoll,
 * pselect6, epoll_pwait with a mask argument)? Then /proc shows that one
 * until it resumes. When unsure: yes. */
static bool own_sigmask(const struct borrow *b)
{
	const struct user_regs_struct *r = &b->saved;
	uint64_t ss[2];

	switch ((long)r->orig_rax) {
	case 271: /* ppoll(fds, n, ts, sigmask, size) */
		return r->r10 != 0;
	case 281: /* epoll_pwait(ep, ev, n, timeout, sigmask, size) */
	case 441: /* epoll_pwait2 */
		return r->r8 != 0;
	case 270: /* pselect6(n, r, w, e, ts, {sigmask, size} *) */
		return r->r9 && (mem_read(b->pid, r->r9, ss, sizeof(ss)) || ss[0]);
	default:
		return false;
	}
}

/* errno's address from __errno_location's code, glibc's on x86-64:
 * [endbr64] mov GOT(%rip),%rax; add %fs:0,%rax; ret, the GOT slot holding
 * errno's offset from the thread pointer. Saves a call. 0 or -ENOENT (not
 * that code: call it). */
static int errno_direct(const struct borrow *b, uint64_t fn, uint64_t *addr)
{
	static const uint8_t add_fs[] = { 0x64, 0x48, 0x03, 0x04, 0x25, 0, 0, 0, 0, 0xc3 };
	static const uint8_t endbr[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t c[32], *p = c;
	int32_t rel;
	int64_t tpoff;

	if (mem_read(b->pid, fn, c, sizeof(c)))
		return -ENOENT;
	if (!memcmp(p, endbr, sizeof(endbr)))
		p += sizeof(endbr);
	if (p[0] != 0x48 || p[1] != 0x8b || p[2] != 0x05 || memcmp(p + 7, add_fs, sizeof(add_fs)))
		return -ENOENT;
	memcpy(&rel, p + 3, 4);
	if (mem_read(b->pid, fn + (uint64_t)(p - c) + 7 + (uint64_t)(int64_t)rel, &tpoff,
		     sizeof(tpoff)))
		return -ENOENT;
	*addr = b->saved.fs_base + (uint64_t)tpoff;
	return 0;
}

/* Take a signal-delivery stop's thread back to its own state and let it
 * go: registers, xstate, errno, held signals. */
static void restore(struct borrow *b)
{
	struct iovec iov = { b->xsave, b->xsize };
	struct user_regs_struct r = b->saved;
	uint64_t rax = r.rax, rip = r.rip;

	if (b->errno_at)
		mem_write(b->pid, b->errno_at, &b->errno_val, sizeof(b->errno_val));
	/* A signal or group stop that interrupted a sleep inside the call
	 * left the thread's restart block to that sleep: a wait of the
	 * program's own that would go on through restart_syscall returns
	 * EINTR instead, as it does after a signal. */
	pt_inject__resume_regs((int64_t)r.orig_rax, &rax, &rip, false, b->nheld || b->group_stop);
	r.rax = rax;
	r.rip = rip;
	ptrace(PTRACE_SETREGS, b->tid, 0, &r);
	ptrace(PTRACE_SETREGSET, b->tid, (void *)NT_X86_XSTATE, &iov);
}

/* The call did not return in time: point its return at the hand-off
 * frame and let the thread go. 0 when it returned after all (restored). */
static int hand_off(struct borrow *b, const struct target_fns *f, uint64_t *ret)
{
	uint64_t slot = f->restorer;
	int st, w;

	/* written while it runs: dlopen reads it only at its `ret` */
	if (mem_write(b->pid, b->frame, &slot, sizeof(slot)))
		return -ESRCH;
	if (ptrace(PTRACE_INTERRUPT, b->tid, 0, 0))
		return -ESRCH;
	b->deadline = now_ns() + 1000000000ull;
	for (;;) {
		siginfo_t si;
		struct user_regs_struct r;

		w = wait_stop(b, &st);
		if (w < 0)
			return w;
		if (!w) {
			/* not stopping: the kernel detaches it when we exit;
			 * what it was sent meanwhile is queued for it again */
			unboost(b);
			resend(b, -1, cont_held(b) && (b->stop_sig || stop_seen(b->pid)));
			return -ETIMEDOUT;
		}
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			release(b, false);
			return -ETIMEDOUT;
		}
		if (WSTOPSIG(st) == SIGSEGV && !ptrace(PTRACE_GETSIGINFO, b->tid, 0, &si) &&
		    (uint64_t)(uintptr_t)si.si_addr == RET_ADDR &&
		    !ptrace(PTRACE_GETREGS, b->tid, 0, &r) && r.rip == RET_ADDR) {
			*ret = r.rax;
			restore(b); /* it had returned just before */
			release(b, true);
			return 0;
		}
		/* a signal for it: delivered now, on top of the call */
		hold(b, WSTOPSIG(st));
		release(b, true);
		return -ETIMEDOUT;
	}
}

static int read_cstr(int pid, uint64_t at, char *buf, size_t len)
{
	size_t got = 0;

	/* page by page: the string may end just before an unmapped page */
	while (got + 1 < len) {
		size_t chunk = 4096 - ((at + got) & 4095);

		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		if (mem_read(pid, at + got, buf + got, chunk))
			break;
		if (memchr(buf + got, 0, chunk))
			return 0;
		got += chunk;
	}
	buf[got] = 0;
	return got ? 0 : -EFAULT;
}

/*
 * Borrow tid: 1 when it turned out not to be at a safe point once
 * stopped (let go untouched: try another), else the result of the job.
 */
static int borrow(struct job *j, int tid)
{
	const struct target_fns *f = j->fns;
	struct borrow *b = calloc(1, sizeof(*b));
	struct pt_safe_opts so = { .allow_epoll = j->o->allow_epoll };
	struct pt_procstatus ts;
	struct iovec iov;
	uint64_t t0, t_call, t_end = 0, ret = 0, lo = 0, hi = 0, h = 0;
	bool grows = false;
	bool dlopen_failed = false;
	uint8_t insn[2];
	int e, stop, fault = 0;

	if (!b)
		return -ENOMEM;
	b->pid = j->pid;
	b->tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
		e = -errno;
		free(b);
		if (e == -ESRCH)
			return 1; /* that thread ended: another */
		if (e == -EPERM || e == -EACCES)
			return not_permitted(j->pid, e, j->err, j->errlen);
		snprintf(j->err, j->errlen, "cannot trace thread %d: %s", tid, strerror(-e));
		return e;
	}
	/* the thread runs the call for us: first on its CPU while it does,
	 * its own nice back before it runs its own code again */
	errno = 0;
	b->nice = getpriority(PRIO_PROCESS, (id_t)tid);
	b->boosted = !errno && !setpriority(PRIO_PROCESS, (id_t)tid, BOOST_NICE);
	test_pause("seized", tid);
	t0 = now_ns();
	e = interrupt(b, 1000000000ull);
	if (e == -EAGAIN) {
		/* stopped as we took it: let go, it stays in the group stop */
		char when[64];

		unboost(b);
		ptrace(PTRACE_DETACH, tid, 0, 0);
		snprintf(when, sizeof(when), "as --inject took its thread %d", tid);
		e = say_stopped(j, b->stop_sig, when, false);
		free(b);
		return e;
	}
	if (e) {
		/* it did not stop (uninterruptible): leave it be */
		unboost(b);
		ptrace(PTRACE_DETACH, tid, 0, 0);
		free(b);
		return 1;
	}
	test_pause("held", tid);
	iov.iov_base = b->xsave;
	iov.iov_len = sizeof(b->xsave);
	if (ptrace(PTRACE_GETREGS, tid, 0, &b->saved) ||
	    ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov))
		goto not_here;
	b->xsize = iov.iov_len;
	/* stopped: the same wait, issued from libc's own wrapper */
	if (!pt_safepoint__regs_ok((long)b->saved.orig_rax, &so) || b->saved.rip < f->libc_lo ||
	    b->saved.rip >= f->libc_hi || mem_read(j->pid, b->saved.rip - 2, insn, 2) ||
	    insn[0] != 0x0f || insn[1] != 0x05)
		goto not_here;
	if (read_status(j->pid, tid, &ts) || ts.sigblk & (1ull << (SIGSEGV - 1)) ||
	    ts.sigign & (1ull << (SIGSEGV - 1)))
		goto not_here;
	if (stack_vma(j->pid, b->saved.rsp, &lo, &hi, &grows) ||
	    handler_on_stack(j->pid, b->saved.rsp, hi, f->restorer) ||
	    layout(b, j->path, lo, grows))
		goto not_here;

	/* The hand-off frame goes in before the first call (any call may
	 * have to be handed back); then errno: where __errno_location would
	 * say, read from its code, or by calling it. The call also shows the
	 * signal mask as the program has it, when a ppoll's or pselect's own
	 * is in force while it waits (the kernel puts the program's back as
	 * the thread resumes). */
	if (write_handoff(b, ts.sigblk)) {
		e = -EFAULT;
		goto failed;
	}
	if (!own_sigmask(b) && !errno_direct(b, f->errno_loc, &ret)) {
		if (!read_errno_word(b, ret, &b->errno_val))
			b->errno_at = ret;
	} else {
		b->deadline = now_ns() + j->call_ns;
		e = call(b, f->errno_loc, 0, 0, &ret, &fault);
		if (e)
			goto failed;
		if (ret && !read_errno_word(b, ret, &b->errno_val))
			b->errno_at = ret;
		if (!read_status(j->pid, tid, &ts))
			mem_write(j->pid, b->frame + 8 + offsetof(struct k_ucontext, uc_sigmask),
				  &ts.sigblk, sizeof(ts.sigblk));
	}

	t_call = now_ns();
	b->deadline = t_call + j->call_ns;
	e = call(b, f->dlopen, b->path_at, (uint64_t)f->dlopen_mode, &h, &fault);
	j->res->call_ms = (double)(now_ns() - t_call) / 1e6;
	if (e == -ETIMEDOUT) {
		e = hand_off(b, f, &h);
		if (e == 0) {
			/* it returned as we took it back: finished after all */
			j->res->handle = h;
			if (!h) {
				snprintf(j->err, j->errlen, "dlopen of %s in process %d failed",
					 j->path, j->pid);
				e = -ELIBACC;
			}
		} else {
			j->res->handed_off = true;
			snprintf(j->err, j->errlen,
				 "dlopen of %s in thread %d of %d took over %u ms: "
				 "the thread finishes it on its own and then resumes where it was",
				 j->path, tid, j->pid, j->o->call_ms ? j->o->call_ms : 2000);
			e = -ETIMEDOUT;
		}
		goto done;
	}
	if (e)
		goto failed;
	test_pause("returned", tid);
	j->res->handle = h;
	if (!h) {
		char msg[512] = "";

		dlopen_failed = true;
		b->deadline = now_ns() + j->call_ns;
		e = f->dlerror ? call(b, f->dlerror, 0, 0, &ret, &fault) : -ENOENT;
		if (e == -ETIMEDOUT || e == -EFAULT || e == -ESRCH || e == -EAGAIN)
			goto failed;
		if (!e && ret)
			read_cstr(j->pid, ret, msg, sizeof(msg));
		snprintf(j->err, j->errlen, "dlopen of %s in process %d failed: %s", j->path,
			 j->pid, msg[0] ? msg : "(no dlerror text)");
		e = -ELIBACC;
	}
	restore(b);
	release(b, true);
	t_end = now_ns();
	stop = left_stopped(b);
	if (stop && !e) {
		char when[PATH_MAX + 64];

		snprintf(when, sizeof(when),
			 "while --inject held its thread %d for the dlopen of %s", tid, j->path);
		e = say_stopped(j, stop, when, true);
	} else if (stop) {
		j->res->stopped = true; /* and dlopen failed: that is said */
	}
done:
	j->res->pause_ms = (double)((t_end ? t_end : now_ns()) - t0) / 1e6;
	j->res->tid = tid;
	j->res->sysno = (long)b->saved.orig_rax;
	{
		char buf[24];

		snprintf(j->res->syscall, sizeof(j->res->syscall), "%s",
			 pt_safepoint__sysname((long)b->saved.orig_rax, buf, sizeof(buf)));
	}
	j->res->held_signals = (unsigned int)b->nheld;
	free(b);
	return e;
failed:
	if (e == -EAGAIN) {
		/* stopped before a call ran anything: put back as it was and
		 * let go into the stop */
		char when[80];

		restore(b);
		release(b, b->at_signal);
		t_end = now_ns();
		snprintf(when, sizeof(when), "while --inject held its thread %d%s", tid,
			 dlopen_failed ? "" : ", before the call");
		e = say_stopped(j, b->stop_sig, when, false);
		goto done;
	}
	if (e == -EFAULT && fault) {
		/* the program's own fault, in a call it did not make: it gets
		 * it, as it would have had it made the call */
		snprintf(j->err, j->errlen, "the call in thread %d of %d faulted (signal %d)", tid,
			 j->pid, fault);
		unboost(b);
		stop = cont_held(b) && (b->stop_sig || stop_seen(j->pid));
		ptrace(PTRACE_DETACH, tid, 0, (void *)(uintptr_t)fault);
		resend(b, -1, stop);
	} else if (e == -ETIMEDOUT) {
		/* __errno_location or dlerror did not return (no CPU for it
		 * for that long): hand it back the same way */
		if (hand_off(b, f, &ret) == 0) {
			e = dlopen_failed ? -ELIBACC : 1;
		} else {
			j->res->handed_off = true;
			snprintf(j->err, j->errlen,
				 "thread %d of %d did not return from a libc call "
				 "in time: handed back, it resumes where it was once it does",
				 tid, j->pid);
		}
	} else if (e != -ESRCH) {
		restore(b);
		release(b, true);
		snprintf(j->err, j->errlen, "cannot set up the call in thread %d of %d", tid,
			 j->pid);
	} else {
		snprintf(j->err, j->errlen, "process %d exited", j->pid);
	}
	free(b);
	return e;
not_here:
	/* nothing changed: resume as it was */
	release(b, false);
	free(b);
	return 1;
}

/* ---- which thread ---- */

/* A thread looked at: what it was doing (for the refusal line), and when
 * to look again after it was stopped for nothing. */
struct seen {
	int tid;
	const char *why;
	uint64_t skip_until;
};

struct pick {
	struct job *j;
	struct seen seen[64];
	int nseen;
	int result; /* 2: keep looking */
	bool epoll; /* a thread was seen in epoll_wait */
	int stop;   /* a job-control stop seen (its signal, -1: state T) */
};

static struct seen *seen_of(struct pick *p, int tid)
{
	for (int i = 0; i < p->nseen; i++)
		if (p->seen[i].tid == tid)
			return &p->seen[i];
	if (p->nseen == (int)ARRAY_SIZE(p->seen))
		return NULL;
	p->seen[p->nseen] = (struct seen){ .tid = tid };
	return &p->seen[p->nseen++];
}

/* borrow(), with proftrace's own stop signals held back (it is never
 * left hijacked by our exit) and proftrace first on its CPU meanwhile */
static int borrow_guarded(struct job *j, int tid)
{
	sigset_t stop, old;
	bool boosted;
	int mine, e;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	/* on a busy machine the pause is mostly waiting for a CPU (median
	 * 12 -> 1 ms with 4 busy threads on 2 cores) */
	errno = 0;
	mine = getpriority(PRIO_PROCESS, 0);
	boosted = !errno && !setpriority(PRIO_PROCESS, 0, BOOST_NICE);
	e = borrow(j, tid);
	if (boosted)
		setpriority(PRIO_PROCESS, 0, mine);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

/* The link of the fd a read-like wait is on ("pipe:[..]", a path...). */
static const char *fd_kind(int pid, uint64_t fd, char *link, size_t len)
{
	char path[64];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%" PRIu64, pid, fd);
	n = readlink(path, link, len - 1);
	if (n <= 0)
		return NULL;
	link[n] = 0;
	/* a named FIFO shows its path: what it is, is what counts */
	if (link[0] == '/' && !stat(path, &st) && S_ISFIFO(st.st_mode))
		return "pipe:[fifo]";
	return link;
}

static int try_thread(void *ctx, int tid)
{
	struct pick *p = ctx;
	struct job *j = p->j;
	struct pt_safe_opts so = { .allow_epoll = j->o->allow_epoll };
	struct seen *me = seen_of(p, tid);
	const char *fdlink = NULL, *why = "gone";
	char path[96], stat[512], sys[512], link[128];
	struct pt_procstatus ts;
	struct pt_sysline sl;
	int e;

	if ((j->o->tid && tid != j->o->tid) || (me && me->skip_until > now_ns()))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", j->pid, tid);
	if (read_text(path, stat, sizeof(stat)) <= 0)
		goto note;
	if (pt_stat__state(stat) == 'T') {
		p->stop = -1; /* a job-control stop under way: left so */
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", j->pid, tid);
	if (read_text(path, sys, sizeof(sys)) <= 0 || pt_sysline__parse(sys, &sl)) {
		why = "unreadable";
		goto note;
	}
	if (!sl.running && pt_safepoint__waits_on_fd(sl.nr))
		fdlink = fd_kind(j->pid, sl.args[0], link, sizeof(link));
	if (pt_safepoint__classify(&sl, pt_stat__state(stat), fdlink, &so, &why) != PT_SAFE_YES) {
		p->epoll |= strstr(why, "epoll_wait") != NULL;
		goto note;
	}
	/* issued by libc's wrapper (not ld.so's, not raw): else it is not
	 * worth stopping */
	if (sl.pc < j->fns->libc_lo || sl.pc >= j->fns->libc_hi) {
		why = "in a wait not issued by libc";
		goto note;
	}
	/* one of its threads may have a tracer of its own */
	if (read_status(j->pid, tid, &ts) || ts.tracer) {
		why = "traced by another tracer";
		goto note;
	}
	test_pause("looked", tid);
	e = borrow_guarded(j, tid);
	if (e != 1) {
		p->result = e;
		return 1;
	}
	j->res->tries++;
	why = "not at a safe point once stopped";
	if (me) /* not again for a while: each look stops it */
		me->skip_until = now_ns() + 20 * 1000000ull;
note:
	if (me)
		me->why = why;
	return 0;
}

/* What the threads were doing when last looked at: the main thread's,
 * then how many of the others did what ("main thread 7 running; 12 other
 * threads: 10 in a lock wait (futex), 2 running"). */
static void say_threads(const struct pick *p, char *buf, size_t len)
{
	size_t off = 0;
	int others = 0;

	buf[0] = 0;
	for (int i = 0; i < p->nseen; i++)
		if (p->seen[i].tid == p->j->pid && p->seen[i].why)
			off = (size_t)snprintf(buf, len, "main thread %d %s", p->seen[i].tid,
					       p->seen[i].why);
		else if (p->seen[i].why)
			others++;
	if (!others || off >= len)
		return;
	off += (size_t)snprintf(buf + off, len - off, "%s%d other thread%s:", off ? "; " : "",
				others, others == 1 ? "" : "s");
	for (int i = 0; i < p->nseen && off < len; i++) {
		const char *why = p->seen[i].why;
		bool first = true;
		int n = 0;

		if (p->seen[i].tid == p->j->pid || !why)
			continue;
		for (int k = 0; k < p->nseen; k++) {
			if (p->seen[k].tid == p->j->pid || !p->seen[k].why ||
			    strcmp(p->seen[k].why, why))
				continue;
			first &= k >= i;
			n++;
		}
		if (first)
			off += (size_t)snprintf(buf + off, len - off, "%s %d %s",
						off && buf[off - 1] != ':' ? "," : "", n, why);
	}
}

static int main_first(void *ctx, int tid)
{
	struct pick *p = ctx;

	return tid == p->j->pid ? 0 : try_thread(ctx, tid);
}

static int find_thread(struct job *j)
{
	unsigned int wait_ms = j->o->wait_ms ? j->o->wait_ms : 2000;
	uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)wait_ms * 1000000ull;
	struct pick p = { .j = j, .result = 2 };
	struct timespec ms = { 0, 1000 * 1000 };

	for (;;) {
		struct pt_procstatus st;

		/* stopped since it was checked: left so */
		if (!p.stop && !read_status(j->pid, 0, &st))
			p.stop = pt_safepoint__stop_signal(&st);
		/* the main thread first: an idle server's waits there */
		if (!p.stop && try_thread(&p, j->pid) == 0)
			pt_tasks__each(j->pid, main_first, &p);
		if (p.stop) {
			j->res->wait_ms = (double)(now_ns() - t0) / 1e6;
			return say_stopped(j, p.stop,
					   "while --inject looked for a thread to borrow", false);
		}
		if (p.result != 2)
			break;
		if (kill(j->pid, 0) && errno == ESRCH) {
			snprintf(j->err, j->errlen, "process %d exited", j->pid);
			return -ESRCH;
		}
		if (now_ns() >= deadline) {
			char what[512];

			say_threads(&p, what, sizeof(what));
			snprintf(j->err, j->errlen,
				 "no thread of process %d was at a safe point to "
				 "load from in %u ms (%s); --inject-wait MS waits longer%s",
				 j->pid, wait_ms, what,
				 p.epoll ? ", --inject-epoll takes a thread in epoll_wait "
					   "(it sees EINTR, which event loops retry)"
					 : "");
			j->res->wait_ms = (double)(now_ns() - t0) / 1e6;
			return -ETIME;
		}
		nanosleep(&ms, NULL);
	}
	j->res->wait_ms = (double)(now_ns() - t0) / 1e6 - j->res->pause_ms;
	if (j->res->wait_ms < 0)
		j->res->wait_ms = 0;
	j->res->tries++;
	return p.result;
}

int pt_inject__dlopen(int pid, const char *path, const struct pt_inject_opts *opts,
		      struct pt_inject_result *res, char *err, size_t errlen)
{
	static const struct pt_inject_opts none;
	const struct pt_inject_opts *o = opts ? opts : &none;
	struct pt_procstatus st;
	struct target_fns fns;
	struct job j = { .pid = pid,
			 .path = path,
			 .o = o,
			 .fns = &fns,
			 .res = res,
			 .err = err,
			 .errlen = errlen };
	int e;

	memset(res, 0, sizeof(*res));
	test_pause("start", pid);
	j.call_ns = (uint64_t)(o->call_ms ? o->call_ms : 2000) * 1000000ull;
	if (read_status(pid, 0, &st)) {
		snprintf(err, errlen, "no such process: %d", pid);
		return -ESRCH;
	}
	e = pt_safepoint__check_proc(&st, pid, yama_scope(), err, errlen);
	if (!e)
		e = check_exe(pid, err, errlen);
	if (!e)
		e = check_library(pid, path, &st, err, errlen);
	if (e)
		return e;
	e = pt_inject__mapped(pid, path);
	if (e == 1) {
		res->already = true;
		return 0;
	}
	e = target_fns(pid, &fns, err, errlen);
	if (e)
		return e;
	test_pause("checked", pid);
	return find_thread(&j);
}
