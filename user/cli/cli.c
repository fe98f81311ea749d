// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config/targets_list.h"
#include "util/util.h"

static const char usage[] =
	"Usage: proftrace -p PID[,PID...] [--children] [--targets FILE|NAME] [-d SEC] [-o "
	"DIR|FILE]\n"
	"                 [--rate HZ] [--native] [--format FMT] [--json] [-v] [-q]\n"
	"                 [--gpu auto|on|off] [--trace [--trace-max-events N]] [--dry-run]\n"
	"                 [--max-probes N]\n"
	"                 [--inject [--inject-wait MS] [--inject-epoll]]\n"
	"                 [--metrics HOST:PORT] [--interval SEC]\n"
	"       proftrace --list-targets | --version\n"
	"       proftrace env\n"
	"       proftrace import-regions [--kernel NAME] REGIONS... OUTDIR\n"
	"       proftrace diff A B [--json] [--fail-if 'METRIC OP CHANGE']...\n"
	"       proftrace merge [NAME=]SUMMARY... [-o FILE]\n"
	"\n"
	"Attach to a running process and time the functions named in FILE exactly,\n"
	"grouped into steps and buckets. Writes summary.json and report.md. Without\n"
	"--targets it samples every Python thread (\"just look\", as py-spy record\n"
	"does): flame.svg (on-CPU time), flame-wall.svg (wall time, off-CPU under\n"
	"[off-cpu]), stacks.folded, profile.pb.gz, lines.txt, and report.md with the\n"
	"top functions and lines.\n"
	"\n"
	"  -p, --pid PID[,PID...]\n"
	"                       processes to attach to (-p may be repeated); with\n"
	"                       several, summary.json has a section per process\n"
	"                       (processes[]) and the top level merges them\n"
	"      --children       also every descendant of those processes, including\n"
	"                       ones started after attach (the workers of a server)\n"
	"  -s, --subprocesses   the same as --children (py-spy's name)\n"
	"  -t, --targets FILE   targets.conf (see docs/targets.md), or the NAME of a\n"
	"                       bundled one (vllm, sglang, trtllm, nccl, cuda, ...;\n"
	"                       see --list-targets) when no file FILE exists; without\n"
	"                       it, stacks are sampled only\n"
	"  -d, --duration SEC   stop after SEC seconds (default: at SIGINT/SIGTERM or\n"
	"                       when the process exits)\n"
	"  -o, --output DIR     output directory (default:\n"
	"                       proftrace_out/<comm>-<pid>-<YYYYmmdd-HHMMSS>/); a FILE\n"
	"                       ending in .svg, .folded or .pb.gz (or any name with\n"
	"                       --format) is that one output alone\n"
	"  -r, --rate HZ        stack samples per second per thread, 1-10000 (default\n"
	"                       1000, or the targets file's set sample_hz)\n"
	"  -n, --native         stack samples show native frames too (C extensions,\n"
	"                       libtorch, BLAS, libc: unwound with their .eh_frame)\n"
	"                       under the Python frames that run them: the default,\n"
	"                       over a targets file's set native_frames off\n"
	"      --no-native      Python frames only (set native_frames off)\n"
	"  -f, --format FMT     write one file (-o FILE): flamegraph (flame.svg), raw\n"
	"                       (stacks.folded, folded stacks) or pprof (profile.pb.gz)\n"
	"  -i, --idle           -o FILE.svg draws wall time, idle (off-CPU) stacks too,\n"
	"                       as flame-wall.svg does (default: on-CPU, as flame.svg)\n"
	"      --json           also print summary.json to stdout\n"
	"  -v, --verbose        say more (twice: libbpf's messages too)\n"
	"  -q, --quiet          no live status line (it is only shown when stderr is a\n"
	"                       terminal)\n"
	"      --gpu MODE       GPU kernels, copies and idle time from the CUPTI shim\n"
	"                       (the server started with CUDA_INJECTION64_PATH=\n"
	"                       .../libproftrace_cupti.so): auto (default: when the\n"
	"                       process has it), on (an error when it has not), off\n"
	"      --trace          also write trace.json: every probed call, step, CUDA call\n"
	"                       and GPU kernel on a timeline, for ui.perfetto.dev or\n"
	"                       chrome://tracing\n"
	"      --trace-max-events N\n"
	"                       keep at most N events in trace.json (default 1000000;\n"
	"                       later ones are counted and left out, and it says so)\n"
	"      --max-probes N   let one native: probe take up to N functions (default\n"
	"                       1000; a wider glob is refused, saying what it takes)\n"
	"      --metrics HOST:PORT\n"
	"                       serve Prometheus metrics (text format) on HOST:PORT\n"
	"                       while attached: steps, step time histogram, bucket time,\n"
	"                       tok/s, drops, probe cost, by process, rank and host\n"
	"      --interval SEC   also write a window summary every SEC seconds into\n"
	"                       window-NNNN.json in the output folder (the last 100\n"
	"                       are kept)\n"
	"      --dry-run        resolve every probe and print it, attach nothing\n"
	"      --inject         a Python process started without the agent gets it now:\n"
	"                       one of its threads, at a safe point (a libc wait), is\n"
	"                       borrowed with ptrace for a few ms to dlopen() it; it\n"
	"                       stays loaded, dormant, after proftrace exits\n"
	"      --inject-wait MS look for that safe point up to MS ms (default 2000)\n"
	"      --inject-epoll   a thread in epoll_wait is one too (it sees EINTR, which\n"
	"                       asyncio, libuv and most event loops retry)\n"
	"      --list-targets   list the bundled targets files, one per line (name and\n"
	"                       what it is for), and exit; they are looked up in\n"
	"                       $PROFTRACE_TARGETS_DIR, else targets/ next to the\n"
	"                       binary, else ../share/proftrace/targets\n"
	"      --version        print proftrace's version and exit\n"
	"  -h, --help           this text\n"
	"\n"
	"  py-spy's flags: -p/--pid, -d/--duration, -o/--output, -r/--rate, -f/--format,\n"
	"  -s/--subprocesses, -i/--idle, -n/--native work; --nonblocking is what\n"
	"  proftrace does anyway (the process is never stopped); the others say what\n"
	"  to use instead. `proftrace record ...` is `proftrace ...`.\n"
	"\n"
	"  env                  (alone) print the environment to start a server with, so\n"
	"                       its Python functions are timed exactly and its GPU seen:\n"
	"                       eval \"$(proftrace env)\"; python -m my_server\n"
	"  import-regions       put a device-side profiler's regions inside kernels on the\n"
	"                       timeline of a run taken with --trace (see\n"
	"                       proftrace import-regions --help)\n"
	"\n"
	"Examples:\n"
	"  sudo proftrace -p $(pgrep -f my_server) -d 10\n"
	"  sudo proftrace -p $(pgrep -f my_server) -d 10 -o profile.svg\n"
	"  sudo proftrace -p $(pgrep -f my_server) --targets targets/demo.conf -d 10\n"
	"  sudo proftrace -p 1234 --targets t.conf --dry-run\n"
	"  sudo proftrace -p $(pgrep -f 'vllm serve') --children --targets vllm -d 30\n"
	"  sudo proftrace -p $(pgrep -f 'sglang::scheduler') --targets sglang -d 30\n"
	"\n"
	"Exit codes: 0 ok; 2 bad usage, bad config, unresolvable probe, no such process,\n"
	"missing privileges; 1 any other failure.\n";

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "proftrace: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see proftrace --help)\n");
	return -EINVAL;
}

