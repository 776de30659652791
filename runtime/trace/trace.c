/*
 * trace.c - the trace collector's preloaded runtime (libsonde-trace.so).
 *
 * Implements the hooks that gcc and clang call with -finstrument-functions
 * (__cyg_profile_func_enter/exit) and writes one event per hook into an open
 * block of the calling thread's ring (see proto.h): a TSC read, a few stores,
 * no ring operation, no lock, no call. Everything else (a new block, a thread's
 * first event, sampling rules, a stack that was unwound past the hooks) is on a
 * slow path. -pg code calls mcount (__fentry__) at entry only, and -s all
 * records library calls at the executable's PLT: both take the call's return
 * over (hijack.S, "return addresses" below) to see it end.
 *
 * A shadow stack per thread (function and the call's CFA per open call: the
 * stack address just above its return address, see call_cfa) keeps what the
 * reader rebuilds balanced:
 *   - an exit whose function is not the innermost open call ends the calls
 *     above it (exception unwinding that skipped their exit hooks);
 *   - an enter whose CFA lies at or above an open call's shows that call is
 *     gone (longjmp): it is ended there. A callee's CFA is always below its
 *     caller's, whatever the size of either frame;
 *   - a hook re-entered by a signal handler records nothing until the outer
 *     hook returns (counted as lost), so the handler's calls stay balanced.
 * swapcontext: each context (the thread's own stack, and every one it switches
 * to) keeps its open calls apart; a switch saves the running context's under
 * the ucontext it is saved in, restores the target's, and tells the reader,
 * which keeps a call stack per context. A context whose function returns goes
 * on in its uc_link, as glibc does.
 * fork: the child is a new image; the calls open at fork are not its own and
 * stay unrecorded. exec: the new image loads this library again. dlopen: the
 * objects are written again, so that a library loaded late has its names.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sonde/ring.h>
#include <sonde/trace.h>
#include "../../proto/trace.h"
#include "../common/rt.h"

#define BLOCK_BYTES 8192u
#define HDR_WORDS   ((uint32_t)(sizeof(struct tr_block) / 4))
#define CAP_WORDS   (BLOCK_BYTES / 4 - HDR_WORDS)
#define MAX_STACK   4096u
#define SKIP	    ((uintptr_t)1) /* in frame.sp: this call is not recorded */
#define BUSY_OFF    UINTPTR_MAX	   /* busy: set-up running, or the thread is off */
#define FAST_SCAN   16u /* words the hooks' common case looks through for the return address */

struct frame {
	uintptr_t sp; /* the call's CFA (see call_cfa), | SKIP */
	uintptr_t fn;
	uintptr_t site; /* the return address its hooks were given */
};

/*
 * Whether the open call f is over when a call at (cfa, site) starts: its frame
 * is at or below the new one's (longjmp, or an exception, left it). A function
 * inlined into f is given f's own frame and return address, so a new call with
 * f's CFA is f's inlined callee where the sites agree, and a sibling that
 * replaced f where they do not.
 */
static inline bool over(const struct frame *f, uintptr_t cfa, uintptr_t site)
{
	uintptr_t fsp = f->sp & ~SKIP;

	return fsp < cfa || (fsp == cfa && f->site != site);
}

#define MAX_CTX 64 /* contexts tracked per thread; a switch to more is not followed */

#define MAX_HIJACK 4096u /* return addresses a thread's calls may have taken over at once */

/* A call's return address, replaced by sonde_rt_return (see "return addresses"). */
struct hijack {
	uintptr_t slot; /* where it is */
	uintptr_t real; /* what it was */
	uintptr_t key;	/* the call's function, for its exit */
	int32_t plt;	/* a PLT slot to patch again once the dynamic linker bound it; -1 */
	uint32_t tail;	/* a tail call's: it returns with the entry before it, on the same slot */
};

/* A context's open calls while it is switched out. */
struct ctx {
	const void *key;  /* the ucontext_t it is saved in; NULL: running, or done */
	const void *link; /* its uc_link: where it goes when its function returns */
	struct frame *frames;
	uint32_t depth;
};

struct tthread {
	uint32_t *ev;	    /* the open block's event words; NULL: no block */
	uint32_t used, cap; /* words */
	uint64_t base;	    /* tick the block's offsets count from */
	uintptr_t busy;	    /* the frame of the hook running now; 0: none */
	uint32_t depth;	    /* calls open (tracked or not) */
	uint32_t sampled_out, lost;
	uint32_t dropped;	   /* calls of the blocks a full ring dropped, for the next block */
	bool meta_lost, name_lost; /* --drop-oldest dropped the process's description, the name */
	int off; /* 1: this thread records nothing (and busy stays BUSY_OFF); 2: no ring */
	uintptr_t stack_lo, stack_hi;
	struct ctx *ctx; /* MAX_CTX slots, mapped at the first switch; 0 is the thread's own */
	uint32_t nctx, cur;
	struct hijack *hj; /* return addresses taken over, oldest first (mapped at the first) */
	uint32_t nhj;
	bool rehijack; /* they were put back for the unwinder: take the live ones again */
	struct sonde_ring_writer w;
	struct frame stk[MAX_STACK];
};

struct rule {
	uintptr_t addr;
	uint32_t every;
	_Atomic uint32_t count;
};

static struct {
	_Atomic int state; /* 0: not attached, 1: attaching, 2: recording, 3: off */
	struct sonde_ring_area *area;
	uint32_t serial, parent_serial;
	unsigned flags, max_depth;
	uintptr_t exe_lo, exe_hi, exe_bias;
	struct rule *rules;
	uint32_t rule_mask, default_every;
	pthread_key_t key;
	bool key_ok;
} proc;

static __thread struct tthread *T __attribute__((tls_model("initial-exec")));

static inline uint64_t now(void)
{
#if defined(__x86_64__)
	if (likely(proc.flags & TR_F_TSC))
		return __builtin_ia32_rdtsc();
#endif
	{
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
	}
}

/* The clock of the hooks' common case, the TSC. false: not that clock (now() reads the other). */
static inline bool fast_clock(uint64_t *ts)
{
#if defined(__x86_64__)
	if (likely(proc.flags & TR_F_TSC)) {
		*ts = __builtin_ia32_rdtsc();
		return true;
	}
#endif
	(void)ts;
	return false;
}

/* ---- blocks -------------------------------------------------------------------------------- */

static void close_block(struct tthread *t)
{
	struct tr_block *b = (struct tr_block *)(void *)t->ev - 1;

	if (!t->ev)
		return;
	/* what sampling and re-entered hooks left out while this block was open, and
	   the calls of the blocks a full ring dropped */
	b->sampled_out = t->sampled_out;
	b->lost = t->lost;
	b->dropped = t->dropped;
	t->sampled_out = t->lost = t->dropped = 0;
	sonde_ring__close(&t->w, (uint32_t)sizeof(struct tr_block) + t->used * 4);
	t->ev = NULL;
	t->used = t->cap = 0;
}

static void emit_name(struct tthread *t);
static void emit_calib(struct tthread *t);

/*
 * A record of this thread's that its full ring dropped (--drop-oldest), in
 * the writer's thread before the bytes are reused: a block's calls are
 * counted, to go with the thread's next block (with what that block carried,
 * if it was one), and the process's description or the thread's name is sent
 * again before the next block, so that the reader can read the blocks after.
 */
