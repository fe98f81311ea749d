/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared memory a target can shrink under us: the segments our helpers
 * make in a traced process (the Python agent's, the CUPTI shim's ring) are
 * files of the target's user, mapped MAP_SHARED. When that user truncates
 * one, the next load or store past its new end is SIGBUS, which would
 * kill proftrace and lose the profile. A guarded range turns that fault
 * into a page of zeros, as systemd's sigbus.c does for journal files: the
 * handler maps anonymous memory over the faulting page (MAP_FIXED) and
 * counts the fault; the reader's validation then fails on the zeros, and
 * it stops using the segment once pt_sigbus__faults() says so. A SIGBUS
 * anywhere else (or sent with kill) is given to the previous disposition,
 * the default one (a core dump) unless someone installed another.
 */
#ifndef PT_SIGBUS_H
#define PT_SIGBUS_H

#include <stddef.h>
#include <stdint.h>

/* Ranges guarded at once: two segments per traced process (256 at most). */
#define PT_SIGBUS_MAX 1024

/*
 * Guard [addr, addr + len), a MAP_SHARED mapping of a file (the handler
 * is installed on first use). A guard id >= 0, or -ENOSPC (every slot
 * taken: the range stays unguarded, as before), -errno from sigaction().
 */
int pt_sigbus__guard(const void *addr, size_t len);
/* Stop guarding (before munmap()). A negative id is ignored. */
void pt_sigbus__unguard(int id);
/* Faults turned into zero pages in the guarded range so far: non-zero
 * means its file was truncated and what was read may be zeros. */
uint64_t pt_sigbus__faults(int id);

#endif
