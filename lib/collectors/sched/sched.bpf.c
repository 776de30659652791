/*
 * sched.bpf.c - the sched collector in the kernel: every scheduler switch,
 * wake-up, migration, interrupt, softirq and system call of the followed
 * processes (the target and what it forks), folded per thread and per system
 * call into BPF maps, and each thread's state changes sent through a ring
 * buffer for the timeline. See sched.h.
 *
 * Filtered in the kernel: a thread counts when its process (tgid) is in
 * procs; sched_process_fork adds a followed process's children. BTF-enabled
 * tracepoints hand over trusted task_struct pointers, read directly (no helper
 * call per field); the few fields read are relocated against the running
 * kernel's BTF (CO-RE).
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "sched.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct task_struct {
	int pid;
	int tgid;
	unsigned int __state;
	char comm[16];
} __attribute__((preserve_access_index));

/* before 5.14 the state was a long named state */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

struct pt_regs;
struct irqaction;

#define TASK_RUNNING	     0x0000
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_NOLOAD	     0x0400

const volatile bool timeline = true;
/* wake the reader only when this much waits in the ring: a wake-up per event
   would make the reader preempt the target at every switch it records */
const volatile __u64 wakeup_bytes = 1u << 20;
/* the target's process, set by the loader at each run: a thread of it found
   running where the CPU's record says nobody followed runs is put back (below) */
__u32 root_tgid;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SC_MAX_PROCS);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* SC_FOLLOWED, or SC_AT_EXEC until the target's exec */
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SC_MAX_THREADS);
	__type(key, __u32); /* tid */
	__type(value, struct sc_thread);
} threads SEC(".maps");

/* per CPU, indexed by the call's number: no lock, no atomic add on a system call */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SC_MAX_SYSCALLS);
	__type(key, __u32); /* system call number */
	__type(value, struct sc_syscall);
} syscalls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sc_cpu);
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SC_ST_N);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1u << 24); /* the loader sets the size */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sc_batch);
} batch SEC(".maps");

static const struct sc_thread zero_thread;

static __always_inline void stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += n;
}

static __always_inline void stat(__u32 which)
{
	stat_add(which, 1);
}

/* floor(log2(v)) for v > 0, else 0; within [0, SC_HIST) */
static __always_inline __u32 log2_bucket(__u64 v)
{
	__u32 r = 0, s;

	s = (v > 0xffffffffull) << 5;
	v >>= s;
	r |= s;
	s = (v > 0xffff) << 4;
	v >>= s;
	r |= s;
	s = (v > 0xff) << 3;
	v >>= s;
	r |= s;
	s = (v > 0xf) << 2;
	v >>= s;
	r |= s;
	s = (v > 0x3) << 1;
	v >>= s;
	r |= s;
	r |= (__u32)(v >> 1);
	return r < SC_HIST ? r : SC_HIST - 1;
}

static __always_inline bool followed(__u32 tgid)
{
	__u32 *v = bpf_map_lookup_elem(&procs, &tgid);

	return v && *v == SC_FOLLOWED;
}

/* The followed thread's record, made at first sight; NULL when not followed. */
static __always_inline struct sc_thread *thread_of(struct task_struct *t, __u64 now)
{
	__u32 tid = t->pid, tgid;
	struct sc_thread *th;

	if (!tid) /* the idle task: half the switches of a program that waits */
		return NULL;
	th = bpf_map_lookup_elem(&threads, &tid);
	if (th)
		return th;
	tgid = t->tgid;
	if (!followed(tgid))
		return NULL;
	if (bpf_map_update_elem(&threads, &tid, &zero_thread, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&threads, &tid)) {
		stat(SC_ST_THREAD_DROPS);
		return NULL;
	}
	th = bpf_map_lookup_elem(&threads, &tid);
	if (th) {
		th->tgid = tgid;
		th->last_ts = now;
		BPF_CORE_READ_STR_INTO(&th->comm, t, comm);
	}
	return th;
}

static __always_inline void enter(struct sc_thread *th, __u32 tid, __u32 state, __u64 now)
{
	__u32 key = 0, n;
	struct sc_batch *b;
	struct sc_event *e;

	th->state = state;
	th->last_ts = now;
	if (!timeline)
		return;
	b = bpf_map_lookup_elem(&batch, &key);
	if (!b)
		return;
	n = b->n < SC_BATCH ? b->n : 0;
	e = &b->ev[n & (SC_BATCH - 1)];
	e->ts = now;
	e->tid = tid;
	e->tgid = th->tgid;
	e->cpu = bpf_get_smp_processor_id();
	e->state = state;
	b->n = n + 1;
	if (b->n < SC_BATCH)
		return;
	b->n = 0;
	if (bpf_ringbuf_output(&events, b->ev, sizeof(b->ev),
			       bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes
				       ? BPF_RB_FORCE_WAKEUP
				       : BPF_RB_NO_WAKEUP))
		stat_add(SC_ST_RING_DROPS, SC_BATCH);
}

