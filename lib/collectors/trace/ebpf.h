/*
 * ebpf.h - what the trace collector's BPF programs (trace.bpf.c) and their
 * loader (ebpf.c) share: the probe table, the per-thread call stack, the
 * events of the ring buffer, and the counters.
 *
 * Every probe carries a cookie, its index in the probe table. A function's
 * entry uprobe pushes a frame on its thread's stack (entry time, stack pointer,
 * size); its uretprobe pops it. The stack is kept per thread and per depth, so
 * recursion and threads never share a slot. Frames whose stack pointer shows
 * they were left without a return (longjmp, an exception) are dropped when a
 * later call or return proves it; every event carries the depth of recorded
 * calls, from which the reader closes such calls too.
 *
 * A thread's calls, returns and points wait in its stack's batch (TE_BATCH
 * events) and go to the ring buffer as one record when it is full, and before
 * the thread forks, execs or ends (a crash included); when the loader stops,
 * an iterator over every task sends what threads of traced processes still
 * hold (a daemon that outlived the target).
 */
#ifndef SONDE_TRACE_EBPF_H
#define SONDE_TRACE_EBPF_H

#include <linux/types.h>

#define TE_MAX_DEPTH  64 /* the kernel's limit of pending uretprobes per thread */
#define TE_MAX_PROBES (1u << 16)
#define TE_BATCH      16 /* events a thread sends to the ring buffer at once */
#define TE_COMM	      16
#define TE_PATH	      256

enum te_probe_kind {
	TE_PK_FUNC = 0,	      /* entry uprobe; its uretprobe shares the cookie */
	TE_PK_USDT_BEGIN = 1, /* a USDT probe that opens a pair */
	TE_PK_USDT_END = 2,   /* closes the pair opened by probe `pair` */
	TE_PK_USDT_POINT = 3, /* a USDT probe without a pair: a call of no duration */
	TE_PK_SIZE = 4,	      /* sonde_trace_size(n): n is the innermost call's size */
};

struct te_probe {
	__u32 every;   /* record every Nth call (0, 1: all) */
	__u32 pair;    /* USDT: the group, the index of the first site of the pair's first probe */
	__u8 kind;     /* enum te_probe_kind */
	__u8 size_arg; /* 1..6: the call's size is this integer argument */
	__u8 pad[6];
};

enum te_frame_flag {
	TE_FF_SKIP = 1u << 0, /* not recorded (sampling, --depth, a lost event) */
	TE_FF_USDT = 1u << 1, /* a USDT pair, not a function frame */
	TE_FF_SIZE = 1u << 2, /* size is set */
};

struct te_frame {
	__u64 ts, sp, size;
	__u32 probe, flags;
};

enum te_event_type {
	TE_EV_CALL = 1,	 /* probe, ts; rdepth: recorded calls open before it */
	TE_EV_RET = 2,	 /* ts; rdepth: recorded calls open after it; size if TE_FF_SIZE */
	TE_EV_FORK = 3,	 /* pid: the new process, tid: its parent process */
	TE_EV_EXEC = 4,	 /* struct te_exec: pid replaced its image */
	TE_EV_EXIT = 5,	 /* struct te_exit: thread tid ended */
	TE_EV_POINT = 6, /* probe, ts: an unpaired USDT probe fired */
};

struct te_event {
	__u32 type, probe;
	__u32 pid, tid;
	__u64 ts, size;
	__u32 rdepth, flags;
};

struct te_stack {
	__u32 depth;  /* frames */
	__u32 rdepth; /* frames recorded (without TE_FF_SKIP) */
	__u32 gen;    /* its process was traced as of this procs_gen */
	__u32 nb;     /* events in b, not sent yet */
	struct te_frame f[TE_MAX_DEPTH];
	struct te_event b[TE_BATCH]; /* the thread's calls, returns and points, sent together */
};

struct te_exec {
	struct te_event h;
	char filename[TE_PATH];
};

