// SPDX-License-Identifier: BSD-2-Clause
/*
 * Interpreter discovery. Symbols come from the file (libelf), values from
 * the target's memory; everything read from the target is checked before
 * it is used (cookie, version, pointer plausibility).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "attach/elfsyms.h"
#include "python.h"
#include "attach/resolve.h"

enum { S_RUNTIME, S_EVALFRAME, S_CODE_TYPE, S_UNICODE_TYPE, S_PY_VERSION, S_TRAMPOLINE, S_N };

/* clang-format off */
static const char *const sym_names[S_N] = {
	[S_RUNTIME] = "_PyRuntime",
	[S_EVALFRAME] = "_PyEval_EvalFrameDefault",
	[S_CODE_TYPE] = "PyCode_Type",
	[S_UNICODE_TYPE] = "PyUnicode_Type",
	[S_PY_VERSION] = "Py_Version",
	[S_TRAMPOLINE] = "py_trampoline_evaluator",
};
/* clang-format on */

struct elfinfo {
	uint64_t vaddr[S_N]; /* 0: not found */
	uint64_t size[S_N];
	uint64_t x_vaddr, x_off; /* the executable PT_LOAD segment */
	int minor_from_rodata;	 /* -1: no "3.N.M" string found */
	char rodata_version[32];
};

static bool is_python_name(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return strncmp(b, "python", 6) == 0 || strncmp(b, "libpython", 9) == 0;
}

/* "3.<minor>.<micro>" alone in a NUL-terminated string: PY_VERSION. */
static bool version_string(const char *s, size_t n, unsigned int *minor)
{
	unsigned int a, b, c;
	char tail;

	if (n < 5 || n > 20 || s[0] != '3' || s[1] != '.')
		return false;
	if (sscanf(s, "%u.%u.%u%c", &a, &b, &c, &tail) == 3) {
		*minor = b;
		return true;
	}
	/* 3.10.0a1, 3.9.0rc2, 3.8.18+ */
	if (sscanf(s, "%u.%u.%u%c", &a, &b, &c, &tail) == 4 &&
	    (tail == 'a' || tail == 'b' || tail == 'r' || tail == '+')) {
		*minor = b;
		return true;
	}
	return false;
}

/*
 * PY_VERSION ("3.10.13") is a string literal in .rodata, but the linker
 * may merge it into the tail of a longer one ("Python-3.10.13"): take the
 * trailing "3.N.M" of a string, for the minor the file name says when it
 * says one.
 */
static void scan_rodata(Elf_Scn *scn, struct elfinfo *ei, int want_minor)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const char *p, *end;

	if (!d || !d->d_buf)
		return;
	p = d->d_buf;
	end = p + d->d_size;
	while (p < end) {
		const char *z = memchr(p, 0, (size_t)(end - p)), *t;
		unsigned int minor;

		if (!z)
			break;
		t = z;
		while (t > p && ((t[-1] >= '0' && t[-1] <= '9') || t[-1] == '.'))
			t--;
		if (version_string(t, (size_t)(z - t), &minor) &&
		    (want_minor < 0 || (int)minor == want_minor)) {
			ei->minor_from_rodata = (int)minor;
			snprintf(ei->rodata_version, sizeof(ei->rodata_version), "%s", t);
			return;
		}
		p = z + 1;
	}
}

static int minor_from_name(const char *path);

