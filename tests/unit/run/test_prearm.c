// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/prearm.c: pt_run__prearm, on a run opened by pt_run__open (no BPF
 * object) on a child of this test, resolves ahead of its mapping the one
 * file that a probe's object names and the child has not mapped, where
 * the child will load it from: the folder of a file it maps (its
 * executable, a library it loaded), a folder its files' DT_RUNPATH names
 * ($ORIGIN expanded), its LD_LIBRARY_PATH; the system's folders only
 * where none of those has the file, so a copy of its own comes first. A
 * probe finds its file by name glob or by full path; two probes naming
 * one file give one library; a link and its file are one. The functions
 * gained are counted, *nlibs the libraries, and the resolver has them as
 * the file's (path, symbol) from then on; the library's real mapping
 * later is the same object, resolved again by nothing. Nothing is
 * resolved ahead for a library already mapped, one found nowhere, a
 * glob that several files match (which one will be loaded?), a full
 * path in a folder the child does not load from, or a child in another
 * root; a second call finds nothing more.
 *
 * The children: copies of the fixtures (elf_static, linked -static, maps
 * no file but itself; elf_pie, whose DT_RUNPATH names $ORIGIN/../lib),
 * /bin/sleep (LD_LIBRARY_PATH in its environment), and this binary
 * forked, loading libraries when told; the libraries, copies of
 * libelf_fixture.so under names of the test's, in a folder of its own.
 * The probes going in (pt_run__attach_new) need BPF: tests/integration
 * (test_faults.test_fault_dlopen_*). Not here: the folders /etc/ld.so.conf
 * names (the test would write /etc:
 * test_faults.test_fault_dlopen_system_library_first_call), DT_RPATH and
 * DT_RUNPATH entries with $LIB or $PLATFORM (no fixture has them); the
 * chroot test skips without CAP_SYS_CHROOT.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/maps.h"
#include "attach/resolve.h"
#include "run/env.h"
#include "run/prearm.h"
#include "run/run.h"
#include "run/steps.h"
#include "runfx.h"

/* What a probe names in the forked child (this binary). */
RUNFX_VICTIM(prearm_victim);

struct fx {
	char dir[64];		 /* the test's folder: the libraries, the copies */
	char lib[PATH_MAX];	 /* the fixtures: libelf_fixture.so */
	char stat_exe[PATH_MAX]; /* elf_static */
	char pie[PATH_MAX];	 /* elf_pie */
	pid_t kid;		 /* the child, -1: none */
	int in;			 /* the write end of its stdin, or of its commands */
	int ack;		 /* forked: the read end of its answers */
	struct run r;
	bool opened;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	const char *dir = getenv("PT_FIXTURES");
	char p[PATH_MAX];

	if (!x)
		return -1;
	if (!dir)
		dir = ".output/fixtures";
	snprintf(p, sizeof(p), "%s/libelf_fixture.so", dir);
	if (!realpath(p, x->lib))
		return -1;
	snprintf(p, sizeof(p), "%s/elf_static", dir);
	if (!realpath(p, x->stat_exe))
		return -1;
	snprintf(p, sizeof(p), "%s/elf_pie", dir);
	if (!realpath(p, x->pie))
		return -1;
	snprintf(x->dir, sizeof(x->dir), "/tmp/pt-test-prearm-XXXXXX");
	if (!mkdtemp(x->dir))
		return -1;
	x->kid = -1;
	x->in = x->ack = -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->opened)
		pt_run__free(&x->r);
	runfx__reap(x->kid);
	if (x->in >= 0)
		close(x->in);
	if (x->ack >= 0)
		close(x->ack);
	nftw(x->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(x);
	return 0;
}

/* x->dir/rel into buf. */
static const char *at(struct fx *x, char *buf, const char *rel)
{
	snprintf(buf, PATH_MAX, "%s/%s", x->dir, rel);
	return buf;
}

