// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_unwind on real stacks: a child stopped where we know its call chain
 * (tests/fixtures/unwind_fixture.c, no frame pointers), its registers and
 * stack copied as the sampler copies them, and unwound from the copy;
 * copies cut short, zero registers and garbage end without a crash; a
 * library dlopen'ed late found by reading the maps again; proftrace's
 * own libraries told apart;
 * names only from symbols that cover the pc (.dynsym only); CPython's
 * eval loop and interpreter told apart (Debian's python3.11 and a pyenv
 * one, when there); and the cost per 20-frame stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sample/unwind.h"

#define MAXF 128

/* a stopped child and the copy of its stack */
struct child {
	pid_t pid;
	uint64_t regs[PT_UREGS];
	uint8_t stack[PT_USTACK_MAX];
	size_t len;
};

/* the children of a test, killed after it whether it passed or not */
static pid_t kids[4];
static int nkids;

static int kill_kids(void **state)
{
	for (; nkids > 0; nkids--) {
		kill(kids[nkids - 1], SIGKILL);
		waitpid(kids[nkids - 1], NULL, __WALL);
	}
	return 0;
}

static void fixture(const char *name, char *out)
{
	const char *dir = getenv("PT_FIXTURES");
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", dir ? dir : ".output/fixtures", name);
	assert_non_null(realpath(p, out));
}

/* Start argv with its stdout on a pipe, wait for its first line: then it
 * is where the test wants it (spinning). *out: the pipe, kept open for
 * more lines; NULL: closed. */
static pid_t start_out(char *const argv[], int *out)
{
	int fd[2];
	char buf[64];
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd[1], 1);
		close(fd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	kids[nkids++] = pid;
	n = read(fd[0], buf, sizeof(buf));
	if (out)
		*out = fd[0];
	else
		close(fd[0]);
	assert_true(n > 0);
	usleep(20000); /* well inside its loop */
	return pid;
}

static pid_t start(char *const argv[])
{
	return start_out(argv, NULL);
}

/* Stop c->pid (seize and interrupt: it stays stopped until we let go),
 * read its registers in enum pt_ureg order and up to PT_USTACK_MAX bytes
 * from rsp, as much as is mapped. */
static void stop_copy(struct child *c)
{
	struct user_regs_struct r;
	int st;

	assert_int_equal(ptrace(PTRACE_SEIZE, c->pid, 0, 0), 0);
	assert_int_equal(ptrace(PTRACE_INTERRUPT, c->pid, 0, 0), 0);
	assert_int_equal(waitpid(c->pid, &st, __WALL), c->pid);
	assert_int_equal(ptrace(PTRACE_GETREGS, c->pid, 0, &r), 0);
	c->regs[PT_UREG_IP] = r.rip;
	c->regs[PT_UREG_SP] = r.rsp;
	c->regs[PT_UREG_BP] = r.rbp;
	c->regs[PT_UREG_BX] = r.rbx;
	c->regs[PT_UREG_R12] = r.r12;
	c->regs[PT_UREG_R13] = r.r13;
	c->regs[PT_UREG_R14] = r.r14;
	c->regs[PT_UREG_R15] = r.r15;
	c->regs[PT_UREG_AX] = r.rax;
	c->regs[PT_UREG_CX] = r.rcx;
	c->regs[PT_UREG_DX] = r.rdx;
	c->regs[PT_UREG_SI] = r.rsi;
	c->regs[PT_UREG_DI] = r.rdi;
	c->regs[PT_UREG_R8] = r.r8;
	c->regs[PT_UREG_R9] = r.r9;
	c->regs[PT_UREG_R10] = r.r10;
	c->regs[PT_UREG_R11] = r.r11;
	/* page by page: process_vm_readv does not split an iovec */
	c->len = 0;
	while (c->len < sizeof(c->stack)) {
		uint64_t at = r.rsp + c->len;
		size_t n = 4096 - (at & 4095);
		struct iovec l, rv;

		if (n > sizeof(c->stack) - c->len)
			n = sizeof(c->stack) - c->len;
		l = (struct iovec){ c->stack + c->len, n };
		rv = (struct iovec){ (void *)at, n };
		if (process_vm_readv(c->pid, &l, 1, &rv, 1, 0) != (ssize_t)n)
			break;
		c->len += n;
	}
	assert_true(c->len > 0);
}

