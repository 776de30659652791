/*
 * trace.c - the views of a trace profile: `report` (per function calls,
 * total, self, average, min, max, like `uftrace report`) and `graph` (the
 * calling contexts as a tree with inclusive and exclusive time, and the
 * caller -> callee edges), plus the trace exports: folded stacks weighted by
 * exclusive time and a Chrome/Perfetto trace-event timeline.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include "views.h"

struct fsum {
	const char *name, *module;
	json_int_t calls, total, self, min, max;
	double sum; /* sum of every call's duration (the average's numerator) */
};

static json_int_t iget(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/*
 * A sampled profile: counts are samples, times are the samples' weights
 * (estimates). Its stats say so, as its trace member does: the stats are
 * read, as the trace member of a profile just collected is still text (its
 * tree is 200 000 timeline slices).
 */
static bool sampled(const struct sonde_profile *p)
{
	const char *c = json_string_value(
		json_object_get(json_object_get(sonde_profile__stats(p), "trace"), "count"));

	return c && !strcmp(c, "samples");
}

static int by_key(const void *a, const void *b, void *arg)
{
	const struct fsum *x = a, *y = b;
	const char *sort_key = arg;
	double vx, vy;

	if (!strcmp(sort_key, "name"))
		return strcmp(x->name, y->name);
	if (!strcmp(sort_key, "calls"))
		vx = (double)x->calls, vy = (double)y->calls;
	else if (!strcmp(sort_key, "self"))
		vx = (double)x->self, vy = (double)y->self;
	else if (!strcmp(sort_key, "avg"))
		vx = x->sum / (double)x->calls, vy = y->sum / (double)y->calls;
	else if (!strcmp(sort_key, "min"))
		vx = (double)x->min, vy = (double)y->min;
	else if (!strcmp(sort_key, "max"))
		vx = (double)x->max, vy = (double)y->max;
	else
		vx = (double)x->total, vy = (double)y->total;
	return vx < vy ? 1 : vx > vy ? -1 : strcmp(x->name, y->name);
}

const char *const sonde_view__trace_sort_keys[] = { "total", "self", "calls", "avg",
						    "min",   "max",  "name",  NULL };

/* Per function sums over the profile's resources (one per name and module). */
static struct fsum *sums(const struct sonde_profile *p, size_t *n)
{
	size_t nres = sonde_profile__resource_count(p), i, k = 0;
	struct fsum *s = calloc(nres + 1, sizeof(*s));

	if (!s)
		return NULL;
	for (i = 0; i < nres; i++) {
		json_t *fixed, *sum;

		if (sonde_profile__resource_at(p, i, NULL, &fixed, NULL)) {
			free(s); /* a function left out would read as one never called */
			return NULL;
		}
		sum = json_object_get(fixed, "summary");
		if (!json_is_object(sum))
			continue;
		s[k].name = json_string_value(json_object_get(fixed, "uid")) ?: "?";
		s[k].module = json_string_value(json_object_get(fixed, "location")) ?: "";
		s[k].calls = iget(sum, json_object_get(sum, "samples") ? "samples" : "calls");
		s[k].total = iget(sum, "total");
		s[k].self = iget(sum, "self");
		s[k].min = iget(sum, "min");
		s[k].max = iget(sum, "max");
		s[k].sum = json_number_value(json_object_get(sum, "mean")) * (double)s[k].calls;
		if (s[k].calls)
			k++;
	}
	*n = k;
	return s;
}

static const char *dur(double ns, char *buf, size_t len)
{
	return sonde_format__duration(ns, buf, len);
}

/* A sampled weight: a duration, or a count of the sampled event (cycles, ...). */
static const char *weight(double v, const char *event, char *buf, size_t len)
{
	if (!event)
		return dur(v, buf, len);
	snprintf(buf, len, "%.4g", v);
	return buf;
}

/* Per function samples, total and self (estimated ns); no call, average, min or max. */
static int sampled_report(const struct sonde_profile *p, json_t *t, const struct fsum *s, size_t n,
			  enum sonde_view_format fmt, struct sonde_strbuf *out)
{
	json_t *how = json_object_get(t, "sampling");
	double all = (double)iget(t, "sample_weight_ns");
	char a[32], b[32];
	size_t i;
	int err = 0;

	if (fmt == SONDE_VIEW_JSON) {
		json_t *doc = json_pack("{s:O, s:[]}", "totals", t, "functions");

		for (i = 0; doc && i < n; i++)
			json_array_append_new(json_object_get(doc, "functions"),
					      json_pack("{s:s, s:s, s:I, s:I, s:I}", "function",
							s[i].name, "module", s[i].module, "samples",
							s[i].calls, "total_ns", s[i].total,
							"self_ns", s[i].self));
		err |= sonde_view__json(out, doc, JSON_INDENT(2));
		json_decref(doc);
	} else if (fmt == SONDE_VIEW_CSV || fmt == SONDE_VIEW_MARKDOWN) {
		bool md = fmt == SONDE_VIEW_MARKDOWN;

		err |= sonde_strbuf__adds(out, md ? "| function | samples | total ns | self ns |\n"
						    "|---|---:|---:|---:|\n"
						  : "function,samples,total_ns,self_ns\n");
		for (i = 0; i < n; i++) {
			struct sonde_strbuf q = SONDE_STRBUF_INIT;

			if (!md)
				err |= sonde_view__csv_quote(&q, s[i].name);
			err |= sonde_strbuf__addf(
				out, md ? "| `%s` | %lld | %lld | %lld |\n" : "%s,%lld,%lld,%lld\n",
				md	? s[i].name
				: q.buf ? q.buf
					: "\"\"",
				(long long)s[i].calls, (long long)s[i].total, (long long)s[i].self);
			sonde_strbuf__release(&q);
		}
	} else {
		err |= sonde_strbuf__addf(
			out, "%s  (samples)\n\n",
			json_string_value(json_object_get(sonde_profile__header(p), "cmd")) ?: "?");
		const char *w = json_string_value(json_object_get(how, "weight")) ?: "cpu";
		bool perf = !strcmp(json_string_value(json_object_get(how, "timer")) ?: "",
				    "perf_event");
		const char *ev = strcmp(w, "cpu") && strcmp(w, "wall") && strcmp(w, "cpu+off-cpu")
					 ? w
					 : NULL;

		if (ev) {
			err |= sonde_strbuf__addf(
				out,
				"  %lld samples of %s events %s in %lld thread(s); each sample "
				"stands for the events before it (columns count %s, not time)\n",
				(long long)iget(t, "samples"), weight(all, ev, a, sizeof(a)), ev,
				(long long)iget(t, "threads"), ev);
			goto rows;
		}

		err |= sonde_strbuf__addf(
			out, "  %lld samples of %s of %s time in %lld thread(s), one every %s",
			(long long)iget(t, "samples"), dur(all, a, sizeof(a)),
			!strcmp(w, "wall")	    ? "wall"
			: !strcmp(w, "cpu+off-cpu") ? "on- and off-CPU"
						    : "CPU",
			(long long)iget(t, "threads"),
			dur(json_number_value(json_object_get(how, "interval_ns")), b, sizeof(b)));
		err |= sonde_strbuf__adds(
			out,
			perf ? !strcmp(w, "cpu+off-cpu")
					? "; times are estimates: each sample stands for the "
					  "CPU time before it, a switch out for the time until "
					  "its thread ran again (measured)\n"
					: "; times are estimates: each sample stands for the "
					  "CPU time before it\n"
			: !strcmp(w, "wall")
				? "; times are estimates: each sample stands for the wall time "
				  "since its thread's previous one\n"
				: "; times are estimates: each sample stands for the CPU time "
				  "its thread used since its previous one\n");
		if (json_is_integer(json_object_get(how, "process_cpu_ns"))) {
			double cpu = (double)iget(how, "process_cpu_ns"),
			       un = (double)iget(how, "unsampled_cpu_ns");

			err |= sonde_strbuf__addf(
				out,
				"  the process used %s of CPU meanwhile; %s of it (%.1f%%) is in "
				"no sample: a thread's time after its last sample, threads that "
				"ended before one, threads without Python\n",
				dur(cpu, a, sizeof(a)), dur(un, b, sizeof(b)),
				cpu > 0 ? 100.0 * un / cpu : 0.0);
		}
	rows:
		err |= sonde_strbuf__addf(out, "\n  %10s %7s %10s %7s %10s  %s\n", "total", "",
					  "self", "", "samples", "function");
		for (i = 0; i < n; i++) {
			weight((double)s[i].total, ev, a, sizeof(a));
			weight((double)s[i].self, ev, b, sizeof(b));
			err |= sonde_strbuf__addf(
				out, "  %*s %6.1f%% %*s %6.1f%% %10lld  %s\n", SONDE_COLS(a, 10),
				all > 0 ? 100.0 * (double)s[i].total / all : 0.0, SONDE_COLS(b, 10),
				all > 0 ? 100.0 * (double)s[i].self / all : 0.0,
				(long long)s[i].calls, s[i].name);
		}
	}
	return err ? -ENOMEM : 0;
}

int sonde_view__trace_report(const struct sonde_profile *p, enum sonde_view_format fmt,
			     const char *sort, unsigned top, struct sonde_strbuf *out)
{
	json_t *t = json_object_get(sonde_profile__stats(p), "trace");
	struct fsum *s;
	size_t n, i;
	char a[32], b[32], c[32], d[32], e[32];
	int err = 0;

	if (!json_is_object(t))
		return -EINVAL;
	s = sums(p, &n);
	if (!s)
		return -ENOMEM;
	qsort_r(s, n, sizeof(*s), by_key, (void *)(sort ? sort : "total"));
	if (top && n > top)
		n = top;
	if (sampled(p)) {
		err = sampled_report(p, t, s, n, fmt, out);
		free(s);
		return err;
	}
	if (fmt == SONDE_VIEW_JSON) {
		json_t *doc = json_pack("{s:O, s:[]}", "totals", t, "functions");

		for (i = 0; doc && i < n; i++)
			json_array_append_new(
				json_object_get(doc, "functions"),
				json_pack("{s:s, s:s, s:I, s:I, s:I, s:f, s:I, s:I}", "function",
					  s[i].name, "module", s[i].module, "calls", s[i].calls,
					  "total_ns", s[i].total, "self_ns", s[i].self, "avg_ns",
					  s[i].sum / (double)s[i].calls, "min_ns", s[i].min,
					  "max_ns", s[i].max));
		err |= sonde_view__json(out, doc, JSON_INDENT(2));
		json_decref(doc);
	} else if (fmt == SONDE_VIEW_CSV || fmt == SONDE_VIEW_MARKDOWN) {
		bool md = fmt == SONDE_VIEW_MARKDOWN;

		err |= sonde_strbuf__adds(
			out, md ? "| function | calls | total ns | self ns | avg ns | min ns | max "
				  "ns |\n"
				  "|---|---:|---:|---:|---:|---:|---:|\n"
				: "function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns\n");
		for (i = 0; i < n; i++) {
			struct sonde_strbuf q = SONDE_STRBUF_INIT;

			if (!md)
				err |= sonde_view__csv_quote(&q, s[i].name);
			err |= sonde_strbuf__addf(
				out,
				md ? "| `%s` | %lld | %lld | %lld | %.1f | %lld | %lld |\n"
				   : "%s,%lld,%lld,%lld,%.1f,%lld,%lld\n",
				md	? s[i].name
				: q.buf ? q.buf
					: "\"\"",
				(long long)s[i].calls, (long long)s[i].total, (long long)s[i].self,
				s[i].sum / (double)s[i].calls, (long long)s[i].min,
				(long long)s[i].max);
			sonde_strbuf__release(&q);
		}
	} else {
		err |= sonde_strbuf__addf(
			out, "%s  (trace)\n\n",
			json_string_value(json_object_get(sonde_profile__header(p), "cmd")) ?: "?");
		err |= sonde_strbuf__addf(out, "  calls %lld in %lld thread(s) of %lld process(es)",
					  (long long)iget(t, "calls"),
					  (long long)iget(t, "threads"),
					  (long long)iget(t, "processes"));
		if (json_object_get(t, "estimated_cost_ns"))
			err |= sonde_strbuf__addf(
				out, "; tracing cost about %s (%.1f ns per call)",
				dur((double)iget(t, "estimated_cost_ns"), a, sizeof(a)),
				json_number_value(json_object_get(t, "cost_ns_per_call")));
		err |= sonde_strbuf__addch(out, '\n');
		if (iget(t, "sampled_out") || iget(t, "lost") || iget(t, "unwound") ||
		    iget(t, "unfinished"))
			err |= sonde_strbuf__addf(
				out,
				"  sampled out %lld, lost %lld, unwound %lld, unfinished %lld\n",
				(long long)iget(t, "sampled_out"), (long long)iget(t, "lost"),
				(long long)iget(t, "unwound"), (long long)iget(t, "unfinished"));
		err |= sonde_strbuf__addf(out, "\n  %10s %10s %10s %10s %10s %10s  %s\n", "total",
					  "self", "calls", "avg", "min", "max", "function");
		for (i = 0; i < n; i++) {
			dur((double)s[i].total, a, sizeof(a));
			dur((double)s[i].self, b, sizeof(b));
			dur(s[i].sum / (double)s[i].calls, c, sizeof(c));
			dur((double)s[i].min, d, sizeof(d));
			dur((double)s[i].max, e, sizeof(e));
			err |= sonde_strbuf__addf(out, "  %*s %*s %10lld %*s %*s %*s  %s\n",
						  SONDE_COLS(a, 10), SONDE_COLS(b, 10),
						  (long long)s[i].calls, SONDE_COLS(c, 10),
						  SONDE_COLS(d, 10), SONDE_COLS(e, 10), s[i].name);
		}
	}
	free(s);
	return err ? -ENOMEM : 0;
}

/* ---- the calling contexts ------------------------------------------------------------------ */

struct ctx {
	json_int_t id, parent, func, calls, incl, excl;
	json_int_t own; /* sampled: minus the children's samples (folded by count) */
	size_t first_child, nchildren;
	size_t depth; /* 1 below the root */
};

/*
 * Stacks deeper than this are folded: a 100 000-deep recursion would print
 * 100 000 lines of up to 100 000 frames (gigabytes). What lies deeper is added
 * to one "[N deeper frames]" frame at this depth, and said.
 */
#define FOLD_DEPTH 512

struct cct {
	json_t *funcs;
	struct ctx *c;
	size_t n;
	size_t *children; /* indices into c, grouped by parent */
};

static const char *fname(const struct cct *t, json_int_t f)
{
	return json_string_value(json_object_get(json_array_get(t->funcs, (size_t)f), "name"))
		       ?: "?";
}

static int by_id(const void *a, const void *b)
{
	const json_int_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

static int by_incl(const void *a, const void *b, void *arg)
{
	const struct ctx *c = arg;
	const struct ctx *x = &c[*(const size_t *)a], *y = &c[*(const size_t *)b];

	return x->incl < y->incl ? 1 : x->incl > y->incl ? -1 : 0;
}

/* Load trace.contexts; node ids map to positions (+1: 0 is the root). */
static int cct_load(const struct sonde_profile *p, struct cct *t)
{
	json_t *tr = sonde_profile__part(p, "trace"), *nodes, *row;
	size_t i, *count, *pos;
	json_int_t *where;

	memset(t, 0, sizeof(*t));
	nodes = json_object_get(tr, "contexts");
	t->funcs = json_object_get(tr, "functions");
	if (!json_is_array(nodes) || !json_is_array(t->funcs))
		return -EINVAL;
	t->n = json_array_size(nodes) + 1;
	t->c = calloc(t->n, sizeof(*t->c));
	t->children = calloc(t->n, sizeof(*t->children));
	if (!t->c || !t->children)
		return -ENOMEM;
	json_array_foreach(nodes, i, row)
	{
		struct ctx *c = &t->c[i + 1];

		c->id = json_integer_value(json_array_get(row, 0));
		c->parent = json_integer_value(json_array_get(row, 1));
		c->func = json_integer_value(json_array_get(row, 2));
		c->calls = json_integer_value(json_array_get(row, 3));
		c->incl = json_integer_value(json_array_get(row, 4));
		c->excl = json_integer_value(json_array_get(row, 5));
	}
	/* parents by id -> position: ids sorted, then searched (ids can be any size) */
	where = malloc(t->n * 2 * sizeof(*where));
	count = calloc(t->n + 1, sizeof(*count));
	pos = calloc(t->n + 1, sizeof(*pos));
	if (!where || !count || !pos) {
		free(where);
		free(count);
		free(pos);
		return -ENOMEM;
	}
	for (i = 1; i < t->n; i++) {
		where[2 * (i - 1)] = t->c[i].id;
		where[2 * (i - 1) + 1] = (json_int_t)i;
	}
	qsort(where, t->n - 1, 2 * sizeof(*where), by_id);
	for (i = 1; i < t->n; i++) {
		json_int_t key[2] = { t->c[i].parent, 0 }, *hit;

		hit = key[0] > 0 ? bsearch(key, where, t->n - 1, 2 * sizeof(*where), by_id) : NULL;
		t->c[i].parent = hit ? hit[1] : 0;
		count[t->c[i].parent]++;
	}
	/* depths: walk up to a context whose depth is known (or the root), then
	   set the walked chain's on the way back (the loader refused cycles) */
	for (i = 1; i < t->n; i++) {
		size_t at = i, n = 0, d, j;

		while (at && !t->c[at].depth && n < t->n) {
			at = (size_t)t->c[at].parent;
			n++;
		}
		d = at ? t->c[at].depth : 0;
		for (at = i, j = 0; j < n; j++, at = (size_t)t->c[at].parent)
			t->c[at].depth = d + n - j;
	}
	for (i = 1; i <= t->n; i++)
		pos[i] = pos[i - 1] + count[i - 1];
	for (i = 0; i < t->n; i++) {
		t->c[i].first_child = pos[i];
		t->c[i].nchildren = count[i];
	}
	memset(count, 0, (t->n + 1) * sizeof(*count));
	for (i = 1; i < t->n; i++) {
		size_t par = (size_t)t->c[i].parent;

		t->children[t->c[par].first_child + count[par]++] = i;
	}
	for (i = 0; i < t->n; i++)
		qsort_r(t->children + t->c[i].first_child, t->c[i].nchildren, sizeof(size_t),
			by_incl, t->c);
	free(where);
	free(count);
	free(pos);
	return 0;
}

static void cct_free(struct cct *t)
{
	free(t->c);
	free(t->children);
}

static int tree(const struct cct *t, size_t i, unsigned depth, unsigned top,
		struct sonde_strbuf *out)
{
	const struct ctx *c = &t->c[i];
	char a[32], b[32];
	size_t k;
	int err = 0;

	if (c->depth > FOLD_DEPTH) { /* no recursion (or output) as deep as the data */
		err |= sonde_strbuf__addf(
			out,
			"  %10s %10s %10s  %*s(deeper contexts not shown: more than %d levels)\n",
			"", "", "", (int)(depth * 2), "", FOLD_DEPTH);
		return err;
	}
	if (i) {
		dur((double)c->incl, a, sizeof(a));
		dur((double)c->excl, b, sizeof(b));
		err |= sonde_strbuf__addf(out, "  %*s %*s %10lld  %*s%s\n", SONDE_COLS(a, 10),
					  SONDE_COLS(b, 10), (long long)c->calls, (int)(depth * 2),
					  "", fname(t, c->func));
		depth++;
	}
	for (k = 0; k < c->nchildren; k++) {
		if (top && k == top) {
			err |= sonde_strbuf__addf(out, "  %10s %10s %10s  %*s(%zu more)\n", "", "",
						  "", (int)(depth * 2), "", c->nchildren - top);
			break;
		}
		err |= tree(t, t->children[c->first_child + k], depth, top, out);
	}
	return err;
}

int sonde_view__trace_graph(const struct sonde_profile *p, enum sonde_view_format fmt, unsigned top,
			    struct sonde_strbuf *out)
{
	struct cct t;
	int rc = cct_load(p, &t), err = 0;
	size_t i;

	if (rc) {
		cct_free(&t);
		return rc;
	}
	if (fmt == SONDE_VIEW_TEXT) {
		err |= sonde_strbuf__addf(
			out, "%s  (trace: calling contexts)\n\n",
			json_string_value(json_object_get(sonde_profile__header(p), "cmd")) ?: "?");
		err |= sonde_strbuf__addf(out, "  %10s %10s %10s  %s\n", "inclusive", "exclusive",
					  sampled(p) ? "samples" : "calls", "function");
		err |= tree(&t, 0, 0, top, out);
	} else {
		/* edges: caller -> callee, summed over contexts */
		json_t *edges = json_object(), *list = json_array(), *v;
		const char *key, *count = sampled(p) ? "samples" : "calls";

		for (i = 1; edges && i < t.n; i++) {
			const struct ctx *c = &t.c[i];
			const char *caller = c->parent ? fname(&t, t.c[c->parent].func) : "";
			char k[1024];
			json_t *e;

			snprintf(k, sizeof(k), "%s\x01%s", caller, fname(&t, c->func));
			e = json_object_get(edges, k);
			if (!e) {
				e = json_pack("{s:s, s:s, s:I, s:I}", "caller", caller, "callee",
					      fname(&t, c->func), count, (json_int_t)0, "time_ns",
					      (json_int_t)0);
				json_object_set_new(edges, k, e);
			}
			json_object_set_new(e, count, json_integer(iget(e, count) + c->calls));
			json_object_set_new(e, "time_ns",
					    json_integer(iget(e, "time_ns") + c->incl));
		}
		json_object_foreach(edges, key, v) json_array_append(list, v);
		if (fmt == SONDE_VIEW_JSON) {
			err |= sonde_view__json(out, list, JSON_INDENT(2));
		} else {
			bool md = fmt == SONDE_VIEW_MARKDOWN;

			err |= sonde_strbuf__addf(out,
						  md ? "| caller | callee | %s | time ns |\n"
						       "|---|---|---:|---:|\n"
						     : "caller,callee,%s,time_ns\n",
						  count);
			json_array_foreach(list, i, v)
			{
				struct sonde_strbuf x = SONDE_STRBUF_INIT, y = SONDE_STRBUF_INIT;
				const char *cr = json_string_value(json_object_get(v, "caller"));
				const char *ce = json_string_value(json_object_get(v, "callee"));

				if (!md) {
					err |= sonde_view__csv_quote(&x, cr);
					err |= sonde_view__csv_quote(&y, ce);
				}
				err |= sonde_strbuf__addf(out,
							  md ? "| `%s` | `%s` | %lld | %lld |\n"
							     : "%s,%s,%lld,%lld\n",
							  md	  ? cr
							  : x.buf ? x.buf
								  : "\"\"",
							  md	  ? ce
							  : y.buf ? y.buf
								  : "\"\"",
							  (long long)iget(v, count),
							  (long long)iget(v, "time_ns"));
				sonde_strbuf__release(&x);
				sonde_strbuf__release(&y);
			}
		}
		json_decref(list);
		json_decref(edges);
	}
	cct_free(&t);
	return err ? -ENOMEM : 0;
}

/* ---- exports -------------------------------------------------------------------------------- */

/* The frames from the outermost to context i (at most FOLD_DEPTH of them). */
static void path_of(const struct cct *t, size_t i, struct sonde_strbuf *sb,
		    void (*frame)(struct sonde_strbuf *, const char *))
{
	size_t chain[FOLD_DEPTH], n = 0, at;

	for (at = i; at && n < FOLD_DEPTH; at = (size_t)t->c[at].parent)
		if (t->c[at].depth <= FOLD_DEPTH)
			chain[n++] = at;
	while (n--) {
		frame(sb, fname(t, t->c[chain[n]].func));
		if (n)
			sonde_strbuf__addch(sb, ';');
	}
}

int view_trace_folded(const struct sonde_profile *p, bool by_calls, struct sonde_strbuf *out,
		      void (*frame)(struct sonde_strbuf *, const char *))
{
	struct cct t;
	int rc = cct_load(p, &t);
	json_int_t *deeper = NULL; /* per context at FOLD_DEPTH: the weight below it */
	size_t *deepest = NULL, *cap = NULL, i;

	if (!rc &&
	    (!(deeper = calloc(t.n, sizeof(*deeper))) ||
	     !(deepest = calloc(t.n, sizeof(*deepest))) || !(cap = calloc(t.n, sizeof(*cap)))))
		rc = -ENOMEM;
	/* cap[i]: the ancestor of i at FOLD_DEPTH (i itself above it), memoised */
	for (i = 1; !rc && i < t.n; i++) {
		size_t at = i, top;

		if (cap[i])
			continue;
		if (t.c[i].depth <= FOLD_DEPTH) {
			cap[i] = i;
			continue;
		}
		while (!cap[at] && t.c[at].depth > FOLD_DEPTH)
			at = (size_t)t.c[at].parent;
		top = cap[at] ? cap[at] : at; /* at: the first one at FOLD_DEPTH */
		for (at = i; !cap[at] && t.c[at].depth > FOLD_DEPTH; at = (size_t)t.c[at].parent)
			cap[at] = top;
	}
	if (!rc && by_calls &&
	    sampled(p)) /* samples ending in each context: its own minus its children's */
		for (i = 1; i < t.n; i++)
			if (t.c[i].parent)
				t.c[t.c[i].parent].own -= t.c[i].calls;
	for (i = 1; !rc && i < t.n; i++) {
		json_int_t w = by_calls ? t.c[i].calls + t.c[i].own : t.c[i].excl;
		size_t at = cap[i];

		if (w <= 0)
			continue;
		if (t.c[i].depth > FOLD_DEPTH) { /* to its ancestor at FOLD_DEPTH */
			deeper[at] += w;
			if (t.c[i].depth - FOLD_DEPTH > deepest[at])
				deepest[at] = t.c[i].depth - FOLD_DEPTH;
			continue;
		}
		path_of(&t, i, out, frame);
		sonde_strbuf__addf(out, " %lld\n", (long long)w);
	}
	for (i = 1; !rc && i < t.n; i++) {
		char name[64];

		if (!deeper[i])
			continue;
		path_of(&t, i, out, frame);
		snprintf(name, sizeof(name), "[%zu deeper frames]", deepest[i]);
		sonde_strbuf__addch(out, ';');
		frame(out, name);
		sonde_strbuf__addf(out, " %lld\n", (long long)deeper[i]);
	}
	free(deeper);
	free(deepest);
	free(cap);
	cct_free(&t);
	return rc;
}

struct slice {
	json_int_t pid, tid, func, depth, start, dur;
};

static int by_start(const void *a, const void *b)
{
	const struct slice *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static void frame_plain(struct sonde_strbuf *sb, const char *name)
{
	sonde_strbuf__adds(sb, name);
}

/*
 * A sampled profile's timeline: each sample an instant on its thread's track,
 * named by its innermost function, with its stack and weight.
 */
static int add_samples(const struct sonde_profile *p, const struct view_place *pl,
		       struct sonde_strbuf *out, bool *firstp)
{
	bool first = *firstp;
	json_t *smp = json_object_get(sonde_profile__part(p, "trace"), "samples");
	json_t *x, *where = json_object();
	struct cct t;
	size_t i;
	int rc = cct_load(p, &t);

	for (i = 1; !rc && where && i < t.n; i++) { /* context id -> position */
		char k[32];

		snprintf(k, sizeof(k), "%lld", (long long)t.c[i].id);
		if (json_object_set_new(where, k, json_integer((json_int_t)i)))
			rc = -ENOMEM;
	}
	if (!where)
		rc = -ENOMEM;
	json_array_foreach(smp, i, x)
	{
		struct sonde_strbuf stack = SONDE_STRBUF_INIT;
		char k[32];
		size_t at;
		json_t *name;

		if (rc)
			break;
		snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(json_array_get(x, 3)));
		at = (size_t)json_integer_value(json_object_get(where, k));
		if (!at)
			continue;
		path_of(&t, at, &stack, frame_plain);
		name = json_string(fname(&t, t.c[at].func));
		sonde_strbuf__adds(out, first ? "\n{\"ph\":\"i\",\"s\":\"t\",\"name\":"
					      : ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":");
		view_add_json(out, name);
		json_decref(name);
		sonde_strbuf__addf(out, ",\"cat\":\"sample\",\"pid\":%lld,\"tid\":%lld,\"ts\":",
				   view_place_pid(pl, json_integer_value(json_array_get(x, 0))),
				   (long long)json_integer_value(json_array_get(x, 1)));
		view_add_us(out,
			    json_integer_value(json_array_get(x, 2)) + (pl ? pl->shift_ns : 0));
		name = json_pack("{s:s?, s:I}", "stack", stack.buf, "weight_ns",
				 json_integer_value(json_array_get(x, 4)));
		sonde_strbuf__adds(out, ",\"args\":");
		view_add_json(out, name);
		json_decref(name);
		rc = sonde_strbuf__addch(out, '}') ? -ENOMEM : 0;
		sonde_strbuf__release(&stack);
		first = false;
	}
	json_decref(where);
	cct_free(&t);
	*firstp = first;
	return rc;
}

/* The trace profile's events for the timeline (timeline.c writes the document around them). */
int view_trace_events(const struct sonde_profile *p, const struct view_place *pl,
		      struct sonde_strbuf *out, bool *firstp)
{
	json_t *tr = sonde_profile__part(p, "trace");
	json_t *slices = json_object_get(tr, "slices"), *funcs = json_object_get(tr, "functions");
	json_t *x, *m;
	struct slice *s;
	size_t i, n;
	bool first = *firstp;
	int rc;

	if (!json_is_array(slices) || !json_is_array(funcs))
		return -EINVAL;
	n = json_array_size(slices);
	s = calloc(n + 1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	json_array_foreach(json_object_get(tr, "processes"), i, x)
	{
		const char *exe = json_string_value(json_object_get(x, "exe"));
		char *named = NULL;

		if (pl && pl->prefix && asprintf(&named, "%s%s", pl->prefix, exe ? exe : "?") < 0)
			named = NULL;
		m = json_pack("{s:s, s:s, s:I, s:{s:O}}", "ph", "M", "name", "process_name", "pid",
			      (json_int_t)view_place_pid(pl, iget(x, "pid")), "args", "name",
			      named ? json_string(named) : json_object_get(x, "exe"));
		if (named) { /* the new string's reference: O took one of its own */
			json_decref(json_object_get(json_object_get(m, "args"), "name"));
			free(named);
		}
		sonde_strbuf__adds(out, first ? "\n" : ",\n");
		view_add_json(out, m);
		json_decref(m);
		first = false;
	}
	json_array_foreach(json_object_get(tr, "threads"), i, x)
	{
		m = json_pack("{s:s, s:s, s:I, s:I, s:{s:O}}", "ph", "M", "name", "thread_name",
			      "pid", (json_int_t)view_place_pid(pl, iget(x, "pid")), "tid",
			      iget(x, "tid"), "args", "name", json_object_get(x, "name"));
		sonde_strbuf__adds(out, first ? "\n" : ",\n");
		view_add_json(out, m);
		json_decref(m);
		first = false;
	}
	json_array_foreach(slices, i, x)
	{
		s[i].pid = json_integer_value(json_array_get(x, 0));
		s[i].tid = json_integer_value(json_array_get(x, 1));
		s[i].func = json_integer_value(json_array_get(x, 2));
		s[i].depth = json_integer_value(json_array_get(x, 3));
		s[i].start = json_integer_value(json_array_get(x, 4));
		s[i].dur = json_integer_value(json_array_get(x, 5));
	}
	/* per thread by start, parents before children: nested slices */
	qsort(s, n, sizeof(*s), by_start);
	for (i = 0; i < n; i++) {
		json_t *name = json_object_get(json_array_get(funcs, (size_t)s[i].func), "name");

		sonde_strbuf__adds(out, first ? "\n{\"ph\":\"X\",\"name\":"
					      : ",\n{\"ph\":\"X\",\"name\":");
		view_add_json(out, name ? name : json_null());
		sonde_strbuf__addf(out, ",\"cat\":\"function\",\"pid\":%lld,\"tid\":%lld,\"ts\":",
				   view_place_pid(pl, s[i].pid), (long long)s[i].tid);
		view_add_us(out, s[i].start + (pl ? pl->shift_ns : 0));
		sonde_strbuf__adds(out, ",\"dur\":");
		view_add_us(out, s[i].dur);
		sonde_strbuf__addch(out, '}');
		first = false;
	}
	free(s);
	rc = sampled(p) && add_samples(p, pl, out, &first) ? -ENOMEM : 0;
	*firstp = first;
	return rc;
}
