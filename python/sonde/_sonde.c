/*
 * _sonde.c - the C half of `import sonde`: region timers and metric series
 * recorded per thread, and libsonde's statistics, comparison and profile
 * writing for the Python half (the modules beside this file).
 *
 * Recording path. A Recorder keeps one buffer per thread that records into it.
 * A thread finds its buffer through a one-entry thread-local cache (the
 * recorder's id and the buffer), so entering and leaving a region, or
 * recording a value, takes no lock and touches only the calling thread's
 * memory: the clock, an append. The recorder's mutex is taken only when a
 * thread records into a recorder for the first time (its buffer is created and
 * linked) and when the buffers are read. Which samples were warm-up is decided
 * when they are read (the first `warmup` of each region by end time), so the
 * recording path keeps no shared count either.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <jansson.h>
#include <sonde/check.h>
#include <sonde/clock.h>
#include <sonde/file.h>
#include <sonde/job.h>
#include <sonde/profile.h>
#include <sonde/sonde.h>
#include <sonde/stats.h>
#include <sonde/strbuf.h>
#include "_sonde.h"

PyObject *SondePy_Error, *SondePy_StateError, *SondePy_NotSupported;

/* ---- per-thread buffers ----------------------------------------------------------- */

struct sample { /* one region, entered and left */
	uint64_t start, end;
	uint32_t name;
	uint32_t depth;
};

struct value { /* one recorded value */
	double v;
	uint64_t t;
	uint32_t name;
};

struct open_region {
	uint64_t start;
	uint32_t name;
};

struct tbuf {
	struct tbuf *next;
	long tid;
	struct sample *s;
	size_t ns, scap;
	struct value *v;
	size_t nv, vcap;
	struct open_region *open;
	size_t nopen, ocap;
};

typedef struct {
	PyObject_HEAD uint64_t id; /* never reused: the thread-local cache compares it */
	pthread_mutex_t lock;
	struct tbuf *threads;
	PyObject *names; /* dict: name -> Region (its index) */
	PyObject *list;	 /* list: index -> name */
	uint64_t t0;	 /* sonde's clock when the recorder was made */
	long warmup;
	PyObject *dict; /* the Python subclasses' attributes */
	PyObject *weakrefs;
} Recorder;

typedef struct {
	PyObject_HEAD Recorder *rec;
	uint32_t name;
	PyObject *bound[2]; /* __enter__ and __exit__ bound to the region, made once */
} Region;

static _Atomic uint64_t next_id = 1;
/* initial-exec: a fixed offset from the thread pointer, no __tls_get_addr call (16 bytes
   of the static TLS that glibc keeps for libraries loaded later) */
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
	uint64_t id;
	struct tbuf *b;
} cache;

static struct tbuf *tbuf_slow(Recorder *r)
{
	long tid = syscall(SYS_gettid);
	struct tbuf *b;

	pthread_mutex_lock(&r->lock);
	for (b = r->threads; b && b->tid != tid; b = b->next)
		;
	if (!b && (b = calloc(1, sizeof(*b)))) {
		b->tid = tid;
		b->next = r->threads;
		r->threads = b;
	}
	pthread_mutex_unlock(&r->lock);
	if (b) {
		cache.id = r->id;
		cache.b = b;
	}
	return b;
}

static inline struct tbuf *tbuf_of(Recorder *r)
{
	return cache.id == r->id ? cache.b : tbuf_slow(r);
}

/* Grow *arr (of *cap elements of size sz) to hold one more; 0 or -1. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	p = realloc(*arr, c * sz);
	if (!p)
		return -1;
	*arr = p;
	*cap = c;
	return 0;
}

static void tbufs_free(struct tbuf *b)
{
	while (b) {
		struct tbuf *n = b->next;

		free(b->s);
		free(b->v);
		free(b->open);
		free(b);
		b = n;
	}
}

/* ---- Region: the context manager of one name ------------------------------------- */

static PyTypeObject RegionType;

/* sonde_clock_ns() without the call into libsonde: the same clock, one hop less */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int enter(Recorder *r, uint32_t name)
{
	struct tbuf *b = tbuf_of(r);

	if (!b || grow((void **)&b->open, &b->ocap, b->nopen, sizeof(*b->open))) {
		PyErr_NoMemory();
		return -1;
	}
	b->open[b->nopen].name = name;
	b->open[b->nopen++].start = now_ns(); /* last: the region's own work */
	return 0;
}

