// SPDX-License-Identifier: BSD-2-Clause
/*
 * CUPTI 13.0 record versions, per kind (newer CUDA adds versions that extend
 * these at the end, so the struct we compiled with stays a prefix; a record
 * shorter than it means an older libcupti and is refused, not misread):
 *   KERNEL, CONCURRENT_KERNEL  CUpti_ActivityKernel10
 *   MEMCPY                     CUpti_ActivityMemcpy6
 *   MEMSET                     CUpti_ActivityMemset4
 *   RUNTIME, DRIVER            CUpti_ActivityAPI
 *   SYNCHRONIZATION            CUpti_ActivitySynchronization2
 */
#include <string.h>

#include "convert.h"

size_t ptg_convert__expected_size(CUpti_ActivityKind kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return sizeof(CUpti_ActivityAPI);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return sizeof(CUpti_ActivitySynchronization2);
	default:
		return 0;
	}
}

static uint16_t clamp16(int64_t v)
{
	return v < 0 ? 0 : v > 0xffff ? 0xffff : (uint16_t)v;
}

static uint32_t clamp32(int64_t v)
{
	return v < 0 ? 0 : v > 0xffffffffll ? 0xffffffffu : (uint32_t)v;
}

static void conv_kernel(struct ptg_ring *r, const CUpti_ActivityKernel10 *k, struct ptgpu_kernel *o)
{
	o->type = PTGPU_REC_KERNEL;
	o->device_id = clamp16(k->deviceId);
	o->correlation_id = k->correlationId;
	o->start_ns = k->start;
	o->end_ns = k->end;
	o->graph_node_id = k->graphNodeId;
	o->context_id = k->contextId;
	o->stream_id = k->streamId;
	o->graph_id = k->graphId;
	/* CUPTI's name pointer lives only as long as this buffer. */
	o->name_id = ptg_ring__intern(r, k->name);
	o->grid_x = clamp32(k->gridX);
	o->grid_y = clamp16(k->gridY);
	o->grid_z = clamp16(k->gridZ);
	o->block_x = clamp16(k->blockX);
	o->block_y = clamp16(k->blockY);
	o->block_z = clamp16(k->blockZ);
	o->flags = k->isDeviceLaunched ? PTGPU_KERNEL_DEVICE_LAUNCHED : 0;
}

static void conv_memcpy(const CUpti_ActivityMemcpy6 *m, struct ptgpu_memcpy *o)
{
	o->type = PTGPU_REC_MEMCPY;
	o->device_id = clamp16(m->deviceId);
	o->correlation_id = m->correlationId;
	o->start_ns = m->start;
	o->end_ns = m->end;
	o->bytes = m->bytes;
	o->graph_node_id = m->graphNodeId;
	o->context_id = m->contextId;
	o->stream_id = m->streamId;
	o->graph_id = m->graphId;
	o->copy_kind = m->copyKind;
	o->src_kind = m->srcKind;
	o->dst_kind = m->dstKind;
	o->flags = m->flags;
}

static void conv_memset(const CUpti_ActivityMemset4 *m, struct ptgpu_memset *o)
{
	o->type = PTGPU_REC_MEMSET;
	o->device_id = clamp16(m->deviceId);
	o->correlation_id = m->correlationId;
	o->start_ns = m->start;
	o->end_ns = m->end;
	o->bytes = m->bytes;
	o->graph_node_id = m->graphNodeId;
	o->context_id = m->contextId;
	o->stream_id = m->streamId;
	o->graph_id = m->graphId;
	o->value = m->value;
	o->memory_kind = m->memoryKind;
	o->flags = m->flags;
}

static void conv_api(const CUpti_ActivityAPI *a, uint16_t domain, struct ptgpu_api *o)
{
	o->type = PTGPU_REC_API;
	o->domain = domain;
	o->correlation_id = a->correlationId;
	o->start_ns = a->start;
	o->end_ns = a->end;
	o->cbid = a->cbid;
	o->tid = a->threadId;
	o->pid = a->processId;
	o->return_value = a->returnValue;
}

static void conv_sync(const CUpti_ActivitySynchronization2 *s, struct ptgpu_sync *o)
{
	o->type = PTGPU_REC_SYNC;
	o->sync_type = clamp16(s->type);
	o->correlation_id = s->correlationId;
	o->start_ns = s->start;
	o->end_ns = s->end;
	o->context_id = s->contextId;
	o->stream_id = s->streamId;
	o->cuda_event_id = s->cudaEventId;
	o->return_value = s->returnValue;
	o->cuda_event_sync_id = s->cudaEventSyncId;
}

enum ptg_conv ptg_convert__activity(struct ptg_ring *r, const CUpti_Activity *a, size_t avail,
				    union ptgpu_rec *out)
{
	size_t need;

	if (avail < sizeof(*a))
		return PTG_CONV_SHORT;
	need = ptg_convert__expected_size(a->kind);
	if (!need)
		return PTG_CONV_UNKNOWN;
	if (avail < need)
		return PTG_CONV_SHORT;

	memset(out, 0, sizeof(*out));
	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		conv_kernel(r, (const CUpti_ActivityKernel10 *)a, &out->kernel);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		conv_memcpy((const CUpti_ActivityMemcpy6 *)a, &out->memcpy);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		conv_memset((const CUpti_ActivityMemset4 *)a, &out->memset);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		conv_api((const CUpti_ActivityAPI *)a, PTGPU_API_RUNTIME, &out->api);
		break;
	case CUPTI_ACTIVITY_KIND_DRIVER:
		conv_api((const CUpti_ActivityAPI *)a, PTGPU_API_DRIVER, &out->api);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		conv_sync((const CUpti_ActivitySynchronization2 *)a, &out->sync);
		break;
	default:
		return PTG_CONV_UNKNOWN;
	}
	return PTG_CONV_OK;
}
