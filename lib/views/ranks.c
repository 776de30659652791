/*
 * ranks.c - the ranks of one distributed job side by side: per collector, per
 * metric (a row of each rank's summary table: its mean), the lowest, mean
 * and highest over the ranks, the imbalance (highest / mean, 1 when even) and
 * the rank that is highest, with its host. Which ranks of the job have no
 * profile is said, never hidden.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include <sonde/table.h>
#include "../grow.h"
#include "../strmap.h"
#include "views.h"

struct rank_of {
	const struct sonde_profile *p;
	long rank;
	const char *host;
};

struct metric {
	char *label;
	const char *unit;   /* borrowed from a profile */
	double lo, hi, sum; /* over the ranks that have it */
	size_t n, hi_at;    /* hi_at: index into the group's ranks */
};

static json_t *job_of(const struct sonde_profile *p)
{
	return json_object_get(sonde_profile__metadata(p), "job");
}

static const char *collector_of(const struct sonde_profile *p)
{
	const char *c =
		json_string_value(json_object_get(sonde_profile__collector_info(p), "name"));

	return c ? c : sonde_profile__type(p) ? sonde_profile__type(p) : "?";
}

static int by_rank(const void *a, const void *b)
{
	const struct rank_of *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Rank i's value v of metric label. */
static int add(struct sonde_strmap *index, struct metric **m, size_t *cap, size_t *nm,
	       const char *label, const char *unit, double v, size_t i)
{
	bool hit;
	uint64_t *at = sonde_strmap__upsert(index, label, strlen(label), &hit);
	struct metric *x;

	if (!at)
		return -ENOMEM;
	if (!hit) {
		if (sonde_grow((void **)m, cap, *nm + 1, sizeof(**m)))
			return -ENOMEM;
		*at = *nm;
		(*m)[*nm] = (struct metric){ strdup(label), unit, v, v, 0, 0, i };
		if (!(*m)[(*nm)++].label)
			return -ENOMEM;
	}
	x = &(*m)[*at];
	x->sum += v;
	x->n++;
	if (v < x->lo)
		x->lo = v;
	if (v > x->hi) {
		x->hi = v;
		x->hi_at = i;
	}
	return 0;
}

/*
 * The whole run's figures of rank i beside its table: how long its runs took,
 * and a memory profile's totals (its table holds each site's sizes).
 */
static int add_totals(const struct sonde_profile *p, size_t i, struct sonde_strmap *index,
		      struct metric **m, size_t *cap, size_t *nm)
{
	static const struct {
		const char *key, *label, *unit;
	} mem[] = {
		{ "allocations", "allocations (whole run)", NULL },
		{ "allocated_bytes", "bytes allocated (whole run)", "B" },
		{ "peak_heap_bytes", "peak heap (whole run)", "B" },
		{ "leaked_bytes", "leaked (whole run)", "B" },
	};
	json_t *st = sonde_profile__stats(p), *d = json_object_get(st, "duration_ns");
	json_t *memory = json_object_get(st, "memory");
	int rc = 0;
	size_t k;

	if (json_is_integer(d))
		rc = add(index, m, cap, nm, "duration (whole run)", "ns",
			 (double)json_integer_value(d), i);
	for (k = 0; k < sizeof(mem) / sizeof(mem[0]) && !rc; k++) {
		json_t *v = json_object_get(memory, mem[k].key);

		if (json_is_integer(v))
			rc = add(index, m, cap, nm, mem[k].label, mem[k].unit,
				 (double)json_integer_value(v), i);
	}
	return rc;
}

/* The metrics of one collector's ranks (sorted by rank): its totals, then its table's rows. */
static int metrics_of(const struct rank_of *r, size_t nr, struct metric **out, size_t *nm)
{
	struct sonde_strmap index = SONDE_STRMAP_INIT;
	struct metric *m = NULL;
	size_t cap = 0, i, k;
	int rc = 0;

	*nm = 0;
	for (i = 0; i < nr && !rc; i++) {
		struct sonde_table_row *rows;
		size_t n;

		rc = add_totals(r[i].p, i, &index, &m, &cap, nm);
		if (rc || (rc = sonde_table__rows(r[i].p, &rows, &n)))
			break;
		for (k = 0; k < n && !rc; k++)
			if (rows[k].s.n && isfinite(rows[k].s.mean))
				rc = add(&index, &m, &cap, nm, rows[k].label, rows[k].unit,
					 rows[k].s.mean, i);
		free(rows);
	}
	sonde_strmap__release(&index);
	*out = m;
	return rc;
}

static void free_metrics(struct metric *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].label);
	free(m);
}