static int leave(Recorder *r, uint32_t name)
{
	uint64_t end = now_ns(); /* first */
	struct tbuf *b = tbuf_of(r);
	size_t i;

	if (!b) {
		PyErr_NoMemory();
		return -1;
	}
	/* the innermost open region of that name (regions may overlap with start/stop) */
	for (i = b->nopen; i > 0 && b->open[i - 1].name != name; i--)
		;
	if (!i) {
		PyErr_Format(SondePy_StateError, "region '%U' was not started in this thread",
			     PyList_GET_ITEM(r->list, name));
		return -1;
	}
	if (grow((void **)&b->s, &b->scap, b->ns, sizeof(*b->s))) {
		PyErr_NoMemory();
		return -1;
	}
	b->s[b->ns].start = b->open[i - 1].start;
	b->s[b->ns].end = end;
	b->s[b->ns].name = name;
	b->s[b->ns++].depth = (uint32_t)(i - 1);
	memmove(&b->open[i - 1], &b->open[i], (b->nopen - i) * sizeof(*b->open));
	b->nopen--;
	return 0;
}

static PyObject *region_enter(Region *self, PyObject *unused)
{
	(void)unused;
	if (!self->rec) {
		PyErr_SetString(SondePy_StateError, "the region's timer is gone");
		return NULL;
	}
	if (enter(self->rec, self->name))
		return NULL;
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *region_exit(Region *self, PyObject *const *args, Py_ssize_t n)
{
	(void)args;
	(void)n;
	if (!self->rec) {
		PyErr_SetString(SondePy_StateError, "the region's timer is gone");
		return NULL;
	}
	if (leave(self->rec, self->name))
		return NULL;
	Py_RETURN_FALSE;
}

/* A Region and its recorder refer to each other (the recorder's name table): the GC breaks it. */
static int region_traverse(Region *self, visitproc visit, void *arg)
{
	Py_VISIT(self->rec);
	Py_VISIT(self->bound[0]);
	Py_VISIT(self->bound[1]);
	return 0;
}

static int region_clear(Region *self)
{
	Py_CLEAR(self->rec);
	Py_CLEAR(self->bound[0]);
	Py_CLEAR(self->bound[1]);
	return 0;
}

static void region_dealloc(Region *self)
{
	PyObject_GC_UnTrack(self);
	region_clear(self);
	PyObject_GC_Del(self);
}

static PyObject *region_repr(Region *self)
{
	if (!self->rec)
		return PyUnicode_FromString("<sonde region>");
	return PyUnicode_FromFormat("<sonde region '%U'>",
				    PyList_GET_ITEM(self->rec->list, self->name));
}

static PyMethodDef region_methods[] = {
	{ "__enter__", (PyCFunction)region_enter, METH_NOARGS, "Start the region." },
	{ "__exit__", (PyCFunction)(void (*)(void))region_exit, METH_FASTCALL,
	  "Stop the region (exceptions pass through)." },
	{ NULL },
};

/*
 * `with` looks __enter__ and __exit__ up on the type and binds them to the
 * region: a new bound-method object each, every time. A region is made once
 * per name and used many times, so these descriptors hand out the region's own
 * bound methods, made on first use: `with` then allocates nothing.
 */
typedef struct {
	PyObject_HEAD int which; /* 0: __enter__, 1: __exit__ */
} BoundOnce;

static PyObject *bound_once_get(BoundOnce *self, PyObject *obj, PyObject *type)
{
	Region *g = (Region *)obj;

	(void)type;
	if (!obj || !PyObject_TypeCheck(obj, &RegionType))
		return Py_NewRef((PyObject *)self);
	if (!g->bound[self->which]) {
		g->bound[self->which] = PyCFunction_NewEx(&region_methods[self->which], obj, NULL);
		if (!g->bound[self->which])
			return NULL;
	}
	return Py_NewRef(g->bound[self->which]);
}

static PyTypeObject BoundOnceType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde._sonde.BoundOnce",
	.tp_basicsize = sizeof(BoundOnce),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A Region's __enter__ or __exit__, bound once per region.",
	.tp_descr_get = (descrgetfunc)bound_once_get,
};

/* Put the descriptors in place of the plain methods on the Region type; 0 or -1. */
static int region_bind_once(void)
{
	int i;

	if (PyType_Ready(&BoundOnceType) < 0)
		return -1;
	for (i = 0; i < 2; i++) {
		BoundOnce *d = PyObject_New(BoundOnce, &BoundOnceType);
		int rc;

		if (!d)
			return -1;
		d->which = i;
		rc = PyDict_SetItemString(RegionType.tp_dict, region_methods[i].ml_name,
					  (PyObject *)d);
		Py_DECREF(d);
		if (rc)
			return -1;
	}
	PyType_Modified(&RegionType);
	return 0;
}

