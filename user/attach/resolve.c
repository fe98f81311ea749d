// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "elfsyms.h"
#include "resolve.h"
#include "tracee.h"
#include "util/demangle.h"

struct pt_obj {
	unsigned int dev_major, dev_minor;
	uint64_t inode;
	char *path;
	char *host_path;
	struct pt_elf *elf; /* loaded on first match */
	int elf_err;	    /* -errno when it could not be read */
	bool elf_tried;
	int *sym_fid; /* per symbol index: its function's fid, or -1 */
	bool ahead;   /* a file probed before it is mapped (run/prearm.c) */
	/* per symbol index: demangled name, not_cxx, or NULL: not tried
	 * yet (demangled on demand: libtorch_cpu has >100k symbols) */
	char **dem;
};

static char not_cxx[1];

static const char *obj_demangled(struct pt_obj *o, size_t k)
{
	if (!o->dem) {
		o->dem = calloc(o->elf->nsyms + 1, sizeof(*o->dem));
		if (!o->dem)
			return NULL;
	}
	if (!o->dem[k]) {
		o->dem[k] = pt_demangle(o->elf->syms[k].name);
		if (!o->dem[k])
			o->dem[k] = not_cxx;
	}
	return o->dem[k] == not_cxx ? NULL : o->dem[k];
}

static void free_dem(struct pt_obj *o)
{
	for (size_t k = 0; o->dem && k < o->elf->nsyms; k++)
		if (o->dem[k] != not_cxx)
			free(o->dem[k]);
	free(o->dem);
}

struct pt_resolver {
	const struct pt_config *cfg;
	int pid;
	char *exe;
	char *root;
	struct pt_obj *objs;
	size_t nobjs;
	struct pt_func *funcs;
	size_t nfuncs, cap;
	size_t *spec_nfuncs;
	size_t *spec_nobjs;
	ssize_t *spec_first_obj; /* for error messages: an object it matched */
};

struct pt_resolver *pt_resolver__new(const struct pt_resolver_opts *opts)
{
	struct pt_resolver *r = calloc(1, sizeof(*r));
	size_t n = opts->cfg->nprobes;

	if (!r)
		return NULL;
	r->cfg = opts->cfg;
	r->pid = opts->pid;
	r->exe = strdup(opts->exe ? opts->exe : "");
	r->root = strdup(opts->root ? opts->root : "");
	r->spec_nfuncs = calloc(n + 1, sizeof(*r->spec_nfuncs));
	r->spec_nobjs = calloc(n + 1, sizeof(*r->spec_nobjs));
	r->spec_first_obj = calloc(n + 1, sizeof(*r->spec_first_obj));
	if (!r->exe || !r->root || !r->spec_nfuncs || !r->spec_nobjs || !r->spec_first_obj) {
		pt_resolver__free(r);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		r->spec_first_obj[i] = -1;
	return r;
}

void pt_resolver__free(struct pt_resolver *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nobjs; i++) {
		free(r->objs[i].path);
		free(r->objs[i].host_path);
		free_dem(&r->objs[i]); /* before its elf: it reads nsyms */
		pt_elf__free(r->objs[i].elf);
		free(r->objs[i].sym_fid);
	}
	for (size_t i = 0; i < r->nfuncs; i++) {
		struct pt_func *f = &r->funcs[i];

		free(f->object);
		free(f->host_path);
		free(f->symbol);
		free(f->mangled);
		for (size_t j = 0; j < f->naliases; j++)
			free(f->aliases[j]);
		free(f->aliases);
	}
	free(r->objs);
	free(r->funcs);
	free(r->spec_nfuncs);
	free(r->spec_nobjs);
	free(r->spec_first_obj);
	free(r->exe);
	free(r->root);
	free(r);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool object_matches(const struct pt_resolver *r, const struct pt_probe_spec *s,
			   const struct pt_obj *o)
{
	if (strcmp(s->object, "exe") == 0)
		return strcmp(o->path, r->exe) == 0;
	return fnmatch(s->object, o->path, 0) == 0 ||
	       fnmatch(s->object, base_name(o->path), 0) == 0;
}

static struct pt_elf *obj_elf(struct pt_obj *o)
{
	if (!o->elf_tried) {
		o->elf_tried = true;
		o->elf_err = pt_elf__open(&o->elf, o->host_path);
		if (o->elf_err)
			o->elf = NULL;
	}
	return o->elf;
}

static bool same_inode(const char *path, const struct pt_mapping *mp)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == mp->inode;
}

