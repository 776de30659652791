/*
 * _sample.c - the Python stack sampler (see _sample.h).
 *
 * Why a thread of its own and the GIL: a thread's chain of Python frames is
 * only consistent while no other thread runs Python, so the sampler reads it
 * holding the GIL, through the interpreter's public frame API. A signal from
 * a perf_event or POSIX timer would interrupt the interpreter between any two
 * of its instructions, where the chain may be half-linked. The cost is the
 * GIL's bias: a thread running Python is sampled where the interpreter lets
 * the GIL go (between bytecodes, not inside a long C call that keeps it), and
 * a C call that holds the GIL for long delays the tick (counted as late); its
 * time still goes to the Python function that made the call, because the
 * weight is the thread's CPU clock, read at the sample.
 *
 * The timer is a timerfd (CLOCK_MONOTONIC, hz periods); where none can be
 * made, ppoll() to the next period. Stop is an eventfd the loop also polls.
 */
#include "_sample.h"
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include "u64map.h"

struct py_sampler {
	PyInterpreterState *interp;
	pthread_t thread;
	pid_t pid;
	int tfd, efd;
	uint64_t period_ns, t0;
	py_code_id_fn code_id;
	py_sample_fn sample;
	void *ctx;
	PyObject *root;	    /* the program's code: frames outside it are the runner's */
	struct u64map last; /* tid -> the thread's clock at its previous sample + 1 */
	struct py_sampler_stats st;
	uint32_t ids[PY_SAMPLE_MAX_DEPTH];
};

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A thread's kernel id. */
static uint32_t tid_of(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030B0000
	return (uint32_t)ts->native_thread_id;
#else
	return (uint32_t)ts->thread_id;
#endif
}

/*
 * A thread's CPU time (ns): its clock id made from its kernel id, as
 * linux/posix-timers.h lays them out (per thread, scheduler clock), so no
 * pthread_t is dereferenced. 0 when it cannot be read.
 */
static uint64_t cpu_ns(uint32_t tid)
{
	struct timespec t;
	clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 6);

	if (!tid || clock_gettime(id, &t))
		return 0;
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t clock_of(const struct py_sampler *s, uint32_t tid)
{
	return s->st.wall ? mono_ns() : cpu_ns(tid);
}

/* Every thread but the sampler's: those that ran get a sample. Holding the GIL. */
static void take(struct py_sampler *s, PyThreadState *me)
{
	PyThreadState *ts;

	for (ts = PyInterpreterState_ThreadHead(s->interp); ts; ts = PyThreadState_Next(ts)) {
		uint32_t tid = tid_of(ts), n = 0, i;
		uint64_t now, prev = 0, w;
		PyFrameObject *f;

		if (ts == me)
			continue;
		now = clock_of(s, tid);
		if (!now)
			continue;
		if (u64map__get(&s->last, tid, &prev))
			prev--;
		else if (s->st.wall)
			prev = s->t0; /* a thread seen first: since the start */
		if (prev > now)	      /* a new thread with an old one's id */
			prev = s->st.wall ? s->t0 : 0;
		w = now - prev;
		u64map__put(&s->last, tid, now + 1);
		if (!w)
			continue; /* it did not run */
		for (f = PyThreadState_GetFrame(ts); f && n < PY_SAMPLE_MAX_DEPTH;) {
			PyCodeObject *co = PyFrame_GetCode(f);
			PyFrameObject *back = PyFrame_GetBack(f);
			uint32_t id;

			if (s->code_id(s->ctx, co, &id) == 0)
				s->ids[n++] = id;
			else
				s->st.errors++;
			Py_DECREF(f);
			f = back;
			if ((PyObject *)co == s->root) { /* the rest is the runner's */
				Py_DECREF(co);
				Py_CLEAR(f);
				break;
			}
			Py_DECREF(co);
		}
		if (f) { /* deeper: the innermost frames are kept */
			s->st.truncated++;
			Py_DECREF(f);
		}
		for (i = 0; i < n / 2; i++) { /* outermost first */
			uint32_t x = s->ids[i];

			s->ids[i] = s->ids[n - 1 - i];
			s->ids[n - 1 - i] = x;
		}
		if (s->sample(s->ctx, tid, w, s->ids, n))
			s->st.samples++;
	}
}

