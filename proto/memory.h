/*
 * proto.h - the records the memory runtime writes into its rings.
 *
 * Shared by runtime/memory/ (the writer) and the memory collector (the reader).
 * Every record starts with the ring's 32-bit header word (type, length). Times
 * are CLOCK_MONOTONIC nanoseconds, the clock sonde itself uses, or with
 * MEM_F_TSC raw TSC ticks (a third of the cost) that sonde maps onto
 * CLOCK_MONOTONIC from two readings of both clocks around the run. Stack ids are
 * per process image (serial): each new stack is written once, before the first
 * event that uses it, in the ring of the thread that saw it first.
 */
#ifndef SONDE_MEMORY_PROTO_H
#define SONDE_MEMORY_PROTO_H

#include <stdint.h>
#include "rt.h"

#define MEM_ENV_RING  "SONDE_MEMORY_RING"  /* path of the ring area */
#define MEM_ENV_FLAGS "SONDE_MEMORY_FLAGS" /* MEM_F_* bits, decimal */
#define MEM_ENV_DEPTH "SONDE_MEMORY_DEPTH" /* maximum stack depth */
#define MEM_MAX_DEPTH 256

enum mem_flag {
	MEM_F_MMAP = 1u << 0, /* record mmap/munmap */
	MEM_F_TSC = 1u << 1,  /* times are TSC ticks (sonde converts them), not ns */
};

enum mem_rec {
	MEM_REC_PROC = RT_REC_PROC,	/* struct rt_proc */
	MEM_REC_MODULE = RT_REC_MODULE, /* struct rt_module */
	MEM_REC_STACK = 3,		/* struct mem_stack + depth return addresses */
	MEM_REC_ALLOC = 4,		/* struct mem_alloc */
	MEM_REC_FREE = 5,		/* struct mem_free */
	MEM_REC_REALLOC = 6,		/* struct mem_realloc */
	MEM_REC_MISSED = 7,   /* struct mem_missed: events a re-entered hook could not record */
	MEM_REC_DEEPBIND = 8, /* struct mem_missed: dlopen calls whose RTLD_DEEPBIND was dropped */
};

enum mem_op {
	MEM_OP_MALLOC,
	MEM_OP_CALLOC,
	MEM_OP_REALLOC,
	MEM_OP_REALLOCARRAY,
	MEM_OP_POSIX_MEMALIGN,
	MEM_OP_ALIGNED_ALLOC,
	MEM_OP_MEMALIGN,
	MEM_OP_VALLOC,
	MEM_OP_PVALLOC,
	MEM_OP_NEW,
	MEM_OP_NEW_ARRAY,
	MEM_OP_MMAP,
	MEM_OP_FREE,
	MEM_OP_DELETE,
	MEM_OP_DELETE_ARRAY,
	MEM_OP_MUNMAP,
	MEM_OP__COUNT,
};

#define MEM_TS_BITS 56
#define MEM_TS_MASK ((1ull << MEM_TS_BITS) - 1)
/* time in the low 56 bits (2.2 years of ns), operation in the top 8 */
#define MEM_TS_OP(ts, op) (((uint64_t)(op) << MEM_TS_BITS) | ((ts)&MEM_TS_MASK))

struct mem_stack {
	uint32_t hdr;
	uint32_t id;
	uint32_t depth;
	uint32_t truncated; /* 1: the walk stopped at the depth limit */
	uint64_t pc[];	    /* return addresses, innermost first */
};

struct mem_alloc {
	uint32_t hdr;
	uint32_t stack;
	uint64_t ts_op;
	uint64_t addr;
	uint64_t size;
};

struct mem_realloc {
	uint32_t hdr;
	uint32_t stack;
	uint64_t ts_op;
	uint64_t addr;
	uint64_t size;
	uint64_t old;
};

struct mem_free {
	uint32_t hdr;
	uint32_t pad;
	uint64_t ts_op;
	uint64_t addr;
	uint64_t caller; /* return address into the code that called free */
};

struct mem_missed {
	uint32_t hdr;
	uint32_t count;
};

#endif
