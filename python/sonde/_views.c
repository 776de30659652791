/*
 * _views.c - libsonde's views from Python: the same tables, charts, flame
 * graphs and HTML report `sonde show` and `sonde report` draw, from profiles
 * given as JSON text.
 *
 *   view(kind, profiles, **options) -> str
 *
 * kind: table, warnings, memory, report, graph, counters (text views, with
 * format= and top=, sort=), csv (every value row), perfetto, folded (weight=), flamegraph (weight=,
 * base= a baseline profile for a differential one), bars, flow, scatter (of=,
 * per=, by=, type=, func=, stacked=, top=, title=) and html (every profile in
 * profiles, names= how to call them).
 */
#include <errno.h>
#include <string.h>
#include <sonde/sonde.h>
#include "_sonde.h"

struct view_args {
	const char *kind, *format, *sort, *weight, *of, *per, *by, *type, *func, *title;
	PyObject *profiles, *names, *base;
	int top, stacked;
};

static struct sonde_profile *parse_one(PyObject *o, const char *name)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p;
	Py_ssize_t len;
	const char *s = PyUnicode_AsUTF8AndSize(o, &len);

	if (!s)
		return NULL;
	p = sonde_profile__parse(s, (size_t)len, name, &err);
	if (!p)
		PyErr_Format(SondePy_Error, "%s: %s", name, err.len ? err.buf : "not a profile");
	sonde_strbuf__release(&err);
	return p;
}

/* The index of name in a NULL-terminated table, or -1 with ValueError. */
static int one_of(const char *what, const char *name, const char *const *table)
{
	int i;

	for (i = 0; table[i]; i++)
		if (!strcmp(table[i], name))
			return i;
	PyErr_Format(PyExc_ValueError, "unknown %s '%s'", what, name);
	return -1;
}

static int folded_of(const struct sonde_profile *p, const char *weight, struct sonde_strbuf *out)
{
	int rc = sonde_view__folded(p, weight, out);

	if (rc == -ENOTSUP)
		PyErr_SetString(SondePy_NotSupported,
				"the profile has no stacks (a memory or trace profile has)");
	return rc;
}

/* One profile's view; rc as the library's, a Python error already set when rc is -1. */
static int draw(const struct view_args *a, struct sonde_profile *p, struct sonde_strbuf *out)
{
	const char *k = a->kind;
	int f = one_of("format", a->format, sonde_view__formats);
	unsigned top = a->top < 0 ? 0 : (unsigned)a->top;

	const struct sonde_view_info *v = sonde_view__find(k);

	if (f < 0)
		return -1;
	if (v && v->show) { /* the registry's text views, as `sonde show` shows them */
		const struct sonde_view_args va = { .sz = sizeof(va),
						    .fmt = (enum sonde_view_format)f,
						    .top = top,
						    .sort = a->sort,
						    .notes = true };

		if ((v->flags & SONDE_VIEW_SORT) &&
		    one_of("sort key", a->sort, sonde_view__trace_sort_keys) < 0)
			return -1;
		return sonde_view__show(p, k, &va, out);
	}
	if (!strcmp(k, "warnings"))
		return sonde_view__warnings(p, "", true, out);
	if (!strcmp(k, "csv")) /* every value row, as `sonde export -f csv` writes */
		return sonde_view__csv(p, out);
	if (!strcmp(k, "perfetto"))
		return sonde_view__perfetto(p, out);
	if (!strcmp(k, "folded") || !strcmp(k, "flamegraph")) {
		const char *unit, *weight = sonde_view__flame_weight(p, &unit);
		struct sonde_strbuf fa = SONDE_STRBUF_INIT, fb = SONDE_STRBUF_INIT;
		struct sonde_profile *b = NULL;
		int rc;

		if (a->weight)
			weight = a->weight;
		if (strcmp(weight, "bytes") && strcmp(weight, "count") && strcmp(weight, "time") &&
		    strcmp(weight, "calls")) {
			PyErr_Format(PyExc_ValueError,
				     "unknown weight '%s' (bytes, count, time, calls)", weight);
			return -1;
		}
		if (!strcmp(weight, "count") || !strcmp(weight, "calls"))
			unit = "";
		if (!strcmp(k, "folded"))
			return folded_of(p, weight, out);
		if (a->base && a->base != Py_None && !(b = parse_one(a->base, "base")))
			return -1;
		rc = folded_of(p, weight, &fa);
		if (!rc && b)
			rc = folded_of(b, weight, &fb);
		if (!rc)
			rc = sonde_view__flame(fa.buf, b ? fb.buf : NULL,
					       a->title ? a->title : weight, unit, out);
		sonde_profile__free(b);
		sonde_strbuf__release(&fa);
		sonde_strbuf__release(&fb);
		return rc == -ENOTSUP ? -1 : rc;
	}
	if (!strcmp(k, "bars") || !strcmp(k, "flow") || !strcmp(k, "scatter")) {
		struct sonde_chart_opts o = {
			.sz = sizeof(o),
			.of = a->of,
			.per = a->per,
			.by = a->by,
			.type = a->type,
			.stacked = a->stacked,
			.top = top,
			.title = a->title,
		};
		int fn = one_of("function", a->func, sonde_view__aggs);
		const char *of, *per;

		if (fn < 0)
			return -1;
		o.func = (enum sonde_view_agg)fn;
		sonde_postprocess__defaults(sonde_profile__type(p), &of, &per);
		if (!o.per) /* as sonde show draws them */
			o.per = !strcmp(k, "bars") ? "uid"
				: strcmp(k, "flow") || strcmp(per, "structure-unit-size")
					? per
					: "timestamp";
		return !strcmp(k, "bars")   ? sonde_view__bars(p, &o, out)
		       : !strcmp(k, "flow") ? sonde_view__flow(p, &o, out)
					    : sonde_view__scatter(p, &o, out);
	}
	PyErr_Format(PyExc_ValueError,
		     "unknown view '%s' (table, warnings, memory, report, graph, counters, "
		     "csv, perfetto, folded, flamegraph, bars, flow, scatter, html)",
		     k);
	return -1;
}

