/*
 * _sample.c - the Python stack sampler (see _sample.h).
 *
 * Why the GIL: a thread's chain of Python frames is only consistent while no
 * other thread runs Python, so it is read holding the GIL, through the
 * interpreter's public frame API, never from a signal handler (which lands
 * between any two instructions of the interpreter, where the chain may be
 * half-linked). A thread running Python is sampled where it lets the GIL go
 * (or, the main thread, where it runs Python signal handlers): between
 * bytecodes, not inside a long C call that keeps it (the call's time still
 * goes to the Python function that made it, because the weight is the
 * thread's CPU clock, read at the sample).
 *
 * When, in CPU mode. A sample must be asked for while the thread runs, at a
 * point that has nothing to do with the program's rhythm, and taken before
 * the thread moves on. A tick of the wall clock fails the first: on a busy
 * machine the thread is often waiting for a CPU when the tick comes, and lets
 * the GIL go at its first check after it runs again, where the scheduler
 * stopped it, which is most often a system call (the kernel notices that a
 * slice is over when it updates the thread's clock): a 70/30 program sampled
 * as 12/88 or 99/1 with three busy processes on two CPUs. A POSIX CPU timer
 * fails it too, more mildly: it expires at the scheduler's tick, a whole
 * number of ticks after the thread was switched in, which is where it was
 * stopped before (50/50 to 88/12 on that machine). And the switch interval
 * (5 ms) the sampler would wait for the GIL fails the second.
 *
 * So each thread gets a perf_event task-clock that overflows every period of
 * its own CPU time, exactly, and signals that thread. sonde's handler writes
 * the thread's id to the sampler's pipe and sets the interpreter's GIL drop
 * request (_gil.c), as a thread waiting for the GIL would: the thread lets
 * the GIL go at its next check, a few microseconds on, and waits until the
 * sampler has taken it, so its stack is the one the signal found (69/31
 * to 77/23 on that machine). The main thread does not wait: the handler
 * trips PY_SELF_SIGNAL for the interpreter instead, whose Python handler is
 * self_sample while sonde samples, and the interpreter calls it in the main
 * thread at the same check, where it reads its own stack holding the GIL (a
 * hand-over costs two wakes of a thread on another CPU, and the thread waits
 * through both). Where the thread's own signal cannot serve (it
 * blocks the signal, the program has its own handler on it, a CPython whose
 * drop request _gil.c cannot reach) the task-clock signals the sampler,
 * which blocks the signal, reads it from a signalfd and asks for the GIL
 * after 100 us: the thread runs on meanwhile, and on a busy machine the
 * scheduler may stop it first, which is then where it is sampled (the 70/30
 * split kept, but 8-19 % on the loop's clock read instead of 1-5 %). Where
 * perf_event_open is refused, a POSIX CPU timer takes the task-clock's place,
 * signalling the thread or the sampler alike. Each is named in
 * stats.trace.sampling.timer; ticks of the wall clock where no signalfd can
 * be made.
 *
 * The handler stays installed once set (a signal queued late must not meet
 * the default action, which ends the process), and os.exec* stops the
 * calling thread's task-clock first (an audit hook): a signal queued while
 * the exec runs would reach the new program.
 *
 * Wall mode ticks on a timerfd (CLOCK_MONOTONIC, hz periods; where none can
 * be made, ppoll() to the next period) and samples every thread. In CPU mode
 * the same tick only looks for new threads. Stop is an eventfd the loop also
 * polls.
 */
#include "_sample.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include "proto/python.h"
#include "u64map.h"

/* The triggers' signal: handled in the program's threads, read from a signalfd in the sampler's. */
#define PY_SAMPLE_SIGNAL (SIGRTMAX - 2)
/* The signal number the main thread's samples are asked for by, through
   CPython's own signal machinery (PyErr_SetInterruptEx); the kernel never
   sends it. */
#define PY_SELF_SIGNAL (SIGRTMAX - 3)
/* How long the sampler waits for the GIL before it asks the holder for it (us). */
#define PY_SAMPLE_ASK_US 100u
/* Threads are looked for at least this often (ns), and whenever their number moves. */
#define PY_SAMPLE_SYNC_NS 100000000u

/* What the signal handler writes to the sampler's pipe: one expiry. */
struct py_fired {
	uint32_t tid;
	uint32_t overrun; /* expiries folded into this one */
};

/* A thread of the interpreter, with a timer on its CPU clock (CPU mode). */
struct py_timed {
	PyThreadState *ts;
	timer_t timer;
	uint32_t tid;
	int fd;		/* its task-clock perf_event, or -1 */
	bool has_timer; /* else a POSIX timer on its CPU clock, if one could be made */
	bool direct;	/* the timer's signal goes to the thread itself (the handler asks) */
	bool fired;	/* its timer expired since its previous sample */
	bool seen;	/* in the interpreter's list at the last look */
	bool paused;	/* its task-clock was disabled for an exec that did not happen */
};

