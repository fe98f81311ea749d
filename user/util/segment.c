// SPDX-License-Identifier: BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim/memseg.h"
#include "segment.h"
#include "sigbus.h"
#include "tasks.h"
#include "users.h"

/* The process's user ids (real, effective, saved, file system: the Uid
 * line of /proc/PID/status; the owner of /proc/PID is root for a process
 * that changed its ids without exec). 0 and uids[4]; -errno. */
static int proc_uids(int pid, unsigned int uids[4])
{
	char path[64], line[256];
	int e = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u %u %u %u", &uids[0], &uids[1], &uids[2], &uids[3]) == 4) {
			e = 0;
			break;
		}
	fclose(f);
	return e;
}

/* What is at fd (ours: a reopen of the target's fd) when it is not a
 * helper's segment, and *e: -EPERM, or -EAGAIN when its helper may still
 * be making it; NULL when it is one. uids: the process's, or NULL. */
static const char *not_a_segment(int fd, const struct stat *st, const unsigned int *uids,
				 const struct pt_segment_kind *k, char *buf, size_t len, int *e)
{
	char who[96], owner[96];
	int seals;

	*e = -EPERM;
	if (!S_ISREG(st->st_mode))
		return "not a plain memory file";
	/* only the process's user could have made it (or handed it in); its
	 * helper made it with the fsuid of the moment */
	if (uids && st->st_uid != uids[0] && st->st_uid != uids[1] && st->st_uid != uids[2] &&
	    st->st_uid != uids[3]) {
		snprintf(buf, len, "made by %s, not by the process's user (%s)",
			 pt_users__name(st->st_uid, who, sizeof(who)),
			 pt_users__name(uids[1], owner, sizeof(owner)));
		return buf;
	}
	/* sealed: nobody can shrink it under our mapping (SIGBUS). A helper
	 * seals it once it has its size (shim/memseg.h): seen before that
	 * (F_SEAL_SEAL not set yet), it may be one being made, so the caller
	 * may look again; with F_SEAL_SEAL set it never will be sealed. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return "not a memfd that can be sealed, as our helpers' are";
	if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
		if (!(seals & F_SEAL_SEAL)) {
			*e = -EAGAIN;
			return "not sealed against resizing yet (its helper may be making it)";
		}
		return "not sealed against resizing, as our helpers' are";
	}
	if ((size_t)st->st_size < k->min || (size_t)st->st_size > k->max) {
		snprintf(buf, len, "%lld bytes, not a segment size", (long long)st->st_size);
		return buf;
	}
	return NULL;
}

/* What one look found, over every candidate. */
struct look {
	const struct pt_segment_kind *k;
	int pid;
	uint32_t ns; /* the process's pid in its namespace */
	const unsigned int *uids;
	char want[96]; /* "/memfd:<name> (deleted)" */
	unsigned int parent;
	int bad_e;
	char bad[512];
};

/*
 * One candidate: path (under /proc/PID) that read as L->want a moment ago,
 * named label in messages. 1: it is the segment (s->fd, s->len, s->path
 * set); 0: not (why kept in L).
 */
static int consider(struct pt_segment *s, struct look *L, const char *path, const char *label)
{
	char self[64], why[256];
	struct stat st;
	const char *no;
	uint32_t owner;
	int fd, e;

	/* O_NONBLOCK: whatever took the number meanwhile must not hold us;
	 * what we opened is checked again below */
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		L->bad_e = -errno;
		snprintf(L->bad, sizeof(L->bad), "%s: %s", label, strerror(errno));
		return 0;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (!pt_memseg__link_is(AT_FDCWD, self, L->want) || fstat(fd, &st)) {
		close(fd); /* the number was reused before we opened it */
		return 0;
	}
	no = not_a_segment(fd, &st, L->uids, L->k, why, sizeof(why), &e);
	if (no) {
		L->bad_e = e;
		snprintf(L->bad, sizeof(L->bad), "%s is %.120s: %s", label, L->want + 1, no);
		close(fd);
		return 0;
	}
	/* a parent's, held across fork: its pid is not this process's */
	if (pread(fd, why, L->k->magic_len, 0) == (ssize_t)L->k->magic_len &&
	    !memcmp(why, L->k->magic, L->k->magic_len) &&
	    pread(fd, &owner, sizeof(owner), (off_t)L->k->pid_off) == (ssize_t)sizeof(owner) &&
	    owner != L->ns) {
		L->parent = owner;
		close(fd);
		return 0;
	}
	s->fd = fd;
	s->len = (size_t)st.st_size;
	snprintf(s->path, sizeof(s->path), "/proc/%d/%.64s (%.96s)", L->pid, label, L->want + 1);
	return 1;
}

/* Among the process's open files: where its helper keeps it. */
static int look_fds(struct pt_segment *s, struct look *L)
{
	char path[64], label[32];
	struct dirent *de;
	int found = 0, e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", L->pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (!pt_memseg__link_is(dirfd(d), de->d_name, L->want))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%.16s", L->pid, de->d_name);
		snprintf(label, sizeof(label), "fd/%.16s", de->d_name);
		found = consider(s, L, path, label);
	}
	e = found ? 0 : -ENOENT;
	closedir(d);
	return e;
}

