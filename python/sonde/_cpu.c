/*
 * _cpu.c - the Python CPU collector, in process: every Python call and return,
 * and every call from Python into a C function, from the interpreter's C
 * profile hook (not a Python-level function).
 *
 * Recording path. Each thread writes its events into a ring of its own in a
 * libsonde ring area (drop-oldest: a full ring gives up its oldest events,
 * each one counted). The hook's argument is the thread's ThreadRec, so the
 * hook finds its ring without a lookup, and takes no lock (it runs holding
 * the GIL, as every profile hook does). A profile function already installed
 * (sys.setprofile, another profiler) is chained: it sees every event, and is
 * put back at stop. Threads running at start get the hook then; threads
 * started later get it through threading.setprofile's hook on their first
 * event.
 *
 * Function ids: a Python function is its code object, tagged with the id in
 * the code object's extra slot (PEP 523's co_extra) the first time it runs; a
 * C function is its PyMethodDef. Names, files and lines are copied then, so
 * code that is freed later still has its name.
 *
 * At stop (the calling thread), every ring is drained in order and the calls
 * are rebuilt by libsonde's trace analysis (sonde_calltrace): the profile is
 * the one `sonde collect trace` writes.
 *
 * A child made by fork() shares the parent's rings (a MAP_SHARED memfd): its
 * hooks stop writing before anything else (pthread_atfork) and put the chained
 * functions back.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
/*
 * The frame evaluator's frames (PEP 523) are the interpreter's own structure:
 * its code object is read from the internal header of the CPython built
 * against (3.11 and 3.12 name it f_code); elsewhere the profile hook serves.
 */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
#define SONDE_EVAL_ENGINE 1
#define Py_BUILD_CORE	  1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#else
#define SONDE_EVAL_ENGINE 0
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sonde/calltrace.h>
#include <sonde/clock.h>
#include <sonde/memsample.h>
#include <sonde/profile.h>
#include <sonde/ring.h>
#include <sonde/syscalls.h>
#include <sonde/sysinfo.h>
#include <dirent.h>
#include "proto/python.h"
#include "grow.h"
#include "u64map.h"
#include "_pymem.h"
#include "_sample.h"
#include "_sonde.h"

/* the ring's record types are the dump's event types */
enum {
	EV_CALL = PYR_CALL,
	EV_RETURN = PYR_RETURN,
	EV_C_CALL = PYR_C_CALL,
	EV_C_RETURN = PYR_C_RETURN,
	EV_SIZE = PYR_SIZE,
	EV_SYS_ENTER = 6, /* a system call (func: its function id), from perf_event */
	EV_SYS_EXIT = 7,
	EV_BATCH = PYR_BATCH /* a ring record: a batch of struct bev, filled in place */
};
static const char *const ev_names[] = { "?",	    "call", "return",	     "c_call",
					"c_return", "size", "syscall_enter", "syscall_exit" };

struct ev { /* one drained event; hdr: SONDE_RING_REC(type, 16) */
	uint32_t hdr;
	uint32_t func;
	uint64_t ts; /* ns */
};

/* One event in a batch record: the ring record is a header word, a pad word, bevs. */
/* One event in a batch record (proto/python.h): the record is a header word, a pad word, bevs. */
#define bev	  pyr_ev
#define BATCH_HDR PYR_BATCH_HDR

struct fn {
	char *module, *name;
	uint64_t line;
};

/* Bytes of batch records read in place from the owner's mapping of the rings (after stop). */
struct seg {
	const uint8_t *p;
	uint64_t bytes;
};

struct tstore { /* one thread's drained events, in order: ev[] first, then segs */
	uint32_t tid;
	char name[64];
	struct ev *ev; /* copied by drains while collecting (get_thread_local_buffer) */
	size_t n, cap;
	struct seg *segs; /* the final drain's, in place: no copy at stop */
	size_t nsegs, capsegs;
	uint64_t seg_events, trim; /* events in segs; the last `trim` are left out */
	struct ev *sc;		   /* system calls, in time order (merged by ev_it) */
	size_t nsc, capsc;
};

/* A walk over a store's events, converted to struct ev (ns). */
struct ev_it {
	const struct tstore *s;
	size_t i, seg, k; /* k: the next system call */
	struct ev pe;	  /* the next Python event, read ahead */
	bool have_pe;
	const uint8_t *rp, *rend; /* records of the current segment */
	const uint8_t *b;	  /* the current batch's events */
	uint32_t bk, bn;
	uint64_t left;
};

enum { ST_IDLE, ST_COLLECTING, ST_FINALIZED };
static const char *const state_names[] = { "idle", "collecting", "finalized" };

typedef struct CpuCollector {
	PyObject_HEAD int state;
	uint32_t gen; /* this collector's tag in code objects' extra slot */
	bool c_calls;
	size_t ring_bytes;
	struct sonde_ring_area *area; /* the owner's side: drained at stop */
	struct sonde_ring_area *wa;   /* the writers' side of the same memfd */
	PyObject *recs;		      /* list of ThreadRec: every thread hooked */
	PyObject *prev_thread_hook;   /* threading's hook before start */
	PyObject *import_watch;	      /* threading not loaded at start: the finder that
					 hooks it where the program imports it */
	PyObject *names;	      /* dict: native thread id -> thread name */
	struct fn *fns;
	size_t nfns, capfns;
	struct u64map cfuncs; /* PyMethodDef (or type) -> id + 1 */
	struct tstore *ts;
	size_t nts, capts;
	struct u64map tindex; /* tid -> index + 1 */
	uint64_t t0, t1, events, dropped, lost;
	uint64_t tick0, ns0; /* one reading of both clocks at start */
	double ns_per_tick;  /* 0: ticks are ns */
	uint32_t batch;	     /* events per batch record */
	bool quiet;	     /* the final drain: the stores keep segments of the rings */
	char *ring_path;     /* sonde's rings to write into (collect python), or NULL: own */
	bool ring_tsc;	     /* sonde's rings: stamp with the TSC */
	struct sonde_ring_writer meta; /* sonde's rings: functions, names, marks */
	bool meta_claimed;
	bool want_syscalls;
	struct sonde_syscalls *sc; /* recording system calls (NULL: not, see sc_why) */
	struct sonde_strbuf sc_why;
	uint64_t sc_events, sc_lost;
	struct u64map sc_ids; /* syscall number -> function id + 1 */
	pthread_key_t gone;   /* its destructor gives an ended thread's ring back */
	bool have_gone;
	struct own { /* a thread's time in sonde's own system calls (its ring's claim) */
		uint32_t tid;
		uint64_t a, b;
	} * own;
	size_t nown, capown;
	bool eval_engine; /* Python calls through the frame evaluator (c_calls=False) */
	/* mode "sampling": stacks from the sampler instead of calls (_sample.h) */
	bool sampling, wall;
	double hz;
	struct py_sampler *sampler;
	struct py_sampler_stats sst;
	uint32_t stopping; /* the thread stopping the sampler: its last samples are not kept */
	struct smp {	   /* one sample; its ids are sfr[off..off+n) */
		uint32_t tid, n;
		uint64_t ts, weight;
		size_t off;
	} * smp;
	size_t nsmp, capsmp;
	uint32_t *sfr;
	size_t nsfr, capsfr;
	/* memory=True: sampled allocations (_pymem.h); numa=True: and their nodes */
	bool want_mem, want_numa, mem_on;
	uint64_t mem_interval;
	char mem_why[128];
	struct py_mem_stats mst;
	struct mev {
		uint32_t kind, tid, func;
		int32_t node, cpu_node;
		uint64_t ts, ptr, size;
		double weight;
	} * mev;
	size_t nmev, capmev;
	pid_t pid;
	int err; /* out of memory on the recording path: stop says so */
	/* at stop: threads whose profile hook the program replaced (sys.setprofile) */
	Py_ssize_t displaced;
	PyObject *displaced_by; /* what the first of them had instead (a str), or NULL */
} CpuCollector;

typedef struct {
	PyObject_HEAD CpuCollector *col; /* borrowed: col->recs holds this; NULL once stopped */
	Py_tracefunc prev;
	PyObject *prev_obj;
	struct sonde_ring_writer w;
	struct bev *batch; /* the open batch record's events; NULL: none open */
	uint32_t used, cap;
	uint64_t depth; /* calls open since start (profile hook): a return at 0 is older */
	bool claimed, no_ring;
} ThreadRec;

static PyTypeObject ThreadRecType, CpuCollectorType;
static PyMethodDef trace_size_def;
static Py_ssize_t extra_index = -1;
static uint32_t next_gen = 1;
static volatile sig_atomic_t in_child; /* set in a child of fork(): write nothing */
/* A thread that ends gives its ring back (thread_gone), stop() takes them all: one at a time. */
static pthread_mutex_t retire_lock = PTHREAD_MUTEX_INITIALIZER;

static void no_free(void *p)
{
	(void)p;
}

/*
 * The recording clock: the TSC where it is invariant (constant rate, ticking
 * in every state; 15 ns a reading here against 37 for clock_gettime), mapped
 * onto CLOCK_MONOTONIC from readings of both at start and at each drain; else
 * CLOCK_MONOTONIC itself.
 */
static bool use_tsc;

static inline uint64_t tick(void)
{
#if defined(__x86_64__)
	if (__builtin_expect(use_tsc, 1))
		return __builtin_ia32_rdtsc();
#endif
	return sonde_clock_ns();
}

/* Both clocks, read as close together as they can be. */
static void clock_pair(uint64_t *t, uint64_t *ns)
{
	if (use_tsc)
		sonde_clock_tsc_pair(t, ns);
	else
		*t = *ns = sonde_clock_ns();
}

static void calibrate(CpuCollector *c)
{
	uint64_t t, ns;

	clock_pair(&t, &ns);
	if (use_tsc && t > c->tick0 && ns > c->ns0)
		c->ns_per_tick = (double)(ns - c->ns0) / (double)(t - c->tick0);
}

static inline uint64_t to_ns(const CpuCollector *c, uint64_t t)
{
	if (!use_tsc)
		return t;
	return c->ns0 + (uint64_t)((double)(int64_t)(t - c->tick0) * c->ns_per_tick);
}

/* The frame evaluator's collector, and a generation that tells stale thread state. */
static CpuCollector *active;
static uint32_t active_gen;
static __thread ThreadRec *tl_rec __attribute__((tls_model("initial-exec")));
static __thread uint32_t tl_gen __attribute__((tls_model("initial-exec")));
static __thread bool tl_busy __attribute__((tls_model("initial-exec")));
static _PyFrameEvalFunction g_prev_eval; /* the evaluator ours calls (NULL: the default) */

static void on_fork_child(void)
{
	in_child = 1;
	active_gen = 0; /* the frame evaluator records nothing in the child */
	active = NULL;
}

/* ---- function ids ---------------------------------------------------------------------- */

static void emit_func(CpuCollector *c, uint32_t id, const char *module, uint64_t line,
		      const char *name);
static void emit_name(CpuCollector *c, uint32_t tid, const char *name);
static void emit_mark(CpuCollector *c, uint32_t type, uint32_t tid, uint64_t a, uint64_t b);

static int add_fn(CpuCollector *c, const char *module, uint64_t line, const char *name,
		  uint32_t *id)
{
	struct fn *f;

	if (sonde_grow((void **)&c->fns, &c->capfns, c->nfns + 1, sizeof(*c->fns)))
		return -1;
	f = &c->fns[c->nfns];
	f->module = strdup(module ? module : "?");
	f->name = strdup(name ? name : "?");
	f->line = line;
	if (!f->module || !f->name) {
		free(f->module);
		free(f->name);
		return -1;
	}
	*id = (uint32_t)c->nfns++;
	if (c->ring_path) /* sonde reads the function from its rings */
		emit_func(c, *id, f->module, f->line, f->name);
	return 0;
}

