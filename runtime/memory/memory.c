/*
 * memory.c - the memory collector's preloaded runtime (libsonde-memory.so).
 *
 * Interposes the allocation functions of the C library and the C++ operators
 * new and delete, and writes one record per event into the calling thread's
 * ring (see include/sonde/ring.h): time, operation, address, size and a stack
 * id. Each distinct stack is written once per process image.
 *
 * What makes it safe inside any program:
 *   - the real functions are found with dlsym(RTLD_NEXT); dlsym allocates, so
 *     until they are known allocations come from a static bump buffer that free
 *     recognises and ignores;
 *   - a thread-local guard: anything allocated while a hook is recording (by
 *     libunwind, dl_iterate_phdr, a signal handler that interrupted the hook) is
 *     passed straight through and counted as missed, never recorded twice;
 *   - fork: the child gets a new process serial, its own rings and stack table;
 *   - exec: the new image loads this library again (LD_PRELOAD) and starts over;
 *   - a crash: every committed record is already in shared memory;
 *   - dlopen with RTLD_DEEPBIND would bind the library to the C library's
 *     malloc, past these hooks: the flag is dropped (and counted), as heaptrack
 *     does;
 *   - at exit, libstdc++'s emergency exception pool is given back through
 *     __gnu_cxx::__freeres (as valgrind and heaptrack do), so that a C++
 *     program does not show it as a leak.
 * No stdio, no locks of ours, no symbol lookup inside a hook.
 */
/* mmap and mmap64 are both interposed: keep their names apart */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sonde/ring.h>
#include "../../proto/memory.h"
#include "stack.h"

#define EXPORT RT_EXPORT

/* ---- the real functions, and the allocations made before they are known --------------- */

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	void *(*dlopen)(const char *, int);
	int (*dlclose)(void *);
	void *(*znwm)(size_t);
	void *(*znam)(size_t);
} real;

static _Atomic int resolved; /* 0: not yet, 1: resolving, 2: done */

static _Alignas(64) char boot[1 << 18];
static _Atomic size_t boot_used;

static void *boot_alloc(size_t n, size_t align)
{
	size_t off, want;

	if (align < 16)
		align = 16;
	do {
		off = atomic_load(&boot_used);
		want = ((off + 16 + align - 1) & ~(align - 1)); /* room for the size word */
		if (want + n > sizeof(boot))
			return NULL;
	} while (!atomic_compare_exchange_weak(&boot_used, &off, want + n));
	((size_t *)(void *)(boot + want))[-1] = n;
	return boot + want;
}

static inline bool in_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

static void resolve(void)
{
	int expect = 0;

	if (!atomic_compare_exchange_strong(&resolved, &expect, 1))
		return;
	real.malloc = dlsym(RTLD_NEXT, "malloc");
	real.free = dlsym(RTLD_NEXT, "free");
	real.calloc = dlsym(RTLD_NEXT, "calloc");
	real.realloc = dlsym(RTLD_NEXT, "realloc");
	real.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real.memalign = dlsym(RTLD_NEXT, "memalign");
	real.valloc = dlsym(RTLD_NEXT, "valloc");
	real.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	real.mmap = dlsym(RTLD_NEXT, "mmap");
	real.munmap = dlsym(RTLD_NEXT, "munmap");
	real.dlopen = dlsym(RTLD_NEXT, "dlopen");
	real.dlclose = dlsym(RTLD_NEXT, "dlclose");
	real.znwm = dlsym(RTLD_NEXT, "_Znwm");
	real.znam = dlsym(RTLD_NEXT, "_Znam");
	atomic_store(&resolved, 2);
}

#define READY()                                                                                    \
	(likely(atomic_load_explicit(&resolved, memory_order_acquire) == 2) ||                     \
	 (resolve(), atomic_load(&resolved) == 2))

/* ---- process and thread state ---------------------------------------------------------- */

static struct {
	_Atomic int state; /* 0: not attached, 1: attaching, 2: recording, 3: off */
	struct sonde_ring_area *area;
	uint32_t serial, parent_serial;
	unsigned flags, depth;
	pthread_key_t key;
	bool key_ok;
} proc;

