// SPDX-License-Identifier: BSD-2-Clause
/*
 * A library the injector's tests load into victims: its constructor
 * appends "loaded <pid> <tid>" to $PT_INJECT_LOG (the victim's
 * environment), so a test sees each load from the victim's side, and
 * leaves errno changed (the victim checks its own). Built
 * twice: -DSLOW makes the constructor take $PT_INJECT_SLOW_MS (default
 * 3000) first, to test the injector's hand-off of a call that does not
 * return in time.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((constructor)) static void loaded(void)
{
	const char *log = getenv("PT_INJECT_LOG");
	char line[96];
	int fd, n;

#ifdef SLOW
	const char *ms = getenv("PT_INJECT_SLOW_MS");
	long t = ms ? atol(ms) : 3000;
	struct timespec ts = { t / 1000, (t % 1000) * 1000000 };
	char start[256];

	/* <log>.start: the call is running now (a test signals it then) */
	if (log && snprintf(start, sizeof(start), "%s.start", log) < (int)sizeof(start)) {
		fd = open(start, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
	}
	while (nanosleep(&ts, &ts))
		;
#endif
	/* a constructor may leave errno changed (EBADF here): the
	 * injector must give the thread its own back */
	close(-1);
	if (!log)
		return;
	fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "loaded %d %ld\n", (int)getpid(),
		     (long)syscall(SYS_gettid));
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}

int pt_inject_probe(void)
{
	return 42;
}
