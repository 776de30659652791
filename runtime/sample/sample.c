/*
 * sample.c - libsonde-sample.so, the sampling collector's fallback where
 * perf_event is refused: each thread gets a POSIX timer on its own CPU-time
 * clock that sends it SIGPROF every 1/HZ s of CPU time; the handler walks the
 * frame pointers from the interrupted context (within the thread's stack) and
 * writes the stack into the thread's ring. Threads started with
 * pthread_create are followed (their start routine is wrapped); a forked
 * child starts its own image and timer; an exec'ed program loads this
 * runtime again (LD_PRELOAD is kept for it).
 *
 * Only the handler writes samples; what the threads write themselves (their
 * process and module records) is written with SIGPROF blocked, so a ring
 * never has two writers at once.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sonde/ring.h>
#include "../common/rt.h"
#include "../../proto/rt.h"
#include "../../proto/sample.h"

#define EXPORT RT_EXPORT

static struct {
	_Atomic int state; /* 0: not started, 2: sampling, 3: off */
	struct sonde_ring_area *area;
	uint32_t serial, parent_serial;
	uint64_t interval_ns;
	pthread_key_t key;
	bool key_ok;
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	void *(*dlopen)(const char *, int);
} proc;

struct tstate {
	_Atomic int ready; /* the handler may write */
	bool has_timer;
	timer_t timer;
	uintptr_t stack_lo, stack_hi;
	struct sonde_ring_writer w;
};

static __thread struct tstate ts __attribute__((tls_model("initial-exec")));

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* SIGPROF blocked (or not) in the calling thread; the old mask in old. */
static void block(bool on, sigset_t *old)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	pthread_sigmask(on ? SIG_BLOCK : SIG_SETMASK, on ? &s : old, on ? old : NULL);
}

static void handler(int sig, siginfo_t *si, void *uctx)
{
	const ucontext_t *uc = uctx;
	struct smp_rt_sample *r;
	uint64_t pc[SMP_RT_MAX_DEPTH];
	uintptr_t fp;
	uint32_t n = 0, truncated = 0;
	int saved = errno, over;

	(void)sig;
	(void)si;
	if (!atomic_load_explicit(&ts.ready, memory_order_acquire))
		goto out;
	pc[n++] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	/* frame pointers: [fp] the caller's fp, [fp + 8] the return address */
	while (fp >= ts.stack_lo && fp + 16 <= ts.stack_hi && !(fp & 7)) {
		uintptr_t next = ((const uintptr_t *)fp)[0], ret = ((const uintptr_t *)fp)[1];

		if (!ret)
			break;
		if (n == SMP_RT_MAX_DEPTH) {
			truncated = 1;
			break;
		}
		pc[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	over = ts.has_timer ? timer_getoverrun(ts.timer) : 0;
	r = sonde_ring__reserve(&ts.w, SMP_RT_SAMPLE,
				(uint32_t)(sizeof(*r) + n * sizeof(uint64_t)));
	if (r) {
		r->tid = (uint32_t)syscall(SYS_gettid);
		r->ns = mono_ns();
		r->weight = proc.interval_ns * (uint64_t)(1 + (over > 0 ? over : 0));
		r->n = n;
		r->truncated = truncated;
		memcpy(r->pc, pc, n * sizeof(uint64_t));
		sonde_ring__commit(&ts.w);
	} else if (sonde_ring_area__reader_gone(proc.area)) {
		atomic_store(&proc.state, 3); /* sonde is done: stop sampling */
		atomic_store(&ts.ready, 0);
	}
out:
	errno = saved;
}

/* The calling thread: a ring and a timer on its CPU-time clock. */
static void thread_start(void)
{
	struct sigevent ev;
	struct itimerspec it;

	if (atomic_load(&proc.state) != 2 || ts.ready)
		return;
	if (!rt_claim_ring(proc.area, proc.serial, &ts.w)) {
		sonde_ring_area__lost(proc.area, 1);
		return;
	}
	rt_stack_bounds(&ts.stack_lo, &ts.stack_hi);
	if (proc.key_ok)
		pthread_setspecific(proc.key, (void *)1);
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGPROF;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &ts.timer) == 0) {
		ts.has_timer = true;
		it.it_interval.tv_sec = (time_t)(proc.interval_ns / 1000000000ull);
		it.it_interval.tv_nsec = (long)(proc.interval_ns % 1000000000ull);
		it.it_value = it.it_interval;
		atomic_store_explicit(&ts.ready, 1, memory_order_release);
		timer_settime(ts.timer, 0, &it, NULL);
	}
}

static void thread_gone(void *arg)
{
	sigset_t old;

	(void)arg;
	block(true, &old);
	atomic_store(&ts.ready, 0);
	if (ts.has_timer)
		timer_delete(ts.timer);
	ts.has_timer = false;
	sonde_ring__retire(&ts.w);
	block(false, &old);
}

/* A process image: its records, then the calling thread sampled. */
static void image_start(void)
{
	sigset_t old;

	block(true, &old);
	proc.serial = sonde_ring_area__next_serial(proc.area);
	atomic_store(&proc.state, 2);
	ts.ready = 0;
	ts.has_timer = false;
	thread_start();
	if (ts.ready || rt_claim_ring(proc.area, proc.serial, &ts.w)) {
		rt_emit_proc(&ts.w, proc.parent_serial, mono_ns());
		rt_emit_modules(&ts.w);
	}
	block(false, &old);
}

static void after_fork_child(void)
{
	if (atomic_load(&proc.state) != 2)
		return;
	proc.parent_serial = proc.serial;
	image_start(); /* timers are not inherited: the child's own */
}

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *started(void *p)
{
	struct start s = *(struct start *)p;

	free(p);
	thread_start();
	return s.fn(s.arg);
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct start *s;
	int rc;

	if (!proc.pthread_create)
		proc.pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	if (atomic_load(&proc.state) != 2 || !(s = malloc(sizeof(*s))))
		return proc.pthread_create(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	rc = proc.pthread_create(t, attr, started, s);
	if (rc)
		free(s);
	return rc;
}

EXPORT void *dlopen(const char *file, int mode)
{
	sigset_t old;
	void *h;

	if (!proc.dlopen)
		proc.dlopen = dlsym(RTLD_NEXT, "dlopen");
	h = rt_dlopen_as(proc.dlopen, file, mode, __builtin_return_address(0));
	if (h && ts.ready) {
		block(true, &old);
		rt_emit_modules(&ts.w);
		block(false, &old);
	}
	return h;
}

__attribute__((constructor)) static void init(void)
{
	struct sigaction sa;
	const char *path;
	unsigned hz;

	proc.pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	proc.dlopen = dlsym(RTLD_NEXT, "dlopen");
	rt_env_take("SONDE_SAMPLE_");
	path = rt_env_get(SMP_ENV_RING);
	hz = rt_env_uint(SMP_ENV_HZ, 99);
	if (!path || !hz || hz > 100000)
		return;
	proc.area = sonde_ring_area__attach(path);
	if (!proc.area)
		return;
	proc.interval_ns = 1000000000ull / hz;
	proc.key_ok = pthread_key_create(&proc.key, thread_gone) == 0;
	pthread_atfork(NULL, NULL, after_fork_child);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL))
		return;
	image_start();
}