#if SONDE_EVAL_ENGINE
/* The layout of a code object's extra slots in 3.11 and 3.12 (Objects/codeobject.c). */
typedef struct {
	Py_ssize_t ce_size;
	void *ce_extras[1];
} code_extra;
#endif

static __thread bool tl_naming; /* in code_id: allocations it makes are not asked to name */

static int code_id(CpuCollector *c, PyCodeObject *co, uint32_t *id)
{
	void *x = NULL;
	uintptr_t v;

#if SONDE_EVAL_ENGINE
	{ /* read in place: this runs for every call */
		const code_extra *e = co->co_extra;

		x = e && extra_index < e->ce_size ? e->ce_extras[extra_index] : NULL;
	}
#else
	if (_PyCode_GetExtra((PyObject *)co, extra_index, &x) < 0) {
		PyErr_Clear();
		x = NULL;
	}
#endif
	v = (uintptr_t)x;
	if (v && (uint32_t)(v >> 32) == c->gen) {
		*id = (uint32_t)v - 1;
		return 0;
	}
	tl_naming = true;
	if (add_fn(c, PyUnicode_AsUTF8(co->co_filename), (uint64_t)co->co_firstlineno,
		   PyUnicode_AsUTF8(co->co_qualname), id)) {
		PyErr_Clear();
		tl_naming = false;
		return -1;
	}
	if (_PyCode_SetExtra((PyObject *)co, extra_index,
			     (void *)((uintptr_t)c->gen << 32 | (uintptr_t)(*id + 1))) < 0)
		PyErr_Clear();
	tl_naming = false;
	return 0;
}

/*
 * The type that defines a built-in method: the first in the MRO of self's type
 * (self's own, for a class method) whose method descriptor is ml. A method is
 * named by where it is defined, as cProfile names it: dict.setdefault, called
 * on an enum's _EnumDict or any dict subclass.
 */
static const char *defining_type(PyObject *self, PyMethodDef *ml)
{
	PyTypeObject *t = PyType_Check(self) ? (PyTypeObject *)self : Py_TYPE(self);
	PyObject *mro = t->tp_mro;
	Py_ssize_t i;

	for (i = 0; mro && PyTuple_Check(mro) && i < PyTuple_GET_SIZE(mro); i++) {
		PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
#if PY_VERSION_HEX >= 0x030C0000
		PyObject *dict = PyType_GetDict(b), *d;

		d = dict ? PyDict_GetItemString(dict, ml->ml_name) : NULL;
		Py_XDECREF(dict);
#else
		PyObject *d = b->tp_dict ? PyDict_GetItemString(b->tp_dict, ml->ml_name) : NULL;
#endif
		if (d &&
		    (Py_IS_TYPE(d, &PyMethodDescr_Type) ||
		     Py_IS_TYPE(d, &PyClassMethodDescr_Type)) &&
		    ((PyMethodDescrObject *)d)->d_method == ml)
			return b->tp_name;
	}
	return t->tp_name;
}

/* A C function's id: builtins by their PyMethodDef, other callables by their type. */
static int cfunc_id(CpuCollector *c, PyObject *fn, uint32_t *id)
{
	char name[256];
	const char *module = "<built-in>";
	uint64_t key, v;

	if (PyCFunction_Check(fn)) {
		PyMethodDef *ml = ((PyCFunctionObject *)fn)->m_ml;
		PyObject *self = PyCFunction_GET_SELF(fn),
			 *mod = ((PyCFunctionObject *)fn)->m_module;

		key = (uint64_t)(uintptr_t)ml;
		if (u64map__get(&c->cfuncs, key, &v)) {
			*id = (uint32_t)v - 1;
			return 0;
		}
		if (self && !PyModule_Check(self))
			snprintf(name, sizeof(name), "%s.%s", defining_type(self, ml), ml->ml_name);
		else if (mod && PyUnicode_Check(mod))
			snprintf(name, sizeof(name), "%s.%s", PyUnicode_AsUTF8(mod), ml->ml_name);
		else
			snprintf(name, sizeof(name), "%s", ml->ml_name);
	} else {
		key = (uint64_t)(uintptr_t)Py_TYPE(fn) | 1;
		if (u64map__get(&c->cfuncs, key, &v)) {
			*id = (uint32_t)v - 1;
			return 0;
		}
		snprintf(name, sizeof(name), "%s.__call__", Py_TYPE(fn)->tp_name);
	}
	PyErr_Clear();
	if (add_fn(c, module, 0, name, id) || u64map__put(&c->cfuncs, key, (uint64_t)*id + 1))
		return -1;
	return 0;
}

/* ---- the hook ---------------------------------------------------------------------------- */

static void put_back(PyThreadState *ts, ThreadRec *r)
{
	Py_tracefunc prev = r->prev;
	PyObject *prev_obj = r->prev_obj;

	r->prev = NULL;
	r->prev_obj = NULL;
	/* _PyEval_SetProfile takes its own reference to prev_obj and drops ours to r */
	if (_PyEval_SetProfile(ts, prev, prev_obj) < 0)
		PyErr_Clear();
	Py_XDECREF(prev_obj);
}

/* ---- the batch writer: every thread's events, in batch records of its ring ------------- */

/* Publish the thread's open batch (its owner thread, or stop() holding the GIL). */
static void batch_close(ThreadRec *r)
{
	if (!r->batch)
		return;
	sonde_ring__close(&r->w, BATCH_HDR + r->used * (uint32_t)sizeof(struct bev));
	r->batch = NULL;
	r->used = r->cap = 0;
}

/*
 * A thread that claimed a ring ended (its key's destructor, without the GIL):
 * its last batch is published and the ring given back, for the reader to
 * drain and another thread to claim, so a program may start any number of
 * threads over its life. After stop() the key is gone and this never runs.
 */
static void thread_gone(void *v)
{
	ThreadRec *r = v;

	pthread_mutex_lock(&retire_lock);
	if (r->col && r->claimed && !in_child) {
		batch_close(r);
		sonde_ring__retire(&r->w);
		r->claimed = false;
	}
	pthread_mutex_unlock(&retire_lock);
}

static int drain(CpuCollector *c, bool quiet);

/* A new batch (the ring claimed first); false: the event is lost (counted). */
static bool batch_open(CpuCollector *c, ThreadRec *r)
{
	uint8_t *rec;

	batch_close(r);
	if (!r->claimed) {
		uint64_t a = c->want_syscalls ? sonde_clock_ns() : 0,
			 ta = c->ring_path ? tick() : 0;
		uint32_t tid = (uint32_t)syscall(SYS_gettid);
		int rc;

		if (r->no_ring)
			goto lost;
		rc = sonde_ring__claim(c->wa, (uint32_t)c->pid, tid, 1, &r->w);
		if (rc == -EBUSY && c->area && !c->quiet) {
			/* every ring is taken: drain ours now (copied), which frees the
			   rings of threads that ended, and try once more */
			if (drain(c, false) < 0)
				PyErr_Clear();
			rc = sonde_ring__claim(c->wa, (uint32_t)c->pid, tid, 1, &r->w);
		}
		/* its system calls are not the program's (no room: out of memory, said at stop) */
		if (c->want_syscalls &&
		    !sonde_grow((void **)&c->own, &c->capown, c->nown + 1, sizeof(*c->own)))
			c->own[c->nown++] = (struct own){ tid, a, sonde_clock_ns() };
		else if (c->want_syscalls)
			c->err = -ENOMEM;
		if (c->ring_path) /* sonde's rings: sonde leaves those system calls out */
			emit_mark(c, PYR_OWN, tid, ta, tick());
		if (rc) {
			r->no_ring = true; /* every ring is taken: this thread's events are lost */
			goto lost;
		}
		r->claimed = true;
		if (c->have_gone)
			pthread_setspecific(c->gone, r);
	}
	rec = sonde_ring__open(&r->w, EV_BATCH,
			       BATCH_HDR + c->batch * (uint32_t)sizeof(struct bev));
	if (!rec)
		goto lost;
	r->batch = (struct bev *)(rec + BATCH_HDR);
	r->cap = c->batch;
	r->used = 0;
	return true;
lost:
	c->lost++;
	return false;
}

/* One event into the thread's batch: plain stores, and how far it is filled. */
static inline void put(CpuCollector *c, ThreadRec *r, uint32_t type, uint32_t func, uint64_t ts)
{
	struct bev *e;

	if (__builtin_expect(r->used == r->cap, 0) && !batch_open(c, r))
		return;
	e = &r->batch[r->used++];
	e->type = type;
	e->func = func;
	e->ts = ts;
	sonde_ring__open_fill(&r->w, BATCH_HDR + r->used * (uint32_t)sizeof(struct bev));
}

static PyObject *col_start(struct CpuCollector *c, PyObject *unused);
static PyObject *col_stop(struct CpuCollector *c, PyObject *unused);
static PyObject *col_run(struct CpuCollector *c, PyObject *args);
static PyObject *col_exit(struct CpuCollector *c, PyObject *arg);

/*
 * One of sonde's own C functions, whose call and return are not the program's
 * (Python 3.11 reports the return of start() only when it saw its call: a
 * flag set at start would eat another function's return).
 */
static bool own_cfunc(PyObject *fn)
{
	PyMethodDef *ml;

	if (!fn || !PyCFunction_Check(fn))
		return false;
	ml = ((PyCFunctionObject *)fn)->m_ml;
	return ml == &trace_size_def || ml->ml_meth == (PyCFunction)col_start ||
	       ml->ml_meth == (PyCFunction)col_stop || ml->ml_meth == (PyCFunction)col_run ||
	       ml->ml_meth == (PyCFunction)col_exit;
}

/* sonde's rings: one metadata record (len: header included, a multiple of 8). */
static void *meta_reserve(CpuCollector *c, uint32_t type, uint32_t len)
{
	if (!c->ring_path || !c->wa || in_child)
		return NULL;
	if (!c->meta_claimed) {
		if (sonde_ring__claim(c->wa, (uint32_t)c->pid, (uint32_t)syscall(SYS_gettid), 1,
				      &c->meta))
			return NULL;
		c->meta_claimed = true;
	}
	return sonde_ring__reserve(&c->meta, type, len);
}

static void emit_mark(CpuCollector *c, uint32_t type, uint32_t tid, uint64_t a, uint64_t b)
{
	struct pyr_mark *m = meta_reserve(c, type, sizeof(*m));

	if (m) {
		m->tid = tid;
		m->a = a;
		m->b = b;
		sonde_ring__commit(&c->meta);
	}
}

static void emit_text(CpuCollector *c, uint32_t type, const void *head, size_t head_len,
		      const char *t1, size_t n1, const char *t2, size_t n2)
{
	uint32_t len = (uint32_t)((head_len + n1 + n2 + 7) & ~(size_t)7);
	uint8_t *r;

	if (len > 65536)
		return;
	r = meta_reserve(c, type, len);
	if (!r)
		return;
	memcpy(r + 4, (const uint8_t *)head + 4, head_len - 4); /* the header word is the ring's */
	memcpy(r + head_len, t1, n1);
	if (n2)
		memcpy(r + head_len + n1, t2, n2);
	sonde_ring__commit(&c->meta);
}

static void emit_func(CpuCollector *c, uint32_t id, const char *module, uint64_t line,
		      const char *name)
{
	struct pyr_func f = { 0, id, line, (uint32_t)strlen(module), (uint32_t)strlen(name) };

	emit_text(c, PYR_FUNC, &f, sizeof(f), module, f.module_len, name, f.name_len);
}

static void emit_name(CpuCollector *c, uint32_t tid, const char *name)
{
	struct pyr_name n = { 0, tid, (uint32_t)strlen(name), 0 };

	emit_text(c, PYR_NAME, &n, sizeof(n), name, n.name_len, NULL, 0);
}