/* -p 1234 or -p 1234,1240: each a positive id, at most PT_CLI_MAX_PIDS */
static int parse_pids(struct pt_env *env, const char *arg)
{
	char *end;
	long v;

	for (const char *q = arg;; q = end + 1) {
		errno = 0;
		v = strtol(q, &end, 10);
		if (errno || end == q || (*end && *end != ',') || v <= 0 || v > 0x3fffffff)
			return bad("bad PID list '%s': give numeric ids of running processes, e.g. "
				   "-p 1234 or -p 1234,1240",
				   arg);
		if (env->npids == PT_CLI_MAX_PIDS)
			return bad("too many processes in '%s' (at most 256)", arg);
		env->pids[env->npids++] = (int)v;
		if (!*end)
			break;
	}
	env->pid = env->pids[0];
	return 0;
}

static int parse_duration(struct pt_env *env, const char *arg)
{
	char *end;

	errno = 0;
	env->duration_s = strtod(arg, &end);
	if (errno || *end || !(env->duration_s > 0) || !isfinite(env->duration_s))
		return bad("bad duration '%s': give seconds > 0, e.g. -d 10", arg);
	return 0;
}

static int parse_trace_max(struct pt_env *env, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || v <= 0 || v > 1000000000)
		return bad("bad --trace-max-events '%s': give a number of events from 1 to "
			   "1000000000, e.g. 1000000",
			   arg);
	env->trace_max = (unsigned long)v;
	env->trace = true; /* asking for a bound asks for the trace */
	return 0;
}

