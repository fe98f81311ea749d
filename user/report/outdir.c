// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "outdir.h"
#include "util/users.h"

/* As many links as the kernel follows in one path (MAXSYMLINKS). */
#define MAX_LINKS 40

struct pt_outdir {
	int fd;	     /* O_DIRECTORY, held for the run: renames of the path do not move us */
	int pfd;     /* its parent, held: created folders are removed from it */
	int created; /* by us: removed at close when nothing was written into it */
	unsigned int written;
	uid_t uid; /* who owns what we create: the invoker under sudo, else us */
	gid_t gid;
	bool give; /* under sudo: chown what we create to uid, gid */
	char name[NAME_MAX + 1];
	char path[PATH_MAX];
};

/* A walk of the folders of one path, for one message. */
struct walk {
	struct pt_outdir *d;
	int links;
	char *why; /* what went wrong, and where */
	size_t whylen;
};

static int wfail(struct walk *w, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int wfail(struct walk *w, int e, const char *fmt, ...)
{
	va_list ap;

	if (!w->why[0]) {
		va_start(ap, fmt);
		vsnprintf(w->why, w->whylen, fmt, ap);
		va_end(ap);
	}
	return e;
}

/* What we create is the invoking user's under sudo (their files, in
 * their folders), else ours; fd open on it. */
static int give(const struct pt_outdir *d, int fd)
{
	return d->give && fchown(fd, d->uid, d->gid) ? -errno : 0;
}

/* Make the folder name in dir (0700, the invoker's); open it, not
 * through a link someone put there meanwhile. The fd, or -errno
 * (-EEXIST: it was there). */
static int make_dir(const struct pt_outdir *d, int dir, const char *name)
{
	struct stat st;
	int fd, e;

	if (mkdirat(dir, name, 0700))
		return -errno;
	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* ours, as we made it (not one swapped in by whoever can write dir) */
	if (fstat(fd, &st) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	e = give(d, fd);
	if (e) {
		close(fd);
		return e;
	}
	return fd;
}

static int walk_from(struct walk *w, int start, const char *path, bool create);

/*
 * The folder name in dir: a folder, or a link that root or the invoker
 * made (what they made, they mean; anyone else's could have been planted
 * to send root's files elsewhere), followed without creating anything;
 * with create, a missing folder is made. The fd (O_PATH), or -errno with
 * w->why said. shown: the path up to name, for the message.
 */
static int step(struct walk *w, int dir, const char *name, const char *shown, bool create)
{
	char target[PATH_MAX], who[96];
	struct stat st;
	ssize_t n;
	int fd, e;

	fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		fd = make_dir(w->d, dir, name);
		if (fd == -EEXIST) /* made meanwhile: look again */
			fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		else if (fd < 0)
			return wfail(w, fd, "%s: %s", shown, strerror(-fd));
	}
	if (fd < 0)
		return wfail(w, -errno, "%s: %s", shown, strerror(errno));
	if (fstat(fd, &st)) {
		e = -errno;
		close(fd);
		return wfail(w, e, "%s: %s", shown, strerror(-e));
	}
	if (S_ISDIR(st.st_mode))
		return fd;
	if (!S_ISLNK(st.st_mode)) {
		close(fd);
		return wfail(w, -ENOTDIR, "%s: %s", shown, strerror(ENOTDIR));
	}
	if (!pt_users__trusted(st.st_uid)) {
		close(fd);
		return wfail(w, -ELOOP,
			     "%s is a symbolic link made by %s: not followed, since anyone but "
			     "root%s could have planted it (give the folder it points to, if the "
			     "profile should go there)",
			     shown, pt_users__name(st.st_uid, who, sizeof(who)),
			     w->d->give ? " or you" : "");
	}
	if (++w->links > MAX_LINKS) {
		close(fd);
		return wfail(w, -ELOOP, "%s: %s", shown, strerror(ELOOP));
	}
	n = readlinkat(fd, "", target, sizeof(target) - 1);
	close(fd);
	if (n < 0)
		return wfail(w, -errno, "%s: %s", shown, strerror(errno));
	target[n] = 0;
	/* relative to the folder that holds the link; nothing created
	 * inside it (mkdir -p does not make a link's target either) */
	return walk_from(w, dir, target, false);
}

/* path's folders from start (absolute paths from /), one step each. */
static int walk_from(struct walk *w, int start, const char *path, bool create)
{
	char buf[PATH_MAX], shown[PATH_MAX];
	char *save = NULL, *c;
	size_t len = 0;
	int fd, next;

	if (strlen(path) >= sizeof(buf))
		return wfail(w, -ENAMETOOLONG, "%s", strerror(ENAMETOOLONG));
	snprintf(buf, sizeof(buf), "%s", path);
	fd = openat(path[0] == '/' ? AT_FDCWD : start, path[0] == '/' ? "/" : ".",
		    O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return wfail(w, -errno, "%s: %s", path[0] == '/' ? "/" : ".", strerror(errno));
	shown[0] = 0;
	if (path[0] == '/')
		len = (size_t)snprintf(shown, sizeof(shown), "/");
	for (c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		len += (size_t)snprintf(shown + len, len < sizeof(shown) ? sizeof(shown) - len : 0,
					"%s%s", len && shown[len - 1] != '/' ? "/" : "", c);
		if (len >= sizeof(shown))
			len = sizeof(shown) - 1;
		next = step(w, fd, c, shown, create);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	return fd;
}

/* Can we create files in fd? (Permissions, a read-only mount, a full
 * disk are all found now rather than after the run.) */
static int check_writable(int fd)
{
	char name[64];
	int f, e;

	snprintf(name, sizeof(name), ".proftrace-check-%d", (int)getpid());
	f = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f < 0)
		return -errno;
	e = write(f, "x", 1) == 1 ? 0 : -errno;
	close(f);
	unlinkat(fd, name, 0);
	return e ? e : 0;
}

static struct pt_outdir *new_outdir(void)
{
	struct pt_outdir *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->fd = d->pfd = -1;
	d->give = !pt_users__invoker(&d->uid, &d->gid);
	return d;
}

/*
 * The folder name in parent, as the run's: made (0700, the invoker's;
 * with unique, name-2, name-3, ... until one is new) or, without unique,
 * an existing folder that is not a link. 0 with d->fd, d->name, or -errno.
 */
static int open_last(struct pt_outdir *d, const char *name, int unique)
{
	int fd;

	snprintf(d->name, sizeof(d->name), "%s", name);
	for (int i = 1;; i++) {
		fd = make_dir(d, d->pfd, d->name);
		if (fd >= 0) {
			d->created = 1;
			break;
		}
		if (fd != -EEXIST)
			return fd;
		if (!unique) {
			fd = openat(d->pfd, d->name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			/* O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR; say what it is */
			if (fd < 0) {
				struct stat st;
				int e = -errno;

				if ((e == -ENOTDIR || e == -ELOOP) &&
				    !fstatat(d->pfd, d->name, &st, AT_SYMLINK_NOFOLLOW) &&
				    S_ISLNK(st.st_mode))
					return -ELOOP;
				return e;
			}
			break;
		}
		if (i == 1000)
			return -EEXIST;
		if (snprintf(d->name, sizeof(d->name), "%s-%d", name, i + 1) >=
		    (int)sizeof(d->name))
			return -ENAMETOOLONG;
	}
	d->fd = fd;
	return 0;
}

int pt_outdir__open(struct pt_outdir **out, const char *path, int unique, char *err, size_t errlen)
{
	char parent[PATH_MAX], last[PATH_MAX], why[PATH_MAX + 256] = "";
	struct walk w = { .why = why, .whylen = sizeof(why) };
	struct pt_outdir *d;
	char *slash;
	size_t n;
	int e;

	*out = NULL;
	d = new_outdir();
	if (!d)
		return -ENOMEM;
	w.d = d;
	n = strlen(path);
	while (n > 1 && path[n - 1] == '/') /* "out/" is out */
		n--;
	if (snprintf(d->path, sizeof(d->path), "%.*s", (int)n, path) >= (int)sizeof(d->path) - 8) {
		e = -ENAMETOOLONG;
		goto fail;
	}
	snprintf(parent, sizeof(parent), "%s", d->path);
	slash = strrchr(parent, '/');
	if (!slash) {
		snprintf(last, sizeof(last), "%s", parent);
		snprintf(parent, sizeof(parent), ".");
	} else {
		snprintf(last, sizeof(last), "%s", slash + 1);
		slash[slash == parent] = 0; /* "/x": parent "/" */
	}
	if (!last[0] || !strcmp(last, ".") || !strcmp(last, "..")) {
		/* "/", ".", "a/..": a folder that is there, named by where it is */
		d->fd = walk_from(&w, AT_FDCWD, d->path, false);
		e = d->fd < 0 ? d->fd : unique ? -EEXIST : 0;
		if (!e)
			e = check_writable(d->fd);
		if (!e) {
			*out = d;
			return 0;
		}
		goto fail;
	}
	if (strlen(last) > NAME_MAX - 8) {
		e = -ENAMETOOLONG;
		goto fail;
	}
	d->pfd = walk_from(&w, AT_FDCWD, parent, true);
	if (d->pfd < 0) {
		e = d->pfd;
		goto fail;
	}
	e = open_last(d, last, unique);
	if (!e && strcmp(d->name, last)) { /* made unique: its name in the path */
		size_t at = strlen(d->path) - strlen(last);

		snprintf(d->path + at, sizeof(d->path) - at, "%s", d->name);
	}
	if (!e)
		e = check_writable(d->fd);
	if (!e) {
		*out = d;
		return 0;
	}
fail:
	if (why[0])
		snprintf(err, errlen, "output folder %s: %s", d->path, why);
	else
		snprintf(err, errlen, "output folder %s: %s%s", d->path,
			 e == -ELOOP ? "it is a symbolic link" : strerror(-e),
			 e == -ELOOP ? " (give the folder it points to with -o)"
			 : e == -EACCES || e == -EROFS || e == -EPERM
				 ? " (hint: -o a folder you can write)"
				 : "");
	pt_outdir__close(d);
	return e;
}

int pt_outdir__fallback(struct pt_outdir **out, const char *base, char *err, size_t errlen)
{
	const char *dirs[] = { getenv("TMPDIR"), "/var/tmp", "/tmp", "/dev/shm" };
	int e = -ENOENT;

	*out = NULL;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char why[PATH_MAX + 256] = "", name[NAME_MAX + 1];
		struct walk w = { .why = why, .whylen = sizeof(why) };
		struct pt_outdir *d;

		if (!dirs[i] || dirs[i][0] != '/')
			continue;
		d = new_outdir();
		if (!d)
			return -ENOMEM;
		w.d = d;
		/* the folders there are not ours to make: they must be */
		d->pfd = walk_from(&w, AT_FDCWD, dirs[i], false);
		e = d->pfd < 0 ? d->pfd : -EEXIST;
		/* as mkdtemp(), in the folder the walk checked */
		for (int k = 0; k < 100 && e == -EEXIST; k++) {
			uint64_t r = 0;

			if (getrandom(&r, sizeof(r), 0) != sizeof(r))
				r = (uint64_t)time(NULL) * 6364136223846793005ull + (uint64_t)k;
			snprintf(name, sizeof(name), "%s-%06llx", base,
				 (unsigned long long)(r & 0xffffff));
			e = open_last(d, name, 0) || !d->created ? -EEXIST : 0;
			if (e && d->fd >= 0) { /* someone's folder of that name */
				close(d->fd);
				d->fd = -1;
			}
		}
		if (!e) {
			snprintf(d->path, sizeof(d->path), "%s/%s", dirs[i], d->name);
			e = check_writable(d->fd);
		}
		if (!e) {
			*out = d;
			return 0;
		}
		pt_outdir__close(d); /* created, nothing written: removed */
	}
	snprintf(err, errlen, "no fallback folder could be made: %s", strerror(-e));
	return e;
}

void pt_outdir__close(struct pt_outdir *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	/* a run that stopped before writing leaves no empty folder behind
	 * (removes only an empty one, from the parent we walked) */
	if (d->created && !d->written && d->pfd >= 0)
		unlinkat(d->pfd, d->name, AT_REMOVEDIR);
	if (d->pfd >= 0)
		close(d->pfd);
	free(d);
}

const char *pt_outdir__path(const struct pt_outdir *d)
{
	return d->path;
}

/* A FILE on fd that remembers the first write's errno: an emitter that
 * sees ferror() says -EIO, and a full disk must be said as such. */
struct wfile {
	int fd;
	int err;
};

static ssize_t wfile_write(void *c, const char *buf, size_t n)
{
	struct wfile *w = c;
	size_t done = 0;

	while (done < n) {
		ssize_t k = write(w->fd, buf + done, n - done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (!w->err)
				w->err = k < 0 ? errno : EIO;
			break;
		}
		done += (size_t)k;
	}
	return (ssize_t)done; /* short: the stream's error flag */
}

static int wfile_close(void *c)
{
	struct wfile *w = c;

	if (close(w->fd) && !w->err)
		w->err = errno;
	return w->err ? -1 : 0;
}

int pt_outdir__write(struct pt_outdir *d, const char *name, int (*write)(FILE *f, const void *ctx),
		     const void *ctx, char *err, size_t errlen)
{
	cookie_io_functions_t io = { .write = wfile_write, .close = wfile_close };
	char tmp[NAME_MAX + 1];
	uint64_t r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	struct wfile wf = { .fd = -1 };
	int fd = -1, e;
	FILE *f;

	for (int i = 0; i < 100 && fd < 0; i++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		snprintf(tmp, sizeof(tmp), ".%s.%06llx", name, (unsigned long long)(r >> 40));
		/* 0600: profiles hold source lines, argument values, paths */
		fd = openat(d->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = -errno;
		goto fail;
	}
	wf.fd = fd;
	e = give(d, fd);
	f = e ? NULL : fopencookie(&wf, "w", io);
	if (!f) {
		e = e ? e : -errno;
		close(fd);
		unlinkat(d->fd, tmp, 0);
		goto fail;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	e = write(f, ctx);
	if (!e && (fflush(f) || ferror(f)))
		e = -EIO;
	if (fclose(f) && !e)
		e = -EIO;
	/* the cause the emitter could not see (ENOSPC, EDQUOT, EFBIG) */
	if (e == -EIO && wf.err)
		e = -wf.err;
	if (!e && renameat(d->fd, tmp, d->fd, name))
		e = -errno;
	if (e) {
		unlinkat(d->fd, tmp, 0);
		goto fail;
	}
	d->written++;
	return 0;
fail:
	snprintf(err, errlen, "cannot write %s/%s: %s%s", d->path, name, strerror(-e),
		 e == -ENOSPC || e == -EDQUOT ? " (the disk is full)" : "");
	return e;
}