static int cpu_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	uint64_t ts = tick();
	ThreadRec *r = (ThreadRec *)obj;
	CpuCollector *c;
	uint32_t type, id = 0;

	if (r->prev && r->prev(r->prev_obj, frame, what, arg) < 0)
		return -1;
	c = r->col; /* after the chained function, which may have let stop() run */
	if (!c)
		return 0;
	if (in_child) { /* a forked child: the rings are the parent's */
		r->col = NULL;
		if (PyThreadState_Get()->c_profileobj == obj)
			put_back(PyThreadState_Get(), r);
		return 0;
	}
	switch (what) {
	case PyTrace_CALL: {
		PyCodeObject *co = PyFrame_GetCode(frame);
		int rc = code_id(c, co, &id);

		Py_DECREF(co);
		if (rc) {
			c->err = -ENOMEM;
			return 0;
		}
		type = EV_CALL;
		break;
	}
	case PyTrace_RETURN:
		type = EV_RETURN;
		break;
	case PyTrace_C_CALL:
		if (!c->c_calls)
			return 0;
		if (own_cfunc(arg))
			return 0; /* sonde's own: start(), run(), stop(), trace_size() */
		if (cfunc_id(c, arg, &id)) {
			c->err = -ENOMEM;
			return 0;
		}
		type = EV_C_CALL;
		break;
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		if (!c->c_calls)
			return 0;
		if (own_cfunc(arg))
			return 0;
		type = EV_C_RETURN;
		break;
	default:
		return 0;
	}
	if (type == EV_CALL || type == EV_C_CALL)
		r->depth++;
	else if (r->depth) /* a return of a frame entered before start: not recorded */
		r->depth--;
	else
		return 0;
	put(c, r, type, id, ts);
	return 0;
}

/* ---- the frame evaluator: every Python call, the cheapest way in (c_calls=False) -------- */
#if SONDE_EVAL_ENGINE

static ThreadRec *rec_new(CpuCollector *c, PyThreadState *ts);
static void note_names(CpuCollector *c, bool current_only);

/* The calling thread's first frame while collecting: its ThreadRec, or NULL. */
static ThreadRec *eval_thread(PyThreadState *ts)
{
	CpuCollector *c = active;
	ThreadRec *r;

	if (!c || in_child || tl_busy)
		return NULL;
	tl_busy = true;
	r = rec_new(c, ts); /* (its name comes from threading's hook: see thread_hook) */
	if (r) {
		r->prev = NULL;
		Py_CLEAR(r->prev_obj);
	} else {
		PyErr_Clear();
		c->err = -ENOMEM;
	}
	tl_busy = false;
	if (active != c)
		return NULL;
	tl_rec = r;
	tl_gen = active_gen;
	return r;
}

static PyObject *eval_hook(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag)
{
	ThreadRec *r = tl_rec;
	uint32_t gen = active_gen, id;
	CpuCollector *c = active;
	_PyFrameEvalFunction prev = g_prev_eval;
	PyObject *res;

	if (__builtin_expect(tl_gen != gen || !r, 0)) {
		r = gen ? eval_thread(ts) : NULL;
		c = active;
	}
	/* a generator's or coroutine's first evaluation only makes the object
	   (RETURN_GENERATOR): not a call, as the profile hook does not see it */
	if (r && (f->f_code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) &&
	    f->prev_instr == _PyCode_CODE(f->f_code) - 1)
		r = NULL;
	if (r) {
		if (code_id(c, f->f_code, &id) == 0)
			put(c, r, EV_CALL, id, tick());
		else
			c->err = -ENOMEM;
	}
	res = prev ? prev(ts, f, throwflag) : _PyEval_EvalFrameDefault(ts, f, throwflag);
	if (r && tl_gen == active_gen)
		put(c, r, EV_RETURN, 0, tick());
	return res;
}
#endif

static ThreadRec *rec_new(CpuCollector *c, PyThreadState *ts)
{
	ThreadRec *r = PyObject_GC_New(ThreadRec, &ThreadRecType);

	if (!r)
		return NULL;
	r->col = c;
	r->prev = ts->c_profilefunc;
	r->prev_obj = ts->c_profileobj;
	Py_XINCREF(r->prev_obj);
	r->claimed = r->no_ring = false;
	r->depth = 0;
	memset(&r->w, 0, sizeof(r->w));
	r->batch = NULL;
	r->used = r->cap = 0;
	PyObject_GC_Track(r);
	if (PyList_Append(c->recs, (PyObject *)r)) {
		Py_DECREF(r);
		return NULL;
	}
	Py_DECREF(r); /* the list keeps it; the thread state takes its own */
	return r;
}

/*
 * threading where it is loaded, else NULL (a new reference). It is not
 * imported for sonde: a module sonde loads before the program is one whose
 * import the program then finds done, its cost missing from the profile
 * (threading brings collections, functools and six more).
 */
static PyObject *loaded_threading(void)
{
	PyObject *name = PyUnicode_InternFromString("threading"), *m = NULL;

	if (name)
		m = PyImport_GetModule(name);
	Py_XDECREF(name);
	if (!m)
		PyErr_Clear();
	return m;
}

/*
 * Record the names of threading's threads (native id -> name); errors are
 * ignored. Where the program has not loaded threading, no thread of its
 * exists.
 */
static void note_names(CpuCollector *c, bool current_only)
{
	PyObject *threading = loaded_threading(), *list = NULL;
	Py_ssize_t i;

	if (threading)
		list = current_only
			       ? Py_BuildValue("[N]", PyObject_CallMethod(threading,
									  "current_thread", NULL))
			       : PyObject_CallMethod(threading, "enumerate", NULL);
	for (i = 0; list && PyList_Check(list) && i < PyList_GET_SIZE(list); i++) {
		PyObject *t = PyList_GET_ITEM(list, i);
		PyObject *id = PyObject_GetAttrString(t, "native_id");
		PyObject *nm = PyObject_GetAttrString(t, "name");

		if (id && nm && id != Py_None) {
			PyDict_SetItem(c->names, id, nm);
			if (c->ring_path && PyUnicode_Check(nm)) {
				const char *u = PyUnicode_AsUTF8(nm);

				if (u)
					emit_name(c, (uint32_t)PyLong_AsUnsignedLong(id), u);
			}
		}
		Py_XDECREF(id);
		Py_XDECREF(nm);
	}
	Py_XDECREF(list);
	Py_XDECREF(threading);
	PyErr_Clear();
}

/* Hook thread state ts (chaining what it has); 0 or -1. */
static int hook(CpuCollector *c, PyThreadState *ts, ThreadRec **out)
{
	ThreadRec *r = rec_new(c, ts);

	if (!r || _PyEval_SetProfile(ts, cpu_hook, (PyObject *)r) < 0)
		return -1;
	if (out)
		*out = r;
	return 0;
}

/*
 * threading's hook: a thread started while collecting calls sys.setprofile(this)
 * first thing, so this runs (through sys's trampoline) at its first event. It
 * puts the hook that was there before start in place, then ours over it, and
 * records the event.
 */
