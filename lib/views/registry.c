/*
 * registry.c - the views sonde shows, by name (see view.h): one table, read by
 * the CLI's collect, show and export and by the Python binding.
 */
#include <errno.h>
#include <string.h>
#include <sonde/view.h>

static const char *sort_of(const struct sonde_view_args *a)
{
	return a->sort ? a->sort : "total";
}

static int table(const struct sonde_profile *p, const struct sonde_view_args *a,
		 struct sonde_strbuf *out)
{
	return sonde_view__table(p, a->fmt, out);
}

/* The view's text, then (a->warnings, as text) the profile's warnings and notes. */
static int shown(int rc, const struct sonde_profile *p, const struct sonde_view_args *a,
		 struct sonde_strbuf *out)
{
	if (!rc && a->warnings && a->fmt == SONDE_VIEW_TEXT)
		rc = sonde_view__warnings(p, "", true, out);
	return rc;
}

static int memory(const struct sonde_profile *p, const struct sonde_view_args *a,
		  struct sonde_strbuf *out)
{
	return sonde_view__memory(p, a->fmt, a->top, out);
}

static int report(const struct sonde_profile *p, const struct sonde_view_args *a,
		  struct sonde_strbuf *out)
{
	return sonde_view__trace_report(p, a->fmt, sort_of(a), a->top, out);
}

static int graph(const struct sonde_profile *p, const struct sonde_view_args *a,
		 struct sonde_strbuf *out)
{
	return sonde_view__trace_graph(p, a->fmt, a->top, out);
}

static int counters(const struct sonde_profile *p, const struct sonde_view_args *a,
		    struct sonde_strbuf *out)
{
	return sonde_view__counters(p, a->fmt, a->notes, out);
}

static int sched(const struct sonde_profile *p, const struct sonde_view_args *a,
		 struct sonde_strbuf *out)
{
	return sonde_view__sched(p, a->fmt, out);
}

static int sys(const struct sonde_profile *p, const struct sonde_view_args *a,
	       struct sonde_strbuf *out)
{
	return sonde_view__system(p, a->fmt, out);
}

/* The collectors' own views first, in the order a profile with none named tries them. */
static const struct sonde_view_info views[] = {
	{ "table",
	  "summary statistics of every resource (the default of a profile no collector view reads)",
	  "every profile", NULL, 0, table },
	{ "counters", "counts, rates and derived metrics, as perf stat lays them out",
	  "counters profiles", "counters", SONDE_VIEW_OWN, counters },
	{ "sched", "per thread on-CPU time, waits, switches and interference; system calls",
	  "sched profiles", "sched", SONDE_VIEW_OWN, sched },
	{ "system", "each metric's mean, p95 and peak (and total for rates)", "system profiles",
	  "system", SONDE_VIEW_OWN, sys },
	{ "memory", "totals, top sites, leaks with their stacks, sizes and the heap over time",
	  "memory profiles", "memory", SONDE_VIEW_OWN | SONDE_VIEW_TOP, memory },
	{ "report", "per function calls, total, self, average, min and max time",
	  "trace, python and sample profiles", "trace",
	  SONDE_VIEW_OWN | SONDE_VIEW_TOP | SONDE_VIEW_SORT, report },
	{ "graph", "the calling contexts with inclusive and exclusive time (as data: the edges)",
	  "trace, python and sample profiles", "trace", SONDE_VIEW_TOP, graph },
	{ "bars", "a value aggregated per category, grouped or stacked (SVG)", "every profile",
	  NULL, SONDE_VIEW_DRAWN, NULL },
	{ "flow", "the same over a numeric axis: snapshots, sizes, time (SVG)", "every profile",
	  NULL, SONDE_VIEW_DRAWN, NULL },
	{ "scatter", "a value against a size per resource, with every fitted model (SVG)",
	  "every profile", NULL, SONDE_VIEW_DRAWN, NULL },
	{ "flamegraph", "the stacks, click to zoom, search, tooltips (SVG)",
	  "memory, trace, python and sample profiles", NULL, SONDE_VIEW_DRAWN, NULL },
	{ "diff", "another profile against this one: a differential flame graph and a table",
	  "memory, trace, python and sample profiles", NULL, SONDE_VIEW_DRAWN, NULL },
};

const struct sonde_view_info *sonde_view__list(size_t *n)
{
	*n = sizeof(views) / sizeof(views[0]);
	return views;
}

const struct sonde_view_info *sonde_view__find(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(views) / sizeof(views[0]); i++)
		if (!strcmp(views[i].name, name))
			return &views[i];
	errno = ENOENT;
	return NULL;
}

int sonde_view__show(const struct sonde_profile *p, const char *name,
		     const struct sonde_view_args *a, struct sonde_strbuf *out)
{
	const struct sonde_view_info *v;
	size_t i;
	int rc;

	if (name) {
		if (!(v = sonde_view__find(name)))
			return -ENOENT;
		return v->show ? shown(v->show(p, a, out), p, a, out) : -ENOTSUP;
	}
	for (i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		if (!(views[i].flags & SONDE_VIEW_OWN))
			continue;
		rc = views[i].show(p, a, out);
		if (rc != -EINVAL)
			return shown(rc, p, a, out);
	}
	return shown(table(p, a, out), p, a, out);
}
