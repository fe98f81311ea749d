// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/calib.c: what a probe hit costs, as the run gets it. PT_CALIBRATE=off
 * gives no figures, and says so. Without a cache, the calibration runs its
 * helper and a child proftrace, both this binary (pt_calib__get's exe),
 * here stand-ins that answer the calibration's protocol with known
 * figures instead of timing probed calls (main() dispatches on their
 * arguments): each native kind's pair is the probed less the unattached
 * time per call, its self part the child's median less the unattached,
 * never more than the pair nor less than 0; a kind the child has no
 * figure for, or whose probed time is not above the unattached, keeps the
 * bench's figure, as do the Python kinds and the sample. The child is
 * asked to probe the three helper functions, the first as the step, on
 * the helper's pid, and the calibration's folder is gone after. The
 * result is cached and read back for as long as the cache is valid: same
 * boot, same proftrace version and kernel, younger than an hour, every
 * kind an array of two, the file no link and its folder root's own and
 * written by no one else; otherwise it is measured again. A Python kind
 * (pt_calib__python) is measured on the interpreter given (a stand-in
 * too) through the frame probe, the unnamed frame's cost with it, and
 * cached per interpreter key; a failed measurement, or the agent's
 * library missing, keeps the bench's figure.
 *
 * The cache lives in /run/proftrace: the test runs in a mount namespace
 * of its own with a fresh tmpfs on /run, so the machine's cache is never
 * read or written; where no namespace can be made the cache tests are
 * skipped. What the figures are on a live uprobe (the helper's loops,
 * the child's probes, the agent's hook) needs BPF and a real helper:
 * tests/integration covers the overhead section of a run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "aggregate/overhead.h"
#include "report/jread.h"
#include "run/calib.h"

#define CACHE_DIR "/run/proftrace"
#define CACHE CACHE_DIR "/calibration.json"
/* made in our own tmpfs on /run: nothing is removed where it is missing */
#define MARK "/run/.pt-test-calib-private"

/* what the stand-ins answer, from the test through the environment */
#define ENV_A "PT_TEST_CALIB_A"		    /* the helper, unattached: ns per call per row */
#define ENV_B "PT_TEST_CALIB_B"		    /* the helper, probed */
#define ENV_PY "PT_TEST_CALIB_PY"	    /* the interpreter: a c b d */
#define ENV_SUMMARY "PT_TEST_CALIB_SUMMARY" /* the child proftrace's summary.json */
#define ENV_SEEN "PT_TEST_CALIB_SEEN"	    /* where the child says what it was asked */

static bool isolated;
static char self[PATH_MAX];

/* ---- the stand-ins ---- */

/* `proftrace __calib-helper`: "ready PID", then per line its letter and
 * ENV_A's figures for "a", ENV_B's for "b". */
static int fake_helper(void)
{
	char line[16];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		const char *v = getenv(line[0] == 'a' ? ENV_A : ENV_B);

		printf("%c %s\n", line[0], v ? v : "");
	}
	return 0;
}

/* `python -S SCRIPT`: "ready PID", then per line its letter and ENV_PY's
 * figure for it (a c b d, in that order). */
static int fake_python(void)
{
	const char *v = getenv(ENV_PY);
	double f[4] = { 0 };
	char line[16];

	if (v)
		sscanf(v, "%lf %lf %lf %lf", &f[0], &f[1], &f[2], &f[3]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		const char *p = strchr("acbd", line[0]);

		printf("%c %.3f\n", line[0], p && *p ? f[p - "acbd"] : 0.0);
	}
	return 0;
}

/* `proftrace -p PID --targets CONF -o OUT -q`: writes OUT/summary.json
 * (ENV_SUMMARY) and, to ENV_SEEN, whether PID is the helper, CONF's path
 * and CONF; says it attached (stderr), exits at EOF on stdin. */