static void dropped_record(struct sonde_ring_writer *w, const void *rec, uint32_t len)
{
	struct tthread *t = (struct tthread *)(void *)((char *)w - offsetof(struct tthread, w));
	const struct tr_block *b = rec;
	uint32_t type = SONDE_RING_REC_TYPE(b->hdr), n, i = 0, calls = 0;

	if (type == TR_REC_NAME) {
		t->name_lost = true;
		return;
	}
	if (type != TR_REC_BLOCK) {
		t->meta_lost = type == TR_REC_PROC || type == TR_REC_MODULE || type == TR_REC_CALIB;
		return;
	}
	if (len < sizeof(*b))
		return;
	for (n = (len - (uint32_t)sizeof(*b)) / 4; i < n && b->ev[i] != TR_FILLER;) {
		uint32_t tag = b->ev[i] >> TR_OFF_BITS;

		if (tag == TR_TAG_EXIT) {
			i += 1;
		} else if (tag == TR_TAG_ENTER) {
			calls++;
			i += i + 1 < n && (b->ev[i + 1] & TR_KEY_FAR) ? 4 : 2;
		} else if (tag == TR_TAG_SPECIAL && i + 1 < n) {
			i += (b->ev[i + 1] >> 24) == TR_SP_SIZE ? 4 : 2;
		} else {
			break;
		}
	}
	t->dropped += calls + b->dropped;
}

/* Send again what --drop-oldest dropped and the reader needs. */
static __attribute__((noinline)) void resend(struct tthread *t)
{
	if (t->meta_lost) {
		t->meta_lost = false;
		rt_emit_proc(&t->w, proc.parent_serial, now());
		rt_emit_modules(&t->w);
		emit_calib(t);
	}
	if (t->name_lost) {
		t->name_lost = false;
		emit_name(t);
	}
}

/* A new block starting at tick ts; false: the event is dropped (counted by the ring). */
static bool open_block(struct tthread *t, uint64_t ts)
{
	struct tr_block *b;

	close_block(t);
	if (unlikely(t->meta_lost || t->name_lost))
		resend(t);
	b = sonde_ring__open(&t->w, TR_REC_BLOCK, BLOCK_BYTES);
	if (!b) {
		/* sonde stopped reading (it is done, or was killed): stop recording, for
		   good, in every thread (HOOK_END leaves this one off) */
		if (sonde_ring_area__reader_gone(proc.area)) {
			atomic_store(&proc.state, 3);
			t->off = 1;
		}
		return false;
	}
	b->sampled_out = b->lost = b->dropped = 0;
	b->base = ts;
	t->ev = b->ev;
	t->cap = CAP_WORDS;
	t->used = 0;
	t->base = ts;
	return true;
}

/*
 * Room for n words at tick ts, and one more: the word after every event is
 * written as filler, so that a block cut at any event (closed, or salvaged
 * after a crash) and padded to 8 bytes ends in filler, never in stale words.
 * NULL: dropped (counted by the ring).
 */
static inline uint32_t *room(struct tthread *t, uint64_t ts, uint32_t n)
{
	if (unlikely(ts - t->base >= TR_OFF_LIMIT || t->used + n + 1 > t->cap || !t->ev))
		if (!open_block(t, ts))
			return NULL;
	return t->ev + t->used;
}

static inline void publish(struct tthread *t, uint32_t n)
{
	t->ev[t->used + n] = TR_FILLER;
	t->used += n;
	sonde_ring__open_fill(&t->w, (uint32_t)sizeof(struct tr_block) + t->used * 4);
}

static void emit_special(struct tthread *t, uint64_t ts, unsigned kind, uint32_t arg,
			 const uint32_t *extra, uint32_t nextra)
{
	uint32_t *e = room(t, ts, 2 + nextra), i;

	if (!e)
		return;
	e[0] = (TR_TAG_SPECIAL << TR_OFF_BITS) | (uint32_t)(ts - t->base);
	e[1] = ((uint32_t)kind << 24) | (arg & 0xffffffu);
	for (i = 0; i < nextra; i++)
		e[2 + i] = extra[i];
	publish(t, 2 + nextra);
}

static void emit_name(struct tthread *t)
{
	struct tr_name *r;

	close_block(t);
	r = sonde_ring__reserve(&t->w, TR_REC_NAME, sizeof(*r));
	if (r) {
		r->pad = 0;
		memset(r->name, 0, sizeof(r->name));
		prctl(PR_GET_NAME, r->name, 0, 0, 0);
		sonde_ring__commit(&t->w);
	}
}

/* ---- set-up ---------------------------------------------------------------------------------- */

static int exe_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (!rt_exec_segment(info, &proc.exe_lo, &proc.exe_hi))
		return 0;
	proc.exe_bias = info->dlpi_addr;
	return 1; /* the first object is the executable */
}

struct rules_load {
	const struct tr_rules *h;
	const char (*names)[TR_RULE_NAME];
	const struct tr_rule *r;
	bool exe_done;
};

static void rule_add(uintptr_t addr, uint32_t every)
{
	uint32_t i = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & proc.rule_mask;

	while (proc.rules[i].addr && proc.rules[i].addr != addr)
		i = (i + 1) & proc.rule_mask;
	proc.rules[i].addr = addr;
	proc.rules[i].every = every;
}

static int rules_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct rules_load *l = arg;
	const char *name = info->dlpi_name, *base;
	uint32_t m, i;
	bool exe = !l->exe_done;

	(void)size;
	l->exe_done = true;
	base = name && *name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	for (m = 0; m < l->h->nmodules; m++) {
		/* module 0 is the executable; the others match by file name */
		if (m == 0 ? !exe : !base || strcmp(base, l->names[m]) != 0)
			continue;
		for (i = 0; i < l->h->nrules; i++)
			if (l->r[i].module == m)
				rule_add(info->dlpi_addr + l->r[i].offset, l->r[i].every);
	}
	return 0;
}

/* Read the rules file into a hash of absolute addresses. false: unusable. */
static bool load_rules(void)
{
	const char *path = rt_env_get(TR_ENV_RULES);
	struct rules_load l = { 0 };
	struct stat st;
	void *map;
	int fd;
	uint32_t n;
	bool ok = false;

	if (!path || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct tr_rules)) {
		map = (void *)syscall(SYS_mmap, NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
				      fd, 0);
		if ((long)map < 0 && (long)map > -4096)
			map = NULL;
		l.h = map;
		if (l.h && l.h->magic == TR_RULES_MAGIC &&
		    sizeof(*l.h) + (size_t)l.h->nmodules * TR_RULE_NAME +
				    (size_t)l.h->nrules * sizeof(struct tr_rule) <=
			    (size_t)st.st_size) {
			l.names = (const void *)(l.h + 1);
			l.r = (const void *)((const char *)(l.h + 1) +
					     (size_t)l.h->nmodules * TR_RULE_NAME);
			for (n = 64; n < l.h->nrules * 2; n <<= 1)
				;
			proc.rules = rt_map_anon(n * sizeof(struct rule));
			if (proc.rules) {
				proc.rule_mask = n - 1;
				proc.default_every = l.h->default_every;
				dl_iterate_phdr(rules_cb, &l);
				ok = true;
			}
		}
		if (l.h)
			rt_unmap(map, (size_t)st.st_size);
	}
	close(fd);
	return ok;
}

static void thread_gone(void *arg)
{
	struct tthread *t = arg;

	if (!t || t != T || t->off)
		return;
	t->busy = BUSY_OFF;
	emit_name(t);
	sonde_ring__retire(&t->w);
	t->off = 1;
}

/* Time enter/exit pairs of the fast path on a private block, before recording. */
extern void sonde_rt_return(void) __attribute__((visibility("hidden")));
static uintptr_t hj_real_of(const struct tthread *t, uintptr_t slot);
static void calibrate(struct tthread *t);

/* First event of a process image. */
static bool attach(void)
{
	int st = atomic_load_explicit(&proc.state, memory_order_acquire), expect = 0, rc;

	if (likely(st == 2))
		return true;
	if (st == 3 || !atomic_compare_exchange_strong(&proc.state, &expect, 1))
		return false;
	if (!proc.area) {
		rc = rt_env_area(TR_ENV_RING, &proc.area);
		if (rc <= 0) { /* 0: too early to tell, the next event asks again */
			atomic_store(&proc.state, rc ? 3 : 0);
			return false;
		}
		proc.flags = rt_env_uint(TR_ENV_FLAGS, 0);
		proc.max_depth = rt_env_uint(TR_ENV_DEPTH, 0);
		dl_iterate_phdr(exe_cb, NULL);
		if ((proc.flags & TR_F_RULES) && !load_rules())
			proc.flags &= ~(unsigned)TR_F_RULES;
	}
	proc.serial = sonde_ring_area__next_serial(proc.area);
	atomic_store_explicit(&proc.state, 2, memory_order_release);
	return true;
}