static PyObject *thread_hook(PyObject *self, PyObject *args)
{
	CpuCollector *c = (CpuCollector *)self;
	PyObject *frame, *arg, *sys_mod;
	const char *event;
	PyThreadState *ts = PyThreadState_Get();
	ThreadRec *r;
	int what;

	if (!PyArg_ParseTuple(args, "OsO", &frame, &event, &arg))
		return NULL;
	if (c->state != ST_COLLECTING || in_child) {
		if (_PyEval_SetProfile(ts, NULL, NULL) < 0)
			return NULL;
		Py_RETURN_NONE;
	}
	sys_mod = PyImport_ImportModule("sys");
	if (!sys_mod)
		return NULL;
	/* what threading would have installed without us (None: nothing) */
	{
		PyObject *res =
			PyObject_CallMethod(sys_mod, "setprofile", "O",
					    c->prev_thread_hook ? c->prev_thread_hook : Py_None);

		Py_DECREF(sys_mod);
		if (!res)
			return NULL;
		Py_DECREF(res);
	}
#if SONDE_EVAL_ENGINE
	if (c->eval_engine) { /* the evaluator records; this only names the thread */
		uint32_t gen = tl_gen;

		tl_gen = 0; /* threading's frames run here are sonde's: not recorded */
		tl_busy = true;
		note_names(c, true);
		tl_busy = false;
		tl_gen = gen;
		Py_RETURN_NONE;
	}
#endif
	if (hook(c, ts, &r))
		return NULL;
	note_names(c, true);
	what = !strcmp(event, "call")	     ? PyTrace_CALL
	       : !strcmp(event, "return")    ? PyTrace_RETURN
	       : !strcmp(event, "c_call")    ? PyTrace_C_CALL
	       : !strcmp(event, "c_return")  ? PyTrace_C_RETURN
	       : !strcmp(event, "exception") ? PyTrace_EXCEPTION
					     : PyTrace_C_EXCEPTION;
	if (cpu_hook((PyObject *)r, (PyFrameObject *)frame, what, arg == Py_None ? NULL : arg) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyMethodDef thread_hook_def = { "_sonde_cpu_thread_hook", thread_hook, METH_VARARGS,
				       "Hooks a thread started while a CpuCollector collects." };

/* ---- ThreadRec ------------------------------------------------------------------------- */

static int rec_traverse(ThreadRec *r, visitproc visit, void *arg)
{
	Py_VISIT(r->prev_obj);
	return 0;
}

static int rec_clear(ThreadRec *r)
{
	Py_CLEAR(r->prev_obj);
	r->prev = NULL;
	return 0;
}

static void rec_dealloc(ThreadRec *r)
{
	PyObject_GC_UnTrack(r);
	rec_clear(r);
	PyObject_GC_Del(r);
}

static PyTypeObject ThreadRecType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde._sonde.CpuThread",
	.tp_basicsize = sizeof(ThreadRec),
	.tp_dealloc = (destructor)rec_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "One thread's hook of a CpuCollector.",
	.tp_traverse = (traverseproc)rec_traverse,
	.tp_clear = (inquiry)rec_clear,
};

/* ---- draining --------------------------------------------------------------------------- */

static struct tstore *store_of(CpuCollector *c, uint32_t tid)
{
	uint64_t v;

	if (u64map__get(&c->tindex, tid, &v))
		return &c->ts[v - 1];
	if (sonde_grow((void **)&c->ts, &c->capts, c->nts + 1, sizeof(*c->ts)))
		return NULL;
	if (u64map__put(&c->tindex, tid, c->nts + 1))
		return NULL;
	memset(&c->ts[c->nts], 0, sizeof(c->ts[0]));
	c->ts[c->nts].tid = tid;
	return &c->ts[c->nts++];
}

/*
 * The next batch record in [*p, end): its events (and their count in *n), *p
 * past it; NULL at the end or at a damaged record.
 */
static const uint8_t *next_batch(const uint8_t **p, const uint8_t *end, uint32_t *n)
{
	while (*p + 4 <= end) {
		const uint8_t *rec = *p;
		uint32_t h, len;

		memcpy(&h, rec, 4);
		len = SONDE_RING_REC_LEN(h);
		if (len < 8 || rec + len > end)
			return NULL;
		*p = rec + len;
		if (SONDE_RING_REC_TYPE(h) == EV_BATCH && len >= BATCH_HDR) {
			*n = (len - BATCH_HDR) / (uint32_t)sizeof(struct bev);
			return rec + BATCH_HDR;
		}
	}
	return NULL;
}

static int sink(void *ctx, const struct sonde_ring_chunk *ch, const void *data)
{
	CpuCollector *c = ctx;
	struct tstore *s = store_of(c, ch->tid);
	const uint8_t *p = data, *end = p + ch->bytes;

	if (!s)
		return -ENOMEM;
	if (c->quiet) { /* in place: the area stays mapped until the collector goes */
		uint64_t n = 0;
		uint32_t k;

		while (next_batch(&p, end, &k))
			n += k;
		if (sonde_grow((void **)&s->segs, &s->capsegs, s->nsegs + 1, sizeof(*s->segs)))
			return -ENOMEM;
		s->segs[s->nsegs].p = data;
		s->segs[s->nsegs++].bytes = ch->bytes;
		s->seg_events += n;
		c->events += n;
		return 0;
	}
	/* a batch's events are as many as its bytes, less headers: room for all at once */
	if (s->n + ch->bytes / sizeof(struct bev) > s->cap) {
		size_t cap = s->n + ch->bytes / sizeof(struct bev);
		struct ev *g = realloc(s->ev, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		s->ev = g;
		s->cap = cap;
	}
	for (;;) {
		uint32_t k, n;
		const uint8_t *b0 = next_batch(&p, end, &n);

		if (!b0)
			break;
		for (k = 0; k < n && s->n < s->cap; k++) {
			struct bev b;
			struct ev *e = &s->ev[s->n++];

			memcpy(&b, b0 + k * sizeof(b), sizeof(b));
			e->hdr = SONDE_RING_REC(b.type, sizeof(*e));
			e->func = b.func;
			e->ts = b.type == EV_SIZE ? b.ts : to_ns(c, b.ts);
		}
		c->events += k;
	}
	return 0;
}

static void it_init(struct ev_it *it, const struct tstore *s)
{
	memset(it, 0, sizeof(*it));
	it->s = s;
	it->left = s->n + s->seg_events - s->trim;
}

static bool py_next(const CpuCollector *c, struct ev_it *it, struct ev *e)
{
	const struct tstore *s = it->s;
	struct bev b;

	if (!it->left)
		return false;
	if (it->i < s->n) {
		*e = s->ev[it->i++];
		it->left--;
		return true;
	}
	while (it->bk == it->bn) { /* the next batch record, of this segment or the next */
		const uint8_t *next = it->rp ? next_batch(&it->rp, it->rend, &it->bn) : NULL;

		if (next) {
			it->b = next;
			it->bk = 0;
			continue;
		}
		it->bn = it->bk = 0;
		if (it->seg == s->nsegs)
			return false;
		it->rp = s->segs[it->seg].p;
		it->rend = it->rp + s->segs[it->seg].bytes;
		it->seg++;
	}
	memcpy(&b, it->b + (size_t)it->bk++ * sizeof(b), sizeof(b));
	e->hdr = SONDE_RING_REC(b.type, sizeof(*e));
	e->func = b.func;
	e->ts = b.type == EV_SIZE ? b.ts : to_ns(c, b.ts);
	it->left--;
	return true;
}

/* The store's Python events and its system calls, merged in time order. */
static bool it_next(const CpuCollector *c, struct ev_it *it, struct ev *e)
{
	const struct tstore *s = it->s;

	if (!it->have_pe)
		it->have_pe = py_next(c, it, &it->pe);
	if (it->k < s->nsc && (!it->have_pe || (SONDE_RING_REC_TYPE(it->pe.hdr) != EV_SIZE &&
						s->sc[it->k].ts < it->pe.ts))) {
		*e = s->sc[it->k++];
		return true;
	}
	if (!it->have_pe)
		return false;
	*e = it->pe;
	it->have_pe = false;
	return true;
}

/* Every ring into the stores; quiet: no writer writes any more (stop), read in place. */
static int drain(CpuCollector *c, bool quiet)
{
	long long n;

	if (!c->area)
		return 0;
	calibrate(c);
	c->quiet = quiet;
	n = quiet ? sonde_ring_area__drain_quiet(c->area, sink, c)
		  : sonde_ring_area__drain(c->area, sink, c);
	if (n < 0) {
		errno = (int)-n;
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	return 0;
}

/* ---- CpuCollector ------------------------------------------------------------------------ */

static int col_init(CpuCollector *c, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "buffer", "c_calls", "syscalls",	       "mode",	"hz",	"wall",
			       "memory", "numa",    "memory_interval", "_ring", "_tsc", NULL };
	PyObject *buffer = Py_None;
	const char *ring = NULL, *mode = "calls";
	int c_calls = 1, syscalls = 0, tsc = 0, wall = 0, memory = 0, numa = 0;
	unsigned long long interval = PY_MEM_INTERVAL;
	double hz = 100;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OppsdpppKzp:CpuCollector", kws, &buffer,
					 &c_calls, &syscalls, &mode, &hz, &wall, &memory, &numa,
					 &interval, &ring, &tsc))
		return -1;
	if (interval < 1 || interval > (1ull << 40)) {
		PyErr_SetString(PyExc_ValueError,
				"memory_interval: mean bytes between samples, 1 to 1 TiB");
		return -1;
	}
	c->want_mem = memory || numa;
	c->want_numa = numa;
	c->mem_interval = interval;
	if (strcmp(mode, "calls") && strcmp(mode, "sampling")) {
		PyErr_Format(PyExc_ValueError, "mode: 'calls' or 'sampling', not '%s'", mode);
		return -1;
	}
	if (!(hz >= 1 && hz <= 10000)) {
		PyErr_SetString(PyExc_ValueError, "hz: samples per second, 1 to 10000");
		return -1;
	}
	if (!strcmp(mode, "sampling") && syscalls) {
		PyErr_SetString(PyExc_ValueError,
				"syscalls=True records calls: not with mode='sampling'");
		return -1;
	}
	c->sampling = !strcmp(mode, "sampling");
	c->hz = hz;
	c->wall = wall;
	c->want_syscalls = syscalls;
	if (ring && !c->ring_path && !(c->ring_path = strdup(ring))) {
		PyErr_NoMemory();
		return -1;
	}
	c->ring_tsc = tsc;
	if (c->state != ST_IDLE || c->area) {
		PyErr_SetString(SondePy_StateError, "a CpuCollector is initialised once");
		return -1;
	}
	c->ring_bytes = 64u << 20;
	if (buffer != Py_None) {
		unsigned long long b = PyLong_AsUnsignedLongLong(buffer);

		if (b == (unsigned long long)-1 && PyErr_Occurred())
			return -1;
		if (b < 4096 || (b & (b - 1)) || b > (1ull << 32)) {
			PyErr_SetString(
				PyExc_ValueError,
				"buffer: bytes per thread, a power of two from 4096 to 4 GiB");
			return -1;
		}
		c->ring_bytes = (size_t)b;
	}
	c->c_calls = c_calls;
	c->eval_engine = SONDE_EVAL_ENGINE && !c_calls;
	/* a batch record: 4 KiB, or a quarter of a small ring */
	c->batch = (uint32_t)((c->ring_bytes / 4 < 4096 ? c->ring_bytes / 4 : 4096) - BATCH_HDR) /
		   (uint32_t)sizeof(struct bev);
	if (!c->recs && !(c->recs = PyList_New(0)))
		return -1;
	if (!c->names && !(c->names = PyDict_New()))
		return -1;
	return 0;
}

static void release_rings(CpuCollector *c, bool keep_area);

/* System calls of every thread of this process (and those started later); a reason if not. */
static void syscalls_open(CpuCollector *c)
{
	pid_t *tids = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int rc;

	while (d && (de = readdir(d))) { /* every thread, however many */
		if (de->d_name[0] == '.')
			continue;
		if (sonde_grow((void **)&tids, &cap, n + 1, sizeof(*tids))) {
			sonde_strbuf__reset(&c->sc_why);
			sonde_strbuf__adds(&c->sc_why, "out of memory listing the threads");
			closedir(d);
			free(tids);
			return;
		}
		tids[n++] = (pid_t)atoi(de->d_name);
	}
	if (d)
		closedir(d);
	sonde_strbuf__reset(&c->sc_why);
	rc = sonde_syscalls__open(tids, n, 0, &c->sc, &c->sc_why);
	free(tids);
	if (!rc && sonde_syscalls__enable(c->sc, true) < 0) {
		sonde_strbuf__addf(&c->sc_why, "perf_event: enabling the tracepoints: %s",
				   strerror(errno));
		sonde_syscalls__close(c->sc);
		c->sc = NULL;
	}
}

/* One system call event, into its thread's store (this process's, while collecting). */
static int syscall_event(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, bool enter, long nr)
{
	CpuCollector *c = ctx;
	struct tstore *s;

	if (pid != (uint32_t)c->pid || ns < c->t0 || ns > c->t1)
		return 0;
	s = store_of(c, tid);
	if (!s)
		return -ENOMEM;
	if (sonde_grow((void **)&s->sc, &s->capsc, s->nsc + 1, sizeof(*s->sc)))
		return -ENOMEM;
	s->sc[s->nsc].hdr = SONDE_RING_REC(enter ? EV_SYS_ENTER : EV_SYS_EXIT, sizeof(struct ev));
	s->sc[s->nsc].func = (uint32_t)nr; /* the number until the calls are matched */
	s->sc[s->nsc++].ts = ns;
	return 0;
}

static int cmp_ts(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return (x->ts > y->ts) - (x->ts < y->ts);
}

/*
 * A thread's system calls in time order (the CPUs' rings each hold a part),
 * each exit after its entry: an exit whose entry came before start, and an
 * entry whose exit never came but another entry did (a lost sample), are
 * left out. Numbers become function ids ("syscall:write").
 */
static int syscalls_match(CpuCollector *c, struct tstore *s)
{
	size_t i, n = 0;
	bool open = false;

	qsort(s->sc, s->nsc, sizeof(*s->sc), cmp_ts);
	for (i = 0; i < s->nsc; i++) {
		struct ev e = s->sc[i];
		bool enter = SONDE_RING_REC_TYPE(e.hdr) == EV_SYS_ENTER, mine = false;
		uint64_t v;
		size_t k;

		for (k = 0; k < c->nown && !mine; k++)
			mine = c->own[k].tid == s->tid && e.ts >= c->own[k].a &&
			       e.ts <= c->own[k].b;
		if (mine)
			continue; /* sonde's own, claiming the thread's ring */
		if (!enter && !open)
			continue;
		if (enter && open)
			n--; /* the last entry lost its exit */
		if (enter) {
			long nr = (long)(int32_t)e.func;

			if (u64map__get(&c->sc_ids, (uint64_t)nr, &v)) {
				e.func = (uint32_t)v - 1;
			} else {
				char name[64], full[80];

				sonde_syscall__name(nr, name, sizeof(name));
				snprintf(full, sizeof(full), "syscall:%s", name);
				if (add_fn(c, "<kernel>", 0, full, &e.func) ||
				    u64map__put(&c->sc_ids, (uint64_t)nr, (uint64_t)e.func + 1))
					return -ENOMEM;
			}
		} else {
			e.func = 0;
		}
		s->sc[n++] = e;
		open = enter;
	}
	s->nsc = n; /* an entry left open at the end: the call is unfinished */
	c->sc_events += n;
	return 0;
}

/* After the rings: the system calls, each thread's into its store; the recorder closed. */
static int syscalls_collect(CpuCollector *c)
{
	size_t k;
	int rc;

	if (!c->sc)
		return 0;
	sonde_syscalls__enable(c->sc, false);
	rc = sonde_syscalls__read(c->sc, syscall_event, c);
	c->sc_lost = sonde_syscalls__lost(c->sc);
	sonde_syscalls__close(c->sc);
	c->sc = NULL;
	for (k = 0; k < c->nts && rc >= 0; k++)
		rc = syscalls_match(c, &c->ts[k]);
	c->events += c->sc_events;
	return rc;
}

/* The clocks' first reading; the TSC's rate is estimated once, then refined at each drain. */
static void start_clock(CpuCollector *c)
{
	static double est;

	if (use_tsc && !est) {
		uint64_t t0, n0, t1, n1;
		struct timespec d = { 0, 2000000 };

		clock_pair(&t0, &n0);
		nanosleep(&d, NULL);
		clock_pair(&t1, &n1);
		est = t1 > t0 ? (double)(n1 - n0) / (double)(t1 - t0) : 0;
		if (est <= 0) /* a TSC that does not move: take clock_gettime */
			use_tsc = false;
	}
	clock_pair(&c->tick0, &c->ns0);
	c->ns_per_tick = est;
}

