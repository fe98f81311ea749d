// SPDX-License-Identifier: BSD-2-Clause
/*
 * /proc/PID/maps reader.
 *
 * Line format (fs/proc/task_mmu.c, show_map_vma):
 *   start-end perms offset major:minor inode [padding] path
 * The path is the rest of the line and may contain spaces, so fields are
 * taken left to right by hand rather than with sscanf("%s").
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"

#define DELETED_SUFFIX " (deleted)"

/* Strict hex/dec number ending at *p; rejects empty fields and signs,
 * which strtoull would quietly accept. */
static int parse_num(const char **p, int base, uint64_t *out)
{
	const char *s = *p;
	char *end;

	if (!(base == 16 ? isxdigit((unsigned char)*s) : (*s >= '0' && *s <= '9')))
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, base);
	if (errno)
		return -EINVAL;
	*p = end;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

static int parse_line(struct pt_mapping *mp, const char *line)
{
	const char *p = line;
	uint64_t major, minor;
	size_t len;
	int i;

	memset(mp, 0, sizeof(*mp));
	if (parse_num(&p, 16, &mp->start) || expect(&p, '-') || parse_num(&p, 16, &mp->end) ||
	    expect(&p, ' '))
		return -EINVAL;
	if (mp->end < mp->start)
		return -EINVAL;
	for (i = 0; i < 4; i++) {
		if (!p[i] || p[i] == ' ' || p[i] == '\n')
			return -EINVAL;
		mp->perms[i] = p[i];
	}
	p += 4;
	if (expect(&p, ' ') || parse_num(&p, 16, &mp->offset) || expect(&p, ' ') ||
	    parse_num(&p, 16, &major) || expect(&p, ':') || parse_num(&p, 16, &minor) ||
	    expect(&p, ' ') || parse_num(&p, 10, &mp->inode))
		return -EINVAL;
	mp->dev_major = major;
	mp->dev_minor = minor;

	/* The kernel pads to a column before the path; no path = anonymous. */
	if (*p && *p != ' ' && *p != '\n')
		return -EINVAL;
	while (*p == ' ' || *p == '\t')
		p++;
	len = strcspn(p, "\n");
	if (!len)
		return 0;

	if (len > strlen(DELETED_SUFFIX) &&
	    !memcmp(p + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX, strlen(DELETED_SUFFIX))) {
		mp->deleted = true;
		len -= strlen(DELETED_SUFFIX);
	}
	mp->path = strndup(p, len);
	return mp->path ? 0 : -ENOMEM;
}

int pt_maps__parse(struct pt_maps *m, FILE *f)
{
	struct pt_mapping *v;
	size_t cap = 0, linecap = 0;
	char *line = NULL;
	int err = 0;

	m->v = NULL;
	m->n = 0;
	while (getline(&line, &linecap, f) >= 0) {
		/* Not produced by the kernel, but harmless in hand-written fixtures. */
		if (line[strspn(line, " \t\n")] == '\0')
			continue;
		if (m->n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(m->v, cap * sizeof(*v));
			if (!v) {
				err = -ENOMEM;
				break;
			}
			m->v = v;
		}
		err = parse_line(&m->v[m->n], line);
		if (err)
			break;
		m->n++;
	}
	if (!err && ferror(f))
		err = -EIO;
	free(line);
	if (err)
		pt_maps__free(m);
	return err;
}

int pt_maps__read_pid(struct pt_maps *m, int pid)
{
	char path[64];
	FILE *f;
	int err;

	m->v = NULL;
	m->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = pt_maps__parse(m, f);
	fclose(f);
	return err;
}

void pt_maps__free(struct pt_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

bool pt_mapping__is_exec_file(const struct pt_mapping *mp)
{
	/* "[vdso]" and friends are not files a uprobe can name; a deleted
	 * file's path now points elsewhere (or nowhere). */
	return mp->perms[2] == 'x' && mp->path && mp->path[0] == '/' && !mp->deleted;
}
