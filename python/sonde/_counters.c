/*
 * _counters.c - libsonde's counter service in the _sonde extension: agents,
 * the catalog, immutable profile configs, one counted region at a time, and
 * the expression engine (python/sonde/counters.py wraps them).
 *
 * A region is the service's dispatch counting: a context and a buffer are made
 * when the region is entered, sonde_region_begin() opens the config's counters
 * on the calling thread, and the buffer's records (one dispatch header and its
 * values) are read back when it is left. Only one context runs in a process,
 * so regions of this API do not nest.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/counters.h>
#include <sonde/strbuf.h>
#include "_sonde.h"

static const char *kind_name(enum sonde_counter_kind k)
{
	switch (k) {
	case SONDE_COUNTER_SOFTWARE:
		return "software";
	case SONDE_COUNTER_TRACEPOINT:
		return "tracepoint";
	case SONDE_COUNTER_HARDWARE:
		return "hardware";
	case SONDE_COUNTER_DERIVED:
		return "derived";
	}
	return "?";
}

static PyObject *info_dict(const struct sonde_counter_info *i)
{
	return Py_BuildValue("{s:I,s:s,s:z,s:z,s:s,s:z,s:z,s:z,s:O,s:z}", "id", i->id, "name",
			     i->name, "description", i->description, "unit", i->unit, "kind",
			     kind_name(i->kind), "block", i->block, "expression", i->expression,
			     "arch", i->arch, "supported", i->supported ? Py_True : Py_False, "why",
			     i->supported ? NULL : i->why);
}

static PyObject *py_agents(PyObject *m, PyObject *unused)
{
	const struct sonde_agent *a;
	PyObject *out;
	size_t n, i;

	(void)m;
	(void)unused;
	a = sonde_counters__agents(&n);
	if (!a)
		return PyErr_SetFromErrno(SondePy_NotSupported);
	out = PyList_New(0);
	for (i = 0; out && i < n; i++) {
		PyObject *d =
			Py_BuildValue("{s:I,s:s,s:s,s:i,s:i,s:i,s:i,s:s}", "id", a[i].id, "type",
				      a[i].type == SONDE_AGENT_GPU ? "gpu" : "cpu", "name",
				      a[i].name, "cpu", a[i].cpu, "core", a[i].core, "package",
				      a[i].package, "numa", a[i].numa, "arch", a[i].arch);

		if (!d || PyList_Append(out, d))
			Py_CLEAR(out);
		Py_XDECREF(d);
	}
	return out;
}

struct collect {
	uint32_t agent;
	PyObject *out;
};

static int collect_ids(uint32_t agent, const uint32_t *ids, size_t n, void *user)
{
	struct collect *c = user;
	size_t i;

	for (i = 0; i < n; i++) {
		struct sonde_counter_info info;
		PyObject *d;

		if (sonde_counters__info(agent, ids[i], &info))
			continue;
		d = info_dict(&info);
		if (!d || PyList_Append(c->out, d)) {
			Py_XDECREF(d);
			return -ENOMEM;
		}
		Py_DECREF(d);
	}
	return 0;
}

static PyObject *py_counters(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "agent", "tracepoints", NULL };
	unsigned int agent = 0;
	int tracepoints = 0, rc;
	struct collect c;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|Ip:counters", kws, &agent, &tracepoints))
		return NULL;
	c.agent = agent;
	c.out = PyList_New(0);
	if (!c.out)
		return NULL;
	rc = sonde_counters__iterate(agent, tracepoints, collect_ids, &c);
	if (rc) {
		Py_DECREF(c.out);
		if (PyErr_Occurred())
			return NULL;
		errno = -rc;
		return PyErr_SetFromErrno(rc == -ENOENT ? PyExc_KeyError : SondePy_Error);
	}
	return c.out;
}

static PyObject *py_counter_info(PyObject *m, PyObject *args)
{
	const char *name;
	unsigned int agent = 0;
	struct sonde_counter_info info;
	uint32_t id;

	(void)m;
	if (!PyArg_ParseTuple(args, "s|I:counter_info", &name, &agent))
		return NULL;
	if (sonde_counters__find(name, &id) || sonde_counters__info(agent, id, &info)) {
		PyErr_Format(PyExc_KeyError, "no counter named '%s' (sonde counters list)", name);
		return NULL;
	}
	return info_dict(&info);
}

/* ---- configs ----------------------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD struct sonde_counters_config *cfg;
	PyObject *names; /* tuple of the counters' names, in order */
} Config;