/* ---- mode sampling ---------------------------------------------------------------------- */

static int sample_code_id(void *ctx, PyCodeObject *co, uint32_t *id)
{
	return code_id(ctx, co, id);
}

/*
 * A stack from the sampler (holding the GIL): into sonde's metadata ring, or
 * kept. Naming a new thread runs threading's code (PY_SAMPLE_RAN_PYTHON).
 */
static int on_sample(void *ctx, uint32_t tid, uint64_t weight, const uint32_t *ids, uint32_t n)
{
	CpuCollector *c = ctx;
	struct smp *m;
	uint64_t v = 0;
	int ran = 0;

	if (in_child || tid == c->stopping) /* the thread in stop(): sonde's code */
		return 0;
	if (!u64map__get(&c->tindex, tid, &v) || v < 8) {
		/* a thread without a name yet: threading's (tried 8 times: a thread of
		   _thread has none, and one just started may not have its id yet) */
		PyObject *key = PyLong_FromUnsignedLong(tid);

		if (key && !PyDict_GetItem(c->names, key)) { /* borrowed */
			note_names(c, false);
			ran = PY_SAMPLE_RAN_PYTHON;
		}
		if (u64map__put(&c->tindex, tid, key && PyDict_GetItem(c->names, key) ? 8 : v + 1))
			c->err = -ENOMEM;
		Py_XDECREF(key);
		PyErr_Clear();
	}
	if (c->ring_path) {
		uint32_t len = (uint32_t)((sizeof(struct pyr_sample) + n * sizeof(*ids) + 7) & ~7u);
		struct pyr_sample *r = meta_reserve(c, PYR_SAMPLE, len);

		if (!r) {
			c->lost++;
			return ran;
		}
		r->tid = tid;
		r->ts = tick();
		r->weight = weight;
		r->n = n;
		r->pad = 0;
		memcpy(r + 1, ids, n * sizeof(*ids));
		if (len > sizeof(*r) + n * sizeof(*ids)) /* the padding */
			memset((uint8_t *)(r + 1) + n * sizeof(*ids), 0,
			       len - sizeof(*r) - n * sizeof(*ids));
		sonde_ring__commit(&c->meta);
		return ran | PY_SAMPLE_KEPT;
	}
	if (sonde_grow((void **)&c->smp, &c->capsmp, c->nsmp + 1, sizeof(*c->smp)) ||
	    sonde_grow((void **)&c->sfr, &c->capsfr, c->nsfr + n + 1, sizeof(*c->sfr))) {
		c->err = -ENOMEM;
		return ran;
	}
	m = &c->smp[c->nsmp++];
	m->tid = tid;
	m->n = n;
	m->ts = sonde_clock_ns();
	m->weight = weight;
	m->off = c->nsfr;
	memcpy(c->sfr + c->nsfr, ids, n * sizeof(*ids));
	c->nsfr += n;
	return ran | PY_SAMPLE_KEPT;
}

/* ---- memory=True ------------------------------------------------------------------------ */

/* The calling thread's running Python function, read without allocating. */
static int mem_here(void *ctx, uint32_t *id)
{
#if SONDE_EVAL_ENGINE
	struct _PyInterpreterFrame *f = PyThreadState_GET()->cframe->current_frame;

	if (tl_naming) /* naming a function already: this allocation is sonde's */
		return -1;
	while (f && _PyFrame_IsIncomplete(f))
		f = f->previous;
	return f ? code_id(ctx, f->f_code, id) : -1;
#else
	(void)ctx;
	(void)id;
	return -1; /* the frame API would allocate inside the allocator */
#endif
}

static void mem_event(void *ctx, uint32_t kind, uint32_t func, uint64_t ptr, uint64_t size,
		      double weight, int32_t node, int32_t cpu_node)
{
	CpuCollector *c = ctx;
	uint32_t tid;

	if (in_child || c->pid != getpid())
		return;
	tid = (uint32_t)syscall(SYS_gettid);
	if (c->ring_path) {
		struct pyr_mem *r = meta_reserve(c, PYR_MEM, sizeof(*r));

		if (!r) {
			c->lost++;
			return;
		}
		r->tid = tid;
		r->ts = tick();
		r->ptr = ptr;
		r->size = size;
		r->weight = weight;
		r->node = node;
		r->cpu_node = cpu_node;
		r->func = func;
		r->kind = kind;
		sonde_ring__commit(&c->meta);
		return;
	}
	if (sonde_grow((void **)&c->mev, &c->capmev, c->nmev + 1, sizeof(*c->mev))) {
		c->err = -ENOMEM;
		return;
	}
	c->mev[c->nmev++] = (struct mev){ kind, tid,  func,  node, cpu_node, sonde_clock_ns(),
					  ptr,	size, weight };
}

/*
 * Sampled allocations on (start checked no other collector's are: py_mem__busy);
 * said in sonde's rings whether NUMA nodes are read.
 */
static void mem_start(CpuCollector *c)
{
	if (!c->want_mem || py_mem__start(c->mem_interval, c->want_numa, mem_here, mem_event, c,
					  c->mem_why, sizeof(c->mem_why)))
		return;
	c->mem_on = true;
	if (c->ring_path && c->want_numa) {
		struct pyr_name n = { 0, !c->mem_why[0], (uint32_t)strlen(c->mem_why), 0 };

		emit_text(c, PYR_NUMA, &n, sizeof(n), c->mem_why, n.name_len, NULL, 0);
	}
}

static void mem_stop(CpuCollector *c)
{
	if (c->mem_on)
		py_mem__stop(&c->mst);
	c->mem_on = false;
}

static PyObject *start_sampling(CpuCollector *c)
{
	if (c->ring_path) {
		c->wa = sonde_ring_area__attach(c->ring_path);
		if (!c->wa)
			return PyErr_SetFromErrnoWithFilename(PyExc_OSError, c->ring_path);
		use_tsc = c->ring_tsc;
	}
	c->gen = next_gen++;
	c->pid = getpid();
	note_names(c, false);
	c->t0 = sonde_clock_ns();
	emit_mark(c, PYR_START, 0, tick(), 0);
	c->sampler = py_sampler__start(c->hz, c->wall, sample_code_id, on_sample, c);
	if (!c->sampler) {
		PyErr_SetFromErrno(PyExc_OSError);
		if (c->meta_claimed)
			sonde_ring__retire(&c->meta);
		c->meta_claimed = false;
		release_rings(c, false);
		return NULL;
	}
	c->state = ST_COLLECTING;
	mem_start(c);
	Py_RETURN_NONE;
}

/* d[key] = v; nonzero with the exception set on failure. */
static int set_u64(PyObject *d, const char *key, uint64_t v)
{
	PyObject *o = PyLong_FromUnsignedLongLong(v);
	int rc = o ? PyDict_SetItemString(d, key, o) : -1;

	Py_XDECREF(o);
	return rc;
}

static PyObject *stop_sampling(CpuCollector *c)
{
	char name[PYR_TIMER_NAME_MAX];
	PyObject *res;

	mem_stop(c);
	c->stopping = (uint32_t)syscall(SYS_gettid);
	py_sampler__stop(c->sampler, &c->sst);
	c->sampler = NULL;
	c->t1 = sonde_clock_ns();
	note_names(c, false);
	c->state = ST_FINALIZED;
	if (c->ring_path && c->pid == getpid()) {
		emit_mark(c, PYR_TICKS, (uint32_t)c->sst.truncated, c->sst.ticks, c->sst.late);
		emit_mark(c, PYR_TIMER, c->sst.how, c->sst.untimed, c->sst.rerouted);
		if (c->sst.cpu_ns)
			emit_mark(c, PYR_CPU, 0, c->sst.cpu_ns, c->sst.weighed_ns);
		emit_mark(c, PYR_STOP, 0, tick(), 0);
		if (c->meta_claimed)
			sonde_ring__retire(&c->meta);
		c->meta_claimed = false;
	}
	release_rings(c, false);
	if (c->err) {
		PyErr_SetString(PyExc_MemoryError,
				"the CPU collector ran out of memory while sampling");
		return NULL;
	}
	res = Py_BuildValue(
		"{s:s,s:K,s:K,s:K,s:K,s:K,s:n,s:K,s:d,s:s,s:s,s:K,s:K}", "mode", "sampling",
		"samples", (unsigned long long)c->sst.samples, "ticks",
		(unsigned long long)c->sst.ticks, "late_ticks", (unsigned long long)c->sst.late,
		"truncated_stacks", (unsigned long long)c->sst.truncated, "lost",
		(unsigned long long)c->lost, "functions", (Py_ssize_t)c->nfns, "duration_ns",
		(unsigned long long)(c->t1 - c->t0), "hz", c->hz, "weight",
		c->wall ? "wall" : "cpu", "timer", pyr_timer_name(c->sst.how, name),
		"untimed_threads", (unsigned long long)c->sst.untimed, "rerouted_threads",
		(unsigned long long)c->sst.rerouted);
	if (res && !c->wall && c->sst.cpu_ns && /* as stats.trace.sampling says them */
	    (set_u64(res, "process_cpu_ns", c->sst.cpu_ns) ||
	     set_u64(res, "unsampled_cpu_ns", pyr_unsampled(c->sst.cpu_ns, c->sst.weighed_ns))))
		Py_CLEAR(res);
	return res;
}

/* memory_events(): the sampled allocations and their frees, as dicts, in order. */
static PyObject *col_memory_events(CpuCollector *c, PyObject *unused)
{
	static const char *const kinds[] = { "?", "memory_alloc", "memory_free", "memory_live" };
	PyObject *out;
	size_t i;

	(void)unused;
	if (c->state != ST_FINALIZED) {
		PyErr_SetString(SondePy_StateError, "memory_events: stop the collector first");
		return NULL;
	}
	out = PyList_New(0);
	for (i = 0; out && i < c->nmev; i++) {
		const struct mev *e = &c->mev[i];
		const struct fn *f = e->func < c->nfns ? &c->fns[e->func] : NULL;
		PyObject *d;

		if (e->kind == SONDE_MEMSAMPLE_LIVE)
			continue;
		d = Py_BuildValue(
			"{s:s,s:k,s:K,s:K,s:K,s:N,s:z,s:z,s:N,s:N,s:N}", "event",
			kinds[e->kind <= 3 ? e->kind : 0], "thread", (unsigned long)e->tid, "ts_ns",
			(unsigned long long)e->ts, "address", (unsigned long long)e->ptr, "size",
			(unsigned long long)e->size, "weight_bytes",
			e->kind == SONDE_MEMSAMPLE_ALLOC ? PyFloat_FromDouble(e->weight)
							 : Py_NewRef(Py_None),
			"function", f ? f->name : NULL, "file", f ? f->module : NULL, "line",
			f ? PyLong_FromUnsignedLongLong(f->line) : Py_NewRef(Py_None), "node",
			e->node >= 0 ? PyLong_FromLong(e->node) : Py_NewRef(Py_None), "cpu_node",
			e->cpu_node >= 0 ? PyLong_FromLong(e->cpu_node) : Py_NewRef(Py_None));
		if (!d || PyList_Append(out, d))
			Py_CLEAR(out);
		Py_XDECREF(d);
	}
	return out;
}

