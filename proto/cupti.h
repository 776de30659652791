/*
 * cupti.h - the part of NVIDIA's CUPTI activity API that sonde uses, declared
 * here so that sonde builds and is tested where neither a GPU nor NVIDIA's
 * headers are (the library is loaded with dlopen at run time).
 *
 * Written from CUPTI's public API reference (docs.nvidia.com/cupti): the kinds
 * of activity record, and for each record sonde reads, the leading fields that
 * every version of that record has kept in the same place since CUDA 9 (later
 * versions only append). Offsets are for LP64 with CUPTI's packed, 8-byte
 * aligned records; the static assertions below pin them, and on a machine
 * with the CUDA toolkit tests/gpu/decls.sh compiles the same offsets against
 * the real cupti_activity.h and nvml.h and fails where one differs.
 *
 * Shared by the GPU runtime (runtime/gpu/, which reads CUPTI's buffers inside
 * the target) and the tests that decode records laid out as CUPTI lays them.
 */
#ifndef SONDE_CUPTI_PROTO_H
#define SONDE_CUPTI_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* CUptiResult: 0 is success; cuptiGetResultString names the others */
#define SONDE_CUPTI_SUCCESS 0

/* CUpti_ActivityKind: the kinds sonde enables or reads */
enum sonde_cupti_kind {
	SONDE_CUPTI_KIND_MEMCPY = 1,
	SONDE_CUPTI_KIND_MEMSET = 2,
	SONDE_CUPTI_KIND_KERNEL = 3,
	SONDE_CUPTI_KIND_DRIVER = 4,
	SONDE_CUPTI_KIND_RUNTIME = 5,
	SONDE_CUPTI_KIND_CONCURRENT_KERNEL = 10,
	SONDE_CUPTI_KIND_MARKER = 12,
	SONDE_CUPTI_KIND_OVERHEAD = 17,
	SONDE_CUPTI_KIND_SYNCHRONIZATION = 38,
	SONDE_CUPTI_KIND_MEMORY = 45,
	SONDE_CUPTI_KIND_MEMORY2 = 49, /* allocations and releases of device memory */
};

/* CUpti_ActivityFlag, as a marker's flags */
#define SONDE_CUPTI_MARKER_INSTANTANEOUS (1u << 0)
#define SONDE_CUPTI_MARKER_START	 (1u << 1)
#define SONDE_CUPTI_MARKER_END		 (1u << 2)

/* CUpti_ActivityObjectKind */
#define SONDE_CUPTI_OBJECT_PROCESS 1
#define SONDE_CUPTI_OBJECT_THREAD  2

/* CUpti_ActivityMemoryOperationType */
#define SONDE_CUPTI_MEMORY_ALLOCATION 1
#define SONDE_CUPTI_MEMORY_RELEASE    2

/* CUpti_ActivityMemcpyKind (the memcpy record's copyKind) */
enum sonde_cupti_copy {
	SONDE_CUPTI_COPY_UNKNOWN = 0,
	SONDE_CUPTI_COPY_HTOD = 1,
	SONDE_CUPTI_COPY_DTOH = 2,
	SONDE_CUPTI_COPY_HTOA = 3,
	SONDE_CUPTI_COPY_ATOH = 4,
	SONDE_CUPTI_COPY_ATOA = 5,
	SONDE_CUPTI_COPY_ATOD = 6,
	SONDE_CUPTI_COPY_DTOA = 7,
	SONDE_CUPTI_COPY_DTOD = 8,
	SONDE_CUPTI_COPY_HTOH = 9,
	SONDE_CUPTI_COPY_PTOP = 10,
};

/* CUpti_ActivitySynchronizationType */
enum sonde_cupti_sync_type {
	SONDE_CUPTI_SYNC_UNKNOWN = 0,
	SONDE_CUPTI_SYNC_EVENT = 1,	  /* cudaEventSynchronize */
	SONDE_CUPTI_SYNC_STREAM_WAIT = 2, /* cudaStreamWaitEvent */
	SONDE_CUPTI_SYNC_STREAM = 3,	  /* cudaStreamSynchronize */
	SONDE_CUPTI_SYNC_CONTEXT = 4,	  /* cudaDeviceSynchronize */
};

