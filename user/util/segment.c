// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "segment.h"
#include "tasks.h"

int pt_segment__open(struct pt_segment *s, int pid, const char *prefix, size_t min, size_t max,
		     const char *what, const char *hint, char *err, size_t errlen)
{
	char path2[128], proc[32];
	struct stat st, pst;
	int e;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	if (pid <= 0) {
		snprintf(err, errlen, "%s: bad pid %d", what, pid);
		return -EINVAL;
	}
	snprintf(s->path, sizeof(s->path), "/proc/%d/root%s%d", pid, prefix, pt_tasks__ns_pid(pid));
	snprintf(path2, sizeof(path2), "%s%d", prefix, pid);
	/* O_NOFOLLOW: the last component is the target's to choose, and we
	 * write to what we open. */
	s->fd = open(s->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (s->fd < 0) {
		s->fd = open(path2, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (s->fd < 0) {
			e = -errno;
			if (e == -ENOENT)
				snprintf(err, errlen, "no %s for pid %d (%s)%s%s", what, pid,
					 s->path, hint ? ": " : "", hint ? hint : "");
			else
				snprintf(err, errlen, "%s %s: %s", what, s->path, strerror(-e));
			return e;
		}
		snprintf(s->path, sizeof(s->path), "%s", path2);
	}
	if (fstat(s->fd, &st)) {
		e = -errno;
		snprintf(err, errlen, "%s %s: %s", what, s->path, strerror(-e));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
		snprintf(err, errlen, "%s %s: not a plain file", what, s->path);
		e = -EPERM;
		goto fail;
	}
	/* only the target's own user could have made it */
	snprintf(proc, sizeof(proc), "/proc/%d", pid);
	if (!stat(proc, &pst) && pst.st_uid != st.st_uid) {
		snprintf(err, errlen, "%s %s: owned by uid %u, the process runs as %u", what,
			 s->path, (unsigned)st.st_uid, (unsigned)pst.st_uid);
		e = -EPERM;
		goto fail;
	}
	if ((size_t)st.st_size < min || (size_t)st.st_size > max) {
		snprintf(err, errlen, "%s %s: %lld bytes is not a segment size", what, s->path,
			 (long long)st.st_size);
		e = -EPROTO;
		goto fail;
	}
	/* a live helper holds LOCK_EX: getting LOCK_SH means nobody does */
	if (!flock(s->fd, LOCK_SH | LOCK_NB)) {
		flock(s->fd, LOCK_UN);
		snprintf(err, errlen, "%s %s: left by a process that is gone", what, s->path);
		e = -ESTALE;
		goto fail;
	}
	s->map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		e = -errno;
		snprintf(err, errlen, "%s %s: mmap: %s", what, s->path, strerror(-e));
		goto fail;
	}
	s->len = (size_t)st.st_size;
	return 0;
fail:
	close(s->fd);
	s->fd = -1;
	return e;
}

void pt_segment__close(struct pt_segment *s)
{
	if (s->map)
		munmap(s->map, s->len);
	if (s->fd >= 0)
		close(s->fd);
	s->map = NULL;
	s->fd = -1;
}
