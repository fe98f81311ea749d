// SPDX-License-Identifier: BSD-2-Clause
/*
 * pyattr_check: pt_pyattr__resolve() and pt_pyattr__read() against a live
 * interpreter's own answers. tests/victims/pyattr_victim.py prints (its
 * docstring has the details):
 *   P <pid> <minor>
 *   T <type> <name>                    (phase 1: resolve before instances)
 *   W
 *   A <obj> <type> <name> <expect...>  (phase 2: one read each)
 *   E
 *
 *   pyattr_check --early STATE   reads P, T lines (to W): resolves each,
 *                                saves the locations in STATE
 *   pyattr_check [--state STATE] reads P, A lines (to E): per line reads
 *                                the object's type (must be <type>),
 *                                resolves (the type; on -EAGAIN the
 *                                object, as pt_pyattr__resolve_obj()),
 *                                reads, and compares with <expect>: the
 *                                value object's address with id(), ints
 *                                decoded, list lengths, or the status.
 *                                A (type, name) resolved in phase 1 is
 *                                read with that early location too, and
 *                                must give the same answer.
 * Memory is read through /proc/PID/mem (root, or ptrace rights). Prints
 * the counts; exit 1 on any mismatch, 2 on bad input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/pyattr.h"
#include "python/pylayout.h"

struct early {
	uint64_t type;
	char name[PT_PYATTR_NAME_MAX + 1];
	int rc;
	struct pt_pyattr_loc loc;
};

#define EARLY_MAX 256

static struct early early[EARLY_MAX];
static size_t n_early;
static int memfd = -1;
static unsigned int minor;
static const struct pt_py_layout *L;
static unsigned long n_lines, n_bad, n_via_obj, n_early_reads, n_unknown, n_expect[16], n_kind[8];

static const char *const expects[] = { "ok",	  "unset",  "missing", "class",
				       "getattr", "keycmp", "noread",  "nosuch" };
#define N_EXPECTS (sizeof(expects) / sizeof(expects[0]))

static int proc_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (addr > INT64_MAX || len > INT64_MAX - addr)
		return -EFAULT;
	n = pread(memfd, buf, len, (off_t)addr);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static const struct pt_tmem tm = { proc_read, NULL };

static void bad(const char *line, const char *fmt, ...)
{
	va_list ap;

	if (++n_bad > 40)
		return;
	fprintf(stderr, "MISMATCH 3.%u: %s: ", minor, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int open_target(const char *line)
{
	char path[64];
	int pid;

	if (sscanf(line, "P %d %u", &pid, &minor) != 2)
		return -1;
	L = pt_py_layout__get(minor);
	if (!L) {
		fprintf(stderr, "pyattr_check: no layout for 3.%u\n", minor);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (memfd < 0) {
		perror(path);
		return -1;
	}
	return 0;
}

/* An int object's value (|v| < 2^62 in the dump): 3.12+ lv_tag (digit
 * count << 3 | sign: 0 positive, 1 zero, 2 negative), else a signed
 * ob_size; 30-bit digits after either. */
static int read_int(uint64_t addr, int64_t *out)
{
	uint64_t head;
	uint32_t digit[3];
	int64_t ndig, sign, v = 0;

	if (proc_read(NULL, addr + 16, &head, 8))
		return -EFAULT;
	if (L->long_tag) {
		ndig = (int64_t)(head >> 3);
		sign = (head & 3) == 0 ? 1 : (head & 3) == 1 ? 0 : -1;
	} else {
		ndig = (int64_t)head < 0 ? -(int64_t)head : (int64_t)head;
		sign = (int64_t)head < 0 ? -1 : head ? 1 : 0;
	}
	if (ndig > 3)
		return -ERANGE;
	if (ndig && proc_read(NULL, addr + 24, digit, (size_t)ndig * 4))
		return -EFAULT;
	for (int64_t i = ndig - 1; i >= 0; i--)
		v = (v << 30) | digit[i];
	*out = sign * v;
	return 0;
}

static int resolve(uint64_t type, uint64_t obj, const char *name, struct pt_pyattr_loc *loc,
		   char *why, size_t len, bool *via_obj)
{
	int rc = pt_pyattr__resolve(&tm, L, type, name, loc, why, len);

	*via_obj = false;
	if (rc == -EAGAIN && obj) {
		rc = pt_pyattr__resolve_obj(&tm, L, obj, name, loc, why, len);
		*via_obj = true;
	}
	return rc;
}

