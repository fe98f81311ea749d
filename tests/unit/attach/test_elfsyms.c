// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_elf against ground truth that does not come from pt_elf: the loader.
 * A function's file offset is where the kernel mapped it from, so for an
 * address A inside the maps line "start-end perms offset ... path",
 * file_off = A - start + offset. Addresses come from dlsym()/dlvsym() for
 * the fixture library (and libc) and from the fixture executables, which
 * print their own function addresses and wait on stdin while we read
 * /proc/CHILD/maps. The maps lines are parsed here with sscanf, not with
 * pt_maps.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlvsym, dladdr */
#endif
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "attach/elfsyms.h"

#define MAX_FNS 32

struct fn {
	char name[64];
	uintptr_t addr;
};

static void fixture(char *buf, size_t sz, const char *name)
{
	const char *dir = getenv("PT_FIXTURES");
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s/%s", dir ? dir : ".output/fixtures", name);
	/* /proc/PID/maps shows canonical paths. */
	if (!realpath(tmp, buf))
		fail_msg("%s: %s (make the fixtures first)", tmp, strerror(errno));
	(void)sz;
}

static struct pt_elf *open_fixture(const char *name)
{
	char path[PATH_MAX];
	struct pt_elf *e = NULL;
	int err;

	fixture(path, sizeof(path), name);
	err = pt_elf__open(&e, path);
	if (err)
		fail_msg("pt_elf__open(%s): %s", path, strerror(-err));
	assert_non_null(e);
	assert_string_equal(e->path, path);
	return e;
}

/* File offset of addr in pid's address space, or fail. */
static uint64_t maps_file_off(int pid, const char *path, uintptr_t addr)
{
	char mpath[64], line[PATH_MAX + 128];
	uint64_t off = 0;
	int found = 0;
	FILE *f;

	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", pid);
	f = fopen(mpath, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, moff;
		char perms[8], file[PATH_MAX];
		int n;

		file[0] = '\0';
		n = sscanf(line, "%lx-%lx %7s %lx %*s %*u %s", &start, &end, perms, &moff, file);
		if (n < 4 || addr < start || addr >= end)
			continue;
		if (strcmp(file, path))
			fail_msg("%#lx is in %s, not %s", (unsigned long)addr, file, path);
		if (perms[2] != 'x')
			fail_msg("%#lx is in a non-executable mapping", (unsigned long)addr);
		off = addr - start + moff;
		found = 1;
		break;
	}
	fclose(f);
	if (!found)
		fail_msg("%#lx not mapped in %d", (unsigned long)addr, pid);
	return off;
}

static const struct pt_sym *find_sym(const struct pt_elf *e, const char *name)
{
	const struct pt_sym *hit = NULL;
	size_t i;

	for (i = 0; i < e->nsyms; i++) {
		if (strcmp(e->syms[i].name, name))
			continue;
		if (hit)
			fail_msg("%s listed twice", name);
		hit = &e->syms[i];
	}
	return hit;
}

static size_t count_name(const struct pt_elf *e, const char *name)
{
	size_t i, n = 0;

	for (i = 0; i < e->nsyms; i++)
		n += !strcmp(e->syms[i].name, name);
	return n;
}

/* Sorted by (file_off, name), each pair once, no version suffixes. */
static void check_invariants(const struct pt_elf *e)
{
	size_t i;

	assert_true(e->nsyms > 0);
	for (i = 0; i < e->nsyms; i++) {
		const struct pt_sym *s = &e->syms[i];

		assert_non_null(s->name);
		assert_true(s->name[0] != '\0');
		if (strchr(s->name, '@'))
			fail_msg("version suffix left in %s", s->name);
		assert_true(s->addr != 0);
		if (!i)
			continue;
		if (s[-1].file_off > s->file_off ||
		    (s[-1].file_off == s->file_off && strcmp(s[-1].name, s->name) >= 0))
			fail_msg("not sorted or duplicated: %s@%#lx then %s@%#lx", s[-1].name,
				 (unsigned long)s[-1].file_off, s->name,
				 (unsigned long)s->file_off);
	}
}

/* Run a fixture executable, collect the "name address" lines it prints,
 * check pt_elf's offsets against /proc/CHILD/maps, then let it exit. */
