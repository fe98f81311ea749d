// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "regionfile.h"
#include "util/util.h"

void pt_regionfile__init(struct pt_region_set *s)
{
	memset(s, 0, sizeof(*s));
}

static void launch_free(struct pt_region_launch *l)
{
	free(l->kernel);
	free(l->ev);
	free(l->source);
}

void pt_regionfile__free(struct pt_region_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ntags; i++)
		free(s->tags[i]);
	free(s->tags);
	for (size_t i = 0; i < s->nl; i++)
		launch_free(&s->l[i]);
	free(s->l);
	memset(s, 0, sizeof(*s));
}

/* The set's index of tag name; -ENOMEM, -E2BIG past PT_REGIONS_MAX_TAGS. */
static long intern(struct pt_region_set *s, const char *name)
{
	char **t;

	for (size_t i = s->ntags; i-- > 0;)
		if (!strcmp(s->tags[i], name))
			return (long)i;
	if (s->ntags >= PT_REGIONS_MAX_TAGS)
		return -E2BIG;
	t = realloc(s->tags, (s->ntags + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	s->tags = t;
	t[s->ntags] = strdup(name);
	if (!t[s->ntags])
		return -ENOMEM;
	return (long)s->ntags++;
}

static struct pt_region_launch *new_launch(struct pt_region_set *s, const char *kernel,
					   int64_t launch, const char *source)
{
	struct pt_region_launch *l = realloc(s->l, (s->nl + 1) * sizeof(*l));

	if (!l)
		return NULL;
	s->l = l;
	l = &s->l[s->nl];
	memset(l, 0, sizeof(*l));
	l->launch = launch;
	l->kernel = kernel ? strdup(kernel) : NULL;
	l->source = strdup(source ? source : "");
	if ((kernel && !l->kernel) || !l->source) {
		launch_free(l);
		return NULL;
	}
	s->nl++;
	return l;
}

/* Drop the last launch (a file that failed half way). */
static void drop_last(struct pt_region_set *s)
{
	if (s->nl)
		launch_free(&s->l[--s->nl]);
}

static int add_event(struct pt_region_launch *l, size_t *cap, const struct pt_region *r)
{
	if (l->nev == *cap) {
		size_t n = *cap ? *cap * 2 : 64;
		struct pt_region *ev = realloc(l->ev, n * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		l->ev = ev;
		*cap = n;
	}
	l->ev[l->nev++] = *r;
	return 0;
}

static int64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return (int64_t)v;
}

/* A name that is a short printable string (kernel and tag names end up in
 * JSON and on terminals). */
static bool good_name(const char *n)
{
	size_t len = n ? strlen(n) : 0;

	return len > 0 && len < 4096;
}

struct tagtab {
	char **names; /* the file's, by its tag id; NULL entries: unnamed */
	size_t n;
	long *gid; /* the set's index of each, -1 until needed */
	char *kernel;
	int64_t launch;
	int64_t capacity; /* -1: not given */
};

static void tagtab_free(struct tagtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	free(t->gid);
	free(t->kernel);
}

bool pt_regionfile__is_tag_table(const char *json, size_t len)
{
	cJSON *j = cJSON_ParseWithLength(json, len);
	bool ret = cJSON_IsArray(j) ||
		   (cJSON_IsObject(j) && !cJSON_GetObjectItemCaseSensitive(j, "traceEvents") &&
		    cJSON_GetObjectItemCaseSensitive(j, "tags"));

	cJSON_Delete(j);
	return ret;
}

static int parse_tags(struct tagtab *t, const char *json, size_t len, char *err, size_t errlen)
{
	cJSON *j = cJSON_ParseWithLength(json, len), *arr = j, *it;
	size_t i = 0;
	int e = -EINVAL;

	t->launch = -1;
	t->capacity = -1;
	if (!j) {
		pt_seterr(err, errlen, "tag table: not JSON");
		return -EINVAL;
	}
	if (cJSON_IsObject(j)) {
		arr = cJSON_GetObjectItemCaseSensitive(j, "tags");
		it = cJSON_GetObjectItemCaseSensitive(j, "kernel");
		if (it && !(cJSON_IsString(it) && good_name(it->valuestring))) {
			pt_seterr(err, errlen, "tag table: \"kernel\" is not a name");
			goto out;
		}
		if (it && !(t->kernel = strdup(it->valuestring))) {
			e = -ENOMEM;
			goto out;
		}
		it = cJSON_GetObjectItemCaseSensitive(j, "launch");
		if (it) {
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e15 ||
			    it->valuedouble != floor(it->valuedouble)) {
				pt_seterr(err, errlen, "tag table: \"launch\" is not an index");
				goto out;
			}
			t->launch = (int64_t)it->valuedouble;
		}
		it = cJSON_GetObjectItemCaseSensitive(j, "capacity");
		if (it) {
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e15 ||
			    it->valuedouble != floor(it->valuedouble)) {
				pt_seterr(err, errlen, "tag table: \"capacity\" is not a count");
				goto out;
			}
			t->capacity = (int64_t)it->valuedouble;
		}
	}
	if (!cJSON_IsArray(arr)) {
		pt_seterr(err, errlen, "tag table: no array of tag names");
		goto out;
	}
	t->n = (size_t)cJSON_GetArraySize(arr);
	if (t->n > PT_REGIONS_MAX_TAGS) {
		pt_seterr(err, errlen, "tag table: more than %u tags", PT_REGIONS_MAX_TAGS);
		t->n = 0;
		e = -E2BIG;
		goto out;
	}
	t->names = calloc(t->n + 1, sizeof(*t->names));
	if (!t->names) {
		t->n = 0;
		e = -ENOMEM;
		goto out;
	}
	cJSON_ArrayForEach(it, arr)
	{
		if (cJSON_IsNull(it)) {
			i++;
			continue;
		}
		if (!cJSON_IsString(it) || !good_name(it->valuestring)) {
			pt_seterr(err, errlen, "tag table: tag %zu is not a name", i);
			goto out;
		}
		t->names[i] = strdup(it->valuestring);
		if (!t->names[i++]) {
			e = -ENOMEM;
			goto out;
		}
	}
	e = 0;
out:
	cJSON_Delete(j);
	return e;
}