/*
 * Among its mappings, when it holds no fd of it: a program that closes
 * every fd it did not open (a daemon's start, python-daemon) closes the
 * helper's too, and the mapping keeps the memfd alive. map_files needs
 * CAP_SYS_ADMIN; without it this finds nothing, and says so.
 */
static int look_maps(struct pt_segment *s, struct look *L)
{
	char path[96], line[512], label[64];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", L->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		size_t n = strlen(line), w = strlen(L->want);
		char range[40];

		if (n && line[n - 1] == '\n')
			line[--n] = 0;
		/* the whole segment, mapped from its start, as the helpers map it */
		if (n <= w || strcmp(line + n - w, L->want) || line[n - w - 1] != ' ' ||
		    sscanf(line, "%lx-%lx %*4s %lx", &lo, &hi, &off) != 3 || off)
			continue;
		snprintf(range, sizeof(range), "%lx-%lx", lo, hi);
		snprintf(path, sizeof(path), "/proc/%d/map_files/%s", L->pid, range);
		snprintf(label, sizeof(label), "map_files/%s", range);
		found = consider(s, L, path, label);
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

int pt_segment__open(struct pt_segment *s, int pid, const struct pt_segment_kind *k, char *err,
		     size_t errlen)
{
	struct look L = { .k = k, .pid = pid };
	unsigned int uids[4];
	int e;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->guard = -1;
	if (pid <= 0) {
		snprintf(err, errlen, "%s: bad pid %d", k->what, pid);
		return -EINVAL;
	}
	L.ns = (uint32_t)pt_tasks__ns_pid(pid);
	L.uids = proc_uids(pid, uids) ? NULL : uids;
	pt_memseg__link(L.want, sizeof(L.want), k->name);
	e = look_fds(s, &L);
	if (e && e != -ENOENT) {
		snprintf(err, errlen, "%s of pid %d: /proc/%d/fd: %s", k->what, pid, pid,
			 strerror(-e));
		return e;
	}
	if (e)
		look_maps(s, &L);
	if (s->fd < 0) {
		if (L.bad_e) {
			snprintf(err, errlen, "%s of pid %d: %s; left alone", k->what, pid, L.bad);
			return L.bad_e;
		}
		if (L.parent)
			snprintf(err, errlen,
				 "no %s of pid %d's own: the one it holds is its parent's (pid %u "
				 "there; it forked without exec)%s%s",
				 k->what, pid, L.parent, k->hint ? ": " : "",
				 k->hint ? k->hint : "");
		else
			snprintf(err, errlen,
				 "no %s in pid %d (no memfd \"%s\" among its open files or "
				 "mappings)%s%s",
				 k->what, pid, k->name, k->hint ? ": " : "",
				 k->hint ? k->hint : "");
		return -ENOENT;
	}
	s->map = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		e = -errno;
		snprintf(err, errlen, "%s %s: mmap: %s", k->what, s->path, strerror(-e));
		close(s->fd);
		s->fd = -1;
		return e;
	}
	/* sealed, so it cannot shrink; guarded all the same (a fault is a
	 * zero page, not our death; unguarded only when 1,024 are open) */
	s->guard = pt_sigbus__guard(s->map, s->len);
	return 0;
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

int pt_segment__wait(int (*open)(void *ctx, char *why, size_t len), void *ctx, unsigned int ms,
		     char *why, size_t len)
{
	for (unsigned int t = 0;; t += 10) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		int e = open(ctx, why, len);

		if (!e || e == -ENOMEM || e == -EPERM || t >= ms)
			return e;
		nanosleep(&ts, NULL);
	}
}