/*
 * A thread state with its own ring, set as T. parent: the state a forked child
 * inherits (the calls open in it are the parent's: kept, never recorded). The
 * first thread of an image writes the image's records first. NULL: not
 * recording (T is then NULL, or a state whose busy stays BUSY_OFF).
 */
static struct tthread *thread_start(const struct tthread *parent)
{
	bool first = atomic_load(&proc.state) != 2;
	struct tthread *t;
	uint32_t i;

	if (!attach())
		return NULL;
	t = rt_map_anon(sizeof(*t));
	T = t;
	if (!t)
		return NULL;
	t->busy = BUSY_OFF;
	if (!rt_claim_ring(proc.area, proc.serial, &t->w)) {
		/* every ring is taken: this thread's events are counted as lost */
		t->off = 2;
		sonde_ring_area__lost(proc.area, 1);
		return NULL;
	}
	t->w.on_drop = dropped_record;
	if (parent) {
		t->depth = parent->depth;
		for (i = 0; i < parent->depth && i < MAX_STACK; i++) {
			t->stk[i] = parent->stk[i];
			t->stk[i].sp |= SKIP;
		}
		/* the child's stack is a copy: its calls return through the same slots */
		if (parent->nhj && (t->hj = rt_map_anon(sizeof(struct hijack) * MAX_HIJACK))) {
			memcpy(t->hj, parent->hj, sizeof(struct hijack) * parent->nhj);
			t->nhj = parent->nhj;
		}
		t->rehijack = parent->rehijack;
	}
	rt_stack_bounds(&t->stack_lo, &t->stack_hi);
	if (first) {
		rt_emit_proc(&t->w, proc.parent_serial, now());
		rt_emit_modules(&t->w);
		if (!parent && !(proc.flags & TR_F_NO_CALIB))
			calibrate(t);
	}
	emit_name(t);
	if (proc.key_ok)
		pthread_setspecific(proc.key, t);
	t->busy = 0;
	return t;
}

/* The calling thread's state: set up on its first event. NULL: not recording. */
static __attribute__((noinline)) struct tthread *thread_setup(void)
{
	if (T)
		return NULL; /* set-up failed or running: busy is BUSY_OFF */
	return thread_start(NULL);
}

/* ---- the hooks ---------------------------------------------------------------------------------
 */

/* Where call_cfa cannot see the return address: scan the function's frame for it. */
static __attribute__((noinline)) uintptr_t cfa_scan(const struct tthread *t, uintptr_t lo,
						    uintptr_t site)
{
	uintptr_t p, end = lo + 8192;

	if (lo < t->stack_lo || lo >= t->stack_hi)
		return lo + 8; /* another stack (sigaltstack, a coroutine): bounds unknown */
	if (end > t->stack_hi)
		end = t->stack_hi;
	for (p = lo; p + 8 <= end; p += 8)
		if (*(const uintptr_t *)p == site)
			return p + 8;
	return lo + 8;
}

/*
 * The CFA of the instrumented function that called the hook whose frame is hfp:
 * the address above its return address, `site`. With a frame pointer (-O0,
 * -fno-omit-frame-pointer) the one the hook saved, fp, leads to it; otherwise the frame is
 * scanned upward from the hook's own CFA (cfa_near: its first FAST_SCAN words,
 * which the hooks' common case looks through; cfa_scan: farther). Where
 * neither finds it, the hook's CFA plus 8: never above the true CFA, always
 * above a callee's.
 */
static inline uintptr_t cfa_near(const struct tthread *t, uintptr_t hfp, uintptr_t fp,
				 uintptr_t site)
{
	uintptr_t lo = hfp + 16, p;

	if (fp >= lo && fp + 16 <= t->stack_hi && ((const uintptr_t *)fp)[1] == site)
		return fp + 16;
	if (likely(lo >= t->stack_lo && lo + FAST_SCAN * 8 <= t->stack_hi))
		for (p = lo; p < lo + FAST_SCAN * 8; p += 8)
			if (*(const uintptr_t *)p == site)
				return p + 8;
	return 0;
}

static inline uintptr_t call_cfa(const struct tthread *t, uintptr_t hfp, uintptr_t fp,
				 uintptr_t site)
{
	uintptr_t cfa = cfa_near(t, hfp, fp, site);

	return likely(cfa) ? cfa : cfa_scan(t, hfp + 16, site);
}

/* Calls over when a call at (sp, site) starts (see over): end them at ts. */
static __attribute__((noinline)) void unwind_to(struct tthread *t, uintptr_t sp, uintptr_t site,
						uint64_t ts)
{
	uint32_t ended = 0;

	if (sp < t->stack_lo || sp >= t->stack_hi)
		return; /* a signal handler on its own stack: nothing to conclude */
	while (t->depth && t->depth <= MAX_STACK) {
		uintptr_t fsp = t->stk[t->depth - 1].sp;

		if (!over(&t->stk[t->depth - 1], sp, site) || (fsp & ~SKIP) < t->stack_lo)
			break;
		if (!(fsp & SKIP))
			ended++;
		t->depth--;
	}
	if (ended)
		emit_special(t, ts, TR_SP_UNWIND, ended, NULL, 0);
}

/* Whether a call to fn at this depth is recorded (sampling, rules, depth limit). */
static __attribute__((noinline)) bool wanted(struct tthread *t, uintptr_t fn)
{
	uint32_t every = 1;

	if (proc.max_depth && t->depth >= proc.max_depth)
		return false;
	if (!(proc.flags & TR_F_LIBS) && (fn < proc.exe_lo || fn >= proc.exe_hi))
		return false;
	if (proc.flags & TR_F_RULES) {
		uint32_t i = (uint32_t)((fn * 0x9e3779b97f4a7c15ull) >> 40) & proc.rule_mask;

		every = proc.default_every;
		for (; proc.rules[i].addr; i = (i + 1) & proc.rule_mask)
			if (proc.rules[i].addr == fn) {
				every = proc.rules[i].every;
				if (every > 1 && atomic_fetch_add_explicit(&proc.rules[i].count, 1,
									   memory_order_relaxed) %
								 every !=
							 0) {
					t->sampled_out++;
					return false;
				}
				return every != 0;
			}
	}
	return every != 0;
}

static inline void push(struct tthread *t, uintptr_t sp, uintptr_t fn, uintptr_t site)
{
	if (likely(t->depth < MAX_STACK))
		t->stk[t->depth] = (struct frame){ sp, fn, site };
	t->depth++;
}

static inline void record_enter(struct tthread *t, uintptr_t fn, uintptr_t sp, uintptr_t site,
				uint64_t ts)
{
	uint32_t *e;

	if (unlikely(t->depth && t->depth <= MAX_STACK && over(&t->stk[t->depth - 1], sp, site)))
		unwind_to(t, sp, site, ts);
	if (unlikely((proc.flags & (TR_F_RULES | TR_F_LIBS)) || proc.max_depth ||
		     fn - proc.exe_lo >= proc.exe_hi - proc.exe_lo)) {
		if (!wanted(t, fn)) {
			push(t, sp | SKIP, fn, site);
			return;
		}
		if (fn - proc.exe_bias >= TR_KEY_FAR) {
			e = room(t, ts, 4);
			if (!e)
				goto pushed;
			e[0] = (TR_TAG_ENTER << TR_OFF_BITS) | (uint32_t)(ts - t->base);
			e[1] = TR_KEY_FAR;
			e[2] = (uint32_t)fn;
			e[3] = (uint32_t)((uint64_t)fn >> 32);
			publish(t, 4);
			goto pushed;
		}
	}
	e = room(t, ts, 2);
	if (e) {
		e[0] = (TR_TAG_ENTER << TR_OFF_BITS) | (uint32_t)(ts - t->base);
		e[1] = (uint32_t)(fn - proc.exe_bias);
		publish(t, 2);
	}
pushed:
	push(t, sp, fn, site);
}