/* The set's index for the file's tag id. */
static long tag_gid(struct pt_region_set *s, struct tagtab *t, int64_t id)
{
	char buf[40];
	long g;

	if (id >= 0 && (uint64_t)id < t->n && t->gid && t->gid[id] >= 0)
		return t->gid[id];
	if (id >= 0 && (uint64_t)id < t->n && t->names[id])
		g = intern(s, t->names[id]);
	else {
		snprintf(buf, sizeof(buf), "tag %lld", (long long)id);
		g = intern(s, buf);
	}
	if (g >= 0 && id >= 0 && (uint64_t)id < t->n && t->gid)
		t->gid[id] = g;
	return g;
}

int pt_regionfile__read_raw(struct pt_region_set *s, const void *buf, size_t len,
			    const char *tags_json, size_t tags_len, const char *source, char *err,
			    size_t errlen)
{
	const unsigned char *p = buf;
	struct tagtab t = { .launch = -1, .capacity = -1 };
	struct pt_region_launch *l;
	size_t cap = 0, held;
	int64_t count;
	int e;

	if (!buf || len < 8) {
		pt_seterr(err, errlen,
			  "%s: no event count (a raw buffer starts with an int64 count)", source);
		return -EINVAL;
	}
	if (tags_json) {
		e = parse_tags(&t, tags_json, tags_len, err, errlen);
		if (e) {
			tagtab_free(&t);
			return e;
		}
		t.gid = malloc((t.n + 1) * sizeof(*t.gid));
		if (!t.gid) {
			tagtab_free(&t);
			return -ENOMEM;
		}
		for (size_t i = 0; i < t.n; i++)
			t.gid[i] = -1;
	}
	count = get_le64(p);
	if (count < 0) {
		pt_seterr(err, errlen, "%s: negative event count %lld", source, (long long)count);
		tagtab_free(&t);
		return -EINVAL;
	}
	held = (len - 8) / 32;
	if (t.capacity >= 0 && (uint64_t)t.capacity < held)
		held = (size_t)t.capacity;
	if (held > PT_REGIONS_MAX_EVENTS && (uint64_t)count > PT_REGIONS_MAX_EVENTS) {
		pt_seterr(err, errlen, "%s: more than %u events", source, PT_REGIONS_MAX_EVENTS);
		tagtab_free(&t);
		return -E2BIG;
	}
	l = new_launch(s, t.kernel, t.launch, source);
	if (!l) {
		tagtab_free(&t);
		return -ENOMEM;
	}
	l->clock = PT_REGIONS_GPU_CLOCK;
	l->recorded = (uint64_t)count;
	l->overflow = (uint64_t)count > held;
	for (size_t i = 0; i < held && i < (uint64_t)count; i++) {
		const unsigned char *q = p + 8 + i * 32;
		int64_t st = get_le64(q), du = get_le64(q + 8), tag = get_le64(q + 16);
		struct pt_region r;
		long g;

		if (st < 0 || du < 0 || (uint64_t)st + (uint64_t)du > INT64_MAX || tag < 0 ||
		    tag > INT32_MAX) {
			l->invalid++;
			continue;
		}
		g = tag_gid(s, &t, tag);
		if (g < 0) {
			e = (int)g;
			pt_seterr(err, errlen, "%s: %s", source,
				  e == -E2BIG ? "too many distinct tags" : "out of memory");
			drop_last(s);
			tagtab_free(&t);
			return e;
		}
		r = (struct pt_region){ .start_ns = (uint64_t)st,
					.dur_ns = (uint64_t)du,
					.tag = (uint32_t)g,
					.tid = get_le64(q + 24) };
		if (add_event(l, &cap, &r)) {
			drop_last(s);
			tagtab_free(&t);
			return -ENOMEM;
		}
	}
	tagtab_free(&t);
	return 0;
}

