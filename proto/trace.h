/*
 * proto.h - the records the trace runtime writes into its rings.
 *
 * Shared by runtime/trace/ (the writer) and the trace collector (the reader).
 * After the process and module records (rt.h) and one calibration record,
 * a thread writes *blocks*: an open ring record (see sonde_ring__open) filled
 * in place with 32-bit event words, so a call costs 12 bytes and no ring
 * operation. A block is closed when full, when its time offsets would overflow,
 * at thread exit and at process exit; a crashed thread's block is salvaged.
 *
 * Event words (times are offsets from the block's base, in ticks: TSC ticks
 * with TR_F_TSC, else CLOCK_MONOTONIC ns):
 *   EXIT     [00|offset:30]                       the innermost open call returns
 *   ENTER    [01|offset:30] [key]                 a call starts; key bit 31 clear:
 *                                                 the function's address minus the
 *                                                 executable's load bias;
 *            [01|offset:30] [1<<31] [lo] [hi]     set: its absolute address follows
 *   SPECIAL  [11|offset:30] [kind:8|arg:24] ...   see enum tr_special
 *   FILLER   0xffffffff                           ends a block: the writer keeps the
 *                                                 word after its last event filler
 */
#ifndef SONDE_TRACE_PROTO_H
#define SONDE_TRACE_PROTO_H

#include <stdint.h>
#include "rt.h"

#define TR_ENV_RING  "SONDE_TRACE_RING"	 /* path of the ring area */
#define TR_ENV_FLAGS "SONDE_TRACE_FLAGS" /* TR_F_* bits, decimal */
#define TR_ENV_DEPTH "SONDE_TRACE_DEPTH" /* record calls at most this deep (0: all) */
#define TR_ENV_RULES "SONDE_TRACE_RULES" /* path of the rules file (struct tr_rules) */

enum tr_flag {
	TR_F_TSC = 1u << 0,	/* times are TSC ticks */
	TR_F_LIBS = 1u << 1,	/* record functions outside the executable too */
	TR_F_RULES = 1u << 2,	/* consult the rules file for every function */
	TR_F_PLT = 1u << 3,	/* record the executable's calls through its PLT (library calls) */
	TR_F_NO_CALIB = 1u << 4 /* calls come through mcount or the PLT too: the calibration of
				   the -finstrument-functions hooks does not price them */
};

enum tr_rec {
	TR_REC_PROC = RT_REC_PROC,     /* struct rt_proc */
	TR_REC_MODULE = RT_REC_MODULE, /* struct rt_module */
	TR_REC_BLOCK = 3,	       /* struct tr_block + event words */
	TR_REC_CALIB = 4,	       /* struct tr_calib */
	TR_REC_NAME = 5,	       /* struct tr_name: the thread's name */
};

#define TR_TAG_EXIT    0u
#define TR_TAG_ENTER   1u
#define TR_TAG_SPECIAL 3u
#define TR_OFF_BITS    30
#define TR_OFF_LIMIT   (1u << TR_OFF_BITS)
#define TR_KEY_FAR     (1u << 31)
#define TR_FILLER      0xffffffffu /* the word after the last event */

enum tr_special {
	TR_SP_UNWIND = 1,  /* arg calls ended here without their exit hook (longjmp, unwinding) */
	TR_SP_SIZE = 2,	   /* two words: a 64-bit size for the innermost open call */
	TR_SP_CONTEXT = 3, /* the thread runs context arg from here (0: its own stack; others:
			      swapcontext's), each with calls of its own */
};

struct tr_block {
	uint32_t hdr;
	uint32_t sampled_out; /* calls sampling left out while the block was open (set at close) */
	uint32_t lost;	      /* calls a re-entered hook (signal handler) could not record */
	uint32_t dropped;     /* calls of the blocks a full ring dropped since the thread's last
				 block (--drop-oldest; set at close) */
	uint64_t base;	      /* tick the offsets count from */
	uint32_t ev[];
};

struct tr_calib {
	uint32_t hdr;
	uint32_t pairs;	      /* enter/exit pairs timed */
	uint64_t ticks_x1024; /* median ticks per pair, times 1024 */
};

struct tr_name {
	uint32_t hdr;
	uint32_t pad;
	char name[16];
};

/*
 * The rules file (sonde writes it; every process image reads it): which
 * functions to record and how often. Modules are matched by file name.
 */
#define TR_RULES_MAGIC 0x31726c7274646e73ull /* "sndtrlr1" */
struct tr_rules {
	uint64_t magic;
	uint32_t nmodules, nrules;
	uint32_t default_every; /* functions without a rule: 0 skip, N every Nth call */
	uint32_t pad;
	/* then nmodules names of 256 bytes, then nrules struct tr_rule */
};
struct tr_rule {
	uint32_t module;
	uint32_t every;	 /* 0: never, 1: every call, N: every Nth call */
	uint64_t offset; /* the function's file address */
};
#define TR_RULE_NAME 256

#endif