/* --inject-wait MS (implies --inject) */
static int parse_inject_wait(struct pt_env *env, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || v <= 0 || v > 600000)
		return bad("bad --inject-wait '%s': give milliseconds from 1 to 600000, e.g. 2000",
			   arg);
	env->inject_wait_ms = (unsigned int)v;
	env->inject = true;
	return 0;
}

static int parse_metrics(struct pt_env *env, const char *arg)
{
	if (!strchr(arg, ':'))
		return bad("bad --metrics '%s': give HOST:PORT to serve Prometheus metrics on, "
			   "e.g. --metrics 0.0.0.0:9464",
			   arg);
	env->metrics = arg;
	return 0;
}

static int parse_interval(struct pt_env *env, const char *arg)
{
	char *end;

	errno = 0;
	env->interval_s = strtod(arg, &end);
	if (errno || *end || !(env->interval_s >= 1) || !isfinite(env->interval_s))
		return bad("bad --interval '%s': give seconds >= 1, e.g. --interval 60", arg);
	return 0;
}

static int parse_gpu(struct pt_env *env, const char *arg)
{
	if (!strcmp(arg, "auto"))
		env->gpu = PT_GPU_AUTO;
	else if (!strcmp(arg, "on"))
		env->gpu = PT_GPU_ON;
	else if (!strcmp(arg, "off"))
		env->gpu = PT_GPU_OFF;
	else
		return bad("bad --gpu '%s': auto (use the CUPTI shim when the process has it), on "
			   "or off",
			   arg);
	return 0;
}

/* --max-probes N: the most functions one native: probe may take */
static int parse_max_probes(struct pt_env *env, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || v < 1 || v > 1000000)
		return bad("bad --max-probes '%s': give a number of functions from 1 to 1000000, "
			   "e.g. --max-probes 5000",
			   arg);
	env->max_probes = (unsigned long)v;
	return 0;
}

/* --rate HZ (py-spy's): samples per second, per thread */
static int parse_rate(struct pt_env *env, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || v < 1 || v > 10000)
		return bad("bad --rate '%s': give samples per second from 1 to 10000, e.g. "
			   "--rate 100",
			   arg);
	env->rate_hz = (unsigned int)v;
	return 0;
}

/* --format FMT: py-spy's names, and pprof */
static int parse_format(struct pt_env *env, const char *arg)
{
	if (!strcmp(arg, "flamegraph") || !strcmp(arg, "svg"))
		env->format = PT_FORMAT_FLAME;
	else if (!strcmp(arg, "raw") || !strcmp(arg, "folded"))
		env->format = PT_FORMAT_FOLDED;
	else if (!strcmp(arg, "pprof"))
		env->format = PT_FORMAT_PPROF;
	else if (!strcmp(arg, "speedscope"))
		return bad("%s", "--format speedscope: speedscope opens folded stacks: use "
				 "--format raw (stacks.folded)");
	else if (!strcmp(arg, "chrometrace"))
		return bad("%s", "--format chrometrace: --trace writes trace.json, a Chrome trace "
				 "of every probed call (name them with --targets)");
	else
		return bad("bad --format '%s': flamegraph (flame.svg), raw (stacks.folded) or "
			   "pprof (profile.pb.gz)",
			   arg);
	return 0;
}

/* -o x.svg: one output, by its name's ending; else a folder. */
static enum pt_format format_of(const char *path)
{
	static const struct {
		const char *ext;
		enum pt_format f;
	} exts[] = {
		{ ".svg", PT_FORMAT_FLAME },
		{ ".folded", PT_FORMAT_FOLDED },
		{ ".pb.gz", PT_FORMAT_PPROF },
	};
	size_t n = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(exts); i++) {
		size_t k = strlen(exts[i].ext);

		if (n > k && !strcmp(path + n - k, exts[i].ext) && path[n - k - 1] != '/')
			return exts[i].f;
	}
	return PT_FORMAT_NONE;
}

