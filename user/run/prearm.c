// SPDX-License-Identifier: BSD-2-Clause
/*
 * The dlopen race, closed where it can be (docs/guarantees.md).
 *
 * A library named by a probe and not mapped yet used to be probed once
 * the dynamic linker said it had mapped it (its _dl_debug_state hook):
 * calls made between that and the probes going in (about a millisecond)
 * were not seen, the first one included. But a uprobe belongs to a file
 * (its inode), not to a mapping: registered on a file the process has not
 * mapped, the kernel writes the breakpoints into the process as the file
 * is mapped, before any of its code can run. So such a library is looked
 * for now, where the target will load it from: the folders of the files it
 * maps already (a server's own libraries sit together), the folders those
 * files name for what they load (DT_RUNPATH or DT_RPATH, $ORIGIN-relative
 * in pip wheels: torch's lib/ names ../../nvidia/.../lib) and its
 * LD_LIBRARY_PATH; where none is there, the folders the dynamic linker
 * searches by default (/etc/ld.so.conf and the files it includes, then
 * the system's own). A probe whose object glob matches exactly one file
 * there has that file resolved at attach, and probed then by the caller
 * (procs.c: pt_run__attach_new, as for a mapped file): its first call is
 * timed, and nothing in the target pauses. Where no file or several match
 * (which one will it load?), or the target has another root, the probe
 * waits for the dynamic linker's notification as before, and the calls in
 * that window can be missed.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "run.h"
#include "prearm.h"

#include "attach/elfsyms.h"
#include "attach/maps.h"
#include "attach/resolve.h"
#include "config/config.h"
#include "util/log.h"
#include "util/util.h"

#define ENV_MAX (1u << 20)
#define MAX_DIRS 256

struct dirs {
	char *v[MAX_DIRS];
	size_t n;
};

static void dirs_add(struct dirs *d, const char *dir, size_t len)
{
	char *s;

	if (!len || dir[0] != '/' || d->n == MAX_DIRS)
		return;
	for (size_t i = 0; i < d->n; i++)
		if (strlen(d->v[i]) == len && !strncmp(d->v[i], dir, len))
			return;
	s = strndup(dir, len);
	if (s)
		d->v[d->n++] = s;
}

/*
 * The folders the ELF file obj names in its DT_RUNPATH (or DT_RPATH), with
 * $ORIGIN (the file's own folder) expanded; an entry with another token
 * ($LIB, $PLATFORM: which one the dynamic linker picks is its own) is
 * left out.
 */
static void runpath_dirs(const char *obj, struct dirs *d)
{
	char rp[4096], dir[PATH_MAX];
	const char *slash = strrchr(obj, '/');
	size_t olen = slash ? (size_t)(slash - obj) : 0;

	if (!olen || pt_elf__runpath(obj, rp, sizeof(rp)) || !rp[0])
		return;
	for (char *e = rp, *next; e; e = next) {
		size_t n = 0;
		bool ok = true;

		next = strchr(e, ':');
		if (next)
			*next++ = 0;
		for (const char *c = e; *c && ok; c++) {
			const char *tok = NULL;

			if (*c != '$') {
				ok = n + 1 < sizeof(dir);
				if (ok)
					dir[n++] = *c;
				continue;
			}
			if (!strncmp(c, "$ORIGIN", 7))
				tok = c + 7;
			else if (!strncmp(c, "${ORIGIN}", 9))
				tok = c + 9;
			ok = tok && n + olen < sizeof(dir);
			if (!ok)
				break;
			memcpy(dir + n, obj, olen);
			n += olen;
			c = tok - 1;
		}
		if (ok && n < sizeof(dir)) {
			dir[n] = 0;
			dirs_add(d, dir, n);
		}
	}
}

/* LD_LIBRARY_PATH's folders, from the environment the target started with. */
static void env_dirs(int pid, struct dirs *d)
{
	char path[64], *buf;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	buf = malloc(ENV_MAX + 1);
	if (!buf) {
		fclose(f);
		return;
	}
	n = fread(buf, 1, ENV_MAX, f);
	fclose(f);
	buf[n] = 0; /* the target's bytes: a cut last entry ends here too */
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
		const char *v = buf + i, *end;

		if (strncmp(v, "LD_LIBRARY_PATH=", 16))
			continue;
		for (v += 16; *v; v = *end ? end + 1 : end) {
			end = strchr(v, ':');
			if (!end)
				end = v + strlen(v);
			dirs_add(d, v, (size_t)(end - v));
		}
	}
	free(buf);
}

/*
 * The folders the dynamic linker searches when nothing else names one:
 * those listed in an ld.so.conf file, its `include` lines followed as
 * ldconfig does (globs, relative to /etc), then the trusted system ones.
 * (ld.so.cache is made from these same folders.)
 */
static void ldconf_dirs(const char *file, struct dirs *d, int depth)
{
	char line[PATH_MAX + 16];
	FILE *f;

	if (depth > 8)
		return; /* include loops */
	f = fopen(file, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t"), *e;

		s[strcspn(s, "#\r\n")] = 0;
		for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = 0;
		if (!strncmp(s, "include", 7) && (s[7] == ' ' || s[7] == '\t')) {
			char pat[PATH_MAX + 8];
			glob_t g;

			s += 8;
			s += strspn(s, " \t");
			snprintf(pat, sizeof(pat), "%s%s", *s == '/' ? "" : "/etc/", s);
			if (!glob(pat, 0, NULL, &g))
				for (size_t i = 0; i < g.gl_pathc; i++)
					ldconf_dirs(g.gl_pathv[i], d, depth + 1);
			globfree(&g);
		} else if (*s == '/') {
			dirs_add(d, s, strlen(s));
		}
	}
	fclose(f);
}

