// SPDX-License-Identifier: BSD-2-Clause
/* A library the engine victim dlopen()s after proftrace attached. */
#include "victim.h"

struct vt_truth dl_truth;

VT_FN void dl_work(void)
{
	uint64_t t0 = vt_now();

	vt_spin(50000);
	vt_add(&dl_truth, t0);
}
