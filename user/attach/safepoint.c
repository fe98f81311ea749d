// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safepoint.h"

/* x86-64 syscall numbers (asm/unistd_64.h), spelled out: this is about
 * the target's ABI, not the one proftrace was built for. */
enum {
	NR_read = 0,
	NR_poll = 7,
	NR_readv = 19,
	NR_select = 23,
	NR_pause = 34,
	NR_nanosleep = 35,
	NR_accept = 43,
	NR_recvfrom = 45,
	NR_recvmsg = 47,
	NR_wait4 = 61,
	NR_futex = 202,
	NR_clock_nanosleep = 230,
	NR_epoll_wait = 232,
	NR_waitid = 247,
	NR_pselect6 = 270,
	NR_ppoll = 271,
	NR_epoll_pwait = 281,
	NR_accept4 = 288,
	NR_recvmmsg = 299,
	NR_epoll_pwait2 = 441,
	NR_futex_waitv = 449,
};

#define SIGBIT(sig) (1ull << ((sig)-1))

enum kind { K_NO, K_WAIT, K_FD, K_EPOLL, K_LOCK };

static const struct {
	long nr;
	const char *name;
	enum kind kind;
} sys_tab[] = {
	{ NR_read, "read", K_FD },
	{ NR_poll, "poll", K_WAIT },
	{ NR_readv, "readv", K_FD },
	{ NR_select, "select", K_WAIT },
	{ NR_pause, "pause", K_WAIT },
	{ NR_nanosleep, "nanosleep", K_WAIT },
	{ NR_accept, "accept", K_FD },
	{ NR_recvfrom, "recvfrom", K_FD },
	{ NR_recvmsg, "recvmsg", K_FD },
	{ NR_wait4, "wait4", K_WAIT },
	{ NR_futex, "futex", K_LOCK },
	{ NR_clock_nanosleep, "clock_nanosleep", K_WAIT },
	{ NR_epoll_wait, "epoll_wait", K_EPOLL },
	{ NR_waitid, "waitid", K_WAIT },
	{ NR_pselect6, "pselect6", K_WAIT },
	{ NR_ppoll, "ppoll", K_WAIT },
	{ NR_epoll_pwait, "epoll_pwait", K_EPOLL },
	{ NR_accept4, "accept4", K_FD },
	{ NR_recvmmsg, "recvmmsg", K_FD },
	{ NR_epoll_pwait2, "epoll_pwait2", K_EPOLL },
	{ NR_futex_waitv, "futex_waitv", K_LOCK },
};

static int find(long nr)
{
	for (size_t i = 0; i < sizeof(sys_tab) / sizeof(sys_tab[0]); i++)
		if (sys_tab[i].nr == nr)
			return (int)i;
	return -1;
}

const char *pt_safepoint__sysname(long nr, char *buf, size_t len)
{
	int i = find(nr);

	if (i >= 0)
		return sys_tab[i].name;
	snprintf(buf, len, "syscall %ld", nr);
	return buf;
}

bool pt_safepoint__waits_on_fd(long nr)
{
	int i = find(nr);

	return i >= 0 && sys_tab[i].kind == K_FD;
}

int pt_sysline__parse(const char *text, struct pt_sysline *out)
{
	uint64_t v[8];
	char *end;
	int n = 0;

	memset(out, 0, sizeof(*out));
	while (*text == ' ')
		text++;
	if (!strncmp(text, "running", 7)) {
		out->running = true;
		out->nr = -1;
		return 0;
	}
	errno = 0;
	out->nr = strtol(text, &end, 10);
	if (end == text || errno)
		return -EINVAL;
	/* then 6 args and sp pc, or (nr -1) only sp pc; all in hex */
	for (text = end; n < 8; n++) {
		while (*text == ' ')
			text++;
		if (!*text || *text == '\n')
			break;
		errno = 0;
		v[n] = strtoull(text, &end, 16);
		if (end == text || errno || (*end && *end != ' ' && *end != '\n'))
			return -EINVAL;
		text = end;
	}
	while (*text == ' ' || *text == '\n')
		text++;
	if (*text)
		return -EINVAL;
	if (out->nr == -1 && n == 2) {
		out->sp = v[0];
		out->pc = v[1];
		return 0;
	}
	if (out->nr < 0 || n != 8)
		return -EINVAL;
	memcpy(out->args, v, sizeof(out->args));
	out->sp = v[6];
	out->pc = v[7];
	return 0;
}

char pt_stat__state(const char *text)
{
	const char *p = strrchr(text, ')');

	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return 0;
	return p[2];
}

static void parse_ids(const char *v, unsigned int *out, int max, int *n)
{
	char *end;
	int i;

	for (i = 0; i < max; i++) {
		unsigned long x = strtoul(v, &end, 10);

		if (end == v)
			break;
		out[i] = (unsigned int)x;
		v = end;
	}
	if (n)
		*n = i;
}