#define SONDE_CUPTI_PACKED __attribute__((packed, aligned(8)))

/* CUpti_Activity: every record starts with its kind */
struct SONDE_CUPTI_PACKED sonde_cupti_record {
	uint32_t kind;
};

/*
 * CUpti_ActivityKernel4 and its successors (to 11): a kernel's execution
 * (KERNEL and CONCURRENT_KERNEL). Times are CUPTI's timestamps, in ns.
 */
struct SONDE_CUPTI_PACKED sonde_cupti_kernel {
	uint32_t kind;
	uint8_t cache_config;
	uint8_t shared_memory_config;
	uint16_t registers_per_thread;
	uint32_t partitioned_cache_requested;
	uint32_t partitioned_cache_executed;
	uint64_t start;
	uint64_t end;
	uint64_t completed;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	int32_t grid[3];
	int32_t block[3];
	int32_t static_shared_memory;
	int32_t dynamic_shared_memory;
	uint32_t local_memory_per_thread;
	uint32_t local_memory_total;
	uint32_t correlation_id;
	int64_t grid_id;
	const char *name; /* the (mangled) kernel name, in the target's memory */
	void *reserved0;
	uint64_t queued;
	uint64_t submitted;
};

/* CUpti_ActivityMemcpy (to Memcpy6): one copy */
struct SONDE_CUPTI_PACKED sonde_cupti_memcpy {
	uint32_t kind;
	uint8_t copy_kind; /* enum sonde_cupti_copy */
	uint8_t src_kind;
	uint8_t dst_kind;
	uint8_t flags; /* bit 0: asynchronous */
	uint64_t bytes;
	uint64_t start;
	uint64_t end;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t correlation_id;
	uint32_t runtime_correlation_id;
	uint32_t pad;
	void *reserved0;
};

/* CUpti_ActivityMemset (to Memset4): one memset */
struct SONDE_CUPTI_PACKED sonde_cupti_memset {
	uint32_t kind;
	uint32_t value;
	uint64_t bytes;
	uint64_t start;
	uint64_t end;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t correlation_id;
	uint16_t flags;
	uint16_t memory_kind;
	uint32_t pad;
	void *reserved0;
};

/* CUpti_ActivityAPI: a runtime (RUNTIME) or driver (DRIVER) API call */
struct SONDE_CUPTI_PACKED sonde_cupti_api {
	uint32_t kind;
	uint32_t cbid; /* the function, as CUPTI's callback ids number them */
	uint64_t start;
	uint64_t end;
	uint32_t process_id;
	uint32_t thread_id;
	uint32_t correlation_id;
	uint32_t return_value;
};

/* CUpti_ActivitySynchronization: a synchronisation call's wait */
struct SONDE_CUPTI_PACKED sonde_cupti_sync {
	uint32_t kind;
	uint32_t type; /* enum sonde_cupti_sync_type */
	uint64_t start;
	uint64_t end;
	uint32_t correlation_id;
	uint32_t context_id;
	uint32_t stream_id; /* CUPTI_SYNCHRONIZATION_INVALID_VALUE: none */
	uint32_t cuda_event_id;
};

/*
 * CUpti_ActivityMarker2: an NVTX mark, or one end of an NVTX range (the two
 * ends of a range share its id). objectId holds (processId, threadId) for a
 * thread's marker, (deviceId, contextId, streamId) for a stream's.
 */
struct SONDE_CUPTI_PACKED sonde_cupti_marker {
	uint32_t kind;
	uint32_t flags; /* SONDE_CUPTI_MARKER_* */
	uint64_t timestamp;
	uint32_t id;
	uint32_t object_kind; /* SONDE_CUPTI_OBJECT_* */
	uint32_t object_id[3];
	uint32_t pad;
	const char *name;
	const char *domain;
};