/* -o out.txt, out.json: a file py-spy (or speedscope) users would expect,
 * which would be made a folder of that name here. */
static bool other_file(const char *path)
{
	static const char *const exts[] = { ".txt", ".json", ".html", ".png", ".speedscope" };
	size_t n = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(exts); i++) {
		size_t k = strlen(exts[i]);

		if (n > k && !strcmp(path + n - k, exts[i]) && path[n - k - 1] != '/')
			return true;
	}
	return false;
}

/*
 * py-spy's flags and commands that proftrace has no use for, with what
 * to do instead: a py-spy user's habit gets a one-line answer, not a
 * bare "unknown option".
 */
static const struct {
	const char *arg;
	const char *hint;
} pyspy_hints[] = {
	{ "--gil", "py-spy's --gil: proftrace samples every thread on and off the CPU; time "
		   "waiting for the GIL is off-CPU time (the [off-cpu] frames of flame.svg)" },
	{ "-g", "py-spy's -g (--gil): proftrace samples every thread on and off the CPU; time "
		"waiting for the GIL is off-CPU time (the [off-cpu] frames of flame.svg)" },
	{ "--threads", "py-spy's --threads: each thread is a root of flame.svg and "
		       "stacks.folded already (its name and id)" },
	{ "--function", "py-spy's --function: report.md's top functions are summed by "
			"function; flame.svg keeps each frame's line" },
	{ "-F", "py-spy's -F (--function): report.md's top functions are summed by function; "
		"flame.svg keeps each frame's line" },
	{ "--nolineno", "py-spy's --nolineno: report.md's top functions are summed by "
			"function; flame.svg keeps each frame's line" },
	{ "--full-filenames", "py-spy's --full-filenames: summary.json's top and lines give "
			      "each function's full file name (co_filename)" },
	{ "top", "py-spy's top: proftrace has no live view; run for a while (-d SEC) and read "
		 "report.md's top functions and lines" },
	{ "dump", "py-spy's dump: proftrace has no stack dump; -d 1 samples every thread for a "
		  "second (stacks.folded holds every stack)" },
};

static int pyspy_hint(const char *arg)
{
	size_t n = strcspn(arg, "=");

	for (size_t i = 0; i < ARRAY_SIZE(pyspy_hints); i++)
		if (strlen(pyspy_hints[i].arg) == n && !strncmp(pyspy_hints[i].arg, arg, n))
			return bad("%s", pyspy_hints[i].hint);
	return 0;
}

/* What the options say together: a process, once each, and a targets
 * file (a bundled one by name) or none (sampling only). */
static int check_env(struct pt_env *env)
{
	if (env->list_targets)
		return 0;
	if (!env->pid)
		return bad("%s", "no process given: use -p PID");
	for (int i = 0; i < env->npids; i++)
		for (int k = 0; k < i; k++)
			if (env->pids[i] == env->pids[k]) {
				char buf[16];

				snprintf(buf, sizeof(buf), "%d", env->pids[i]);
				return bad("process %s is given twice", buf);
			}
	/* -o x.svg: that one file; --format names it whatever -o says */
	if (env->output && !env->format)
		env->format = format_of(env->output);
	if (env->output && !env->format && other_file(env->output))
		return bad("-o '%s' names a kind of file proftrace does not write: one file is "
			   ".svg (flame graph), .folded (folded stacks) or .pb.gz (pprof), or any "
			   "name with --format raw|flamegraph|pprof; a folder gets every output",
			   env->output);
	if (env->output && env->format) {
		size_t n = strlen(env->output);

		if (!n || env->output[n - 1] == '/')
			return bad(
				"-o '%s' is a folder, but --format writes one file: give its name, "
				"e.g. -o profile.svg",
				env->output);
	}
	/* no targets file: sample every thread, nothing is probed */
	if (!env->targets)
		return 0;
	/* --targets vllm: a bundled file, when no file of that name exists */
	if (pt_targets__resolve(env->targets, env->targets_path, sizeof(env->targets_path)) > 0)
		env->targets = env->targets_path;
	return 0;
}