static void config_dealloc(Config *self)
{
	sonde_counters_config__free(self->cfg);
	Py_XDECREF(self->names);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *config_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "counters", "agent", "multiplex", NULL };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	PyObject *seq, *fast;
	unsigned int agent = 0;
	int multiplex = 1, rc;
	uint32_t *ids;
	Config *self;
	Py_ssize_t n, i;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Ip:Config", kws, &seq, &agent, &multiplex))
		return NULL;
	fast = PySequence_Fast(seq, "counters is a sequence of counter names");
	if (!fast)
		return NULL;
	n = PySequence_Fast_GET_SIZE(fast);
	if (!n) {
		Py_DECREF(fast);
		PyErr_SetString(PyExc_ValueError, "a config needs at least one counter");
		return NULL;
	}
	ids = malloc((size_t)n * sizeof(*ids));
	if (!ids) {
		Py_DECREF(fast);
		return PyErr_NoMemory();
	}
	for (i = 0; i < n; i++) {
		const char *name = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));

		if (!name || sonde_counters__find(name, &ids[i])) {
			if (name)
				PyErr_Format(PyExc_KeyError,
					     "no counter named '%s' (sonde counters list)", name);
			free(ids);
			Py_DECREF(fast);
			return NULL;
		}
	}
	self = (Config *)type->tp_alloc(type, 0);
	if (!self) {
		free(ids);
		Py_DECREF(fast);
		return NULL;
	}
	rc = sonde_counters_config__new(agent, ids, (size_t)n,
					multiplex ? SONDE_CONFIG_MULTIPLEX : 0, &err, &self->cfg);
	free(ids);
	self->names = PySequence_Tuple(fast);
	Py_DECREF(fast);
	if (rc || !self->names) {
		if (rc)
			PyErr_SetString(rc == -E2BIG ? (PyObject *)SondePy_NotSupported
						     : SondePy_Error,
					err.len ? err.buf : strerror(-rc));
		sonde_strbuf__release(&err);
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
}

static PyObject *config_get_counters(Config *self, void *c)
{
	(void)c;
	Py_INCREF(self->names);
	return self->names;
}

static PyObject *config_get_id(Config *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(sonde_counters_config__id(self->cfg));
}

static PyObject *config_get_agent(Config *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(sonde_counters_config__agent(self->cfg));
}

static PyObject *config_repr(Config *self)
{
	return PyUnicode_FromFormat("<sonde.counters.Config %u on agent %u: %R>",
				    sonde_counters_config__id(self->cfg),
				    sonde_counters_config__agent(self->cfg), self->names);
}

static PyGetSetDef config_getset[] = {
	{ "counters", (getter)config_get_counters, NULL, "the counters, in order", NULL },
	{ "id", (getter)config_get_id, NULL, "the config's id", NULL },
	{ "agent", (getter)config_get_agent, NULL, "the agent it counts on", NULL },
	{ NULL },
};

static PyTypeObject ConfigType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde.counters.Config",
	.tp_basicsize = sizeof(Config),
	.tp_dealloc = (destructor)config_dealloc,
	.tp_repr = (reprfunc)config_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Config(counters, agent=0, multiplex=True): an immutable profile config, "
		  "validated when made.",
	.tp_getset = config_getset,
	.tp_new = config_new,
};

/* ---- one counted region ---------------------------------------------------------------- */

struct region_run {
	struct sonde_counters_context *ctx;
	struct sonde_counters_buffer *buf;
	const struct sonde_counters_config *cfg;
	PyObject *values; /* dict: counter name -> value or None */
	PyObject *notes;  /* dict: counter name -> why it has no value */
	uint64_t start_ns, end_ns, dropped;
	int error;
};