static struct child *run_fixture(const char *name, const char *arg)
{
	static struct child c;
	char path[PATH_MAX];
	char *argv[] = { path, (char *)arg, NULL };

	fixture(name, path);
	memset(&c, 0, sizeof(c));
	c.pid = start(argv);
	stop_copy(&c);
	return &c;
}

static struct pt_unwind *open_unwind(int pid, const char *root)
{
	struct pt_unwind_opts o = { .pid = pid, .root = root };
	struct pt_unwind *u;
	char err[256];

	if (pt_unwind__new(&u, &o, err, sizeof(err)))
		fail_msg("%s", err);
	return u;
}

/* The same copy through the fast walk and through libdw's own: the same
 * frames; the same end, but for COPY from libdw where the fast walk
 * reached the bottom (libdw reads every callee-saved register's slot,
 * and one past the copy's end marks the walk beyond it). */
static void same_walks(int pid, const uint64_t *regs, const uint8_t *stack, size_t len, size_t max,
		       const char *what)
{
	struct pt_unwind_opts o = { .pid = pid, .libdw_only = true };
	struct pt_unwind *fast, *slow;
	struct pt_unwind_frame a[MAXF], b[MAXF];
	struct pt_unwind_stats st;
	enum pt_unwind_end ea, eb;
	char err[256];
	size_t na, nb;

	fast = open_unwind(pid, NULL);
	if (pt_unwind__new(&slow, &o, err, sizeof(err)))
		fail_msg("%s", err);
	na = pt_unwind__stack(fast, (uint32_t)pid, regs, stack, len, a, max, &ea);
	nb = pt_unwind__stack(slow, (uint32_t)pid, regs, stack, len, b, max, &eb);
	pt_unwind__stats(fast, &st);
	print_message("  %s: fast %zu frames end %d (%s), libdw %zu end %d\n", what, na, ea,
		      st.fast ? "fast walk" : "given to libdw", nb, eb);
	assert_int_equal(st.fast, 1); /* these stacks are all simple rules */
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i].pc, b[i].pc);
		assert_int_equal(a[i].kind, b[i].kind);
		assert_int_equal(a[i].modoff, b[i].modoff);
		assert_true(a[i].sym == b[i].sym ||
			    (a[i].sym && b[i].sym && !strcmp(a[i].sym, b[i].sym)));
		/* in no module (JIT code): no name either way */
		assert_true(a[i].module == b[i].module ||
			    (a[i].module && b[i].module && !strcmp(a[i].module, b[i].module)));
	}
	assert_true(ea == eb || (ea == PT_UNWIND_END_BOTTOM && eb == PT_UNWIND_END_COPY));
	pt_unwind__free(fast);
	pt_unwind__free(slow);
}

static const char *const chain[] = { "fx_leaf", "fx_middle", "fx_outer", "fx_deep", "main" };

static void dump(const struct pt_unwind_frame *f, size_t n, enum pt_unwind_end end)
{
	for (size_t i = 0; i < n; i++)
		print_message("  #%zu %#llx %s %s+%#llx kind %d\n", i, (unsigned long long)f[i].pc,
			      f[i].sym ? f[i].sym : "?", f[i].module ? f[i].module : "?",
			      (unsigned long long)f[i].modoff, f[i].kind);
	print_message("  end %d\n", end);
}