/* Wait for the next period: the periods that passed (0: stop). */
static uint64_t wait_tick(struct py_sampler *s, uint64_t *next)
{
	for (;;) {
		struct pollfd p[2] = { { s->efd, POLLIN, 0 }, { s->tfd, POLLIN, 0 } };
		struct timespec to, *top = NULL;
		uint64_t n = 0, now;
		int r;

		if (s->tfd < 0) {
			now = mono_ns();
			if (now >= *next) {
				n = (now - *next) / s->period_ns + 1;
				*next += n * s->period_ns;
				return n;
			}
			to.tv_sec = (time_t)((*next - now) / 1000000000u);
			to.tv_nsec = (long)((*next - now) % 1000000000u);
			top = &to;
		}
		r = ppoll(p, s->tfd < 0 ? 1 : 2, top, NULL);
		if (r < 0 && errno != EINTR)
			return 0;
		if (p[0].revents)
			return 0;
		if (s->tfd >= 0 && (p[1].revents & POLLIN) &&
		    read(s->tfd, &n, sizeof(n)) == (ssize_t)sizeof(n) && n)
			return n;
	}
}

static void *loop(void *arg)
{
	struct py_sampler *s = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	PyThreadState *me = PyThreadState_Get(), *saved;
	uint64_t next = s->t0 + s->period_ns, n;

	saved = PyEval_SaveThread();
	while ((n = wait_tick(s, &next))) {
		s->st.ticks += n;
		s->st.late += n - 1;
		PyEval_RestoreThread(saved);
		take(s, me);
		saved = PyEval_SaveThread();
	}
	PyEval_RestoreThread(saved);
	PyGILState_Release(g);
	return NULL;
}

struct py_sampler *py_sampler__start(double hz, bool wall, py_code_id_fn code_id,
				     py_sample_fn sample, void *ctx)
{
	struct py_sampler *s;
	PyThreadState *ts;
	int rc;

	if (!(hz >= 1 && hz <= 10000)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->interp = PyThreadState_Get()->interp;
	s->pid = getpid();
	s->period_ns = (uint64_t)(1e9 / hz);
	s->code_id = code_id;
	s->sample = sample;
	s->ctx = ctx;
	s->st.hz = hz;
	s->st.wall = wall;
	s->efd = eventfd(0, EFD_CLOEXEC);
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	s->t0 = mono_ns();
	if (s->efd < 0)
		goto fail;
	s->st.timer = s->tfd >= 0 ? "timerfd" : "ppoll";
	if (s->tfd >= 0) {
		struct itimerspec it = {
			{ (time_t)(s->period_ns / 1000000000u),
			  (long)(s->period_ns % 1000000000u) },
			{ (time_t)(s->period_ns / 1000000000u),
			  (long)(s->period_ns % 1000000000u) },
		};

		if (timerfd_settime(s->tfd, 0, &it, NULL)) {
			close(s->tfd);
			s->tfd = -1;
			s->st.timer = "ppoll";
		}
	}
	/* CPU mode: what every thread ran before the start is not the collection's */
	for (ts = PyInterpreterState_ThreadHead(s->interp); ts && !wall;
	     ts = PyThreadState_Next(ts))
		if (u64map__put(&s->last, tid_of(ts), cpu_ns(tid_of(ts)) + 1))
			goto fail;
	rc = pthread_create(&s->thread, NULL, loop, s);
	if (rc) {
		errno = rc;
		goto fail;
	}
	return s;
fail:
	rc = errno;
	if (s->efd >= 0)
		close(s->efd);
	if (s->tfd >= 0)
		close(s->tfd);
	u64map__release(&s->last);
	free(s);
	errno = rc;
	return NULL;
}

void py_sampler__root(struct py_sampler *s, PyObject *root)
{
	s->root = root; /* read by the sampler holding the GIL, as the caller holds it */
}

void py_sampler__stop(struct py_sampler *s, struct py_sampler_stats *st)
{
	uint64_t one = 1;

	if (s->pid == getpid()) {
		/* a write of 1 to a fresh eventfd cannot fail */
		(void)!write(s->efd, &one, sizeof(one));
		Py_BEGIN_ALLOW_THREADS pthread_join(s->thread, NULL);
		Py_END_ALLOW_THREADS
	}
	if (st)
		*st = s->st;
	close(s->efd);
	if (s->tfd >= 0)
		close(s->tfd);
	u64map__release(&s->last);
	free(s);
}