static void early_line(const char *line)
{
	struct early *e;
	unsigned long long type;
	char name[PT_PYATTR_NAME_MAX + 1], why[256];
	bool via;

	if (n_early == EARLY_MAX || sscanf(line, "T %llx %255s", &type, name) != 2) {
		fprintf(stderr, "pyattr_check: bad line: %s\n", line);
		exit(2);
	}
	e = &early[n_early++];
	e->type = type;
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->rc = resolve(type, 0, name, &e->loc, why, sizeof(why), &via);
	printf("  early %s: %d %s\n", name, e->rc, why);
}

static const struct early *find_early(uint64_t type, const char *name)
{
	for (size_t i = 0; i < n_early; i++)
		if (early[i].type == type && !strcmp(early[i].name, name) && !early[i].rc)
			return &early[i];
	return NULL;
}

/* One read against the expectation; 0 when it matches. */
static int check_read(const char *line, const struct pt_pyattr_loc *loc, uint64_t obj,
		      const char *exp, unsigned long long want_id, const char *dec, long long dv)
{
	uint64_t v;
	enum pt_pyattr_status st = pt_pyattr__read(&tm, L, loc, obj, &v);
	enum pt_pyattr_status want = PT_PYATTR_OK;

	if (!strcmp(exp, "ok")) {
		if (st != PT_PYATTR_OK) {
			bad(line, "read: %s, want the object 0x%llx", pt_pyattr__status_str(st),
			    want_id);
			return -1;
		}
		if (v != want_id) {
			bad(line, "read 0x%llx, want 0x%llx", (unsigned long long)v, want_id);
			return -1;
		}
		if (!strcmp(dec, "int")) {
			int64_t iv = 0;
			int e = read_int(v, &iv);

			if (e || iv != dv) {
				bad(line, "int: %d, %lld; want %lld", e, (long long)iv, dv);
				return -1;
			}
		} else if (!strcmp(dec, "len")) {
			int64_t n;

			if (proc_read(NULL, v + 16, &n, 8) || n != dv) { /* PyListObject ob_size */
				bad(line, "len %lld, want %lld", (long long)n, dv);
				return -1;
			}
		}
		return 0;
	}
	if (!strcmp(exp, "unset"))
		want = PT_PYATTR_UNSET;
	else if (!strcmp(exp, "missing"))
		want = PT_PYATTR_MISSING;
	else if (!strcmp(exp, "class"))
		want = PT_PYATTR_CLASS;
	else if (!strcmp(exp, "getattr"))
		want = PT_PYATTR_GETATTR;
	else if (!strcmp(exp, "keycmp"))
		want = PT_PYATTR_KEYCMP;
	if (st != want || v) {
		bad(line, "read: %s (0x%llx), want %s", pt_pyattr__status_str(st),
		    (unsigned long long)v, pt_pyattr__status_str(want));
		return -1;
	}
	return 0;
}