/* The HTML report of every profile in a->profiles (a list), stamped as collect stamps. */
static int html(const struct view_args *a, struct sonde_strbuf *out)
{
	PyObject *seq =
		PySequence_Fast(a->profiles, "profiles: a profile's JSON or a list of them");
	Py_ssize_t n, i;
	struct sonde_profile **p;
	const char **names;
	char(*auto_names)[32];
	int rc = -1;

	if (!seq)
		return -1;
	n = PySequence_Fast_GET_SIZE(seq);
	p = calloc((size_t)n + 1, sizeof(*p));
	names = calloc((size_t)n + 1, sizeof(*names));
	auto_names = calloc((size_t)n + 1, sizeof(*auto_names));
	if (!p || !names || !auto_names) {
		PyErr_NoMemory();
		goto out;
	}
	if (!n) {
		PyErr_SetString(PyExc_ValueError, "no profile to report");
		goto out;
	}
	for (i = 0; i < n; i++) {
		PyObject *nm =
			a->names && a->names != Py_None ? PySequence_GetItem(a->names, i) : NULL;

		if (nm) {
			names[i] = PyUnicode_AsUTF8(nm);
			Py_DECREF(nm); /* the list keeps the string */
			if (!names[i])
				goto out;
		} else {
			if (PyErr_Occurred())
				goto out;
			snprintf(auto_names[i], sizeof(auto_names[i]), "profile %zd", i + 1);
			names[i] = auto_names[i];
		}
		p[i] = parse_one(PySequence_Fast_GET_ITEM(seq, i), names[i]);
		if (!p[i])
			goto out;
	}
	Py_BEGIN_ALLOW_THREADS rc = sonde_view__report(p, names, (size_t)n, out);
	Py_END_ALLOW_THREADS out : for (i = 0; p && i < n; i++) sonde_profile__free(p[i]);
	free(p);
	free(names);
	free(auto_names);
	Py_DECREF(seq);
	return rc;
}

static PyObject *mod_view(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "kind",	  "profiles", "format", "top", "sort", "weight",
			       "base",	  "of",	      "per",	"by",  "type", "func",
			       "stacked", "title",    "names",	NULL };
	struct view_args a = { .format = "text", .sort = "total", .of = "amount", .func = "sum" };
	struct sonde_strbuf out = SONDE_STRBUF_INIT;
	PyObject *res = NULL;
	int rc;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|$sizzOzzzzzpzO:view", kws, &a.kind,
					 &a.profiles, &a.format, &a.top, &a.sort, &a.weight,
					 &a.base, &a.of, &a.per, &a.by, &a.type, &a.func,
					 &a.stacked, &a.title, &a.names))
		return NULL;
	if (!a.sort)
		a.sort = "total";
	if (!strcmp(a.kind, "html")) {
		rc = html(&a, &out);
	} else {
		struct sonde_profile *p = parse_one(a.profiles, "profile");

		if (!p)
			return NULL;
		rc = draw(&a, p, &out);
		if (rc == -EINVAL)
			PyErr_Format(SondePy_NotSupported,
				     "the %s view does not apply to a %s profile%s", a.kind,
				     sonde_profile__type(p),
				     !strcmp(a.kind, "bars") || !strcmp(a.kind, "flow") ||
						     !strcmp(a.kind, "scatter")
					     ? " with these columns (nothing to draw)"
					     : "");
		sonde_profile__free(p);
	}
	if (rc == -ENOMEM)
		PyErr_NoMemory();
	else if (rc == -EINVAL && !PyErr_Occurred())
		PyErr_SetString(SondePy_NotSupported, "nothing to draw");
	else if (rc && !PyErr_Occurred())
		PyErr_Format(SondePy_Error, "%s: %s", a.kind, strerror(-rc));
	if (!rc)
		res = PyUnicode_DecodeUTF8(out.buf, (Py_ssize_t)out.len, "replace");
	sonde_strbuf__release(&out);
	return res;
}

static PyMethodDef view_methods[] = {
	{ "view", (PyCFunction)(void (*)(void))mod_view, METH_VARARGS | METH_KEYWORDS,
	  "view(kind, profiles, **options): a view of a profile (JSON) as text, SVG or HTML" },
	{ NULL },
};

int sondepy_views_init(PyObject *m)
{
	return PyModule_AddFunctions(m, view_methods);
}
