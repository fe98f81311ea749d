/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUPTI activity record -> ptgpu ring record. Uses CUPTI's headers for the
 * record layouts but calls nothing in libcupti.
 */
#ifndef PTG_CONVERT_H
#define PTG_CONVERT_H

#include <stddef.h>

#include <cupti.h>

#include "ring.h"

enum ptg_conv {
	PTG_CONV_OK = 0,      /* *out filled */
	PTG_CONV_UNKNOWN = 1, /* a kind we do not convert */
	PTG_CONV_SHORT = 2,   /* fewer bytes than this kind's struct */
};

/*
 * Convert the record at a, of which avail bytes are readable (the distance
 * to the next record, or to the end of the buffer). Kernel names are
 * interned into r's string table. Counts nothing: the caller does.
 */
enum ptg_conv ptg_convert__activity(struct ptg_ring *r, const CUpti_Activity *a, size_t avail,
				    union ptgpu_rec *out);

/* Bytes a record of this kind must have; 0 for kinds we do not convert. */
size_t ptg_convert__expected_size(CUpti_ActivityKind kind);

#endif
