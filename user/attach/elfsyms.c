// SPDX-License-Identifier: BSD-2-Clause
/*
 * Function symbols and their file offsets, read with libelf.
 *
 * A uprobe is placed by (inode, file offset), not by virtual address, so
 * each symbol's st_value is translated through the PT_LOAD segment that
 * holds it: file_off = st_value - p_vaddr + p_offset. This is the same
 * formula for ET_EXEC (absolute st_value) and ET_DYN (PIE and shared
 * libraries, st_value relative to a load base of 0), and unlike
 * st_value - sh_addr + sh_offset it does not depend on section headers,
 * which strip may rewrite.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"

/* Names longer than this are not compared in pt_elf__closest() (C++
 * manglings run to kilobytes; a typo'd probe name never does). */
#define CLOSEST_MAX_LEN 256

/*
 * The fd stays open for pt_elf__read(): reading through the descriptor we
 * parsed guarantees the bytes come from the same inode as the offsets,
 * even if a package upgrade replaces the file under the same path.
 */
struct pt_elf_priv {
	struct pt_elf pub;
	int fd;
	/* Copies of the .symtab and .dynsym string tables that
	 * pub.syms[].name point into (see add_syms()). */
	char *strtab[2];
};

static struct pt_elf_priv *priv(const struct pt_elf *e)
{
	return (struct pt_elf_priv *)((char *)e - offsetof(struct pt_elf_priv, pub));
}

struct seg {
	uint64_t vaddr, filesz, offset;
	bool exec;
};

void pt_sym__strip_version(char *name)
{
	char *at = strchr(name, '@');

	if (at)
		*at = '\0';
}

static int load_segs(Elf *elf, struct seg **out, size_t *nout)
{
	struct seg *segs;
	size_t phnum, i, n = 0;
	GElf_Phdr ph;

	*out = NULL;
	*nout = 0;
	if (elf_getphdrnum(elf, &phnum))
		return -ENOEXEC;
	if (!phnum)
		return 0;
	segs = calloc(phnum, sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		segs[n].vaddr = ph.p_vaddr;
		segs[n].filesz = ph.p_filesz;
		segs[n].offset = ph.p_offset;
		segs[n].exec = ph.p_flags & PF_X;
		n++;
	}
	*out = segs;
	*nout = n;
	return 0;
}

/*
 * Executable segments first: with -z separate-code an address can only be
 * in one PT_LOAD anyway, but old linkers overlapped the page-aligned ends
 * of text and data, and code must be translated through the text one.
 */
static bool vaddr_to_off(const struct seg *segs, size_t n, uint64_t v, uint64_t *off)
{
	int pass;
	size_t i;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			if (segs[i].exec != (pass == 0))
				continue;
			if (v >= segs[i].vaddr && v - segs[i].vaddr < segs[i].filesz) {
				*off = v - segs[i].vaddr + segs[i].offset;
				return true;
			}
		}
	}
	return false;
}

/*
 * Names point into one copy of the table's string table (*strtab, owned by
 * the caller), not into a strdup() each: any number of symbols may name the
 * same long string, and a copy per symbol would let a file of N bytes cost
 * O(N^2) memory.
 */
