// SPDX-License-Identifier: BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim/ptagent.h"
#include "shim/ptgpu.h"
#include "segment.h"
#include "sigbus.h"
#include "tasks.h"
#include "users.h"

static const char *kind_of(const struct stat *st)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFDIR:
		return "a folder";
	case S_IFCHR:
	case S_IFBLK:
		return "a device";
	default:
		return st->st_nlink != 1 ? "a file with other hard links" : "a file";
	}
}

/*
 * Not the helper's file: say what is there and whose it is. Only the
 * target's user can make a segment for it, so anything else holding the
 * name was put there by someone else (a squatter): left alone, and no
 * helper can start in the process while it is there.
 */
static int squatted(const char *path, const struct stat *st, const struct stat *proc,
		    const char *what, char *err, size_t errlen)
{
	char who[96], owner[96];

	if (!proc || proc->st_uid == st->st_uid)
		snprintf(err, errlen,
			 "%s %s: it is %s (%s), not a segment: left alone; no agent can "
			 "start there while it is",
			 what, path, kind_of(st), pt_users__name(st->st_uid, who, sizeof(who)));
	else
		snprintf(err, errlen,
			 "%s %s: it is %s made by %s, not by the process's user (%s): another "
			 "user holds its name, left alone; no agent can start there while it "
			 "is (remove it as root)",
			 what, path, kind_of(st), pt_users__name(st->st_uid, who, sizeof(who)),
			 pt_users__name(proc->st_uid, owner, sizeof(owner)));
	return -EPERM;
}

int pt_segment__open(struct pt_segment *s, int pid, const char *prefix, size_t min, size_t max,
		     const char *what, const char *hint, char *err, size_t errlen)
{
	char path2[128], proc[32];
	struct stat st, pst;
	bool have_pst;
	int e;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->guard = -1;
	if (pid <= 0) {
		snprintf(err, errlen, "%s: bad pid %d", what, pid);
		return -EINVAL;
	}
	snprintf(proc, sizeof(proc), "/proc/%d", pid);
	have_pst = !stat(proc, &pst);
	snprintf(s->path, sizeof(s->path), "/proc/%d/root%s%d", pid, prefix, pt_tasks__ns_pid(pid));
	snprintf(path2, sizeof(path2), "%s%d", prefix, pid);
	/* O_NOFOLLOW: the last component is the target's to choose, and we
	 * write to what we open; O_NONBLOCK: a FIFO there must not hold us */
	s->fd = open(s->path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (s->fd < 0 && errno == ENOENT) {
		s->fd = open(path2, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (s->fd >= 0 || errno != ENOENT)
			snprintf(s->path, sizeof(s->path), "%s", path2);
	}
	if (s->fd < 0) {
		e = -errno;
		if (e == -ENOENT)
			snprintf(err, errlen, "no %s for pid %d (%s)%s%s", what, pid, s->path,
				 hint ? ": " : "", hint ? hint : "");
		else if ((e == -ELOOP || e == -ENXIO) && !lstat(s->path, &st))
			e = squatted(s->path, &st, have_pst ? &pst : NULL, what, err, errlen);
		else
			snprintf(err, errlen, "%s %s: %s", what, s->path, strerror(-e));
		return e;
	}
	if (fstat(s->fd, &st)) {
		e = -errno;
		snprintf(err, errlen, "%s %s: %s", what, s->path, strerror(-e));
		goto fail;
	}
	/* only the target's own user could have made it */
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || (have_pst && pst.st_uid != st.st_uid)) {
		e = squatted(s->path, &st, have_pst ? &pst : NULL, what, err, errlen);
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
	/* its user may truncate it while we read: a fault is a zero page, not
	 * our death (unguarded only when 1,024 segments are open) */
	s->guard = pt_sigbus__guard(s->map, s->len);
	return 0;
fail:
	close(s->fd);
	s->fd = -1;
	return e;
}

bool pt_segment__lost(struct pt_segment *s)
{
	struct stat st;

	if (s->lost || !s->map)
		return s->lost;
	if (pt_sigbus__faults(s->guard) || (!fstat(s->fd, &st) && (size_t)st.st_size < s->len))
		s->lost = true;
	return s->lost;
}

void pt_segment__close(struct pt_segment *s)
{
	pt_sigbus__unguard(s->guard);
	s->guard = -1;
	if (s->map)
		munmap(s->map, s->len);
	if (s->fd >= 0)
		close(s->fd);
	s->map = NULL;
	s->fd = -1;
}

int pt_segment__remove_stale(int dir, const char *name, const char *magic, size_t magic_len,
			     unsigned int min_age_s)
{
	char head[16] = { 0 }, zero[16] = { 0 };
	struct stat st, again;
	ssize_t n;
	int fd, e = 0;

	if (magic_len > sizeof(head))
		return -EINVAL;
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP || errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    st.st_mtime + (time_t)min_age_s > time(NULL))
		goto out;
	n = pread(fd, head, magic_len, 0);
	if (n < 0 || (n && memcmp(head, magic, magic_len) && memcmp(head, zero, (size_t)n)))
		goto out;
	/* held while we remove it: a helper that comes meanwhile waits for us
	 * (its own stale check retries), then makes a new one */
	if (flock(fd, LOCK_EX | LOCK_NB))
		goto out;
	/* the name still is the file we checked */
	if (fstatat(dir, name, &again, AT_SYMLINK_NOFOLLOW) || again.st_dev != st.st_dev ||
	    again.st_ino != st.st_ino)
		goto out;
	e = unlinkat(dir, name, 0) ? -errno : 1;
out:
	close(fd);
	return e;
}

/* prefix<digits> exactly */
static bool is_segment_name(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(name, prefix, n) || !name[n])
		return false;
	return strspn(name + n, "0123456789") == strlen(name + n);
}

int pt_segment__sweep(const char *path, unsigned int min_age_s)
{
	const char *py = strrchr(PTAG_SHM_PREFIX, '/') + 1,
		   *gpu = strrchr(PTGPU_SHM_PREFIX, '/') + 1;
	struct dirent *de;
	int fd, removed = 0;
	DIR *d;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		int e = 0;

		if (is_segment_name(de->d_name, py))
			e = pt_segment__remove_stale(fd, de->d_name, PTAG_MAGIC, PTAG_MAGIC_LEN,
						     min_age_s);
		else if (is_segment_name(de->d_name, gpu))
			e = pt_segment__remove_stale(fd, de->d_name, PTGPU_MAGIC, PTGPU_MAGIC_LEN,
						     min_age_s);
		removed += e > 0;
	}
	closedir(d);
	return removed;
}
