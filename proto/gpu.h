/*
 * gpu.h - the records the GPU runtime writes into its rings, and the reading
 * of CUPTI's activity records into them.
 *
 * Shared by runtime/gpu/ (inside the target: CUPTI hands it buffers of
 * activity records, which it turns into these) and the gpu collector. Every
 * record starts with the ring's 32-bit header word. GPU times stay on CUPTI's
 * clock (ns); GPU_REC_CLOCK records pair a CUPTI timestamp with sonde's clock
 * (CLOCK_MONOTONIC) read at the same moment, and sonde maps the activity onto
 * its own clock from those pairs.
 */
#ifndef SONDE_GPU_PROTO_H
#define SONDE_GPU_PROTO_H

#include <stdint.h>
#include <string.h>
#include "cupti.h"
#include "rt.h"

#define GPU_ENV_RING  "SONDE_GPU_RING"	/* path of the ring area */
#define GPU_ENV_LEVEL "SONDE_GPU_LEVEL" /* enum gpu_level, decimal */
#define GPU_ENV_CUPTI "SONDE_GPU_CUPTI" /* the libcupti.so to load */

enum gpu_level {
	GPU_LEVEL_KERNEL = 1, /* kernels, copies, memsets, synchronisation */
	GPU_LEVEL_API = 2,    /* the CUDA runtime and driver calls only */
	GPU_LEVEL_FULL = 3,   /* both */
};

enum gpu_rec {
	GPU_REC_PROC = RT_REC_PROC,
	GPU_REC_MODULE = RT_REC_MODULE,
	GPU_REC_NAME = 3,    /* struct gpu_name: a kernel's name, before its first use */
	GPU_REC_ACT = 4,     /* struct gpu_act: GPU work */
	GPU_REC_API = 5,     /* struct gpu_api: a runtime or driver call */
	GPU_REC_CLOCK = 6,   /* struct gpu_clock: CUPTI's clock and sonde's, read together */
	GPU_REC_DROPPED = 7, /* struct gpu_dropped: records CUPTI could not keep */
	GPU_REC_STATUS = 8,  /* struct gpu_status: CUPTI could not start, and why */
	GPU_REC_MARKER = 9,  /* struct gpu_marker: an NVTX mark or one end of a range */
	GPU_REC_MEMORY = 10, /* struct gpu_memory: device memory allocated or released */
};

enum gpu_act_kind {
	GPU_ACT_KERNEL = 1,
	GPU_ACT_MEMCPY = 2,
	GPU_ACT_MEMSET = 3,
	GPU_ACT_SYNC = 4,
};

struct gpu_name {
	uint32_t hdr;
	uint32_t id;
	char name[]; /* NUL-terminated, padded to 8 */
};

struct gpu_act {
	uint32_t hdr;
	uint8_t kind;  /* enum gpu_act_kind */
	uint8_t sub;   /* memcpy: enum sonde_cupti_copy; sync: enum sonde_cupti_sync_type */
	uint16_t regs; /* kernel: registers per thread */
	uint32_t device, context, stream, correlation;
	uint32_t name;	     /* kernel: its gpu_name id */
	uint64_t start, end; /* CUPTI's clock, ns */
	uint64_t bytes;	     /* memcpy, memset; kernel: shared memory per block */
	int32_t grid[3], block[3];
};

struct gpu_api {
	uint32_t hdr;
	uint8_t driver; /* 1: a driver API call, 0: a runtime API call */
	uint8_t pad[3];
	uint32_t cbid, pid, tid, correlation, result, pad2;
	uint64_t start, end; /* CUPTI's clock, ns */
};

struct gpu_marker {
	uint32_t hdr;
	uint32_t flags; /* SONDE_CUPTI_MARKER_* */
	uint32_t id;	/* a range's two ends share it */
	uint32_t pid, tid;
	uint32_t name; /* gpu_name id (the start and marks carry one; 0: none) */
	uint64_t ts;   /* CUPTI's clock, ns */
};

struct gpu_memory {
	uint32_t hdr;
	uint8_t release;     /* 0: allocated, 1: released */
	uint8_t memory_kind; /* CUPTI's: 3 device memory */
	uint16_t pad;
	uint32_t device, context, stream, correlation, pid;
	uint64_t address, bytes;
	uint64_t ts; /* CUPTI's clock, ns */
};

/* One CUPTI record read: which member holds it is gpu_from_cupti's answer. */
union gpu_out {
	struct gpu_act act;
	struct gpu_api api;
	struct gpu_marker marker;
	struct gpu_memory memory;
};

struct gpu_clock {
	uint32_t hdr;
	uint32_t pad;
	uint64_t gpu_ns;    /* cuptiGetTimestamp */
	uint64_t host_ns;   /* CLOCK_MONOTONIC, read between two CUPTI readings */
	uint64_t spread_ns; /* how far apart those two CUPTI readings were */
};

struct gpu_dropped {
	uint32_t hdr;
	uint32_t pad;
	uint64_t records;
};