struct te_exit {
	struct te_event h;
	char comm[TE_COMM];
};

enum te_stat {
	TE_ST_RINGBUF_FULL = 0, /* events the ring buffer had no room for */
	TE_ST_NO_SLOT = 1,	/* calls of threads the kernel had no stack for */
	TE_ST_TOO_DEEP = 2,	/* calls deeper than TE_MAX_DEPTH probed frames */
	TE_ST_SAMPLED_OUT = 3,	/* calls sampling left out */
	TE_ST_UNMATCHED = 4,	/* returns without their frame (inherited across fork) */
	TE_ST_N = 5,
};

#ifndef __bpf__
/* ---- the loader (ebpf.c), for the collector ---------------------------------------------- */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sonde/strbuf.h>
#include "../../engines/calltree/binary.h"
#include "../../engines/calltree/calltree.h"

struct te_loader;

/*
 * A loader for an analysis: checks that eBPF tracing can work here (root, BTF),
 * else says what is missing in err and returns -EPERM or -ENOTSUP.
 */
int te_loader__new(struct te_loader **out, struct tr_analysis *a, struct sonde_strbuf *err);
void te_loader__free(struct te_loader *l);

/*
 * Probes, before attach. A function at ELF address `vaddr` of `path`: `rule`
 * set means this sampling wins over an earlier one (every 0: not traced);
 * size_arg 1..6: that integer argument is its calls' size (and it is traced).
 */
int te_loader__func(struct te_loader *l, const char *path, uint64_t vaddr, uint32_t every,
		    bool rule, unsigned size_arg);
/*
 * One site of a USDT probe, kind TE_PK_USDT_BEGIN, _END or _POINT. A pair is a
 * group: its first site's index (*idx of the first call, passed as `group` to
 * the rest; UINT32_MAX starts a group). The group is named provider:name of
 * the site that started it.
 */
int te_loader__usdt(struct te_loader *l, const char *path, const struct tr_usdt *site,
		    enum te_probe_kind kind, uint32_t group, uint32_t every, uint32_t *idx);
/* sonde_trace_size(n) at `vaddr` of `path` sets the innermost call's size. */
int te_loader__size_probe(struct te_loader *l, const char *path, uint64_t vaddr);
size_t te_loader__nprobes(const struct te_loader *l);

/*
 * Load the programs, attach every probe (system-wide, filtered in the kernel by
 * process), and time a probed call of each kind, emulated and single-stepped
 * first instruction (stats.trace.probe_hit_ns, cost_ns_per_call).
 * max_depth: --depth (0: none). Messages for the user go to err.
 */
int te_loader__attach(struct te_loader *l, uint32_t max_depth, size_t ring_bytes,
		      struct sonde_strbuf *err);
/*
 * Follow exec: when a traced process execs a file that has no probes yet, the
 * kernel side stops it, add() puts probes on the new file (te_loader__func),
 * they are attached, and the process goes on; no call of its new image is
 * missed. Set before te_loader__attach; without it an exec'ed file is traced
 * only if it was probed before the run.
 */
typedef int (*te_follow_fn)(void *ctx, struct te_loader *l, const char *path);
void te_loader__follow(struct te_loader *l, te_follow_fn add, void *ctx);
/* How many probes could not be attached (a note says which kinds). */
size_t te_loader__failed(const struct te_loader *l);

/* A run: trace process pid (and the processes it forks) and read its events. */
int te_loader__start(struct te_loader *l, pid_t pid, const char *exe, uint64_t t0);
/* The run's target is gone: read the rest, end its calls. */
int te_loader__stop(struct te_loader *l);
/* Counters of the kernel side since attach (enum te_stat). */
uint64_t te_loader__stat(const struct te_loader *l, enum te_stat which);
/* Whether a stop could not send the batches threads still held (no task iterator). */
bool te_loader__unflushed(const struct te_loader *l);
#endif

#endif