static int fake_proftrace(int argc, char **argv)
{
	const char *pid = NULL, *conf = NULL, *out = NULL, *sum = getenv(ENV_SUMMARY),
		   *seen = getenv(ENV_SEEN);
	char path[PATH_MAX], cmd[256] = "", text[4096] = "";
	FILE *f;
	size_t n;

	for (int i = 1; i + 1 < argc; i++) {
		if (!strcmp(argv[i], "-p"))
			pid = argv[i + 1];
		else if (!strcmp(argv[i], "--targets"))
			conf = argv[i + 1];
		else if (!strcmp(argv[i], "-o"))
			out = argv[i + 1];
	}
	if (!pid || !conf || !out || !sum || mkdir(out, 0755))
		return 2;
	snprintf(path, sizeof(path), "%s/summary.json", out);
	f = fopen(path, "w");
	if (!f || fputs(sum, f) < 0 || fclose(f))
		return 3;
	if (seen) {
		snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
		f = fopen(path, "r");
		if (f) {
			n = fread(cmd, 1, sizeof(cmd) - 1, f);
			cmd[n] = '\0';
			fclose(f);
		}
		f = fopen(conf, "r");
		if (f) {
			n = fread(text, 1, sizeof(text) - 1, f);
			text[n] = '\0';
			fclose(f);
		}
		/* cmdline's arguments are NUL-separated: the second one */
		f = fopen(seen, "w");
		if (!f)
			return 4;
		fprintf(f, "%s\n%s\n%s",
			!strcmp(cmd + strlen(cmd) + 1, "__calib-helper") ? "helper" : "?", conf,
			text);
		fclose(f);
	}
	fprintf(stderr, "proftrace: attached 3 probes to pid %s\n", pid);
	while (fgetc(stdin) != EOF)
		;
	return 0;
}

/* ---- the private /run ---- */

static int map_ids(uid_t uid, gid_t gid)
{
	char buf[64];
	int fd, ok;

	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd >= 0) {
		ok = write(fd, "deny", 4) == 4;
		close(fd);
		if (!ok)
			return -1;
	}
	snprintf(buf, sizeof(buf), "0 %u 1", (unsigned int)uid);
	fd = open("/proc/self/uid_map", O_WRONLY);
	ok = fd >= 0 && write(fd, buf, strlen(buf)) == (ssize_t)strlen(buf);
	if (fd >= 0)
		close(fd);
	snprintf(buf, sizeof(buf), "0 %u 1", (unsigned int)gid);
	fd = open("/proc/self/gid_map", O_WRONLY);
	ok = ok && fd >= 0 && write(fd, buf, strlen(buf)) == (ssize_t)strlen(buf);
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* This process in a mount namespace of its own (a user namespace too
 * when not root), with a fresh tmpfs on /run. Mounts are made private
 * first: nothing done here reaches the machine's. */
