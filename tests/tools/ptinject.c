// SPDX-License-Identifier: BSD-2-Clause
/*
 * ptinject: pt_inject__dlopen from the command line, for the injector's
 * integration tests (tests/integration/test_inject.py).
 *
 *   ptinject [--wait MS] [--call MS] [--tid TID] [--epoll] PID LIB [LIB...]
 *
 * Loads each LIB in turn into PID and prints one JSON line per library:
 * {"lib", "rc" (0 or -errno), "err", "handle", "already", "handed_off",
 *  "tid", "syscall", "pause_ms", "wait_ms", "call_ms", "tries", "held",
 *  "stopped"}.
 * Exit status: 0 when every load succeeded, 2 when one was refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/inject.h"

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	struct pt_inject_opts o = { 0 };
	int i = 1, pid, bad = 0;

	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--epoll"))
			o.allow_epoll = true;
		else if (i + 1 < argc && !strcmp(argv[i], "--wait"))
			o.wait_ms = (unsigned int)atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--call"))
			o.call_ms = (unsigned int)atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--tid"))
			o.tid = atoi(argv[++i]);
		else
			goto usage;
	}
	if (argc - i < 2)
		goto usage;
	pid = atoi(argv[i++]);
	for (; i < argc; i++) {
		struct pt_inject_result r;
		char err[1024] = "";
		int e = pt_inject__dlopen(pid, argv[i], &o, &r, err, sizeof(err));

		printf("{\"lib\": ");
		json_str(argv[i]);
		printf(", \"rc\": %d, \"err\": ", e);
		json_str(err);
		printf(", \"handle\": %llu, \"already\": %s, \"handed_off\": %s, \"tid\": %d, "
		       "\"syscall\": ",
		       (unsigned long long)r.handle, r.already ? "true" : "false",
		       r.handed_off ? "true" : "false", r.tid);
		json_str(r.syscall);
		printf(", \"pause_ms\": %.3f, \"wait_ms\": %.3f, \"call_ms\": %.3f, \"tries\": %u, "
		       "\"held\": %u, \"stopped\": %s}\n",
		       r.pause_ms, r.wait_ms, r.call_ms, r.tries, r.held_signals,
		       r.stopped ? "true" : "false");
		fflush(stdout);
		if (e)
			bad = 1;
	}
	return bad ? 2 : 0;
usage:
	fprintf(stderr,
		"usage: ptinject [--wait MS] [--call MS] [--tid TID] [--epoll] PID LIB...\n");
	return 2;
}