/* stats.trace.memory: the sampled allocations summed (libsonde), with NUMA nodes. */
static json_t *memory_json(CpuCollector *c)
{
	struct sonde_memsample *m = sonde_memsample__new(c->mem_interval);
	json_t *o, *numa = NULL;
	size_t i;

	if (!m)
		return NULL;
	for (i = 0; i < c->nmev; i++) {
		const struct mev *e = &c->mev[i];
		const struct fn *f = e->func < c->nfns ? &c->fns[e->func] : NULL;
		struct sonde_memsample_event ev = { e->kind,
						    e->tid,
						    e->node,
						    e->cpu_node,
						    e->ts,
						    e->ptr,
						    e->size,
						    e->weight,
						    f ? f->name : NULL,
						    f ? f->module : NULL,
						    f ? f->line : 0 };

		if (sonde_memsample__add(m, &ev)) {
			sonde_memsample__free(m);
			return NULL;
		}
	}
	if (c->want_numa)
		numa = c->mem_why[0] ? json_pack("{s:s}", "not_supported", c->mem_why)
				     : py_mem__numa();
	o = sonde_memsample__json(m, numa);
	if (o)
		json_object_set_new(o, "allocations_seen",
				    json_integer((json_int_t)c->mst.allocations)),
			json_object_set_new(o, "bytes_seen",
					    json_integer((json_int_t)c->mst.bytes));
	sonde_memsample__free(m);
	return o;
}

/* A sample as a dict: thread, time, weight and its stack, outermost first. */
static PyObject *sample_dict(CpuCollector *c, const struct smp *m)
{
	PyObject *stack = PyList_New(m->n);
	uint32_t i;

	for (i = 0; stack && i < m->n; i++) {
		uint32_t id = c->sfr[m->off + i];
		const struct fn *f = id < c->nfns ? &c->fns[id] : NULL;
		PyObject *d = Py_BuildValue("{s:z,s:z,s:K}", "function", f ? f->name : NULL, "file",
					    f ? f->module : NULL, "line",
					    (unsigned long long)(f ? f->line : 0));

		if (!d) {
			Py_CLEAR(stack);
			break;
		}
		PyList_SET_ITEM(stack, i, d);
	}
	if (!stack)
		return NULL;
	return Py_BuildValue("{s:s,s:k,s:K,s:K,s:N}", "event", "sample", "thread",
			     (unsigned long)m->tid, "ts_ns", (unsigned long long)m->ts, "weight_ns",
			     (unsigned long long)m->weight, "stack", stack);
}

/* The samples of thread tid (0: all) as dicts. */
static PyObject *sample_list(CpuCollector *c, uint32_t tid)
{
	PyObject *out = PyList_New(0);
	size_t i;

	for (i = 0; out && i < c->nsmp; i++) {
		PyObject *d;

		if (tid && c->smp[i].tid != tid)
			continue;
		d = sample_dict(c, &c->smp[i]);
		if (!d || PyList_Append(out, d))
			Py_CLEAR(out);
		Py_XDECREF(d);
	}
	return out;
}

/* Put thread_hook in threading's place, keeping what was there; a new reference or NULL. */
static PyObject *hook_threading(CpuCollector *c, PyObject *threading)
{
	PyObject *res = PyObject_CallMethod(threading, "getprofile", NULL);

	if (res) {
		Py_XSETREF(c->prev_thread_hook, res == Py_None ? NULL : res);
		if (res == Py_None)
			Py_DECREF(res);
		res = PyCFunction_New(&thread_hook_def, (PyObject *)c);
	}
	if (res) {
		PyObject *r2 = PyObject_CallMethod(threading, "setprofile", "O", res);

		Py_DECREF(res);
		res = r2;
	}
	return res;
}

/* The program imported threading while collecting: its threads get the hook from now on. */
static PyObject *threading_loaded(PyObject *self, PyObject *module)
{
	CpuCollector *c = (CpuCollector *)self;

	Py_CLEAR(c->import_watch);
	if (c->state != ST_COLLECTING || in_child)
		Py_RETURN_NONE;
	return hook_threading(c, module);
}

static PyMethodDef threading_loaded_def = { "_sonde_cpu_threading_loaded", threading_loaded, METH_O,
					    NULL };

static PyObject *col_start(CpuCollector *c, PyObject *unused)
{
	PyThreadState *me = PyThreadState_Get(), *ts;
	PyObject *threading, *res;
	unsigned nbig;
	int rc;

	(void)unused;
	if (c->state != ST_IDLE) {
		PyErr_Format(SondePy_StateError,
			     "start: the collector is %s (start once, from idle)",
			     state_names[c->state]);
		return NULL;
	}
	if (!c->recs) {
		PyErr_SetString(SondePy_StateError, "start: the collector was not initialised");
		return NULL;
	}
	if (c->want_mem && py_mem__busy()) {
		PyErr_SetString(SondePy_StateError,
				"start: another CpuCollector samples allocations in this process");
		return NULL;
	}
	if (c->sampling)
		return start_sampling(c);
	if (me->c_profilefunc == cpu_hook || active) {
		PyErr_SetString(SondePy_StateError,
				"start: another CpuCollector collects in this thread");
		return NULL;
	}
	if (c->ring_path) { /* sonde's rings (collect python): sonde reads them */
		c->wa = sonde_ring_area__attach(c->ring_path);
		if (!c->wa)
			return PyErr_SetFromErrnoWithFilename(PyExc_OSError, c->ring_path);
		use_tsc = c->ring_tsc; /* the clock sonde maps */
		c->batch = (4096 - BATCH_HDR) / (uint32_t)sizeof(struct bev);
	} else {
		/* big rings for the first threads, smaller ones (sparse until used) for more */
		nbig = 8;
		rc = sonde_ring_area__create_spill(nbig, c->ring_bytes, 1016,
						   c->ring_bytes > (4u << 20) ? (4u << 20)
									      : c->ring_bytes,
						   SONDE_RING_DROP_OLDEST, &c->area);
		if (rc) {
			errno = -rc;
			return PyErr_SetFromErrno(PyExc_OSError);
		}
		c->wa = sonde_ring_area__attach(sonde_ring_area__path(c->area));
		if (!c->wa) {
			sonde_ring_area__destroy(c->area);
			c->area = NULL;
			return PyErr_SetFromErrno(PyExc_OSError);
		}
	}
	c->gen = next_gen++;
	c->pid = getpid();
	c->have_gone = pthread_key_create(&c->gone, thread_gone) == 0;
	if (!c->ring_path)
		start_clock(c);
	threading = loaded_threading();
	if (threading) {
		res = hook_threading(c, threading);
		Py_DECREF(threading);
	} else { /* hooked where the program imports it (sonde._base.after_import) */
		PyObject *base = PyImport_ImportModule("sonde._base"),
			 *fn = PyCFunction_New(&threading_loaded_def, (PyObject *)c);

		res = base && fn ? PyObject_CallMethod(base, "after_import", "sO", "threading", fn)
				 : NULL;
		Py_XDECREF(base);
		Py_XDECREF(fn);
		Py_XSETREF(c->import_watch, res);
		Py_XINCREF(res);
	}
	if (!res) {
		release_rings(c, false);
		return NULL;
	}
	Py_DECREF(res);
#if SONDE_EVAL_ENGINE
	if (c->eval_engine) { /* every thread's frames, from one evaluator: no per-thread hook */
		_PyFrameEvalFunction cur = _PyInterpreterState_GetEvalFrameFunc(me->interp);

		g_prev_eval = cur == _PyEval_EvalFrameDefault ? NULL : cur;
		note_names(c, false);
		if (c->want_syscalls)
			syscalls_open(c);
		c->t0 = sonde_clock_ns();
		mem_start(c);
		emit_mark(c, PYR_START, 0, tick(), 0);
		c->state = ST_COLLECTING;
		active = c;
		active_gen = c->gen;
		_PyInterpreterState_SetEvalFrameFunc(me->interp, eval_hook);
		Py_RETURN_NONE;
	}
#endif
	note_names(c, false); /* before the hooks: not recorded */
	if (c->want_syscalls)
		syscalls_open(c);
	c->t0 = sonde_clock_ns();
	mem_start(c);
	emit_mark(c, PYR_START, 0, tick(), 0);
	c->state = ST_COLLECTING;
	for (ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts))
		if (hook(c, ts, NULL))
			return NULL;
	Py_RETURN_NONE;
}

/*
 * run(code, globals): start, then evaluate code (a module's code object) in
 * globals, the program's first recorded call being its <module>: no call of
 * run() itself is recorded around it. The collector keeps collecting after.
 */
static PyObject *col_run(CpuCollector *c, PyObject *args)
{
	PyObject *code, *globals, *o;

	if (!PyArg_ParseTuple(args, "O!O!:run", &PyCode_Type, &code, &PyDict_Type, &globals))
		return NULL;
	o = col_start(c, NULL);
	if (!o)
		return NULL;
	Py_DECREF(o);
	if (c->sampler) { /* samples start at the program's code, not in the runner */
		PyObject *r;

		py_sampler__root(c->sampler, code);
		r = PyEval_EvalCode(code, globals, globals);
		if (c->sampler)
			py_sampler__root(c->sampler, NULL);
		return r;
	}
	return PyEval_EvalCode(code, globals, globals); /* its return: own_cfunc() */
}

/*
 * Before the hooks are taken out: the threads where another profile function
 * took sonde's place (sys.setprofile after start), whose calls from then on
 * were not recorded. A thread with no profile function at all counts only
 * where it is the caller's (threads that have run no Python since start have
 * none yet); sys.setprofile(None) there is one too.
 */
static void look_displaced(CpuCollector *c)
{
	PyThreadState *me = PyThreadState_Get(), *ts;

	if (!c->c_calls)
		return;
	for (ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
		if (ts->c_profilefunc == cpu_hook || (!ts->c_profilefunc && ts != me))
			continue;
		c->displaced++;
		if (!c->displaced_by)
			c->displaced_by = ts->c_profileobj ? PyObject_Repr(ts->c_profileobj)
							   : PyUnicode_FromString("None");
		PyErr_Clear();
	}
}

static void unhook_all(CpuCollector *c)
{
	PyThreadState *me = PyThreadState_Get(), *ts;
	Py_ssize_t i;

#if SONDE_EVAL_ENGINE
	if (active == c) {
		if (_PyInterpreterState_GetEvalFrameFunc(me->interp) == eval_hook)
			_PyInterpreterState_SetEvalFrameFunc(
				me->interp, g_prev_eval ? g_prev_eval : _PyEval_EvalFrameDefault);
		active = NULL;
		active_gen = 0;
	}
#endif
	for (ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts))
		if (ts->c_profilefunc == cpu_hook && ts->c_profileobj &&
		    ((ThreadRec *)ts->c_profileobj)->col == c)
			put_back(ts, (ThreadRec *)ts->c_profileobj);
	pthread_mutex_lock(&retire_lock); /* no thread gives its ring back meanwhile */
	for (i = 0; c->recs && i < PyList_GET_SIZE(c->recs); i++) {
		ThreadRec *r = (ThreadRec *)PyList_GET_ITEM(c->recs, i);

		r->col = NULL;
		/* every thread waits for the GIL outside put(): its batch can be published */
		if (r->claimed && c->pid == getpid())
			batch_close(r);
	}
	if (c->have_gone) /* ending threads no longer call thread_gone */
		pthread_key_delete(c->gone);
	c->have_gone = false;
	pthread_mutex_unlock(&retire_lock);
}

/* Rings back and the area gone (after the last drain). */
/* keep_area: the stores read the owner's mapping in place; it goes with the collector. */
static void release_rings(CpuCollector *c, bool keep_area)
{
	Py_ssize_t i;

	for (i = 0; c->recs && i < PyList_GET_SIZE(c->recs); i++) {
		ThreadRec *r = (ThreadRec *)PyList_GET_ITEM(c->recs, i);

		if (r->claimed && c->pid == getpid())
			sonde_ring__retire(&r->w);
		r->claimed = false;
	}
	if (c->area) /* records dropped: whole batches, each of c->batch events */
		c->dropped = sonde_ring_area__dropped(c->area) * c->batch;
	if (c->wa)
		sonde_ring_area__detach(c->wa);
	c->wa = NULL;
	if (keep_area)
		return;
	if (c->area)
		sonde_ring_area__destroy(c->area);
	c->area = NULL;
}

