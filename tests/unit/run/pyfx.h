/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the run/ unit tests of a process's Python part share: a live
 * CPython child of the test (Debian's python3.11, or a pyenv one) that
 * imported module ptmod and package module ptpkg.mod (written into a
 * folder of its own) and called into ptmod, then waits on its stdin; with
 * the Python agent preloaded (as `eval "$(proftrace env)"` starts a
 * server) or the perf trampoline on (PYTHONPERFSUPPORT=1) when asked.
 * pyfx__stop kills and reaps it and removes its files; should the test
 * die first, the child reads EOF on its stdin and exits by itself.
 */
#ifndef PT_TEST_PYFX_H
#define PT_TEST_PYFX_H

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYFX_DEBIAN "/usr/bin/python3.11"

/* ptmod.py: Engine.step is at line 4, work at line 10. */
#define PYFX_MODULE                                                                                \
	"class Engine:\n"                                                                          \
	"    def __init__(self):\n"                                                                \
	"        self.n = 0\n"                                                                     \
	"    def step(self):\n"                                                                    \
	"        self.n += 1\n"                                                                    \
	"    def stop(self):\n"                                                                    \
	"        pass\n"                                                                           \
	"\n"                                                                                       \
	"\n"                                                                                       \
	"def work(x):\n"                                                                           \
	"    return x + 1\n"                                                                       \
	"\n"                                                                                       \
	"\n"                                                                                       \
	"def serve():\n"                                                                           \
	"    pass\n"                                                                               \
	"\n"                                                                                       \
	"\n"                                                                                       \
	"def schedule():\n"                                                                        \
	"    pass\n"                                                                               \
	"\n"                                                                                       \
	"\n"                                                                                       \
	"square = lambda v: v * v\n"
#define PYFX_STEP_LINE 4
#define PYFX_WORK_LINE 10

/* ptpkg/__init__.py and ptpkg/mod.py: function run of module ptpkg.mod
 * is at line 1. */
#define PYFX_PKG_INIT                                                                              \
	"def setup():\n"                                                                           \
	"    pass\n"
#define PYFX_PKG_MOD                                                                               \
	"def run():\n"                                                                             \
	"    pass\n"                                                                               \
	"\n"                                                                                       \
	"\n"                                                                                       \
	"class Runner:\n"                                                                          \
	"    def go(self):\n"                                                                      \
	"        pass\n"
#define PYFX_RUN_LINE 1

/* ptmod's functions' code objects, as the child prints their addresses */
#define PYFX_NCODES 6

/* Its program (-c): ptmod and ptpkg.mod imported from argv[1], ptmod
 * called (the Engine it stepped kept), then "ready", its version, the
 * addresses of ptmod's functions' code objects, of class Engine and of
 * that Engine (id() in CPython) on stdout, then it blocks reading stdin
 * (the GIL released: the agent can take it). */
#define PYFX_PROGRAM                                                                               \
	"import sys\n"                                                                             \
	"sys.path.insert(0, sys.argv[1])\n"                                                        \
	"import ptmod, ptpkg.mod\n"                                                                \
	"e = ptmod.Engine()\n"                                                                     \
	"e.step()\n"                                                                               \
	"ptmod.work(1)\n"                                                                          \
	"fs = (ptmod.Engine.__init__, ptmod.Engine.step, ptmod.Engine.stop, ptmod.work,\n"         \
	"      ptmod.serve, ptmod.square)\n"                                                       \
	"print('ready', '%d.%d.%d' % sys.version_info[:3], *[id(f.__code__) for f in fs],\n"       \
	"      id(ptmod.Engine), id(e), flush=True)\n"                                             \
	"sys.stdin.read()\n"

struct pyfx {
	pid_t pid;	  /* -1: none */
	int in;		  /* its stdin (closed at stop) */
	char dir[64];	  /* the folder of ptmod.py and ptpkg/ */
	char module[96];  /* dir/ptmod.py */
	char version[32]; /* as it printed it: "3.11.2" */
	unsigned int minor;
	/* the code objects of Engine.__init__, Engine.step, Engine.stop,
	 * work, serve and square (a lambda), in its memory */
	uint64_t codes[PYFX_NCODES];
	/* class Engine, and an instance of it that lives on (its n is 1) */
	uint64_t engine_type, engine;
};

/* The Python agent (buf: PATH_MAX bytes): $PT_AGENT (make unit sets
 * it), else the one make builds beside this binary's folder
 * (.output/tests/..); NULL when not there. */
static inline const char *pyfx__agent(char *buf, size_t len)
{
	const char *env = getenv("PT_AGENT");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env) {
		/* absolute: the child's LD_PRELOAD, whatever its folder */
		if (len < PATH_MAX || !realpath(env, buf))
			return NULL;
		return access(buf, R_OK) ? NULL : buf;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	for (int up = 0; up < 2; up++) {
		slash = strrchr(exe, '/');
		if (!slash)
			return NULL;
		*slash = 0;
	}
	if (strlen(exe) + sizeof("/libproftrace_agent.so") > len)
		return NULL;
	strcpy(buf, exe);
	strcat(buf, "/libproftrace_agent.so");
	return access(buf, R_OK) ? NULL : buf;
}

/* A pyenv python3.<minor>: its path in buf, or NULL when there is none. */
static inline const char *pyfx__pyenv(unsigned int minor, char *buf, size_t len)
{
	const char *root = getenv("PYENV_ROOT"), *home = getenv("HOME");
	char pat[PATH_MAX];
	const char *found = NULL;
	glob_t g;

	if (root && *root)
		snprintf(pat, sizeof(pat), "%s/versions/3.%u.*/bin/python3", root, minor);
	else
		snprintf(pat, sizeof(pat), "%s/.pyenv/versions/3.%u.*/bin/python3",
			 home ? home : "/root", minor);
	if (glob(pat, 0, NULL, &g))
		return NULL;
	if (g.gl_pathc && !access(g.gl_pathv[g.gl_pathc - 1], X_OK)) {
		snprintf(buf, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
		found = buf;
	}
	globfree(&g);
	return found;
}

static inline void pyfx__stop(struct pyfx *c)
{
	static const char *const files[] = { "ptmod.py", "ptpkg/__init__.py", "ptpkg/mod.py" };
	char path[160];

	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		/* the perf trampoline's map (PYTHONPERFSUPPORT=1) */
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)c->pid);
		unlink(path);
	}
	c->pid = -1;
	if (c->in >= 0)
		close(c->in);
	c->in = -1;
	if (c->dir[0]) {
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", c->dir, files[i]);
			unlink(path);
		}
		snprintf(path, sizeof(path), "%s/ptpkg", c->dir);
		rmdir(path);
		rmdir(c->dir);
	}
	c->module[0] = c->dir[0] = 0;
}