struct tstate {
	int guard; /* 1: recording an event; 2: sonde's own set-up (its allocations are not the
		      target's) */
	int has_ring;
	uint32_t no_ring; /* events since a claim found every ring taken */
	uint32_t missed;
	uintptr_t stack_lo, stack_hi;
	struct sonde_ring_writer w;
};

static __thread struct tstate ts __attribute__((tls_model("initial-exec")));

/* The stack table: 64-bit hash -> id, open addressing, filled with CAS. */
#define STK_BITS 20
struct stk_slot {
	_Atomic uint64_t hash;
	_Atomic uint32_t id;
	uint32_t pad;
};
static struct stk_slot *stk;
static _Atomic uint32_t stk_next;
/*
 * Counts dlclose calls: a library closed leaves its addresses to the next one
 * mapped there, so the same return addresses after it are another stack. The
 * epoch is part of a stack's hash: a stack seen again after a dlclose gets an
 * id (and a STACK record, resolved with the modules known then) of its own.
 */
static _Atomic uint64_t stk_epoch;

/* An event's time: TSC ticks when sonde said the TSC is invariant, else ns. */
static inline uint64_t now_ns(void)
{
	struct timespec t;

#if defined(__x86_64__)
	if (likely(proc.flags & MEM_F_TSC))
		return __builtin_ia32_rdtsc();
#endif
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void thread_gone(void *arg)
{
	(void)arg;
	if (ts.has_ring) {
		ts.has_ring = 0;
		sonde_ring__retire(&ts.w);
	}
}

/* A record was dropped: if sonde stopped reading (done, or killed), stop recording
   for good (recording() then returns at once: no stack walk, no ring). */
static __attribute__((noinline)) void dropped(void)
{
	if (proc.area && sonde_ring_area__reader_gone(proc.area))
		atomic_store(&proc.state, 3);
}

/*
 * The calling thread's ring, claimed on first use. false: nothing can be
 * recorded; the event is counted as lost. A thread that found every ring
 * taken tries again only every 1024 events, so it never waits on each one.
 */
static bool thread_ring(void)
{
	if (likely(ts.has_ring))
		return true;
	if (ts.no_ring && ts.no_ring++ % 1024) {
		sonde_ring_area__lost(proc.area, 1);
		return false;
	}
	ts.guard = 2;
	if (!rt_claim_ring(proc.area, proc.serial, &ts.w)) {
		ts.no_ring += !ts.no_ring;
		sonde_ring_area__lost(proc.area, 1);
		dropped();
		ts.guard = 1;
		return false;
	}
	ts.no_ring = 0;
	ts.has_ring = 1;
	if (proc.key_ok)
		pthread_setspecific(proc.key, (void *)1);
	rt_stack_bounds(&ts.stack_lo, &ts.stack_hi);
	ts.guard = 1;
	return true;
}

static void after_fork_child(void)
{
	/* the child is a new image for the reader: new serial, new rings, new stacks */
	ts.has_ring = 0;
	ts.no_ring = 0;
	proc.parent_serial = proc.serial;
	if (atomic_load(&proc.state) == 2)
		atomic_store(&proc.state, 0);
}

/* Attach to the rings (first event of a process image). Guard held. */
static bool attach(void)
{
	int st = atomic_load_explicit(&proc.state, memory_order_acquire), expect = 0, rc;

	if (likely(st == 2))
		return true;
	if (st == 3 || !atomic_compare_exchange_strong(&proc.state, &expect, 1))
		return false; /* off, or another thread is attaching: skip this event */
	ts.guard = 2;
	if (!proc.area) {
		rc = rt_env_area(MEM_ENV_RING, &proc.area);
		if (rc <= 0) { /* 0: too early to tell, the next event asks again */
			atomic_store(&proc.state, rc ? 3 : 0);
			ts.guard = 1;
			return false;
		}
		proc.flags = rt_env_uint(MEM_ENV_FLAGS, 0);
		proc.depth = rt_env_uint(MEM_ENV_DEPTH, 64);
		if (proc.depth < 1 || proc.depth > MEM_MAX_DEPTH)
			proc.depth = 64;
		rt_stack_modules_changed();
	}
	/* a fresh stack table per image (a forked child must write its own) */
	rt_unmap(stk, sizeof(*stk) << STK_BITS);
	stk = rt_map_anon(sizeof(*stk) << STK_BITS);
	atomic_store(&stk_next, 1);
	proc.serial = sonde_ring_area__next_serial(proc.area);
	if (!stk || !thread_ring()) {
		atomic_store(&proc.state, 3);
		ts.guard = 1;
		return false;
	}
	ts.guard = 2;
	rt_emit_proc(&ts.w, proc.parent_serial, now_ns());
	rt_emit_modules(&ts.w);
	ts.guard = 1;
	atomic_store_explicit(&proc.state, 2, memory_order_release);
	return true;
}

/* ---- records ----------------------------------------------------------------------------- */

static void emit_missed(void)
{
	struct mem_missed *r = sonde_ring__reserve(&ts.w, MEM_REC_MISSED, sizeof(*r));

	if (r) {
		r->count = ts.missed;
		sonde_ring__commit(&ts.w);
	}
	ts.missed = 0;
}

static uint64_t hash_stack(const uint64_t *pc, int n, uint64_t epoch)
{
	uint64_t h = (0xcbf29ce484222325ull ^ (uint64_t)n) + epoch;
	int i;

	for (i = 0; i < n; i++) {
		h ^= pc[i];
		h *= 0x9e3779b97f4a7c15ull;
		h ^= h >> 32;
	}
	return h ? h : 1;
}

/* Write stack id's record (a stack used before its record is read is found by
   the analysis all the same: it reads every STACK record of the run first). */
static void write_stack(uint32_t id, const uint64_t *pc, int n, int truncated)
{
	uint32_t len = (uint32_t)(sizeof(struct mem_stack) + (size_t)n * 8);
	struct mem_stack *r = sonde_ring__reserve(&ts.w, MEM_REC_STACK, len);

	if (!r)
		return; /* dropped: the events that name it show "[unknown stack]" */
	r->id = id;
	r->depth = (uint32_t)n;
	r->truncated = (uint32_t)truncated;
	memcpy(r->pc, pc, (size_t)n * 8);
	sonde_ring__commit(&ts.w);
}

static uint32_t new_stack(const uint64_t *pc, int n, int truncated)
{
	uint32_t id = atomic_fetch_add(&stk_next, 1);

	write_stack(id, pc, n, truncated);
	return id;
}

/*
 * The id of this stack, writing it first when it is new to this image. The id
 * is published before the record is written: no thread ever waits for
 * another's record (that one may be waiting for room in its ring, or not
 * running at all, while a hundred others spin here: seconds of stall).
 */
static uint32_t stack_id(void *frame)
{
	uint64_t pc[MEM_MAX_DEPTH];
	int truncated, n = rt_stack_capture(frame, pc, (int)proc.depth, &truncated, ts.stack_lo,
					    ts.stack_hi);
	uint64_t h = hash_stack(pc, n, atomic_load_explicit(&stk_epoch, memory_order_relaxed)),
		 mask = (1ull << STK_BITS) - 1, i;
	uint32_t id;
	int probe;

	for (probe = 0, i = h & mask; probe < 256; probe++, i = (i + 1) & mask) {
		uint64_t cur = atomic_load_explicit(&stk[i].hash, memory_order_acquire);

		if (cur == 0) {
			if (!atomic_compare_exchange_strong(&stk[i].hash, &cur, h) && cur != h)
				continue;
			if (cur == 0) {
				id = atomic_fetch_add(&stk_next, 1);
				atomic_store_explicit(&stk[i].id, id, memory_order_release);
				write_stack(id, pc, n, truncated);
				return id;
			}
		}
		if (cur == h) {
			id = atomic_load_explicit(&stk[i].id, memory_order_acquire);
			/* 0: its id is a few instructions away; a copy of our own meanwhile */
			return id ? id : new_stack(pc, n, truncated);
		}
	}
	return new_stack(pc, n, truncated); /* table crowded: write it again */
}

static __attribute__((noinline)) void record_alloc(unsigned op, void *p, size_t size, void *old,
						   void *frame)
{
	struct mem_realloc *r;
	uint32_t sid;

	ts.guard = 1;
	if (!attach() || !thread_ring())
		goto out;
	if (unlikely(ts.missed))
		emit_missed();
	sid = stack_id(frame);
	r = sonde_ring__reserve(&ts.w, old ? MEM_REC_REALLOC : MEM_REC_ALLOC,
				old ? sizeof(struct mem_realloc) : sizeof(struct mem_alloc));
	if (r) {
		r->stack = sid;
		r->ts_op = MEM_TS_OP(now_ns(), op);
		r->addr = (uint64_t)(uintptr_t)p;
		r->size = size;
		if (old)
			r->old = (uint64_t)(uintptr_t)old;
		sonde_ring__commit(&ts.w);
	} else {
		dropped();
	}
out:
	ts.guard = 0;
}

static __attribute__((noinline)) void record_free(unsigned op, void *p, void *caller)
{
	struct mem_free *r;

	ts.guard = 1;
	if (!attach() || !thread_ring())
		goto out;
	if (unlikely(ts.missed))
		emit_missed();
	r = sonde_ring__reserve(&ts.w, MEM_REC_FREE, sizeof(*r));
	if (r) {
		r->pad = 0;
		r->ts_op = MEM_TS_OP(now_ns(), op);
		r->addr = (uint64_t)(uintptr_t)p;
		r->caller = (uint64_t)(uintptr_t)caller;
		sonde_ring__commit(&ts.w);
	} else {
		dropped();
	}
out:
	ts.guard = 0;
}

static inline bool recording(void)
{
	if (unlikely(ts.guard)) {
		if (ts.guard == 1 && atomic_load_explicit(&proc.state, memory_order_relaxed) == 2)
			ts.missed++;
		return false;
	}
	return atomic_load_explicit(&proc.state, memory_order_relaxed) != 3;
}

#define ON_ALLOC(op, p, n, old)                                                                    \
	do {                                                                                       \
		if ((p) && recording())                                                            \
			record_alloc((op), (p), (n), (old), __builtin_frame_address(0));           \
	} while (0)
#define ON_FREE(op, p)                                                                             \
	do {                                                                                       \
		if ((p) && recording())                                                            \
			record_free((op), (p), __builtin_return_address(0));                       \
	} while (0)

/* C++ operators, by their mangled names */
void *_Znwm(size_t n);
void *_Znam(size_t n);
void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag);
void *_ZnamRKSt9nothrow_t(size_t n, const void *tag);
void _ZdlPv(void *p);
void _ZdaPv(void *p);
void _ZdlPvm(void *p, size_t n);
void _ZdaPvm(void *p, size_t n);
void _ZdlPvRKSt9nothrow_t(void *p, const void *tag);
void _ZdaPvRKSt9nothrow_t(void *p, const void *tag);