static void check_exe(const char *name, const struct pt_elf *e, struct fn *fns, size_t *nfns)
{
	int in[2], out[2], status;
	char path[PATH_MAX], line[256];
	FILE *f;
	pid_t pid;
	size_t i, n = 0;

	fixture(path, sizeof(path), name);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	f = fdopen(out[0], "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		void *p;

		if (!strcmp(line, "ready\n"))
			break;
		assert_true(n < MAX_FNS);
		assert_int_equal(sscanf(line, "%63s %p", fns[n].name, &p), 2);
		fns[n].addr = (uintptr_t)p;
		n++;
	}
	assert_true(n >= 10);

	for (i = 0; i < n; i++) {
		uint64_t want = maps_file_off(pid, path, fns[i].addr);
		const struct pt_sym *s = find_sym(e, fns[i].name);

		if (!s) {
			/* strip -s drops local symbols; everything else must be there. */
			if (!e->has_symtab && !strcmp(fns[i].name, "fx_static"))
				continue;
			fail_msg("%s: %s missing", name, fns[i].name);
		}
		if (s->file_off != want)
			fail_msg("%s: %s file_off %#lx, loader says %#lx", name, fns[i].name,
				 (unsigned long)s->file_off, (unsigned long)want);
	}

	close(in[1]); /* EOF: the child exits */
	fclose(f);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* Its exit code checks that fx_add and the ifunc computed right. */
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	*nfns = n;
}

static void test_pie(void **state)
{
	struct pt_elf *e = open_fixture("elf_pie");
	struct fn fns[MAX_FNS];
	size_t n;

	assert_int_equal(e->e_type, ET_DYN);
	assert_true(e->has_symtab);
	check_invariants(e);
	check_exe("elf_pie", e, fns, &n);

	assert_non_null(find_sym(e, "fx_static"));
	assert_false(find_sym(e, "fx_static")->global);
	assert_true(find_sym(e, "fx_add")->global);
	assert_true(find_sym(e, "main")->global);
	/* fx_add is in .symtab and (-rdynamic) .dynsym: listed once. */
	assert_int_equal(count_name(e, "fx_add"), 1);
	pt_elf__free(e);
}

static void test_nopie(void **state)
{
	struct pt_elf *e = open_fixture("elf_nopie");
	const struct pt_sym *s;
	struct fn fns[MAX_FNS];
	size_t i, n;

	assert_int_equal(e->e_type, ET_EXEC);
	assert_true(e->has_symtab);
	check_invariants(e);
	check_exe("elf_nopie", e, fns, &n);

	/* Not relocated: st_value is the run-time address, and differs from
	 * the file offset (text at 0x401000, file offset 0x1000). */
	for (i = 0; i < n; i++) {
		s = find_sym(e, fns[i].name);
		assert_int_equal(s->addr, fns[i].addr);
		assert_true(s->file_off < s->addr);
	}
	pt_elf__free(e);
}

static void test_stripped(void **state)
{
	struct pt_elf *e = open_fixture("elf_stripped");
	struct fn fns[MAX_FNS];
	size_t n;

	assert_int_equal(e->e_type, ET_DYN);
	assert_false(e->has_symtab);
	check_invariants(e);
	check_exe("elf_stripped", e, fns, &n);
	assert_null(find_sym(e, "fx_static"));
	assert_non_null(find_sym(e, "fx_asm_nop5"));
	assert_non_null(find_sym(e, "fx_add_alias"));
	assert_true(find_sym(e, "fx_ifunc")->ifunc);
	pt_elf__free(e);
}

/* Offsets in the library against dlsym() and this process's maps. */
static void test_lib(void **state)
{
	/* clang-format off */
	static const char *const names[] = {
		"fx_add", "fx_add_alias", "fx_mul", "fx_call_static", "fx_asm_push_rbp",
		"fx_asm_push_r12", "fx_asm_mov_first", "fx_asm_endbr_push", "fx_asm_endbr_mov",
		"fx_asm_nop5",
	};
	/* clang-format on */
	struct pt_elf *e = open_fixture("libelf_fixture.so");
	char path[PATH_MAX];
	long (*add)(long, long);
	long (*call_static)(long);
	uint8_t buf[16];
	void *h;
	size_t i;

	assert_int_equal(e->e_type, ET_DYN);
	assert_true(e->has_symtab);
	check_invariants(e);
	fixture(path, sizeof(path), "libelf_fixture.so");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("dlopen: %s", dlerror());

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *p = dlsym(h, names[i]);
		const struct pt_sym *s = find_sym(e, names[i]);

		assert_non_null(p);
		if (!s)
			fail_msg("%s missing", names[i]);
		assert_int_equal(s->file_off, maps_file_off(getpid(), path, (uintptr_t)p));
		/* -Ttext-segment=0x200000: st_value is not the file offset. */
		assert_int_equal(s->addr - s->file_off, 0x200000);
		/* The bytes pt_elf reads are the code that runs. */
		assert_int_equal(pt_elf__read(e, s->file_off, buf, sizeof(buf)), sizeof(buf));
		assert_memory_equal(buf, p, sizeof(buf));
	}

	/* Aliases: two entries, same offset, and really the same code. */
	assert_int_equal(find_sym(e, "fx_add")->file_off, find_sym(e, "fx_add_alias")->file_off);
	add = (long (*)(long, long))dlsym(h, "fx_add_alias");
	assert_int_equal(add(2, 3), 5);
	call_static = (long (*)(long))dlsym(h, "fx_call_static");
	assert_int_equal(call_static(10), 9);
	assert_false(find_sym(e, "fx_static")->global);

	dlclose(h);
	pt_elf__free(e);
}

