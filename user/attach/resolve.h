/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Resolve the probes of a config against the files a process maps: which
 * functions (object, symbol, file offset, probe site) each probe names.
 * Called again whenever the maps change, so libraries loaded later (dlopen)
 * get their functions; a function found twice (two probes, two paths to
 * one file) is one function with the union of its roles.
 */
#ifndef PT_RESOLVE_H
#define PT_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "maps.h"
#include "prologue.h"

struct pt_func {
	int fid;  /* dense id, index in the resolver */
	int spec; /* first probe spec that named it */
	bool is_step;
	unsigned long long bucket_mask;
	int lines_spec;	 /* first `lines` spec that named it, -1: none */
	int vals_spec;	 /* first spec with values (tokens=, count) that named it, -1: none */
	char *object;	 /* path as the target sees it */
	char *host_path; /* path to open and attach from here */
	char *symbol;	 /* demangled for C++ */
	char *mangled;	 /* C++: the ELF symbol; else NULL */
	char **aliases;	 /* other names at the same address */
	size_t naliases;
	uint64_t file_off; /* of the symbol */
	struct pt_probe_site site;
	const char *unusable; /* non-NULL: cannot be probed, and why */
	/* py: probes: object is co_filename, symbol the qualified name, and
	 * there is no file offset or probe site of its own (the interpreter's
	 * frame probe serves all Python functions). */
	bool py;
	unsigned int py_line; /* co_firstlineno */
};

struct pt_resolver_opts {
	const struct pt_config *cfg;
	/* The target: its files are opened through the first of path,
	 * /proc/PID/root/path, /proc/PID/map_files/START-END that is the
	 * mapped inode (chroots show host paths in maps, mount namespaces
	 * do not). 0: use paths as they are (tests). */
	int pid;
	const char *exe;  /* the target's executable path, as maps shows it */
	const char *root; /* its chroot as we see it, stripped from shown paths */
};

struct pt_resolver;

struct pt_resolver *pt_resolver__new(const struct pt_resolver_opts *opts);
void pt_resolver__free(struct pt_resolver *r);

/*
 * Look at the executable file mappings not seen before. Returns the number
 * of functions added, or -errno with a one-line message in err. strict: a
 * probe whose object is mapped but whose symbol matches nothing in any of
 * its objects is an error (-ENOENT, message lists the closest names); used
 * for the first scan, later scans only add what they find. A mapping with
 * start == end stands for a file not mapped yet, probed ahead of its
 * mapping (run/prearm.c); its later real mapping is the same object.
 */
int pt_resolver__update(struct pt_resolver *r, const struct pt_maps *maps, bool strict, char *err,
			size_t errlen);

/* Path from here to the file mapping mp of process pid (see
 * pt_resolver_opts); malloc'ed, NULL on allocation failure. */
char *pt_resolver__host_path(int pid, const struct pt_mapping *mp);

/*
 * A Python function found at run time: a code object in filename with
 * this qualified name and first line, named by the py: specs specs[]
 * (indices into the config, in config order). The same
 * function (a code object created again, e.g. a nested def) gets the same
 * fid. Returns the fid, or -errno.
 */
int pt_resolver__add_py(struct pt_resolver *r, const size_t *specs, size_t nspecs,
			const char *filename, const char *qualname, unsigned int line);

size_t pt_resolver__nfuncs(const struct pt_resolver *r);
const struct pt_func *pt_resolver__func(const struct pt_resolver *r, size_t fid);
/* Functions found so far for probe spec i (0: nothing mapped matches yet). */
size_t pt_resolver__spec_nfuncs(const struct pt_resolver *r, size_t spec);
/* Mapped objects that matched spec i's object glob so far. */
size_t pt_resolver__spec_nobjects(const struct pt_resolver *r, size_t spec);

#endif