static PyTypeObject RegionType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde._sonde.Region",
	.tp_basicsize = sizeof(Region),
	.tp_dealloc = (destructor)region_dealloc,
	.tp_repr = (reprfunc)region_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "A named region: `with` it to time its body.",
	.tp_traverse = (traverseproc)region_traverse,
	.tp_clear = (inquiry)region_clear,
	.tp_methods = region_methods,
};

/* ---- Recorder ------------------------------------------------------------------------ */

/* The Region of name (made and indexed on first use); borrowed, NULL on error. */
static Region *region_of(Recorder *r, PyObject *name)
{
	Region *g = (Region *)PyDict_GetItemWithError(r->names, name);

	if (g || PyErr_Occurred())
		return g;
	if (!PyUnicode_Check(name)) {
		PyErr_SetString(PyExc_TypeError, "a region or metric name is a str");
		return NULL;
	}
	{ /* a new name must be text a profile can hold: UTF-8, no NUL */
		Py_ssize_t len;
		const char *u = PyUnicode_AsUTF8AndSize(name, &len);

		if (!u || memchr(u, 0, (size_t)len)) {
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError, "%R cannot name a region or metric: %s",
				     name,
				     u ? "it holds a NUL character"
				       : "it is not valid Unicode (a lone surrogate)");
			return NULL;
		}
	}
	if (PyList_GET_SIZE(r->list) >= UINT32_MAX) {
		PyErr_SetString(SondePy_Error, "too many names");
		return NULL;
	}
	g = PyObject_GC_New(Region, &RegionType);
	if (!g)
		return NULL;
	Py_INCREF(r);
	g->rec = r;
	g->name = (uint32_t)PyList_GET_SIZE(r->list);
	g->bound[0] = g->bound[1] = NULL;
	PyObject_GC_Track(g);
	if (PyList_Append(r->list, name) || PyDict_SetItem(r->names, name, (PyObject *)g)) {
		Py_DECREF(g);
		return NULL;
	}
	Py_DECREF(g); /* the dict holds it */
	return g;
}

static int recorder_init(Recorder *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "warmup", NULL };
	long warmup = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|l:Recorder", kws, &warmup))
		return -1;
	if (warmup < 0) {
		PyErr_SetString(PyExc_ValueError, "warmup is a count, 0 or more");
		return -1;
	}
	self->warmup = warmup;
	return 0;
}

static PyObject *recorder_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	Recorder *self = (Recorder *)type->tp_alloc(type, 0);

	(void)args;
	(void)kw;
	if (!self)
		return NULL;
	self->id = atomic_fetch_add(&next_id, 1);
	pthread_mutex_init(&self->lock, NULL);
	self->names = PyDict_New();
	self->list = PyList_New(0);
	self->t0 = sonde_clock_ns();
	if (!self->names || !self->list) {
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
}

static int recorder_traverse(Recorder *self, visitproc visit, void *arg)
{
	Py_VISIT(self->names);
	Py_VISIT(self->list);
	Py_VISIT(self->dict);
	return 0;
}

static int recorder_clear_refs(Recorder *self)
{
	Py_CLEAR(self->names);
	Py_CLEAR(self->list);
	Py_CLEAR(self->dict);
	return 0;
}

