// SPDX-License-Identifier: BSD-2-Clause
/*
 * The victim of the fault matrix (tests/integration/test_faults.py): one
 * program that does, on cue, what a live server may do while it is
 * profiled, and counts every call of its probed functions itself.
 *
 *   victim_faults MODE [ARG...] [--truth FILE]
 *   loop SECONDS        steps (fault_step -> fault_work) for SECONDS
 *   threads N           N short threads, 64 at a time, each one step
 *   forks N             N children, each one step, then _exit; the parent
 *                       steps once per child
 *   workers N MS K      N children in batches of K, each stepping for MS ms
 *                       (long enough for --children to trace it), then
 *                       _exit
 *   rate N SECONDS      fault_tiny N times a second (paced each ms)
 *   threadrate N SECONDS  N short threads a second, each one step
 *   exec                10 steps, then exec itself as "loop 0.3"
 *   dlcycle LIB N       N times: dlopen LIB, 5 calls of dl_work, dlclose
 *   dlnow LIB N         dlopen LIB and call dl_work at once, N times in
 *                       all (the first within microseconds of dlopen)
 *   dlsys LIB SYM N     the same with a system library dlopen()ed by its
 *                       name (the dynamic linker finds it) and its SYM
 *   flood SECONDS       fault_tiny as fast as one thread can call it
 *   crash               10 steps, then SIGSEGV
 *
 * Protocol: prints "ready PID", waits for a line on stdin, runs, writes the
 * truth ({"calls": {function: n}}) and exits 0.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "victim.h"

static uint64_t n_step, n_work, n_tiny, n_dl;

VT_FN void fault_work(void)
{
	vt_spin(20000);
	__atomic_fetch_add(&n_work, 1, __ATOMIC_RELAXED);
}

VT_FN void fault_step(void)
{
	fault_work();
	__atomic_fetch_add(&n_step, 1, __ATOMIC_RELAXED);
}

VT_FN void fault_tiny(void)
{
	VT_BARRIER();
}

static void *thread_main(void *arg)
{
	fault_step();
	return NULL;
}

static void write_truth(const char *path, const char *mode)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "w");
	if (!f)
		exit(1);
	fprintf(f,
		"{\"pid\": %d, \"mode\": \"%s\", \"calls\": {\"fault_step\": %llu, "
		"\"fault_work\": %llu, \"fault_tiny\": %llu, \"dl_work\": %llu}}\n",
		(int)getpid(), mode, (unsigned long long)n_step, (unsigned long long)n_work,
		(unsigned long long)n_tiny, (unsigned long long)n_dl);
	fclose(f);
}

static void wait_line(void)
{
	char buf[64];

	if (!fgets(buf, sizeof(buf), stdin))
		exit(3);
}

static void loop_for(double seconds)
{
	uint64_t end = vt_now() + (uint64_t)(seconds * 1e9);

	do {
		fault_step();
		vt_spin(100000);
	} while (vt_now() < end);
}

static int dl_calls(const char *lib, const char *sym, int n, int per_open, int close_each)
{
	void *h = NULL;
	void (*work)(void) = NULL;

	for (int i = 0; i < n; i++) {
		if (!h) {
			h = dlopen(lib, RTLD_NOW);
			if (!h) {
				fprintf(stderr, "dlopen: %s\n", dlerror());
				return 1;
			}
			work = (void (*)(void))dlsym(h, sym);
			if (!work)
				return 1;
		}
		for (int k = 0; k < per_open; k++) {
			work();
			n_dl++;
		}
		if (close_each) {
			dlclose(h);
			h = NULL;
			/* let the next dlopen map it anew */
			usleep(20000);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *truth = NULL, *mode;
	char *args[8] = { 0 };
	int nargs = 0, i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else if (nargs < 7)
			args[nargs++] = argv[i];
	}
	if (!nargs) {
		fprintf(stderr, "usage: %s MODE [ARG...] [--truth FILE]\n", argv[0]);
		return 2;
	}
	mode = args[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "after-exec")) {
		/* the new image: no handshake, the driver is already going */
		loop_for(atof(args[1]));
		write_truth(truth, mode);
		return 0;
	}
	printf("ready %d\n", (int)getpid());
	wait_line();

	if (!strcmp(mode, "loop") && nargs == 2) {
		loop_for(atof(args[1]));
	} else if (!strcmp(mode, "threads") && nargs == 2) {
		int n = atoi(args[1]);
		pthread_t th[64];

		for (int done = 0; done < n;) {
			int k = n - done < 64 ? n - done : 64;

			for (i = 0; i < k; i++)
				if (pthread_create(&th[i], NULL, thread_main, NULL))
					return 1;
			for (i = 0; i < k; i++)
				pthread_join(th[i], NULL);
			done += k;
		}
	} else if (!strcmp(mode, "forks") && nargs == 2) {
		int n = atoi(args[1]);

		for (i = 0; i < n; i++) {
			pid_t c = fork();

			if (c < 0)
				return 1;
			if (!c) {
				fault_step();
				_exit(0);
			}
			fault_step();
		}
		while (wait(NULL) > 0)
			;
	} else if ((!strcmp(mode, "rate") || !strcmp(mode, "threadrate")) && nargs == 3) {
		/* paced by the clock: each ms, what is owed by then */
		double per_ns = atof(args[1]) / 1e9;
		uint64_t t0 = vt_now(), end = t0 + (uint64_t)(atof(args[2]) * 1e9), tick = t0;
		uint64_t done = 0;
		bool threads = !strcmp(mode, "threadrate");

		while (vt_now() < end) {
			pthread_t th[256];
			uint64_t want = (uint64_t)((double)(vt_now() - t0) * per_ns);
			int k = want > done ? (int)(want - done < 256 ? want - done : 256) : 0;

			done += (uint64_t)k;
			for (i = 0; i < k; i++) {
				if (!threads) {
					fault_tiny();
					n_tiny++;
				} else if (pthread_create(&th[i], NULL, thread_main, NULL)) {
					return 1;
				}
			}
			for (i = 0; threads && i < k; i++)
				pthread_join(th[i], NULL);
			tick += 1000000;
			while (vt_now() < tick)
				usleep(100);
		}
	} else if (!strcmp(mode, "workers") && nargs == 4) {
		int n = atoi(args[1]), k = atoi(args[3]);
		double live = atof(args[2]) / 1000;

		for (int done = 0; done < n; done += k) {
			for (i = 0; i < k && done + i < n; i++) {
				pid_t c = fork();

				if (c < 0)
					return 1;
				if (!c) {
					loop_for(live);
					_exit(0);
				}
			}
			while (wait(NULL) > 0)
				;
		}
	} else if (!strcmp(mode, "exec") && nargs == 1) {
		char *av[] = { argv[0], "after-exec", "0.3", "--truth", (char *)truth, NULL };

		for (i = 0; i < 10; i++)
			fault_step();
		if (!truth)
			av[3] = NULL;
		/* the pre-exec image's truth: the driver reads both */
		if (truth) {
			char pre[4096];

			snprintf(pre, sizeof(pre), "%s.pre", truth);
			write_truth(pre, mode);
		}
		execv("/proc/self/exe", av);
		return 1;
	} else if (!strcmp(mode, "dlcycle") && nargs == 3) {
		if (dl_calls(args[1], "dl_work", atoi(args[2]), 5, 1))
			return 1;
	} else if (!strcmp(mode, "dlsys") && nargs == 4) {
		/* a system library by its name, its function called at once
		 * (counted as dl_work in the truth) */
		if (dl_calls(args[1], args[2], 1, atoi(args[3]), 0))
			return 1;
	} else if (!strcmp(mode, "dlnow") && nargs == 3) {
		if (dl_calls(args[1], "dl_work", 1, atoi(args[2]), 0))
			return 1;
	} else if (!strcmp(mode, "flood") && nargs == 2) {
		uint64_t end = vt_now() + (uint64_t)(atof(args[1]) * 1e9);

		while (vt_now() < end) {
			for (i = 0; i < 1000; i++)
				fault_tiny();
			n_tiny += 1000;
		}
	} else if (!strcmp(mode, "crash") && nargs == 1) {
		for (i = 0; i < 10; i++)
			fault_step();
		write_truth(truth, mode);
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		return 1;
	} else {
		fprintf(stderr, "%s: bad mode or arguments\n", argv[0]);
		return 2;
	}
	write_truth(truth, mode);
	return 0;
}