/* Leave out a store's trailing calls (those that led to stop()), looking at its end only. */
static void trim_trailing_calls(CpuCollector *c, struct tstore *s)
{
	const uint8_t *last[8] = { 0 }; /* the last batch records of the last segment */
	uint32_t lens[8] = { 0 }, type; /* lens: events in each */
	uint64_t run = 0;
	size_t nl = 0, j, k;

	if (s->nsegs) {
		const struct seg *g = &s->segs[s->nsegs - 1];
		const uint8_t *p = g->p, *end = p + g->bytes, *b;
		bool all_calls = true;
		uint32_t n;

		while ((b = next_batch(&p, end, &n))) {
			last[nl % 8] = b;
			lens[nl % 8] = n;
			nl++;
		}
		for (j = 0; j < 8 && j < nl && all_calls; j++) {
			size_t at = (nl - 1 - j) % 8;
			n = lens[at]; /* events of that batch */

			for (k = n; k-- > 0;) {
				memcpy(&type, last[at] + k * sizeof(struct bev), 4);
				if (type != EV_CALL && type != EV_C_CALL) {
					all_calls = false;
					break;
				}
				run++;
			}
		}
	} else {
		for (k = s->n; k-- > 0;) {
			type = SONDE_RING_REC_TYPE(s->ev[k].hdr);
			if (type != EV_CALL && type != EV_C_CALL)
				break;
			run++;
		}
	}
	s->trim = run;
	c->events -= run;
}

static PyObject *col_stop(CpuCollector *c, PyObject *unused)
{
	PyObject *threading, *res;
	uint32_t me;

	(void)unused;
	if (c->state != ST_COLLECTING) {
		PyErr_Format(SondePy_StateError, "stop: the collector is %s (stop after start)",
			     state_names[c->state]);
		return NULL;
	}
	if (c->sampling)
		return stop_sampling(c);
	mem_stop(c);
	c->t1 = sonde_clock_ns();
	me = (uint32_t)syscall(SYS_gettid);
	look_displaced(c);
	unhook_all(c);
	note_names(c, false);
	c->state = ST_FINALIZED;
	if (c->import_watch) { /* threading never imported: nothing to put back */
		PyObject *base = PyImport_ImportModule("sonde._base");

		res = base ? PyObject_CallMethod(base, "forget_import", "O", c->import_watch)
			   : NULL;
		Py_XDECREF(base);
		Py_CLEAR(c->import_watch);
	} else {
		threading = loaded_threading();
		res = threading ? PyObject_CallMethod(threading, "setprofile", "O",
						      c->prev_thread_hook ? c->prev_thread_hook
									  : Py_None)
				: NULL;
		Py_XDECREF(threading);
		if (!threading) /* taken out of sys.modules by the program: nothing to do */
			res = Py_NewRef(Py_None);
	}
	Py_XDECREF(res);
	if (c->pid != getpid()) { /* inherited by fork: the rings are the parent's */
		c->area = NULL;
		c->wa = NULL;
		if (!res)
			return NULL;
		Py_RETURN_NONE;
	}
	if (c->ring_path) { /* sonde's rings: published; sonde reads them when the process ends */
		emit_mark(c, PYR_STOP, 0, tick(), 0);
		if (c->meta_claimed)
			sonde_ring__retire(&c->meta);
		c->meta_claimed = false;
		release_rings(c, false);
		if (!res)
			return NULL;
		/* what sonde counts (events, drops, system calls) is not known here: None */
		return Py_BuildValue("{s:O,s:n,s:n,s:O,s:K,s:K,s:O,s:O,s:O,s:n,s:O}", "events",
				     Py_None, "threads", (Py_ssize_t)PyList_GET_SIZE(c->recs),
				     "functions", (Py_ssize_t)c->nfns, "dropped", Py_None, "lost",
				     (unsigned long long)c->lost, "duration_ns",
				     (unsigned long long)(c->t1 - c->t0), "syscalls", Py_None,
				     "syscalls_lost", Py_None, "syscalls_not_recorded", Py_None,
				     "hook_displaced", c->displaced, "displaced_by",
				     c->displaced_by ? c->displaced_by : Py_None);
	}
	if (!res) {
		release_rings(c, false);
		return NULL;
	}
	sonde_ring_area__close(c->area);
	if (drain(c, true)) {
		release_rings(c, false);
		return NULL;
	}
	release_rings(c, true);
	if (syscalls_collect(c) < 0)
		c->err = -ENOMEM;
	/* the calling thread's last events are the calls that led to stop(): not the program's */
	{
		uint64_t v;

		if (u64map__get(&c->tindex, me, &v))
			trim_trailing_calls(c, &c->ts[v - 1]);
	}
	if (c->err) {
		PyErr_SetString(PyExc_MemoryError,
				"the CPU collector ran out of memory while recording");
		return NULL;
	}
	return Py_BuildValue("{s:K,s:n,s:n,s:K,s:K,s:K,s:K,s:K,s:z,s:n,s:O}", "events",
			     (unsigned long long)c->events, "threads", (Py_ssize_t)c->nts,
			     "functions", (Py_ssize_t)c->nfns, "dropped",
			     (unsigned long long)c->dropped, "lost", (unsigned long long)c->lost,
			     "duration_ns", (unsigned long long)(c->t1 - c->t0), "syscalls",
			     (unsigned long long)c->sc_events, "syscalls_lost",
			     (unsigned long long)c->sc_lost, "syscalls_not_recorded",
			     c->sc_why.len ? c->sc_why.buf : NULL, "hook_displaced", c->displaced,
			     "displaced_by", c->displaced_by ? c->displaced_by : Py_None);
}

static PyObject *event_dict(CpuCollector *c, const struct tstore *s, const struct ev *e)
{
	uint32_t type = SONDE_RING_REC_TYPE(e->hdr);
	bool has_fn =
		(type == EV_CALL || type == EV_C_CALL || type == EV_SYS_ENTER) && e->func < c->nfns;
	const struct fn *f = has_fn ? &c->fns[e->func] : NULL;

	if (type == EV_SIZE)
		return Py_BuildValue("{s:s,s:K,s:k}", "event", "size", "size",
				     (unsigned long long)e->ts, "thread", (unsigned long)s->tid);
	return Py_BuildValue("{s:s,s:z,s:z,s:N,s:k,s:K}", "event",
			     type <= EV_SYS_EXIT ? ev_names[type] : "?", "function",
			     f ? f->name : NULL, "file", f ? f->module : NULL, "line",
			     f ? PyLong_FromUnsignedLongLong(f->line) : Py_NewRef(Py_None),
			     "thread", (unsigned long)s->tid, "ts_ns", (unsigned long long)e->ts);
}

/* The calling thread's events so far (drained from the rings; others keep recording). */
/* The calling thread's ThreadRec of the collector recording it, or NULL. */
static ThreadRec *current_rec(PyThreadState *ts)
{
	if (ts->c_profilefunc == cpu_hook && ts->c_profileobj)
		return (ThreadRec *)ts->c_profileobj;
	if (active && tl_gen == active_gen && tl_rec)
		return tl_rec;
	return NULL;
}

static PyObject *col_thread_buffer(CpuCollector *c, PyObject *unused)
{
	uint32_t me = (uint32_t)syscall(SYS_gettid);
	PyObject *out;
	struct ev_it it;
	struct ev e;
	uint64_t v;

	(void)unused;
	if (c->state == ST_IDLE) {
		PyErr_SetString(SondePy_StateError, "get_thread_local_buffer: not started");
		return NULL;
	}
	if (c->sampling)
		return sample_list(c, me);
	if (c->state == ST_COLLECTING && c->pid == getpid()) {
		ThreadRec *r = current_rec(PyThreadState_Get());

		if (r && r->col == c && r->claimed)
			batch_close(r); /* its next event opens another */
		if (drain(c, false))
			return NULL;
	}
	out = PyList_New(0);
	if (!out || !u64map__get(&c->tindex, me, &v))
		return out;
	it_init(&it, &c->ts[v - 1]);
	while (it_next(c, &it, &e)) {
		PyObject *d = event_dict(c, &c->ts[v - 1], &e);

		if (!d || PyList_Append(out, d)) {
			Py_XDECREF(d);
			Py_DECREF(out);
			return NULL;
		}
		Py_DECREF(d);
	}
	return out;
}

/* Every event, thread by thread, as dicts. */
static PyObject *col_events(CpuCollector *c, PyObject *unused)
{
	PyObject *out;
	struct ev_it it;
	struct ev e;
	size_t k;

	(void)unused;
	if (c->state != ST_FINALIZED) {
		PyErr_SetString(SondePy_StateError, "events: stop the collector first");
		return NULL;
	}
	if (c->sampling)
		return sample_list(c, 0);
	out = PyList_New(0);
	for (k = 0; out && k < c->nts; k++)
		for (it_init(&it, &c->ts[k]); it_next(c, &it, &e);) {
			PyObject *d = event_dict(c, &c->ts[k], &e);

			if (!d || PyList_Append(out, d)) {
				Py_XDECREF(d);
				Py_CLEAR(out);
				break;
			}
			Py_DECREF(d);
		}
	return out;
}

