// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sigbus.h"

/* len is written last and cleared first: the handler reads len, then start. */
struct guard {
	uintptr_t start;
	size_t len;
	uint64_t faults;
	int used;
};

static struct guard guards[PT_SIGBUS_MAX];
static struct sigaction prev;
static uintptr_t page_mask;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	/* BUS_ADRERR: a page past the end of a mapped file (kernel-made,
	 * si_code > 0; a kill() has SI_USER and is never ours) */
	if (si->si_code == BUS_ADRERR) {
		for (size_t i = 0; i < PT_SIGBUS_MAX; i++) {
			size_t len = __atomic_load_n(&guards[i].len, __ATOMIC_ACQUIRE);
			uintptr_t s = __atomic_load_n(&guards[i].start, __ATOMIC_RELAXED);
			void *pg = (void *)(a & page_mask);

			if (!len || a - s >= len)
				continue;
			/* the instruction runs again and reads zeros */
			if (mmap(pg, ~page_mask + 1, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != pg)
				break;
			__atomic_fetch_add(&guards[i].faults, 1, __ATOMIC_RELAXED);
			errno = saved;
			return;
		}
	}
	/* Not ours: the disposition there was before us takes it. A fault
	 * recurs when we return; a sent signal is sent again (blocked until
	 * we return, then delivered under the restored action). */
	sigaction(SIGBUS, &prev, NULL);
	if (si->si_code <= 0)
		raise(sig);
	errno = saved;
}

/* Ours unless someone replaced it since (a library, a test harness that
 * restores what it found): then ours again, over theirs. Never ours saved
 * as the previous one, which would loop on a fault that is not ours. */
static int install(void)
{
	struct sigaction sa, cur;
	int e = 0;

	pthread_mutex_lock(&lock);
	page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	if (sigaction(SIGBUS, NULL, &cur)) {
		e = -errno;
	} else if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != on_sigbus) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &prev))
			e = -errno;
	}
	pthread_mutex_unlock(&lock);
	return e;
}

int pt_sigbus__guard(const void *addr, size_t len)
{
	int e = install();

	if (e)
		return e;
	if (!len)
		return -EINVAL;
	for (int i = 0; i < PT_SIGBUS_MAX; i++) {
		int free_ = 0;

		if (!__atomic_compare_exchange_n(&guards[i].used, &free_, 1, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&guards[i].faults, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&guards[i].start, (uintptr_t)addr, __ATOMIC_RELAXED);
		__atomic_store_n(&guards[i].len, len, __ATOMIC_RELEASE);
		return i;
	}
	return -ENOSPC;
}

void pt_sigbus__unguard(int id)
{
	if (id < 0 || id >= PT_SIGBUS_MAX)
		return;
	__atomic_store_n(&guards[id].len, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&guards[id].start, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&guards[id].faults, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&guards[id].used, 0, __ATOMIC_RELEASE);
}

uint64_t pt_sigbus__faults(int id)
{
	if (id < 0 || id >= PT_SIGBUS_MAX)
		return 0;
	return __atomic_load_n(&guards[id].faults, __ATOMIC_RELAXED);
}