static void attr_line(const char *line)
{
	unsigned long long obj, type, want_id = 0;
	char name[PT_PYATTR_NAME_MAX + 1], exp[32], dec[32] = "", why[256];
	long long dv = 0;
	struct pt_pyattr_loc loc;
	const struct early *e;
	uint64_t otype;
	size_t k;
	bool via;
	int n, rc;

	n = sscanf(line, "A %llx %llx %255s %31s %llx %31s %lld", &obj, &type, name, exp, &want_id,
		   dec, &dv);
	for (k = 0; n >= 4 && k < N_EXPECTS; k++)
		if (!strcmp(exp, expects[k]))
			break;
	if (n < 4 || k == N_EXPECTS) {
		fprintf(stderr, "pyattr_check: bad line: %s\n", line);
		exit(2);
	}
	n_lines++;
	n_expect[k]++;
	if (proc_read(NULL, obj + L->ob_type, &otype, 8) || otype != type) {
		bad(line, "the object's type is not 0x%llx", type);
		return;
	}
	rc = resolve(type, obj, name, &loc, why, sizeof(why), &via);
	if (!strcmp(exp, "noread") || !strcmp(exp, "nosuch")) {
		int want = !strcmp(exp, "noread") ? -EOPNOTSUPP : -ENOENT;

		if (rc != want)
			bad(line, "resolve: %d (%s), want %d", rc, why, want);
		else if (!why[0] || strchr(why, '\n'))
			bad(line, "resolve: no one-line reason");
		return;
	}
	/* A name no instance has, that the class never names: there is no
	 * key object to look for (proftrace retries later). Never taken for
	 * an attribute that is there. */
	if (rc == -EAGAIN && (!strcmp(exp, "missing") || !strcmp(exp, "getattr"))) {
		n_unknown++;
		return;
	}
	if (rc) {
		bad(line, "resolve: %d (%s)", rc, why);
		return;
	}
	if (loc.kind < 8)
		n_kind[loc.kind]++;
	n_via_obj += via;
	if (check_read(line, &loc, obj, exp, want_id, dec, dv))
		fprintf(stderr, "  (location: %s)\n", why);
	e = find_early(type, name);
	if (e) {
		n_early_reads++;
		if (check_read(line, &e->loc, obj, exp, want_id, dec, dv))
			fprintf(stderr, "  (with the location resolved before any instance)\n");
	}
}

int main(int argc, char **argv)
{
	const char *early_out = NULL, *state = NULL;
	char *line = NULL;
	size_t cap = 0;
	bool ended = false;
	ssize_t n;
	FILE *f;

	if (argc == 3 && !strcmp(argv[1], "--early")) {
		early_out = argv[2];
	} else if (argc == 3 && !strcmp(argv[1], "--state")) {
		state = argv[2];
	} else if (argc != 1) {
		fprintf(stderr, "usage: pyattr_check [--early STATE | --state STATE] < dump\n");
		return 2;
	}
	if (state) {
		f = fopen(state, "rb");
		if (!f) {
			perror(state);
			return 2;
		}
		n_early = fread(early, sizeof(early[0]), EARLY_MAX, f);
		fclose(f);
	}
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		if (line[0] == 'P') {
			if (open_target(line))
				return 2;
		} else if (!L) {
			fprintf(stderr, "pyattr_check: no P line first\n");
			return 2;
		} else if (line[0] == 'T' && early_out) {
			early_line(line);
		} else if (line[0] == 'A' && !early_out) {
			attr_line(line);
		} else if ((line[0] == 'W' && early_out) || (line[0] == 'E' && !early_out)) {
			ended = true;
			break;
		} else {
			fprintf(stderr, "pyattr_check: unexpected line: %s\n", line);
			return 2;
		}
	}
	free(line);
	if (!ended) {
		fprintf(stderr, "pyattr_check: the dump is cut\n");
		return 2;
	}
	if (early_out) {
		f = fopen(early_out, "wb");
		if (!f || fwrite(early, sizeof(early[0]), n_early, f) != n_early || fclose(f)) {
			perror(early_out);
			return 2;
		}
		printf("pyattr_check 3.%u: %zu resolved early\n", minor, n_early);
		return 0;
	}
	if (!n_lines) {
		fprintf(stderr, "pyattr_check: no A lines\n");
		return 2;
	}
	printf("pyattr_check 3.%u: %lu reads (", minor, n_lines);
	for (size_t k = 0; k < N_EXPECTS; k++)
		printf("%s%s %lu", k ? ", " : "", expects[k], n_expect[k]);
	printf("); locations: slot %lu, dictptr %lu, managed311 %lu, managed312 %lu, "
	       "inline313 %lu, managed313 %lu; %lu keys found via the instance, %lu absent and "
	       "unknown to the type (-EAGAIN), %lu reads with an early location; %lu mismatches\n",
	       n_kind[PT_PYATTR_K_SLOT], n_kind[PT_PYATTR_K_DICTPTR],
	       n_kind[PT_PYATTR_K_MANAGED_311], n_kind[PT_PYATTR_K_MANAGED_312],
	       n_kind[PT_PYATTR_K_INLINE_313], n_kind[PT_PYATTR_K_MANAGED_313], n_via_obj,
	       n_unknown, n_early_reads, n_bad);
	return n_bad ? 1 : 0;
}