/* The folders of x->dir/rel made, then src copied there (mode 0755). */
static void put(struct fx *x, const char *src, const char *rel)
{
	char dst[PATH_MAX], buf[65536];
	int in, out;
	ssize_t n;

	at(x, dst, rel);
	for (char *s = dst + strlen(x->dir) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(dst, 0755);
		*s = '/';
	}
	in = open(src, O_RDONLY | O_CLOEXEC);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

/* A copy of the fixture library at x->dir/rel. */
static void put_lib(struct fx *x, const char *rel)
{
	put(x, x->lib, rel);
}

/* The child: path run with argv and envp, its stdin a pipe the test holds
 * (elf_static and elf_pie wait for its end), its stdout /dev/null.
 * Returns once the exec is done. */
static pid_t spawn(struct fx *x, const char *path, char *const argv[], char *const envp[])
{
	int in[2], sync[2], e = 0;
	pid_t pid;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(sync, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		dup2(in[0], 0);
		dup2(null, 1);
		execve(path, argv, envp);
		e = errno;
		(void)!write(sync[1], &e, sizeof(e));
		_exit(127);
	}
	close(in[0]);
	close(sync[1]);
	x->kid = pid;
	x->in = in[1];
	/* the pipe ends at the exec (O_CLOEXEC), or says why it failed */
	assert_int_equal(read(sync[0], &e, sizeof(e)), 0);
	close(sync[0]);
	return pid;
}

/* A copy of elf_static at x->dir/bin/prog, run with envp. */
static pid_t spawn_static(struct fx *x, char *const envp[])
{
	char prog[PATH_MAX];
	char *argv[] = { "prog", NULL };

	put(x, x->stat_exe, "bin/prog");
	return spawn(x, at(x, prog, "bin/prog"), argv, envp);
}

/* The child, forked: this binary, having loaded first (a path, or NULL)
 * and moved to root (or NULL: not), then loading each path it is sent.
 * Its answer to each: 'y' done, 'n' not. */
static pid_t loader(struct fx *x, const char *first, const char *root)
{
	int cmd[2], ack[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe2(cmd, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ack, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[PATH_MAX + 1];
		ssize_t n;

		close(cmd[1]);
		close(ack[0]);
		c = 'y';
		if (first && !dlopen(first, RTLD_NOW))
			c = 'n';
		if (root && (chroot(root) || chdir("/")))
			c = 'n';
		(void)!write(ack[1], &c, 1);
		/* one path per write (under PIPE_BUF: one read) */
		while ((n = read(cmd[0], path, sizeof(path) - 1)) > 0) {
			path[n] = 0;
			c = dlopen(path, RTLD_NOW) ? 'y' : 'n';
			(void)!write(ack[1], &c, 1);
		}
		for (;;)
			pause();
	}
	close(cmd[0]);
	close(ack[1]);
	x->kid = pid;
	x->in = cmd[1];
	x->ack = ack[0];
	assert_int_equal(read(ack[0], &c, 1), 1);
	if (c != 'y') {
		/* chroot needs CAP_SYS_CHROOT */
		if (root)
			skip();
		fail_msg("the child could not load %s", first);
	}
	return pid;
}

/* The forked child loads path. */
static void load(struct fx *x, const char *path)
{
	char c;

	assert_int_equal(write(x->in, path, strlen(path)), (ssize_t)strlen(path));
	assert_int_equal(read(x->ack, &c, 1), 1);
	assert_int_equal(c, 'y');
}

/* The run of pid, the targets file text (its probes resolved as
 * pt_run__open resolves them): its process. */
static struct proc *open_on(struct fx *x, pid_t pid, const char *text)
{
	char path[PATH_MAX];
	struct pt_env env = { 0 };
	FILE *f = fopen(at(x, path, "t.conf"), "w");
	int e;

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	fclose(f);
	env.pid = env.pids[0] = pid;
	env.npids = 1;
	env.targets = path;
	env.quiet = true;
	e = pt_run__open(&x->r, &env);
	x->opened = true; /* pt_run__free after it, failed or not */
	assert_int_equal(e, 0);
	assert_int_equal(x->r.procs.n, 1);
	return x->r.procs.v[0];
}

/* A targets file's text: a step on the first probe (OBJ, SYM), a bucket
 * of its own on each of the others (spec i: the i-th). */
static const char *conf(char *buf, size_t len, int n, ...)
{
	size_t at = 0;
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n && at < len; i++) {
		const char *obj = va_arg(ap, const char *), *sym = va_arg(ap, const char *);

		if (i)
			at += (size_t)snprintf(buf + at, len - at, "bucket t.b%d native:%s:%s\n", i,
					       obj, sym);
		else
			at += (size_t)snprintf(buf + at, len - at, "step native:%s:%s\n", obj, sym);
	}
	va_end(ap);
	assert_true(at < len);
	return buf;
}

/* p's resolver has one function of symbol in file, named by the path
 * the child maps (or will map) the file by, and opened by that path from
 * here. */
static void has_func(struct proc *p, const char *file, const char *symbol)
{
	char real[PATH_MAX];
	int found = 0;

	assert_non_null(realpath(file, real));
	for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		if (strcmp(f->object, real) || strcmp(f->symbol, symbol))
			continue;
		assert_string_equal(f->host_path, real);
		assert_false(f->py);
		found++;
	}
	assert_int_equal(found, 1);
}

