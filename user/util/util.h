/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small things every folder uses: array length, the clocks, a calloc that
 * takes n = 0, an error message into a caller's buffer, and the mapping of
 * errors to exit codes.
 *
 * Errors: every function returns 0 or -errno. A failure the user fixes by
 * changing the command line, the targets file, the pid or the privileges
 * (bad usage, bad config line, unknown symbol, no such process, no
 * permission) is -PT_EUSAGE once its one-line message was printed, and
 * pt_exit_code() turns it into exit code 2; any other error is exit 1.
 */
#ifndef PT_UTIL_H
#define PT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Above every errno value, as libbpf's LIBBPF_ERRNO__* are. */
#define PT_EUSAGE 4000
/* stopped by SIGINT/SIGTERM before anything was measured: exit 128 + it */
#define PT_ESTOPPED 4001

/* A message into err (len bytes) for the caller to print; nothing when
 * err is NULL or len 0. */
static inline __attribute__((format(printf, 3, 4))) void pt_seterr(char *err, size_t len,
								   const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* Append to buf (len bytes) at *off, which moves on by what was written;
 * once buf is full, nothing more (what is there stays NUL-terminated). */
static inline __attribute__((format(printf, 4, 5))) void
pt_appendf(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
}

/* Exit codes (README "Exit codes"). */
enum { PT_EXIT_OK = 0, PT_EXIT_FAIL = 1, PT_EXIT_USAGE = 2 };

static inline int pt_exit_code(int err)
{
	if (!err)
		return PT_EXIT_OK;
	return err == -PT_EUSAGE ? PT_EXIT_USAGE : PT_EXIT_FAIL;
}

static inline uint64_t pt_now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* calloc that gives a real allocation for n == 0 too (so NULL always
 * means out of memory). */
/* FNV-1a (64-bit) of the string s, without its NUL: table keys, cache
 * file names. */
static inline uint64_t pt_fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static inline void *pt_zalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

#endif