/* ---- Chrome trace ---- */

/* µs (a JSON number) to ns; false when not a finite, non-negative time
 * below 2^62 ns. */
static bool us_to_ns(const cJSON *it, uint64_t *ns)
{
	double v;

	if (!cJSON_IsNumber(it))
		return false;
	v = it->valuedouble * 1000.0;
	if (!isfinite(v) || v < 0 || v > 4.6e18)
		return false;
	*ns = (uint64_t)llround(v);
	return true;
}

struct pname {
	double pid;
	const char *name;
};

int pt_regionfile__read_chrome(struct pt_region_set *s, const char *json, size_t len,
			       const char *source, char *err, size_t errlen)
{
	cJSON *j = cJSON_ParseWithLength(json, len), *evs, *e, *od, *it;
	struct pname *pn = NULL;
	size_t npn = 0, first = s->nl, *caps = NULL, ncaps = 0;
	bool overflow = false;
	int ret = -EINVAL;

	if (!j) {
		pt_seterr(err, errlen, "%s: not JSON", source);
		return -EINVAL;
	}
	evs = cJSON_IsArray(j) ? j : cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
	if (!cJSON_IsArray(evs)) {
		pt_seterr(err, errlen, "%s: no traceEvents array (not a Chrome trace)", source);
		goto out;
	}
	od = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "otherData") : NULL;
	it = od ? cJSON_GetObjectItemCaseSensitive(od, "tool") : NULL;
	if (cJSON_IsString(it) && !strcmp(it->valuestring, "proftrace")) {
		pt_seterr(err, errlen,
			  "%s: this is proftrace's own trace.json, not a regions trace", source);
		goto out;
	}
	it = od ? cJSON_GetObjectItemCaseSensitive(od, "overflow") : NULL;
	overflow = cJSON_IsTrue(it);
	/* process names first: they may come after the slices */
	cJSON_ArrayForEach(e, evs)
	{
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid");
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
		const cJSON *an = args ? cJSON_GetObjectItemCaseSensitive(args, "name") : NULL;
		struct pname *q;

		if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "M") || !cJSON_IsString(nm) ||
		    strcmp(nm->valuestring, "process_name") || !cJSON_IsNumber(pid) ||
		    !cJSON_IsString(an) || !good_name(an->valuestring))
			continue;
		q = realloc(pn, (npn + 1) * sizeof(*pn));
		if (!q) {
			ret = -ENOMEM;
			goto out;
		}
		pn = q;
		pn[npn++] = (struct pname){ pid->valuedouble, an->valuestring };
	}
	cJSON_ArrayForEach(e, evs)
	{
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid");
		const cJSON *tid = cJSON_GetObjectItemCaseSensitive(e, "tid");
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
		const cJSON *ak = args ? cJSON_GetObjectItemCaseSensitive(args, "kernel") : NULL;
		const cJSON *al = args ? cJSON_GetObjectItemCaseSensitive(args, "launch") : NULL;
		const char *kernel = NULL;
		/* a pid out of int64's range (the file is untrusted) is none */
		double pidv = cJSON_IsNumber(pid) && fabs(pid->valuedouble) <= 9e15
				      ? pid->valuedouble
				      : 0;
		int64_t launch = -1;
		struct pt_region r = { 0 };
		struct pt_region_launch *l = NULL;
		size_t li;
		long g;

		if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X"))
			continue;
		if (cJSON_IsString(ak) && good_name(ak->valuestring))
			kernel = ak->valuestring;
		for (size_t i = 0; !kernel && i < npn; i++)
			if (pn[i].pid == pidv)
				kernel = pn[i].name;
		if (cJSON_IsNumber(al) && al->valuedouble >= 0 && al->valuedouble <= 1e15 &&
		    al->valuedouble == floor(al->valuedouble))
			launch = (int64_t)al->valuedouble;
		/* the launch: by (kernel, args.launch), else by (kernel, pid):
		 * the pid is kept in recorded's place until the end */
		for (li = first; li < s->nl; li++) {
			struct pt_region_launch *c = &s->l[li];

			if ((c->kernel == NULL) != (kernel == NULL) ||
			    (kernel && strcmp(c->kernel, kernel)))
				continue;
			if (launch >= 0 ? c->launch == launch
					: c->launch < 0 && c->recorded == (uint64_t)(int64_t)pidv)
				break;
		}
		if (li == s->nl) {
			size_t *nc = realloc(caps, (s->nl + 1) * sizeof(*caps));

			if (!nc || !new_launch(s, kernel, launch, source)) {
				free(nc ? nc : caps);
				caps = NULL;
				ret = -ENOMEM;
				goto out;
			}
			caps = nc;
			for (; ncaps <= li; ncaps++)
				caps[ncaps] = 0;
			if (launch < 0)
				s->l[li].recorded = (uint64_t)(int64_t)pidv;
		}
		l = &s->l[li];
		if (!cJSON_IsString(nm) || !good_name(nm->valuestring) ||
		    !us_to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"), &r.start_ns) ||
		    !us_to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur"), &r.dur_ns) ||
		    r.start_ns + r.dur_ns > (uint64_t)INT64_MAX) {
			l->invalid++;
			continue;
		}
		if (l->nev >= PT_REGIONS_MAX_EVENTS) {
			pt_seterr(err, errlen, "%s: more than %u events in a launch", source,
				  PT_REGIONS_MAX_EVENTS);
			ret = -E2BIG;
			goto out;
		}
		g = intern(s, nm->valuestring);
		if (g < 0) {
			ret = (int)g;
			pt_seterr(err, errlen, "%s: %s", source,
				  ret == -E2BIG ? "too many distinct tags" : "out of memory");
			goto out;
		}
		r.tag = (uint32_t)g;
		r.tid = cJSON_IsNumber(tid) && fabs(tid->valuedouble) < 9e15
				? (int64_t)tid->valuedouble
				: 0;
		if (add_event(l, &caps[li], &r)) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = first; i < s->nl; i++) {
		s->l[i].clock = s->l[i].source; /* a time base of its own */
		s->l[i].recorded = s->l[i].nev;
		s->l[i].overflow = overflow;
	}
	if (s->nl == first) {
		pt_seterr(err, errlen, "%s: no region slices (\"ph\": \"X\")", source);
		goto out;
	}
	ret = 0;
out:
	if (ret)
		while (s->nl > first)
			drop_last(s);
	free(caps);
	free(pn);
	cJSON_Delete(j);
	return ret;
}