/* pt_run__prearm finds nothing: no function, no library, the resolver as
 * it was. */
static void nothing(struct proc *p)
{
	size_t before = pt_resolver__nfuncs(p->res), nlibs = 99;

	assert_int_equal(pt_run__prearm(p, &nlibs), 0);
	assert_int_equal(nlibs, 0);
	assert_int_equal(pt_resolver__nfuncs(p->res), before);
}

/* Its own executable's folder, by name glob: two probes naming one file
 * are one library; the second call finds nothing more. */
static void test_own_folder_by_glob(void **state)
{
	struct fx *x = *state;
	char lib[PATH_MAX], text[1024];
	char *envp[] = { NULL };
	struct proc *p;
	size_t nlibs = 0;

	put_lib(x, "bin/libptfx.so.1");
	p = open_on(x, spawn_static(x, envp),
		    conf(text, sizeof(text), 3, "exe", "fx_mul", "libptfx.so*", "fx_add",
			 "libptfx.so.?", "fx_mul"));
	/* the executable's: resolved when opened */
	assert_int_equal(pt_resolver__nfuncs(p->res), 1);
	assert_int_equal(pt_resolver__spec_nobjects(p->res, 1), 0);
	assert_int_equal(pt_run__prearm(p, &nlibs), 2);
	assert_int_equal(nlibs, 1);
	assert_int_equal(pt_resolver__nfuncs(p->res), 3);
	has_func(p, at(x, lib, "bin/libptfx.so.1"), "fx_add");
	has_func(p, lib, "fx_mul");
	for (size_t s = 1; s <= 2; s++) {
		assert_int_equal(pt_resolver__spec_nobjects(p->res, s), 1);
		assert_int_equal(pt_resolver__spec_nfuncs(p->res, s), 1);
	}
	/* resolved ahead: a probe with an object now */
	nothing(p);
}

/* A probe that names the file by its full path, in a folder it loads
 * from. */
static void test_own_folder_by_full_path(void **state)
{
	struct fx *x = *state;
	char lib[PATH_MAX], text[4 * PATH_MAX];
	char *envp[] = { NULL };
	struct proc *p;
	size_t nlibs = 0;

	put_lib(x, "bin/libptfx.so.1");
	p = open_on(x, spawn_static(x, envp),
		    conf(text, sizeof(text), 2, "exe", "fx_mul", at(x, lib, "bin/libptfx.so.1"),
			 "fx_add"));
	assert_int_equal(pt_run__prearm(p, &nlibs), 1);
	assert_int_equal(nlibs, 1);
	has_func(p, lib, "fx_add");
}

/* Two libraries, from two folders: both, counted. */
static void test_two_libraries(void **state)
{
	struct fx *x = *state;
	char lib[PATH_MAX], lib2[PATH_MAX], env0[PATH_MAX + 64], text[1024];
	char *envp[] = { env0, NULL };
	struct proc *p;
	size_t nlibs = 0;

	put_lib(x, "bin/libptfx_x.so");
	put_lib(x, "ll/libptfx_y.so");
	snprintf(env0, sizeof(env0), "LD_LIBRARY_PATH=%s/ll", x->dir);
	p = open_on(
		x, spawn_static(x, envp),
		conf(text, sizeof(text), 2, "libptfx_x.so", "fx_add", "libptfx_y.so", "fx_mul"));
	assert_int_equal(pt_run__prearm(p, &nlibs), 2);
	assert_int_equal(nlibs, 2);
	has_func(p, at(x, lib, "bin/libptfx_x.so"), "fx_add");
	has_func(p, at(x, lib2, "ll/libptfx_y.so"), "fx_mul");
}

/* The folder of a library it loaded; the file's mapping later adds
 * nothing (the same object). A library it maps already is resolved when
 * opened, not ahead. */
static void test_loaded_library_folder_then_mapped(void **state)
{
	struct fx *x = *state;
	char a[PATH_MAX], b[PATH_MAX], text[1024];
	struct pt_maps maps = { 0 };
	struct proc *p;
	size_t nlibs = 0;
	char err[512];

	put_lib(x, "lib/libptfx_a.so");
	put_lib(x, "lib/libptfx_b.so");
	p = open_on(x, loader(x, at(x, a, "lib/libptfx_a.so"), NULL),
		    conf(text, sizeof(text), 3, "exe", "prearm_victim", "libptfx_a.so", "fx_add",
			 "libptfx_b.so", "fx_add"));
	assert_int_equal(pt_resolver__nfuncs(p->res), 2); /* prearm_victim, a's fx_add */
	has_func(p, a, "fx_add");
	assert_int_equal(pt_run__prearm(p, &nlibs), 1);
	assert_int_equal(nlibs, 1); /* b only */
	assert_int_equal(pt_resolver__nfuncs(p->res), 3);
	has_func(p, at(x, b, "lib/libptfx_b.so"), "fx_add");
	/* now it maps b: nothing new (its probes are in already) */
	load(x, b);
	assert_int_equal(pt_maps__read_pid(&maps, p->tracee.pid), 0);
	assert_int_equal(pt_resolver__update(p->res, &maps, false, err, sizeof(err)), 0);
	pt_maps__free(&maps);
	assert_int_equal(pt_resolver__nfuncs(p->res), 3);
	assert_int_equal(pt_resolver__spec_nobjects(p->res, 2), 1);
	nothing(p);
}

