// SPDX-License-Identifier: BSD-2-Clause
/*
 * A statically linked victim (built with -static): no libc.so, so no
 * dlopen to call; the injector must refuse it in one line. Prints "ready
 * PID", then sleeps until killed.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		sleep(1);
}
