/*
 * rt.h - the records every preloaded runtime writes first: which process
 * image it is and which objects it has loaded. Shared by runtime/common/ (the
 * writer) and the collectors that read the rings (memory, trace). Both use
 * record types 1 and 2 for them.
 */
#ifndef SONDE_RT_PROTO_H
#define SONDE_RT_PROTO_H

#include <stdint.h>

#define RT_REC_PROC   1 /* a process image starts: struct rt_proc + exe path */
#define RT_REC_MODULE 2 /* a loaded object: struct rt_module + path */

struct rt_proc {
	uint32_t hdr;
	uint32_t pid;
	uint32_t ppid;
	uint32_t parent_serial; /* the image this one was forked from; 0: none */
	uint64_t ts;
	char exe[]; /* NUL-terminated, padded to 8 */
};

struct rt_module {
	uint32_t hdr;
	uint32_t pad;
	uint64_t bias;	     /* load bias: runtime address = file address + bias */
	uint64_t start, end; /* the executable segment, runtime addresses */
	char path[];	     /* NUL-terminated, padded to 8 */
};

#endif
