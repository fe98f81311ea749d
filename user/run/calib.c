// SPDX-License-Identifier: BSD-2-Clause
/*
 * The calibration (calib.h): a helper process of this binary and a child
 * proftrace that probes it, table-driven by site kind.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "calib.h"
#include "report/jread.h"
#include "util/helpers.h"
#include "util/log.h"
#include "util/util.h"

/*
 * The functions probed, one per native site kind, in assembly so their
 * first instruction is exactly the kind's (a compiler may start a function
 * with anything). Global, so the child finds them in .symtab.
 */
__asm__(".text\n"
	".globl pt_cal_push\n.type pt_cal_push,@function\n"
	"pt_cal_push:\n\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n"
	".size pt_cal_push,.-pt_cal_push\n"
	".globl pt_cal_nop5\n.type pt_cal_nop5,@function\n"
	"pt_cal_nop5:\n\t.byte 0x0f,0x1f,0x44,0x00,0x00\n\tret\n"
	".size pt_cal_nop5,.-pt_cal_nop5\n"
	".globl pt_cal_sstep\n.type pt_cal_sstep,@function\n"
	"pt_cal_sstep:\n\tsub $8,%rsp\n\tadd $8,%rsp\n\tret\n"
	".size pt_cal_sstep,.-pt_cal_sstep\n");
void pt_cal_push(void);
void pt_cal_nop5(void);
void pt_cal_sstep(void);

#define CACHE_DIR "/run/proftrace"
#define CACHE_FILE CACHE_DIR "/calibration.json"
#define CACHE_MAX_AGE_S 3600
/* Calls are timed in short chunks and the fastest chunk kept: on a
 * loaded machine most long loops are preempted, a chunk of ~0.2 ms
 * rarely is. */
#define CHUNKS 100

/* One row per site kind: how it is measured (a helper function and how
 * many calls per round, cheap enough for ~50 ms), or the figure `make
 * bench` measured on this machine kind when it cannot be. */
static const struct site_row {
	enum pt_site_kind kind;
	const char *fn; /* NULL: not measured here */
	void (*call)(void);
	long calls; /* per chunk */
	double def_pair_ns, def_self_ns;
} site_rows[] = {
	{ PT_SITE_EMULATED, "pt_cal_push", pt_cal_push, 20, 2000, 1000 },
	{ PT_SITE_NOP5, "pt_cal_nop5", pt_cal_nop5, 20, 1000, 500 },
	{ PT_SITE_SSTEP, "pt_cal_sstep", pt_cal_sstep, 10, 8000, 4000 },
	/* measured on the target's interpreter (pt_calib__python); else
	 * the bench agent section's ~0.7 us per named call on 3.12 */
	{ PT_SITE_AGENT, NULL, NULL, 0, 700, 350 },
	/* shared/notes/cpython.md: uprobe pair on _PyEval_EvalFrameDefault */
	{ PT_SITE_FRAME, NULL, NULL, 0, 1300, 650 },
	/* README: the BPF walker, ~1.8 us for a 6-frame Python stack */
	{ PT_SITE_SAMPLE, NULL, NULL, 0, 1800, 0 },
	/* measured with PT_SITE_FRAME; else half its pair: the entry hit */
	{ PT_SITE_FRAME_UNNAMED, NULL, NULL, 0, 650, 0 },
};
#define NROWS (sizeof(site_rows) / sizeof(site_rows[0]))

/* ---- the helper ---- */

/*
 * Each call follows GAP_NS of work, as calls do in a program (a probe hit
 * right after another costs several times more here: the kernel's and
 * the CPU's state of the last one is still busy); the gap is timed by the
 * clock, so a slow call does not shorten it, and is taken out again.
 */
#define GAP_NS 5000

static double loop_ns(void (*f)(void), long n)
{
	void (*volatile call)(void) = f;
	uint64_t t0 = pt_now_ns(CLOCK_MONOTONIC), gap = 0;

	for (long i = 0; i < n; i++) {
		uint64_t g0 = pt_now_ns(CLOCK_MONOTONIC), g1;

		while ((g1 = pt_now_ns(CLOCK_MONOTONIC)) - g0 < GAP_NS)
			;
		gap += g1 - g0;
		call();
	}
	return (double)(pt_now_ns(CLOCK_MONOTONIC) - t0 - gap) / (double)n;
}