/* How the samples were taken, as stats.trace.sampling says it (collector.c too). */
static json_t *sampling_json(const CpuCollector *c)
{
	json_t *j = pyr_sampling_json(c->hz, c->wall, true, c->sst.how, c->sst.ticks, c->sst.late,
				      c->sst.truncated, c->sst.untimed, c->sst.rerouted,
				      c->sst.cpu_ns, c->sst.weighed_ns);

	if (j && json_object_set_new(j, "lost_samples", json_integer((json_int_t)c->lost))) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* The samples, into ct (in sampling mode), with their threads' names. */
static int sampled_calls(CpuCollector *c, struct sonde_calltrace *ct, const uint32_t *idmap,
			 PyObject *names)
{
	uint32_t *ids = malloc(PY_SAMPLE_MAX_DEPTH * sizeof(*ids));
	struct u64map named = { 0 };
	uint64_t v;
	size_t i, j;
	int rc = ids ? sonde_calltrace__sampling(ct, sampling_json(c)) : -ENOMEM;

	for (i = 0; i < c->nsmp && !rc; i++) {
		const struct smp *m = &c->smp[i];

		if (!u64map__get(&named, m->tid, &v)) {
			PyObject *key = PyLong_FromUnsignedLong(m->tid), *nm = NULL;

			if (key && names && PyDict_Check(names))
				nm = PyDict_GetItem(names, key); /* borrowed */
			if (key && !nm && c->names)
				nm = PyDict_GetItem(c->names, key);
			Py_XDECREF(key);
			if (nm && PyUnicode_Check(nm) && PyUnicode_AsUTF8(nm))
				rc = sonde_calltrace__thread_name(ct, m->tid, PyUnicode_AsUTF8(nm));
			PyErr_Clear();
			if (!rc && u64map__put(&named, m->tid, 1))
				rc = -ENOMEM;
		}
		for (j = 0; j < m->n && !rc; j++) {
			uint32_t id = c->sfr[m->off + j];

			if (id >= c->nfns)
				rc = -EINVAL;
			else
				ids[j] = idmap[id];
		}
		if (!rc)
			rc = sonde_calltrace__sample(ct, m->tid, m->ts, m->weight, ids, m->n);
	}
	u64map__release(&named);
	free(ids);
	return rc;
}

/*
 * profile_json(cmd, thread_names): the trace profile of the calls, as JSON text
 * (type mixed, as `sonde collect trace` writes).
 */
static PyObject *col_profile_json(CpuCollector *c, PyObject *args)
{
	const char *cmd = "python";
	PyObject *names = NULL, *out = NULL;
	struct sonde_calltrace *ct;
	struct sonde_profile *p;
	uint32_t *idmap = NULL;
	size_t i, k, len;
	char *s = NULL;
	int rc = 0;

	if (!PyArg_ParseTuple(args, "|sO:profile_json", &cmd, &names))
		return NULL;
	if (c->state != ST_FINALIZED) {
		PyErr_SetString(SondePy_StateError, "profile: stop the collector first");
		return NULL;
	}
	ct = sonde_calltrace__new("python", cmd, (uint32_t)c->pid, c->t0);
	p = sonde_profile__new("mixed");
	if (!ct || !p) {
		sonde_calltrace__free(ct);
		sonde_profile__free(p);
		return PyErr_NoMemory();
	}
	/* the calltrace's id of each of the collector's functions, looked up once */
	idmap = malloc((c->nfns ? c->nfns : 1) * sizeof(*idmap));
	if (!idmap)
		rc = -ENOMEM;
	for (i = 0; i < c->nfns && !rc; i++)
		rc = sonde_calltrace__func(ct, c->fns[i].module, c->fns[i].line, c->fns[i].name,
					   &idmap[i]);
	if (!rc && c->sampling)
		rc = sampled_calls(c, ct, idmap, names);
	for (k = 0; k < c->nts && !rc; k++) {
		const struct tstore *t = &c->ts[k];
		PyObject *key = PyLong_FromUnsignedLong(t->tid), *nm = NULL;

		if (key && names && PyDict_Check(names))
			nm = PyDict_GetItem(names, key); /* borrowed */
		if (key && !nm && c->names)
			nm = PyDict_GetItem(c->names, key);
		Py_XDECREF(key);

		if (nm && PyUnicode_Check(nm))
			rc = sonde_calltrace__thread_name(ct, t->tid, PyUnicode_AsUTF8(nm));
		struct ev_it it;
		struct ev ev;

		for (it_init(&it, t); !rc && it_next(c, &it, &ev);) {
			const struct ev *e = &ev;
			uint32_t type = SONDE_RING_REC_TYPE(e->hdr);

			if (type == EV_CALL || type == EV_C_CALL || type == EV_SYS_ENTER)
				rc = e->func < c->nfns ? sonde_calltrace__enter(
								 ct, t->tid, idmap[e->func], e->ts)
						       : -EINVAL;
			else if (type == EV_SIZE)
				rc = sonde_calltrace__size(ct, t->tid, e->ts);
			else
				rc = sonde_calltrace__exit(ct, t->tid, e->ts);
		}
	}
	free(idmap);
	if (!rc && !c->sampling)
		rc = sonde_calltrace__engine_stat(
			ct, "python",
			json_pack("{s:I, s:I, s:I, s:s}", "events", (json_int_t)c->events,
				  "dropped_events", (json_int_t)c->dropped, "lost_events",
				  (json_int_t)c->lost, "hook",
				  c->eval_engine ? "frame evaluator" : "C profile function"));
	if (!rc && c->want_mem) {
		json_t *m = memory_json(c);

		rc = m ? sonde_calltrace__engine_stat(ct, "memory", m) : -ENOMEM;
	}
	if (!rc && c->want_syscalls)
		rc = sonde_calltrace__engine_stat(
			ct, "syscalls",
			c->sc_why.len
				? json_pack("{s:s}", "not_supported", c->sc_why.buf)
				: json_pack("{s:I, s:I, s:s}", "events", (json_int_t)c->sc_events,
					    "lost", (json_int_t)c->sc_lost, "source",
					    "perf_event raw_syscalls"));
	if (!rc)
		rc = sonde_calltrace__write(ct, p);
	if (!rc) {
		json_t *h = sonde_profile__header(p), *st = sonde_profile__stats(p);

		rc |= sonde_profile__set(h, "cmd", json_string(cmd));
		rc |= sonde_profile__set(
			h, "units",
			json_pack("{s:s, s:s}", "time", "ns", "structure-unit-size", "elements"));
		rc |= sonde_profile__set(sonde_profile__collector_info(p), "name",
					 json_string("python"));
		rc |= sonde_profile__set(st, "duration_ns",
					 json_integer((json_int_t)(c->t1 - c->t0)));
		rc |= sonde_profile__set(st, "dropped_events",
					 json_integer((json_int_t)(c->dropped + c->lost)));
		if (c->dropped)
			rc |= sonde_profile__add_warning(
				p, "ring-full",
				"a thread's ring was full: its oldest events were dropped "
				"(counted in stats.dropped_events); calls whose start was "
				"dropped count as unmatched exits",
				"give CpuCollector a bigger buffer= (bytes per thread)");
		if (c->lost)
			rc |= sonde_profile__add_warning(
				p, "no-ring", "threads found no free ring: their events were lost",
				"run fewer threads at once while collecting");
	}
	if (!rc && !(s = sonde_profile__dump(p, &len)))
		rc = -ENOMEM;
	sonde_calltrace__free(ct);
	sonde_profile__free(p);
	if (rc) {
		if (!PyErr_Occurred())
			PyErr_Format(SondePy_Error, "the profile could not be built: %s",
				     strerror(rc < 0 ? -rc : ENOMEM));
		return NULL;
	}
	out = PyUnicode_FromStringAndSize(s, (Py_ssize_t)len);
	free(s);
	return out;
}

/* _exit(status): os._exit for a program recorded into sonde's rings: stop (publish), then exit. */
static PyObject *col_exit(CpuCollector *c, PyObject *arg)
{
	int status = (int)PyLong_AsLong(arg);

	if (status == -1 && PyErr_Occurred())
		return NULL;
	if (c->state == ST_COLLECTING && c->pid == getpid()) {
		PyObject *r = col_stop(c, NULL);

		Py_XDECREF(r);
		PyErr_Clear();
	}
	_exit(status);
}

static PyObject *col_state(CpuCollector *c, void *closure)
{
	(void)closure;
	return PyUnicode_FromString(state_names[c->state]);
}

static PyObject *col_dropped(CpuCollector *c, void *closure)
{
	(void)closure;
	if (c->area)
		return PyLong_FromUnsignedLongLong(sonde_ring_area__dropped(c->area) * c->batch);
	return PyLong_FromUnsignedLongLong(c->dropped);
}

static int col_traverse(CpuCollector *c, visitproc visit, void *arg)
{
	Py_VISIT(c->recs);
	Py_VISIT(c->prev_thread_hook);
	Py_VISIT(c->import_watch);
	Py_VISIT(c->names);
	return 0;
}

static int col_clear(CpuCollector *c)
{
	Py_CLEAR(c->recs);
	Py_CLEAR(c->prev_thread_hook);
	Py_CLEAR(c->import_watch);
	Py_CLEAR(c->names);
	return 0;
}

static void col_dealloc(CpuCollector *c)
{
	Py_CLEAR(c->displaced_by);
	size_t i;

	PyObject_GC_UnTrack(c);
	mem_stop(c);
	if (c->sampler) { /* dropped while sampling */
		py_sampler__stop(c->sampler, NULL);
		c->sampler = NULL;
		c->state = ST_FINALIZED;
	}
	if (c->state == ST_COLLECTING) { /* dropped while collecting: stop for good */
		unhook_all(c);
		c->state = ST_FINALIZED;
	}
	release_rings(c, false);
	col_clear(c);
	for (i = 0; i < c->nfns; i++) {
		free(c->fns[i].module);
		free(c->fns[i].name);
	}
	free(c->fns);
	free(c->smp);
	free(c->sfr);
	free(c->mev);
	for (i = 0; i < c->nts; i++) {
		free(c->ts[i].ev);
		free(c->ts[i].segs);
		free(c->ts[i].sc);
	}
	sonde_syscalls__close(c->sc);
	free(c->own);
	free(c->ring_path);
	sonde_strbuf__release(&c->sc_why);
	u64map__release(&c->sc_ids);
	free(c->ts);
	u64map__release(&c->cfuncs);
	u64map__release(&c->tindex);
	Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef col_methods[] = {
	{ "start", (PyCFunction)col_start, METH_NOARGS,
	  "Hook every thread (and threads started later); idle -> collecting." },
	{ "stop", (PyCFunction)col_stop, METH_NOARGS,
	  "Unhook, put chained hooks back, merge every thread's ring; collecting -> finalized." },
	{ "get_thread_local_buffer", (PyCFunction)col_thread_buffer, METH_NOARGS,
	  "The calling thread's events so far, as dicts." },
	{ "events", (PyCFunction)col_events, METH_NOARGS, "Every event, thread by thread." },
	{ "memory_events", (PyCFunction)col_memory_events, METH_NOARGS,
	  "memory=True: the sampled allocations and their frees, in order." },
	{ "_exit", (PyCFunction)col_exit, METH_O,
	  "_exit(status): stop, then os._exit(status) (the program's, run by sonde.run)." },
	{ "run", (PyCFunction)col_run, METH_VARARGS,
	  "run(code, globals): start, then run code (the program) in globals." },
	{ "profile_json", (PyCFunction)col_profile_json, METH_VARARGS,
	  "profile_json(cmd, thread_names): the trace profile of the calls, as JSON." },
	{ NULL },
};

static PyGetSetDef col_getset[] = {
	{ "state", (getter)col_state, NULL, "idle, collecting or finalized", NULL },
	{ "dropped", (getter)col_dropped, NULL, "events dropped from full rings", NULL },
	{ NULL },
};

static PyTypeObject CpuCollectorType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde._sonde.CpuCollector",
	.tp_basicsize = sizeof(CpuCollector),
	.tp_dealloc = (destructor)col_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "Every Python call and return (and C calls) of every thread, per-thread rings.",
	.tp_traverse = (traverseproc)col_traverse,
	.tp_clear = (inquiry)col_clear,
	.tp_methods = col_methods,
	.tp_getset = col_getset,
	.tp_init = (initproc)col_init,
	.tp_new = PyType_GenericNew,
};

/*
 * trace_size(n): the size of the problem the calling Python function works on
 * (its innermost recorded call), for regression of time against size, as
 * sonde_trace_size() is for C. Without a collector hooked on this thread: nothing.
 */
static PyObject *trace_size(PyObject *self, PyObject *arg)
{
	PyThreadState *ts = PyThreadState_Get();
	unsigned long long n = PyLong_AsUnsignedLongLong(arg);
	ThreadRec *r;

	(void)self;
	if (n == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	r = in_child ? NULL : current_rec(ts);
	if (r && r->col &&
	    r->claimed) /* a thread's first event claims its ring: a call came first */
		put(r->col, r, EV_SIZE, 0, n);
	Py_RETURN_NONE;
}

static PyMethodDef trace_size_def = {
	"trace_size", trace_size, METH_O,
	"trace_size(n): the size the calling function works on, for `sonde postprocess` "
	"regression of its time against size."
};

int sondepy_cpu_init(PyObject *m)
{
	PyObject *f, *name;

	static bool once;

	if (!once) {
		extra_index = _PyEval_RequestCodeExtraIndex(no_free);
		if (extra_index < 0)
			return -1;
		pthread_atfork(NULL, NULL, on_fork_child);
#if defined(__x86_64__)
		use_tsc = sonde_sysinfo__cpu_flag("constant_tsc") &&
			  sonde_sysinfo__cpu_flag("nonstop_tsc");
#endif
		once = true;
	}
	if (PyType_Ready(&ThreadRecType) < 0 || PyType_Ready(&CpuCollectorType) < 0)
		return -1;
	name = PyModule_GetNameObject(m);
	f = name ? PyCFunction_NewEx(&trace_size_def, NULL, name) : NULL;
	Py_XDECREF(name);
	if (!f || PyModule_AddObject(m, "trace_size", f) < 0) {
		Py_XDECREF(f);
		return -1;
	}
	return PyModule_AddObjectRef(m, "CpuCollector", (PyObject *)&CpuCollectorType);
}