/* ---- the interposed functions ------------------------------------------------------------- */

EXPORT void *malloc(size_t n)
{
	void *p;

	if (!READY())
		return boot_alloc(n, 16);
	p = real.malloc(n);
	ON_ALLOC(MEM_OP_MALLOC, p, n, NULL);
	return p;
}

EXPORT void free(void *p)
{
	if (!p || in_boot(p))
		return;
	if (!READY())
		return; /* cannot happen: p came from the real malloc */
	ON_FREE(MEM_OP_FREE, p);
	real.free(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	void *p;

	if (!READY()) {
		if (size && n > SIZE_MAX / size)
			return NULL;
		return boot_alloc(n * size, 16); /* the bump buffer starts zeroed */
	}
	p = real.calloc(n, size);
	ON_ALLOC(MEM_OP_CALLOC, p, n * size, NULL);
	return p;
}

/*
 * realloc and reallocarray (op), one event each. glibc's reallocarray ends in
 * a call to realloc through the PLT, which would be recorded too: it is not
 * called.
 */
static inline __attribute__((always_inline)) void *do_realloc(void *old, size_t n, unsigned op)
{
	void *p;

	if (!READY() || in_boot(old)) {
		size_t had = old ? ((size_t *)old)[-1] : 0;

		p = READY() ? real.malloc(n) : boot_alloc(n, 16);
		if (p && old)
			memcpy(p, old, had < n ? had : n);
		if (p && READY())
			ON_ALLOC(MEM_OP_MALLOC, p, n, NULL);
		return p;
	}
	p = real.realloc(old, n); /* recorded as one event: old freed, p allocated */
	if (p)
		ON_ALLOC(op, p, n, old ? old : NULL);
	else if (old && n == 0)
		ON_FREE(MEM_OP_FREE, old); /* realloc(p, 0) freed p */
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	return do_realloc(old, n, MEM_OP_REALLOC);
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return do_realloc(old, n * size, MEM_OP_REALLOCARRAY);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	int rc;

	if (!READY()) {
		if (!align || (align & (align - 1)) || align % sizeof(void *))
			return EINVAL;
		*out = boot_alloc(n, align);
		return *out ? 0 : ENOMEM;
	}
	rc = real.posix_memalign(out, align, n);
	if (rc == 0)
		ON_ALLOC(MEM_OP_POSIX_MEMALIGN, *out, n, NULL);
	return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	void *p;

	if (!READY())
		return boot_alloc(n, align);
	p = real.aligned_alloc(align, n);
	ON_ALLOC(MEM_OP_ALIGNED_ALLOC, p, n, NULL);
	return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
	void *p;

	if (!READY())
		return boot_alloc(n, align);
	p = real.memalign(align, n);
	ON_ALLOC(MEM_OP_MEMALIGN, p, n, NULL);
	return p;
}

EXPORT void *valloc(size_t n)
{
	void *p;

	if (!READY())
		return boot_alloc(n, 4096);
	p = real.valloc(n);
	ON_ALLOC(MEM_OP_VALLOC, p, n, NULL);
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	void *p;

	if (!READY())
		return boot_alloc((n + 4095) & ~(size_t)4095, 4096);
	p = real.pvalloc(n);
	ON_ALLOC(MEM_OP_PVALLOC, p, (n + 4095) & ~(size_t)4095, NULL);
	return p;
}

/*
 * Whether mmap and munmap are recorded (--mmap): a flag read when the process
 * attaches, so an mmap before any allocation attaches first, and a program
 * that only maps memory is recorded from its first mmap.
 */
static inline bool want_mmap(void)
{
	int st = atomic_load_explicit(&proc.state, memory_order_acquire);
	bool ok;

	/* inside sonde's hook, a mapping is sonde's own (the ring mapping its next
	   pages, the unwinder its cache), not a signal handler's allocation */
	if (ts.guard)
		return false;
	if (likely(st == 2))
		return proc.flags & MEM_F_MMAP;
	if (st == 3)
		return false;
	ts.guard = 1;
	ok = attach();
	ts.guard = 0;
	return ok && (proc.flags & MEM_F_MMAP);
}

static inline __attribute__((always_inline)) void *do_mmap(void *addr, size_t len, int prot,
							   int flags, int fd, off_t off)
{
	void *p;

	if (!READY()) {
		long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);

		if (r < 0 && r > -4096) {
			errno = (int)-r;
			return MAP_FAILED;
		}
		return (void *)r;
	}
	p = real.mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && want_mmap())
		ON_ALLOC(MEM_OP_MMAP, p, len, NULL);
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off);
}