/* The ranks of the job that have no profile of this collector: "2, 3" (empty: none). */
static void missing(const struct rank_of *r, size_t nr, long size, struct sonde_strbuf *out)
{
	long want, shown = 0;
	size_t i = 0;

	for (want = 0; want < size; want++) {
		while (i < nr && r[i].rank < want)
			i++;
		if (i < nr && r[i].rank == want)
			continue;
		if (shown++ < 16)
			sonde_strbuf__addf(out, "%s%ld", out->len ? ", " : "", want);
	}
	if (shown > 16)
		sonde_strbuf__addf(out, " and %ld more", shown - 16);
}

int sonde_view__ranks(const struct sonde_profile *const *p, size_t n, enum sonde_view_format fmt,
		      struct sonde_strbuf *out)
{
	struct rank_of *r = NULL;
	const char **groups = NULL;
	size_t nr = 0, ng = 0, i, g;
	json_t *doc = NULL, *jgroups = NULL, *job = NULL, *hosts = json_array();
	long size = -1;
	int err = 0, rc = 0;

	if (!hosts)
		return -ENOMEM;
	r = calloc(n ? n : 1, sizeof(*r));
	groups = calloc(n ? n : 1, sizeof(*groups));
	if (!r || !groups) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		json_t *j = job_of(p[i]);
		const char *c = collector_of(p[i]), *host;
		size_t h;