/* "ready PID"; then per line read ("a", "b"): one line of ns per call,
 * the fastest of CHUNKS chunks per function; exits at EOF. */
int pt_calib__helper_main(void)
{
	char line[16];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		double best[NROWS];

		for (size_t i = 0; i < NROWS; i++)
			best[i] = 1e18;
		for (int k = 0; k < CHUNKS; k++)
			for (size_t i = 0; i < NROWS; i++) {
				double v;

				if (!site_rows[i].call)
					continue;
				v = loop_ns(site_rows[i].call, site_rows[i].calls);
				if (v < best[i])
					best[i] = v;
			}
		printf("%c", line[0]);
		for (size_t i = 0; i < NROWS; i++)
			printf(" %.3f", site_rows[i].call ? best[i] : 0.0);
		printf("\n");
	}
	return 0;
}

/* ---- the cache ---- */

static void boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

static const char *self_exe = "/proc/self/exe";

/* What the cost depends on: the kernel (and the machine: boot_id) and the
 * BPF programs (proftrace's version), not the build of the rest. */
static void exe_id(char *buf, size_t len)
{
	struct utsname u;

	if (uname(&u))
		snprintf(buf, len, "%s", PT_VERSION);
	else
		snprintf(buf, len, "%s %s", PT_VERSION, u.release);
}

/* The cache folder, only when it is root's own and nobody else may write
 * in it: we run as root, a planted folder or link must not steer where
 * we write or what we believe. */
static bool cache_dir_ok(void)
{
	struct stat st;

	mkdir(CACHE_DIR, 0755);
	return !lstat(CACHE_DIR, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 022);
}

/* a cache file's JSON (never through a link), or NULL */
static cJSON *cache_get(const char *path)
{
	char *text;
	ssize_t n;
	cJSON *doc;
	int fd;

	if (!cache_dir_ok())
		return NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	text = malloc(16384);
	n = text ? read(fd, text, 16383) : -1;
	close(fd);
	if (n < 0) {
		free(text);
		return NULL;
	}
	text[n] = '\0';
	doc = cJSON_Parse(text);
	free(text);
	return doc;
}

/* write doc whole (a new file renamed over the old one) */
static void cache_put(const char *path, const cJSON *doc)
{
	char tmp[192], *s;
	bool ok;
	int fd;

	if (!cache_dir_ok())
		return;
	s = cJSON_Print(doc);
	if (!s)
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0) {
		ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
		ok = !close(fd) && ok;
		if (!ok || rename(tmp, path))
			unlink(tmp);
	}
	free(s);
}

static bool cache_read(struct pt_calib *c)
{
	char boot[64], exe[128];
	const cJSON *doc = cache_get(CACHE_FILE), *k;
	bool ok = false;

	if (!doc)
		return false;
	boot_id(boot, sizeof(boot));
	exe_id(exe, sizeof(exe));
	if (!doc || !cJSON_IsString(cJSON_GetObjectItem(doc, "boot_id")) ||
	    strcmp(cJSON_GetObjectItem(doc, "boot_id")->valuestring, boot) ||
	    !cJSON_IsString(cJSON_GetObjectItem(doc, "proftrace")) ||
	    strcmp(cJSON_GetObjectItem(doc, "proftrace")->valuestring, exe) ||
	    !cJSON_IsNumber(cJSON_GetObjectItem(doc, "time")) ||
	    (double)time(NULL) - cJSON_GetObjectItem(doc, "time")->valuedouble > CACHE_MAX_AGE_S)
		goto out;
	for (size_t i = 0; i < NROWS; i++) {
		enum pt_site_kind kd = site_rows[i].kind;

		/* [pair, self, measured]: a kind the calibration left at the
		 * bench's figure says so, and stays "bench" in the reports */
		k = cJSON_GetObjectItem(doc, pt_site_kind__str(kd));
		if (!cJSON_IsArray(k) || cJSON_GetArraySize(k) != 3 ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(k, 0)) ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(k, 1)) ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(k, 2)))
			goto out;
		c->pair_ns[kd] = cJSON_GetArrayItem(k, 0)->valuedouble;
		c->self_ns[kd] = cJSON_GetArrayItem(k, 1)->valuedouble;
		c->measured[kd] =
			site_rows[i].fn != NULL && cJSON_GetArrayItem(k, 2)->valuedouble != 0;
	}
	ok = true;