EXPORT int munmap(void *addr, size_t len)
{
	if (!READY())
		return (int)syscall(SYS_munmap, addr, len);
	if (want_mmap())
		ON_FREE(MEM_OP_MUNMAP, addr);
	return real.munmap(addr, len);
}

EXPORT void *dlopen(const char *file, int mode)
{
	bool deepbind = false;
	void *h;

	if (!READY())
		return NULL;
#ifdef RTLD_DEEPBIND
	deepbind = file && (mode & RTLD_DEEPBIND);
	mode &= ~RTLD_DEEPBIND;
#endif
	h = rt_dlopen_as(real.dlopen, file, mode, __builtin_return_address(0));
	if (deepbind && !ts.guard && attach() && thread_ring()) {
		struct mem_missed *r = sonde_ring__reserve(&ts.w, MEM_REC_DEEPBIND, sizeof(*r));

		if (r) {
			r->count = 1;
			sonde_ring__commit(&ts.w);
		}
	}
	if (h && !ts.guard && atomic_load(&proc.state) == 2) {
		ts.guard = 2;
		rt_stack_modules_changed();
		if (thread_ring()) {
			ts.guard = 2;
			rt_emit_modules(&ts.w);
		}
		ts.guard = 0;
	}
	return h;
}

EXPORT int dlclose(void *h)
{
	int rc;

	if (!READY())
		return -1;
	rc = real.dlclose(h);
	if (!ts.guard && atomic_load(&proc.state) == 2) {
		ts.guard = 2;
		rt_stack_modules_changed();
		atomic_fetch_add(&stk_epoch, 1);
		ts.guard = 0;
	}
	return rc;
}