/* "fx_versioned@FX_1" and "fx_versioned@@FX_2" in .symtab: two entries
 * named fx_versioned, at the two versions' offsets. */
static void test_versioned(void **state)
{
	struct pt_elf *e = open_fixture("libelf_fixture.so");
	uint64_t off1, off2, got[2];
	char path[PATH_MAX];
	size_t i, n = 0;
	void *h, *v1, *v2;

	fixture(path, sizeof(path), "libelf_fixture.so");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	v1 = dlvsym(h, "fx_versioned", "FX_1");
	v2 = dlvsym(h, "fx_versioned", "FX_2");
	assert_non_null(v1);
	assert_non_null(v2);
	assert_ptr_equal(dlsym(h, "fx_versioned"), v2); /* @@ is the default */
	off1 = maps_file_off(getpid(), path, (uintptr_t)v1);
	off2 = maps_file_off(getpid(), path, (uintptr_t)v2);
	assert_true(off1 != off2);

	for (i = 0; i < e->nsyms; i++) {
		if (strcmp(e->syms[i].name, "fx_versioned"))
			continue;
		assert_true(n < 2);
		got[n++] = e->syms[i].file_off;
	}
	assert_int_equal(n, 2);
	/* Sorted by offset, and v1 is defined first in the source. */
	assert_int_equal(got[0], off1 < off2 ? off1 : off2);
	assert_int_equal(got[1], off1 < off2 ? off2 : off1);
	assert_int_equal(find_sym(e, "fx_versioned_v1")->file_off, off1);
	assert_int_equal(find_sym(e, "fx_versioned_v2")->file_off, off2);
	dlclose(h);
	pt_elf__free(e);
}

static void test_ifunc(void **state)
{
	static const char *const files[] = { "elf_pie", "elf_nopie", "libelf_fixture.so" };
	size_t i, j;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct pt_elf *e = open_fixture(files[i]);
		const struct pt_sym *f = find_sym(e, "fx_ifunc");
		const struct pt_sym *r = find_sym(e, "fx_ifunc_resolver");

		assert_non_null(f);
		assert_non_null(r);
		assert_true(f->ifunc);
		assert_true(f->global);
		/* The ifunc symbol points at its resolver, not at the implementation. */
		assert_int_equal(f->file_off, r->file_off);
		assert_int_equal(f->addr, r->addr);
		assert_false(r->ifunc);
		for (j = 0; j < e->nsyms; j++)
			if (e->syms[j].ifunc && strcmp(e->syms[j].name, "fx_ifunc"))
				fail_msg("%s: %s flagged ifunc", files[i], e->syms[j].name);
		pt_elf__free(e);
	}
}

/* A real, stripped, versioned system library: Debian's libc.so.6. */
static void test_libc(void **state)
{
	static const char *const names[] = { "getpid", "qsort", "fopen", "strtol" };
	struct pt_elf *e;
	Dl_info info;
	char path[PATH_MAX];
	void *h, *p;
	size_t i;

	h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	p = dlsym(h, "getpid");
	assert_non_null(p);
	assert_true(dladdr(p, &info) != 0);
	if (!realpath(info.dli_fname, path))
		fail_msg("realpath(%s)", info.dli_fname);
	assert_int_equal(pt_elf__open(&e, path), 0);
	check_invariants(e);

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct pt_sym *s;

		/* The handle, not RTLD_DEFAULT: sanitizers interpose some of these. */
		p = dlsym(h, names[i]);
		assert_non_null(p);
		s = find_sym(e, names[i]);
		if (!s)
			fail_msg("libc: %s missing", names[i]);
		assert_int_equal(s->file_off, maps_file_off(getpid(), path, (uintptr_t)p));
	}
	/* memcpy: one ifunc (@@GLIBC_2.14) and one plain (@GLIBC_2.2.5). */
	assert_int_equal(count_name(e, "memcpy"), 2);
	pt_elf__free(e);
	dlclose(h);
}