static void test_fixture_chain(void **state)
{
	struct child *c = run_fixture("unwind_fixture", NULL);
	struct pt_unwind *u = open_unwind(c->pid, NULL);
	struct pt_unwind_frame f[MAXF];
	struct pt_unwind_stats st;
	enum pt_unwind_end end;
	size_t n;

	for (int round = 0; round < 2; round++) { /* the second from the cache */
		n = pt_unwind__stack(u, c->pid, c->regs, c->stack, c->len, f, MAXF, &end);
		if (round == 0)
			dump(f, n, end);
		assert_true(n >= 5 + 2);
		for (size_t i = 0; i < 5; i++) {
			assert_non_null(f[i].sym);
			assert_string_equal(f[i].sym, chain[i]);
			assert_string_equal(f[i].module, "unwind_fixture");
			assert_int_equal(f[i].kind, PT_UNWIND_NATIVE);
		}
		assert_int_equal(f[0].pc, c->regs[PT_UREG_IP]);
		/* main's callers are libc's, down to _start: the whole stack fits */
		assert_string_equal(f[5].module, "libc.so.6");
		assert_string_equal(f[n - 1].sym, "_start");
		assert_int_equal(end, PT_UNWIND_END_BOTTOM);
	}
	/* the same with what the frames are cut to */
	n = pt_unwind__stack(u, c->pid, c->regs, c->stack, c->len, f, 3, &end);
	assert_int_equal(n, 3);
	assert_int_equal(end, PT_UNWIND_END_MAX);
	pt_unwind__stats(u, &st);
	assert_int_equal(st.stacks, 3);
	assert_true(st.hits >= 7 + 3);
	assert_int_equal(st.ends[PT_UNWIND_END_BOTTOM], 2);
	pt_unwind__free(u);
}

/* /proc/PID/root opens the same files; a root where they are not names nothing. */
static void test_root(void **state)
{
	struct child *c = run_fixture("unwind_fixture", NULL);
	struct pt_unwind_frame f[MAXF];
	enum pt_unwind_end end;
	char root[64];
	struct pt_unwind *u;
	size_t n;

	snprintf(root, sizeof(root), "/proc/%d/root", c->pid);
	u = open_unwind(c->pid, root);
	n = pt_unwind__stack(u, c->pid, c->regs, c->stack, c->len, f, MAXF, &end);
	assert_true(n >= 5);
	assert_string_equal(f[4].sym, "main");
	assert_int_equal(end, PT_UNWIND_END_BOTTOM);
	pt_unwind__free(u);

	/* no file opens: the leaf, and no CFI to go further with */
	u = open_unwind(c->pid, "/nonexistent-root");
	n = pt_unwind__stack(u, c->pid, c->regs, c->stack, c->len, f, MAXF, &end);
	assert_int_equal(n, 1);
	assert_null(f[0].sym);
	assert_string_equal(f[0].module, "unwind_fixture");
	assert_int_equal(end, PT_UNWIND_END_NOINFO);
	pt_unwind__free(u);
}

/* A few hundred bytes hold leaf's and middle's frames, not outer's
 * (1000 bytes of locals). */
static void test_short_copy(void **state)
{
	struct child *c = run_fixture("unwind_fixture", NULL);
	struct pt_unwind *u = open_unwind(c->pid, NULL);
	struct pt_unwind_frame f[MAXF];
	enum pt_unwind_end end;
	size_t n;

	n = pt_unwind__stack(u, c->pid, c->regs, c->stack, 400, f, MAXF, &end);
	dump(f, n, end);
	assert_int_equal(end, PT_UNWIND_END_COPY);
	assert_true(n >= 2 && n <= 3);
	assert_string_equal(f[0].sym, "fx_leaf");
	assert_string_equal(f[1].sym, "fx_middle");
	/* nothing copied: the leaf alone */
	n = pt_unwind__stack(u, c->pid, c->regs, c->stack, 0, f, MAXF, &end);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].sym, "fx_leaf");
	assert_int_equal(end, PT_UNWIND_END_COPY);
	pt_unwind__free(u);
}