/* C++: operator new/new[] (plain and nothrow), delete/delete[] (plain and sized). */
/*
 * fallback: for the throwing forms, the real operator, called when malloc
 * fails (new_handler, bad_alloc; the malloc it makes is recorded itself).
 */
#define NEW(name, op, fallback, ...)                                                               \
	EXPORT void *name(size_t n, ##__VA_ARGS__)                                                 \
	{                                                                                          \
		void *(*fb)(size_t) = (fallback);                                                  \
		void *p;                                                                           \
                                                                                                   \
		if (!READY())                                                                      \
			return boot_alloc(n, 16);                                                  \
		p = real.malloc(n);                                                                \
		if (unlikely(!p) && fb)                                                            \
			return fb(n);                                                              \
		ON_ALLOC(op, p, n, NULL);                                                          \
		return p;                                                                          \
	}

NEW(_Znwm, MEM_OP_NEW, real.znwm)
NEW(_Znam, MEM_OP_NEW_ARRAY, real.znam)
NEW(_ZnwmRKSt9nothrow_t, MEM_OP_NEW, NULL, const void *tag)
NEW(_ZnamRKSt9nothrow_t, MEM_OP_NEW_ARRAY, NULL, const void *tag)

#define DELETE(name, op, ...)                                                                      \
	EXPORT void name(void *p, ##__VA_ARGS__)                                                   \
	{                                                                                          \
		if (!p || in_boot(p) || !READY())                                                  \
			return;                                                                    \
		ON_FREE(op, p);                                                                    \
		real.free(p);                                                                      \
	}

DELETE(_ZdlPv, MEM_OP_DELETE)
DELETE(_ZdaPv, MEM_OP_DELETE_ARRAY)
DELETE(_ZdlPvm, MEM_OP_DELETE, size_t n)
DELETE(_ZdaPvm, MEM_OP_DELETE_ARRAY, size_t n)
DELETE(_ZdlPvRKSt9nothrow_t, MEM_OP_DELETE, const void *tag)
DELETE(_ZdaPvRKSt9nothrow_t, MEM_OP_DELETE_ARRAY, const void *tag)

/*
 * The thread-exit key and the fork handler are set up here, not in a hook: a
 * hook may run inside fork's prepare handlers, where pthread_atfork would wait
 * for the lock fork holds.
 */
__attribute__((constructor)) static void init(void)
{
	int guard = ts.guard;

	resolve();
	ts.guard = 2; /* what these allocate is sonde's, not the target's */
	proc.key_ok = pthread_key_create(&proc.key, thread_gone) == 0;
	pthread_atfork(NULL, NULL, after_fork_child);
	rt_env_take("SONDE_MEMORY_");
	ts.guard = guard;
}

__attribute__((destructor)) static void fini(void)
{
	void (*freeres)(void);
	int guard = ts.guard;

	if (!READY())
		return;
	ts.guard = 2;
	freeres = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv");
	ts.guard = guard;
	if (freeres)
		freeres(); /* its free is recorded: the pool is not a leak */
}
