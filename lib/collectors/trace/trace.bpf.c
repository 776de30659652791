/*
 * trace.bpf.c - the trace collector's eBPF engine, in the kernel: function
 * entry/exit from uprobes and uretprobes, USDT probe pairs, and the traced
 * processes (fork, exec, exit), into one BPF ring buffer. See ebpf.h.
 *
 * Built with clang -target bpf; the loader (ebpf.c) embeds it as a skeleton.
 * Kernel structures are read through CO-RE (the few fields named below are
 * relocated against the running kernel's BTF), so one object runs on any
 * kernel with BTF.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ebpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

struct linux_binprm {
	const char *filename;
} __attribute__((preserve_access_index));

const volatile __u32 max_depth = 0; /* --depth; 0: no limit */
const volatile __u64 wakeup_bytes = 1u << 20;
/* stop a traced process at exec, until sonde has probed its new image (sonde
   turns it off when it stops reading, so that nothing waits on it) */
volatile __u32 follow_exec = 0;
/* moved on by the loader each time it takes processes out of `procs` */
volatile __u32 procs_gen = 0;
/* set by the loader while it sends what threads still hold (te_flush): no event
   is added to a thread's batch meanwhile */
volatile __u32 draining = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* 1 */
} procs SEC(".maps");

/* each thread's open calls, in its task's local storage: no table to fill,
   one lookup cheaper than a hash's, and freed with the thread */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct te_stack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TE_MAX_PROBES);
	__type(key, __u32);
	__type(value, struct te_probe);
} probes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TE_MAX_PROBES);
	__type(key, __u32);
	__type(value, __u64); /* calls seen, for sampling */
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TE_ST_N);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1u << 24); /* the loader sets the size */
} events SEC(".maps");

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

/* Wake the reader only when the buffer fills up; it polls on a timer otherwise. */
static __always_inline __u64 wakeup(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
}

static __always_inline bool traced(__u64 id)
{
	__u32 tgid = id >> 32;

	return bpf_map_lookup_elem(&procs, &tgid) != NULL;
}

/*
 * The current thread's stack if its process is traced, or NULL. A new stack
 * is zeroed (depth 0), made only when `create`; a traced thread without one
 * counts `missing` (TE_ST_N: nothing). A stack remembers that its process was
 * traced as of procs_gen, so a thread looks its process up in `procs` once,
 * and again after the loader took processes out of it.
 */
static __always_inline struct te_stack *stack_of(__u64 id, bool create, __u32 missing)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 gen = procs_gen;
	struct te_stack *s;

	if (draining)
		return NULL;
	s = bpf_task_storage_get(&stacks, task, 0, 0);
	if (s && s->gen == gen)
		return s;
	if (!traced(id))
		return NULL;
	if (!s && create)
		s = bpf_task_storage_get(&stacks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s && missing < TE_ST_N)
		stat(missing);
	if (s)
		s->gen = gen;
	return s;
}

static __always_inline void forget_stack(void)
{
	bpf_task_storage_delete(&stacks, bpf_get_current_task_btf());
}

/* A process event's record (te_exec, te_exit) with its header filled, or NULL (counted). */
static __always_inline void *reserve(__u64 size, __u32 type, __u64 id)
{
	struct te_event *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e) {
		stat(TE_ST_RINGBUF_FULL);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = type;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts = bpf_ktime_get_ns();
	return e;
}

/*
 * Send the thread's batch as one record of the ring buffer: a reservation and a
 * wake-up check for TE_BATCH events rather than for each. A batch that finds
 * the buffer full is lost whole (counted); the reader closes the calls around
 * it from the depths the next events report.
 */
static __always_inline void flush(struct te_stack *s)
{
	__u32 n = s->nb;

	if (!n)
		return;
	if (n > TE_BATCH)
		n = TE_BATCH;
	if (bpf_ringbuf_output(&events, s->b, n * sizeof(struct te_event), wakeup()))
		stat_add(TE_ST_RINGBUF_FULL, n);
	s->nb = 0;
}

/* A call, return or point of the thread: into its batch, sent when full (or at
   the thread's exit, exec or fork, or when the loader stops). */
static __always_inline void emit(struct te_stack *s, __u32 type, __u32 probe, __u64 id, __u64 ts,
				 __u32 rdepth, const struct te_frame *f)
{
	__u32 n = s->nb; /* < TE_BATCH: a full batch is sent at once */
	struct te_event *e = &s->b[n & (TE_BATCH - 1)];

	e->type = type;
	e->probe = probe;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts = ts;
	e->rdepth = rdepth;
	e->size = f ? f->size : 0;
	e->flags = f ? f->flags : 0;
	s->nb = n + 1;
	if (n + 1 == TE_BATCH)
		flush(s);
}

/* Send what the current thread holds, if it has a stack. */
static __always_inline void flush_current(void)
{
	struct te_stack *s = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);

	if (s)
		flush(s);
}

/*
 * Drop the function frames whose stack pointer is below `limit`: the program
 * left them without returning (longjmp, an exception), as a later call or return
 * higher on the stack shows. A USDT pair's frame stops the walk.
 */