/* A static type: a Python subclass's dealloc releases the subclass itself. */
static void recorder_dealloc(Recorder *self)
{
	PyObject_GC_UnTrack(self);
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	recorder_clear_refs(self);
	tbufs_free(self->threads);
	pthread_mutex_destroy(&self->lock);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *rec_region(Recorder *self, PyObject *name)
{
	Region *g = region_of(self, name);

	Py_XINCREF(g);
	return (PyObject *)g;
}

static PyObject *rec_start(Recorder *self, PyObject *name)
{
	Region *g = region_of(self, name);

	if (!g || enter(self, g->name))
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *rec_stop(Recorder *self, PyObject *name)
{
	Region *g = (Region *)PyDict_GetItemWithError(self->names, name);

	if (!g) {
		if (!PyErr_Occurred())
			PyErr_Format(SondePy_StateError, "region '%S' was never started", name);
		return NULL;
	}
	if (leave(self, g->name))
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *rec_record(Recorder *self, PyObject *const *args, Py_ssize_t n)
{
	uint64_t t = now_ns();
	struct tbuf *b;
	Region *g;
	double v;

	if (n != 2) {
		PyErr_SetString(PyExc_TypeError, "record(name, value) takes 2 arguments");
		return NULL;
	}
	v = PyFloat_AsDouble(args[1]);
	if (v == -1.0 && PyErr_Occurred())
		return NULL;
	if (!isfinite(v)) { /* JSON has no NaN or infinity: a profile must stay readable */
		PyErr_Format(PyExc_ValueError,
			     "record(name, value): the value must be finite, not %R", args[1]);
		return NULL;
	}
	g = region_of(self, args[0]);
	if (!g)
		return NULL;
	b = tbuf_of(self);
	if (!b || grow((void **)&b->v, &b->vcap, b->nv, sizeof(*b->v)))
		return PyErr_NoMemory();
	b->v[b->nv].v = v;
	b->v[b->nv].t = t;
	b->v[b->nv++].name = g->name;
	Py_RETURN_NONE;
}

/*
 * Reading. The recording threads append while holding the GIL, and so does the
 * reader: the GIL orders them, and the recorder's mutex guards only its list of
 * buffers.
 */
struct tsample {
	struct sample s;
	long tid;
};

struct tvalue {
	struct value v;
	long tid;
};

static int by_end(const void *a, const void *b)
{
	const struct tsample *x = a, *y = b;

	return x->s.end < y->s.end ? -1 : x->s.end > y->s.end;
}

static int by_time(const void *a, const void *b)
{
	const struct tvalue *x = a, *y = b;

	return x->v.t < y->v.t ? -1 : x->v.t > y->v.t;
}

/*
 * Every thread's values (values) or samples, each with its thread, merged in
 * time order (samples by their end); NULL with MemoryError set.
 */
static void *gather(Recorder *r, bool values, size_t *n)
{
	size_t sz = values ? sizeof(struct tvalue) : sizeof(struct tsample), k = 0, i;
	struct tbuf *b;
	char *all;

	pthread_mutex_lock(&r->lock);
	for (*n = 0, b = r->threads; b; b = b->next)
		*n += values ? b->nv : b->ns;
	all = malloc((*n ? *n : 1) * sz);
	for (b = r->threads; all && b; b = b->next)
		for (i = 0; i < (values ? b->nv : b->ns); i++, k++) {
			if (values) {
				struct tvalue *t = (struct tvalue *)(void *)(all + k * sz);

				t->v = b->v[i];
				t->tid = b->tid;
			} else {
				struct tsample *t = (struct tsample *)(void *)(all + k * sz);

				t->s = b->s[i];
				t->tid = b->tid;
			}
		}
	pthread_mutex_unlock(&r->lock);
	if (!all)
		return PyErr_NoMemory();
	qsort(all, *n, sz, values ? by_time : by_end);
	return all;
}

/* out[name] (a new list when absent); borrowed, NULL on error. */
static PyObject *list_in(PyObject *out, PyObject *name)
{
	PyObject *l = PyDict_GetItemWithError(out, name);

	if (l || PyErr_Occurred())
		return l;
	l = PyList_New(0);
	if (!l)
		return NULL;
	if (PyDict_SetItem(out, name, l)) {
		Py_DECREF(l);
		return NULL;
	}
	Py_DECREF(l);
	return l;
}

static int append_new(PyObject *list, PyObject *item)
{
	int rc;

	if (!item)
		return -1;
	rc = PyList_Append(list, item);
	Py_DECREF(item);
	return rc;
}

static PyObject *rec_samples(Recorder *self, PyObject *unused)
{
	size_t n, i, nnames = (size_t)PyList_GET_SIZE(self->list);
	struct tsample *all = gather(self, false, &n);
	long *count = calloc(nnames ? nnames : 1, sizeof(*count));
	PyObject *out = PyDict_New();

	(void)unused;
	if (!all || !count || !out)
		goto fail;
	for (i = 0; i < n; i++) {
		const struct sample *s = &all[i].s;
		PyObject *l = list_in(out, PyList_GET_ITEM(self->list, s->name));
		bool warm = count[s->name]++ < self->warmup;

		if (!l ||
		    append_new(l,
			       Py_BuildValue("(KKIlO)", (unsigned long long)(s->start - self->t0),
					     (unsigned long long)(s->end - self->t0), s->depth,
					     all[i].tid, warm ? Py_True : Py_False)))
			goto fail;
	}
	free(all);
	free(count);
	return out;
fail:
	if (!PyErr_Occurred())
		PyErr_NoMemory();
	free(all);
	free(count);
	Py_XDECREF(out);
	return NULL;
}

static PyObject *rec_values(Recorder *self, PyObject *unused)
{
	size_t n, i;
	struct tvalue *all = gather(self, true, &n);
	PyObject *out = PyDict_New();

	(void)unused;
	if (!all || !out)
		goto fail;
	for (i = 0; i < n; i++) {
		const struct value *v = &all[i].v;
		PyObject *l = list_in(out, PyList_GET_ITEM(self->list, v->name));

		if (!l ||
		    append_new(l, Py_BuildValue("(Kdl)", (unsigned long long)(v->t - self->t0),
						v->v, all[i].tid)))
			goto fail;
	}
	free(all);
	return out;
fail:
	if (!PyErr_Occurred())
		PyErr_NoMemory();
	free(all);
	Py_XDECREF(out);
	return NULL;
}

/* The regions the calling thread has open, innermost last. */
static PyObject *rec_open_regions(Recorder *self, PyObject *unused)
{
	struct tbuf *b = tbuf_of(self);
	PyObject *out = PyList_New(0);
	size_t i;

	(void)unused;
	if (!b || !out) {
		Py_XDECREF(out);
		return b ? NULL : PyErr_NoMemory();
	}
	for (i = 0; i < b->nopen; i++)
		if (PyList_Append(out, PyList_GET_ITEM(self->list, b->open[i].name))) {
			Py_DECREF(out);
			return NULL;
		}
	return out;
}

/* Forget every sample, value and open region (buffers stay: threads cache them). */
static PyObject *rec_clear(Recorder *self, PyObject *unused)
{
	struct tbuf *b;

	(void)unused;
	pthread_mutex_lock(&self->lock);
	for (b = self->threads; b; b = b->next)
		b->ns = b->nv = b->nopen = 0;
	pthread_mutex_unlock(&self->lock);
	self->t0 = sonde_clock_ns();
	Py_RETURN_NONE;
}

static PyObject *rec_get_warmup(Recorder *self, void *c)
{
	(void)c;
	return PyLong_FromLong(self->warmup);
}

static PyObject *rec_get_t0(Recorder *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(self->t0);
}

static PyObject *rec_get_names(Recorder *self, void *c)
{
	(void)c;
	return PyList_GetSlice(self->list, 0, PyList_GET_SIZE(self->list));
}

static PyMethodDef recorder_methods[] = {
	{ "region", (PyCFunction)rec_region, METH_O,
	  "region(name): the context manager that times a region of that name" },
	{ "start", (PyCFunction)rec_start, METH_O, "start(name): open a region" },
	{ "stop", (PyCFunction)rec_stop, METH_O,
	  "stop(name): close the innermost open region of that name in this thread" },
	{ "record", (PyCFunction)(void (*)(void))rec_record, METH_FASTCALL,
	  "record(name, value): append a value to a named series" },
	{ "samples", (PyCFunction)rec_samples, METH_NOARGS,
	  "samples(): {name: [(start_ns, end_ns, depth, tid, warmup), ...]}, end-time order" },
	{ "values", (PyCFunction)rec_values, METH_NOARGS,
	  "values(): {name: [(t_ns, value, tid), ...]}, time order" },
	{ "open_regions", (PyCFunction)rec_open_regions, METH_NOARGS,
	  "open_regions(): the names this thread has open, innermost last" },
	{ "clear", (PyCFunction)rec_clear, METH_NOARGS, "clear(): forget everything recorded" },
	{ NULL },
};

static PyGetSetDef recorder_getset[] = {
	{ "warmup", (getter)rec_get_warmup, NULL, "leading samples of each region left out", NULL },
	{ "t0_ns", (getter)rec_get_t0, NULL, "sonde's clock when recording began (ns)", NULL },
	{ "names", (getter)rec_get_names, NULL, "every region and series name, first use first",
	  NULL },
	{ NULL },
};

static PyTypeObject RecorderType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde._sonde.Recorder",
	.tp_basicsize = sizeof(Recorder),
	.tp_dealloc = (destructor)recorder_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "Regions and value series, recorded per thread without locks.",
	.tp_traverse = (traverseproc)recorder_traverse,
	.tp_clear = (inquiry)recorder_clear_refs,
	.tp_weaklistoffset = offsetof(Recorder, weakrefs),
	.tp_dictoffset = offsetof(Recorder, dict),
	.tp_methods = recorder_methods,
	.tp_getset = recorder_getset,
	.tp_init = (initproc)recorder_init,
	.tp_new = recorder_new,
};

/* ---- libsonde's statistics ------------------------------------------------------------ */

/* A sequence of numbers as a malloc'ed array; NULL with an exception set. */
static double *doubles(PyObject *seq, size_t *n)
{
	PyObject *f = PySequence_Fast(seq, "expected a sequence of numbers");
	double *x;
	Py_ssize_t i, m;

	if (!f)
		return NULL;
	m = PySequence_Fast_GET_SIZE(f);
	x = malloc((m ? (size_t)m : 1) * sizeof(*x));
	if (!x) {
		Py_DECREF(f);
		return (double *)PyErr_NoMemory();
	}
	for (i = 0; i < m; i++) {
		x[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(f, i));
		if (x[i] == -1.0 && PyErr_Occurred()) {
			free(x);
			Py_DECREF(f);
			return NULL;
		}
	}
	Py_DECREF(f);
	*n = (size_t)m;
	return x;
}

static PyObject *mod_summarize(PyObject *m, PyObject *seq)
{
	struct sonde_summary s;
	size_t n;
	double *x = doubles(seq, &n);
	int rc;

	(void)m;
	if (!x)
		return NULL;
	rc = sonde_stats__summarize(x, n, &s);
	free(x);
	if (rc == -EINVAL) {
		PyErr_SetString(PyExc_ValueError, "no values to summarise");
		return NULL;
	}
	if (rc)
		return PyErr_NoMemory();
	return Py_BuildValue("{s:n,s:d,s:d,s:d,s:d,s:d,s:(dd),s:d,s:n}", "n", (Py_ssize_t)s.n,
			     "mean", s.mean, "std", s.stddev, "median", s.median, "min", s.min,
			     "max", s.max, "ci95", s.ci_low, s.ci_high, "mad", s.mad, "outliers",
			     (Py_ssize_t)s.outliers);
}

static PyObject *two_sample(PyObject *args,
			    int (*test)(const double *, size_t, const double *, size_t,
					struct sonde_test *),
			    const char *name)
{
	PyObject *a, *b;
	double *x = NULL, *y = NULL;
	size_t na = 0, nb = 0;
	struct sonde_test t;
	int rc;

	if (!PyArg_ParseTuple(args, "OO", &a, &b))
		return NULL;
	x = doubles(a, &na);
	y = x ? doubles(b, &nb) : NULL;
	if (!x || !y) {
		free(x);
		return NULL;
	}
	rc = test(x, na, y, nb, &t);
	free(x);
	free(y);
	if (rc == -EINVAL) {
		PyErr_Format(PyExc_ValueError, "%s needs more values on each side", name);
		return NULL;
	}
	if (rc)
		return PyErr_NoMemory();
	return Py_BuildValue("{s:s,s:d,s:d,s:d,s:d}", "test", name, "statistic", t.statistic, "df",
			     t.df, "p", t.p, "effect", t.effect);
}

static PyObject *mod_welch(PyObject *m, PyObject *args)
{
	(void)m;
	return two_sample(args, sonde_stats__welch, "welch");
}

static PyObject *mod_mann_whitney(PyObject *m, PyObject *args)
{
	(void)m;
	return two_sample(args, sonde_stats__mann_whitney, "mann-whitney");
}

/* ---- profiles ------------------------------------------------------------------------- */

static struct sonde_profile *parse(const char *json, Py_ssize_t len, const char *name)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p = sonde_profile__parse(json, (size_t)len, name, &err);

	if (!p)
		PyErr_SetString(SondePy_Error, err.len ? err.buf : "not a profile");
	sonde_strbuf__release(&err);
	return p;
}

static PyObject *num_or_none(double v)
{
	if (isnan(v))
		Py_RETURN_NONE;
	return PyFloat_FromDouble(v);
}

static PyObject *mod_compare(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kws[] = {
		"baseline", "target", "method", "alpha", "threshold", "severe", NULL
	};
	const char *a, *b, *method = "auto";
	Py_ssize_t la, lb;
	struct sonde_check_options o = { 0 };
	struct sonde_profile *pa = NULL, *pb = NULL;
	struct sonde_check_result *r = NULL;
	PyObject *out = NULL;
	size_t n = 0, i;
	int rc, k;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s#s#|sddd:compare", kws, &a, &la, &b, &lb,
					 &method, &o.alpha, &o.threshold, &o.severe))
		return NULL;
	for (k = 0; sonde_check_methods[k] && strcmp(sonde_check_methods[k], method); k++)
		;
	if (!sonde_check_methods[k]) {
		PyErr_Format(PyExc_ValueError, "unknown method '%s'", method);
		return NULL;
	}
	o.method = (enum sonde_check_method)k;
	pa = parse(a, la, "baseline");
	pb = pa ? parse(b, lb, "target") : NULL;
	if (!pb)
		goto out;
	rc = sonde_check__compare(pa, pb, &o, &r, &n);
	if (rc == -EXDEV) {
		PyErr_SetString(SondePy_Error, "the profiles come from different collectors");
		goto out;
	}
	if (rc) {
		PyErr_NoMemory();
		goto out;
	}
	out = PyList_New(0);
	for (i = 0; out && i < n; i++) {
		const struct sonde_check_result *x = &r[i];

		if (append_new(
			    out,
			    Py_BuildValue(
				    "{s:z,s:z,s:z,s:s,s:s,s:n,s:n,s:N,s:N,s:N,s:N,s:N,s:N,s:N,"
				    "s:N,s:z}",
				    "uid", x->uid, "subtype", x->subtype, "unit", x->unit, "method",
				    x->method, "verdict", sonde_verdict_names[x->verdict],
				    "n_baseline", (Py_ssize_t)x->n_baseline, "n_target",
				    (Py_ssize_t)x->n_target, "baseline", num_or_none(x->baseline),
				    "target", num_or_none(x->target), "change",
				    num_or_none(x->change), "ratio_low", num_or_none(x->ratio_low),
				    "ratio_high", num_or_none(x->ratio_high), "confidence",
				    num_or_none(x->confidence), "p", num_or_none(x->p), "effect",
				    num_or_none(x->effect), "detail", x->detail))) {
			Py_CLEAR(out);
		}
	}
	sonde_check__free(r, n);