static inline void emit_exit(struct tthread *t, uint64_t ts)
{
	uint32_t *e = room(t, ts, 1);

	if (e) {
		e[0] = (TR_TAG_EXIT << TR_OFF_BITS) | (uint32_t)(ts - t->base);
		publish(t, 1);
	}
}

/* An exit that is not the innermost open call's: calls above fn's were unwound. */
static __attribute__((noinline)) void exit_slow(struct tthread *t, uintptr_t fn, uint64_t ts)
{
	uint32_t d = t->depth, k, ended = 0;

	if (d > MAX_STACK) { /* too deep to track: trust the hooks */
		t->depth--;
		emit_exit(t, ts);
		return;
	}
	for (k = d; k > 0 && t->stk[k - 1].fn != fn; k--)
		;
	if (!k)
		return; /* not a call this thread saw start (it began before fork) */
	for (d = t->depth; d > k; d--)
		if (!(t->stk[d - 1].sp & SKIP))
			ended++;
	if (ended)
		emit_special(t, ts, TR_SP_UNWIND, ended, NULL, 0);
	t->depth = k - 1;
	if (!(t->stk[k - 1].sp & SKIP))
		emit_exit(t, ts);
}

static void context_done(struct tthread *t, uint64_t ts);

static inline void record_exit(struct tthread *t, uintptr_t fn, uint64_t ts)
{
	uint32_t d = t->depth;

	if (likely(d && d <= MAX_STACK && t->stk[d - 1].fn == fn)) {
		t->depth = d - 1;
		if (likely(!(t->stk[d - 1].sp & SKIP)))
			emit_exit(t, ts);
	} else {
		exit_slow(t, fn, ts);
	}
	if (unlikely(t->cur && !t->depth))
		context_done(t, ts);
}

/* An event not recorded: a hook re-entered, or a thread that found no ring. */
static __attribute__((noinline)) void skipped(struct tthread *t)
{
	if (t->off == 2)
		sonde_ring_area__lost(proc.area, 1);
	else
		t->lost++;
}

/*
 * busy is set before a hook touches the thread's state and cleared after, as
 * a signal handler on this thread sees them: the compiler may not move the
 * state's loads and stores across either (no instruction is emitted).
 */
#define BUSY_FENCE() atomic_signal_fence(memory_order_seq_cst)

/* A hook running while another is (a signal handler interrupted it) records nothing. */
#define HOOK_BEGIN(t, sp, ts)                                                                      \
	do {                                                                                       \
		if (unlikely(!(t))) {                                                              \
			(t) = thread_setup();                                                      \
			if (!(t))                                                                  \
				return;                                                            \
			(ts) = now(); /* the clock is known now */                                 \
		}                                                                                  \
		if (unlikely((t)->busy) && (sp) < (t)->busy) {                                     \
			skipped(t);                                                                \
			return;                                                                    \
		}                                                                                  \
		(t)->busy = (sp);                                                                  \
		BUSY_FENCE();                                                                      \
	} while (0)

/* The hook is done: the thread may take the next one, unless it was turned off. */
#define HOOK_END(t) (BUSY_FENCE(), (t)->busy = unlikely((t)->off) ? BUSY_OFF : 0)

/*
 * The common entry, done without a call: a recorded function of the executable
 * (no rules, no depth limit, no libraries), an open block with room, nothing
 * to unwind. false: nothing was changed; record_enter takes it.
 */
static inline __attribute__((always_inline)) bool
enter_fast(struct tthread *t, uintptr_t fn, uintptr_t cfa, uintptr_t site, uint64_t ts)
{
	uint32_t d = t->depth, u = t->used, *e = t->ev;

	if (unlikely((proc.flags & (TR_F_RULES | TR_F_LIBS)) || proc.max_depth ||
		     fn - proc.exe_lo >= proc.exe_hi - proc.exe_lo || d >= MAX_STACK ||
		     (d && over(&t->stk[d - 1], cfa, site)) || ts - t->base >= TR_OFF_LIMIT ||
		     u + 3 > t->cap || !e))
		return false;
	e[u] = (TR_TAG_ENTER << TR_OFF_BITS) | (uint32_t)(ts - t->base);
	e[u + 1] = (uint32_t)(fn - proc.exe_bias);
	publish(t, 2);
	t->stk[d] = (struct frame){ cfa, fn, site };
	t->depth = d + 1;
	return true;
}

/* The common exit: of the innermost call, recorded, with room in the block. */
static inline __attribute__((always_inline)) bool exit_fast(struct tthread *t, uintptr_t fn,
							    uint64_t ts)
{
	uint32_t d = t->depth, u = t->used, *e = t->ev;

	if (unlikely(!d || d > MAX_STACK || t->stk[d - 1].fn != fn || (t->stk[d - 1].sp & SKIP) ||
		     (d == 1 && t->cur) || ts - t->base >= TR_OFF_LIMIT || u + 2 > t->cap || !e))
		return false;
	e[u] = (TR_TAG_EXIT << TR_OFF_BITS) | (uint32_t)(ts - t->base);
	publish(t, 1);
	t->depth = d - 1;
	return true;
}

/*
 * Every other entry. hfp: the hook's frame, fp: the frame pointer it saved
 * (read there before this tail call, which may write over it); ts: the hook's
 * clock reading, unless the clock is not the TSC.
 */
static __attribute__((noinline)) void enter_slow(void *fn, void *site, uint64_t ts, uintptr_t hfp,
						 uintptr_t fp)
{
	struct tthread *t = T;

	uintptr_t cfa, s = (uintptr_t)site;

	if (!(proc.flags & TR_F_TSC))
		ts = now();
	HOOK_BEGIN(t, hfp, ts);
	cfa = call_cfa(t, hfp, fp, s);
	if (unlikely(s == (uintptr_t)sonde_rt_return) && t->nhj) {
		/* called through a PLT slot whose return is taken over: the library
		   call's frame is this function's (it nests in it) */
		uintptr_t real = hj_real_of(t, cfa - 8);

		s = real ? real : s;
	}
	record_enter(t, (uintptr_t)fn, cfa, s, ts);
	HOOK_END(t);
}

static __attribute__((noinline)) void exit_slow_hook(void *fn, uint64_t ts, uintptr_t hfp)
{
	struct tthread *t = T;

	if (!(proc.flags & TR_F_TSC))
		ts = now();
	HOOK_BEGIN(t, hfp, ts);
	record_exit(t, (uintptr_t)fn, ts);
	HOOK_END(t);
}

/*
 * The hooks. Their common case calls nothing: the clock, the thread's state, the caller's CFA
 * (cfa_near), and enter_fast or exit_fast, with busy set
 * meanwhile so that a signal handler's hooks leave the state alone. Everything else is a tail call
 * of the slow hook. Code built without frame pointers (-O2's default) finds its CFA by the short
 * scan here, not by a call to cfa_scan.
 */
/* Off for good (sonde gone, or never attached): a program that runs on after
   the recording, a daemon, passes through at the cost of one load (through
   the slow hook, one ran at 36 % of its speed). */
#define GONE() unlikely(atomic_load_explicit(&proc.state, memory_order_relaxed) == 3)