static void test_read(void **state)
{
	struct pt_elf *e = open_fixture("elf_nopie");
	const struct pt_sym *s = find_sym(e, "fx_asm_push_rbp");
	uint8_t a[32], b[32];
	char path[PATH_MAX];
	off_t size;
	int fd;

	fixture(path, sizeof(path), "elf_nopie");
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	size = lseek(fd, 0, SEEK_END);
	assert_int_equal(pread(fd, a, sizeof(a), s->file_off), sizeof(a));
	assert_int_equal(pt_elf__read(e, s->file_off, b, sizeof(b)), sizeof(b));
	assert_memory_equal(a, b, sizeof(a));
	assert_int_equal(b[0], 0x55);

	/* Short at EOF, nothing past it. */
	assert_int_equal(pt_elf__read(e, size - 3, b, sizeof(b)), 3);
	assert_int_equal(pt_elf__read(e, size, b, sizeof(b)), 0);
	assert_int_equal(pt_elf__read(e, size + 4096, b, sizeof(b)), 0);
	assert_int_equal(pt_elf__read(e, 0, b, 0), 0);
	assert_int_equal(pt_elf__read(e, 0, b, 4), 4);
	assert_memory_equal(b, ELFMAG, SELFMAG);
	assert_true(pt_elf__read(e, UINT64_MAX, b, 4) < 0);
	close(fd);
	pt_elf__free(e);
}

static void test_strip_version(void **state)
{
	static const char *const in[][2] = {
		{ "memcpy@@GLIBC_2.14", "memcpy" },
		{ "fx_versioned@FX_1", "fx_versioned" },
		{ "plain", "plain" },
		{ "a@b@c", "a" },
		{ "@V", "" },
		{ "", "" },
	};
	char buf[64];
	size_t i;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", in[i][0]);
		pt_sym__strip_version(buf);
		assert_string_equal(buf, in[i][1]);
	}
}

static void test_closest_fixture(void **state)
{
	struct pt_elf *e = open_fixture("libelf_fixture.so");
	const char *out[8];

	assert_int_equal(pt_elf__closest(e, "fx_mult", out, 1), 1);
	assert_string_equal(out[0], "fx_mul");
	assert_int_equal(pt_elf__closest(e, "fx_ifunk", out, 1), 1);
	assert_string_equal(out[0], "fx_ifunc");
	/* fx_versioned is listed twice (two versions) but named once; then
	 * a tie at distance 3 broken by name. */
	assert_int_equal(pt_elf__closest(e, "fx_versioned", out, 3), 3);
	assert_string_equal(out[0], "fx_versioned");
	assert_string_equal(out[1], "fx_versioned_v1");
	assert_string_equal(out[2], "fx_versioned_v2");
	assert_int_equal(pt_elf__closest(e, "fx_mul", out, 0), 0);
	pt_elf__free(e);
}

static void test_closest_synthetic(void **state)
{
	char longname[300];
	/* clang-format off */
	struct pt_sym syms[] = {
		{ .name = "alpha" }, { .name = "Alpha" }, { .name = "alpah" }, { .name = "beta" },
		{ .name = "alpha" }, { .name = longname }, { .name = "" },
	};
	/* clang-format on */
	struct pt_elf e = { .syms = syms, .nsyms = sizeof(syms) / sizeof(syms[0]) };
	const char *out[16];
	char longwant[300];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';

	/* Case-sensitive: Alpha is 1 away, alpah 2 (no transpositions). */
	assert_int_equal(pt_elf__closest(&e, "alpha", out, 16), 5);
	assert_string_equal(out[0], "alpha");
	assert_string_equal(out[1], "Alpha");
	assert_string_equal(out[2], "alpah");
	assert_string_equal(out[3], "beta"); /* 4: b-e-t for a-l-p-h, drop a */
	assert_string_equal(out[4], "");     /* 5; the 299-char name is skipped */

	/* Wanted names past the bound are not compared at all. */
	memset(longwant, 'a', sizeof(longwant) - 1);
	longwant[sizeof(longwant) - 1] = '\0';
	assert_int_equal(pt_elf__closest(&e, longwant, out, 16), 0);
	/* 256 is still in bounds. */
	longwant[256] = '\0';
	assert_int_equal(pt_elf__closest(&e, longwant, out, 1), 1);

	e.nsyms = 0;
	assert_int_equal(pt_elf__closest(&e, "alpha", out, 16), 0);
}

