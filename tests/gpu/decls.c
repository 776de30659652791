/*
 * decls.c - sonde's declarations of CUPTI (proto/cupti.h) against NVIDIA's
 * own headers, where a CUDA toolkit is installed: every field sonde reads
 * must sit where the newest record of its kind has it, with the same size.
 * Built by tests/meson.build only where cupti_activity.h is found; prints TAP.
 */
#include <stdio.h>
#include <cupti.h>
#include "proto/cupti.h"

static int n, failed;

static void check(const char *what, size_t ours, size_t theirs)
{
	n++;
	if (ours == theirs) {
		printf("ok %d - %s at %zu\n", n, what, ours);
	} else {
		failed++;
		printf("not ok %d - %s: sonde has %zu, CUPTI %zu\n", n, what, ours, theirs);
	}
}

#define FIELD(ours, theirs, of, tf)                                                                \
	do {                                                                                       \
		check(#theirs "." #tf, offsetof(struct ours, of), offsetof(theirs, tf));           \
		check(#theirs "." #tf " (size)", sizeof(((struct ours *)0)->of),                   \
		      sizeof(((theirs *)0)->tf));                                                  \
	} while (0)

/* the newest record of each kind in the headers this was built with */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_t;
typedef CUpti_ActivityMemcpy6 memcpy_t;
typedef CUpti_ActivityMemset4 memset_t;
typedef CUpti_ActivitySynchronization2 sync_t;
typedef CUpti_ActivityMemory4 memory_t;
#else
typedef CUpti_ActivityKernel9 kernel_t;
typedef CUpti_ActivityMemcpy5 memcpy_t;
typedef CUpti_ActivityMemset4 memset_t;
typedef CUpti_ActivitySynchronization sync_t;
typedef CUpti_ActivityMemory3 memory_t;
#endif

int main(void)
{
	printf("# CUPTI_API_VERSION %d\n", (int)CUPTI_API_VERSION);
	check("CUPTI_ACTIVITY_KIND_MEMCPY", SONDE_CUPTI_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
	check("CUPTI_ACTIVITY_KIND_MEMSET", SONDE_CUPTI_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
	check("CUPTI_ACTIVITY_KIND_KERNEL", SONDE_CUPTI_KIND_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
	check("CUPTI_ACTIVITY_KIND_DRIVER", SONDE_CUPTI_KIND_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER);
	check("CUPTI_ACTIVITY_KIND_RUNTIME", SONDE_CUPTI_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME);
	check("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", SONDE_CUPTI_KIND_CONCURRENT_KERNEL,
	      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	check("CUPTI_ACTIVITY_KIND_MARKER", SONDE_CUPTI_KIND_MARKER, CUPTI_ACTIVITY_KIND_MARKER);
	check("CUPTI_ACTIVITY_KIND_OVERHEAD", SONDE_CUPTI_KIND_OVERHEAD,
	      CUPTI_ACTIVITY_KIND_OVERHEAD);
	check("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", SONDE_CUPTI_KIND_SYNCHRONIZATION,
	      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
	check("CUPTI_ACTIVITY_KIND_MEMORY", SONDE_CUPTI_KIND_MEMORY, CUPTI_ACTIVITY_KIND_MEMORY);
	check("CUPTI_ACTIVITY_MEMCPY_KIND_HTOD", SONDE_CUPTI_COPY_HTOD,
	      CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
	check("CUPTI_ACTIVITY_MEMCPY_KIND_DTOH", SONDE_CUPTI_COPY_DTOH,
	      CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
	check("CUPTI_ACTIVITY_MEMCPY_KIND_DTOD", SONDE_CUPTI_COPY_DTOD,
	      CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
	check("CUPTI_ACTIVITY_MEMCPY_KIND_PTOP", SONDE_CUPTI_COPY_PTOP,
	      CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
	check("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", SONDE_CUPTI_SYNC_STREAM,
	      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
	check("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", SONDE_CUPTI_SYNC_CONTEXT,
	      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
	check("CUPTI_ERROR_MAX_LIMIT_REACHED", SONDE_CUPTI_ERROR_MAX_LIMIT_REACHED,
	      CUPTI_ERROR_MAX_LIMIT_REACHED);
	check("CUPTI_ACTIVITY_FLAG_FLUSH_FORCED", SONDE_CUPTI_FLUSH_FORCED,
	      CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);

	FIELD(sonde_cupti_kernel, kernel_t, kind, kind);
	FIELD(sonde_cupti_kernel, kernel_t, registers_per_thread, registersPerThread);
	FIELD(sonde_cupti_kernel, kernel_t, start, start);
	FIELD(sonde_cupti_kernel, kernel_t, end, end);
	FIELD(sonde_cupti_kernel, kernel_t, device_id, deviceId);
	FIELD(sonde_cupti_kernel, kernel_t, context_id, contextId);
	FIELD(sonde_cupti_kernel, kernel_t, stream_id, streamId);
	FIELD(sonde_cupti_kernel, kernel_t, grid[0], gridX);
	FIELD(sonde_cupti_kernel, kernel_t, grid[2], gridZ);
	FIELD(sonde_cupti_kernel, kernel_t, block[0], blockX);
	FIELD(sonde_cupti_kernel, kernel_t, block[2], blockZ);
	FIELD(sonde_cupti_kernel, kernel_t, static_shared_memory, staticSharedMemory);
	FIELD(sonde_cupti_kernel, kernel_t, dynamic_shared_memory, dynamicSharedMemory);
	FIELD(sonde_cupti_kernel, kernel_t, correlation_id, correlationId);
	FIELD(sonde_cupti_kernel, kernel_t, name, name);
	FIELD(sonde_cupti_kernel, kernel_t, queued, queued);
	FIELD(sonde_cupti_kernel, kernel_t, submitted, submitted);

	FIELD(sonde_cupti_memcpy, memcpy_t, copy_kind, copyKind);
	FIELD(sonde_cupti_memcpy, memcpy_t, bytes, bytes);
	FIELD(sonde_cupti_memcpy, memcpy_t, start, start);
	FIELD(sonde_cupti_memcpy, memcpy_t, end, end);
	FIELD(sonde_cupti_memcpy, memcpy_t, device_id, deviceId);
	FIELD(sonde_cupti_memcpy, memcpy_t, context_id, contextId);
	FIELD(sonde_cupti_memcpy, memcpy_t, stream_id, streamId);
	FIELD(sonde_cupti_memcpy, memcpy_t, correlation_id, correlationId);

	FIELD(sonde_cupti_memset, memset_t, bytes, bytes);
	FIELD(sonde_cupti_memset, memset_t, start, start);
	FIELD(sonde_cupti_memset, memset_t, end, end);
	FIELD(sonde_cupti_memset, memset_t, device_id, deviceId);
	FIELD(sonde_cupti_memset, memset_t, context_id, contextId);
	FIELD(sonde_cupti_memset, memset_t, stream_id, streamId);
	FIELD(sonde_cupti_memset, memset_t, correlation_id, correlationId);

	FIELD(sonde_cupti_api, CUpti_ActivityAPI, cbid, cbid);
	FIELD(sonde_cupti_api, CUpti_ActivityAPI, start, start);
	FIELD(sonde_cupti_api, CUpti_ActivityAPI, end, end);
	FIELD(sonde_cupti_api, CUpti_ActivityAPI, thread_id, threadId);
	FIELD(sonde_cupti_api, CUpti_ActivityAPI, correlation_id, correlationId);
	FIELD(sonde_cupti_api, CUpti_ActivityAPI, return_value, returnValue);

	FIELD(sonde_cupti_sync, sync_t, type, type);
	FIELD(sonde_cupti_sync, sync_t, start, start);
	FIELD(sonde_cupti_sync, sync_t, end, end);
	FIELD(sonde_cupti_sync, sync_t, correlation_id, correlationId);
	FIELD(sonde_cupti_sync, sync_t, context_id, contextId);
	FIELD(sonde_cupti_sync, sync_t, stream_id, streamId);
	check("CUPTI_ACTIVITY_KIND_MEMORY2", SONDE_CUPTI_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY2);
	check("CUPTI_ACTIVITY_FLAG_MARKER_START", SONDE_CUPTI_MARKER_START,
	      CUPTI_ACTIVITY_FLAG_MARKER_START);
	check("CUPTI_ACTIVITY_FLAG_MARKER_END", SONDE_CUPTI_MARKER_END,
	      CUPTI_ACTIVITY_FLAG_MARKER_END);
	check("CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS", SONDE_CUPTI_MARKER_INSTANTANEOUS,
	      CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS);
	check("CUPTI_ACTIVITY_OBJECT_THREAD", SONDE_CUPTI_OBJECT_THREAD,
	      CUPTI_ACTIVITY_OBJECT_THREAD);
	check("CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION", SONDE_CUPTI_MEMORY_ALLOCATION,
	      CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
	check("CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE", SONDE_CUPTI_MEMORY_RELEASE,
	      CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);

	FIELD(sonde_cupti_marker, CUpti_ActivityMarker2, flags, flags);
	FIELD(sonde_cupti_marker, CUpti_ActivityMarker2, timestamp, timestamp);
	FIELD(sonde_cupti_marker, CUpti_ActivityMarker2, id, id);
	FIELD(sonde_cupti_marker, CUpti_ActivityMarker2, object_kind, objectKind);
	FIELD(sonde_cupti_marker, CUpti_ActivityMarker2, object_id, objectId);
	FIELD(sonde_cupti_marker, CUpti_ActivityMarker2, name, name);
	FIELD(sonde_cupti_marker, CUpti_ActivityMarker2, domain, domain);
	check("CUpti_ActivityMarker2.objectId.pt.threadId",
	      offsetof(struct sonde_cupti_marker, object_id[1]),
	      offsetof(CUpti_ActivityMarker2, objectId.pt.threadId));

	FIELD(sonde_cupti_memory, memory_t, operation, memoryOperationType);
	FIELD(sonde_cupti_memory, memory_t, memory_kind, memoryKind);
	FIELD(sonde_cupti_memory, memory_t, correlation_id, correlationId);
	FIELD(sonde_cupti_memory, memory_t, address, address);
	FIELD(sonde_cupti_memory, memory_t, bytes, bytes);
	FIELD(sonde_cupti_memory, memory_t, timestamp, timestamp);
	FIELD(sonde_cupti_memory, memory_t, process_id, processId);
	FIELD(sonde_cupti_memory, memory_t, device_id, deviceId);
	FIELD(sonde_cupti_memory, memory_t, context_id, contextId);
	FIELD(sonde_cupti_memory, memory_t, stream_id, streamId);
	printf("1..%d\n", n);
	return failed != 0;
}