RT_EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	uintptr_t hfp = (uintptr_t)__builtin_frame_address(0), fp = ((const uintptr_t *)hfp)[0];
	uintptr_t cfa;
	struct tthread *t;
	uint64_t ts = 0;

	if (GONE())
		return;
	if (likely(fast_clock(&ts))) {
		t = T;
		if (likely(t && !t->busy)) {
			cfa = cfa_near(t, hfp, fp, (uintptr_t)site);
			if (likely(cfa)) {
				t->busy = hfp;
				BUSY_FENCE();
				if (likely(enter_fast(t, (uintptr_t)fn, cfa, (uintptr_t)site,
						      ts))) {
					BUSY_FENCE();
					t->busy = 0;
					return;
				}
				t->busy = 0;
			}
		}
	}
	enter_slow(fn, site, ts, hfp, fp);
}

RT_EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	uintptr_t hfp = (uintptr_t)__builtin_frame_address(0);
	struct tthread *t;
	uint64_t ts = 0;

	(void)site;
	if (GONE())
		return;
	if (likely(fast_clock(&ts))) {
		t = T;
		if (likely(t && !t->busy)) {
			t->busy = hfp;
			BUSY_FENCE();
			if (likely(exit_fast(t, (uintptr_t)fn, ts))) {
				BUSY_FENCE();
				t->busy = 0;
				return;
			}
			t->busy = 0;
		}
	}
	exit_slow_hook(fn, ts, hfp);
}

/* libsonde's sonde_trace_size(), while this runtime is loaded: the size of the
   innermost open call, for complexity models. */
RT_EXPORT void sonde_trace_size(unsigned long long n)
{
	uint64_t ts = now();
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	struct tthread *t = T;
	uint32_t w[2] = { (uint32_t)n, (uint32_t)(n >> 32) };

	HOOK_BEGIN(t, sp, ts);
	emit_special(t, ts, TR_SP_SIZE, 0, w, 2);
	HOOK_END(t);
}

/*
 * A library loaded now: tell the reader where it lies, so that its functions
 * get their names (the objects loaded at start were written with the process).
 */
RT_EXPORT void *dlopen(const char *file, int mode)
{
	static void *(*real_dlopen)(const char *, int);
	const void *caller = __builtin_return_address(0);
	struct tthread *t = T;
	void *h;

	if (!real_dlopen)
		real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	if ((uintptr_t)caller == (uintptr_t)sonde_rt_return && t) {
		/* called through the PLT, its return taken over: the real caller's */
		uintptr_t real = hj_real_of(t, (uintptr_t)__builtin_frame_address(0) + 8);

		caller = real ? (const void *)real : caller;
	}
	h = real_dlopen ? rt_dlopen_as(real_dlopen, file, mode, caller) : NULL;
	if (!h)
		return NULL;
	if (!t)
		t = thread_setup();
	if (t && !t->off && !t->busy) {
		t->busy = BUSY_OFF;
		close_block(t);
		rt_emit_modules(&t->w);
		t->busy = 0;
	}
	return h;
}

/* ---- return addresses (mcount, the PLT) ------------------------------------------------------ */

/*
 * A -pg function's exit and a library call's return have no hook of their
 * own: the call's return address in the stack is replaced by
 * sonde_rt_return (hijack.S), whose C side below records the exit and gives
 * the real address back. Each thread keeps what it replaced, newest last. A
 * tail call into a -pg function finds its caller's slot replaced already and
 * stacks a second entry on the same slot: both end together. An entry whose
 * slot lies below a returning one's, on the thread's stack, was left without
 * a return (longjmp): it is dropped. Before the unwinder reads the stack (an
 * exception, pthread_exit) every real address is put back; the next entry,
 * or the catch, takes the slots of the calls still running again.
 */
#define HIDDEN __attribute__((visibility("hidden")))
extern void sonde_rt_plt(void) HIDDEN;
/* called from hijack.S */
HIDDEN uintptr_t sonde_rt_hj_return(uintptr_t cfa);
HIDDEN void sonde_rt_mcount(uintptr_t site, uintptr_t *slot);
HIDDEN void *sonde_rt_unwind_prep(int what);
HIDDEN uintptr_t sonde_rt_plt_enter(uintptr_t index, uintptr_t *slot);
/* glibc's and libstdc++'s, interposed */
RT_EXPORT void __monstartup(unsigned long lo, unsigned long hi);
RT_EXPORT void _mcleanup(void);
RT_EXPORT void *__cxa_begin_catch(void *e);
RT_EXPORT void pthread_exit(void *ret) __attribute__((noreturn));
#define TRAMPOLINE ((uintptr_t)sonde_rt_return)

static __attribute__((noreturn, noinline)) void hj_lost(void)
{
	static const char msg[] = "sonde: a traced call's return address was lost\n";

	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	abort();
}

/* Room for one more entry (mapped at the thread's first). */
static bool hj_room(struct tthread *t)
{
	if (!t->hj && !(t->hj = rt_map_anon(sizeof(struct hijack) * MAX_HIJACK)))
		return false;
	return t->nhj < MAX_HIJACK;
}

static inline bool on_stack(const struct tthread *t, uintptr_t a)
{
	return a >= t->stack_lo && a < t->stack_hi;
}

/* The real return address of a slot taken over already (the caller of a tail call); 0: none. */
static uintptr_t hj_real_of(const struct tthread *t, uintptr_t slot)
{
	uint32_t i;

	for (i = t->nhj; i > 0; i--)
		if (t->hj[i - 1].slot == slot)
			return t->hj[i - 1].real;
	return 0;
}

/*
 * The calls still running after the unwinder's pass get the trampoline back:
 * those above the frame at `below` (a call starting there, or the catch). The
 * others are gone (their exits are recorded by the stack's next unwinding).
 */
static void hj_retake(struct tthread *t, uintptr_t below)
{
	uint32_t i, n = 0;

	for (i = 0; i < t->nhj; i++) {
		struct hijack *h = &t->hj[i];
		uintptr_t *s = (uintptr_t *)h->slot;

		if (on_stack(t, h->slot) && on_stack(t, below) && h->slot < below)
			continue; /* below the live frames: unwound */
		if (*s == h->real)
			*s = TRAMPOLINE;
		if (*s == TRAMPOLINE)
			t->hj[n++] = *h;
	}
	t->nhj = n;
	t->rehijack = false;
}

/* Put every real return address back (newest first: a slot's newest entry is its live one). */
static void hj_restore(struct tthread *t)
{
	uint32_t i;

	for (i = t->nhj; i > 0; i--) {
		uintptr_t *s = (uintptr_t *)t->hj[i - 1].slot;

		if (*s == TRAMPOLINE)
			*s = t->hj[i - 1].real;
	}
	if (t->nhj)
		t->rehijack = true;
}

/*
 * A call starts at slot (its return address's place): record it as key and
 * take its return over. A slot taken already is a tail call's, which ends with
 * its caller. false: not followed (no room), nothing recorded.
 */
static bool hj_enter(struct tthread *t, uintptr_t *slot, uintptr_t key, int32_t plt, uint64_t ts)
{
	uintptr_t real;

	bool tail;

	if (unlikely(t->rehijack))
		hj_retake(t, (uintptr_t)slot);
	real = *slot;
	tail = real == TRAMPOLINE;
	if (tail && !(real = hj_real_of(t, (uintptr_t)slot)))
		return false;
	/* entries at or below a new call's slot on this stack are gone (their calls
	   returned past a longjmp, or a vfork child left them) */
	while (!tail && t->nhj && on_stack(t, t->hj[t->nhj - 1].slot) &&
	       on_stack(t, (uintptr_t)slot) && t->hj[t->nhj - 1].slot <= (uintptr_t)slot)
		t->nhj--;
	if (!hj_room(t)) {
		t->lost++;
		return false;
	}
	record_enter(t, key, (uintptr_t)slot + 8, real, ts);
	t->hj[t->nhj++] = (struct hijack){ (uintptr_t)slot, real, key, plt, tail };
	*slot = TRAMPOLINE;
	return true;
}

static void plt_rebind(int32_t i);