static __always_inline void drop_stale(struct te_stack *s, __u64 limit)
{
	for (int i = 0; i < TE_MAX_DEPTH; i++) {
		__u32 d = s->depth;
		struct te_frame *f;

		if (d == 0 || d > TE_MAX_DEPTH)
			break;
		f = &s->f[(d - 1) & (TE_MAX_DEPTH - 1)];
		if ((f->flags & TE_FF_USDT) || f->sp >= limit)
			break;
		if (!(f->flags & TE_FF_SKIP))
			s->rdepth--;
		s->depth = d - 1;
	}
}

/*
 * Before a function's entry at sp (its return address at sp): drop the frames
 * the program left (below sp, or at sp itself: a later call in the same place).
 * One frame at sp stays: the caller of a tail call. A sibling call jumps to its
 * callee with the caller's return slot in place, and that slot holds the
 * kernel's return trampoline (set when the caller was entered, and kept through
 * a chain of tail calls), which sits at the start of a page; a new call there
 * (after a longjmp) holds a return address into the code.
 */
static __always_inline void drop_before_call(struct te_stack *s, __u64 sp)
{
	__u32 d = s->depth;
	struct te_frame *f;
	__u64 ret = 0;

	if (d && d <= TE_MAX_DEPTH) {
		f = &s->f[(d - 1) & (TE_MAX_DEPTH - 1)];
		if (f->sp > sp || (f->flags & TE_FF_USDT))
			return;	   /* a call below the innermost frame: nothing was left */
		if (f->sp == sp) { /* the return slot is read only here (an unreadable one: 0) */
			bpf_probe_read_user(&ret, sizeof(ret), (const void *)sp);
			if (!(ret & 0xfff))
				return; /* a tail call: the caller stays open until it returns */
		}
	}
	drop_stale(s, sp + 1);
}

/* The Nth integer argument (1..6), by the x86-64 calling convention. */
static __always_inline __u64 int_arg(struct pt_regs *ctx, __u32 n)
{
	/* six fixed loads: the verifier allows no computed offset into ctx */
	__u64 a[6] = { ctx->rdi, ctx->rsi, ctx->rdx, ctx->rcx, ctx->r8, ctx->r9 };

	if (n < 1 || n > 6)
		return 0;
	return a[n - 1];
}

/* A call starts: a function's entry, or a USDT pair's first probe. */
static __always_inline int open_call(struct pt_regs *ctx, __u32 fflags)
{
	__u64 id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx);
	__u32 idx = (__u32)bpf_get_attach_cookie(ctx), d;
	struct te_probe *p;
	struct te_stack *s;
	struct te_frame *f;

	s = stack_of(id, true, TE_ST_NO_SLOT);
	if (!s)
		return 0;
	p = bpf_map_lookup_elem(&probes, &idx);
	if (!p)
		return 0;
	if (!(fflags & TE_FF_USDT)) {
		drop_before_call(s, sp);
	}
	d = s->depth;
	if (d >= TE_MAX_DEPTH) {
		stat(TE_ST_TOO_DEEP); /* the kernel sets no uretprobe this deep either */
		return 0;
	}
	f = &s->f[d & (TE_MAX_DEPTH - 1)];
	f->sp = sp;
	f->probe = (fflags & TE_FF_USDT) ? p->pair : idx; /* a USDT pair: its group */
	f->flags = fflags;
	f->size = 0;
	if (p->size_arg) {
		f->size = int_arg(ctx, p->size_arg);
		f->flags |= TE_FF_SIZE;
	}
	if (max_depth && d >= max_depth) {
		f->flags |= TE_FF_SKIP;
	} else if (p->every > 1) {
		__u64 *n = bpf_map_lookup_elem(&hits, &idx);

		if (n && __sync_fetch_and_add(n, 1) % p->every) {
			f->flags |= TE_FF_SKIP;
			stat(TE_ST_SAMPLED_OUT);
		}
	}
	s->depth = d + 1;
	f->ts = bpf_ktime_get_ns(); /* last, so this handler's own time stays outside */
	if (!(f->flags & TE_FF_SKIP)) {
		emit(s, TE_EV_CALL, f->probe, id, f->ts, s->rdepth, NULL);
		s->rdepth++;
	}
	return 0;
}

/* A call ends: `match` is the stack pointer of its frame (functions) or its begin probe (USDT). */
static __always_inline int close_call(struct pt_regs *ctx, __u64 ts, bool usdt, __u64 match)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct te_stack *s;
	struct te_frame *f;
	__u32 d;

	s = stack_of(id, false, TE_ST_UNMATCHED);
	if (!s)
		return 0;
	drop_stale(s, usdt ? PT_REGS_SP(ctx) : match);
	d = s->depth;
	if (d == 0 || d > TE_MAX_DEPTH) {
		stat(TE_ST_UNMATCHED);
		return 0;
	}
	f = &s->f[(d - 1) & (TE_MAX_DEPTH - 1)];
	if (usdt ? !(f->flags & TE_FF_USDT) || f->probe != (__u32)match
		 : (f->flags & TE_FF_USDT) || f->sp != match) {
		stat(TE_ST_UNMATCHED);
		return 0;
	}
	s->depth = d - 1;
	if (!(f->flags & TE_FF_SKIP)) {
		s->rdepth--;
		emit(s, TE_EV_RET, f->probe, id, ts, s->rdepth, f);
	}
	return 0;
}

