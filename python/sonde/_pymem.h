/*
 * _pymem.h - sampled allocations of the Python allocator (the CPU collector's
 * memory=True / numa=True): a hook on the interpreter's "mem" and "object"
 * domains (PyMem_SetAllocator, as tracemalloc hooks them) that forwards every
 * call and samples about one allocation every `interval` bytes (exponential
 * gaps, so an allocation of s bytes is sampled with probability
 * 1 - exp(-s / interval) and stands for s over that). The free of a sampled
 * block is an event too; with NUMA, each event says the node of the block's
 * page (libnuma's move_pages query) and an allocation the node of its CPU.
 */
#ifndef SONDE_PYMEM_H
#define SONDE_PYMEM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>
#include <sonde/memsample.h>

#define PY_MEM_INTERVAL (256u * 1024) /* bytes between samples, on average */

/* The calling thread's running Python function (the collector's id); 0 or -1. GIL held. */
typedef int (*py_mem_here_fn)(void *ctx, uint32_t *func);
/* One event (kind: enum sonde_memsample_kind; func UINT32_MAX: none). GIL held. */
typedef void (*py_mem_event_fn)(void *ctx, uint32_t kind, uint32_t func, uint64_t ptr,
				uint64_t size, double weight, int32_t node, int32_t cpu_node);

struct py_mem_stats {
	uint64_t allocations, bytes; /* every allocation the hook saw, sampled or not */
	uint64_t sampled, frees;
};

/*
 * Hook the allocator (GIL held). numa: say nodes, or *why when libnuma cannot
 * (the events then carry -1). -EBUSY when a hook of this kind is on already.
 */
int py_mem__start(uint64_t interval, bool numa, py_mem_here_fn here, py_mem_event_fn event,
		  void *ctx, char *why, size_t whylen);
/* Whether a hook of this kind is on (py_mem__start would say -EBUSY). */
bool py_mem__busy(void);
/* Unhook (GIL held): every sampled block still live is a LIVE event (its node now). */
void py_mem__stop(struct py_mem_stats *st);
/* The machine's NUMA nodes, {nodes: [...]} (libnuma), or {not_supported: why}. */
json_t *py_mem__numa(void);

#endif
