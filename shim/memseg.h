/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared segment one of our helpers (the CUPTI shim, the Python agent)
 * makes inside its process: an anonymous memfd named PTGPU_MEMFD_NAME or
 * PTAG_MEMFD_NAME, sealed so that it can neither shrink nor grow, kept open
 * (close-on-exec) for the process's life. proftrace finds it among the
 * process's open files (/proc/PID/fd) and reopens it there.
 *
 * Why not a file in /dev/shm: a name there is one any local user can
 * predict and create first (a link, a FIFO, a file of theirs) for another
 * user's process, and the target's own user could truncate it under
 * proftrace's mapping (SIGBUS). /proc/PID/fd is a channel only the
 * process's user and root share; the seals make truncation impossible;
 * the kernel frees the memory with the last reference (nothing is left
 * behind by a killed process); and a container needs no shared /dev/shm.
 *
 * Header-only: both helpers include it, each built on its own.
 */
#ifndef PT_MEMSEG_H
#define PT_MEMSEG_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#endif

/* The seals a segment carries (proftrace refuses one without them). */
#define PT_MEMSEG_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW)

/* What the link of an fd of segment name reads (/proc/PID/fd/N). */
static inline void pt_memseg__link(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "/memfd:%s (deleted)", name);
}

/* Does the link ent of dir (an fd; AT_FDCWD for a path) read want? */
static inline int pt_memseg__link_is(int dir, const char *ent, const char *want)
{
	char link[128];
	ssize_t n = readlinkat(dir, ent, link, sizeof(link) - 1);

	if (n <= 0)
		return 0;
	link[n] = 0;
	return !strcmp(link, want);
}

/*
 * Is a segment named name, whose header starts with magic and has our pid
 * as the u32 at pid_off, already open in this process (a second copy of
 * the helper loaded from another path)? An inherited one (a parent's,
 * across fork) has another pid and does not count.
 */
static inline int pt_memseg__ours_open(const char *name, const char *magic, size_t magic_len,
				       size_t pid_off)
{
	unsigned char head[256];
	struct dirent *d;
	char want[96];
	uint32_t pid;
	int found = 0;
	DIR *dir;

	if (magic_len + 1 > sizeof(head) || pid_off + sizeof(pid) > sizeof(head))
		return 0;
	pt_memseg__link(want, sizeof(want), name);
	dir = opendir("/proc/self/fd");
	if (!dir)
		return 0;
	while (!found && (d = readdir(dir))) {
		int fd = atoi(d->d_name);

		if (d->d_name[0] < '0' || d->d_name[0] > '9' || fd == dirfd(dir))
			continue;
		if (!pt_memseg__link_is(dirfd(dir), d->d_name, want))
			continue;
		if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head))
			continue;
		memcpy(&pid, head + pid_off, sizeof(pid));
		found = !memcmp(head, magic, magic_len) && pid == (uint32_t)getpid();
	}
	closedir(dir);
	return found;
}

/*
 * Make the segment: size bytes of zeros, reserved now (a memory limit
 * fails here, not as SIGBUS on a write later), sealed, mapped shared.
 * 0 and *memp, *fdp set; -errno.
 */
static inline int pt_memseg__create(const char *name, size_t size, void **memp, int *fdp)
{
	void *mem;
	int fd, e;

	/* the raw call: helpers load into processes with older C libraries */
	fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	e = posix_fallocate(fd, 0, (off_t)size);
	if (e) {
		e = -e;
		goto fail;
	}
	if (fcntl(fd, F_ADD_SEALS, PT_MEMSEG_SEALS)) {
		e = -errno;
		goto fail;
	}
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		e = -errno;
		goto fail;
	}
	*memp = mem;
	*fdp = fd;
	return 0;
fail:
	close(fd);
	return e;
}

/*
 * Does fd still stand for the segment whose file is (dev, ino)? A program
 * may close every fd it did not open (a daemon's start) and reuse the
 * number: then it is not ours to map or to close.
 */
static inline int pt_memseg__same(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) && st.st_dev == dev && st.st_ino == ino;
}

#endif