out:
	sonde_profile__free(pa);
	sonde_profile__free(pb);
	return out;
}

/* save_profile(json, path): stamped with machine, commit and date, written atomically. */
static PyObject *mod_save_profile(PyObject *m, PyObject *args)
{
	const char *json, *path;
	Py_ssize_t len;
	struct sonde_profile *p;
	PyObject *ret;
	char *used;
	int rc;

	(void)m;
	if (!PyArg_ParseTuple(args, "s#s:save_profile", &json, &len, &path))
		return NULL;
	p = parse(json, len, path);
	if (!p)
		return NULL;
	/* a rank of a job of several: its own file (PATH-rankR), never one for all */
	used = sonde_job__path(path);
	if (!used) {
		sonde_profile__free(p);
		return PyErr_NoMemory();
	}
	rc = sonde_profile__stamp(p);
	Py_BEGIN_ALLOW_THREADS if (!rc) rc = sonde_profile__save(p, used);
	Py_END_ALLOW_THREADS sonde_profile__free(p);
	if (rc) {
		errno = -rc;
		PyErr_SetFromErrnoWithFilename(PyExc_OSError, used);
		free(used);
		return NULL;
	}
	ret = PyUnicode_FromString(used);
	free(used);
	return ret;
}

/* stamp(json): the profile's JSON stamped with machine, commit and date (as collect stamps). */
static PyObject *mod_stamp(PyObject *m, PyObject *args)
{
	const char *json;
	Py_ssize_t len;
	struct sonde_profile *p;
	PyObject *out = NULL;
	size_t n;
	char *s = NULL;

	(void)m;
	if (!PyArg_ParseTuple(args, "s#:stamp", &json, &len))
		return NULL;
	p = parse(json, len, "profile");
	if (!p)
		return NULL;
	if (!sonde_profile__stamp(p))
		s = sonde_profile__dump(p, &n);
	sonde_profile__free(p);
	if (!s)
		return PyErr_NoMemory();
	out = PyUnicode_FromStringAndSize(s, (Py_ssize_t)n);
	free(s);
	return out;
}