struct gpu_status {
	uint32_t hdr;
	int32_t code; /* CUPTI's result, or -errno */
	char text[];  /* NUL-terminated, padded to 8 */
};

/*
 * One CUPTI activity record read into out (the caller fills in the name ids
 * of kernels and markers). Returns GPU_REC_ACT, GPU_REC_API, GPU_REC_MARKER,
 * GPU_REC_MEMORY, or 0 for a kind sonde does not read (counted by the caller).
 */
static inline int gpu_from_cupti(const struct sonde_cupti_record *r, union gpu_out *out)
{
	struct gpu_act *act = &out->act;
	struct gpu_api *api = &out->api;

	switch (r->kind) {
	case SONDE_CUPTI_KIND_KERNEL:
	case SONDE_CUPTI_KIND_CONCURRENT_KERNEL: {
		const struct sonde_cupti_kernel *k = (const void *)r;

		memset(act, 0, sizeof(*act));
		act->kind = GPU_ACT_KERNEL;
		act->regs = k->registers_per_thread;
		act->device = k->device_id, act->context = k->context_id;
		act->stream = k->stream_id, act->correlation = k->correlation_id;
		act->start = k->start, act->end = k->end;
		act->bytes = (uint64_t)(uint32_t)k->static_shared_memory +
			     (uint64_t)(uint32_t)k->dynamic_shared_memory;
		memcpy(act->grid, k->grid, sizeof(act->grid));
		memcpy(act->block, k->block, sizeof(act->block));
		return GPU_REC_ACT;
	}
	case SONDE_CUPTI_KIND_MEMCPY: {
		const struct sonde_cupti_memcpy *m = (const void *)r;

		memset(act, 0, sizeof(*act));
		act->kind = GPU_ACT_MEMCPY;
		act->sub = m->copy_kind;
		act->device = m->device_id, act->context = m->context_id;
		act->stream = m->stream_id, act->correlation = m->correlation_id;
		act->start = m->start, act->end = m->end, act->bytes = m->bytes;
		return GPU_REC_ACT;
	}
	case SONDE_CUPTI_KIND_MEMSET: {
		const struct sonde_cupti_memset *m = (const void *)r;

		memset(act, 0, sizeof(*act));
		act->kind = GPU_ACT_MEMSET;
		act->device = m->device_id, act->context = m->context_id;
		act->stream = m->stream_id, act->correlation = m->correlation_id;
		act->start = m->start, act->end = m->end, act->bytes = m->bytes;
		return GPU_REC_ACT;
	}
	case SONDE_CUPTI_KIND_SYNCHRONIZATION: {
		const struct sonde_cupti_sync *s = (const void *)r;

		memset(act, 0, sizeof(*act));
		act->kind = GPU_ACT_SYNC;
		act->sub = (uint8_t)s->type;
		act->context = s->context_id, act->stream = s->stream_id;
		act->correlation = s->correlation_id;
		act->start = s->start, act->end = s->end;
		return GPU_REC_ACT;
	}
	case SONDE_CUPTI_KIND_RUNTIME:
	case SONDE_CUPTI_KIND_DRIVER: {
		const struct sonde_cupti_api *a = (const void *)r;

		memset(api, 0, sizeof(*api));
		api->driver = r->kind == SONDE_CUPTI_KIND_DRIVER;
		api->cbid = a->cbid, api->pid = a->process_id, api->tid = a->thread_id;
		api->correlation = a->correlation_id, api->result = a->return_value;
		api->start = a->start, api->end = a->end;
		return GPU_REC_API;
	}
	case SONDE_CUPTI_KIND_MARKER: {
		const struct sonde_cupti_marker *m = (const void *)r;
		struct gpu_marker *g = &out->marker;

		memset(g, 0, sizeof(*g));
		g->flags = m->flags, g->id = m->id, g->ts = m->timestamp;
		if (m->object_kind == SONDE_CUPTI_OBJECT_THREAD ||
		    m->object_kind == SONDE_CUPTI_OBJECT_PROCESS)
			g->pid = m->object_id[0], g->tid = m->object_id[1];
		return GPU_REC_MARKER;
	}
	case SONDE_CUPTI_KIND_MEMORY2: {
		const struct sonde_cupti_memory *m = (const void *)r;
		struct gpu_memory *g = &out->memory;

		if (m->operation != SONDE_CUPTI_MEMORY_ALLOCATION &&
		    m->operation != SONDE_CUPTI_MEMORY_RELEASE)
			return 0;
		memset(g, 0, sizeof(*g));
		g->release = m->operation == SONDE_CUPTI_MEMORY_RELEASE;
		g->memory_kind = (uint8_t)m->memory_kind;
		g->device = m->device_id, g->context = m->context_id, g->stream = m->stream_id;
		g->correlation = m->correlation_id, g->pid = m->process_id;
		g->address = m->address, g->bytes = m->bytes, g->ts = m->timestamp;
		return GPU_REC_MEMORY;
	}
	default:
		return 0;
	}
}

#endif