SEC("uprobe")
int te_call(struct pt_regs *ctx)
{
	return open_call(ctx, 0);
}

SEC("uretprobe")
int te_return(struct pt_regs *ctx)
{
	/* after `ret` the stack pointer is one slot above the one at entry */
	return close_call(ctx, bpf_ktime_get_ns(), false, PT_REGS_SP(ctx) - 8);
}

SEC("uprobe")
int te_usdt(struct pt_regs *ctx)
{
	__u64 ts = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	__u32 idx = (__u32)bpf_get_attach_cookie(ctx);
	struct te_probe *p = bpf_map_lookup_elem(&probes, &idx);
	struct te_stack *s;

	if (!p)
		return 0;
	if (p->kind == TE_PK_USDT_BEGIN)
		return open_call(ctx, TE_FF_USDT);
	if (p->kind == TE_PK_USDT_END)
		return close_call(ctx, ts, true, p->pair);
	s = stack_of(id, true, TE_ST_NO_SLOT);
	if (!s)
		return 0;
	if (p->every > 1) { /* a point's sampling: every Nth hit */
		__u64 *n = bpf_map_lookup_elem(&hits, &idx);

		if (n && __sync_fetch_and_add(n, 1) % p->every) {
			stat(TE_ST_SAMPLED_OUT);
			return 0;
		}
	}
	emit(s, TE_EV_POINT, p->pair, id, ts, 0, NULL);
	return 0;
}

/* sonde_trace_size(n): n is the size of the innermost open call. */
SEC("uprobe")
int te_size(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct te_stack *s;
	struct te_frame *f;
	__u32 d;

	if (!(s = stack_of(id, false, TE_ST_N)))
		return 0;
	d = s->depth;
	if (d == 0 || d > TE_MAX_DEPTH)
		return 0;
	f = &s->f[(d - 1) & (TE_MAX_DEPTH - 1)];
	f->size = PT_REGS_PARM1(ctx);
	f->flags |= TE_FF_SIZE;
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(te_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 pid = BPF_CORE_READ(child, pid), tgid = BPF_CORE_READ(child, tgid), one = 1;
	__u64 id = bpf_get_current_pid_tgid();
	struct te_stack *s;
	struct te_event *e;

	if (pid != tgid || !traced(id))
		return 0; /* a new thread is traced with its process */
	bpf_map_update_elem(&procs, &pid, &one, BPF_ANY);
	s = stack_of(id, false, TE_ST_N);
	if (s)
		flush(s); /* the parent's events before the fork come first */
	e = reserve(sizeof(*e), TE_EV_FORK, (__u64)pid << 32 | (__u32)(id >> 32));
	if (e)
		bpf_ringbuf_submit(e, wakeup());
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(te_exec, struct task_struct *p, int old_pid, struct linux_binprm *bprm)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct te_exec *e;

	if (!traced(id))
		return 0;
	flush_current();
	forget_stack(); /* the old image's calls never return */
	e = reserve(sizeof(*e), TE_EV_EXEC, id);
	if (!e)
		return 0; /* counted; the process is not stopped: nobody would wake it */
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), BPF_CORE_READ(bprm, filename));
	/* SIGSTOP: sonde probes the new image, then continues it. Queued before sonde
	   hears of the exec: its SIGCONT, however soon, then finds the stop pending
	   (and discards it) or done (and ends it). Queued after, a SIGCONT that came
	   between left the process stopped for good, and sonde waiting for it. */
	if (follow_exec)
		bpf_send_signal(19);
	bpf_ringbuf_submit(e, follow_exec ? BPF_RB_FORCE_WAKEUP : wakeup());
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(te_exit, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct te_exit *e;

	if (!traced(id))
		return 0;
	flush_current(); /* what the thread holds, before its end (a crash included) */
	forget_stack();
	e = reserve(sizeof(*e), TE_EV_EXIT, id);
	if (!e)
		return 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

struct bpf_iter_meta {
	void *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/*
 * Run by the loader when it stops (an iterator over every task): send the
 * batches that threads of traced processes still hold, the threads of a
 * process left running after the target ended. `draining` keeps them from
 * adding to their batches meanwhile.
 */
SEC("iter/task")
int te_flush(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct te_stack *s;
	__u32 tgid;

	if (!task)
		return 0;
	tgid = task->tgid;
	if (!bpf_map_lookup_elem(&procs, &tgid))
		return 0;
	s = bpf_task_storage_get(&stacks, task, 0, 0);
	if (s)
		flush(s);
	return 0;
}
