// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "nstid.h"
#include "util/tasks.h"

/* Open addressing on u32 keys (0: empty), values u32. */
struct tmap {
	uint32_t *k, *v;
	size_t cap, n;
};

struct pt_nstid {
	char root[PATH_MAX / 2];
	int pid;
	struct tmap inner; /* inner tid -> host tid */
	struct tmap seen;  /* host tids read already (value unused) */
	uint64_t last_miss_refresh;
	struct pt_nstid_stats st;
};

static size_t slot(const struct tmap *m, uint32_t key)
{
	size_t i = (key * 2654435761u) & (m->cap - 1);

	while (m->k[i] && m->k[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint32_t *tmap_get(struct tmap *m, uint32_t key)
{
	size_t i;

	if (!m->cap || !key)
		return NULL;
	i = slot(m, key);
	return m->k[i] ? &m->v[i] : NULL;
}

static int tmap_put(struct tmap *m, uint32_t key, uint32_t val)
{
	size_t i;

	if (!key)
		return -EINVAL;
	if ((m->n + 1) * 2 > m->cap) {
		struct tmap g = { .cap = m->cap ? m->cap * 2 : 64 };

		g.k = calloc(g.cap, sizeof(*g.k));
		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.k || !g.v) {
			free(g.k);
			free(g.v);
			return -ENOMEM;
		}
		for (size_t j = 0; j < m->cap; j++) {
			if (!m->k[j])
				continue;
			i = slot(&g, m->k[j]);
			g.k[i] = m->k[j];
			g.v[i] = m->v[j];
			g.n++;
		}
		free(m->k);
		free(m->v);
		*m = g;
	}
	i = slot(m, key);
	if (!m->k[i]) {
		m->k[i] = key;
		m->n++;
	}
	m->v[i] = val;
	return 0;
}

static void tmap_free(struct tmap *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* The NSpid of root/pid/task/tid/status (tid 0: root/pid/status). */
static int read_status(const char *root, int pid, int tid, int *outer, int *inner, uint32_t *depth)
{
	char path[PATH_MAX];
	FILE *f;
	int e;

	if (tid)
		snprintf(path, sizeof(path), "%s/%d/task/%d/status", root, pid, tid);
	else
		snprintf(path, sizeof(path), "%s/%d/status", root, pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	e = pt_tasks__parse_nspid(f, outer, inner, depth);
	fclose(f);
	return e;
}

int pt_nstid__refresh(struct pt_nstid *m)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int e = 0;

	if (!m)
		return 0;
	snprintf(path, sizeof(path), "%s/%d/task", m->root, m->pid);
	d = opendir(path);
	if (!d)
		return -errno;
	m->st.refreshes++;
	while (!e && (de = readdir(d))) {
		int tid = isdigit((unsigned char)de->d_name[0]) ? atoi(de->d_name) : 0;
		int outer, inner;
		uint32_t depth;

		if (tid <= 0 || tmap_get(&m->seen, (uint32_t)tid))
			continue;
		/* gone meanwhile, or unreadable: tried again next time */
		if (read_status(m->root, m->pid, tid, &outer, &inner, &depth) || depth < 2)
			continue;
		e = tmap_put(&m->inner, (uint32_t)inner, (uint32_t)tid);
		if (!e)
			e = tmap_put(&m->seen, (uint32_t)tid, 1);
	}
	closedir(d);
	m->st.threads = m->inner.n;
	return e;
}

int pt_nstid__open(struct pt_nstid **out, const char *proc_root, int pid)
{
	struct pt_nstid *m;
	int outer, inner, e;
	uint32_t depth;

	*out = NULL;
	if (pid <= 0)
		return -EINVAL;
	e = read_status(proc_root, pid, 0, &outer, &inner, &depth);
	if (e == -ENODATA)
		return 0; /* no NSpid line (kernel < 4.1): no namespaces to map either way */
	if (e)
		return e;
	if (depth < 2)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	snprintf(m->root, sizeof(m->root), "%s", proc_root);
	m->pid = pid;
	m->st.ns_pid = inner;
	m->st.depth = depth;
	e = pt_nstid__refresh(m);
	if (e == -ENOMEM) {
		pt_nstid__free(m);
		return e;
	}
	*out = m;
	return 0;
}

void pt_nstid__free(struct pt_nstid *m)
{
	if (!m)
		return;
	tmap_free(&m->inner);
	tmap_free(&m->seen);
	free(m);
}

uint32_t pt_nstid__host_tid(struct pt_nstid *m, uint32_t t, uint64_t now_ns)
{
	uint32_t *v;

	if (!m || !t)
		return 0;
	v = tmap_get(&m->inner, t);
	if (!v && now_ns - m->last_miss_refresh >= PT_NSTID_MISS_REFRESH_NS) {
		m->last_miss_refresh = now_ns;
		pt_nstid__refresh(m);
		v = tmap_get(&m->inner, t);
	}
	if (v)
		m->st.translated++;
	else
		m->st.unmapped++;
	return v ? *v : 0;
}

void pt_nstid__stats(const struct pt_nstid *m, struct pt_nstid_stats *st)
{
	if (m)
		*st = m->st;
	else
		memset(st, 0, sizeof(*st));
}