static bool isolate(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd;

	if (unshare(CLONE_NEWNS) &&
	    (uid == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNS) || map_ids(uid, gid)))
		return false;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("pt-test-calib", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"))
		return false;
	fd = open(MARK, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The cache folder emptied (ours only: the mark says /run is our tmpfs)
 * and made as the calibration makes it. */
static void fresh_cache_dir(void)
{
	struct dirent *d;
	DIR *dir;

	assert_int_equal(access(MARK, F_OK), 0);
	dir = opendir(CACHE_DIR);
	if (dir) {
		char path[PATH_MAX];

		while ((d = readdir(dir)))
			if (d->d_name[0] != '.') {
				snprintf(path, sizeof(path), CACHE_DIR "/%s", d->d_name);
				assert_int_equal(unlink(path), 0);
			}
		closedir(dir);
		assert_int_equal(rmdir(CACHE_DIR), 0);
	}
	assert_int_equal(mkdir(CACHE_DIR, 0755), 0);
	assert_int_equal(chmod(CACHE_DIR, 0755), 0);
}

static int setup(void **state)
{
	unsetenv("PT_CALIBRATE");
	if (isolated)
		fresh_cache_dir();
	return 0;
}

#define NEED_PRIVATE_RUN()                                                                         \
	do {                                                                                       \
		if (!isolated) {                                                                   \
			print_message("no mount namespace here: the cache is not touched\n");      \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

/* ---- what the cache is keyed on ---- */

static void boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, (int)len, f));
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* proftrace's version and the kernel's */
static void exe_id(char *buf, size_t len)
{
	struct utsname u;

	assert_int_equal(uname(&u), 0);
	snprintf(buf, len, "%s %s", PT_VERSION, u.release);
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* Each kind's figures in a cache: pair 10 (k+1), self 5 (k+1). */
static double cpair(int k)
{
	return 10.0 * (k + 1);
}

static double cself(int k)
{
	return 5.0 * (k + 1);
}

enum spoil { GOOD, OLD_BOOT, OLD_VERSION, STALE, NO_KIND, ONE_NUMBER, NOT_NUMBER };

/* A cache document as the calibration writes it, spoiled one way. */
static char *cache_doc(enum spoil how)
{
	char boot[64], exe[256];
	cJSON *doc = cJSON_CreateObject();
	char *s;

	boot_id(boot, sizeof(boot));
	exe_id(exe, sizeof(exe));
	cJSON_AddStringToObject(doc, "boot_id", how == OLD_BOOT ? "another-boot" : boot);
	cJSON_AddStringToObject(doc, "proftrace", how == OLD_VERSION ? "0.0.0-old 1.2.3" : exe);
	cJSON_AddNumberToObject(doc, "time", (double)time(NULL) - (how == STALE ? 3700 : 10));
	for (int k = 0; k < PT_SITE_NKINDS; k++) {
		/* pair, self, measured: sstep kept the bench's figure */
		double v[3] = { cpair(k), cself(k), k != PT_SITE_SSTEP };
		cJSON *a;

		if (how == NO_KIND && k == PT_SITE_SSTEP)
			continue;
		a = cJSON_CreateDoubleArray(v, how == ONE_NUMBER && k == PT_SITE_NOP5 ? 1 : 3);
		if (how == NOT_NUMBER && k == PT_SITE_NOP5)
			cJSON_ReplaceItemInArray(a, 1, cJSON_CreateString("5"));
		cJSON_AddItemToObject(doc, pt_site_kind__str(k), a);
	}
	s = cJSON_Print(doc);
	cJSON_Delete(doc);
	assert_non_null(s);
	return s;
}

static void put_cache(const char *path, enum spoil how)
{
	char *s = cache_doc(how);

	put_file(path, s);
	free(s);
}

/* The bench's figures (calib.c's table), kept where nothing was measured. */
static const double bench_pair[PT_SITE_NKINDS] = { 2000, 1000, 8000, 700, 1300, 1800, 650 };
static const double bench_self[PT_SITE_NKINDS] = { 1000, 500, 4000, 350, 650, 0, 0 };

static void assert_kind(const struct pt_calib *c, int k, double pair, double self_ns, bool measured)
{
	if (c->pair_ns[k] < pair - 1e-6 || c->pair_ns[k] > pair + 1e-6 ||
	    c->self_ns[k] < self_ns - 1e-6 || c->self_ns[k] > self_ns + 1e-6 ||
	    c->measured[k] != measured)
		fail_msg("%s: pair %g self %g%s, want %g %g%s", pt_site_kind__str(k), c->pair_ns[k],
			 c->self_ns[k], c->measured[k] ? " measured" : "", pair, self_ns,
			 measured ? " measured" : "");
}

static void assert_bench(const struct pt_calib *c, int k)
{
	assert_kind(c, k, bench_pair[k], bench_self[k], false);
}

/* ---- tests ---- */

/* PT_CALIBRATE=off: no figures, and why; nothing is measured, no
 * Python kind either. */
static void test_off(void **state)
{
	struct pt_calib c;

	setenv("PT_CALIBRATE", "off", 1);
	pt_calib__get(&c, "/bin/false");
	assert_false(c.ok);
	assert_false(c.cached);
	assert_string_equal(c.why, "PT_CALIBRATE=off");
	for (int k = 0; k < PT_SITE_NKINDS; k++)
		assert_kind(&c, k, 0, 0, false);
	pt_calib__python(&c, self, "k", PT_SITE_FRAME);
	assert_kind(&c, PT_SITE_FRAME, 0, 0, false);
}

/* What the calibration asked its child proftrace, through the stand-in:
 * the helper's pid, and a targets file on the helper's three functions
 * at their first instruction; its folder removed after. */
static void check_seen(const char *seen)
{
	static const char conf[] = "set prologue_skip off\n"
				   "step native:exe:pt_cal_push\n"
				   "bucket cal.nop5 native:exe:pt_cal_nop5\n"
				   "bucket cal.sstep native:exe:pt_cal_sstep\n";
	char text[4096], dir[PATH_MAX], *nl, *slash;
	FILE *f = fopen(seen, "r");
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_memory_equal(text, "helper\n", 7);
	nl = strchr(text + 7, '\n');
	assert_non_null(nl);
	assert_string_equal(nl + 1, conf);
	snprintf(dir, sizeof(dir), "%.*s", (int)(nl - text - 7), text + 7);
	slash = strrchr(dir, '/');
	assert_non_null(slash);
	*slash = '\0';
	assert_non_null(strstr(dir, "/tmp/proftrace-calib-"));
	assert_int_equal(access(dir, F_OK), -1); /* removed */
	unlink(seen);
}

/*
 * No cache: measured by the helper and the child (stand-ins), then
 * cached, and read back from the cache the next time with the same
 * figures. Unattached ns per call: push 100, nop5 50, sstep 300.
 */
static void test_measured_then_cached(void **state)
{
	char seen[] = "/tmp/pt-test-calib-seen-XXXXXX";
	struct pt_calib c, again;
	int fd = mkstemp(seen);

	NEED_PRIVATE_RUN();
	assert_true(fd >= 0);
	close(fd);
	setenv(ENV_SEEN, seen, 1);
	setenv(ENV_A, "100 50 300 0 0 0 0", 1);
	/* probed: push +2000, nop5 +600, sstep +4000; the child has push's
	 * median (1100: self 1000) and nop5's (2000: above the probed time,
	 * self no more than the pair), none of sstep */
	setenv(ENV_B, "2100 650 4300 0 0 0 0", 1);
	setenv(ENV_SUMMARY,
	       "{\"functions\": [{\"symbol\": \"pt_cal_push\", \"p50_ms\": 0.0011},"
	       " {\"symbol\": \"pt_cal_nop5\", \"p50_ms\": 0.002}]}",
	       1);
	pt_calib__get(&c, self);
	if (!c.ok)
		fail_msg("not calibrated: %s", c.why);
	assert_false(c.cached);
	assert_true(c.took_s > 0);
	assert_kind(&c, PT_SITE_EMULATED, 2000, 1000, true);
	assert_kind(&c, PT_SITE_NOP5, 600, 600, true);
	/* missing from the child's summary: the bench's */
	assert_bench(&c, PT_SITE_SSTEP);
	/* not measured here at all */
	assert_bench(&c, PT_SITE_AGENT);
	assert_bench(&c, PT_SITE_FRAME);
	assert_bench(&c, PT_SITE_SAMPLE);
	assert_bench(&c, PT_SITE_FRAME_UNNAMED);
	check_seen(seen);

	/* cached: the same figures, nothing run (a helper that fails would
	 * leave it uncalibrated) */
	pt_calib__get(&again, "/bin/false");
	assert_true(again.ok);
	assert_true(again.cached);
	assert_true(again.took_s == 0);
	for (int k = 0; k < PT_SITE_NKINDS; k++) {
		assert_true(again.pair_ns[k] == c.pair_ns[k]);
		assert_true(again.self_ns[k] == c.self_ns[k]);
		assert_true(again.measured[k] == c.measured[k]);
	}
	/* sstep kept the bench's figure: read back, still the bench's */
	assert_false(again.measured[PT_SITE_SSTEP]);
	assert_false(again.measured[PT_SITE_AGENT]);
	assert_false(again.measured[PT_SITE_FRAME]);

	/* PT_CALIBRATE=fresh: measured again. Now the child's push median
	 * is below the unattached time (self 0), nop5's probed time is not
	 * above it (the bench's), and sstep has its median (2300: self
	 * 2000) */
	setenv("PT_CALIBRATE", "fresh", 1);
	setenv(ENV_B, "2100 40 4300 0 0 0 0", 1);
	setenv(ENV_SUMMARY,
	       "{\"functions\": [{\"symbol\": \"pt_cal_push\", \"p50_ms\": 0.00005},"
	       " {\"symbol\": \"pt_cal_nop5\", \"p50_ms\": 0.001},"
	       " {\"symbol\": \"pt_cal_sstep\", \"p50_ms\": 0.0023}]}",
	       1);
	pt_calib__get(&c, self);
	assert_true(c.ok);
	assert_false(c.cached);
	assert_kind(&c, PT_SITE_EMULATED, 2000, 0, true);
	assert_bench(&c, PT_SITE_NOP5);
	assert_kind(&c, PT_SITE_SSTEP, 4000, 2000, true);
	check_seen(seen);
	unsetenv(ENV_SEEN);
}

/* A helper that does not start: no figures, and why. */
static void test_helper_fails(void **state)
{
	struct pt_calib c;

	NEED_PRIVATE_RUN();
	pt_calib__get(&c, "/bin/false");
	assert_false(c.ok);
	assert_string_equal(c.why, "the helper did not start");
	assert_int_equal(access(CACHE, F_OK), -1); /* nothing cached */
}

/* A valid cache is read as it is; each way of spoiling it has it
 * measured again (here: a helper that fails, so not calibrated). */
static void test_cache_validity(void **state)
{
	static const struct {
		enum spoil how;
		const char *what;
	} bad[] = {
		{ OLD_BOOT, "another boot" },	     { OLD_VERSION, "another proftrace or kernel" },
		{ STALE, "older than an hour" },     { NO_KIND, "a kind missing" },
		{ ONE_NUMBER, "a kind not a pair" }, { NOT_NUMBER, "a figure not a number" },
	};
	struct pt_calib c;

	NEED_PRIVATE_RUN();
	put_cache(CACHE, GOOD);
	pt_calib__get(&c, "/bin/false");
	assert_true(c.ok);
	assert_true(c.cached);
	for (int k = 0; k < PT_SITE_NKINDS; k++)
		assert_kind(&c, k, cpair(k), cself(k), k == PT_SITE_EMULATED || k == PT_SITE_NOP5);
	/* PT_CALIBRATE=fresh passes over it */
	setenv("PT_CALIBRATE", "fresh", 1);
	pt_calib__get(&c, "/bin/false");
	assert_false(c.ok);
	unsetenv("PT_CALIBRATE");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put_cache(CACHE, bad[i].how);
		pt_calib__get(&c, "/bin/false");
		if (c.ok || c.cached)
			fail_msg("a cache with %s was used", bad[i].what);
	}
	/* not JSON */
	put_file(CACHE, "{\"boot_id\": ");
	pt_calib__get(&c, "/bin/false");
	assert_false(c.ok);
	/* a link, even to a good one */
	put_cache(CACHE_DIR "/elsewhere.json", GOOD);
	assert_int_equal(unlink(CACHE), 0);
	assert_int_equal(symlink(CACHE_DIR "/elsewhere.json", CACHE), 0);
	pt_calib__get(&c, "/bin/false");
	assert_false(c.ok);
	assert_int_equal(unlink(CACHE), 0);
	/* a good one in a folder others may write in */
	put_cache(CACHE, GOOD);
	assert_int_equal(chmod(CACHE_DIR, 0775), 0);
	pt_calib__get(&c, "/bin/false");
	assert_false(c.ok);
	assert_int_equal(chmod(CACHE_DIR, 0755), 0);
	pt_calib__get(&c, "/bin/false");
	assert_true(c.cached);
}

/* The name of the one cache file of kind's in the folder (its key's
 * hash after the kind), into buf. */
static void python_cache_file(const char *kind, char *buf, size_t len)
{
	char prefix[64];
	struct dirent *d;
	DIR *dir = opendir(CACHE_DIR);
	int n = 0;

	assert_non_null(dir);
	snprintf(prefix, sizeof(prefix), "calibration-%s-", kind);
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, prefix, strlen(prefix)) && n++ == 0)
			snprintf(buf, len, CACHE_DIR "/%s", d->d_name);
	closedir(dir);
	assert_int_equal(n, 1);
}