/* .dynsym only: fx_leaf is not exported, so no name; its callers are. */
static void test_dynsym_only(void **state)
{
	struct child *c = run_fixture("unwind_fixture_dyn", NULL);
	struct pt_unwind *u = open_unwind(c->pid, NULL);
	struct pt_unwind_frame f[MAXF];
	struct pt_unwind_stats st;
	enum pt_unwind_end end;
	size_t n;

	n = pt_unwind__stack(u, c->pid, c->regs, c->stack, c->len, f, MAXF, &end);
	dump(f, n, end);
	assert_true(n >= 5);
	assert_null(f[0].sym);
	assert_string_equal(f[0].module, "unwind_fixture_dyn");
	assert_true(f[0].modoff > 0 && f[0].modoff < 0x100000);
	for (size_t i = 1; i < 5; i++)
		assert_string_equal(f[i].sym, chain[i]);
	assert_int_equal(end, PT_UNWIND_END_BOTTOM);
	pt_unwind__stats(u, &st);
	assert_true(st.nosym >= 1);
	pt_unwind__free(u);
}

/* A library dlopen'ed after the unwinder read the maps: its pcs are in
 * no module until the maps are read again, which the first such pc does
 * (no sooner than 100 ms after the last read). */
static void test_dlopen(void **state)
{
	static struct child c;
	char exe[PATH_MAX], lib[PATH_MAX], buf[16];
	char *argv[] = { exe, "dl", lib, NULL };
	struct pt_unwind_frame f[MAXF];
	struct pt_unwind_stats st;
	enum pt_unwind_end end;
	struct pt_unwind *u;
	size_t n;
	int out;

	fixture("unwind_fixture", exe);
	fixture("libunwind_fixture.so", lib);
	memset(&c, 0, sizeof(c));
	c.pid = start_out(argv, &out); /* "waiting": nothing loaded yet */
	u = open_unwind(c.pid, NULL);
	kill(c.pid, SIGUSR1);
	assert_true(read(out, buf, sizeof(buf)) > 0); /* "in leaf" */
	close(out);
	usleep(150000);
	stop_copy(&c);
	n = pt_unwind__stack(u, c.pid, c.regs, c.stack, c.len, f, MAXF, &end);
	dump(f, n, end);
	assert_true(n >= 5);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(f[i].sym, chain[i]);
		assert_string_equal(f[i].module, "libunwind_fixture.so");
	}
	assert_string_equal(f[3].sym, "fx_lib_entry");
	assert_int_equal(end, PT_UNWIND_END_BOTTOM);
	pt_unwind__stats(u, &st);
	assert_int_equal(st.reports, 2);
	/* known now: no more reads */
	pt_unwind__stack(u, c.pid, c.regs, c.stack, c.len, f, MAXF, &end);
	pt_unwind__stats(u, &st);
	assert_int_equal(st.reports, 2);
	pt_unwind__free(u);
}

/* A library named as proftrace's own helpers are: its frames are OWN. */
static void test_own(void **state)
{
	static struct child c;
	char exe[PATH_MAX], lib[PATH_MAX];
	char *argv[] = { exe, "dl", lib, NULL };
	struct pt_unwind_frame f[MAXF];
	enum pt_unwind_end end;
	struct pt_unwind *u;
	size_t n;
	int out;

	fixture("unwind_fixture", exe);
	fixture("libproftrace_unwind_fixture.so", lib);
	memset(&c, 0, sizeof(c));
	c.pid = start_out(argv, &out);
	kill(c.pid, SIGUSR1);
	assert_true(read(out, exe, 8) > 0);
	close(out);
	usleep(20000); /* past write(), in the loop */
	stop_copy(&c);
	u = open_unwind(c.pid, NULL);
	n = pt_unwind__stack(u, c.pid, c.regs, c.stack, c.len, f, MAXF, &end);
	dump(f, n, end);
	assert_true(n >= 5);
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(f[i].module, "libproftrace_unwind_fixture.so");
		assert_int_equal(f[i].kind, PT_UNWIND_OWN);
	}
	assert_string_equal(f[4].sym, "main");
	assert_int_equal(f[4].kind, PT_UNWIND_NATIVE);
	pt_unwind__free(u);
}