/* load_profile(path): the profile's JSON (compressed files read as what they hold). */
static PyObject *mod_load_profile(PyObject *m, PyObject *arg)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p;
	PyObject *path, *out;
	size_t len;
	char *s;

	(void)m;
	if (!PyUnicode_FSConverter(arg, &path))
		return NULL;
	p = sonde_profile__load(PyBytes_AS_STRING(path), &err);
	Py_DECREF(path);
	if (!p) {
		PyErr_SetString(errno == ENOENT ? PyExc_FileNotFoundError : SondePy_Error, err.buf);
		sonde_strbuf__release(&err);
		return NULL;
	}
	s = sonde_profile__dump(p, &len);
	sonde_profile__free(p);
	if (!s)
		return PyErr_NoMemory();
	out = PyUnicode_FromStringAndSize(s, (Py_ssize_t)len);
	free(s);
	return out;
}

/* write_file(path, data): whole or nothing; *.gz and *.zst compressed. */
static PyObject *mod_write_file(PyObject *m, PyObject *args)
{
	const char *path;
	Py_buffer data;
	int rc;

	(void)m;
	if (!PyArg_ParseTuple(args, "sy*:write_file", &path, &data))
		return NULL;
	Py_BEGIN_ALLOW_THREADS rc =
		sonde_file__write_data(path, data.buf, (size_t)data.len, 0, NULL);
	Py_END_ALLOW_THREADS PyBuffer_Release(&data);
	if (rc) {
		errno = -rc;
		return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
	}
	Py_RETURN_NONE;
}

