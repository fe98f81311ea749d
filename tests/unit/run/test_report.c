// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/report.c: the documents and the output files of a run opened by
 * pt_run__open on children of this test that wait (no BPF object), with a
 * targets file naming a step and a bucket function of theirs (this binary)
 * and a bucket in a library they never load.
 *
 * It proves: pt_run__open_output creates the folder -o names (parents
 * too, private), refuses one that is a symbolic link or that it cannot
 * write (-PT_EUSAGE, said), and without -o makes a new
 * proftrace_out/<comm>-<pid>-<time> folder, never an existing one.
 * pt_run__view_doc's document for the process holds the sections and keys
 * docs/summary.md lists for such a run (as sets: their order is
 * summary.c's, tests/unit/report/test_summary.c), with the steps, bucket
 * calls and function calls routed to it as BPF's records (pt_run__on_rec),
 * the unresolved probe and why, and the GPU stream's absence and why.
 * pt_run__write_outputs writes summary.json (that document) and report.md
 * and nothing else (no sampling, no --trace), --json prints the document
 * on stdout too, with -p A,B each process has its section, and when the
 * output folder went away the profile goes to a fallback folder, said,
 * and the write is not a success. pt_run__print_dry_run lists each probe's
 * functions, object, offset and site, and the probes pending a library,
 * per process with several.
 *
 * What pt_run__attach does that needs BPF is done as it does it without
 * the BPF part: the clock started (t0), the functions declared to the
 * views and marked attached (pt_run__declare_func, pt_run__mark_attached:
 * pt_run__attach_new, whose pt_attach__funcs needs BPF); the loop's end
 * sets t_end_mono. Not here: the probes' calibration (overhead,
 * corrected_* figures: a helper probed through BPF), sampling (meta.sampling,
 * top, the flame graphs, -o x.svg), --trace, Python: tests/integration; a
 * GPU stream's section: tests/unit/run/test_gpustream.c joins one,
 * tests/integration test_gpu reports it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "aggregate/agg.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "report/outdir.h"
#include "run/env.h"
#include "run/funcs.h"
#include "run/gpustream.h"
#include "run/records.h"
#include "run/report.h"
#include "run/run.h"
#include "run/steps.h"
#include "util/util.h"
#include "runfx.h"

#define MS 1000000ull
#define SEC 1000000000ull

/* What the targets file names in the children (this binary): noinline
 * with a body, so the symbols are there to resolve. */
RUNFX_VICTIM(rep_victim_step);
RUNFX_VICTIM(rep_victim_forward);

static const char conf[] = "step native:exe:rep_victim_step\n"
			   "bucket eng.fwd native:exe:rep_victim_forward\n"
			   "bucket eng.io native:libpt_absent.so:absent_fn\n";

struct fx {
	struct run r;
	bool opened;
	pid_t child, child2;
	char tmp[64];	      /* everything of the test's is in it */
	char targets[128];    /* tmp/targets.conf */
	int cwd;	      /* to come back to */
	uint32_t fstep, ffwd; /* process 0's fids (PT_FID_MAKE) */
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	FILE *f;

	if (!x)
		return -1;
	x->child = x->child2 = -1;
	x->cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(x->tmp, sizeof(x->tmp), "/tmp/pt-test-report-XXXXXX");
	if (x->cwd < 0 || !mkdtemp(x->tmp))
		return -1;
	snprintf(x->targets, sizeof(x->targets), "%s/targets.conf", x->tmp);
	f = fopen(x->targets, "w");
	if (!f || fputs(conf, f) < 0 || fclose(f))
		return -1;
	x->child = runfx__child();
	*state = x;
	return x->child > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->opened)
		pt_run__free(&x->r);
	runfx__reap(x->child);
	runfx__reap(x->child2);
	if (fchdir(x->cwd))
		return -1;
	close(x->cwd);
	unsetenv("TMPDIR");
	chmod(x->tmp, 0700);
	nftw(x->tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(x);
	return 0;
}