out:
	cJSON_Delete((cJSON *)doc);
	return ok;
}

static void cache_write(const struct pt_calib *c)
{
	char boot[64], exe[128];
	cJSON *doc = cJSON_CreateObject();

	if (!doc)
		return;
	boot_id(boot, sizeof(boot));
	exe_id(exe, sizeof(exe));
	cJSON_AddStringToObject(doc, "boot_id", boot);
	cJSON_AddStringToObject(doc, "proftrace", exe);
	cJSON_AddNumberToObject(doc, "time", (double)time(NULL));
	for (size_t i = 0; i < NROWS; i++) {
		enum pt_site_kind kd = site_rows[i].kind;
		double v[3] = { c->pair_ns[kd], c->self_ns[kd], c->measured[kd] ? 1 : 0 };

		cJSON_AddItemToObject(doc, pt_site_kind__str(kd), cJSON_CreateDoubleArray(v, 3));
	}
	cache_put(CACHE_FILE, doc);
	cJSON_Delete(doc);
}

/* ---- the measurement ---- */

struct child {
	pid_t pid;
	int in, out; /* its stdin (write), its stdout or stderr (read) */
	char buf[4096];
	size_t n;
};

static int spawn_exe(struct child *ch, const char *exe, char *const argv[], bool read_stderr,
		     bool calib_off, const char *preload)
{
	int in[2], out[2];

	if (pipe2(in, O_CLOEXEC))
		return -errno;
	if (pipe2(out, O_CLOEXEC)) {
		close(in[0]);
		close(in[1]);
		return -errno;
	}
	ch->pid = fork();
	if (ch->pid < 0)
		return -errno;
	if (!ch->pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		dup2(out[1], read_stderr ? 2 : 1);
		if (null >= 0)
			dup2(null, read_stderr ? 1 : 2);
		if (calib_off)
			setenv("PT_CALIBRATE", "off", 1);
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		unsetenv("PYTHONPERFSUPPORT");
		execv(exe, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	ch->in = in[1];
	ch->out = out[0];
	ch->n = 0;
	return 0;
}

/* The next line starting with prefix, into line; false at EOF or after
 * timeout_ms. */
static int spawn(struct child *ch, char *const argv[], bool read_stderr, bool calib_off)
{
	return spawn_exe(ch, self_exe, argv, read_stderr, calib_off, NULL);
}

static bool read_line(struct child *ch, const char *prefix, char *line, size_t len, int timeout_ms)
{
	uint64_t end = pt_now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000;

	for (;;) {
		char *nl = memchr(ch->buf, '\n', ch->n);
		struct pollfd pfd = { .fd = ch->out, .events = POLLIN };
		uint64_t now;
		ssize_t r;

		if (nl) {
			size_t l = (size_t)(nl - ch->buf);
			bool hit = !strncmp(ch->buf, prefix, strlen(prefix));

			if (hit)
				snprintf(line, len, "%.*s", (int)l, ch->buf);
			memmove(ch->buf, nl + 1, ch->n - l - 1);
			ch->n -= l + 1;
			if (hit)
				return true;
			continue;
		}
		if (ch->n == sizeof(ch->buf))
			ch->n = 0; /* a line longer than we care for */
		now = pt_now_ns(CLOCK_MONOTONIC);
		if (now >= end || poll(&pfd, 1, (int)((end - now) / 1000000) + 1) <= 0)
			return false;
		r = read(ch->out, ch->buf + ch->n, sizeof(ch->buf) - ch->n);
		if (r <= 0)
			return false;
		ch->n += (size_t)r;
	}
}

static void reap(struct child *ch, bool kill_it)
{
	if (ch->pid <= 0)
		return;
	if (ch->in >= 0)
		close(ch->in);
	if (kill_it)
		kill(ch->pid, SIGKILL);
	/* its stderr stays open until it exits: a closed pipe would kill
	 * it (SIGPIPE) before it writes its summary */
	waitpid(ch->pid, NULL, 0);
	if (ch->out >= 0)
		close(ch->out);
	ch->pid = 0;
	ch->in = ch->out = -1;
}

static bool parse_ns(const char *line, double *v)
{
	const char *p = line + 1;

	for (size_t i = 0; i < NROWS; i++) {
		char *end;

		v[i] = strtod(p, &end);
		if (end == p)
			return false;
		p = end;
	}
	return true;
}

/* A kind's cost from the helper's ns per call unattached (a) and probed
 * (b), and the child's own mean per call (m): the pair is what a probed
 * call costs, its self part what falls inside the call's interval. */
static void set_cost(struct pt_calib *c, enum pt_site_kind k, double a, double b, double m)
{
	c->pair_ns[k] = b - a;
	c->self_ns[k] = m > a ? (m - a < b - a ? m - a : b - a) : 0;
	c->measured[k] = true;
}

/* What a measurement left in its mkdtemp folder: the child's output folder
 * (summary.json, report.md), the targets file, the script. */
static void remove_calib_dir(const char *dir)
{
	static const char *const files[] = { "out/summary.json", "out/report.md", "out",
					     "calib.conf", "ptcal_agent.py" };
	char path[160];

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (unlink(path)) /* the folder: emptied first */
			rmdir(path);
	}
	rmdir(dir);
}

/* p50_ms of fn in the child's summary, in ns; -1 when absent */
static double child_mean_ns(const cJSON *doc, const char *fn)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "functions"))
	{
		/* the median: robust to the calls a busy machine preempted */
		const cJSON *s = cJSON_GetObjectItem(f, "symbol"),
			    *m = cJSON_GetObjectItem(f, "p50_ms");

		if (cJSON_IsString(s) && !strcmp(s->valuestring, fn) && cJSON_IsNumber(m))
			return m->valuedouble * 1e6;
	}
	return -1;
}