static void choose(const struct sonde_dispatch_info *d, const struct sonde_counters_config **cfg,
		   void *user)
{
	struct region_run *r = user;

	*cfg = d->is_region && d->depth == 0 ? r->cfg : NULL;
}

static void on_records(struct sonde_counters_buffer *b,
		       const struct sonde_counters_header *const *recs, size_t n, uint64_t dropped,
		       void *user)
{
	struct region_run *r = user;
	size_t i;

	(void)b;
	r->dropped = dropped;
	for (i = 0; i < n && !r->error; i++) {
		if (recs[i]->kind == SONDE_RECORD_DISPATCH) {
			const struct sonde_counters_dispatch *d = (const void *)recs[i];

			r->start_ns = d->start_ns;
			r->end_ns = d->end_ns;
		} else if (recs[i]->kind == SONDE_RECORD_VALUE) {
			const struct sonde_counters_value *v = (const void *)recs[i];
			struct sonde_counter_info info;
			PyObject *val;

			if (sonde_counters__info(sonde_counters_config__agent(r->cfg),
						 sonde_instance__counter(v->instance_id), &info))
				continue;
			if (v->flags & (SONDE_VALUE_NOT_SUPPORTED | SONDE_VALUE_NOT_COUNTED |
					SONDE_VALUE_DIV0) ||
			    isnan(v->value)) {
				const char *why =
					v->flags & SONDE_VALUE_NOT_SUPPORTED
						? (info.why ? info.why : "not supported here")
					: v->flags & SONDE_VALUE_DIV0
						? "division by zero"
						: "never counted (it did not run)";
				PyObject *w = PyUnicode_FromString(why);

				val = Py_NewRef(Py_None); /* never 0 for what was not counted */
				if (!w || PyDict_SetItemString(r->notes, info.name, w))
					r->error = -ENOMEM;
				Py_XDECREF(w);
			} else {
				val = PyFloat_FromDouble(v->value);
			}
			if (!val || PyDict_SetItemString(r->values, info.name, val))
				r->error = -ENOMEM;
			Py_XDECREF(val);
		}
	}
}

typedef struct {
	PyObject_HEAD Config *cfg;
	PyObject *name;
	struct region_run run;
	int state; /* 0 idle, 1 counting, 2 done */
} Region;

static int busy; /* one counting region in the process at a time */

static void region_release(Region *self)
{
	if (self->run.ctx)
		sonde_counters_context__free(self->run.ctx);
	self->run.ctx = NULL;
	self->run.buf = NULL;
}

static void cregion_dealloc(Region *self)
{
	if (self->state == 1) {
		sonde_region_end();
		busy = 0;
	}
	region_release(self);
	Py_XDECREF(self->cfg);
	Py_XDECREF(self->name);
	Py_XDECREF(self->run.values);
	Py_XDECREF(self->run.notes);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *cregion_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "name", "config", NULL };
	PyObject *name;
	Config *cfg;
	Region *self;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "UO!:region", kws, &name, &ConfigType, &cfg))
		return NULL;
	self = (Region *)type->tp_alloc(type, 0);
	if (!self)
		return NULL;
	self->name = Py_NewRef(name);
	self->cfg = (Config *)Py_NewRef((PyObject *)cfg);
	self->run.values = PyDict_New();
	self->run.notes = PyDict_New();
	if (!self->run.values || !self->run.notes) {
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
}

static PyObject *cregion_enter(Region *self, PyObject *unused)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	const char *name = PyUnicode_AsUTF8(self->name);
	int rc;

	(void)unused;
	if (!name)
		return NULL;
	if (self->state) {
		PyErr_SetString(SondePy_StateError, "a counted region runs once");
		return NULL;
	}
	if (busy) {
		PyErr_SetString(SondePy_StateError,
				"another counted region is running: the counter service counts one "
				"region at a time in a process");
		return NULL;
	}
	self->run.cfg = self->cfg->cfg;
	rc = sonde_counters_context__new(&self->run.ctx);
	if (!rc)
		rc = sonde_counters_buffer__new(self->run.ctx, 64 << 10, 32 << 10,
						SONDE_BUFFER_LOSSLESS, on_records, &self->run,
						&self->run.buf);
	if (!rc)
		rc = sonde_counters__configure_dispatch(self->run.ctx, self->run.buf, choose,
							&self->run);
	if (!rc)
		rc = sonde_counters_context__start(self->run.ctx, &err);
	if (rc) {
		PyErr_Format(rc == -EACCES || rc == -ENODEV || rc == -EOPNOTSUPP
				     ? SondePy_NotSupported
				     : SondePy_Error,
			     "cannot count: %s", err.len ? err.buf : strerror(-rc));
		sonde_strbuf__release(&err);
		region_release(self);
		return NULL;
	}
	busy = 1;
	self->state = 1;
	sonde_region_begin(name);
	return Py_NewRef((PyObject *)self);
}