static __always_inline unsigned int task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return (unsigned int)((struct task_struct___old *)t)->state;
}

/*
 * A followed thread takes a CPU: its off-CPU time ends, and its system call in
 * progress, if any, moves to the CPU's record.
 */
static __always_inline void switch_in(struct sc_cpu *cpu, struct sc_thread *th, __u32 tid,
				      __u64 now)
{
	if (cpu) {
		cpu->tid = tid;
		cpu->sys_nr = th->sys_nr;
		cpu->sys_start = th->sys_start;
	}
	if (th->state == SC_RUNNING) /* running elsewhere: its switch-out was not delivered */
		stat(SC_ST_MISSED_SWITCHES);
	if (th->state >= SC_RUNNABLE && th->state <= SC_BLOCKED) {
		/* off the CPU since last_ts (the switch-out, or the wake-up) */
		__u32 r = th->off_reason < SC_OFF__N ? th->off_reason : SC_OFF_SLEEPING;
		__u64 off_since = th->state == SC_RUNNABLE && th->off_reason != SC_OFF_PREEMPTED
					  ? 0
					  : th->last_ts;

		if (off_since)
			th->off_ns[r & 3] += now - off_since;
	}
	if (th->runq_start) {
		__u64 d = now - th->runq_start;

		th->runq_ns += d;
		th->runq_hist[log2_bucket(d) & (SC_HIST - 1)]++;
		th->runq_start = 0;
	}
	enter(th, tid, SC_RUNNING, now);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sc_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 key = 0, tid;
	struct sc_thread *th;
	struct sc_cpu *cpu = bpf_map_lookup_elem(&cpus, &key);

	th = thread_of(prev, now);
	if (th) {
		unsigned int s = task_state(prev);

		tid = prev->pid;
		if (cpu && cpu->tid == tid) { /* a system call in progress goes with it */
			th->sys_nr = cpu->sys_nr;
			th->sys_start = cpu->sys_start;
		} else if (cpu) { /* it ran here, but its switch-in was not delivered */
			stat(SC_ST_MISSED_SWITCHES);
		}
		if (th->state == SC_RUNNING)
			th->oncpu_ns += now - th->last_ts;
		if (preempt || s == TASK_RUNNING) { /* still runnable: it waits for a CPU */
			th->invol++;
			th->off_reason = SC_OFF_PREEMPTED;
			th->runq_start = now;
			enter(th, tid, SC_RUNNABLE, now);
		} else if ((s & TASK_UNINTERRUPTIBLE) && !(s & TASK_NOLOAD)) {
			th->vol++;
			th->off_reason = SC_OFF_BLOCKED;
			th->runq_start = 0;
			enter(th, tid, SC_BLOCKED, now);
		} else {
			th->vol++;
			th->off_reason = SC_OFF_SLEEPING;
			th->runq_start = 0;
			enter(th, tid, SC_SLEEPING, now);
		}
	}
	th = thread_of(next, now);
	if (th)
		switch_in(cpu, th, next->pid, now);
	else if (cpu)
		cpu->tid = 0;
	return 0;
}