static int measure(struct pt_calib *c)
{
	char dir[] = "/tmp/proftrace-calib-XXXXXX", conf[128], out[128], sum[160], line[512],
	     pidbuf[16];
	struct child helper = { .in = -1, .out = -1 }, pt = { .in = -1, .out = -1 };
	double a[NROWS], b[NROWS];
	cJSON *doc = NULL;
	FILE *f;
	int e = -EIO;

	if (!mkdtemp(dir)) {
		snprintf(c->why, sizeof(c->why), "cannot make a folder in /tmp: %s",
			 strerror(errno));
		return -errno;
	}
	snprintf(conf, sizeof(conf), "%s/calib.conf", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(sum, sizeof(sum), "%s/summary.json", out);
	f = fopen(conf, "w");
	if (!f)
		goto out;
	/* the probes stay on the first instruction: one kind each */
	fprintf(f, "set prologue_skip off\n");
	for (size_t i = 0, first = 1; i < NROWS; i++) {
		if (!site_rows[i].fn)
			continue;
		if (first)
			fprintf(f, "step native:exe:%s\n", site_rows[i].fn);
		else
			fprintf(f, "bucket cal.%s native:exe:%s\n", site_rows[i].fn + 7,
				site_rows[i].fn);
		first = 0;
	}
	if (fclose(f))
		goto out;

	{
		char *argv[] = { "proftrace", "__calib-helper", NULL };

		e = spawn(&helper, argv, false, true);
	}
	if (e || !read_line(&helper, "ready ", line, sizeof(line), 5000)) {
		snprintf(c->why, sizeof(c->why), "the helper did not start");
		e = e ? e : -EIO;
		goto out;
	}
	snprintf(pidbuf, sizeof(pidbuf), "%.15s", line + 6);
	if (write(helper.in, "a\n", 2) != 2 ||
	    !read_line(&helper, "a ", line, sizeof(line), 20000) || !parse_ns(line, a)) {
		snprintf(c->why, sizeof(c->why), "the helper did not answer");
		goto out;
	}
	{
		char *argv[] = {
			"proftrace", "-p", pidbuf, "--targets", conf, "-o", out, "-q", NULL
		};

		e = spawn(&pt, argv, true, true);
	}
	if (e || !read_line(&pt, "proftrace: attached", line, sizeof(line), 20000)) {
		snprintf(c->why, sizeof(c->why), "the child proftrace did not attach");
		e = e ? e : -EIO;
		goto out;
	}
	e = -EIO;
	if (write(helper.in, "b\n", 2) != 2 ||
	    !read_line(&helper, "b ", line, sizeof(line), 60000) || !parse_ns(line, b)) {
		snprintf(c->why, sizeof(c->why), "the helper did not answer while probed");
		goto out;
	}
	reap(&helper, false); /* EOF: it exits, and the child proftrace reports */
	reap(&pt, false);
	doc = pt_jread__file(sum);
	if (!doc) {
		snprintf(c->why, sizeof(c->why), "the child proftrace wrote no summary");
		goto out;
	}
	for (size_t i = 0; i < NROWS; i++) {
		enum pt_site_kind k = site_rows[i].kind;
		double m;

		c->pair_ns[k] = site_rows[i].def_pair_ns;
		c->self_ns[k] = site_rows[i].def_self_ns;
		if (!site_rows[i].fn)
			continue;
		m = child_mean_ns(doc, site_rows[i].fn);
		if (m < 0 || b[i] <= a[i])
			continue; /* keep the default, not measured */
		set_cost(c, k, a[i], b[i], m);
	}
	e = 0;
out:
	reap(&helper, true);
	reap(&pt, true);
	cJSON_Delete(doc);
	remove_calib_dir(dir);
	return e;
}

/*
 * The Python agent's named call, on the target's own interpreter (the
 * cost differs by version: sys.monitoring on 3.12+, a frame evaluator
 * before): a script of ours run by that interpreter with the agent
 * preloaded times calls of an empty function, unattached, then while a
 * child proftrace times them through the agent (py: probe). The frame
 * probe's cost on a frame no probe names (it traps on every call) is the
 * same measurement on a second, unnamed function: lines 'a'/'b' time the
 * named one, 'c'/'d' the other.
 */
/* clang-format off */
static const char agent_script[] =
	"import os, sys, time\n"
	"now = time.perf_counter_ns\n"
	"def pt_cal_named():\n"
	"    pass\n"
	"def pt_cal_other():\n"
	"    pass\n"
	"def loop(n, f):\n"
	"    best = 1e18\n"
	"    for k in range(100):\n"
	"        gap = 0\n"
	"        t0 = now()\n"
	"        for i in range(n):\n"
	"            g0 = g1 = now()\n"
	"            while g1 - g0 < 5000:\n"
	"                g1 = now()\n"
	"            gap += g1 - g0\n"
	"            f()\n"
	"        best = min(best, (now() - t0 - gap) / n)\n"
	"    return best\n"
	"print('ready', os.getpid(), flush=True)\n"
	"for line in sys.stdin:\n"
	"    f = pt_cal_named if line[0] in 'ab' else pt_cal_other\n"
	"    print(line[0], '%.3f' % loop(20, f), flush=True)\n";
/* clang-format on */

/*
 * This VM's vCPUs run at two speeds, changing every few tens of ms: the
 * same process ran a step in 78 us or in 138 us. One measurement of the
 * probed calls against one of the unprobed ones could hold a speed change
 * and make a named call cost double or nothing. So each is taken ROUNDS
 * times (alternately where there are two) and the least of each is kept:
 * the fast speed, where both were seen at it.
 */
#define ROUNDS 5

/* The least of n of the helper's lines for each of the letters in keys
 * (alternately: "bd" is b, d, b, d...), into v. false: a line missing. */
static bool least_of(struct child *ch, const char *keys, int n, double *v)
{
	size_t k = strlen(keys);
	char line[512], cmd[3] = { 0, '\n', 0 }, want[3] = { 0, ' ', 0 };

	for (size_t j = 0; j < k; j++)
		v[j] = 1e300;
	for (int r = 0; r < n; r++)
		for (size_t j = 0; j < k; j++) {
			double x;

			cmd[0] = want[0] = keys[j];
			if (write(ch->in, cmd, 2) != 2 ||
			    !read_line(ch, want, line, sizeof(line), 60000))
				return false;
			x = strtod(line + 2, NULL);
			if (x < v[j])
				v[j] = x;
		}
	return true;
}

/* One Python site kind measured on interpreter python: the agent's named
 * call (the agent preloaded) or the frame probe's (python_mode evalframe;
 * it fails where the frame probe cannot see a Python-to-Python call,
 * stock 3.11+, and the bench's figure then stays). */
static int measure_python(struct pt_calib *c, const char *python, enum pt_site_kind kind)
{
	char dir[] = "/tmp/proftrace-calib-XXXXXX", conf[128], out[128], sum[160], script[128],
	     line[512], pidbuf[16], agent[4096];
	struct child helper = { .in = -1, .out = -1 }, pt = { .in = -1, .out = -1 };
	double a = -1, b = -1, m = -1, ua = -1, ub = -1;
	bool frame = kind == PT_SITE_FRAME;
	cJSON *doc = NULL;
	FILE *f;
	int e = -EIO;
	bool bad;

	if (kind == PT_SITE_AGENT && pt_helper__path(PT_AGENT_LIB, agent, sizeof(agent)))
		return -ENOENT;
	if (!mkdtemp(dir))
		return -errno;
	snprintf(conf, sizeof(conf), "%s/calib.conf", dir);
	snprintf(script, sizeof(script), "%s/ptcal_agent.py", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(sum, sizeof(sum), "%s/summary.json", out);
	f = fopen(conf, "w");
	if (!f)
		goto out;
	bad = fprintf(f,
		      "set python_mode %s\nset sample_hz 0\n"
		      "step py:ptcal_agent::pt_cal_named\n",
		      kind == PT_SITE_AGENT ? "agent" : "evalframe") < 0;
	if (fclose(f) || bad)
		goto out;
	f = fopen(script, "w");
	if (!f || fputs(agent_script, f) < 0 || fclose(f))
		goto out;
	{
		char *argv[] = { (char *)python, "-S", script, NULL };

		/* -S: no site packages to import, a quick start */
		e = spawn_exe(&helper, python, argv, false, true,
			      kind == PT_SITE_AGENT ? agent : NULL);
	}
	if (e || !read_line(&helper, "ready ", line, sizeof(line), 10000)) {
		e = e ? e : -EIO;
		goto out;
	}
	e = -EIO;
	snprintf(pidbuf, sizeof(pidbuf), "%.15s", line + 6);
	/* the baselines, before anything is attached: on 3.8-3.11 the
	 * agent's frame evaluator sees every call once it is on, named or
	 * not, as the frame probe traps on every call */
	{
		double v[2] = { -1, -1 }; /* -1: not measured (no frame probe) */

		if (!least_of(&helper, frame ? "ac" : "a", ROUNDS, v))
			goto out;
		a = v[0];
		ua = v[1];
	}
	{
		char *argv[] = {
			"proftrace", "-p", pidbuf, "--targets", conf, "-o", out, "-q", NULL
		};

		e = spawn(&pt, argv, true, true);
	}
	if (e || !read_line(&pt, "proftrace: attached", line, sizeof(line), 30000)) {
		e = e ? e : -EIO;
		goto out;
	}
	e = -EIO;
	{
		double v[2] = { -1, -1 };

		if (!least_of(&helper, frame ? "bd" : "b", ROUNDS, v))
			goto out;
		b = v[0];
		ub = v[1];
	}
	reap(&helper, false);
	reap(&pt, false);
	doc = pt_jread__file(sum);
	if (doc)
		m = child_mean_ns(doc, "pt_cal_named");
	if (m < 0 || b <= a)
		goto out;
	set_cost(c, kind, a, b, m);
	if (frame && ub > ua) {
		/* all of it outside any interval: no self share */
		set_cost(c, PT_SITE_FRAME_UNNAMED, ua, ub, 0);
	}
	e = 0;
out:
	reap(&helper, true);
	reap(&pt, true);
	cJSON_Delete(doc);
	remove_calib_dir(dir);
	return e;
}

/* kind's figures from a cache document, when it has them */
static void cache_kind(struct pt_calib *c, const cJSON *doc, enum pt_site_kind kind)
{
	const cJSON *v = cJSON_GetObjectItem(doc, pt_site_kind__str(kind));

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 ||
	    !cJSON_IsNumber(cJSON_GetArrayItem(v, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(v, 1)))
		return;
	c->pair_ns[kind] = cJSON_GetArrayItem(v, 0)->valuedouble;
	c->self_ns[kind] = cJSON_GetArrayItem(v, 1)->valuedouble;
	c->measured[kind] = true;
}

/* a Python kind's figures cached per interpreter:
 * calibration-<kind>-<hash>.json */
static void python_cache_path(const char *python, enum pt_site_kind kind, char *buf, size_t len)
{
	uint64_t h = pt_fnv1a(python);

	snprintf(buf, len, CACHE_DIR "/calibration-%s-%016llx.json", pt_site_kind__str(kind),
		 (unsigned long long)h);
}

void pt_calib__python(struct pt_calib *c, const char *python, const char *key,
		      enum pt_site_kind kind)
{
	const char *env = getenv("PT_CALIBRATE"), *name = pt_site_kind__str(kind);
	char path[160], boot[64], exe[128];
	cJSON *doc;

	if (!c->ok || !python || (kind != PT_SITE_AGENT && kind != PT_SITE_FRAME))
		return;
	python_cache_path(key ? key : python, kind, path, sizeof(path));
	boot_id(boot, sizeof(boot));
	exe_id(exe, sizeof(exe));
	doc = (env && !strcmp(env, "fresh")) ? NULL : cache_get(path);
	if (doc) {
		const cJSON *v = cJSON_GetObjectItem(doc, name);

		if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2 &&
		    cJSON_IsString(cJSON_GetObjectItem(doc, "key")) &&
		    !strcmp(cJSON_GetObjectItem(doc, "key")->valuestring, boot) &&
		    cJSON_IsString(cJSON_GetObjectItem(doc, "proftrace")) &&
		    !strcmp(cJSON_GetObjectItem(doc, "proftrace")->valuestring, exe) &&
		    cJSON_IsNumber(cJSON_GetObjectItem(doc, "time")) &&
		    (double)time(NULL) - cJSON_GetObjectItem(doc, "time")->valuedouble <
			    CACHE_MAX_AGE_S) {
			c->pair_ns[kind] = cJSON_GetArrayItem(v, 0)->valuedouble;
			c->self_ns[kind] = cJSON_GetArrayItem(v, 1)->valuedouble;
			c->measured[kind] = true;
			cache_kind(c, doc, PT_SITE_FRAME_UNNAMED);
			cJSON_Delete(doc);
			return;
		}
		cJSON_Delete(doc);
	}
	if (measure_python(c, python, kind)) {
		pt_vlog("proftrace: calibrating the %s on %s failed: the bench's figure is used\n",
			kind == PT_SITE_AGENT ? "Python agent" : "frame probe", python);
		return;
	}
	doc = cJSON_CreateObject();
	if (!doc)
		return;
	{
		double v[2] = { c->pair_ns[kind], c->self_ns[kind] };

		cJSON_AddStringToObject(doc, "key", boot);
		cJSON_AddStringToObject(doc, "proftrace", exe);
		cJSON_AddStringToObject(doc, "python", key ? key : python);
		cJSON_AddNumberToObject(doc, "time", (double)time(NULL));
		cJSON_AddItemToObject(doc, name, cJSON_CreateDoubleArray(v, 2));
		if (c->measured[PT_SITE_FRAME_UNNAMED] && kind == PT_SITE_FRAME) {
			v[0] = c->pair_ns[PT_SITE_FRAME_UNNAMED];
			v[1] = c->self_ns[PT_SITE_FRAME_UNNAMED];
			cJSON_AddItemToObject(doc, pt_site_kind__str(PT_SITE_FRAME_UNNAMED),
					      cJSON_CreateDoubleArray(v, 2));
		}
	}
	cache_put(path, doc);
	cJSON_Delete(doc);
}

void pt_calib__get(struct pt_calib *c, const char *exe)
{
	const char *env = getenv("PT_CALIBRATE");
	uint64_t t0 = pt_now_ns(CLOCK_MONOTONIC);

	memset(c, 0, sizeof(*c));
	if (exe)
		self_exe = exe;
	if (env && !strcmp(env, "off")) {
		snprintf(c->why, sizeof(c->why), "PT_CALIBRATE=off");
		return;
	}
	if (!(env && !strcmp(env, "fresh")) && cache_read(c)) {
		c->ok = c->cached = true;
		return;
	}
	if (measure(c)) {
		pt_vlog("proftrace: calibration failed: %s\n", c->why);
		return;
	}
	c->ok = true;
	c->took_s = (double)(pt_now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
	cache_write(c);
}