/* Untrusted copies end, whatever they hold. */
static void test_garbage(void **state)
{
	struct child *c = run_fixture("unwind_fixture", NULL);
	struct pt_unwind *u = open_unwind(c->pid, NULL);
	static uint8_t junk[PT_USTACK_MAX];
	struct pt_unwind_frame f[MAXF];
	uint64_t regs[PT_UREGS] = { 0 };
	enum pt_unwind_end end;
	size_t n, total = 0;

	/* all zero: pc 0 */
	n = pt_unwind__stack(u, c->pid, regs, NULL, 0, f, MAXF, &end);
	assert_true(n <= 1);
	assert_true(end <= PT_UNWIND_END_ERROR);
	/* a tid the unwinder was not told of, pc in no module */
	regs[PT_UREG_IP] = 0x1234;
	n = pt_unwind__stack(u, 1, regs, junk, 64, f, MAXF, &end);
	assert_true(n <= 1);
	srand(42);
	for (int i = 0; i < 3000; i++) {
		uint64_t sp = c->regs[PT_UREG_SP] + (rand() % 64) - 32; /* misaligned too */
		size_t len = rand() % 4 ? (size_t)rand() % sizeof(junk) : 0;

		for (size_t j = 0; j < sizeof(junk); j++) {
			/* the real stack, some of it bent */
			junk[j] = rand() % 8 ? c->stack[j % c->len] : rand();
		}
		memcpy(regs, c->regs, sizeof(regs));
		regs[PT_UREG_SP] = sp;
		if (i % 3 == 0)
			regs[rand() % PT_UREGS] = ((uint64_t)rand() << 32) | rand();
		n = pt_unwind__stack(u, c->pid, regs, junk, len, f, i % 2 ? 8 : MAXF, &end);
		assert_true(n <= (i % 2 ? 8u : (size_t)MAXF));
		assert_true(end <= PT_UNWIND_END_ERROR);
		total += n;
	}
	print_message("  %zu frames from 3000 bent copies\n", total);
	pt_unwind__free(u);
}

static void test_demangle(void **state)
{
	char buf[256];
	const char *d;

	d = pt_unwind__demangle("_ZN2at4_ops6linear4callERKNS_6TensorES4_RKN3c108optionalIS2_EE",
				buf, sizeof(buf));
	assert_ptr_equal(d, buf);
	assert_memory_equal(d, "at::_ops::linear::call(", strlen("at::_ops::linear::call("));
	d = "fx_leaf";
	assert_ptr_equal(pt_unwind__demangle(d, buf, sizeof(buf)), d);
	d = "_Znot a name";
	assert_ptr_equal(pt_unwind__demangle(d, buf, sizeof(buf)), d);
}

/* A Python process unwound whole: down to the process's start. libdw may
 * still try the outermost frame's caller, past the copy when the stack's
 * top is within 16 KiB of the sample: COPY then, nothing lost (seen once
 * in CI), so long as libc's start is among the frames. */
static void check_bottom(const struct pt_unwind_frame *f, size_t n, enum pt_unwind_end end)
{
	bool start = false;

	for (size_t i = 0; i < n; i++)
		start |= f[i].sym && !strcmp(f[i].sym, "__libc_start_main");
	if (end == PT_UNWIND_END_COPY && start)
		return;
	assert_int_equal(end, PT_UNWIND_END_BOTTOM);
}

