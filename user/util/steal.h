/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Time the hypervisor took from this machine's CPUs (steal), from
 * /proc/stat. On a VM whose host is busy a thread's CPU clock stops while
 * its vCPU is held; the sample timer does not through a steal shorter than
 * its period, so sampled on-CPU times may exceed the threads' CPU time by
 * up to what was stolen (a longer steal makes the timer late, and the
 * periods missed count off the CPU: bpf/sampleclock.h). The reports say
 * how much was stolen.
 */
#ifndef PT_STEAL_H
#define PT_STEAL_H

#include <stdint.h>
#include <stdio.h>

/*
 * The steal field of the first line of a /proc/stat ("cpu  user nice
 * system idle iowait irq softirq steal ..."), in clock ticks, summed over
 * the CPUs. 0; -ENODATA: no steal field (kernels before 2.6.11); -EINVAL:
 * malformed.
 */
int pt_steal__parse(FILE *f, uint64_t *ticks);
/* This machine's steal so far, in ns; -errno. */
int pt_steal__now(uint64_t *ns);

#endif
