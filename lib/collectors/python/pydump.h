/*
 * pydump.h - the file the Python runner hands to `sonde collect python`: what
 * CpuCollector recorded in one process, read back by the python collector
 * (lib/collectors/python/collector.c) and written by the extension
 * (python/sonde/_cpu.c). Native byte order; both ends are the same build.
 *
 *   struct pydump_head
 *   nfns times:     struct pydump_fn, then module and name (no NUL)
 *   nthreads times: struct pydump_thread, then name (no NUL), then n events
 *
 * An event's type is PYD_CALL/PYD_C_CALL (func: an index of the function
 * table; a system call is a call of "syscall:NAME"), PYD_RETURN/PYD_C_RETURN, or PYD_SIZE (func
 * unused, ts: the size of the innermost open call, from sonde.trace_size()).
 */
#ifndef SONDE_PYDUMP_H
#define SONDE_PYDUMP_H

#include <stdint.h>

#define PYDUMP_MAGIC "SONDEPY2"

enum { PYD_CALL = 1, PYD_RETURN, PYD_C_CALL, PYD_C_RETURN, PYD_SIZE };

enum { PYD_F_SYSCALLS_WANTED = 1, PYD_F_SYSCALLS = 2 };

struct pydump_head {
	char magic[8];
	uint32_t pid, nfns, nthreads, flags;
	uint64_t t0, t1;		/* start and stop, CLOCK_MONOTONIC ns */
	uint64_t events, dropped, lost; /* recorded, dropped from full rings, no ring */
	uint64_t sc_events, sc_lost;	/* system calls (entries and exits), lost by the kernel */
	char note[240];			/* why system calls were not recorded */
};

struct pydump_fn {
	uint64_t line;
	uint32_t module_len, name_len;
};

struct pydump_thread {
	uint32_t tid, name_len;
	uint64_t n;
};

struct pydump_ev {
	uint32_t type;
	uint32_t func;
	uint64_t ts;
};

#endif