/* tmp/name, in buf (PATH_MAX) */
static const char *in_tmp_at(struct fx *x, const char *name, char *buf)
{
	snprintf(buf, PATH_MAX, "%s/%s", x->tmp, name);
	return buf;
}
/* tmp/name, valid in the caller's block */
#define in_tmp(x, name) in_tmp_at(x, name, (char[PATH_MAX]){ 0 })

/* The run: of the child (two with -p A,B), -o output (NULL: the default
 * folder), opened as pt_run__open does it. */
static void open_run(struct fx *x, const char *output, bool two, bool json, bool dry_run)
{
	struct pt_env env = { 0 };

	if (two) {
		x->child2 = runfx__child();
		assert_true(x->child2 > 0);
	}
	env.pid = env.pids[0] = x->child;
	env.pids[1] = x->child2;
	env.npids = two ? 2 : 1;
	env.targets = x->targets;
	env.quiet = true;
	env.output = output;
	env.json = json;
	env.dry_run = dry_run;
	assert_int_equal(pt_run__open(&x->r, &env), 0);
	x->opened = true;
}

/* Process 0's fid of the function of that symbol. */
static uint32_t fid_of(struct run *r, const char *symbol)
{
	struct proc *p = r->procs.v[0];

	for (size_t i = 0; i < p->nfs; i++)
		if (!strcmp(pt_resolver__func(p->res, i)->symbol, symbol))
			return PT_FID_MAKE(p->idx, (uint32_t)i);
	fail_msg("no function %s", symbol);
	return UINT32_MAX;
}

/* What pt_run__attach does after the output folder, but BPF's part: the
 * GPU rings looked for (the children have none), the clock started, each
 * process's functions declared to the views and marked attached, as
 * pt_run__attach_new does once BPF took their probes. */
static void attach(struct fx *x)
{
	for (size_t i = 0; i < x->r.procs.n; i++)
		assert_int_equal(pt_run__open_gpu(x->r.procs.v[i]), 0);
	x->r.t0_mono = pt_now_ns(CLOCK_MONOTONIC);
	x->r.t0_unix = pt_now_ns(CLOCK_REALTIME);
	for (size_t i = 0; i < x->r.procs.n; i++) {
		struct proc *p = x->r.procs.v[i];

		for (size_t k = 0; k < p->nfs; k++) {
			assert_int_equal(pt_run__declare_func(p, k), 0);
			pt_run__mark_attached(p, k);
		}
	}
	x->fstep = fid_of(&x->r, "rep_victim_step");
	x->ffwd = fid_of(&x->r, "rep_victim_forward");
}

/* A record of process 0's main thread, as BPF writes it. */
static void rec(struct fx *x, uint32_t type, uint32_t fid, uint16_t depth, uint64_t a, uint64_t b)
{
	struct pt_rec r = { .type = type,
			    .fid = fid,
			    .pid = (uint32_t)x->child,
			    .tid = (uint32_t)x->child,
			    .t_entry = x->r.t0_mono + a,
			    .t_exit = type == PT_REC_EXIT ? x->r.t0_mono + b : 0,
			    .depth = depth };

	assert_int_equal(pt_run__on_rec(&x->r, &r, sizeof(r)), 0);
}

/* 3 steps of 9 ms, one each 10 ms, a forward of 4 ms in each; the loop
 * stops 1 s after the clock started. */
static void run_steps(struct fx *x)
{
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t at = 10 * MS + i * 10 * MS;

		rec(x, PT_REC_ENTRY, x->fstep, 0, at, 0);
		rec(x, PT_REC_ENTRY, x->ffwd, 1, at + 2 * MS, 0);
		rec(x, PT_REC_EXIT, x->ffwd, 1, at + 2 * MS, at + 6 * MS);
		rec(x, PT_REC_EXIT, x->fstep, 0, at, at + 9 * MS);
	}
	x->r.t_end_mono = x->r.t0_mono + SEC;
}