struct py_sampler {
	PyInterpreterState *interp;
	pthread_t thread;
	pid_t pid;
	int tfd, efd;
	int sfd;    /* CPU mode: the signalfd of the timers aimed at the sampler, else -1 */
	int pfd[2]; /* CPU mode: the pipe the signal handler writes expiries to, or -1 */
	uint64_t period_ns, t0;
	pid_t self;		/* the sampler thread's id, where the timers' signal goes */
	struct py_timed *timed; /* CPU mode: the threads, with their timers */
	size_t ntimed, timed_cap;
	struct u64map timed_at;	 /* tid -> index in timed */
	uint32_t how;		 /* PYR_HOW_* bits: the triggers the threads got */
	bool perf_refused;	 /* perf_event_open refused a task-clock: timers from then on */
	bool handler_lost;	 /* the program put its own handler on the signal */
	bool ask;		 /* a thread fired whose handler did not ask for the GIL */
	bool sync_due;		 /* threads are to be looked for at the next pass */
	_Atomic uint64_t unsent; /* expiries the handler could not write (the pipe full) */
	bool gil_ask;		 /* _gil.c can ask this CPython's GIL holder for it */
	uint32_t self_tid;	 /* the main thread, where it takes its own samples; 0: none */
	_Atomic bool self_on;	 /* its handler asks it for one (PY_SELF_SIGNAL) */
	_Atomic bool self_due;	 /* asked, not taken yet */
	_Atomic uint64_t self_ticks, self_late; /* its expiries, and those that came while due */
	pthread_mutex_t fd_lock; /* the task-clocks' fds: the sampler closes, os.exec pauses */
	nlink_t nlink;		 /* /proc/self/task's links at the last look: threads + 2 */
	uint64_t synced;	 /* when the threads were last looked for (mono_ns) */
	py_code_id_fn code_id;
	py_sample_fn sample;
	void *ctx;
	PyObject *root;	     /* the program's code: frames outside it are the runner's */
	struct u64map last;  /* tid -> the thread's clock at its previous sample + 1 */
	struct u64map taken; /* wall mode: tid -> the pass of take() that sampled it */
	struct u64map owner; /* tid -> the thread state that is that thread (map_owners) */
	bool owners;	     /* owner is filled */
	uint64_t pass;
	uint64_t cpu0;	 /* CPU mode: the process's CPU clock at the start */
	uint64_t own_ns; /* the sampler thread's CPU time, read as it ends */
	struct py_sampler_stats st;
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
 * A thread's CPU clock: its id made from its kernel id, as
 * linux/posix-timers.h lays them out (per thread, scheduler clock), so no
 * pthread_t is dereferenced.
 */
static clockid_t cpu_clock(uint32_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6);
}

