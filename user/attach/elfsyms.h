/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Function symbols of one ELF file, with the file offsets uprobes need.
 * Reads .symtab and .dynsym with libelf (stripped files: .dynsym only).
 */
#ifndef PT_ELFSYMS_H
#define PT_ELFSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */

struct pt_sym {
	char *name;	   /* version suffix ("@@GLIBC_2.17", "@V") removed */
	uint64_t addr;	   /* st_value */
	uint64_t size;	   /* st_size */
	uint64_t file_off; /* offset in the file of the first instruction */
	bool ifunc;	   /* STT_GNU_IFUNC: the address is the resolver */
	bool global;	   /* STB_GLOBAL or STB_WEAK */
};

struct pt_elf {
	char *path;
	int e_type;	     /* ET_EXEC or ET_DYN */
	bool has_symtab;     /* false: stripped, .dynsym only */
	struct pt_sym *syms; /* functions, sorted by (file_off, name) */
	size_t nsyms;
};

/* 0 or -errno; -ENOEXEC when the file is not an x86-64 ELF. */
int pt_elf__open(struct pt_elf **out, const char *path);
void pt_elf__free(struct pt_elf *e);

/* Read len bytes of the file at file_off (for prologue analysis).
 * Returns bytes read (may be short at EOF) or -errno. */
ssize_t pt_elf__read(const struct pt_elf *e, uint64_t file_off, void *buf, size_t len);

/* The library search path the file names for what it loads: DT_RUNPATH,
 * else DT_RPATH (the dynamic linker ignores DT_RPATH when both are there),
 * NUL-terminated in buf ("" when it names none). 0 or -errno; -ENOEXEC
 * when the file is not an x86-64 ELF, -ENAMETOOLONG when buf is short. */
int pt_elf__runpath(const char *path, char *buf, size_t len);

/* Strip a symbol version suffix ("name@@V" / "name@V") in place. */
void pt_sym__strip_version(char *name);

/* Up to max names in e closest to want (edit distance, then name order),
 * written into out[]. Returns how many. Pointers are into e. */
size_t pt_elf__closest(const struct pt_elf *e, const char *want, const char **out, size_t max);
/* The same over any names (NULL entries skipped). */
size_t pt_closest(const char *const *names, size_t nnames, const char *want, const char **out,
		  size_t max);

#endif
