/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How many sampling periods one on-CPU sample stands for. Included by
 * pysample.bpf.c and by its unit test (tests/unit/sample/test_sampleclock.c),
 * so the rule that is tested is the one that runs.
 *
 * Why: the sampler's cpu-clock event fires on a grid of periods of the
 * thread's time on the CPU (the rest of a period is carried over a switch
 * out). When the timer cannot fire on time, the kernel fires it once, late,
 * and moves it to the next point of the grid after now: the periods missed
 * give no sample. On a VM this is steal (the hypervisor holds the vCPU
 * while the thread is on it; seen: 9% of a 3 s run on a loaded 2-vCPU CI
 * machine), and every missed period used to be lost from the thread's
 * wall time. Here a sample counts the grid points passed since the last
 * one; the periods beyond the first were not run by the thread (its CPU
 * clock, and the victim's thread_time(), stop then under paravirt steal
 * accounting), so user space books them as off-CPU time: wall time stays
 * whole, on-CPU time stays what the thread ran.
 */
#ifndef PT_SAMPLECLOCK_H
#define PT_SAMPLECLOCK_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * now: this sample's time; t_in: when the thread last came on the CPU (0:
 * not seen since its storage was made); *grid: the grid point of its last
 * sample (0: none), updated. Returns the periods this sample stands for:
 * 1 on time; k > 1 when k - 1 were missed; 0 when an earlier late sample
 * was rounded up past this one. Grid points are rounded to the nearest,
 * so a timer's jitter (microseconds) never adds or drops a period.
 *
 * The first sample after a switch in is due within one period (what was
 * left of one); one later than a period by more than half of one counts
 * the periods after that first one as missed, as if a whole period had
 * been left (the least that can have been missed). Without off-CPU
 * tracking t_in is never set and the stretch between two samples is not
 * known to be on the CPU: each sample is one period (track_in false).
 */
static __always_inline __u32 pt_sampleclock__periods(__u64 now, __u64 t_in, __u64 *grid,
						     __u64 period, int track_in)
{
	__u64 e, k;

	if (!track_in || !period)
		return 1;
	if (!*grid || t_in > *grid) {
		e = t_in && now > t_in ? now - t_in : 0;
		k = (e + period / 2) / period;
		if (k < 1)
			k = 1;
		*grid = now;
	} else {
		e = now > *grid ? now - *grid : 0;
		k = (e + period / 2) / period;
		*grid += k * period;
	}
	return k > 0xffffffffull ? 0xffffffffu : (__u32)k;
}

#endif