		if (!json_is_integer(json_object_get(j, "rank")))
			continue;
		job = job ? job : j;
		if (json_is_integer(json_object_get(j, "size")))
			size = (long)json_integer_value(json_object_get(j, "size"));
		host = json_string_value(json_object_get(j, "host"));
		host = host ? host : "?";
		r[nr++] = (struct rank_of){ p[i],
					    (long)json_integer_value(json_object_get(j, "rank")),
					    host };
		for (h = 0; h < json_array_size(hosts); h++)
			if (!strcmp(json_string_value(json_array_get(hosts, h)), host))
				break;
		if (h == json_array_size(hosts))
			json_array_append_new(hosts, json_string(host));
		for (g = 0; g < ng && strcmp(groups[g], c); g++)
			;
		if (g == ng)
			groups[ng++] = c;
	}
	if (!nr) {
		rc = -EINVAL; /* no profile of a rank */
		goto out;
	}
	qsort(r, nr, sizeof(*r), by_rank);
	if (fmt == SONDE_VIEW_JSON) {
		doc = json_pack("{s:O?, s:s?, s:O?, s:O?, s:O}", "run_id",
				json_object_get(sonde_profile__header(r[0].p), "run_id"),
				"launcher", json_string_value(json_object_get(job, "launcher")),
				"job", json_object_get(job, "id"), "size",
				json_object_get(job, "size"), "hosts", hosts);
		jgroups = json_array();
		if (!doc || !jgroups) {
			rc = -ENOMEM;
			goto out;
		}
		json_object_set_new(doc, "collectors", jgroups);
	} else if (fmt == SONDE_VIEW_CSV) {
		err |= sonde_strbuf__adds(out, "collector,metric,unit,ranks,min,mean,max,imbalance,"
					       "highest_rank,highest_host\n");
	} else {
		err |= sonde_strbuf__addf(
			out, "run %s: %s job %s, %zu rank profile%s on %zu host%s (",
			json_string_value(json_object_get(sonde_profile__header(r[0].p), "run_id")),
			json_string_value(json_object_get(job, "launcher")),
			json_string_value(json_object_get(job, "id")), nr, nr == 1 ? "" : "s",
			json_array_size(hosts), json_array_size(hosts) == 1 ? "" : "s");
		for (i = 0; i < json_array_size(hosts); i++)
			err |= sonde_strbuf__addf(out, "%s%s", i ? ", " : "",
						  json_string_value(json_array_get(hosts, i)));
		err |= sonde_strbuf__adds(out, ")\n");
	}
	for (g = 0; g < ng && !rc; g++) {
		struct rank_of *gr = calloc(nr, sizeof(*gr));
		struct sonde_strbuf miss = SONDE_STRBUF_INIT;
		struct metric *m = NULL;
		size_t ngr = 0, nm = 0, k;
		json_t *jm = NULL;

		if (!gr) {
			rc = -ENOMEM;
			break;
		}
		for (i = 0; i < nr; i++)
			if (!strcmp(collector_of(r[i].p), groups[g]))
				gr[ngr++] = r[i];
		missing(gr, ngr, size, &miss);
		rc = metrics_of(gr, ngr, &m, &nm);
		if (fmt == SONDE_VIEW_JSON && !rc) {
			jm = json_array();
			json_t *ma = json_array();
			long want;

			for (want = 0, i = 0; ma && want < size; want++) {
				while (i < ngr && gr[i].rank < want)
					i++;
				if (i >= ngr || gr[i].rank != want)
					json_array_append_new(ma, json_integer(want));
			}
			json_array_append_new(jgroups,
					      json_pack("{s:s, s:I, s:o?, s:o}", "collector",
							groups[g], "ranks", (json_int_t)ngr,
							"missing_ranks", ma, "metrics", jm));
		} else if (fmt == SONDE_VIEW_TEXT || fmt == SONDE_VIEW_MARKDOWN) {
			err |= sonde_strbuf__addf(out, "\n%s: %zu rank%s", groups[g], ngr,
						  ngr == 1 ? "" : "s");
			if (miss.len)
				err |= sonde_strbuf__addf(out, "; no profile of rank%s %s",
							  strchr(miss.buf, ',') ? "s" : "",
							  miss.buf);
			err |= sonde_strbuf__adds(out, "\n");
			if (fmt == SONDE_VIEW_MARKDOWN)
				err |= sonde_strbuf__adds(
					out,
					"\n| metric | unit | min | mean | max | max/mean | highest "
					"|\n|---|---|---:|---:|---:|---:|---|\n");
			else
				err |= sonde_strbuf__addf(
					out, "  %-34s %-6s %12s %12s %12s %9s  %s\n",
					"metric (each rank's mean)", "unit", "min", "mean", "max",
					"max/mean", "highest");
		}
		for (k = 0; k < nm && !rc; k++) {
			const struct metric *x = &m[k];
			double mean = x->sum / (double)x->n;
			double imb = mean != 0 ? x->hi / mean : NAN;
			const struct rank_of *top = &gr[x->hi_at];
			char a[40], b[40], c[40], d[24];

			sonde_format__value(x->lo, x->unit, a, sizeof(a));
			sonde_format__value(mean, x->unit, b, sizeof(b));
			sonde_format__value(x->hi, x->unit, c, sizeof(c));
			if (isfinite(imb))
				snprintf(d, sizeof(d), "%.3f", imb);
			else
				snprintf(d, sizeof(d), "-");
			if (fmt == SONDE_VIEW_JSON) {
				json_array_append_new(
					jm,
					json_pack("{s:s, s:s?, s:I, s:o, s:o, s:o, s:o, s:I, s:s}",
						  "metric", x->label, "unit", x->unit, "ranks",
						  (json_int_t)x->n, "min",
						  sonde_view__json_number(x->lo), "mean",
						  sonde_view__json_number(mean), "max",
						  sonde_view__json_number(x->hi), "imbalance",
						  sonde_view__json_number(imb), "highest_rank",
						  (json_int_t)top->rank, "highest_host",
						  top->host));
			} else if (fmt == SONDE_VIEW_CSV) {
				struct sonde_strbuf q = SONDE_STRBUF_INIT;

				sonde_view__csv_quote(&q, x->label);
				err |= sonde_strbuf__addf(
					out, "%s,%s,%s,%zu,%.17g,%.17g,%.17g,%.17g,%ld,", groups[g],
					q.buf ? q.buf : "", x->unit ? x->unit : "", x->n, x->lo,
					mean, x->hi, imb, top->rank);
				sonde_strbuf__release(&q);
				sonde_view__csv_quote(out, top->host);
				err |= sonde_strbuf__addch(out, '\n');
			} else if (fmt == SONDE_VIEW_MARKDOWN) {
				err |= sonde_strbuf__addf(
					out, "| %s | %s | %s | %s | %s | %s | rank %ld (%s) |\n",
					x->label, x->unit ? x->unit : "", a, b, c, d, top->rank,
					top->host);
			} else {
				err |= sonde_strbuf__addf(
					out, "  %-34.34s %-6.6s %12s %12s %12s %9s  rank %ld (%s)",
					x->label, x->unit ? x->unit : "", a, b, c, d, top->rank,
					top->host);
				if (x->n < ngr)
					err |= sonde_strbuf__addf(out, " [%zu of %zu ranks]", x->n,
								  ngr);
				err |= sonde_strbuf__addch(out, '\n');
			}
		}
		sonde_strbuf__release(&miss);
		free_metrics(m, nm);
		free(gr);
	}
	if (!rc && fmt == SONDE_VIEW_JSON)
		err |= sonde_view__json(out, doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
out:
	json_decref(doc);
	json_decref(hosts);
	free(r);
	free(groups);
	if (!rc && err)
		rc = -ENOMEM;
	return rc;
}