/* A folder of its LD_LIBRARY_PATH (/bin/sleep maps nothing there). */
static void test_ld_library_path(void **state)
{
	struct fx *x = *state;
	char lib[PATH_MAX], env0[2 * PATH_MAX + 64], text[1024];
	char *argv[] = { "sleep", "1000", NULL }, *envp[] = { env0, "PATH=/usr/bin:/bin", NULL };
	struct proc *p;
	size_t nlibs = 0;

	put_lib(x, "ll/libptfx_ll.so");
	snprintf(env0, sizeof(env0), "LD_LIBRARY_PATH=relative:%s/none::%s/ll", x->dir, x->dir);
	p = open_on(x, spawn(x, "/bin/sleep", argv, envp),
		    conf(text, sizeof(text), 1, "libptfx_ll.so", "fx_add"));
	assert_int_equal(pt_resolver__nfuncs(p->res), 0);
	assert_int_equal(pt_run__prearm(p, &nlibs), 1);
	assert_int_equal(nlibs, 1);
	has_func(p, at(x, lib, "ll/libptfx_ll.so"), "fx_add");
}

/* A folder its executable's DT_RUNPATH names: $ORIGIN/../lib. */
static void test_runpath_origin(void **state)
{
	struct fx *x = *state;
	char pie[PATH_MAX], lib[PATH_MAX], text[1024];
	char *argv[] = { "pie", NULL }, *envp[] = { NULL };
	struct proc *p;
	size_t nlibs = 0;

	put(x, x->pie, "bin/pie");
	put_lib(x, "lib/libptfx_rp.so");
	put_lib(x, "other/libptfx_other.so"); /* named by nothing */
	p = open_on(x, spawn(x, at(x, pie, "bin/pie"), argv, envp),
		    conf(text, sizeof(text), 2, "libptfx_rp.so", "fx_add", "libptfx_other.so",
			 "fx_add"));
	assert_int_equal(pt_run__prearm(p, &nlibs), 1);
	assert_int_equal(nlibs, 1);
	assert_int_equal(pt_resolver__nfuncs(p->res), 1);
	has_func(p, at(x, lib, "lib/libptfx_rp.so"), "fx_add");
	assert_int_equal(pt_resolver__spec_nfuncs(p->res, 1), 0);
}

/* The file of the libz this test maps (the system's), or skip. */
static void system_libz(char *out)
{
	struct pt_maps m = { 0 };

	out[0] = 0;
	assert_int_equal(pt_maps__read_pid(&m, getpid()), 0);
	for (size_t i = 0; i < m.n && !out[0]; i++) {
		const char *b = m.v[i].path ? strrchr(m.v[i].path, '/') : NULL;

		if (b && !strncmp(b + 1, "libz.so.1", 9))
			snprintf(out, PATH_MAX, "%s", m.v[i].path);
	}
	pt_maps__free(&m);
	if (!out[0])
		skip();
}

/* A process that maps nothing from the system's folders (static), its
 * own having no such file: the system's folders. */
static void test_system_folders(void **state)
{
	struct fx *x = *state;
	char libz[PATH_MAX], text[1024];
	char *envp[] = { NULL };
	struct proc *p;
	size_t nlibs = 0;

	system_libz(libz);
	p = open_on(x, spawn_static(x, envp), conf(text, sizeof(text), 1, "libz.so.1*", "crc32"));
	assert_int_equal(pt_run__prearm(p, &nlibs), 1);
	assert_int_equal(nlibs, 1);
	has_func(p, libz, "crc32");
}

/* A file of that name in its own folders: that one, not the system's
 * (which has no fx_add). */