/* A pure-Python loop: its leaf is the eval loop or the interpreter's
 * helpers, and _PyEval_EvalFrameDefault is on the stack. */
static void python_kinds(const char *python)
{
	char *argv[] = { (char *)python, "-c",
			 "import sys\nsys.stdout.write('spin\\n'); sys.stdout.flush()\n"
			 "def f():\n    x = 0\n    while True:\n        x += 1\nf()\n",
			 NULL };
	static struct child c;
	struct pt_unwind *u;
	struct pt_unwind_frame f[MAXF];
	enum pt_unwind_end end;
	const char *interp = NULL;
	size_t n, evals = 0;

	memset(&c, 0, sizeof(c));
	c.pid = start(argv);
	stop_copy(&c);
	u = open_unwind(c.pid, NULL);
	n = pt_unwind__stack(u, c.pid, c.regs, c.stack, c.len, f, MAXF, &end);
	print_message("  %s:\n", python);
	dump(f, n, end);
	assert_true(n >= 3);
	for (size_t i = 0; i < n; i++) {
		if (f[i].kind != PT_UNWIND_EVAL)
			continue;
		if (!evals++)
			interp = f[i].module;
		assert_string_equal(f[i].sym, "_PyEval_EvalFrameDefault");
	}
	assert_true(evals >= 1);
	/* the module that defines the eval loop is INTERP (or EVAL) all
	 * through, leaf side included; every other one (libc, ld.so when
	 * the sample caught a TLS lookup, pyenv's python3.12 executable
	 * that only calls into libpython) is NATIVE */
	for (size_t i = 0; i < n; i++) {
		assert_non_null(f[i].module);
		if (!strcmp(f[i].module, interp))
			assert_true(f[i].kind == PT_UNWIND_EVAL || f[i].kind == PT_UNWIND_INTERP);
		else
			assert_int_equal(f[i].kind, PT_UNWIND_NATIVE);
	}
	check_bottom(f, n, end);
	pt_unwind__free(u);
}

static void test_python_debian(void **state)
{
	if (access("/usr/bin/python3.11", X_OK)) {
		print_message("  skipped: no /usr/bin/python3.11\n");
		skip();
	}
	python_kinds("/usr/bin/python3.11");
}

/* pyenv's, linked with its libpython3.12.so (full .symtab) */
static void test_python_pyenv(void **state)
{
	const char *root = getenv("PYENV_ROOT");
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/versions/3.12.1/bin/python3.12",
		 root ? root : "/root/.pyenv");
	if (access(path, X_OK)) {
		print_message("  skipped: no %s\n", path);
		skip();
	}
	python_kinds(path);
}

/* The fast walk against libdw's own on real stacks: the fixture's whole
 * chain, cut to 3 frames, a copy cut short (400 bytes: COPY), and the
 * interpreters' (Python stacks, the eval loop's frames). */
static void test_fast_walk(void **state)
{
	char *argv[] = { "/usr/bin/python3.11", "-c",
			 "import sys\nsys.stdout.write('spin\\n'); sys.stdout.flush()\n"
			 "def f():\n    x = 0\n    while True:\n        x += 1\nf()\n",
			 NULL };
	struct child *c = run_fixture("unwind_fixture", "12");
	static struct child py;

	same_walks(c->pid, c->regs, c->stack, c->len, MAXF, "fixture");
	same_walks(c->pid, c->regs, c->stack, c->len, 3, "fixture, 3 frames");
	same_walks(c->pid, c->regs, c->stack, 400, MAXF, "fixture, 400 bytes");
	if (access(argv[0], X_OK)) {
		print_message("  no %s: its stack not compared\n", argv[0]);
		return;
	}
	memset(&py, 0, sizeof(py));
	py.pid = start(argv);
	stop_copy(&py);
	same_walks(py.pid, py.regs, py.stack, py.len, MAXF, "python3.11");
}