/* CUpti_ActivityMemory3 and 4 (MEMORY2): one allocation or release of GPU memory */
struct SONDE_CUPTI_PACKED sonde_cupti_memory {
	uint32_t kind;
	uint32_t operation;   /* SONDE_CUPTI_MEMORY_* */
	uint32_t memory_kind; /* CUpti_ActivityMemoryKind: 3 device, 1 pageable, ... */
	uint32_t correlation_id;
	uint64_t address;
	uint64_t bytes;
	uint64_t timestamp;
	uint64_t pc;
	uint32_t process_id;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
};

_Static_assert(offsetof(struct sonde_cupti_kernel, start) == 16, "CUPTI kernel.start");
_Static_assert(offsetof(struct sonde_cupti_marker, object_id) == 24, "CUPTI marker.objectId");
_Static_assert(offsetof(struct sonde_cupti_marker, name) == 40, "CUPTI marker.name");
_Static_assert(offsetof(struct sonde_cupti_memory, timestamp) == 32, "CUPTI memory.timestamp");
_Static_assert(offsetof(struct sonde_cupti_memory, stream_id) == 60, "CUPTI memory.streamId");
_Static_assert(offsetof(struct sonde_cupti_kernel, device_id) == 40, "CUPTI kernel.deviceId");
_Static_assert(offsetof(struct sonde_cupti_kernel, grid) == 52, "CUPTI kernel.gridX");
_Static_assert(offsetof(struct sonde_cupti_kernel, block) == 64, "CUPTI kernel.blockX");
_Static_assert(offsetof(struct sonde_cupti_kernel, correlation_id) == 92,
	       "CUPTI kernel.correlationId");
_Static_assert(offsetof(struct sonde_cupti_kernel, name) == 104, "CUPTI kernel.name");
_Static_assert(offsetof(struct sonde_cupti_kernel, queued) == 120, "CUPTI kernel.queued");
_Static_assert(offsetof(struct sonde_cupti_memcpy, bytes) == 8, "CUPTI memcpy.bytes");
_Static_assert(offsetof(struct sonde_cupti_memcpy, device_id) == 32, "CUPTI memcpy.deviceId");
_Static_assert(offsetof(struct sonde_cupti_memcpy, correlation_id) == 44,
	       "CUPTI memcpy.correlationId");
_Static_assert(offsetof(struct sonde_cupti_memset, device_id) == 32, "CUPTI memset.deviceId");
_Static_assert(offsetof(struct sonde_cupti_memset, memory_kind) == 50, "CUPTI memset.memoryKind");
_Static_assert(offsetof(struct sonde_cupti_api, process_id) == 24, "CUPTI api.processId");
_Static_assert(sizeof(struct sonde_cupti_api) == 40, "CUPTI api size");
_Static_assert(offsetof(struct sonde_cupti_sync, stream_id) == 32, "CUPTI sync.streamId");

/*
 * The functions sonde calls, as their types (looked up with dlsym). CUPTI
 * hands out buffers through two callbacks: one asks for an empty buffer, the
 * other gives back a completed one, whose records cuptiActivityGetNextRecord
 * walks (it returns CUPTI_ERROR_MAX_LIMIT_REACHED after the last).
 */
typedef void (*sonde_cupti_buffer_request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*sonde_cupti_buffer_complete_fn)(void *context, uint32_t stream_id, uint8_t *buffer,
					       size_t size, size_t valid_size);
struct sonde_cupti_api_table {
	int (*activity_enable)(uint32_t kind);
	int (*activity_disable)(uint32_t kind);
	int (*activity_register_callbacks)(sonde_cupti_buffer_request_fn,
					   sonde_cupti_buffer_complete_fn);
	int (*activity_get_next_record)(uint8_t *buffer, size_t valid,
					struct sonde_cupti_record **record);
	int (*activity_flush_all)(uint32_t flag);
	int (*activity_get_num_dropped_records)(void *context, uint32_t stream_id, size_t *dropped);
	int (*get_timestamp)(uint64_t *ts);
	int (*get_result_string)(int result, const char **str);
};

/* cuptiActivityFlushAll's flag: also the buffers that are not full */
#define SONDE_CUPTI_FLUSH_FORCED 1u
/* cuptiActivityGetNextRecord's answer after the last record */
#define SONDE_CUPTI_ERROR_MAX_LIMIT_REACHED 12

#endif