/* A CPU clock's time (ns); 0 when it cannot be read. */
static uint64_t clock_ns(clockid_t id)
{
	struct timespec t;

	if (clock_gettime(id, &t))
		return 0;
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A thread's CPU time (ns); 0 when it cannot be read. */
static uint64_t cpu_ns(uint32_t tid)
{
	return tid ? clock_ns(cpu_clock(tid)) : 0;
}

static uint64_t clock_of(const struct py_sampler *s, uint32_t tid)
{
	return s->st.wall ? mono_ns() : cpu_ns(tid);
}

/* A timer's setting: every period, the first one period from now. */
static struct itimerspec every_period(const struct py_sampler *s)
{
	struct timespec p = { (time_t)(s->period_ns / 1000000000u),
			      (long)(s->period_ns % 1000000000u) };

	return (struct itimerspec){ p, p };
}

/* CPU mode: the entry of thread tid, or NULL. */
static struct py_timed *timed_of(struct py_sampler *s, uint32_t tid)
{
	uint64_t i;

	return u64map__get(&s->timed_at, tid, &i) ? &s->timed[i] : NULL;
}

/* The start of a /proc file (at most size - 1 bytes, NUL-terminated): its length or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t got = 0;

	if (fd < 0)
		return -1;
	while (len + 1 < size && (got = read(fd, buf + len, size - 1 - len)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	buf[len] = '\0';
	return got < 0 ? -1 : (ssize_t)len;
}

/* Whether thread tid blocks PY_SAMPLE_SIGNAL (its SigBlk mask), as far as can be read. */
static bool blocks_signal(uint32_t tid)
{
	char path[64], buf[2048];
	const char *m;

	snprintf(path, sizeof(path), "/proc/self/task/%u/status", tid);
	if (read_proc(path, buf, sizeof(buf)) <= 0 ||
	    !(m = strstr(buf, "\nSigBlk:")))
		return false;
	return (strtoull(m + 8, NULL, 16) >> (PY_SAMPLE_SIGNAL - 1)) & 1;
}

/*
 * A perf_event task-clock that overflows every period of thread tid's CPU
 * time and signals thread owner (fasync): -1 where perf_event_open is refused
 * (perf_event_paranoid), and then for every later thread.
 */
static int task_clock(struct py_sampler *s, uint32_t tid, pid_t owner)
{
	struct perf_event_attr a;
	struct f_owner_ex o = { F_OWNER_TID, owner };
	int fd;

	if (s->perf_refused)
		return -1;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = s->period_ns;
	a.wakeup_events = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM || errno == ENOSYS || errno == ENOENT ||
		    errno == EOPNOTSUPP)
			s->perf_refused = true;
		return -1;
	}
	if (fcntl(fd, F_SETOWN_EX, &o) || fcntl(fd, F_SETSIG, PY_SAMPLE_SIGNAL) ||
	    fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Thread t's trigger: a task-clock (perf_event) where perf_event_open is
 * allowed, else a POSIX timer on the thread's CPU clock. Its signal goes to
 * the thread itself, whose handler asks for the GIL, where the handler is
 * open and the thread does not block the signal; else to the sampler, which
 * asks. A POSIX CPU timer expires at the scheduler's tick, so where the
 * scheduler also switches the thread in and out at ticks its samples land a
 * whole number of ticks after where it was switched in; the task-clock
 * expires at its period exactly.
 */
static void arm(struct py_sampler *s, struct py_timed *t)
{
	struct sigevent ev;
	struct itimerspec it = every_period(s);

	bool own = t->tid == s->self_tid && atomic_load(&s->self_on);

	/* the handler asks for the GIL (_gil.c), or the main thread for its sample */
	t->direct =
		s->pfd[0] >= 0 && !s->handler_lost && !blocks_signal(t->tid) && (s->gil_ask || own);
	own = own && t->direct;
	t->fd = task_clock(s, t->tid, t->direct ? (pid_t)t->tid : s->self);
	if (t->fd >= 0) {
		s->how |= own	      ? PYR_HOW_TASK_CLOCK_IN_THREAD
			  : t->direct ? PYR_HOW_TASK_CLOCK
				      : PYR_HOW_TASK_CLOCK_SAMPLER;
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = PY_SAMPLE_SIGNAL;
	ev.sigev_value.sival_int = (int)t->tid;
	/* sigev_notify_thread_id, which glibc 2.36 does not name */
	ev._sigev_un._tid = t->direct ? (pid_t)t->tid : s->self;
	t->has_timer = timer_create(cpu_clock(t->tid), &ev, &t->timer) == 0;
	if (t->has_timer && timer_settime(t->timer, 0, &it, NULL)) {
		timer_delete(t->timer);
		t->has_timer = false;
	}
	if (t->has_timer)
		s->how |= own	      ? PYR_HOW_CPU_TIMER_IN_THREAD
			  : t->direct ? PYR_HOW_CPU_TIMER
				      : PYR_HOW_CPU_TIMER_SAMPLER;
	else
		s->st.untimed++;
}

static void disarm(struct py_sampler *s, struct py_timed *t)
{
	pthread_mutex_lock(&s->fd_lock);
	if (t->fd >= 0) {
		/* off before the close: a child of fork() holds a copy of the fd
		   (no signal came after the close without this either, on Linux
		   6.18; the event is this thread's, so it stops here for sure) */
		ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
		close(t->fd);
	}
	t->fd = -1;
	pthread_mutex_unlock(&s->fd_lock);
	if (t->has_timer)
		timer_delete(t->timer);
	t->has_timer = false;
}

/* /proc/self/task's link count: the process's threads + 2 (0: unknown). */
static nlink_t task_links(void)
{
	struct stat st;

	return stat("/proc/self/task", &st) ? 0 : st.st_nlink;
}

static bool handler_ours(void);
static bool self_handler_ours(void);
static void handler_close(struct py_sampler *s);

/*
 * Thread t signals itself but has not been sampled for 20 periods of its CPU
 * time: it blocks the signal now, or the program replaced sonde's handler.
 * Its trigger then signals the sampler instead (and every later one where the
 * handler is gone). The main thread that takes its own samples asks for the
 * GIL instead as soon as the program has put a handler of its own on
 * PY_SELF_SIGNAL.
 */
static bool stalled(struct py_sampler *s, const struct py_timed *t)
{
	uint64_t prev = 0, now = cpu_ns(t->tid);

	if (t->tid == s->self_tid && atomic_load(&s->self_on) && !self_handler_ours()) {
		/* the program put its own handler on PY_SELF_SIGNAL (looked at each
		   time, so that it gets few calls of sonde's): the GIL, then */
		atomic_store(&s->self_on, false);
		return true;
	}
	if (u64map__get(&s->last, t->tid, &prev))
		prev--;
	if (t->paused)
		return true;
	if (!now || now < prev + 20 * s->period_ns)
		return false;
	if (!handler_ours())
		s->handler_lost = true;
	return s->handler_lost || blocks_signal(t->tid);
}

/*
 * Holding the GIL: which thread state is each thread. CPython 3.11 fills a new
 * thread's state with its creator's ids and puts in the thread's own only
 * when the thread starts, so until then two states show the creator's id (the
 * sampler took the creator's id for the new thread: no trigger on it until
 * the next look, 100 ms on, and a thread of 0.1 s was never sampled). The list
 * holds the newest first, and a creator is older than what it creates: of the
 * states that show one id, the last in the list is the thread.
 */
static void map_owners(struct py_sampler *s)
{
	PyThreadState *ts;

	u64map__clear(&s->owner);
	s->owners = true;
	for (ts = PyInterpreterState_ThreadHead(s->interp); ts; ts = PyThreadState_Next(ts))
		if (u64map__put(&s->owner, tid_of(ts), (uint64_t)(uintptr_t)ts)) {
			s->owners = false; /* out of memory: every state taken as started */
			return;
		}
}

/* Whether ts is running as thread tid (map_owners); 0 is no thread yet. */
static bool started(const struct py_sampler *s, PyThreadState *ts, uint32_t tid)
{
	uint64_t v;

	if (!tid)
		return false;
	return !s->owners || !u64map__get(&s->owner, tid, &v) || v == (uint64_t)(uintptr_t)ts;
}

/*
 * CPU mode, holding the GIL: a timer for each thread of the interpreter but
 * the sampler's, none for those that ended. A thread id that came back with a
 * new thread state is a new thread (the old timer was on the old thread).
 */
static void sync_timers(struct py_sampler *s, PyThreadState *me)
{
	PyThreadState *ts;
	size_t i;

	s->nlink = task_links();
	s->synced = mono_ns();
	s->sync_due = false;
	for (i = 0; i < s->ntimed; i++)
		s->timed[i].seen = false;
	map_owners(s);
	for (ts = PyInterpreterState_ThreadHead(s->interp); ts; ts = PyThreadState_Next(ts)) {
		uint32_t tid = tid_of(ts);
		struct py_timed *t;

		if (ts == me)
			continue;
		if (!started(s, ts, tid)) {
			s->synced = 0; /* started, not running yet: look again at the next tick */
			continue;
		}
		t = timed_of(s, tid);
		if (t && t->ts != ts)
			disarm(s, t);
		else if (t) {
			t->seen = true;
			if (t->direct && stalled(s, t)) {
				t->paused = false;
				disarm(s, t);
				arm(s, t);
				s->st.rerouted += !t->direct;
			}
			continue;
		}
		if (!t) {
			if (u64map__element(&s->timed_at, tid, (void **)&s->timed, &s->ntimed,
					    &s->timed_cap, sizeof(*s->timed), &i)) {
				s->st.untimed++;
				continue;
			}
			t = &s->timed[i];
		}
		t->ts = ts;
		t->fd = -1;
		t->tid = tid;
		t->fired = false;
		t->paused = false;
		t->seen = true;
		arm(s, t);
	}
	for (i = 0; i < s->ntimed;) { /* the ended: the last entry takes the slot */
		struct py_timed *t = &s->timed[i];
		uint64_t dummy;

		if (t->seen) {
			i++;
			continue;
		}
		disarm(s, t);
		u64map__take(&s->timed_at, t->tid, &dummy);
		if (i != --s->ntimed) {
			*t = s->timed[s->ntimed];
			u64map__put(&s->timed_at, t->tid, i);
		}
	}
}

/*
 * Thread ts (id tid), holding the GIL: a sample of its stack, if it ran since
 * its previous one. The stack is the caller's own: naming a thread runs
 * Python code in the callback, where the GIL may pass to another sample.
 */
static int sample_one(struct py_sampler *s, PyThreadState *ts, uint32_t tid)
{
	int r;
	uint64_t now = clock_of(s, tid), prev = 0, w;
	uint32_t n = 0, i, ids[PY_SAMPLE_MAX_DEPTH];
	PyFrameObject *f;

	if (!now)
		return 0;
	if (u64map__get(&s->last, tid, &prev))
		prev--;
	else if (s->st.wall)
		prev = s->t0; /* a thread seen first: since the start */
	if (prev > now)	      /* a new thread with an old one's id */
		prev = s->st.wall ? s->t0 : 0;
	w = now - prev;
	u64map__put(&s->last, tid, now + 1);
	if (!w)
		return 0; /* it did not run */
	for (f = PyThreadState_GetFrame(ts); f && n < PY_SAMPLE_MAX_DEPTH;) {
		PyCodeObject *co = PyFrame_GetCode(f);
		PyFrameObject *back = PyFrame_GetBack(f);
		uint32_t id;

		if (s->code_id(s->ctx, co, &id) == 0)
			ids[n++] = id;
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
		uint32_t x = ids[i];

		ids[i] = ids[n - 1 - i];
		ids[n - 1 - i] = x;
	}
	r = s->sample(s->ctx, tid, w, ids, n);
	if (r & PY_SAMPLE_KEPT) {
		s->st.samples++;
		s->st.weighed_ns += w;
	}
	return r;
}

/*
 * Threads to sample: in CPU mode those whose timer fired (each once), else
 * every other thread. Those that ran get a sample. Holding the GIL. Where a
 * sample ran Python code (naming a new thread), the GIL may have passed and a
 * thread ended meanwhile (its state freed): the list is walked anew, without
 * the threads this pass took.
 */
static void take(struct py_sampler *s, PyThreadState *me)
{
	PyThreadState *ts;
	uint64_t pass = ++s->pass;

again:
	if (s->sfd < 0)
		map_owners(s); /* (CPU mode: sync_timers armed only the running) */
	for (ts = PyInterpreterState_ThreadHead(s->interp); ts; ts = PyThreadState_Next(ts)) {
		uint32_t tid = tid_of(ts);
		uint64_t seen = 0;

		if (ts == me)
			continue;
		if (s->sfd >= 0) {
			struct py_timed *t = timed_of(s, tid);

			if (!t || !t->fired || t->ts != ts)
				continue;
			t->fired = false;
		} else if (!started(s, ts, tid)) {
			continue; /* it would take its creator's sample */
		} else if (u64map__get(&s->taken, tid, &seen) && seen == pass) {
			continue;
		} else {
			(void)u64map__put(&s->taken, tid,
					  pass); /* (out of memory: it may come twice) */
		}
		if (sample_one(s, ts, tid) & PY_SAMPLE_RAN_PYTHON)
			goto again;
	}
}

/* CPU mode: one expiry of thread tid's timer; whether it is a thread of ours. */
static bool fired(struct py_sampler *s, uint32_t tid, uint64_t overrun)
{
	struct py_timed *t = timed_of(s, tid);

	s->st.ticks += 1 + overrun;
	s->st.late += overrun;
	if (!t)
		return false; /* a thread that ended */
	if (t->fired)
		s->st.late++; /* expired again before its sample */
	t->fired = true;
	s->ask = s->ask || !t->direct; /* nobody asked for the GIL yet */
	return true;
}

/* CPU mode: the thread whose task-clock fd is fd (0: none now, it ended). */
static uint32_t tid_of_fd(const struct py_sampler *s, int fd)
{
	size_t i;

	for (i = 0; i < s->ntimed; i++)
		if (s->timed[i].fd == fd)
			return s->timed[i].tid;
	return 0;
}

/* CPU mode: the timers that expired (marked fired); how many were ours. */
static uint64_t read_fired(struct py_sampler *s)
{
	uint64_t n = 0;
	ssize_t r;

	if (s->pfd[0] >= 0) {
		struct py_fired f[64];

		while ((r = read(s->pfd[0], f, sizeof(f))) > 0)
			for (size_t i = 0; i < (size_t)r / sizeof(f[0]); i++)
				n += fired(s, f[i].tid, f[i].overrun);
	}
	for (;;) {
		struct signalfd_siginfo si[16];

		r = read(s->sfd, si, sizeof(si));
		if (r <= 0)
			break;
		for (size_t i = 0; i < (size_t)r / sizeof(si[0]); i++)
			if (si[i].ssi_code == POLL_IN) /* a task-clock's: its fd says whose */
				n += fired(s, tid_of_fd(s, (int)si[i].ssi_fd), 0);
			else
				n += fired(s, (uint32_t)si[i].ssi_int, si[i].ssi_overrun);
	}
	return n;
}

/*
 * Wait for the next period (wall ticks), or for a thread's timer, or for new
 * threads to look at (CPU mode). Returns 1 for a sample, 2 to look for
 * threads (CPU mode only), 0 to stop.
 */
static int wait_tick(struct py_sampler *s, uint64_t *next)
{
	for (;;) {
		struct pollfd p[4] = { { s->efd, POLLIN, 0 },
				       { s->tfd, POLLIN, 0 },
				       { s->sfd, POLLIN, 0 },
				       { s->pfd[0], POLLIN, 0 } };
		struct timespec to, *top = NULL;
		uint64_t n = 0, now;
		int r;

		if (s->tfd < 0) {
			now = mono_ns();
			if (now >= *next) {
				n = (now - *next) / s->period_ns + 1;
				*next += n * s->period_ns;
			} else {
				to.tv_sec = (time_t)((*next - now) / 1000000000u);
				to.tv_nsec = (long)((*next - now) % 1000000000u);
				top = &to;
			}
		}
		if (!n) {
			p[1].fd = s->tfd; /* -1: not polled */
			r = ppoll(p, 4, top, NULL);
			if (r < 0 && errno != EINTR)
				return 0;
			if (p[0].revents)
				return 0;
			if (s->tfd >= 0 && (p[1].revents & POLLIN) &&
			    read(s->tfd, &n, sizeof(n)) != (ssize_t)sizeof(n))
				n = 0;
		}
		if (s->sfd < 0) { /* wall ticks */
			if (n) {
				s->st.ticks += n;
				s->st.late += n - 1;
				return 1;
			}
			continue;
		}
		/* a look for threads that is due waits for no quiet tick: where a
		   thread's expiries come with every tick, it would never come */
		if (n && (mono_ns() - s->synced >= PY_SAMPLE_SYNC_NS || task_links() != s->nlink))
			s->sync_due = true;
		if (((p[2].revents | p[3].revents) & POLLIN) && read_fired(s))
			return 1;
		if (s->sync_due)
			return 2;
	}
}

/*
 * Take the GIL; ask: asking its holder for it after PY_SAMPLE_ASK_US instead
 * of the switch interval (the interval is put back unless the program
 * changed it meanwhile).
 */
static void gil_take(PyThreadState *saved, bool ask)
{
#if PY_VERSION_HEX < 0x030D0000
	unsigned long iv = _PyEval_GetSwitchInterval();

	if (!ask) {
		PyEval_RestoreThread(saved);
		return;
	}
	if (iv > PY_SAMPLE_ASK_US)
		_PyEval_SetSwitchInterval(PY_SAMPLE_ASK_US);
	PyEval_RestoreThread(saved);
	if (iv > PY_SAMPLE_ASK_US && _PyEval_GetSwitchInterval() == PY_SAMPLE_ASK_US)
		_PyEval_SetSwitchInterval(iv);
#else
	PyEval_RestoreThread(saved);
#endif
}

/* The sampler the signal handler serves (one at a time), and handlers running. */
static struct py_sampler *_Atomic handled;
static atomic_int in_handler;

/*
 * A thread's timer expired while it ran: hand the expiry to the sampler and
 * ask for the GIL, so that the thread lets it go at its next check, close to
 * where the signal found it, and waits there until the sampler has its stack.
 */
static void on_expiry(int sig, siginfo_t *si, void *uc)
{
	int e = errno;
	struct py_sampler *s;

	(void)sig;
	(void)uc;
	atomic_fetch_add(&in_handler, 1);
	s = atomic_load(&handled);
	if (s && (si->si_code == SI_TIMER || si->si_code == POLL_IN)) {
		/* the thread's own trigger: it is this thread */
		struct py_fired f = { (uint32_t)syscall(SYS_gettid),
				      si->si_code == SI_TIMER && si->si_overrun > 0
					      ? (uint32_t)si->si_overrun
					      : 0 };

		if (f.tid == s->self_tid && atomic_load(&s->self_on)) {
			/* the main thread: the interpreter calls self_sample at its
			   next check, as for any signal with a Python handler
			   (PyErr_SetInterruptEx is async-signal-safe) */
			atomic_fetch_add(&s->self_ticks, 1 + (uint64_t)f.overrun);
			atomic_fetch_add(&s->self_late,
					 (uint64_t)f.overrun + atomic_exchange(&s->self_due, true));
			PyErr_SetInterruptEx(PY_SELF_SIGNAL);
		} else if (write(s->pfd[1], &f, sizeof(f)) == (ssize_t)sizeof(f))
			py_gil_ask(s->interp);
		else
			atomic_fetch_add(&s->unsent, 1 + (uint64_t)f.overrun);
	}
	atomic_fetch_sub(&in_handler, 1);
	errno = e;
}

/* Whether PY_SAMPLE_SIGNAL's handler is sonde's. */
static bool handler_ours(void)
{
	struct sigaction old;

	return !sigaction(PY_SAMPLE_SIGNAL, NULL, &old) && (old.sa_flags & SA_SIGINFO) &&
	       old.sa_sigaction == on_expiry;
}

/*
 * The handler of PY_SAMPLE_SIGNAL, installed where the program has none of
 * its own (it stays: a late expiry must not meet the default action, which
 * ends the process).
 */
static bool handler_installed(void)
{
	struct sigaction old, sa;

	if (handler_ours())
		return true;
	if (sigaction(PY_SAMPLE_SIGNAL, NULL, &old) || old.sa_handler != SIG_DFL)
		return false;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_expiry;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(PY_SAMPLE_SIGNAL, &sa, NULL) == 0;
}

/*
 * os.exec*, holding the GIL: a task-clock signal queued while the exec runs
 * would reach the new program, where it has the default action (the end of
 * the process). The calling thread's own task-clock stops first; what it had
 * queued is delivered here, to sonde's handler. If the exec fails, the
 * thread's trigger is made anew at the next look for threads. A task-clock
 * aimed at the sampler goes on: its signals die with the sampler's thread.
 */
static int on_audit(const char *event, PyObject *args, void *data)
{
	struct py_sampler *s = atomic_load(&handled);
	struct py_timed *t;

	(void)args;
	(void)data;
	if (!s || event[0] != 'o' || strcmp(event, "os.exec") || s->pid != getpid())
		return 0; /* (a child of fork(): the parent's sampler, not its) */
	pthread_mutex_lock(&s->fd_lock);
	t = timed_of(s, (uint32_t)syscall(SYS_gettid));
	if (t && t->fd >= 0 && t->direct) { /* (the sampler's signal dies with it) */
		ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
		t->paused = true;
	}
	pthread_mutex_unlock(&s->fd_lock);
	return 0;
}

/*
 * The main thread's sample, asked for by its trigger's handler: CPython calls
 * this (PY_SELF_SIGNAL's Python handler) in the main thread at its next check
 * of the eval breaker, holding the GIL, a few microseconds after the signal,
 * with the frames as the signal found them (no frame is pushed for a C
 * function). No thread waits for another: a hand-over of the GIL to the
 * sampler and back costs two wakes of a thread on another CPU.
 */
static PyObject *self_sample(PyObject *mod, PyObject *args)
{
	static bool busy; /* the main thread's only */
	struct py_sampler *s = atomic_load(&handled);
	PyThreadState *ts = PyThreadState_Get();
	PyObject *et, *ev, *tb;

	(void)mod;
	(void)args;
	/* (a child of fork(): its parent's sampler, copied) */
	if (!s || s->pid != getpid() || !atomic_load(&s->self_on) || tid_of(ts) != s->self_tid)
		Py_RETURN_NONE;
	atomic_store(&s->self_due, false);
	if (busy) /* asked again while naming the thread (Python code): sonde's time */
		Py_RETURN_NONE;
	busy = true;
	PyErr_Fetch(&et, &ev, &tb);
	sample_one(s, ts, s->self_tid);
	PyErr_Clear(); /* an error naming a frame is counted, never raised here */
	PyErr_Restore(et, ev, tb);
	busy = false;
	Py_RETURN_NONE;
}

static PyMethodDef self_def = { "_sonde_sample", self_sample, METH_VARARGS,
				"sonde's sampler: the main thread's sample (see docs/python.md)" };
static PyObject *self_fn;

/*
 * _signal.getsignal(PY_SELF_SIGNAL) (h NULL) or _signal.signal(PY_SELF_SIGNAL,
 * h), holding the GIL; NULL where it fails. _signal, not signal: importing
 * signal (its enums) takes ~5 ms.
 */
static PyObject *self_call(PyObject *h)
{
	PyObject *mod = PyImport_ImportModule("_signal"), *r;

	if (!mod)
		return NULL;
	r = h ? PyObject_CallMethod(mod, "signal", "iO", (int)PY_SELF_SIGNAL, h)
	      : PyObject_CallMethod(mod, "getsignal", "i", (int)PY_SELF_SIGNAL);
	Py_DECREF(mod);
	return r;
}

/* Whether PY_SELF_SIGNAL's Python handler is sonde's (holding the GIL). */
static bool self_handler_ours(void)
{
	PyObject *h = self_call(NULL);
	bool ours = h && h == self_fn;

	Py_XDECREF(h);
	PyErr_Clear();
	return ours;
}

/*
 * The main thread (the caller) takes its own samples: sonde's function as
 * the Python handler of PY_SELF_SIGNAL, where the program has none there.
 */
static void self_open(struct py_sampler *s)
{
	PyObject *h, *r;

	if (!self_fn && !(self_fn = PyCFunction_New(&self_def, NULL)))
		goto out;
	h = self_call(NULL);
	if (!h)
		goto out;
	if (h != self_fn && !(PyLong_Check(h) && PyLong_AsLong(h) == 0)) { /* SIG_DFL */
		Py_DECREF(h);
		goto out;
	}
	Py_DECREF(h);
	r = self_call(self_fn);
	if (!r)
		goto out;
	Py_DECREF(r);
	s->self_tid = (uint32_t)getpid();
	atomic_store(&s->self_on, true);
out:
	PyErr_Clear();
}

/* The program's PY_SELF_SIGNAL back to the default, if sonde's handler is still there. */
static void self_close(struct py_sampler *s)
{
	PyObject *dfl;

	if (!s->self_tid || (pid_t)syscall(SYS_gettid) != getpid() || !self_handler_ours())
		return; /* (only the main thread may; elsewhere it stays, and does nothing) */
	dfl = PyLong_FromLong(0); /* SIG_DFL */
	if (dfl)
		Py_XDECREF(self_call(dfl));
	Py_XDECREF(dfl);
	PyErr_Clear();
}

/*
 * CPU mode with a thread's own signal: the pipe and the handler, if this
 * interpreter can be asked for its GIL (or the main thread for its samples)
 * and no other sampler has them.
 */
static void handler_open(struct py_sampler *s)
{
	static bool hooked;
	struct py_sampler *cur = atomic_load(&handled);
	const char *force = getenv("SONDE_PY_SAMPLE_TRIGGER");
	bool self;

	/* SONDE_PY_SAMPLE_TRIGGER: a fallback on request (the tests, the bench) */
	if (force && !*force)
		force = NULL;
	if (force && !strncmp(force, "cpu-timer", 9))
		s->perf_refused = true;
	if (force && (!strcmp(force, "task-clock-sampler") || !strcmp(force, "cpu-timer-sampler")))
		return;
	s->gil_ask = py_gil_can_ask();
	/* =task-clock, =cpu-timer: the main thread hands the GIL over too */
	self = (pid_t)syscall(SYS_gettid) == getpid() &&
	       (!force || !strcmp(force, "cpu-timer-in-thread"));
	if ((!s->gil_ask && !self) || !handler_installed())
		return;
	if (!hooked && PySys_AddAuditHook(on_audit, NULL) == 0)
		hooked = true; /* hooks stay: it looks at the sampler the handler serves */
	if (!hooked) {
		PyErr_Clear();
		return;
	}
	if (cur && cur->pid == getpid())
		return; /* another sampler has the handler (else: a child of fork() has
			   its parent's, copied) */
	if (pipe2(s->pfd, O_NONBLOCK | O_CLOEXEC)) {
		s->pfd[0] = s->pfd[1] = -1;
		return;
	}
	if (!atomic_compare_exchange_strong(&handled, &cur, s)) {
		close(s->pfd[0]);
		close(s->pfd[1]);
		s->pfd[0] = s->pfd[1] = -1;
		return;
	}
	if (self)
		self_open(s);
	if (!s->gil_ask && !s->self_tid)
		handler_close(s); /* nobody's signal could serve */
}

/* After the timers are gone: no handler uses the pipe any more. */
static void handler_close(struct py_sampler *s)
{
	struct py_sampler *me = s;

	if (s->pfd[0] < 0)
		return;
	atomic_compare_exchange_strong(&handled, &me, NULL);
	while (atomic_load(&in_handler))
		sched_yield();
	close(s->pfd[0]);
	close(s->pfd[1]);
	s->pfd[0] = s->pfd[1] = -1;
}

static void *loop(void *arg)
{
	struct py_sampler *s = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	PyThreadState *me = PyThreadState_Get(), *saved;
	uint64_t next = s->t0 + s->period_ns;
	size_t i;
	int why;

	s->self = (pid_t)syscall(SYS_gettid);
	if (!s->st.wall) {
		sigset_t set, both;

		sigemptyset(&set);
		sigaddset(&set, PY_SAMPLE_SIGNAL);
		/* SIGIO too, never read: the kernel sends it to a task-clock's
		   owner when the queue of real-time signals is full, and it would
		   end the process (one aimed at the process goes to another thread) */
		both = set;
		sigaddset(&both, SIGIO);
		if (!pthread_sigmask(SIG_BLOCK, &both, NULL))
			s->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
		if (s->sfd >= 0)
			sync_timers(s, me);
	}
	saved = PyEval_SaveThread();
	while ((why = wait_tick(s, &next))) {
		/* a look for threads asks too: waiting out switch intervals behind
		   two busy threads, it came 100-200 ms late, and a new thread ran
		   that long with no trigger */
		gil_take(saved, why == 2 || (why == 1 && !s->st.wall && (s->sfd < 0 || s->ask)));
		s->ask = false;
		if (s->sync_due)
			sync_timers(s, me);
		if (why == 1)
			take(s, me);
		saved = PyEval_SaveThread();
	}
	for (i = 0; i < s->ntimed; i++)
		disarm(s, &s->timed[i]);
	if (s->how)
		s->st.how = s->how;
	handler_close(s);
	/* expiries the pipe could not take: periods with no sample of their own */
	s->st.ticks += atomic_load(&s->unsent) + atomic_load(&s->self_ticks);
	s->st.late += atomic_load(&s->unsent) + atomic_load(&s->self_late);
	if (s->sfd >= 0)
		close(s->sfd);
	s->sfd = -1;
	s->own_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	/* a thread the handler asked waits for a taker: this one */
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
	s->sfd = s->pfd[0] = s->pfd[1] = -1;
	pthread_mutex_init(&s->fd_lock, NULL);
	if (!wall)
		handler_open(s);
	s->efd = eventfd(0, EFD_CLOEXEC);
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	s->t0 = mono_ns();
	if (s->efd < 0)
		goto fail;
	s->st.how = s->tfd >= 0 ? 0 : PYR_HOW_PPOLL;
	if (s->tfd >= 0) {
		struct itimerspec it = every_period(s);

		if (timerfd_settime(s->tfd, 0, &it, NULL)) {
			close(s->tfd);
			s->tfd = -1;
			s->st.how = PYR_HOW_PPOLL;
		}
	}
	/* CPU mode: what every thread ran before the start is not the collection's */
	s->cpu0 = wall ? 0 : clock_ns(CLOCK_PROCESS_CPUTIME_ID);
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
	handler_close(s);
	if (s->efd >= 0)
		close(s->efd);
	if (s->tfd >= 0)
		close(s->tfd);
	u64map__release(&s->last);
	pthread_mutex_destroy(&s->fd_lock);
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
	if (s->pid == getpid() && s->cpu0) {
		/* the process's CPU meanwhile, but the sampler's: threads that
		   ended before a look found them or before a period of CPU, each
		   thread's time after its last sample, threads Python does not
		   know, are in no sample */
		uint64_t now = clock_ns(CLOCK_PROCESS_CPUTIME_ID);

		if (now > s->cpu0 + s->own_ns)
			s->st.cpu_ns = now - s->cpu0 - s->own_ns;
	}
	handler_close(s); /* a child of fork(): its copies */
	self_close(s);
	if (s->sfd >= 0)
		close(s->sfd);
	if (st)
		*st = s->st;
	close(s->efd);
	if (s->tfd >= 0)
		close(s->tfd);
	u64map__release(&s->last);
	u64map__release(&s->taken);
	u64map__release(&s->owner);
	u64map__release(&s->timed_at);
	free(s->timed);
	pthread_mutex_destroy(&s->fd_lock);
	free(s);
}
