/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a run is asked to do: the command line's options, as the run reads
 * them (cli/ fills this in from argv).
 */
#ifndef PT_RUN_ENV_H
#define PT_RUN_ENV_H

#include <limits.h>
#include <stdbool.h>

enum { PT_GPU_AUTO = 0, PT_GPU_ON, PT_GPU_OFF };

/* One output file instead of the folder (-o x.svg, --format): which. */
enum pt_format {
	PT_FORMAT_NONE = 0, /* the output folder, every file */
	PT_FORMAT_FLAME,    /* flame.svg (py-spy's flamegraph) */
	PT_FORMAT_FOLDED,   /* stacks.folded (py-spy's raw) */
	PT_FORMAT_PPROF,    /* profile.pb.gz */
};

#define PT_CLI_MAX_PIDS 256

struct pt_env {
	int pid;		   /* pids[0] */
	int pids[PT_CLI_MAX_PIDS]; /* -p PID[,PID...], in the order given */
	int npids;
	bool children;	     /* --children: and every descendant, now and later */
	const char *targets; /* NULL: none, sample every thread ("just look") */
	double duration_s;   /* 0: until the target exits or a signal */
	const char *output;  /* NULL: proftrace_out/<comm>-<pid>-<time>/ */
	bool json;
	int verbose;
	bool dry_run;
	bool quiet;	   /* no live status line */
	bool list_targets; /* --list-targets: print the bundled configs, exit */
	int gpu;	   /* --gpu: PT_GPU_AUTO (default), PT_GPU_ON, PT_GPU_OFF */
	bool trace;	   /* --trace: write trace.json */
	bool inject;	   /* --inject: load the Python agent with ptrace when it is missing */
	unsigned int inject_wait_ms; /* --inject-wait: for a safe point; 0: the default */
	bool inject_epoll;	     /* --inject-epoll: a thread in epoll_wait may be borrowed */
	unsigned long trace_max; /* --trace-max-events (implies --trace); 0: PT_TRACE_DEFAULT_MAX */
	char targets_path[PATH_MAX]; /* --targets NAME resolved to a bundled file */
	const char *metrics;	     /* --metrics HOST:PORT: Prometheus text while attached */
	double interval_s;	     /* --interval SEC: a window summary every SEC; 0: none */
	unsigned int rate_hz;	     /* --rate HZ: samples per second; 0: the targets file's */
	int native; /* --native 1, --no-native -1: over set native_frames; 0: the file's */
	/* --max-probes N: functions one native: probe may take; 0: 1000 */
	unsigned long max_probes;
	/* -o x.svg or --format: output is that one file (output: its path;
	 * NULL with a format: the default folder holds only it) */
	enum pt_format format;
	/* -i/--idle: that one flame graph is wall time (flame-wall.svg's
	 * view, off-CPU stacks under [off-cpu]), not on-CPU time */
	bool idle;
};

#endif