/* A call taken over returned to sonde_rt_return: its CFA is cfa. The real address to go on to. */
HIDDEN uintptr_t sonde_rt_hj_return(uintptr_t cfa)
{
	struct tthread *t = T;
	uintptr_t slot = cfa - 8, hfp = (uintptr_t)__builtin_frame_address(0), real;
	uint64_t ts = now();
	uint32_t i, k, j, n;
	bool rec;

	if (!t || !t->hj)
		hj_lost();
	for (i = t->nhj; i > 0 && t->hj[i - 1].slot != slot; i--)
		;
	if (!i)
		hj_lost();
	for (k = i - 1; k > 0 && t->hj[k].tail && t->hj[k - 1].slot == slot; k--)
		; /* a tail call's entries share the slot: [k, i) */
	real = t->hj[k].real;
	rec = !t->busy && !t->off;
	if (rec) {
		t->busy = hfp;
		BUSY_FENCE();
	}
	for (j = i; j > k; j--) {
		if (rec)
			record_exit(t, t->hj[j - 1].key, ts);
		if (t->hj[j - 1].plt >= 0)
			plt_rebind(t->hj[j - 1].plt);
	}
	/* above them: entries a longjmp left on this stack go; another stack's stay */
	for (j = i, n = k; j < t->nhj; j++)
		if (!(on_stack(t, t->hj[j].slot) && on_stack(t, slot) && t->hj[j].slot < slot))
			t->hj[n++] = t->hj[j];
	t->nhj = n;
	if (rec)
		HOOK_END(t);
	return real;
}

/* mcount and __fentry__ (hijack.S): a -pg function starts; site is in it, slot holds its return. */
HIDDEN void sonde_rt_mcount(uintptr_t site, uintptr_t *slot)
{
	uintptr_t hfp = (uintptr_t)__builtin_frame_address(0);
	struct tthread *t;
	uint64_t ts;

	if (GONE()) /* no return taken over: the call returns as it would */
		return;
	t = T;
	ts = now();

	HOOK_BEGIN(t, hfp, ts);
	hj_enter(t, slot, site, -1, ts);
	HOOK_END(t);
}

/* glibc's profiling start and end, which -pg programs call: no gmon.out, no SIGPROF. */
RT_EXPORT void __monstartup(unsigned long lo, unsigned long hi)
{
	(void)lo;
	(void)hi;
}

RT_EXPORT void _mcleanup(void)
{
}

/*
 * The unwinder's entries (hijack.S): the real return addresses go back
 * before it reads the stack; what = 0 _Unwind_RaiseException, 1 _Unwind_Resume,
 * 2 _Unwind_ForcedUnwind, 3 _Unwind_Resume_or_Rethrow, 4 _Unwind_Backtrace.
 * Returns the real function.
 */
HIDDEN void *sonde_rt_unwind_prep(int what)
{
	static const char *const names[] = { "_Unwind_RaiseException", "_Unwind_Resume",
					     "_Unwind_ForcedUnwind", "_Unwind_Resume_or_Rethrow",
					     "_Unwind_Backtrace" };
	static void *real[5];
	struct tthread *t = T;
	void *f;

	if (t && t->nhj) {
		uintptr_t saved = t->busy;

		t->busy = BUSY_OFF; /* a signal handler's calls leave the entries alone */
		BUSY_FENCE();
		hj_restore(t);
		BUSY_FENCE();
		t->busy = saved;
	}
	f = __atomic_load_n(&real[what], __ATOMIC_ACQUIRE);
	if (!f) {
		f = dlsym(RTLD_NEXT, names[what]);
		if (!f) {
			static const char msg[] = "sonde: the unwinder (libgcc_s) is not loaded\n";

			if (write(2, msg, sizeof(msg) - 1) < 0) {
				/* nothing more to do */
			}
			abort();
		}
		__atomic_store_n(&real[what], f, __ATOMIC_RELEASE);
	}
	return f;
}

/*
 * glibc unwinds a thread that exits through libgcc_s, which it loads and
 * calls itself (not through the unwinder's entries here): the real return
 * addresses go back first.
 */
RT_EXPORT void pthread_exit(void *ret)
{
	static void (*real)(void *);
	struct tthread *t = T;

	if (!real)
		real = (void (*)(void *))dlsym(RTLD_NEXT, "pthread_exit");
	if (t && t->nhj) {
		uintptr_t saved = t->busy;

		t->busy = BUSY_OFF;
		BUSY_FENCE();
		hj_restore(t);
		BUSY_FENCE();
		t->busy = saved;
	}
	real(ret);
	__builtin_unreachable();
}

/* A catch begins: the calls above its frame still run, and get their returns taken again. */
RT_EXPORT void *__cxa_begin_catch(void *e)
{
	static void *(*real)(void *);
	struct tthread *t = T;

	if (!real)
		real = (void *(*)(void *))dlsym(RTLD_NEXT, "__cxa_begin_catch");
	if (t && t->rehijack && !t->busy && !t->off) {
		uintptr_t fp = (uintptr_t)__builtin_frame_address(0);

		t->busy = fp;
		BUSY_FENCE();
		unwind_to(t, fp + 16, 0, now());
		hj_retake(t, fp + 16);
		HOOK_END(t);
	}
	return real ? real(e) : NULL;
}

/* ---- library calls at the PLT -------------------------------------------------------------- */

/*
 * -s all: each PLT slot of the executable's (.rela.plt: R_X86_64_JUMP_SLOT)
 * is pointed at a stub of ours (push its index, jump to sonde_rt_plt), which
 * records the call under the key of the executable's PLT stub for it (the
 * analysis names it by .rela.plt) and takes its return over. A slot the
 * dynamic linker has not bound yet (lazy binding) leads to its PLT entry
 * still: the first call binds it, which writes the slot, and its return
 * points the slot at our stub again. Calls that return twice (setjmp, vfork)
 * or read their own return address (dlsym, backtrace) are left alone.
 */
struct plt_slot {
	uintptr_t *got;
	uintptr_t target; /* where the call goes (atomic) */
	uintptr_t key;	  /* the executable's PLT stub for the slot, or the target */
	uintptr_t stub;	  /* ours */
};

static struct {
	struct plt_slot *v;
	uint32_t n;
	uintptr_t relro_lo, relro_hi;
} plt;

static bool plt_skip(const char *name)
{
	static const char *const names[] = {
		/* return twice, or on another stack */
		"setjmp", "_setjmp", "__sigsetjmp", "sigsetjmp", "savectx", "vfork", "__vfork",
		"getcontext", "setcontext", "swapcontext", "clone", "__clone", "clone3",
		/* read their own return address (dlopen is ours, and knows) */
		"dlmopen", "dlsym", "dlvsym", "backtrace", "__libc_dlopen_mode",

		/* the start of the process, the exception machinery (as uftrace leaves them
		   out), and the hooks */
		"__libc_start_main", "__libc_start_main_impl", "__cxa_finalize", "__gmon_start__",
		"__cxa_throw", "__cxa_rethrow", "__cxa_begin_catch", "__cxa_end_catch",
		"__gxx_personality_v0", "mcount", "_mcount", "__fentry__",
		"__cyg_profile_func_enter", "__cyg_profile_func_exit", "_mcleanup",
		"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_ForcedUnwind",
		"_Unwind_Resume_or_Rethrow", "_Unwind_Backtrace", "sonde_trace_size", NULL
	};
	size_t i;

	for (i = 0; names[i]; i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

static void got_write(uintptr_t *got, uintptr_t v)
{
	uintptr_t page = (uintptr_t)got & ~(uintptr_t)4095;
	bool ro = (uintptr_t)got >= plt.relro_lo && (uintptr_t)got < plt.relro_hi;

	if (ro)
		mprotect((void *)page, 4096, PROT_READ | PROT_WRITE);
	__atomic_store_n(got, v, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)page, 4096, PROT_READ);
}

/* A lazily bound slot's first call returned: the dynamic linker wrote its target there. */
static void plt_rebind(int32_t i)
{
	struct plt_slot *p = &plt.v[i];
	uintptr_t v = __atomic_load_n(p->got, __ATOMIC_ACQUIRE);

	if (v != p->stub) {
		__atomic_store_n(&p->target, v, __ATOMIC_RELEASE);
		got_write(p->got, p->stub);
	}
}

/* A call through PLT slot `index`; slot holds its return address. The function to go on to. */
HIDDEN uintptr_t sonde_rt_plt_enter(uintptr_t index, uintptr_t *slot)
{
	struct plt_slot *p = &plt.v[index];
	uintptr_t target = __atomic_load_n(&p->target, __ATOMIC_ACQUIRE);
	uintptr_t hfp = (uintptr_t)__builtin_frame_address(0);
	struct tthread *t = T;
	uint64_t ts = now();
	bool lazy;

	if (unlikely(!t)) {
		t = thread_setup();
		if (!t)
			return target;
		ts = now();
	}
	if (unlikely(t->busy)) {
		if (hfp < t->busy)
			skipped(t);
		return target;
	}
	t->busy = hfp;
	BUSY_FENCE();
	lazy = target >= proc.exe_lo && target < proc.exe_hi; /* the PLT entry: not bound yet */
	hj_enter(t, slot, p->key, lazy ? (int32_t)index : -1, ts);
	HOOK_END(t);
	return target;
}

struct plt_find {
	uintptr_t bias, lo, hi;
	const ElfW(Phdr) * ph;
	uint16_t nph;
	bool done;
};

static int plt_exe_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct plt_find *f = arg;

	(void)size;
	if (!rt_exec_segment(info, &f->lo, &f->hi))
		return 0;
	f->bias = info->dlpi_addr;
	f->ph = info->dlpi_phdr;
	f->nph = info->dlpi_phnum;
	f->done = true;
	return 1;
}