static PyObject *cregion_exit(Region *self, PyObject *const *args, Py_ssize_t n)
{
	(void)args;
	(void)n;
	if (self->state != 1) {
		PyErr_SetString(SondePy_StateError, "the counted region is not running");
		return NULL;
	}
	sonde_region_end();
	sonde_counters_context__stop(self->run.ctx);
	sonde_counters_buffer__flush(self->run.buf);
	region_release(self);
	busy = 0;
	self->state = 2;
	if (self->run.error)
		return PyErr_NoMemory();
	Py_RETURN_FALSE;
}

static PyObject *cregion_get(Region *self, void *which)
{
	const char *w = which;

	if (!strcmp(w, "values"))
		return Py_NewRef(self->run.values);
	if (!strcmp(w, "not_counted"))
		return Py_NewRef(self->run.notes);
	if (!strcmp(w, "name"))
		return Py_NewRef(self->name);
	if (!strcmp(w, "duration_ns")) {
		if (self->state != 2 || !self->run.end_ns)
			Py_RETURN_NONE;
		return PyLong_FromUnsignedLongLong(self->run.end_ns - self->run.start_ns);
	}
	return PyLong_FromUnsignedLongLong(self->run.dropped);
}

static PyMethodDef cregion_methods[] = {
	{ "__enter__", (PyCFunction)cregion_enter, METH_NOARGS, "Start counting." },
	{ "__exit__", (PyCFunction)(void (*)(void))cregion_exit, METH_FASTCALL, "Stop counting." },
	{ NULL },
};

static PyGetSetDef cregion_getset[] = {
	{ "values", (getter)cregion_get, NULL, "counter name -> value (None: not counted)",
	  "values" },
	{ "not_counted", (getter)cregion_get, NULL, "counter name -> why it has no value",
	  "not_counted" },
	{ "name", (getter)cregion_get, NULL, "the region's name", "name" },
	{ "duration_ns", (getter)cregion_get, NULL, "how long it counted (ns)", "duration_ns" },
	{ "dropped", (getter)cregion_get, NULL, "records the buffer dropped", "dropped" },
	{ NULL },
};

static PyTypeObject CountedRegionType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde.counters.region",
	.tp_basicsize = sizeof(Region),
	.tp_dealloc = (destructor)cregion_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "region(name, config): count the block with a config; .values afterwards.",
	.tp_methods = cregion_methods,
	.tp_getset = cregion_getset,
	.tp_new = cregion_new,
};

/* ---- expressions ------------------------------------------------------------------------- */

struct eval_values {
	PyObject *dict;
	double *bufs[64];
	size_t nbufs;
	int error;
};