static void test_own_copy_before_the_systems(void **state)
{
	struct fx *x = *state;
	char lib[PATH_MAX], libz[PATH_MAX], env0[PATH_MAX + 64], text[1024];
	char *envp[] = { env0, NULL };
	struct proc *p;
	size_t nlibs = 0;

	system_libz(libz);
	put_lib(x, "own/libz.so.1");
	snprintf(env0, sizeof(env0), "LD_LIBRARY_PATH=%s/own", x->dir);
	p = open_on(x, spawn_static(x, envp),
		    conf(text, sizeof(text), 2, "libz.so.1*", "fx_add", "libz.so.1*", "crc32"));
	assert_int_equal(pt_run__prearm(p, &nlibs), 1);
	assert_int_equal(nlibs, 1);
	has_func(p, at(x, lib, "own/libz.so.1"), "fx_add");
	assert_int_equal(pt_resolver__spec_nfuncs(p->res, 1), 0);
}

/* Two files of that name in its own folders: which one will it load?
 * None, and not the system's either. */
static void test_several_own_none_from_the_system(void **state)
{
	struct fx *x = *state;
	char libz[PATH_MAX], env0[2 * PATH_MAX + 64], text[1024];
	char *envp[] = { env0, NULL };

	system_libz(libz);
	put_lib(x, "own/libz.so.1");
	put_lib(x, "own2/libz.so.1");
	snprintf(env0, sizeof(env0), "LD_LIBRARY_PATH=%s/own:%s/own2", x->dir, x->dir);
	nothing(open_on(x, spawn_static(x, envp),
			conf(text, sizeof(text), 1, "libz.so.1*", "crc32")));
}

/* A glob two files of one folder match: none. */
static void test_several_in_one_folder(void **state)
{
	struct fx *x = *state;
	char text[1024];
	char *envp[] = { NULL };

	put_lib(x, "bin/libptfx_1.so");
	put_lib(x, "bin/libptfx_2.so");
	nothing(open_on(x, spawn_static(x, envp),
			conf(text, sizeof(text), 1, "libptfx_*.so", "fx_add")));
}

/* A link and the file it names, both matched: one file, named by its
 * own path (as its mapping will show it). */
static void test_link_and_its_file_are_one(void **state)
{
	struct fx *x = *state;
	char lib[PATH_MAX], link[PATH_MAX], text[1024];
	char *envp[] = { NULL };
	struct proc *p;
	size_t nlibs = 0;

	put_lib(x, "bin/libptfx_real.so");
	assert_int_equal(symlink("libptfx_real.so", at(x, link, "bin/libptfx_link.so")), 0);
	p = open_on(x, spawn_static(x, envp),
		    conf(text, sizeof(text), 1, "libptfx_*.so", "fx_add"));
	assert_int_equal(pt_run__prearm(p, &nlibs), 1);
	assert_int_equal(nlibs, 1);
	has_func(p, at(x, lib, "bin/libptfx_real.so"), "fx_add");
}

/* Found nowhere: a name no folder has, and a full path in a folder it
 * does not load from (a path the program builds: not searched). */
static void test_not_found(void **state)
{
	struct fx *x = *state;
	char abs[PATH_MAX], text[4 * PATH_MAX];
	char *envp[] = { NULL };
	struct proc *p;

	put_lib(x, "elsewhere/libptfx_abs.so");
	p = open_on(x, spawn_static(x, envp),
		    conf(text, sizeof(text), 3, "exe", "fx_mul", "libptfx_none.so", "fx_add",
			 at(x, abs, "elsewhere/libptfx_abs.so"), "fx_add"));
	assert_int_equal(pt_resolver__nfuncs(p->res), 1);
	nothing(p);
}

/* A child in another root (chroot): its folders are not ours to search.
 * The same child and library as test_loaded_library_folder_then_mapped,
 * where it is found. */
static void test_other_root(void **state)
{
	struct fx *x = *state;
	char a[PATH_MAX], text[1024];

	put_lib(x, "lib/libptfx_a.so");
	put_lib(x, "lib/libptfx_b.so");
	nothing(open_on(
		x, loader(x, at(x, a, "lib/libptfx_a.so"), x->dir),
		conf(text, sizeof(text), 2, "exe", "prearm_victim", "libptfx_b.so", "fx_add")));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_own_folder_by_glob),
		T(test_own_folder_by_full_path),
		T(test_two_libraries),
		T(test_loaded_library_folder_then_mapped),
		T(test_ld_library_path),
		T(test_runpath_origin),
		T(test_system_folders),
		T(test_own_copy_before_the_systems),
		T(test_several_own_none_from_the_system),
		T(test_several_in_one_folder),
		T(test_link_and_its_file_are_one),
		T(test_not_found),
		T(test_other_root),
	};
#undef T

	return cmocka_run_group_tests_name("prearm", tests, NULL, NULL);
}