static int by_got(const void *a, const void *b)
{
	const struct plt_slot *x = a, *y = b;

	return ((uintptr_t)x->got > (uintptr_t)y->got) - ((uintptr_t)x->got < (uintptr_t)y->got);
}

/* The executable's PLT stub that jumps through each slot: its key (see plt_slot). */
static void plt_keys(const struct plt_find *f)
{
	const uint8_t *p = (const uint8_t *)f->lo, *end = (const uint8_t *)f->hi;
	struct plt_slot probe, *hit;

	if (end - p > (8 << 20))
		end = p + (8 << 20); /* the PLT leads the code */
	for (; p + 6 <= end; p++) {
		int32_t rel;
		const uint8_t *s = p;

		if (p[0] != 0xff || p[1] != 0x25)
			continue;
		memcpy(&rel, p + 2, 4);
		probe.got = (uintptr_t *)(uintptr_t)(p + 6 + rel);
		hit = bsearch(&probe, plt.v, plt.n, sizeof(*plt.v), by_got);
		if (!hit || hit->key)
			continue;
		if (s > (const uint8_t *)f->lo && s[-1] == 0xf2)
			s--; /* bnd jmp */
		if (s - 4 >= (const uint8_t *)f->lo && s[-4] == 0xf3 && s[-3] == 0x0f &&
		    s[-2] == 0x1e && s[-1] == 0xfa)
			s -= 4; /* endbr64 */
		hit->key = (uintptr_t)s;
	}
}

/* The version the executable asks of its symbol si (name@VERSION), or NULL. */
static const char *plt_version(const ElfW(Half) * versym, const ElfW(Verneed) * vn,
			       const char *strtab, size_t si)
{
	ElfW(Half) want;

	if (!versym || !vn || (want = versym[si] & 0x7fff) < 2)
		return NULL;
	for (;;) {
		const ElfW(Vernaux) *a = (const ElfW(Vernaux) *)((const char *)vn + vn->vn_aux);
		unsigned j;

		for (j = 0; j < vn->vn_cnt; j++) {
			if (a->vna_other == want)
				return strtab + a->vna_name;
			a = (const ElfW(Vernaux) *)((const char *)a + a->vna_next);
		}
		if (!vn->vn_next)
			return NULL;
		vn = (const ElfW(Verneed) *)((const char *)vn + vn->vn_next);
	}
}

/*
 * What a slot not bound yet will be bound to, looked up as the dynamic linker
 * would (a function that never returns, longjmp, would otherwise bind it
 * behind our back on its first call). An interposer of ours is what the
 * linker binds, whatever version is asked; else the version asked. lazy
 * (the slot's PLT entry) when it cannot be told.
 */
static uintptr_t plt_bind(const char *name, const char *version, uintptr_t lazy)
{
	void *any = dlsym(RTLD_DEFAULT, name), *v;
	Dl_info mine, there;

	if (any && dladdr((void *)plt_bind, &mine) && dladdr(any, &there) &&
	    mine.dli_fbase == there.dli_fbase)
		return (uintptr_t)any;
	v = version ? dlvsym(RTLD_DEFAULT, name, version) : any;
	return v ? (uintptr_t)v : lazy;
}