/* ---- JSON ---- */

static const cJSON *item(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!v)
		fail_msg("no key \"%s\"", k);
	return v;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = item(o, k);

	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = item(o, k);

	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

/* o's keys are exactly want's (their order is summary.c's, checked by
 * tests/unit/report/test_summary.c). */
static void check_keys(const cJSON *o, const char *const *want, size_t n)
{
	const cJSON *it;
	size_t count = 0;

	assert_non_null(o);
	for (size_t i = 0; i < n; i++)
		if (!cJSON_GetObjectItemCaseSensitive(o, want[i]))
			fail_msg("key \"%s\" missing", want[i]);
	cJSON_ArrayForEach(it, o)
	{
		bool listed = false;

		for (size_t i = 0; i < n && !listed; i++)
			listed = !strcmp(it->string, want[i]);
		if (!listed)
			fail_msg("key \"%s\" not listed", it->string);
		count++;
	}
	assert_int_equal(count, n);
}
#define CHECK_KEYS(o, ...)                                                                         \
	do {                                                                                       \
		static const char *const k_[] = { __VA_ARGS__ };                                   \
		check_keys(o, k_, sizeof(k_) / sizeof(k_[0]));                                     \
	} while (0)

/* The element of array a whose key k is v. */
static const cJSON *find(const cJSON *a, const char *k, const char *v)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, a)
	{
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, k);

		if (cJSON_IsString(s) && !strcmp(s->valuestring, v))
			return e;
	}
	fail_msg("no element with %s \"%s\"", k, v);
	return NULL;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *text = calloc(1, 1 << 20);
	size_t len;

	assert_non_null(f);
	assert_non_null(text);
	len = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	assert_true(len > 0);
	return text;
}

static cJSON *json_file(const char *path)
{
	char *text = slurp(path);
	cJSON *doc = cJSON_Parse(text);

	free(text);
	assert_non_null(doc);
	return doc;
}

/* The names in folder dir, sorted, joined by ' '. */
static void names_in(const char *dir, char *buf, size_t len)
{
	struct dirent **v;
	int n = scandir(dir, &v, NULL, alphasort);
	size_t at = 0;

	assert_true(n >= 0);
	buf[0] = 0;
	for (int i = 0; i < n; i++) {
		if (v[i]->d_name[0] != '.')
			pt_appendf(buf, len, &at, "%s%s", at ? " " : "", v[i]->d_name);
		free(v[i]);
	}
	free(v);
}

/* ---- capturing stdout or stderr ---- */

static void capture_start(struct runfx_ear *c, int fd)
{
	assert_int_equal(runfx__hear(c, fd), 0);
}

/* What was written meanwhile (the caller frees it). */
static char *capture_end(struct runfx_ear *c)
{
	char *text = runfx__heard(c);

	assert_non_null(text);
	return text;
}

/* ---- the output folder ---- */

