// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "outdir.h"

struct pt_outdir {
	int fd;	     /* O_DIRECTORY, held for the run: renames of the path do not move us */
	int created; /* by us: removed at close when nothing was written into it */
	unsigned int written;
	char path[PATH_MAX];
};

/* Create the folders of path that are missing. Existing components are
 * the user's (a symlinked /home is fine); the kernel's protected_symlinks
 * guards the world-writable sticky ones (/tmp). */
static int mkdirs(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (!n || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
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

static int open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd >= 0)
		return fd;
	/* O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR; say what it is */
	if ((errno == ENOTDIR || errno == ELOOP) && !lstat(path, &st) && S_ISLNK(st.st_mode))
		return -ELOOP;
	return -errno;
}

int pt_outdir__open(struct pt_outdir **out, const char *path, int unique, char *err, size_t errlen)
{
	struct pt_outdir *d;
	int e, fd = -1;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->fd = -1;
	if (snprintf(d->path, sizeof(d->path), "%s", path) >= (int)sizeof(d->path) - 8) {
		e = -ENAMETOOLONG;
		goto fail;
	}
	e = mkdirs(path);
	if (e)
		goto fail;
	for (int i = 1;; i++) {
		if (!mkdir(d->path, 0755)) {
			d->created = 1;
			break;
		}
		if (errno != EEXIST) {
			e = -errno;
			goto fail;
		}
		if (!unique)
			break;
		if (i == 1000) {
			e = -EEXIST;
			goto fail;
		}
		snprintf(d->path, sizeof(d->path), "%s-%d", path, i + 1);
	}
	fd = open_dir(d->path);
	if (fd < 0) {
		e = fd;
		goto fail;
	}
	d->fd = fd;
	e = check_writable(fd);
	if (e)
		goto fail;
	*out = d;
	return 0;
fail:
	snprintf(err, errlen, "output folder %s: %s%s", d->path,
		 e == -ELOOP ? "it is a symbolic link" : strerror(-e),
		 e == -ELOOP ? " (give the folder it points to with -o)"
		 : e == -EACCES || e == -EROFS || e == -EPERM ? " (hint: -o a folder you can write)"
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
		struct pt_outdir *d;

		if (!dirs[i] || dirs[i][0] != '/')
			continue;
		d = calloc(1, sizeof(*d));
		if (!d)
			return -ENOMEM;
		snprintf(d->path, sizeof(d->path), "%s/%s-XXXXXX", dirs[i], base);
		if (!mkdtemp(d->path)) {
			e = -errno;
			free(d);
			continue;
		}
		d->created = 1;
		d->fd = open_dir(d->path);
		if (d->fd >= 0 && !(e = check_writable(d->fd))) {
			*out = d;
			return 0;
		}
		if (d->fd < 0)
			e = d->fd;
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
	 * (rmdir removes only an empty one) */
	if (d->created && !d->written)
		rmdir(d->path);
	free(d);
}

const char *pt_outdir__path(const struct pt_outdir *d)
{
	return d->path;
}

int pt_outdir__write(struct pt_outdir *d, const char *name, int (*write)(FILE *f, const void *ctx),
		     const void *ctx, char *err, size_t errlen)
{
	char tmp[NAME_MAX + 1];
	uint64_t r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	int fd = -1, e;
	FILE *f;

	for (int i = 0; i < 100 && fd < 0; i++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		snprintf(tmp, sizeof(tmp), ".%s.%06llx", name, (unsigned long long)(r >> 40));
		fd = openat(d->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = -errno;
		goto fail;
	}
	f = fdopen(fd, "w");
	if (!f) {
		e = -errno;
		close(fd);
		unlinkat(d->fd, tmp, 0);
		goto fail;
	}
	e = write(f, ctx);
	if (!e && (fflush(f) || ferror(f)))
		e = errno ? -errno : -EIO;
	if (fclose(f) && !e)
		e = -errno;
	if (!e && renameat(d->fd, tmp, d->fd, name))
		e = -errno;
	if (e) {
		unlinkat(d->fd, tmp, 0);
		goto fail;
	}
	d->written++;
	return 0;
fail:
	snprintf(err, errlen, "cannot write %s/%s: %s", d->path, name, strerror(-e));
	return e;
}