/* A calibration from a good cache (its Python kinds not measured);
 * this binary the child proftrace of any measurement. */
static void calibrated(struct pt_calib *c)
{
	put_cache(CACHE, GOOD);
	pt_calib__get(c, self);
	assert_true(c->cached);
}

/*
 * The frame probe's cost on an interpreter (a stand-in): the named call's
 * pair and self part, the unnamed frame's pair (no self part), cached
 * per key and read back; measured again when fresh is asked or the
 * cache is of another boot. Unattached: named 100, other 80 ns; probed:
 * 1400 and 700; the child's median of the named one 900.
 */
static void test_python_frame(void **state)
{
	char path[PATH_MAX];
	struct pt_calib c;
	cJSON *doc;

	NEED_PRIVATE_RUN();
	calibrated(&c);
	setenv(ENV_PY, "100 80 1400 700", 1);
	setenv(ENV_SUMMARY, "{\"functions\": [{\"symbol\": \"pt_cal_named\", \"p50_ms\": 0.0009}]}",
	       1);
	pt_calib__python(&c, self, "key-one", PT_SITE_FRAME);
	assert_kind(&c, PT_SITE_FRAME, 1300, 800, true);
	assert_kind(&c, PT_SITE_FRAME_UNNAMED, 620, 0, true);
	/* the agent's figure is another kind's: untouched */
	assert_kind(&c, PT_SITE_AGENT, cpair(PT_SITE_AGENT), cself(PT_SITE_AGENT), false);
	python_cache_file("frame-probe", path, sizeof(path));
	doc = pt_jread__file(path);
	assert_non_null(doc);
	assert_string_equal(cJSON_GetObjectItem(doc, "python")->valuestring, "key-one");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "frame-probe")), 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "frame-probe-unnamed")), 2);
	cJSON_Delete(doc);

	/* the same key again: from the cache, whatever the interpreter
	 * would answer now */
	setenv(ENV_PY, "100 80 5100 2100", 1);
	pt_calib__get(&c, self);
	assert_kind(&c, PT_SITE_FRAME, cpair(PT_SITE_FRAME), cself(PT_SITE_FRAME), false);
	pt_calib__python(&c, self, "key-one", PT_SITE_FRAME);
	assert_kind(&c, PT_SITE_FRAME, 1300, 800, true);
	assert_kind(&c, PT_SITE_FRAME_UNNAMED, 620, 0, true);

	/* fresh: measured again, and cached */
	setenv("PT_CALIBRATE", "fresh", 1);
	pt_calib__python(&c, self, "key-one", PT_SITE_FRAME);
	unsetenv("PT_CALIBRATE");
	assert_kind(&c, PT_SITE_FRAME, 5000, 800, true);
	assert_kind(&c, PT_SITE_FRAME_UNNAMED, 2020, 0, true);

	/* a cache of another boot: measured again */
	doc = pt_jread__file(path);
	assert_non_null(doc);
	cJSON_ReplaceItemInObject(doc, "key", cJSON_CreateString("another-boot"));
	{
		char *s = cJSON_Print(doc);

		put_file(path, s);
		free(s);
	}
	cJSON_Delete(doc);
	setenv(ENV_PY, "100 80 700 300", 1);
	pt_calib__python(&c, self, "key-one", PT_SITE_FRAME);
	assert_kind(&c, PT_SITE_FRAME, 600, 600, true);
	assert_kind(&c, PT_SITE_FRAME_UNNAMED, 220, 0, true);

	/* another key: its own file */
	pt_calib__python(&c, self, "key-two", PT_SITE_FRAME);
	{
		struct dirent *d;
		DIR *dir = opendir(CACHE_DIR);
		int n = 0;

		assert_non_null(dir);
		while ((d = readdir(dir)))
			n += !strncmp(d->d_name, "calibration-frame-probe-", 24);
		closedir(dir);
		assert_int_equal(n, 2);
	}
}