static int read_elf(const char *path, const char *shown, struct elfinfo *ei)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, nph;
	GElf_Ehdr eh;
	Elf *elf;
	int fd, e = 0;

	memset(ei, 0, sizeof(*ei));
	ei->minor_from_rodata = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx) ||
	    elf_getphdrnum(elf, &nph)) {
		e = -ENOEXEC;
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			ei->x_vaddr = ph.p_vaddr;
			ei->x_off = ph.p_offset;
			break;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".rodata") == 0 && ei->minor_from_rodata < 0)
			scan_rodata(scn, ei, minor_from_name(shown));
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		for (size_t k = 0; k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Sym s;
			const char *sn;

			if (!gelf_getsym(d, (int)k, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			sn = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!sn)
				continue;
			for (int j = 0; j < S_N; j++) {
				if (!ei->vaddr[j] && strcmp(sn, sym_names[j]) == 0) {
					ei->vaddr[j] = s.st_value;
					ei->size[j] = s.st_size;
				}
			}
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return e;
}

int pt_python__read(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* minor from "python3.11", "libpython3.9.so.1.0", "python3.10d" */
static int minor_from_name(const char *path)
{
	const char *b = strrchr(path, '/');
	unsigned int minor;

	b = b ? b + 1 : path;
	if (!strncmp(b, "lib", 3))
		b += 3;
	if (sscanf(b, "python3.%u", &minor) == 1)
		return (int)minor;
	return -1;
}

static int setup_version(struct pt_python *py, const struct elfinfo *ei, int pid, char *err,
			 size_t errlen)
{
	const struct pt_py_layout *row;
	uint64_t bias = py->runtime - ei->vaddr[S_RUNTIME];
	int minor = -1;

	if (ei->vaddr[S_PY_VERSION]) {
		uint32_t v;

		/* 3.11+: const uint32_t Py_Version = PY_VERSION_HEX */
		if (pt_python__read(pid, ei->vaddr[S_PY_VERSION] + bias, &v, sizeof(v)) == 0 &&
		    (v >> 24) == 3) {
			py->hexversion = v;
			minor = (int)((v >> 16) & 0xff);
			snprintf(py->version, sizeof(py->version), "3.%d.%u", minor,
				 (v >> 8) & 0xff);
		}
	}
	if (minor < 0 && ei->minor_from_rodata >= 0) {
		minor = ei->minor_from_rodata;
		snprintf(py->version, sizeof(py->version), "%s", ei->rodata_version);
		py->hexversion = 0x03000000u | ((uint32_t)minor << 16);
	}
	if (minor < 0) {
		minor = minor_from_name(py->path);
		if (minor >= 0) {
			snprintf(py->version, sizeof(py->version), "3.%d", minor);
			py->hexversion = 0x03000000u | ((uint32_t)minor << 16);
		}
	}
	if (minor < 0) {
		snprintf(err, errlen,
			 "%s: cannot tell the Python version (no Py_Version, no version string); "
			 "supported: " PT_PY_SUPPORTED,
			 py->path);
		return -ENOTSUP;
	}
	if (minor == 13) {
		uint8_t buf[PT_PY_DEBUG_OFFSETS_LEN];
		char why[160];
		uint32_t hex;
		int e;

		e = pt_python__read(pid, py->runtime, buf, sizeof(buf));
		if (e) {
			snprintf(err, errlen, "cannot read _PyRuntime of %s in process %d: %s",
				 py->path, pid, strerror(-e));
			return e;
		}
		if (pt_py_layout__from_debug_offsets(&py->L, buf, sizeof(buf), &hex, why,
						     sizeof(why))) {
			snprintf(err, errlen, "Python %s in %s: %s", py->version, py->path, why);
			return -ENOTSUP;
		}
		return 0;
	}
	row = pt_py_layout__get((unsigned int)minor);
	if (!row) {
		snprintf(err, errlen,
			 "Python %s (%s) is not supported; supported: " PT_PY_SUPPORTED,
			 py->version, py->path);
		return -ENOTSUP;
	}
	py->L = *row;
	return 0;
}

static int choose_site(struct pt_python *py)
{
	struct pt_elf *e;
	uint8_t code[16];
	ssize_t n;

	/* Skip only an endbr64: the probe reads the frame from the argument
	 * registers, which a walk past `mov`s could see overwritten. */
	if (pt_elf__open(&e, py->host_path))
		return -ENOEXEC;
	n = pt_elf__read(e, py->evalframe_off, code, sizeof(code));
	py->site = pt_prologue__site(code, n > 0 ? (size_t)n : 0, PT_PROLOGUE_SKIP_ENDBR);
	pt_elf__free(e);
	return 0;
}

int pt_python__find(struct pt_python *py, const struct pt_maps *maps, int pid, char *err,
		    size_t errlen)
{
	int e;

	memset(py, 0, sizeof(*py));
	for (size_t i = 0; i < maps->n; i++) {
		const struct pt_mapping *mp = &maps->v[i];
		struct elfinfo ei;
		uint64_t bias;
		char *host;

		if (!pt_mapping__is_exec_file(mp) || !is_python_name(mp->path))
			continue;
		host = pt_resolver__host_path(pid, mp);
		if (!host)
			return -ENOMEM;
		if (read_elf(host, mp->path, &ei) || !ei.vaddr[S_RUNTIME] ||
		    !ei.vaddr[S_EVALFRAME] || !ei.x_vaddr) {
			free(host);
			continue;
		}
		/* The executable mapping is the executable PT_LOAD segment:
		 * address = vaddr + bias for every symbol of the file. */
		bias = mp->start - mp->offset - ei.x_vaddr + ei.x_off;
		py->path = strdup(mp->path);
		py->host_path = host;
		if (!py->path)
			return -ENOMEM;
		py->runtime = ei.vaddr[S_RUNTIME] + bias;
		py->code_type = ei.vaddr[S_CODE_TYPE] ? ei.vaddr[S_CODE_TYPE] + bias : 0;
		py->unicode_type = ei.vaddr[S_UNICODE_TYPE] ? ei.vaddr[S_UNICODE_TYPE] + bias : 0;
		py->trampoline = ei.vaddr[S_TRAMPOLINE] ? ei.vaddr[S_TRAMPOLINE] + bias : 0;
		py->evalframe_off = ei.vaddr[S_EVALFRAME] - ei.x_vaddr + ei.x_off;
		e = setup_version(py, &ei, pid, err, errlen);
		if (e)
			return e;
		if (!py->code_type || !py->unicode_type) {
			snprintf(err, errlen, "%s has no PyCode_Type/PyUnicode_Type symbol",
				 py->path);
			return -ENOTSUP;
		}
		return choose_site(py) ? -ENOEXEC : 0;
	}
	snprintf(err, errlen,
		 "process %d runs no CPython interpreter that proftrace can see (no python3.X "
		 "executable or libpython3.X.so with _PyRuntime mapped)",
		 pid);
	return -ENOENT;
}

void pt_python__free(struct pt_python *py)
{
	if (!py)
		return;
	free(py->path);
	free(py->host_path);
	py->path = py->host_path = NULL;
}

int pt_python__trampoline(const struct pt_python *py, int pid)
{
	uint64_t interp, hook;
	int e;

	if (!py->L.interp_eval_frame || py->L.evalframe_all_calls)
		return 0;
	e = pt_python__read(pid, py->runtime + py->L.runtime_interp_head, &interp, sizeof(interp));
	if (e)
		return e;
	if (!interp)
		return -ENOENT; /* not initialised yet, or finalised */
	e = pt_python__read(pid, interp + py->L.interp_eval_frame, &hook, sizeof(hook));
	if (e)
		return e;
	if (!hook)
		return 0;
	/* A hook that is not the trampoline (a debugger's, torch.compile's)
	 * may evaluate frames its own way: not counted as exact. Without
	 * the symbol, any hook on 3.12+ is taken for the trampoline only if
	 * the interpreter writes a perf map. */
	if (py->trampoline)
		return hook == py->trampoline;
	{
		char p[64];

		snprintf(p, sizeof(p), "/tmp/perf-%d.map", pid);
		return access(p, F_OK) == 0;
	}
}
