/*
 * loader.h - the sched collector's two sources behind one interface: the BPF
 * programs (ebpf.c, where sonde was built with libbpf) and /proc (procfs.c,
 * the fallback without root or BTF). Each run's threads, system calls and
 * timeline events are appended to a struct sc_data.
 */
#ifndef SONDE_SCHED_LOADER_H
#define SONDE_SCHED_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sonde/strbuf.h>
#include "../../ticker.h"
#include "sched.h"

struct sc_thread_rec {
	unsigned run; /* 0-based measured run */
	unsigned tid;
	struct sc_thread t;
};

struct sc_syscall_rec {
	unsigned run;
	unsigned nr;
	struct sc_syscall s;
};

struct sc_event_rec {
	unsigned run;
	struct sc_event e;
};

struct sc_data {
	struct sc_thread_rec *threads;
	size_t nthreads, cap_threads;
	struct sc_syscall_rec *syscalls;
	size_t nsyscalls, cap_syscalls;
	struct sc_event_rec *events;
	size_t nevents, cap_events;
	unsigned long long drops[SC_ST_N];
	unsigned long long oom;	 /* records sonde had no memory for */
	bool too_deep;		 /* /proc: a process tree deeper than 64 levels, cut there */
	struct ticker_late late; /* /proc: readings taken late, over the measured runs */
};

/* ---- eBPF ---- */
struct sc_bpf;

/* Whether this build has the eBPF source. */
bool sc_bpf__built(void);
/*
 * Load the programs (not attached yet). -EPERM without root, -ENOTSUP without
 * BTF or on load failure; err says why in one line.
 */
int sc_bpf__open(struct sc_bpf **out, bool timeline, bool syscalls, size_t ring_bytes,
		 struct sonde_strbuf *err);
/* Follow pid (and what it forks) from now on; attaches the programs the first time. */
int sc_bpf__follow(struct sc_bpf *b, pid_t pid, struct sonde_strbuf *err);
/* The run has ended: move its records into d (run number run) and forget them. */
int sc_bpf__harvest(struct sc_bpf *b, struct sc_data *d, unsigned run, bool keep);
void sc_bpf__free(struct sc_bpf *b);

/* ---- /proc ---- */
struct sc_proc;

int sc_proc__start(struct sc_proc **out, pid_t pid, double interval_ms);
/* The target exited, not reaped: stop sampling and read its threads a last time. */
void sc_proc__last(struct sc_proc *p);
/* Stop sampling, keep the last values seen of every thread as run run's records. */
int sc_proc__stop(struct sc_proc *p, struct sc_data *d, unsigned run, bool keep);
void sc_proc__free(struct sc_proc *p);

void sc_data__release(struct sc_data *d);

#endif