static PyObject *mod_clock_ns(PyObject *m, PyObject *unused)
{
	(void)m;
	(void)unused;
	return PyLong_FromUnsignedLongLong(sonde_clock_ns());
}

static PyMethodDef module_methods[] = {
	{ "summarize", (PyCFunction)mod_summarize, METH_O,
	  "summarize(values): n, mean, std, median, min, max, ci95, mad, outliers" },
	{ "welch", (PyCFunction)mod_welch, METH_VARARGS,
	  "welch(a, b): Welch's t-test of b against a" },
	{ "mann_whitney", (PyCFunction)mod_mann_whitney, METH_VARARGS,
	  "mann_whitney(a, b): the Mann-Whitney U test of b against a" },
	{ "compare", (PyCFunction)(void (*)(void))mod_compare, METH_VARARGS | METH_KEYWORDS,
	  "compare(baseline_json, target_json, method='auto'): sonde check's verdicts" },
	{ "save_profile", (PyCFunction)mod_save_profile, METH_VARARGS,
	  "save_profile(json, path): write a profile, stamped with machine, commit and date" },
	{ "stamp", (PyCFunction)mod_stamp, METH_VARARGS,
	  "stamp(json): the profile stamped with machine, commit and date, as JSON" },
	{ "load_profile", (PyCFunction)mod_load_profile, METH_O,
	  "load_profile(path): a profile's JSON" },
	{ "write_file", (PyCFunction)mod_write_file, METH_VARARGS,
	  "write_file(path, bytes): written whole or not at all (.gz, .zst: compressed)" },
	{ "clock_ns", (PyCFunction)mod_clock_ns, METH_NOARGS,
	  "clock_ns(): sonde's monotonic clock (CLOCK_MONOTONIC), ns" },
	{ NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "sonde._sonde",
	.m_doc = "The C half of the sonde package.",
	.m_size = -1,
	.m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__sonde(void);
PyMODINIT_FUNC PyInit__sonde(void)
{
	PyObject *m, *bases;

	if (PyType_Ready(&RegionType) < 0 || region_bind_once() || PyType_Ready(&RecorderType) < 0)
		return NULL;
	m = PyModule_Create(&module);
	if (!m)
		return NULL;
	SondePy_Error = PyErr_NewExceptionWithDoc("sonde.SondeError",
						  "Something sonde could not do.", NULL, NULL);
	bases = SondePy_Error ? PyTuple_Pack(2, SondePy_Error, PyExc_RuntimeError) : NULL;
	SondePy_StateError =
		bases ? PyErr_NewExceptionWithDoc(
				"sonde.StateError",
				"A call out of order: stop before start, start twice, a "
				"finished collector.",
				bases, NULL)
		      : NULL;
	Py_XDECREF(bases);
	SondePy_NotSupported = PyErr_NewExceptionWithDoc(
		"sonde.NotSupported", "What this machine or this build cannot measure, and why.",
		SondePy_Error, NULL);
	if (!SondePy_Error || !SondePy_StateError || !SondePy_NotSupported ||
	    PyModule_AddObjectRef(m, "SondeError", SondePy_Error) ||
	    PyModule_AddObjectRef(m, "StateError", SondePy_StateError) ||
	    PyModule_AddObjectRef(m, "NotSupported", SondePy_NotSupported) ||
	    PyModule_AddObjectRef(m, "Recorder", (PyObject *)&RecorderType) ||
	    PyModule_AddObjectRef(m, "Region", (PyObject *)&RegionType) ||
	    PyModule_AddStringConstant(m, "version", sonde_version()) || sondepy_counters_init(m) ||
	    sondepy_views_init(m) || sondepy_cpu_init(m)) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