/* Point the executable's PLT slots at our stubs (once, before the program runs). */
static void plt_setup(void)
{
	struct plt_find f = { 0 };
	const ElfW(Dyn) *dyn = NULL, *d;
	const ElfW(Rela) *rela = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Half) *versym = NULL;
	const ElfW(Verneed) *verneed = NULL;
	size_t relsz = 0, n, i, k;
	uint8_t *stubs;

	dl_iterate_phdr(plt_exe_cb, &f);
	if (!f.done)
		return;
	for (i = 0; i < f.nph; i++) {
		if (f.ph[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(f.bias + f.ph[i].p_vaddr);
		else if (f.ph[i].p_type == PT_GNU_RELRO) {
			plt.relro_lo = (f.bias + f.ph[i].p_vaddr) & ~(uintptr_t)4095;
			plt.relro_hi = f.bias + f.ph[i].p_vaddr + f.ph[i].p_memsz;
		}
	}
	for (d = dyn; d && d->d_tag != DT_NULL; d++) {
		/* the dynamic linker relocates these in place, but where .dynamic is read-only */
		uintptr_t v = d->d_un.d_ptr < f.bias ? d->d_un.d_ptr + f.bias : d->d_un.d_ptr;

		if (d->d_tag == DT_JMPREL)
			rela = (const ElfW(Rela) *)v;
		else if (d->d_tag == DT_PLTRELSZ)
			relsz = d->d_un.d_val;
		else if (d->d_tag == DT_SYMTAB)
			symtab = (const ElfW(Sym) *)v;
		else if (d->d_tag == DT_STRTAB)
			strtab = (const char *)v;
		else if (d->d_tag == DT_VERSYM)
			versym = (const ElfW(Half) *)v;
		else if (d->d_tag == DT_VERNEED)
			verneed = (const ElfW(Verneed) *)v;
		else if (d->d_tag == DT_PLTREL && d->d_un.d_val != DT_RELA)
			return;
	}
	n = relsz / sizeof(ElfW(Rela));
	if (!rela || !symtab || !strtab || !n || n > (1u << 20))
		return;
	plt.v = rt_map_anon(n * sizeof(*plt.v));
	stubs = plt.v ? rt_map_anon(n * 32) : NULL;
	if (!stubs)
		return;
	for (i = k = 0; i < n; i++) {
		const ElfW(Sym) *sym = &symtab[ELF64_R_SYM(rela[i].r_info)];
		uintptr_t *got = (uintptr_t *)(f.bias + rela[i].r_offset);

		if (ELF64_R_TYPE(rela[i].r_info) != R_X86_64_JUMP_SLOT || !sym->st_name ||
		    plt_skip(strtab + sym->st_name) || !*got)
			continue;
		plt.v[k].got = got;
		plt.v[k].target = *got;
		if (*got >= f.lo && *got < f.hi) /* not bound yet (lazy binding) */
			plt.v[k].target = plt_bind(
				strtab + sym->st_name,
				plt_version(versym, verneed, strtab, ELF64_R_SYM(rela[i].r_info)),
				*got);
		plt.v[k].key = 0; /* plt_keys finds it */
		k++;
	}
	plt.n = (uint32_t)k;
	/* sorted by slot, without libc's qsort (it may call the program's own malloc) */
	for (i = 1; i < plt.n; i++) {
		struct plt_slot x = plt.v[i];

		for (k = i; k > 0 && by_got(&plt.v[k - 1], &x) > 0; k--)
			plt.v[k] = plt.v[k - 1];
		plt.v[k] = x;
	}
	plt_keys(&f);
	for (i = 0; i < plt.n; i++)
		if (!plt.v[i].key)
			plt.v[i].key = plt.v[i].target; /* no stub found: named by the function */
	for (i = 0; i < plt.n; i++) {
		uint8_t *s = stubs + 32 * i;
		uintptr_t to = (uintptr_t)sonde_rt_plt;
		uint32_t idx = (uint32_t)i;

		s[0] = 0x68; /* push $i */
		memcpy(s + 1, &idx, 4);
		s[5] = 0xff; /* jmp *0(%rip) */
		s[6] = 0x25;
		memset(s + 7, 0, 4);
		memcpy(s + 11, &to, 8);
		plt.v[i].stub = (uintptr_t)s;
	}
	if (mprotect(stubs, n * 32, PROT_READ | PROT_EXEC))
		return;
	for (i = 0; i < plt.n; i++)
		got_write(plt.v[i].got, plt.v[i].stub);
}

/* ---- contexts (swapcontext) ------------------------------------------------------------------ */

/* Save the running context's calls under key, run slot `to` from here. */
static void context_run(struct tthread *t, const void *key, uint32_t to, uint64_t ts)
{
	struct ctx *c = &t->ctx[t->cur], *n = &t->ctx[to];
	uint32_t d = t->depth < MAX_STACK ? t->depth : MAX_STACK;

	if (d && !c->frames && !(c->frames = rt_map_anon(sizeof(struct frame) * MAX_STACK)))
		d = 0; /* cannot keep them: the context comes back with no open call */
	if (d)
		memcpy(c->frames, t->stk, sizeof(struct frame) * d);
	c->depth = d;
	c->key = key;
	if (n->depth) /* a context saved with calls has its frames mapped */
		memcpy(t->stk, n->frames, sizeof(struct frame) * n->depth);
	t->depth = n->depth;
	n->key = NULL;
	t->cur = to;
	emit_special(t, ts, TR_SP_CONTEXT, to, NULL, 0);
}

/* The slot saved under key, or a free one for a context not seen yet. */
static uint32_t context_slot(struct tthread *t, const void *key, bool create)
{
	uint32_t i, free_slot = MAX_CTX;

	if (!t->ctx) {
		if (!create || !(t->ctx = rt_map_anon(sizeof(struct ctx) * MAX_CTX)))
			return MAX_CTX;
		t->nctx = 1;
	}
	for (i = 0; i < t->nctx; i++) {
		if (key && t->ctx[i].key == key)
			return i;
		if (i && i != t->cur && !t->ctx[i].key && !t->ctx[i].depth && free_slot == MAX_CTX)
			free_slot = i; /* a context whose function returned */
	}
	if (!create)
		return MAX_CTX;
	if (free_slot == MAX_CTX && t->nctx < MAX_CTX)
		free_slot = t->nctx++;
	return free_slot;
}

/* The running context's function returned: glibc goes on in its uc_link. */
static __attribute__((noinline)) void context_done(struct tthread *t, uint64_t ts)
{
	uint32_t to = context_slot(t, t->ctx[t->cur].link, false);

	if (to < MAX_CTX)
		context_run(t, NULL, to, ts);
}

static void context_switch(struct tthread *t, const void *save, const ucontext_t *to)
{
	uint64_t ts = now();
	uint32_t i = context_slot(t, to, true);

	if (i == MAX_CTX)
		return;		 /* too many contexts: this switch is not followed */
	if (t->ctx[i].key != to) /* a context not seen yet, in a new or reused slot */
		t->ctx[i].link = to->uc_link;
	context_run(t, save, i, ts);
}

RT_EXPORT int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	static int (*real_swap)(ucontext_t *, const ucontext_t *);
	struct tthread *t = T;

	if (!real_swap)
		real_swap =
			(int (*)(ucontext_t *, const ucontext_t *))dlsym(RTLD_NEXT, "swapcontext");
	if (!real_swap)
		return -1;
	if (t && !t->off && !t->busy && oucp && ucp) {
		t->busy = BUSY_OFF;
		context_switch(t, oucp, ucp);
		t->busy = 0;
	}
	return real_swap(oucp, ucp);
}

/* ---- calibration, process life ------------------------------------------------------------------
 */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#define CALIB_PAIRS 256
static uint64_t calib_x1024; /* the median ticks of an enter/exit pair, times 1024 */

static void calibrate(struct tthread *t)
{
	enum { ROUNDS = 31, PAIRS = CALIB_PAIRS };
	static uint32_t scratch[PAIRS * 3 + 8];
	uint32_t *ev = t->ev, used = t->used, cap = t->cap, depth = t->depth;
	uint32_t sampled_out = t->sampled_out;
	uint64_t base = t->base, r[ROUNDS];
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	int i, j;

	for (i = 0; i < ROUNDS; i++) {
		uint64_t t0 = now();

		t->ev = scratch;
		t->used = 0;
		t->cap = PAIRS * 3 + 4;
		t->base = t0;
		t->depth = 0;
		for (j = 0; j < PAIRS; j++) {
			uint64_t ts = now();

			if (!enter_fast(t, proc.exe_lo, sp, 0, ts))
				record_enter(t, proc.exe_lo, sp, 0, ts);
			ts = now();
			if (!exit_fast(t, proc.exe_lo, ts))
				record_exit(t, proc.exe_lo, ts);
			__asm__ volatile("" ::: "memory");
		}
		r[i] = now() - t0;
	}
	/* the events went to scratch, not the ring: forget them */
	t->ev = ev;
	t->used = used;
	t->cap = cap;
	t->depth = depth;
	t->base = base;
	t->sampled_out = sampled_out;
	sonde_ring__open_fill(&t->w, 0);
	qsort(r, ROUNDS, sizeof(r[0]), cmp_u64);
	calib_x1024 = r[ROUNDS / 2] * 1024 / PAIRS;
	emit_calib(t);
}

/* The calibration record (again, where --drop-oldest dropped it). */
static void emit_calib(struct tthread *t)
{
	struct tr_calib *c;

	if (!calib_x1024)
		return;
	c = sonde_ring__reserve(&t->w, TR_REC_CALIB, sizeof(*c));
	if (c) {
		c->pairs = CALIB_PAIRS;
		c->ticks_x1024 = calib_x1024;
		sonde_ring__commit(&t->w);
	}
}

static void after_fork_child(void)
{
	struct tthread *t = T;

	/* a new image: new serial and ring; the calls open now are the parent's */
	proc.parent_serial = proc.serial;
	if (atomic_load(&proc.state) == 2)
		atomic_store(&proc.state, 0);
	if (t && !t->off) {
		T = NULL;
		thread_start(t);
		/* the parent's copy of the state stays behind, unmapped */
		rt_unmap(t, sizeof(*t));
	}
}

__attribute__((constructor)) static void init(void)
{
	proc.key_ok = pthread_key_create(&proc.key, thread_gone) == 0;
	pthread_atfork(NULL, NULL, after_fork_child);
	rt_env_take("SONDE_TRACE_");
	if (rt_env_uint(TR_ENV_FLAGS, 0) & TR_F_PLT)
		plt_setup();
}

/* The process is exiting: publish this thread's block (others are salvaged). */
__attribute__((destructor)) static void fini(void)
{
	struct tthread *t = T;

	if (t && !t->off && !t->busy) {
		t->busy = BUSY_OFF;
		close_block(t);
		t->busy = 0;
	}
}