/* -o a folder that is not there: made, parents too, private. */
static void test_output_created(void **state)
{
	struct fx *x = *state;
	const char *out = in_tmp(x, "a/b/out");
	struct stat st;

	open_run(x, out, false, false, false);
	assert_int_equal(pt_run__open_output(&x->r), 0);
	assert_non_null(x->r.out);
	assert_string_equal(pt_outdir__path(x->r.out), out);
	assert_int_equal(lstat(out, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(lstat(in_tmp(x, "a"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
}

/* -o a symbolic link to a folder: refused, said, nothing written there. */
static void test_output_symlink(void **state)
{
	struct fx *x = *state;
	struct runfx_ear c;
	char *said, names[256];

	assert_int_equal(mkdir(in_tmp(x, "real"), 0700), 0);
	assert_int_equal(symlink(in_tmp(x, "real"), in_tmp(x, "link")), 0);
	open_run(x, in_tmp(x, "link"), false, false, false);
	capture_start(&c, STDERR_FILENO);
	assert_int_equal(pt_run__open_output(&x->r), -PT_EUSAGE);
	said = capture_end(&c);
	assert_null(x->r.out);
	assert_non_null(strstr(said, "it is a symbolic link"));
	free(said);
	names_in(in_tmp(x, "real"), names, sizeof(names));
	assert_string_equal(names, "");
}

/*
 * -o a folder it cannot write: refused, said. Root writes anywhere: the
 * open is made in a child of the test that runs as nobody then (its
 * answer: its exit status, what it said in a file; skipped where there is
 * no such user to become).
 */
static void test_output_not_writable(void **state)
{
	struct fx *x = *state;
	const char *ro = in_tmp(x, "ro");
	char *said, names[256];
	int status, log;
	pid_t pid;

	assert_int_equal(mkdir(ro, 0555), 0);
	assert_int_equal(chmod(ro, 0555), 0);
	assert_int_equal(chmod(x->tmp, 0755), 0); /* nobody may walk to it */
	open_run(x, ro, false, false, false);
	log = open(in_tmp(x, "said"), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(log >= 0);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int e;

		dup2(log, STDERR_FILENO);
		if (geteuid() == 0 && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(3);
		e = pt_run__open_output(&x->r);
		_exit(e == -PT_EUSAGE && !x->r.out ? 0 : 1);
	}
	close(log);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 3) /* no uid 65534 here (a user namespace) */
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
	said = slurp(in_tmp(x, "said"));
	assert_non_null(strstr(said, "hint: -o a folder you can write"));
	free(said);
	names_in(ro, names, sizeof(names));
	assert_string_equal(names, "");
}

/*
 * No -o: proftrace_out/<comm>-<pid>-<YYYYMMDD-HHMMSS> in the current
 * folder, a new one: with one of that name there (an earlier run's in the
 * same second), "-2" is added and the earlier one is left alone.
 */
static void test_output_default(void **state)
{
	struct fx *x = *state;
	struct proc *p;
	char name[128], want[160], stamp[32];
	const char *path;
	time_t now = time(NULL);

	assert_int_equal(chdir(x->tmp), 0);
	open_run(x, NULL, false, false, false);
	p = x->r.procs.v[0];
	assert_string_equal(p->tracee.comm, "test_report");
	/* the earlier runs': this second's and the next few's */
	assert_int_equal(mkdir("proftrace_out", 0700), 0);
	for (time_t t = now - 1; t <= now + 5; t++) {
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(name, sizeof(name), "proftrace_out/test_report-%d-%s", x->child, stamp);
		assert_int_equal(mkdir(name, 0700), 0);
	}
	assert_int_equal(pt_run__open_output(&x->r), 0);
	path = pt_outdir__path(x->r.out);
	snprintf(want, sizeof(want), "proftrace_out/test_report-%d-", x->child);
	assert_int_equal(strncmp(path, want, strlen(want)), 0);
	/* YYYYMMDD-HHMMSS-2 */
	path += strlen(want);
	assert_int_equal(strlen(path), 17);
	assert_true(path[8] == '-' && !strcmp(path + 15, "-2"));
	for (int i = 0; i < 15; i++)
		assert_true(i == 8 || (path[i] >= '0' && path[i] <= '9'));
	/* the earlier one is left alone */
	snprintf(name, sizeof(name), "%s%.15s", want, path);
	names_in(name, stamp, sizeof(stamp));
	assert_string_equal(stamp, "");
}

/* ---- the documents ---- */

/* The process's document: the sections and keys docs/summary.md lists
 * for a run of one process with a step, buckets, no Python, no sampling,
 * no --trace, no GPU stream and no calibration; the figures of the calls
 * routed to it. */
static void test_view_doc(void **state)
{
	struct fx *x = *state;
	const cJSON *m, *s, *b, *f, *h, *g, *u;
	struct proc *p;
	cJSON *doc;
	char want[64];

	open_run(x, in_tmp(x, "out"), false, false, false);
	assert_int_equal(pt_run__open_output(&x->r), 0);
	attach(x);
	run_steps(x);
	p = x->r.procs.v[0];
	pt_agg__finish(p->v.agg); /* the run's end, as pt_run__report does */
	doc = pt_run__view_doc(&x->r, p, &p->v);
	assert_non_null(doc);

	CHECK_KEYS(doc, "meta", "stats", "buckets", "functions", "lines", "runs", "runs_aggregate",
		   "gpu", "health", "overhead");
	m = item(doc, "meta");
	CHECK_KEYS(m, "tool", "version", "pid", "comm", "exe", "start_unix_ns", "duration_s",
		   "targets_file", "mode", "kernel", "warmup_steps", "step_probe", "step_mode",
		   "python", "sampling", "host", "rank");
	assert_string_equal(str(m, "tool"), "proftrace");
	assert_string_equal(str(m, "version"), PT_VERSION);
	assert_true(num(m, "pid") == x->child);
	assert_string_equal(str(m, "comm"), "test_report");
	assert_non_null(strstr(str(m, "exe"), "/test_report"));
	/* past 2^53: its digits, exact (a raw number) */
	snprintf(want, sizeof(want), "%llu", (unsigned long long)x->r.t0_unix);
	assert_true(cJSON_IsRaw(item(m, "start_unix_ns")));
	assert_string_equal(item(m, "start_unix_ns")->valuestring, want);
	assert_true(num(m, "duration_s") == 1.0);
	assert_string_equal(str(m, "targets_file"), x->targets);
	assert_string_equal(str(m, "mode"), "targets");
	assert_string_equal(str(m, "step_probe"), "native:exe:rep_victim_step");
	assert_string_equal(str(m, "step_mode"), "call");
	assert_true(cJSON_IsNull(item(m, "python")));
	assert_true(cJSON_IsNull(item(m, "sampling")));
	assert_true(cJSON_IsNull(item(m, "rank")));
	assert_int_equal(gethostname(want, sizeof(want)), 0);
	assert_string_equal(str(m, "host"), want);

	s = item(doc, "stats");
	CHECK_KEYS(s, "steps", "mean_ms", "std_ms", "min_ms", "p50_ms", "p90_ms", "p99_ms",
		   "max_ms", "steps_per_s", "time_ms", "warmup_steps_skipped", "incomplete_steps");
	assert_true(num(s, "steps") == 3);
	assert_true(num(s, "mean_ms") == 9);
	assert_true(num(s, "time_ms") == 27);
	assert_true(num(s, "steps_per_s") == 3);
	assert_true(num(s, "incomplete_steps") == 0);

	/* the buckets in the file's order, then step.other */
	b = item(doc, "buckets");
	assert_int_equal(cJSON_GetArraySize(b), 3);
	CHECK_KEYS(cJSON_GetArrayItem(b, 0), "name", "domain", "calls", "total_ms",
		   "avg_ms_per_step", "share", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms");
	assert_string_equal(str(cJSON_GetArrayItem(b, 0), "name"), "eng.fwd");
	assert_string_equal(str(cJSON_GetArrayItem(b, 1), "name"), "eng.io");
	assert_string_equal(str(cJSON_GetArrayItem(b, 2), "name"), "step.other");
	assert_string_equal(str(cJSON_GetArrayItem(b, 2), "domain"), "step");
	assert_true(num(cJSON_GetArrayItem(b, 0), "calls") == 3);
	assert_true(num(cJSON_GetArrayItem(b, 0), "total_ms") == 12);
	assert_true(num(cJSON_GetArrayItem(b, 1), "calls") == 0);
	assert_true(num(cJSON_GetArrayItem(b, 2), "calls") == 3);
	assert_true(num(cJSON_GetArrayItem(b, 2), "total_ms") == 15);

	/* the functions resolved, then the probe that matched nothing */
	f = item(doc, "functions");
	assert_int_equal(cJSON_GetArraySize(f), 3);
	CHECK_KEYS(cJSON_GetArrayItem(f, 0), "probe", "kind", "object", "symbol", "mangled", "line",
		   "timing", "aliases", "file_offset", "probe_skip", "probe_insn", "attached",
		   "attached_after_s", "dlopen_window_ms", "reason", "calls", "total_ms", "mean_ms",
		   "p50_ms", "p90_ms", "p99_ms", "max_ms", "sampled");
	f = find(f, "symbol", "rep_victim_forward");
	assert_string_equal(str(f, "probe"), "native:exe:rep_victim_forward");
	assert_string_equal(str(f, "kind"), "native");
	assert_true(cJSON_IsTrue(item(f, "attached")));
	assert_true(num(f, "calls") == 3);
	assert_true(num(f, "total_ms") == 12);
	f = cJSON_GetArrayItem(item(doc, "functions"), 2);
	assert_string_equal(str(f, "probe"), "native:libpt_absent.so:absent_fn");
	assert_true(cJSON_IsNull(item(f, "symbol")));
	assert_true(cJSON_IsFalse(item(f, "attached")));
	assert_string_equal(str(f, "reason"), "no mapped object matched while attached");
	assert_int_equal(cJSON_GetArraySize(item(doc, "lines")), 0);
	assert_int_equal(cJSON_GetArraySize(item(doc, "runs")), 1);
	assert_true(num(cJSON_GetArrayItem(item(doc, "runs"), 0), "steps") == 3);

	g = item(doc, "gpu");
	CHECK_KEYS(g, "source", "why");
	assert_string_equal(str(g, "source"), "none");
	snprintf(want, sizeof(want), "no CUPTI shim in pid %d", x->child);
	assert_non_null(strstr(str(g, "why"), want));

	h = item(doc, "health");
	CHECK_KEYS(h, "events", "dropped_events", "depth_overflow", "unwound", "orphan_returns",
		   "py_unreadable_frames", "py_calls_unresolved", "py_code_map_full",
		   "thread_exits_dropped", "lost_calls", "steps_incomplete", "threads",
		   "threads_ended", "threads_held_max", "skew_steps_not_kept", "runs_late_steps",
		   "probes_requested", "probes_attached", "unattached");
	assert_true(num(h, "events") == 12);
	assert_true(num(h, "threads") == 1);
	assert_true(num(h, "probes_requested") == 3);
	assert_true(num(h, "probes_attached") == 2);
	u = item(h, "unattached");
	assert_int_equal(cJSON_GetArraySize(u), 1);
	CHECK_KEYS(cJSON_GetArrayItem(u, 0), "probe", "object", "symbol", "reason");
	assert_false(cJSON_IsTrue(item(item(doc, "overhead"), "calibrated")));
	cJSON_Delete(doc);
}

/* The files: summary.json (the process's document) and report.md, and
 * nothing else; --json: the document on stdout too. */
static void test_write_outputs(void **state)
{
	struct fx *x = *state;
	const char *out = in_tmp(x, "out");
	char names[256], path[PATH_MAX], digits[32], *md, *printed;
	struct runfx_ear c;
	cJSON *doc, *again;

	open_run(x, out, false, true, false);
	assert_int_equal(pt_run__open_output(&x->r), 0);
	attach(x);
	run_steps(x);
	capture_start(&c, STDOUT_FILENO);
	assert_int_equal(pt_run__report(&x->r), 0); /* pt_run__write_outputs */
	printed = capture_end(&c);
	names_in(out, names, sizeof(names));
	assert_string_equal(names, "report.md summary.json");

	snprintf(path, sizeof(path), "%s/summary.json", out);
	doc = json_file(path);
	assert_true(num(item(doc, "meta"), "pid") == x->child);
	assert_true(num(item(doc, "stats"), "steps") == 3);
	assert_true(num(find(item(doc, "buckets"), "name", "eng.fwd"), "calls") == 3);
	assert_string_equal(str(item(doc, "gpu"), "source"), "none");
	/* start_unix_ns exact (past 2^53: written as an integer's digits) */
	md = slurp(path);
	snprintf(digits, sizeof(digits), "%llu", (unsigned long long)x->r.t0_unix);
	assert_non_null(strstr(md, digits));
	free(md);
	/* --json: the same document */
	again = cJSON_Parse(printed);
	free(printed);
	assert_non_null(again);
	assert_true(cJSON_Compare(doc, again, true));
	cJSON_Delete(again);
	cJSON_Delete(doc);

	snprintf(path, sizeof(path), "%s/report.md", out);
	md = slurp(path);
	snprintf(names, sizeof(names), "# proftrace report: test\\_report (pid %d)", x->child);
	assert_int_equal(strncmp(md, names, strlen(names)), 0);
	assert_non_null(strstr(md, "## Steps"));
	assert_non_null(strstr(md, "| eng.fwd | eng | 3 |"));
	assert_non_null(strstr(md, "No GPU stream: no CUPTI shim in pid"));
	free(md);
}

/* -p A,B: one document with each process's section, in the order given. */
static void test_write_two_processes(void **state)
{
	struct fx *x = *state;
	const char *out = in_tmp(x, "out");
	const cJSON *procs;
	char path[PATH_MAX], names[256];
	cJSON *doc;

	open_run(x, out, true, false, false);
	assert_int_equal(pt_run__open_output(&x->r), 0);
	attach(x);
	run_steps(x); /* A's */
	assert_int_equal(pt_run__report(&x->r), 0);
	names_in(out, names, sizeof(names));
	assert_string_equal(names, "report.md summary.json");
	snprintf(path, sizeof(path), "%s/summary.json", out);
	doc = json_file(path);
	assert_true(num(item(doc, "stats"), "steps") == 3);
	assert_int_equal(cJSON_GetArraySize(item(item(doc, "meta"), "pids")), 2);
	procs = item(doc, "processes");
	assert_int_equal(cJSON_GetArraySize(procs), 2);
	assert_true(num(item(cJSON_GetArrayItem(procs, 0), "meta"), "pid") == x->child);
	assert_true(num(item(cJSON_GetArrayItem(procs, 0), "stats"), "steps") == 3);
	assert_true(num(item(cJSON_GetArrayItem(procs, 1), "meta"), "pid") == x->child2);
	assert_true(num(item(cJSON_GetArrayItem(procs, 1), "stats"), "steps") == 0);
	cJSON_Delete(doc);
}

/* -p A,B: each process's document is of the view it is given (each
 * built once, as the reports are: a view's runs are finished with it). */
static void test_view_doc_two(void **state)
{
	struct fx *x = *state;
	cJSON *doc;

	open_run(x, in_tmp(x, "out"), true, false, false);
	assert_int_equal(pt_run__open_output(&x->r), 0);
	attach(x);
	run_steps(x); /* A's */
	for (size_t i = 0; i < 2; i++) {
		struct proc *p = x->r.procs.v[i];

		pt_agg__finish(p->v.agg);
		doc = pt_run__view_doc(&x->r, p, &p->v);
		assert_non_null(doc);
		assert_true(num(item(doc, "meta"), "pid") == p->tracee.pid);
		assert_true(num(item(doc, "stats"), "steps") == (i ? 0 : 3));
		cJSON_Delete(doc);
	}
}

/* The output folder went away before the end: the profile is written to
 * a fallback folder of its own (under $TMPDIR), said; not a success. */
static void test_write_fallback(void **state)
{
	struct fx *x = *state;
	const char *out = in_tmp(x, "out");
	char names[256], fb[256], want[PATH_MAX], *said;
	struct runfx_ear c;

	assert_int_equal(mkdir(in_tmp(x, "fb"), 0700), 0);
	setenv("TMPDIR", in_tmp(x, "fb"), 1);
	open_run(x, out, false, false, false);
	assert_int_equal(pt_run__open_output(&x->r), 0);
	attach(x);
	run_steps(x);
	assert_int_equal(rmdir(out), 0);
	capture_start(&c, STDERR_FILENO);
	assert_int_equal(pt_run__write_outputs(&x->r), -EIO);
	said = capture_end(&c);
	snprintf(want, sizeof(want), "writing the profile to %s/proftrace-%d-", in_tmp(x, "fb"),
		 x->child);
	assert_non_null(strstr(said, want));
	free(said);
	/* fb/proftrace-PID-XXXXXX, holding the files */
	names_in(in_tmp(x, "fb"), fb, sizeof(fb));
	snprintf(want, sizeof(want), "proftrace-%d-", x->child);
	assert_int_equal(strncmp(fb, want, strlen(want)), 0);
	assert_null(strchr(fb, ' '));
	snprintf(want, sizeof(want), "fb/%s", fb);
	names_in(in_tmp(x, want), names, sizeof(names));
	assert_string_equal(names, "report.md summary.json");
}

/* --dry-run: each probe's functions, object, file offset and probe site;
 * a probe of a library not loaded, pending. */
static void test_dry_run(void **state)
{
	struct fx *x = *state;
	const struct pt_func *fn;
	struct proc *p;
	struct runfx_ear c;
	char *text, want[512];

	open_run(x, NULL, false, false, true);
	p = x->r.procs.v[0];
	capture_start(&c, STDOUT_FILENO);
	pt_run__print_dry_run(&x->r);
	text = capture_end(&c);
	assert_true(!strncmp(text, "PROBE ", 6));
	assert_non_null(strstr(text, " FUNCTION "));
	assert_non_null(strstr(text, " OBJECT "));
	assert_non_null(strstr(text, " OFFSET "));
	assert_non_null(strstr(text, " PROBE SITE\n"));
	for (size_t i = 0; i < p->nfs; i++) {
		fn = pt_resolver__func(p->res, i);
		snprintf(want, sizeof(want), "\n%-40s %-10s %-40s 0x%-10llx +%u ",
			 x->r.cfg.probes[fn->spec].text, fn->symbol, fn->object,
			 (unsigned long long)fn->file_off, fn->site.skip);
		assert_non_null(strstr(text, want));
	}
	assert_int_equal(p->nfs, 2);
	assert_non_null(strstr(text, "\nnative:libpt_absent.so:absent_fn         pending: no "
				     "mapped object matches 'libpt_absent.so' yet"));
	assert_null(strstr(text, "pid "));
	free(text);
}

/* --dry-run -p A,B: the list of each, under its pid. */
static void test_dry_run_two(void **state)
{
	struct fx *x = *state;
	struct runfx_ear c;
	char *text, *a, *b, want[64];

	open_run(x, NULL, true, false, true);
	capture_start(&c, STDOUT_FILENO);
	pt_run__print_dry_run(&x->r);
	text = capture_end(&c);
	snprintf(want, sizeof(want), "pid %d (test_report):\nPROBE ", x->child);
	a = strstr(text, want);
	snprintf(want, sizeof(want), "\npid %d (test_report):\nPROBE ", x->child2);
	b = strstr(text, want);
	assert_true(a == text);
	assert_non_null(b);
	assert_non_null(strstr(a, " rep_victim_step "));
	assert_true(strstr(a, " rep_victim_step ") < b);
	assert_non_null(strstr(b, " rep_victim_step "));
	assert_non_null(strstr(b, "pending: no mapped object"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_output_created, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_not_writable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_doc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_doc_two, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_outputs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_two_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_two, setup, teardown),
	};

	return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
