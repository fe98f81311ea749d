/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the run/ unit tests share to make real processes: a struct run's
 * config parsed from text, a targets file for pt_run__open, and children
 * of the test that wait (killed and reaped by the test), for
 * pt_run__open_proc to inspect.
 */
#ifndef PT_TEST_RUNFX_H
#define PT_TEST_RUNFX_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "run/run.h"

/* r->cfg from text: 0, or -1 (said on stderr). */
static inline int runfx__config(struct run *r, const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	char err[512];
	int e;

	if (!f)
		return -1;
	e = pt_config__parse(&r->cfg, f, "t.conf", err, sizeof(err));
	fclose(f);
	if (e)
		fprintf(stderr, "config: %s\n", err);
	return e ? -1 : 0;
}

/* A targets file holding text, its path in path (a mkstemp template,
 * "/tmp/pt-test-XXXXXX"): 0, or -1. The test unlinks it. */
static inline int runfx__targets(char *path, const char *text)
{
	size_t len = strlen(text);
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		unlink(path);
		return -1;
	}
	return close(fd) ? -1 : 0;
}

/* A function of the test binary for a targets file to name
 * (native:exe:NAME): noinline with a body, so a child of the test has the
 * symbol to resolve. Used at file scope: RUNFX_VICTIM(name); */
#define RUNFX_VICTIM(name)                                                                         \
	__attribute__((noinline)) void name(void);                                                 \
	__attribute__((noinline)) void name(void)                                                  \
	{                                                                                          \
		asm volatile("");                                                                  \
	}                                                                                          \
	extern int runfx__victim_##name

/* A child that waits until killed; -1 when fork fails. */
static inline pid_t runfx__child(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		/* dies with the test: a test that crashes before its teardown
		 * would leave it holding run-unit's output pipe, which never
		 * ends then */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (;;)
			pause();
	}
	return pid;
}

/* The child killed and reaped. */
static inline void runfx__reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* What is said on a file descriptor (1 or 2) while a test listens:
 * runfx__hear, then runfx__heard gives it back. */
struct runfx_ear {
	FILE *tmp;
	int fd, saved;
};

/* fd into a temporary file: 0, or -1 (fd untouched). */
static inline int runfx__hear(struct runfx_ear *e, int fd)
{
	e->fd = fd;
	e->saved = -1;
	e->tmp = tmpfile();
	if (!e->tmp)
		return -1;
	fflush(stdout);
	fflush(stderr);
	e->saved = dup(fd);
	if (e->saved < 0 || dup2(fileno(e->tmp), fd) != fd) {
		if (e->saved >= 0)
			close(e->saved);
		fclose(e->tmp);
		return -1;
	}
	return 0;
}

/* fd back, and what it got (malloc'ed, NUL-terminated; NULL: out of
 * memory or unreadable). */
static inline char *runfx__heard(struct runfx_ear *e)
{
	char *out = NULL;
	off_t n;

	fflush(stdout);
	fflush(stderr);
	dup2(e->saved, e->fd);
	close(e->saved);
	n = lseek(fileno(e->tmp), 0, SEEK_END);
	if (n >= 0)
		out = calloc(1, (size_t)n + 1);
	if (out && pread(fileno(e->tmp), out, (size_t)n, 0) != n) {
		free(out);
		out = NULL;
	}
	fclose(e->tmp);
	return out;
}

#endif