static int add_syms(struct pt_elf *e, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		    const struct seg *segs, size_t nsegs, size_t *cap, char **strtab)
{
	Elf_Data *data = elf_getdata(scn, NULL), *sdata;
	Elf_Scn *sscn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr ssh;
	size_t i, n;
	GElf_Sym s;

	/* As elf_strptr() would: a compressed table holds no names. */
	if (!data || !sh->sh_entsize || !sscn || !gelf_getshdr(sscn, &ssh) ||
	    ssh.sh_type != SHT_STRTAB || (ssh.sh_flags & SHF_COMPRESSED))
		return 0;
	sdata = elf_getdata(sscn, NULL);
	if (!sdata || !sdata->d_buf || !sdata->d_size)
		return 0;
	/* The extra NUL ends a last string the file left unterminated. */
	*strtab = malloc(sdata->d_size + 1);
	if (!*strtab)
		return -ENOMEM;
	memcpy(*strtab, sdata->d_buf, sdata->d_size);
	(*strtab)[sdata->d_size] = '\0';

	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		struct pt_sym *sym;
		char *name;
		uint64_t off;
		int type;

		if (!gelf_getsym(data, i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		if (s.st_name >= sdata->d_size)
			continue;
		name = *strtab + s.st_name;
		if (!*name || *name == '@')
			continue;
		if (!vaddr_to_off(segs, nsegs, s.st_value, &off))
			continue; /* not in the file: nothing to probe */

		if (e->nsyms == *cap) {
			size_t ncap = *cap ? *cap * 2 : 256;
			struct pt_sym *v = realloc(e->syms, ncap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			e->syms = v;
			*cap = ncap;
		}
		sym = &e->syms[e->nsyms];
		/* In place: a name that starts inside "foo@@V" is cut at the
		 * same '@' whichever symbol is stripped first. */
		pt_sym__strip_version(name);
		sym->name = name;
		sym->addr = s.st_value;
		sym->size = s.st_size;
		sym->file_off = off;
		sym->ifunc = type == STT_GNU_IFUNC;
		sym->global = GELF_ST_BIND(s.st_info) != STB_LOCAL;
		e->nsyms++;
	}
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct pt_sym *x = a, *y = b;

	if (x->file_off != y->file_off)
		return x->file_off < y->file_off ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The same function is usually in both .symtab and .dynsym: keep one,
 * with the most informative flags. Aliases (other names) stay. */
static void dedupe(struct pt_elf *e)
{
	size_t i, out = 0;

	for (i = 0; i < e->nsyms; i++) {
		struct pt_sym *cur = &e->syms[i];

		if (out && !cmp_sym(&e->syms[out - 1], cur)) {
			struct pt_sym *keep = &e->syms[out - 1];

			keep->global |= cur->global;
			keep->ifunc |= cur->ifunc;
			if (cur->size > keep->size)
				keep->size = cur->size;
			continue;
		}
		e->syms[out++] = *cur;
	}
	e->nsyms = out;
}

static int read_elf(struct pt_elf *e, int fd)
{
	struct seg *segs = NULL;
	struct pt_elf_priv *p = priv(e);
	bool seen[2] = { false, false };
	Elf_Scn *scn = NULL;
	size_t nsegs, cap = 0;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf *elf;
	int err, t;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	err = -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    !gelf_getehdr(elf, &eh))
		goto out;
	if (eh.e_machine != EM_X86_64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		goto out;
	e->e_type = eh.e_type;

	err = load_segs(elf, &segs, &nsegs);
	if (err)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			e->has_symtab = true;
		else if (sh.sh_type != SHT_DYNSYM)
			continue;
		/*
		 * The gABI allows one table of each kind; a file with N more
		 * section headers all pointing at one table would otherwise
		 * yield N times its symbols, O(N^2) for a file of N bytes.
		 */
		t = sh.sh_type == SHT_DYNSYM;
		if (seen[t])
			continue;
		seen[t] = true;
		err = add_syms(e, elf, scn, &sh, segs, nsegs, &cap, &p->strtab[t]);
		if (err)
			goto out;
	}
	if (e->nsyms) {
		qsort(e->syms, e->nsyms, sizeof(*e->syms), cmp_sym);
		dedupe(e);
	}
	err = 0;
out:
	free(segs);
	elf_end(elf);
	return err;
}

int pt_elf__open(struct pt_elf **out, const char *path)
{
	struct pt_elf_priv *p;
	int err;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (p->fd < 0) {
		err = -errno;
		free(p);
		return err;
	}
	p->pub.path = strdup(path);
	if (!p->pub.path) {
		err = -ENOMEM;
		goto err;
	}
	err = read_elf(&p->pub, p->fd);
	if (err)
		goto err;
	*out = &p->pub;
	return 0;
err:
	pt_elf__free(&p->pub);
	return err;
}

void pt_elf__free(struct pt_elf *e)
{
	struct pt_elf_priv *p;
	size_t i;

	if (!e)
		return;
	p = priv(e);
	for (i = 0; i < 2; i++)
		free(p->strtab[i]);
	free(e->syms);
	free(e->path);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

ssize_t pt_elf__read(const struct pt_elf *e, uint64_t file_off, void *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	if (file_off > (uint64_t)LLONG_MAX)
		return -EINVAL;
	while (done < len) {
		n = pread(priv(e)->fd, (char *)buf + done, len - done, file_off + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			break;
		done += n;
	}
	return done;
}

/* Levenshtein distance with one row of O(min) memory; both strings are
 * at most CLOSEST_MAX_LEN long, so the work per name is bounded. */
static unsigned int edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	unsigned int row[CLOSEST_MAX_LEN + 1];
	size_t i, j;

	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		unsigned int diag = row[0], up;

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned int best;

			up = row[j];
			best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

struct cand {
	unsigned int dist;
	const char *name;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t pt_closest(const char *const *names, size_t nnames, const char *want, const char **out,
		  size_t max)
{
	size_t lw = strlen(want), i, n = 0, nout = 0;
	struct cand *c;

	if (!max || lw > CLOSEST_MAX_LEN || !nnames)
		return 0;
	c = malloc(nnames * sizeof(*c));
	if (!c)
		return 0;
	for (i = 0; i < nnames; i++) {
		const char *name = names[i];
		size_t ln = name ? strlen(name) : CLOSEST_MAX_LEN + 1;

		if (ln > CLOSEST_MAX_LEN)
			continue;
		c[n].dist = edit_distance(name, ln, want, lw);
		c[n].name = name;
		n++;
	}
	qsort(c, n, sizeof(*c), cmp_cand);
	/* Equal names sort next to each other (same distance, same name). */
	for (i = 0; i < n && nout < max; i++) {
		if (nout && !strcmp(out[nout - 1], c[i].name))
			continue;
		out[nout++] = c[i].name;
	}
	free(c);
	return nout;
}

size_t pt_elf__closest(const struct pt_elf *e, const char *want, const char **out, size_t max)
{
	const char **names;
	size_t i, n;

	if (!e || !e->nsyms)
		return 0;
	names = malloc(e->nsyms * sizeof(*names));
	if (!names)
		return 0;
	for (i = 0; i < e->nsyms; i++)
		names[i] = e->syms[i].name;
	n = pt_closest(names, e->nsyms, want, out, max);
	free(names);
	return n;
}

/* The first DT_RUNPATH, else the first DT_RPATH, of the dynamic section. */
static int dyn_runpath(Elf *elf, char *buf, size_t len)
{
	size_t off[2] = { SIZE_MAX, SIZE_MAX }; /* RUNPATH, RPATH */
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Dyn dyn;
		const char *str;
		size_t n, k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			return -ENOEXEC;
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n && gelf_getdyn(d, (int)i, &dyn); i++) {
			if (dyn.d_tag == DT_NULL)
				break;
			k = dyn.d_tag == DT_RUNPATH ? 0 : dyn.d_tag == DT_RPATH ? 1 : 2;
			if (k < 2 && off[k] == SIZE_MAX)
				off[k] = (size_t)dyn.d_un.d_val;
		}
		k = off[0] != SIZE_MAX ? 0 : 1;
		if (off[k] == SIZE_MAX)
			return 0;
		/* bounds-checked by libelf against its string table */
		str = elf_strptr(elf, sh.sh_link, off[k]);
		if (!str)
			return -ENOEXEC;
		if (strlen(str) >= len)
			return -ENAMETOOLONG;
		strcpy(buf, str);
		return 0;
	}
	return 0;
}

int pt_elf__runpath(const char *path, char *buf, size_t len)
{
	GElf_Ehdr eh;
	Elf *elf;
	int fd, err = -ENOEXEC;

	if (!len)
		return -ENAMETOOLONG;
	buf[0] = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getclass(elf) == ELFCLASS64 &&
	    gelf_getehdr(elf, &eh) && eh.e_machine == EM_X86_64)
		err = dyn_runpath(elf, buf, len);
	if (err)
		buf[0] = 0;
	elf_end(elf);
	close(fd);
	return err;
}
