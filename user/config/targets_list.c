// SPDX-License-Identifier: BSD-2-Clause
/*
 * targets_list: find the bundled *.conf of targets/, list them with their
 * one-line descriptions, and turn `--targets vllm` into the path of
 * targets/vllm.conf.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "targets_list.h"
#include "util/helpers.h"
#include "util/util.h"

#define CONF_EXT ".conf"
#define CONF_EXT_LEN (sizeof(CONF_EXT) - 1)

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool ends_with_conf(const char *s, size_t n)
{
	return n > CONF_EXT_LEN && memcmp(s + n - CONF_EXT_LEN, CONF_EXT, CONF_EXT_LEN) == 0;
}

int pt_targets__dir(char *buf, size_t len)
{
	/* Build tree first, then install layout, then a binary one level
	 * below the tree (.output-asan/proftrace). */
	static const char *const rel[] = { "/targets", "/../share/proftrace/targets",
					   "/../targets" };
	const char *env = getenv(PT_TARGETS_DIR_ENV);
	char exe[PATH_MAX];
	int e;

	if (env && *env) {
		if ((size_t)snprintf(buf, len, "%s", env) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	e = pt_exe_dir(exe, sizeof(exe));
	if (e)
		return e;
	for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
		if ((size_t)snprintf(buf, len, "%s%s", exe, rel[i]) >= len)
			return -ENAMETOOLONG;
		if (is_dir(buf))
			return 0;
	}
	/* none: name the build-tree candidate in messages */
	snprintf(buf, len, "%s%s", exe, rel[0]);
	return -ENOENT;
}

int pt_targets__describe(const char *path, char *buf, size_t len)
{
	const char *base = strrchr(path, '/');
	char line[4096 + 2];
	FILE *f;
	int ret = -ENODATA;

	base = base ? base + 1 : path;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		size_t blen = strlen(base);

		p += strspn(p, " \t");
		if (*p == '\n' || *p == '\r' || !*p)
			continue; /* blank lines before the first comment */
		if (*p != '#')
			break;
		p += strspn(p, "#");
		p += strspn(p, " \t");
		/* "# vllm.conf: what it is" -> "what it is" */
		if (strncmp(p, base, blen) == 0 && p[blen] == ':') {
			p += blen + 1;
			p += strspn(p, " \t");
		}
		end = p + strlen(p);
		while (end > p &&
		       (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
			*--end = 0;
		if (*p) {
			snprintf(buf, len, "%s", p);
			ret = 0;
		}
		break;
	}
	if (ferror(f))
		ret = -EIO;
	fclose(f);
	return ret;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int pt_targets__list(const char *dir, FILE *out)
{
	char dbuf[PATH_MAX] = "?", path[PATH_MAX], desc[4096];
	char **names = NULL;
	size_t n = 0, cap = 0, width = 0;
	struct dirent *de;
	DIR *d;
	int e = 0;

	if (!dir) {
		e = pt_targets__dir(dbuf, sizeof(dbuf));
		if (e && e != -ENOENT)
			goto no_dir;
		dir = dbuf;
	}
	d = opendir(dir);
	if (!d) {
		e = -errno;
		goto no_dir;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **nn;

		if (de->d_name[0] == '.' || !ends_with_conf(de->d_name, len))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
			    sizeof(path) ||
		    !is_file(path))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				e = -ENOMEM;
				break;
			}
			names = nn;
		}
		names[n] = strndup(de->d_name, len - CONF_EXT_LEN);
		if (!names[n]) {
			e = -ENOMEM;
			break;
		}
		if (len - CONF_EXT_LEN > width)
			width = len - CONF_EXT_LEN;
		n++;
	}
	closedir(d);
	if (!e) {
		if (n) /* qsort(NULL, 0, ...) is undefined */
			qsort(names, n, sizeof(*names), name_cmp);
		for (size_t i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/%s" CONF_EXT, dir, names[i]);
			if (pt_targets__describe(path, desc, sizeof(desc)))
				snprintf(desc, sizeof(desc), "(no description)");
			fprintf(out, "%-*s  %s\n", (int)width, names[i], desc);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (e)
		fprintf(stderr, "proftrace: cannot list bundled targets: %s\n", strerror(-e));
	return e ? e : (int)n;

no_dir:
	fprintf(stderr,
		"proftrace: cannot list bundled targets in %s: %s (hint: set %s to the "
		"directory that holds vllm.conf, cuda.conf, ...)\n",
		dir ? dir : dbuf, strerror(-e), PT_TARGETS_DIR_ENV);
	return e;
}

int pt_targets__resolve_in(const char *dir, const char *name, char *buf, size_t len)
{
	char dbuf[PATH_MAX];
	size_t n;

	if (!name || !*name || strchr(name, '/') || access(name, F_OK) == 0)
		return 0;
	if (!dir) {
		if (pt_targets__dir(dbuf, sizeof(dbuf)))
			return 0; /* no bundled files: the loader reports the name */
		dir = dbuf;
	}
	n = strlen(name);
	if ((size_t)snprintf(buf, len, "%s/%s%s", dir, name,
			     ends_with_conf(name, n) ? "" : CONF_EXT) >= len)
		return -ENAMETOOLONG;
	return is_file(buf) ? 1 : 0;
}

int pt_targets__resolve(const char *name, char *buf, size_t len)
{
	return pt_targets__resolve_in(NULL, name, buf, len);
}