/*
 * What keeps the bench's figure for a Python kind: an interpreter that
 * does not answer (nothing cached), the agent's library not found; a
 * kind that is not a Python one, or no calibration, is left alone. The
 * agent's figure from its cache (keyed as the frame probe's) is used.
 */
static void test_python_fallbacks(void **state)
{
	char frame[PATH_MAX], agent[PATH_MAX];
	struct pt_calib c, before;
	char boot[64], exe[256], text[1024];
	char *dash;

	NEED_PRIVATE_RUN();
	calibrated(&c);
	pt_calib__python(&c, "/bin/false", NULL, PT_SITE_FRAME);
	assert_kind(&c, PT_SITE_FRAME, cpair(PT_SITE_FRAME), cself(PT_SITE_FRAME), false);
	assert_kind(&c, PT_SITE_FRAME_UNNAMED, cpair(PT_SITE_FRAME_UNNAMED),
		    cself(PT_SITE_FRAME_UNNAMED), false);
	/* no agent library where the agent is looked for */
	setenv("PROFTRACE_LIBDIR", "/nonexistent-pt-test-calib", 1);
	pt_calib__python(&c, self, "key-one", PT_SITE_AGENT);
	assert_kind(&c, PT_SITE_AGENT, cpair(PT_SITE_AGENT), cself(PT_SITE_AGENT), false);
	memcpy(&before, &c, sizeof(c));
	pt_calib__python(&c, self, "key-one", PT_SITE_NOP5);
	pt_calib__python(&c, self, "key-one", PT_SITE_SAMPLE);
	assert_memory_equal(&c, &before, sizeof(c));

	/* the agent's cost cached for key-one: the file the frame probe's
	 * would have, kind aside */
	setenv(ENV_PY, "100 80 1400 700", 1);
	setenv(ENV_SUMMARY, "{\"functions\": [{\"symbol\": \"pt_cal_named\", \"p50_ms\": 0.0009}]}",
	       1);
	pt_calib__get(&c, self);
	pt_calib__python(&c, self, "key-one", PT_SITE_FRAME);
	python_cache_file("frame-probe", frame, sizeof(frame));
	dash = strrchr(frame, '-');
	assert_non_null(dash);
	snprintf(agent, sizeof(agent), CACHE_DIR "/calibration-python-agent%s", dash);
	boot_id(boot, sizeof(boot));
	exe_id(exe, sizeof(exe));
	snprintf(text, sizeof(text),
		 "{\"key\": \"%s\", \"proftrace\": \"%s\", \"python\": \"key-one\", \"time\": %ld, "
		 "\"python-agent\": [444, 222]}",
		 boot, exe, (long)time(NULL));
	put_file(agent, text);
	pt_calib__python(&c, self, "key-one", PT_SITE_AGENT);
	assert_kind(&c, PT_SITE_AGENT, 444, 222, true);
	unsetenv("PROFTRACE_LIBDIR");

	/* not calibrated: nothing is measured, nothing read */
	setenv("PT_CALIBRATE", "off", 1);
	pt_calib__get(&c, self);
	memcpy(&before, &c, sizeof(c));
	pt_calib__python(&c, self, "key-one", PT_SITE_AGENT);
	assert_memory_equal(&c, &before, sizeof(c));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_off, setup),
		cmocka_unit_test_setup(test_measured_then_cached, setup),
		cmocka_unit_test_setup(test_helper_fails, setup),
		cmocka_unit_test_setup(test_cache_validity, setup),
		cmocka_unit_test_setup(test_python_frame, setup),
		cmocka_unit_test_setup(test_python_fallbacks, setup),
	};
	ssize_t n;

	/* the calibration's children: this binary, standing in */
	if (argc >= 2 && !strcmp(argv[1], "__calib-helper"))
		return fake_helper();
	if (argc >= 2 && !strcmp(argv[1], "-S"))
		return fake_python();
	if (argc >= 2 && !strcmp(argv[1], "-p"))
		return fake_proftrace(argc, argv);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	isolated = isolate();
	return cmocka_run_group_tests_name("calib", tests, NULL, NULL);
}