static void system_dirs(struct dirs *d)
{
	static const char *const trusted[] = {
		"/lib/x86_64-linux-gnu",
		"/usr/lib/x86_64-linux-gnu",
		"/lib64",
		"/usr/lib64",
		"/lib",
		"/usr/lib",
	};

	ldconf_dirs("/etc/ld.so.conf", d, 0);
	for (size_t i = 0; i < ARRAY_SIZE(trusted); i++)
		dirs_add(d, trusted[i], strlen(trusted[i]));
}

/* The one file in dirs that spec's object glob names; NULL when none or
 * several (then which one the target will load cannot be told). */
static char *find_one(const struct dirs *d, const struct pt_probe_spec *s, bool *several)
{
	char *found = NULL;
	bool many = false;

	for (size_t i = 0; i < d->n && !many; i++) {
		DIR *dir = opendir(d->v[i]);
		struct dirent *de;

		if (!dir)
			continue;
		while (!many && (de = readdir(dir))) {
			char full[PATH_MAX], *real;
			struct stat st;

			if (snprintf(full, sizeof(full), "%s/%s", d->v[i], de->d_name) >=
			    (int)sizeof(full))
				continue;
			if (fnmatch(s->object, de->d_name, 0) && fnmatch(s->object, full, 0))
				continue;
			if (stat(full, &st) || !S_ISREG(st.st_mode))
				continue;
			real = realpath(full, NULL); /* maps shows the file, not the link */
			if (!real)
				continue;
			if (found && strcmp(found, real)) {
				many = true;
				free(real);
			} else if (found) {
				free(real);
			} else {
				found = real;
			}
		}
		closedir(dir);
	}
	*several = many;
	if (many) {
		pt_vlog("proftrace: %s: several files match; probed once one is loaded\n", s->text);
		free(found);
		return NULL;
	}
	return found;
}

int pt_run__prearm(struct proc *p, size_t *nlibs)
{
	const struct pt_config *cfg = &p->run->cfg;
	struct pt_maps maps = { 0 }, ahead = { 0 };
	struct dirs d = { 0 }, sys = { 0 };
	char root[16], err[512];
	ssize_t rl;
	int n = 0;

	*nlibs = 0;
	/* another root (a container, a chroot): its folders are not ours */
	snprintf(err, sizeof(err), "/proc/%d/root", p->tracee.pid);
	rl = readlink(err, root, sizeof(root));
	if (rl != 1 || root[0] != '/')
		return 0;
	for (size_t s = 0; s < cfg->nprobes; s++)
		n += cfg->probes[s].kind == PT_PROBE_NATIVE &&
		     strcmp(cfg->probes[s].object, "exe") && !pt_resolver__spec_nobjects(p->res, s);
	if (!n || pt_maps__read_pid(&maps, p->tracee.pid))
		return 0;
	for (size_t i = 0; i < maps.n; i++) {
		const char *path = maps.v[i].path, *slash;

		if (pt_mapping__is_exec_file(&maps.v[i]) && (slash = strrchr(path, '/')))
			dirs_add(&d, path, (size_t)(slash - path));
	}
	for (size_t i = 0; i < maps.n; i++)
		if (pt_mapping__is_exec_file(&maps.v[i]))
			runpath_dirs(maps.v[i].path, &d);
	pt_maps__free(&maps);
	env_dirs(p->tracee.pid, &d);
	system_dirs(&sys);

	ahead.v = calloc(cfg->nprobes, sizeof(*ahead.v));
	for (size_t s = 0; ahead.v && s < cfg->nprobes; s++) {
		const struct pt_probe_spec *sp = &cfg->probes[s];
		struct pt_mapping *mp;
		struct stat st;
		bool many = false;
		char *file;

		if (sp->kind != PT_PROBE_NATIVE || !strcmp(sp->object, "exe") ||
		    pt_resolver__spec_nobjects(p->res, s))
			continue;
		/* the system's folders only when the target's own have none:
		 * a copy of its own comes first for the dynamic linker too */
		file = find_one(&d, sp, &many);
		if (!file && !many)
			file = find_one(&sys, sp, &many);
		if (!file)
			continue;
		if (stat(file, &st)) {
			free(file);
			continue;
		}
		/* one entry per file (two probes may name one library) */
		for (size_t k = 0; k < ahead.n; k++) {
			if (!strcmp(ahead.v[k].path, file)) {
				free(file);
				file = NULL;
				break;
			}
		}
		if (!file)
			continue;
		mp = &ahead.v[ahead.n++];
		/* start == end: not a mapping, a file probed ahead of it */
		memcpy(mp->perms, "r-xp", 5);
		mp->inode = st.st_ino;
		mp->dev_major = major(st.st_dev);
		mp->dev_minor = minor(st.st_dev);
		mp->path = file;
	}
	for (size_t i = 0; i < d.n; i++)
		free(d.v[i]);
	for (size_t i = 0; i < sys.n; i++)
		free(sys.v[i]);
	if (!ahead.v)
		return -ENOMEM;
	n = ahead.n ? pt_resolver__update(p->res, &ahead, false, err, sizeof(err)) : 0;
	if (n < 0) {
		pt_msg("proftrace: warning: %s\n", err);
		n = 0;
	}
	*nlibs = ahead.n;
	pt_maps__free(&ahead);
	return n;
}