static int eval_set(void *user, const char *name, const double **v, size_t *n)
{
	struct eval_values *e = user;
	PyObject *x = PyDict_GetItemString(e->dict, name), *fast;
	Py_ssize_t i, m;
	double *buf;

	if (!x)
		return -ENOENT;
	if (e->nbufs == sizeof(e->bufs) / sizeof(e->bufs[0]))
		return -E2BIG;
	if (PyNumber_Check(x)) {
		buf = malloc(sizeof(*buf));
		if (!buf)
			return -ENOMEM;
		buf[0] = PyFloat_AsDouble(x);
		m = 1;
	} else {
		fast = PySequence_Fast(x, "a value is a number or a sequence of numbers");
		if (!fast) {
			e->error = 1;
			return -EINVAL;
		}
		m = PySequence_Fast_GET_SIZE(fast);
		buf = malloc((m ? (size_t)m : 1) * sizeof(*buf));
		for (i = 0; buf && i < m; i++)
			buf[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
		Py_DECREF(fast);
		if (!buf)
			return -ENOMEM;
	}
	if (PyErr_Occurred()) {
		free(buf);
		e->error = 1;
		return -EINVAL;
	}
	e->bufs[e->nbufs++] = buf;
	*v = buf;
	*n = (size_t)m;
	return 0;
}

static PyObject *py_eval(PyObject *m, PyObject *args)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct eval_values e = { 0 };
	const char *expr;
	double out[256];
	size_t n = 0, i;
	int div0 = 0, rc;
	PyObject *res = NULL;

	(void)m;
	if (!PyArg_ParseTuple(args, "sO!:eval", &expr, &PyDict_Type, &e.dict))
		return NULL;
	rc = sonde_counters__eval(expr, eval_set, &e, out, 256, &n, &div0, &err);
	for (i = 0; i < e.nbufs; i++)
		free(e.bufs[i]);
	if (e.error)
		goto done;
	if (rc) {
		PyErr_Format(PyExc_ValueError, "%s: %s", expr, err.len ? err.buf : strerror(-rc));
		goto done;
	}
	res = PyList_New((Py_ssize_t)n);
	for (i = 0; res && i < n; i++) /* a division by zero is NaN, never a number */
		PyList_SET_ITEM(res, (Py_ssize_t)i,
				isnan(out[i]) ? Py_NewRef(Py_None) : PyFloat_FromDouble(out[i]));
done:
	sonde_strbuf__release(&err);
	return res;
}

/* {name: {"description": str, "counters": [names]}} of the catalog's groups. */
static PyObject *py_groups(PyObject *m, PyObject *unused)
{
	const struct sonde_counter_group *const *g;
	PyObject *d;
	size_t n, i, k;
	int rc;

	(void)m;
	(void)unused;
	rc = sonde_counters__groups(&g, &n);
	if (rc) {
		PyErr_Format(PyExc_RuntimeError, "the counter catalog: %s", strerror(-rc));
		return NULL;
	}
	d = PyDict_New();
	for (i = 0; d && i < n; i++) {
		PyObject *names = PyList_New((Py_ssize_t)g[i]->n), *one;

		for (k = 0; names && k < g[i]->n; k++)
			PyList_SET_ITEM(names, (Py_ssize_t)k,
					PyUnicode_FromString(g[i]->counters[k]));
		one = names ? Py_BuildValue("{s:s, s:N}", "description", g[i]->description,
					    "counters", names)
			    : NULL;
		if (!one || PyDict_SetItemString(d, g[i]->name, one)) {
			Py_XDECREF(one);
			Py_CLEAR(d);
			break;
		}
		Py_DECREF(one);
	}
	return d;
}

static PyMethodDef counters_methods[] = {
	{ "counters_groups", (PyCFunction)py_groups, METH_NOARGS, "the counter groups" },
	{ "counters_agents", (PyCFunction)py_agents, METH_NOARGS, "the agents" },
	{ "counters_list", (PyCFunction)(void (*)(void))py_counters, METH_VARARGS | METH_KEYWORDS,
	  "the counters an agent supports" },
	{ "counter_info", (PyCFunction)py_counter_info, METH_VARARGS, "one counter's info" },
	{ "counters_eval", (PyCFunction)py_eval, METH_VARARGS,
	  "counters_eval(expression, values): the expression's values" },
	{ NULL },
};

int sondepy_counters_init(PyObject *m)
{
	if (PyType_Ready(&ConfigType) < 0 || PyType_Ready(&CountedRegionType) < 0)
		return -1;
	if (PyModule_AddObjectRef(m, "CountersConfig", (PyObject *)&ConfigType) ||
	    PyModule_AddObjectRef(m, "CountedRegion", (PyObject *)&CountedRegionType) ||
	    PyModule_AddFunctions(m, counters_methods))
		return -1;
	return 0;
}