char *pt_resolver__host_path(int pid, const struct pt_mapping *mp)
{
	char *p = NULL;

	if (!pid || same_inode(mp->path, mp))
		return strdup(mp->path);
	if (asprintf(&p, "/proc/%d/root%s", pid, mp->path) < 0)
		return NULL;
	if (same_inode(p, mp))
		return p;
	free(p);
	if (asprintf(&p, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)mp->start,
		     (unsigned long long)mp->end) < 0)
		return NULL;
	return p;
}

static int add_obj(struct pt_resolver *r, const struct pt_mapping *mp)
{
	struct pt_obj *o, *v;

	for (size_t i = 0; i < r->nobjs; i++) {
		o = &r->objs[i];
		if (o->inode == mp->inode && o->dev_major == mp->dev_major &&
		    o->dev_minor == mp->dev_minor && strcmp(o->path, mp->path) == 0)
			return 0;
		/* the file armed ahead, now mapped: the same object even where
		 * maps shows another device or inode than stat (overlayfs), so
		 * its functions are never probed twice */
		if (o->ahead && strcmp(o->path, mp->path) == 0) {
			o->ahead = false;
			return 0;
		}
	}
	v = realloc(r->objs, (r->nobjs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->objs = v;
	o = &r->objs[r->nobjs];
	memset(o, 0, sizeof(*o));
	o->dev_major = mp->dev_major;
	o->dev_minor = mp->dev_minor;
	o->inode = mp->inode;
	o->ahead = mp->start == mp->end; /* not a mapping: a file named ahead */
	o->path = strdup(mp->path);
	o->host_path = pt_resolver__host_path(r->pid, mp);
	if (!o->path || !o->host_path) {
		free(o->path);
		free(o->host_path);
		return -ENOMEM;
	}
	r->nobjs++;
	return 1;
}

/*
 * The function a symbol belongs to, if already added. Aliases share a
 * file offset and sit next to each other in the sorted table, so the first
 * symbol at that offset stands for all of them: O(1) per match, which
 * matters for wildcards over libraries with 100k symbols.
 */
static int *sym_slot(const struct pt_obj *o, size_t symidx)
{
	const struct pt_sym *syms = o->elf->syms;

	while (symidx > 0 && syms[symidx - 1].file_off == syms[symidx].file_off)
		symidx--;
	return &o->sym_fid[symidx];
}

/* All other names at the same address: users search for any of them. */
static int set_aliases(struct pt_func *f, const struct pt_elf *e, size_t idx)
{
	size_t lo = idx, hi = idx, n = 0;

	while (lo > 0 && e->syms[lo - 1].file_off == f->file_off)
		lo--;
	while (hi + 1 < e->nsyms && e->syms[hi + 1].file_off == f->file_off)
		hi++;
	if (hi == lo)
		return 0;
	f->aliases = calloc(hi - lo, sizeof(*f->aliases));
	if (!f->aliases)
		return -ENOMEM;
	for (size_t i = lo; i <= hi; i++) {
		if (i == idx || strcmp(e->syms[i].name, f->symbol) == 0)
			continue;
		f->aliases[n] = strdup(e->syms[i].name);
		if (!f->aliases[n])
			return -ENOMEM;
		n++;
	}
	f->naliases = n;
	return 0;
}

/*
 * Is the code between the symbol and its moved probe entered from the
 * neighbouring code? Sweeps from the previous symbol (at most 4 KiB back)
 * to 4 KiB past the function. Far-away jumps (.cold parts) are not seen;
 * none targets a moved probe in Debian's libc or libpython3.11.
 */
static bool entered_nearby(const struct pt_elf *e, size_t idx, unsigned int skip)
{
	const struct pt_sym *sym = &e->syms[idx];
	uint64_t from = sym->file_off > 4096 ? sym->file_off - 4096 : 0;
	size_t len;
	uint8_t *buf;
	ssize_t n;
	bool hit;

	for (size_t i = idx; i > 0; i--) {
		if (e->syms[i - 1].file_off < sym->file_off) {
			if (e->syms[i - 1].file_off > from)
				from = e->syms[i - 1].file_off;
			break;
		}
	}
	len = sym->file_off - from + sym->size + 4096;
	buf = malloc(len);
	if (!buf)
		return true;
	n = pt_elf__read(e, from, buf, len);
	hit = n <= 0 ||
	      pt_prologue__entered(buf, (size_t)n, -(int64_t)(sym->file_off - from), 0, skip);
	free(buf);
	return hit;
}

/* A zeroed slot at the end of the table, fid set; not counted until
 * the caller bumps nfuncs. NULL when out of memory. */
static struct pt_func *new_func(struct pt_resolver *r)
{
	struct pt_func *f;

	if (r->nfuncs == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct pt_func *v = realloc(r->funcs, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->funcs = v;
		r->cap = cap;
	}
	f = &r->funcs[r->nfuncs];
	memset(f, 0, sizeof(*f));
	f->fid = (int)r->nfuncs;
	f->lines_spec = -1;
	f->vals_spec = -1;
	return f;
}

static int add_func(struct pt_resolver *r, struct pt_obj *o, size_t symidx, size_t spec)
{
	const char *dem = obj_demangled(o, symidx);
	const struct pt_probe_spec *s = &r->cfg->probes[spec];
	const struct pt_sym *sym = &o->elf->syms[symidx];
	int *slot = sym_slot(o, symidx);
	struct pt_func *f = *slot >= 0 ? &r->funcs[*slot] : NULL;
	uint8_t code[4096];
	ssize_t n;
	bool whole;

	if (f) {
		/* Same function named again (another probe, or an alias
		 * matched by the same glob): one row, union of roles. */
		if ((size_t)f->spec != spec)
			r->spec_nfuncs[spec]++; /* only "found or not" is used */
		f->is_step |= s->is_step;
		f->bucket_mask |= s->bucket_mask;
		if (s->nvals && f->vals_spec < 0)
			f->vals_spec = (int)spec;
		return 0;
	}
	f = new_func(r);
	if (!f)
		return -ENOMEM;
	f->spec = (int)spec;
	f->is_step = s->is_step;
	f->bucket_mask = s->bucket_mask;
	f->vals_spec = s->nvals ? (int)spec : -1;
	f->file_off = sym->file_off;
	f->object = strdup(pt_tracee__view(r->root, o->path));
	f->host_path = strdup(o->host_path);
	/* C++: reports show the demangled name, summary.json both */
	f->symbol = strdup(dem ? dem : sym->name);
	f->mangled = dem ? strdup(sym->name) : NULL;
	if (!f->object || !f->host_path || !f->symbol || (dem && !f->mangled) ||
	    set_aliases(f, o->elf, symidx)) {
		free(f->object);
		free(f->host_path);
		free(f->symbol);
		free(f->mangled);
		for (size_t j = 0; j < f->naliases; j++)
			free(f->aliases[j]);
		free(f->aliases);
		return -ENOMEM;
	}
	/* The whole function, so the walk sees every branch back into the
	 * code it skips; bigger or unsized ones: only a leading endbr64. */
	whole = sym->size && sym->size <= sizeof(code);
	n = pt_elf__read(o->elf, sym->file_off, code, whole ? sym->size : PT_PROLOGUE_MAX_BYTES);
	f->site = pt_prologue__site(code, n > 0 ? (size_t)n : 0,
				    !r->cfg->prologue_skip ? PT_PROLOGUE_SKIP_NONE
				    : whole		   ? PT_PROLOGUE_SKIP_WALK
							   : PT_PROLOGUE_SKIP_ENDBR);
	if (f->site.skip && entered_nearby(o->elf, symidx, f->site.skip))
		f->site = pt_prologue__site(code, n > 0 ? (size_t)n : 0, PT_PROLOGUE_SKIP_NONE);
	if (sym->ifunc)
		f->unusable = "GNU ifunc: the symbol is the resolver, probe the implementation it "
			      "selects instead";
	*slot = f->fid;
	r->nfuncs++;
	r->spec_nfuncs[spec]++;
	return 1;
}

static int match_obj(struct pt_resolver *r, struct pt_obj *o, size_t oi)
{
	int added = 0;

	for (size_t si = 0; si < r->cfg->nprobes; si++) {
		const struct pt_probe_spec *s = &r->cfg->probes[si];
		struct pt_elf *e;
		char lit[256];

		if (s->kind != PT_PROBE_NATIVE || !object_matches(r, s, o))
			continue;
		r->spec_nobjs[si]++;
		if (r->spec_first_obj[si] < 0)
			r->spec_first_obj[si] = (ssize_t)oi;
		e = obj_elf(o);
		if (!e)
			continue;
		if (!o->sym_fid) {
			o->sym_fid = malloc(e->nsyms * sizeof(*o->sym_fid) + 1);
			if (!o->sym_fid)
				return -ENOMEM;
			for (size_t k = 0; k < e->nsyms; k++)
				o->sym_fid[k] = -1;
		}
		pt_demangle__literal(s->symbol, lit, sizeof(lit));
		for (size_t k = 0; k < e->nsyms; k++) {
			const char *name = e->syms[k].name, *dem;
			int err;

			if (fnmatch(s->symbol, name, 0) != 0) {
				/* by its C++ name: only symbols that spell
				 * the glob's longest identifier are demangled */
				if (strncmp(name, "_Z", 2) || (lit[0] && !strstr(name, lit)))
					continue;
				dem = obj_demangled(o, k);
				if (!dem || !pt_demangle__match(s->symbol, dem))
					continue;
			}
			err = add_func(r, o, k, si);
			if (err < 0)
				return err;
			added += err;
		}
	}
	return added;
}

/* The C++ functions' qualified names (C and unmangled names: NULL), for
 * suggestions that compare like with like; NULL when out of memory. With
 * a parameter list in the glob, the whole demangled names. */
static char **cxx_bases(struct pt_obj *o, const char *glob)
{
	char **v = calloc(o->elf->nsyms + 1, sizeof(*v)), buf[4096];

	for (size_t k = 0; v && k < o->elf->nsyms; k++) {
		const char *d = obj_demangled(o, k);

		if (d)
			v[k] = strdup(pt_demangle__params(glob)
					      ? d
					      : pt_demangle__base(d, buf, sizeof(buf)));
	}
	return v;
}

static void no_match_error(struct pt_resolver *r, size_t si, char *err, size_t errlen)
{
	const struct pt_probe_spec *s = &r->cfg->probes[si];
	struct pt_obj *o = &r->objs[r->spec_first_obj[si]];
	const char *near[5];
	size_t nnear = 0, len;
	char **bases = NULL;

	if (!o->elf) {
		snprintf(err, errlen,
			 "%s:%d:%d: error: cannot read symbols of %s for '%s': %s (hint: is it an "
			 "x86-64 ELF file readable by root?)",
			 r->cfg->path, s->line, s->col, o->host_path, s->text,
			 strerror(-o->elf_err));
		return;
	}
	if (pt_demangle__is_cxx_glob(s->symbol))
		bases = cxx_bases(o, s->symbol);
	nnear = bases ? pt_closest((const char *const *)bases, o->elf->nsyms, s->symbol, near, 5)
		      : pt_elf__closest(o->elf, s->symbol, near, 5);
	len = (size_t)snprintf(err, errlen, "%s:%d:%d: error: no function matches '%s' in %s",
			       r->cfg->path, s->line, s->col, s->symbol, o->path);
	if (len < errlen && nnear) {
		len += (size_t)snprintf(err + len, errlen - len, " (closest:");
		for (size_t i = 0; i < nnear && len < errlen; i++)
			len += (size_t)snprintf(err + len, errlen - len, "%s %s", i ? "," : "",
						near[i]);
		if (len < errlen)
			len += (size_t)snprintf(err + len, errlen - len, ")");
	}
	if (len < errlen)
		snprintf(err + len, errlen - len,
			 " (hint: list them with `nm -D%s --defined-only %s`%s)", bases ? "C" : "",
			 o->host_path,
			 o->elf->has_symtab ? ""
					    : "; the file is stripped, only exported "
					      "functions can be probed");
	for (size_t k = 0; bases && k < o->elf->nsyms; k++)
		free(bases[k]);
	free(bases);
}

int pt_resolver__update(struct pt_resolver *r, const struct pt_maps *maps, bool strict, char *err,
			size_t errlen)
{
	int added = 0;

	for (size_t i = 0; i < maps->n; i++) {
		const struct pt_mapping *mp = &maps->v[i];
		int n;

		if (!pt_mapping__is_exec_file(mp))
			continue;
		n = add_obj(r, mp);
		if (n < 0)
			goto oom;
		if (n == 0)
			continue;
		n = match_obj(r, &r->objs[r->nobjs - 1], r->nobjs - 1);
		if (n < 0)
			goto oom;
		added += n;
	}
	if (strict) {
		for (size_t si = 0; si < r->cfg->nprobes; si++) {
			if (r->spec_nobjs[si] && !r->spec_nfuncs[si]) {
				no_match_error(r, si, err, errlen);
				return -ENOENT;
			}
		}
	}
	return added;
oom:
	snprintf(err, errlen, "out of memory while resolving probes");
	return -ENOMEM;
}

int pt_resolver__add_py(struct pt_resolver *r, const size_t *specs, size_t nspecs,
			const char *filename, const char *qualname, unsigned int line)
{
	struct pt_func *f;

	if (!nspecs)
		return -EINVAL;
	for (size_t i = 0; i < r->nfuncs; i++) {
		f = &r->funcs[i];
		if (f->py && f->py_line == line && !strcmp(f->symbol, qualname) &&
		    !strcmp(f->object, filename))
			return f->fid;
	}
	f = new_func(r);
	if (!f)
		return -ENOMEM;
	f->spec = (int)specs[0];
	f->py = true;
	f->py_line = line;
	for (size_t i = 0; i < nspecs; i++) {
		const struct pt_probe_spec *s = &r->cfg->probes[specs[i]];

		f->is_step |= s->is_step;
		f->bucket_mask |= s->bucket_mask;
		if (s->is_lines && f->lines_spec < 0)
			f->lines_spec = (int)specs[i];
		if (s->nvals && f->vals_spec < 0)
			f->vals_spec = (int)specs[i];
		r->spec_nfuncs[specs[i]]++;
	}
	f->object = strdup(filename);
	f->symbol = strdup(qualname);
	if (!f->object || !f->symbol) {
		free(f->object);
		free(f->symbol);
		return -ENOMEM;
	}
	r->nfuncs++;
	return f->fid;
}

size_t pt_resolver__nfuncs(const struct pt_resolver *r)
{
	return r->nfuncs;
}

const struct pt_func *pt_resolver__func(const struct pt_resolver *r, size_t fid)
{
	return fid < r->nfuncs ? &r->funcs[fid] : NULL;
}

size_t pt_resolver__spec_nfuncs(const struct pt_resolver *r, size_t spec)
{
	return spec < r->cfg->nprobes ? r->spec_nfuncs[spec] : 0;
}

size_t pt_resolver__spec_nobjects(const struct pt_resolver *r, size_t spec)
{
	return spec < r->cfg->nprobes ? r->spec_nobjs[spec] : 0;
}