/* Woken: off-CPU time up to now counts for the reason it left; then it waits for a CPU. */
static __always_inline void woken(struct task_struct *p)
{
	__u64 now = bpf_ktime_get_ns();
	struct sc_thread *th = thread_of(p, now);

	if (!th || th->state == SC_RUNNING || th->state == SC_RUNNABLE)
		return;
	if (th->state == SC_SLEEPING || th->state == SC_BLOCKED) {
		__u32 r = th->off_reason < SC_OFF__N ? th->off_reason : SC_OFF_SLEEPING;

		th->off_ns[r & 3] += now - th->last_ts;
	}
	th->wakeups++;
	th->runq_start = now;
	enter(th, p->pid, SC_RUNNABLE, now);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sc_wakeup, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sc_wakeup_new, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(sc_migrate, struct task_struct *p, int dest_cpu)
{
	__u32 tid = p->pid;
	struct sc_thread *th = bpf_map_lookup_elem(&threads, &tid);

	if (th)
		th->migrations++;
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u32 on = SC_FOLLOWED;

	if (ctgid != ptgid && followed(ptgid) && bpf_map_update_elem(&procs, &ctgid, &on, BPF_ANY))
		stat(SC_ST_PROC_DROPS);
	return 0;
}

struct linux_binprm;

/*
 * A new program. The target is followed from its exec on (what ran before it
 * was sonde's), and it is on a CPU now; a followed thread takes its new name.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(sc_exec, struct task_struct *p, int old_pid, struct linux_binprm *bprm)
{
	__u32 tid = p->pid, tgid = p->tgid, on = SC_FOLLOWED;
	__u32 *v = bpf_map_lookup_elem(&procs, &tgid);
	struct sc_thread *th;
	__u64 now = bpf_ktime_get_ns();

	if (v && *v == SC_AT_EXEC)
		bpf_map_update_elem(&procs, &tgid, &on, BPF_ANY);
	th = thread_of(p, now);
	if (!th)
		return 0;
	BPF_CORE_READ_STR_INTO(&th->comm, p, comm);
	if (th->state != SC_RUNNING) {
		__u32 key = 0;
		struct sc_cpu *c = bpf_map_lookup_elem(&cpus, &key);

		enter(th, tid, SC_RUNNING, now);
		if (c) {
			c->tid = tid;
			c->sys_start = 0;
		}
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sc_exit, struct task_struct *p)
{
	__u32 tid = p->pid;
	struct sc_thread *th = bpf_map_lookup_elem(&threads, &tid);
	__u64 now = bpf_ktime_get_ns();

	if (!th)
		return 0;
	if (th->state == SC_RUNNING)
		th->oncpu_ns += now - th->last_ts;
	enter(th, tid, SC_EXITED, now);
	return 0;
}

/* Interrupts taken on a CPU while a followed thread ran there. */
static __always_inline void irq_enter(bool soft)
{
	__u32 key = 0;
	struct sc_cpu *c = bpf_map_lookup_elem(&cpus, &key);

	if (!c || !c->tid)
		return;
	if (soft)
		c->softirq_start = bpf_ktime_get_ns();
	else
		c->irq_start = bpf_ktime_get_ns();
}

static __always_inline void irq_exit(bool soft)
{
	__u32 key = 0;
	struct sc_cpu *c = bpf_map_lookup_elem(&cpus, &key);
	struct sc_thread *th;
	__u64 start, now;

	if (!c)
		return;
	start = soft ? c->softirq_start : c->irq_start;
	if (!start)
		return;
	if (soft)
		c->softirq_start = 0;
	else
		c->irq_start = 0;
	th = c->tid ? bpf_map_lookup_elem(&threads, &c->tid) : NULL;
	if (!th)
		return;
	now = bpf_ktime_get_ns();
	if (soft)
		th->softirq_ns += now - start;
	else
		th->irq_ns += now - start;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(sc_irq_entry, int irq, struct irqaction *action)
{
	irq_enter(false);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(sc_irq_exit, int irq, struct irqaction *action, int ret)
{
	irq_exit(false);
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(sc_softirq_entry, unsigned int vec)
{
	irq_enter(true);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(sc_softirq_exit, unsigned int vec)
{
	irq_exit(true);
	return 0;
}

/*
 * System calls: the CPU's followed thread (cpus[].tid, set at each switch) is
 * the one calling; the call in progress lives in the CPU's slot while the
 * thread runs, and moves with the thread when it is switched out.
 *
 * The kernel may skip a switch (while another tracer attaches or detaches on
 * sched_switch), so the slot is checked against the calling thread: a slot
 * naming another thread is cleared, and a thread of the target's process
 * found running where the slot names nobody is switched in here. Both count
 * as missed switches. (Other processes of the tree are not looked up on each
 * call of every process on the machine; their calls wait for their next
 * switch, and the missed switch is counted then.)
 */
static __always_inline struct sc_cpu *calling_cpu(void)
{
	__u32 key = 0, tid;
	struct sc_cpu *c = bpf_map_lookup_elem(&cpus, &key);
	struct sc_thread *th;
	__u64 pt;

	if (!c)
		return NULL;
	pt = bpf_get_current_pid_tgid();
	tid = (__u32)pt;
	if (c->tid == tid)
		return tid ? c : NULL;
	if (!c->tid && (__u32)(pt >> 32) != root_tgid)
		return NULL; /* the common case: no followed thread here */
	th = bpf_map_lookup_elem(&threads, &tid);
	if (!th) {	      /* not followed (sonde's child before its exec) */
		if (c->tid) { /* the switch from the followed thread was missed */
			stat(SC_ST_MISSED_SWITCHES);
			c->tid = 0;
		}
		return NULL;
	}
	stat(SC_ST_MISSED_SWITCHES);
	switch_in(c, th, tid, bpf_ktime_get_ns());
	return c;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sc_sys_enter, struct pt_regs *regs, long id)
{
	struct sc_cpu *c = calling_cpu();

	if (!c)
		return 0;
	if (c->sys_start) /* the last call's exit was not delivered */
		stat(SC_ST_MISSED_SYSCALLS);
	c->sys_nr = (__u32)id;
	c->sys_start = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sc_sys_exit, struct pt_regs *regs, long ret)
{
	struct sc_cpu *c = calling_cpu();
	struct sc_syscall *sc;
	__u32 nr;
	__u64 d;

	if (!c || !c->sys_start)
		return 0;
	d = bpf_ktime_get_ns() - c->sys_start;
	c->sys_start = 0;
	nr = c->sys_nr;
	sc = bpf_map_lookup_elem(&syscalls, &nr);
	if (!sc) { /* beyond the table */
		stat(SC_ST_SYSCALL_DROPS);
		return 0;
	}
	sc->count++;
	if (ret < 0)
		sc->errors++;
	sc->total_ns += d;
	if (d > sc->max_ns)
		sc->max_ns = d;
	sc->hist[log2_bucket(d) & (SC_HIST - 1)]++;
	return 0;
}