static void test_errors(void **state)
{
	char path[] = "/tmp/pt_elfsyms_XXXXXX", fx[PATH_MAX];
	unsigned char hdr[64];
	struct pt_elf *e = (struct pt_elf *)1;
	int fd, src;

	assert_int_equal(pt_elf__open(&e, "/nonexistent/libnope.so"), -ENOENT);
	assert_null(e);
	assert_int_equal(pt_elf__open(&e, "tests/fixtures/maps/normal.txt"), -ENOEXEC);
	assert_null(e);
	pt_elf__free(NULL);

	/* The header of a real x86-64 ELF, edited: empty, aarch64, 32-bit, ET_REL. */
	fixture(fx, sizeof(fx), "elf_pie");
	src = open(fx, O_RDONLY);
	assert_true(src >= 0);
	assert_int_equal(read(src, hdr, sizeof(hdr)), sizeof(hdr));
	close(src);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(pt_elf__open(&e, path), -ENOEXEC);

	hdr[18] = EM_AARCH64; /* e_machine */
	hdr[19] = 0;
	assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
	assert_int_equal(pt_elf__open(&e, path), -ENOEXEC);
	hdr[18] = EM_X86_64;
	hdr[EI_CLASS] = ELFCLASS32;
	assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
	assert_int_equal(pt_elf__open(&e, path), -ENOEXEC);
	hdr[EI_CLASS] = ELFCLASS64;
	hdr[16] = ET_REL; /* e_type */
	assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
	assert_int_equal(pt_elf__open(&e, path), -ENOEXEC);
	assert_null(e);
	close(fd);
	unlink(path);
}

/*
 * Regression cases found while fuzzing pt_elf__open (tests/fuzz/fuzz_elf.c):
 * files whose symbol count or name bytes grew with the square of their size.
 *
 * crafted_elf() writes a minimal x86-64 ET_EXEC to a temporary file: one
 * PT_LOAD over the whole file, one array of nsym - 1 STT_FUNC symbols at
 * CRAFT_BASE + i, and ntab (SHT_STRTAB, SHT_SYMTAB) section pairs that all
 * use that array, string table j starting j bytes into one run of namelen
 * 'f's. Symbol i names offset i of it, or offset 1 for all when same_name.
 */
#define CRAFT_BASE 0x400000

