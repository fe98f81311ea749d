// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracee.h"
#include "util/users.h"

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int e = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		e = -EIO;
	else
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
	return e;
}

int pt_tracee__open(struct pt_tracee *t, int pid, char *err, size_t errlen)
{
	char path[64];
	ssize_t n;
	char *del;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (read_line(path, t->comm, sizeof(t->comm))) {
		snprintf(err, errlen,
			 "no such process: %d (hint: check the PID with `ps -p %d` or `pgrep -f "
			 "NAME`)",
			 pid, pid);
		return -ESRCH;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, t->exe, sizeof(t->exe) - 1);
	if (n < 0) {
		int e = -errno;
		char hint[512];

		if (e == -EACCES || e == -EPERM)
			snprintf(err, errlen, "cannot inspect process %d: %s (hint: %s)", pid,
				 strerror(-e), pt_users__denied_hint(pid, hint, sizeof(hint)));
		else
			snprintf(err, errlen,
				 "cannot inspect process %d: %s (is it a kernel thread "
				 "or exiting?)",
				 pid, strerror(-e));
		return e == -ENOENT ? -ESRCH : e;
	}
	t->exe[n] = 0;
	del = strstr(t->exe, " (deleted)");
	if (del && del[10] == 0)
		*del = 0;
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	n = readlink(path, t->root, sizeof(t->root) - 1);
	t->root[n > 0 ? n : 0] = 0;
	if (!strcmp(t->root, "/"))
		t->root[0] = 0;
	return 0;
}

int pt_tracee__pidfd(const struct pt_tracee *t)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, t->pid, 0);

	return fd < 0 ? -errno : (int)fd;
#else
	return -ENOSYS;
#endif
}

bool pt_tracee__alive(const struct pt_tracee *t)
{
	return kill(t->pid, 0) == 0 || errno == EPERM;
}

const char *pt_tracee__view(const char *root, const char *path)
{
	size_t n = root ? strlen(root) : 0;

	if (n && !strncmp(path, root, n) && path[n] == '/')
		return path + n;
	return path;
}
