/*
 * sched.h - what the sched collector's BPF programs (sched.bpf.c) and their
 * loader (collector.c) share: the per-thread and per-system-call records in
 * BPF maps, and the state changes sent through the ring buffer for the
 * timeline. Plain C types only: both clang -target bpf and gcc read it.
 */
#ifndef SONDE_SCHED_BPF_H
#define SONDE_SCHED_BPF_H

#define SC_HIST 32 /* log2 buckets of nanoseconds: bucket k holds [2^k, 2^(k+1)) ns */
#define SC_COMM 16

/* A thread's state, as the timeline shows it. */
enum sc_state {
	SC_UNKNOWN = 0,
	SC_RUNNING,  /* on a CPU */
	SC_RUNNABLE, /* woken or preempted, waiting for a CPU */
	SC_SLEEPING, /* switched out, interruptible: waiting on a timer, a pipe, a lock */
	SC_BLOCKED,  /* switched out, uninterruptible: mostly disk I/O */
	SC_EXITED,
	SC__N
};

/* Why a thread left the CPU; the index of its off-CPU time. */
enum sc_off { SC_OFF_SLEEPING, SC_OFF_BLOCKED, SC_OFF_PREEMPTED, SC_OFF__N };

struct sc_thread {
	unsigned int tgid;
	unsigned int state;	       /* enum sc_state */
	unsigned long long last_ts;    /* when the state was entered */
	unsigned long long runq_start; /* waiting for a CPU since; 0: not waiting */
	unsigned int off_reason;       /* enum sc_off, while off the CPU */
	unsigned int sys_nr;	       /* the system call in progress */
	unsigned long long sys_start;  /* 0: none */
	unsigned long long oncpu_ns, runq_ns, off_ns[SC_OFF__N];
	unsigned long long irq_ns, softirq_ns;
	unsigned long long vol, invol, migrations, wakeups;
	unsigned long long runq_hist[SC_HIST];
	char comm[SC_COMM];
};

struct sc_syscall {
	unsigned long long count, errors, total_ns, max_ns;
	unsigned long long hist[SC_HIST];
};

/* Per CPU: the followed thread on it (0: none), its system call in progress, the interrupt. */
struct sc_cpu {
	unsigned int tid;
	unsigned int sys_nr;
	unsigned long long sys_start; /* 0: none */
	unsigned long long irq_start, softirq_start;
};

/* One state change, for the timeline. */
struct sc_event {
	unsigned long long ts;
	unsigned int tid, tgid;
	unsigned int cpu;
	unsigned int state; /* entered: enum sc_state */
};

/* Per CPU, events gather here and go to the ring SC_BATCH at a time (one copy
   instead of a reservation each); the loader takes what is left at a run's end. */
#define SC_BATCH 32
struct sc_batch {
	unsigned int n;
	unsigned int pad;
	struct sc_event ev[SC_BATCH];
};

/* Counters the programs keep about themselves (per-CPU array indices). */
enum sc_stat {
	SC_ST_RING_DROPS,   /* timeline events the ring had no room for */
	SC_ST_THREAD_DROPS, /* threads the thread map had no room for */
	SC_ST_SYSCALL_DROPS,
	SC_ST_PROC_DROPS, /* processes the process map had no room for */
	/* tracepoint calls the kernel did not deliver to the programs (it skips
	   some while another tracer attaches or detaches on the same tracepoint),
	   seen as a followed thread running where its switch-in was not seen, or
	   switched in while the record says it runs elsewhere */
	SC_ST_MISSED_SWITCHES,
	SC_ST_MISSED_SYSCALLS, /* a call entered while the last one had not exited */
	SC_ST_N
};

/* procs' values: the target waits to exec (sonde's own work before it is not counted) */
#define SC_FOLLOWED 1
#define SC_AT_EXEC  2

#define SC_MAX_THREADS	65536
#define SC_MAX_PROCS	16384
#define SC_MAX_SYSCALLS 1024

#endif