static void crafted_elf(char *path, size_t ntab, size_t nsym, size_t namelen, bool same_name)
{
	size_t strsz = namelen + 2, stroff, symoff, shoff, size, i;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	Elf64_Sym *sym;
	char *buf;
	int fd;

	stroff = sizeof(*eh) + sizeof(*ph);
	symoff = (stroff + strsz + 7) & ~(size_t)7;
	shoff = symoff + nsym * sizeof(*sym);
	size = shoff + (1 + 2 * ntab) * sizeof(*sh);
	buf = calloc(1, size);
	assert_non_null(buf);

	eh = (Elf64_Ehdr *)buf;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = shoff;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 1 + 2 * ntab;

	ph = (Elf64_Phdr *)(buf + sizeof(*eh));
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_vaddr = ph->p_paddr = CRAFT_BASE;
	ph->p_filesz = ph->p_memsz = size;
	ph->p_align = 0x1000;

	memset(buf + stroff + 1, 'f', namelen);
	sym = (Elf64_Sym *)(buf + symoff);
	for (i = 1; i < nsym; i++) {
		sym[i].st_name = same_name ? 1 : i;
		sym[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		sym[i].st_shndx = 1;
		sym[i].st_value = CRAFT_BASE + i;
		sym[i].st_size = 1;
	}

	sh = (Elf64_Shdr *)(buf + shoff);
	for (i = 0; i < ntab; i++) {
		Elf64_Shdr *str = &sh[1 + 2 * i], *tab = &sh[2 + 2 * i];

		str->sh_type = SHT_STRTAB;
		str->sh_offset = stroff + i;
		str->sh_size = strsz - i;
		str->sh_addralign = 1;
		tab->sh_type = SHT_SYMTAB;
		tab->sh_offset = symoff;
		tab->sh_size = nsym * sizeof(*sym);
		tab->sh_link = 1 + 2 * i;
		tab->sh_info = 1;
		tab->sh_entsize = sizeof(*sym);
		tab->sh_addralign = 8;
	}

	strcpy(path, "/tmp/pt_elfsyms_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
}

/* Only the first .symtab is read: 64 section pairs over one 8-symbol table
 * gave 512 symbols (each table's names differ), and N headers over a table
 * of N symbols gave N^2. */
/* DT_RUNPATH, DT_RPATH or none; short buffers and non-ELF files refused */
static void test_runpath(void **state)
{
	char path[PATH_MAX], rp[64];

	fixture(path, sizeof(path), "elf_pie");
	assert_int_equal(pt_elf__runpath(path, rp, sizeof(rp)), 0);
	assert_string_equal(rp, "$ORIGIN/../lib:/opt/fx");
	assert_int_equal(pt_elf__runpath(path, rp, 8), -ENAMETOOLONG);
	assert_string_equal(rp, "");
	fixture(path, sizeof(path), "elf_nopie");
	assert_int_equal(pt_elf__runpath(path, rp, sizeof(rp)), 0);
	assert_string_equal(rp, "/opt/fx-old");
	fixture(path, sizeof(path), "libelf_fixture.so");
	assert_int_equal(pt_elf__runpath(path, rp, sizeof(rp)), 0);
	assert_string_equal(rp, "");
	/* the stripped copy keeps its dynamic section */
	fixture(path, sizeof(path), "elf_stripped");
	assert_int_equal(pt_elf__runpath(path, rp, sizeof(rp)), 0);
	assert_string_equal(rp, "$ORIGIN/../lib:/opt/fx");
	assert_int_equal(pt_elf__runpath("/proc/self/status", rp, sizeof(rp)), -ENOEXEC);
	assert_int_equal(pt_elf__runpath("/nonexistent/x", rp, sizeof(rp)), -ENOENT);
}

static void test_fuzz_dup_symtabs(void **state)
{
	char path[64];
	struct pt_elf *e;
	size_t i;

	crafted_elf(path, 64, 9, 100, false);
	assert_int_equal(pt_elf__open(&e, path), 0);
	unlink(path);
	assert_true(e->has_symtab);
	assert_int_equal(e->nsyms, 8);
	for (i = 0; i < e->nsyms; i++) {
		/* sorted by file_off: symbol i + 1, named from offset i + 1 of
		 * the first string table */
		assert_int_equal(e->syms[i].addr, CRAFT_BASE + i + 1);
		assert_int_equal(strlen(e->syms[i].name), 100 - i);
	}
	pt_elf__free(e);
}

/* 2000 symbols that all name one 32 KiB string took a copy each: 64 MiB
 * for a 80 KiB file. Names now share one copy of the string table. */
static void test_fuzz_shared_long_name(void **state)
{
	char path[64];
	struct pt_elf *e;
	size_t i, before, grew;
	struct mallinfo2 mi;

	crafted_elf(path, 1, 2000, 32768, true);
	mi = mallinfo2();
	before = mi.uordblks + mi.hblkhd;
	assert_int_equal(pt_elf__open(&e, path), 0);
	mi = mallinfo2();
	grew = mi.uordblks + mi.hblkhd - before;
	unlink(path);
	assert_int_equal(e->nsyms, 1999);
	for (i = 0; i < e->nsyms; i++)
		assert_int_equal(strlen(e->syms[i].name), 32768);
	/* (Under ASan mallinfo2 sees nothing and this passes trivially.) */
	assert_true(grew < 4 << 20);
	pt_elf__free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_nopie),
		cmocka_unit_test(test_stripped),
		cmocka_unit_test(test_lib),
		cmocka_unit_test(test_versioned),
		cmocka_unit_test(test_ifunc),
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_strip_version),
		cmocka_unit_test(test_closest_fixture),
		cmocka_unit_test(test_closest_synthetic),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_runpath),
		cmocka_unit_test(test_fuzz_dup_symtabs),
		cmocka_unit_test(test_fuzz_shared_long_name),
	};

	/* A child that dies early must not kill us on a write to its pipe. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("elfsyms", tests, NULL, NULL);
}