/* text into a new file dir/name: 0 or -1 */
static inline int pyfx__write(const char *dir, const char *name, const char *text)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	if (fputs(text, f) < 0) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

/* python started on PYFX_PROGRAM, with agent preloaded (NULL: none) and
 * the perf trampoline on (perf), until it said "ready": 0, or -1 (said
 * on stderr; nothing left behind). */
static inline int pyfx__start(struct pyfx *c, const char *python, const char *agent, bool perf)
{
	char preload[PATH_MAX + 16], line[512], pkg[96];
	char *envp[4], *argv[7];
	int pin[2], pout[2], k = 0, fd;
	size_t got = 0;

	memset(c, 0, sizeof(*c));
	c->pid = -1;
	c->in = -1;
	snprintf(c->dir, sizeof(c->dir), "/tmp/pt-test-pyfx-XXXXXX");
	if (!mkdtemp(c->dir)) {
		c->dir[0] = 0;
		return -1;
	}
	snprintf(c->module, sizeof(c->module), "%s/ptmod.py", c->dir);
	snprintf(pkg, sizeof(pkg), "%s/ptpkg", c->dir);
	if (pyfx__write(c->dir, "ptmod.py", PYFX_MODULE) || mkdir(pkg, 0700) ||
	    pyfx__write(c->dir, "ptpkg/__init__.py", PYFX_PKG_INIT) ||
	    pyfx__write(c->dir, "ptpkg/mod.py", PYFX_PKG_MOD))
		goto fail;
	if (pipe(pin))
		goto fail;
	if (pipe(pout)) {
		close(pin[0]);
		close(pin[1]);
		goto fail;
	}
	/* its environment: ours would bring a PYTHONPERFSUPPORT or an
	 * LD_PRELOAD of its own */
	envp[k++] = "PATH=/usr/bin:/bin";
	if (agent) {
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", agent);
		envp[k++] = preload;
	}
	if (perf)
		envp[k++] = "PYTHONPERFSUPPORT=1";
	envp[k] = NULL;
	/* -s: no user site; -B: no __pycache__ to remove; PYTHON* variables
	 * are read (PYTHONPERFSUPPORT) */
	argv[0] = (char *)python;
	argv[1] = "-s";
	argv[2] = "-B";
	argv[3] = "-c";
	argv[4] = PYFX_PROGRAM;
	argv[5] = c->dir;
	argv[6] = NULL;
	c->pid = fork();
	if (c->pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		for (fd = 3; fd < 1024; fd++)
			close(fd);
		execve(python, argv, envp);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	c->in = pin[1];
	if (c->pid < 0) {
		close(pout[0]);
		goto fail;
	}
	/* "ready 3.X.Y CODE... ENGINE_TYPE ENGINE\n", within 30 s */
	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		struct pollfd p = { .fd = pout[0], .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 30000) <= 0)
			break;
		n = read(pout[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(pout[0]);
	line[got] = 0;
	if (sscanf(line,
		   "ready %31s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64,
		   c->version, &c->codes[0], &c->codes[1], &c->codes[2], &c->codes[3], &c->codes[4],
		   &c->codes[5], &c->engine_type, &c->engine) != 3 + PYFX_NCODES ||
	    sscanf(c->version, "3.%u.", &c->minor) != 1) {
		fprintf(stderr, "pyfx: %s did not say ready: '%s'\n", python, line);
		goto fail;
	}
	return 0;
fail:
	pyfx__stop(c);
	return -1;
}

/* A targets file with text: its path in path (64 bytes), 0 or -1. */
static inline int pyfx__targets(char *path, const char *text)
{
	int fd;

	snprintf(path, 64, "/tmp/pt-test-targets-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}

#endif