int pt_procstatus__parse(const char *text, struct pt_procstatus *st)
{
	memset(st, 0, sizeof(*st));
	while (text && *text) {
		const char *eol = strchr(text, '\n');
		const char *v = strchr(text, ':');

		if (v && (!eol || v < eol)) {
			size_t klen = (size_t)(v - text);

			v++;
			while (*v == ' ' || *v == '\t')
				v++;
#define KEY(k) (klen == sizeof(k) - 1 && !strncmp(text, k, klen))
			if (KEY("State"))
				st->state = *v;
			else if (KEY("TracerPid"))
				st->tracer = atoi(v);
			else if (KEY("Uid")) {
				parse_ids(v, st->uid, 4, NULL);
				st->have_uid = true;
			} else if (KEY("Gid"))
				parse_ids(v, st->gid, 4, NULL);
			else if (KEY("Groups"))
				parse_ids(v, st->groups, 64, &st->ngroups);
			else if (KEY("SigBlk"))
				st->sigblk = strtoull(v, NULL, 16);
			else if (KEY("SigIgn"))
				st->sigign = strtoull(v, NULL, 16);
			else if (KEY("SigCgt"))
				st->sigcgt = strtoull(v, NULL, 16);
			else if (KEY("SigPnd"))
				st->sigpnd = strtoull(v, NULL, 16);
			else if (KEY("ShdPnd"))
				st->shdpnd = strtoull(v, NULL, 16);
			else if (KEY("x86_Thread_features")) {
				size_t l = eol ? (size_t)(eol - v) : strlen(v);
				char buf[128];

				snprintf(buf, sizeof(buf), "%.*s", (int)(l < 127 ? l : 127), v);
				st->shstk = strstr(buf, "shstk") != NULL;
			}
#undef KEY
		}
		text = eol ? eol + 1 : NULL;
	}
	return st->state ? 0 : -EINVAL;
}

int pt_safepoint__check_proc(const struct pt_procstatus *st, int pid, int yama, char *err,
			     size_t errlen)
{
	if (st->state == 'Z' || st->state == 'X') {
		snprintf(err, errlen, "process %d is a zombie (it has exited)", pid);
		return -ESRCH;
	}
	if (st->tracer) {
		snprintf(err, errlen,
			 "process %d is already traced by pid %d (a debugger or "
			 "another tracer): a process has one tracer at a time",
			 pid, st->tracer);
		return -EBUSY;
	}
	if (st->state == 'T' || st->state == 't') {
		snprintf(err, errlen,
			 "process %d is stopped (state %c): continue it first "
			 "(kill -CONT %d)",
			 pid, st->state, pid);
		return -EAGAIN;
	}
	if (yama == 3) {
		snprintf(err, errlen,
			 "ptrace is disabled on this machine (Yama ptrace_scope 3, "
			 "/proc/sys/kernel/yama/ptrace_scope; only a reboot lowers it)");
		return -EPERM;
	}
	if (st->shstk) {
		snprintf(err, errlen,
			 "process %d runs with x86 user shadow stacks (CET): a "
			 "call made from outside cannot return there",
			 pid);
		return -ENOTSUP;
	}
	return 0;
}

int pt_safepoint__stop_signal(const struct pt_procstatus *st)
{
	static const int tty[] = { SIGTSTP, SIGTTIN, SIGTTOU };
	uint64_t pending = st->sigpnd | st->shdpnd;

	if (pending & SIGBIT(SIGSTOP))
		return SIGSTOP;
	for (size_t i = 0; i < sizeof(tty) / sizeof(tty[0]); i++)
		if (pending & SIGBIT(tty[i]) & ~(st->sigcgt | st->sigign))
			return tty[i];
	return st->state == 'T' ? -1 : 0;
}

static bool safe_fd(const char *l)
{
	return l && (!strncmp(l, "pipe:[", 6) || !strncmp(l, "socket:[", 8) ||
		     !strncmp(l, "/dev/pts/", 9) || !strncmp(l, "/dev/tty", 8) ||
		     !strcmp(l, "/dev/console"));
}

enum pt_safe pt_safepoint__classify(const struct pt_sysline *sl, char state, const char *fdlink,
				    const struct pt_safe_opts *o, const char **why)
{
	const char *dummy;
	int i;

	if (!why)
		why = &dummy;
	if (state == 'Z' || state == 'X') {
		*why = "exiting";
		return PT_SAFE_NEVER;
	}
	if (state == 'T' || state == 't') {
		*why = "stopped";
		return PT_SAFE_NOT_NOW;
	}
	if (sl->running || state == 'R') {
		*why = "running";
		return PT_SAFE_NOT_NOW;
	}
	if (sl->nr < 0) {
		*why = "blocked outside a syscall";
		return PT_SAFE_NOT_NOW;
	}
	if (state == 'D') {
		*why = "in uninterruptible sleep";
		return PT_SAFE_NOT_NOW;
	}
	i = find(sl->nr);
	if (i < 0) {
		*why = "in a syscall that is not a wait";
		return PT_SAFE_NOT_NOW;
	}
	switch (sys_tab[i].kind) {
	case K_LOCK:
		*why = "in a lock wait (futex)";
		return PT_SAFE_NOT_NOW;
	case K_EPOLL:
		if (o && o->allow_epoll)
			break;
		*why = "in epoll_wait (it would see EINTR)";
		return PT_SAFE_NOT_NOW;
	case K_FD:
		if (!safe_fd(fdlink)) {
			*why = "reading a file that is not a pipe, socket or tty";
			return PT_SAFE_NOT_NOW;
		}
		break;
	case K_WAIT:
		break;
	default:
		*why = "in a syscall that is not a wait";
		return PT_SAFE_NOT_NOW;
	}
	*why = sys_tab[i].name;
	return PT_SAFE_YES;
}

bool pt_safepoint__regs_ok(long orig_rax, const struct pt_safe_opts *o)
{
	int i = find(orig_rax);

	if (i < 0)
		return false;
	switch (sys_tab[i].kind) {
	case K_WAIT:
	case K_FD:
		return true;
	case K_EPOLL:
		return o && o->allow_epoll;
	default:
		return false;
	}
}