int pt_cli__parse(struct pt_env *env, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "children", no_argument, NULL, 'C' },
		{ "targets", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "list-targets", no_argument, NULL, 'L' },
		{ "gpu", required_argument, NULL, 'G' },
		{ "trace", no_argument, NULL, 'T' },
		{ "trace-max-events", required_argument, NULL, 'M' },
		{ "max-probes", required_argument, NULL, 'X' },
		{ "inject", no_argument, NULL, 'I' },
		{ "inject-wait", required_argument, NULL, 'W' },
		{ "inject-epoll", no_argument, NULL, 'E' },
		{ "metrics", required_argument, NULL, 'P' },
		{ "interval", required_argument, NULL, 'N' },
		{ "rate", required_argument, NULL, 'r' },
		{ "native", no_argument, NULL, 'x' },
		{ "no-native", no_argument, NULL, 'y' },
		{ "format", required_argument, NULL, 'f' },
		{ "subprocesses", no_argument, NULL, 'C' },
		{ "idle", no_argument, NULL, 'i' },
		{ "nonblocking", no_argument, NULL, 'B' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, e = 0;

	memset(env, 0, sizeof(*env));
	opterr = 0;
	optind = 1;
	/* `proftrace record -p PID` as py-spy is typed; its other commands
	 * get a hint */
	if (argc >= 2 && !strcmp(argv[1], "record")) {
		argc--;
		argv++;
	} else if (argc >= 2 && pyspy_hint(argv[1])) {
		return -EINVAL;
	}
	while (!e && (c = getopt_long(argc, argv, ":p:t:d:o:r:f:sivqhn", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			e = parse_pids(env, optarg);
			break;
		case 'C':
		case 's': /* py-spy's -s, --subprocesses */
			env->children = true;
			break;
		case 't':
			env->targets = optarg;
			break;
		case 'd':
			e = parse_duration(env, optarg);
			break;
		case 'o':
			env->output = optarg;
			break;
		case 'j':
			env->json = true;
			break;
		case 'v':
			env->verbose++;
			break;
		case 'n': /* py-spy's -n */
		case 'x':
			env->native = 1;
			break;
		case 'y':
			env->native = -1;
			break;
		case 'D':
			env->dry_run = true;
			break;
		case 'T':
			env->trace = true;
			break;
		case 'M':
			e = parse_trace_max(env, optarg);
			break;
		case 'I':
			env->inject = true;
			break;
		case 'W':
			e = parse_inject_wait(env, optarg);
			break;
		case 'E':
			env->inject_epoll = true;
			env->inject = true;
			break;
		case 'G':
			e = parse_gpu(env, optarg);
			break;
		case 'q':
			env->quiet = true;
			break;
		case 'P':
			e = parse_metrics(env, optarg);
			break;
		case 'N':
			e = parse_interval(env, optarg);
			break;
		case 'L':
			env->list_targets = true;
			break;
		case 'r':
			e = parse_rate(env, optarg);
			break;
		case 'X':
			e = parse_max_probes(env, optarg);
			break;
		case 'f':
			e = parse_format(env, optarg);
			break;
		case 'i': /* py-spy's --idle: -o x.svg draws the wall-time view */
			env->idle = true;
			break;
		case 'B': /* py-spy's --nonblocking: the process is never stopped */
			break;
		case 'V':
			printf("proftrace %s\n", PT_VERSION);
			return 1;
		case 'h':
			fputs(usage, stdout);
			return 1;
		case ':':
			return bad("option '%s' needs a value", argv[optind - 1]);
		default: {
			/* a short option inside a group ("-qn") is optopt */
			char sh[3] = { '-', (char)optopt, 0 };
			const char *arg = optopt ? sh : argv[optind - 1];

			if (pyspy_hint(arg))
				return -EINVAL;
			return bad("unknown option '%s'", arg);
		}
		}
	}
	if (e)
		return e;
	if (optind < argc) {
		/* py-spy record -- python app.py: a command to start */
		if (optind > 1 && !strcmp(argv[optind - 1], "--"))
			return bad(
				"'-- %s': proftrace attaches to a running process: start it (after "
				"eval \"$(proftrace env)\" for exact Python timing), then "
				"proftrace -p PID",
				argv[optind]);
		return bad("unexpected argument '%s'", argv[optind]);
	}
	return check_env(env);
}