/*
 * A caller in no module (JIT code: CPython's perf trampolines, oneDNN's
 * kernels): the walk ends there, NOINFO, the same with or without libdw,
 * and without libdw. Asking the maps again (once per REREPORT_NS) must not
 * empty the cache when nothing was mapped: the second walk's named frames
 * all come from it.
 */
static void test_jit_caller(void **state)
{
	struct child *c = run_fixture("unwind_fixture", "12");
	struct pt_unwind *u = open_unwind(c->pid, NULL);
	struct pt_unwind_frame f[MAXF];
	struct pt_unwind_stats a, b;
	enum pt_unwind_end end;
	static uint8_t copy[PT_USTACK_MAX];
	uint64_t ra, jit = 0x10000; /* below any mapping */
	size_t n, at = 0;

	n = pt_unwind__stack(u, c->pid, c->regs, c->stack, c->len, f, MAXF, &end);
	assert_true(n > 4);
	ra = f[3].pc + 1; /* fx_outer's return address, in fx_deep */
	memcpy(copy, c->stack, c->len);
	for (at = 0; at + 8 <= c->len; at += 8)
		if (!memcmp(copy + at, &ra, 8))
			break;
	assert_true(at + 8 <= c->len);
	memcpy(copy + at, &jit, 8);
	same_walks(c->pid, c->regs, copy, c->len, MAXF, "fixture, a caller in JIT code");
	n = pt_unwind__stack(u, c->pid, c->regs, copy, c->len, f, MAXF, &end);
	assert_int_equal(n, 4);
	assert_int_equal(end, PT_UNWIND_END_NOINFO);
	assert_int_equal(f[3].pc, jit - 1);
	assert_null(f[3].module);
	assert_null(f[3].sym);
	usleep(110 * 1000); /* past REREPORT_NS: the maps read again */
	pt_unwind__stats(u, &a);
	n = pt_unwind__stack(u, c->pid, c->regs, copy, c->len, f, MAXF, &end);
	pt_unwind__stats(u, &b);
	assert_int_equal(n, 4);
	assert_int_equal(b.reports, a.reports + 1);
	assert_int_equal(b.hits - a.hits, 3);
	assert_int_equal(b.fast, a.fast + 1);
	pt_unwind__free(u);
}

/* ns per 20-frame stack (17 of the fixture, 3 of libc's start), pcs cached */
static void test_cost(void **state)
{
	struct child *c = run_fixture("unwind_fixture", "12");
	struct pt_unwind *u = open_unwind(c->pid, NULL);
	struct pt_unwind_frame f[MAXF];
	enum pt_unwind_end end;
	struct timespec a, b;
	size_t n = 0;
	int rounds = 2000;

	pt_unwind__stack(u, c->pid, c->regs, c->stack, c->len, f, MAXF, &end);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < rounds; i++)
		n = pt_unwind__stack(u, c->pid, c->regs, c->stack, c->len, f, MAXF, &end);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_int_equal(n, 20);
	check_bottom(f, n, end);
	print_message("  %.0f ns per %zu-frame stack\n",
		      ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / rounds, n);
	pt_unwind__free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_fixture_chain, kill_kids),
		cmocka_unit_test_teardown(test_root, kill_kids),
		cmocka_unit_test_teardown(test_short_copy, kill_kids),
		cmocka_unit_test_teardown(test_dynsym_only, kill_kids),
		cmocka_unit_test_teardown(test_dlopen, kill_kids),
		cmocka_unit_test_teardown(test_own, kill_kids),
		cmocka_unit_test_teardown(test_garbage, kill_kids),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test_teardown(test_python_debian, kill_kids),
		cmocka_unit_test_teardown(test_python_pyenv, kill_kids),
		cmocka_unit_test_teardown(test_fast_walk, kill_kids),
		cmocka_unit_test_teardown(test_jit_caller, kill_kids),
		cmocka_unit_test_teardown(test_cost, kill_kids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
