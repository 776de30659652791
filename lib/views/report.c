/*
 * report.c - one self-contained HTML file for one or more profiles: the
 * run's facts and warnings, the summary table, charts, the flame graph and,
 * for several profiles, each compared with the first (verdicts and a
 * differential flame graph).
 *
 * Self-contained: inline CSS, scripts and SVG, and a Content-Security-Policy
 * that forbids loading anything, so the report never touches the network.
 * Large profiles stay small in the page: the tables list the first 200 rows
 * (by total), and the charts aggregate before they draw.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sonde/check.h>
#include <sonde/parallel.h>
#include <sonde/postprocess.h>
#include "views.h"

#define TABLE_ROWS 200

static const char report_css[] =
	"body{font-family:system-ui,Verdana,sans-serif;margin:0;color:#222;background:#fafafa}"
	"header{background:#1d3557;color:#fff;padding:12px 24px}header h1{margin:0;font-size:22px}"
	"header p{margin:4px 0 0;opacity:.8}nav a{color:#cde;margin-right:14px}"
	"section{background:#fff;margin:16px 24px;padding:12px 20px;border:1px solid #ddd;"
	"border-radius:6px}h2{margin-top:4px}h3{margin-bottom:6px}"
	"table{border-collapse:collapse;font-size:13px;margin:6px 0}"
	"td,th{border-bottom:1px solid #e4e4e4;padding:3px 8px;text-align:left;vertical-align:top}"
	"th{background:#f0f0f0;cursor:pointer;user-select:none}td.n{text-align:right;"
	"font-variant-numeric:tabular-nums}table.facts th{cursor:default;width:160px}"
	".warn{background:#fff4e0;border-left:4px solid #f08c00;padding:6px 10px;margin:6px 0}"
	".note{color:#666;font-size:12px}figure{margin:10px 0;overflow-x:auto}"
	".v{padding:1px 6px;border-radius:3px;font-size:12px;white-space:nowrap}"
	".v-degradation,.v-severe-degradation{background:#e03131;color:#fff}"
	".v-severe-degradation{font-weight:bold}"
	".v-optimization,.v-severe-optimization{background:#2f9e44;color:#fff}"
	".v-maybe{background:#fab005}.v-no-change{background:#e9ecef}"
	".v-not-in-baseline,.v-not-in-target{background:#a5d8ff}"
	".answer{font-size:15px;margin:8px 0 10px}.answer .kv{display:inline-block;margin:0 18px "
	"6px 0;padding:4px 10px;background:#eef3fb;border-radius:4px}.answer b{display:block;"
	"font-size:11px;font-weight:normal;color:#555}";

/* Click a column header to sort by it (numbers by their data-v). */
static const char report_js[] =
	"(function(){document.querySelectorAll('table.sortable').forEach(function(t){\n"
	" t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){\n"
	"  var b=t.tBodies[0],rows=[].slice.call(b.rows),asc=th.getAttribute('data-asc')!=='1';\n"
	"  th.setAttribute('data-asc',asc?'1':'0');\n"
	"  rows.sort(function(x,y){var a=x.cells[i],c=y.cells[i],\n"
	"   p=a.getAttribute('data-v'),q=c.getAttribute('data-v'),r;\n"
	"   if(p!==null&&q!==null)r=(+p)-(+q);else r=a.textContent.localeCompare(c.textContent);\n"
	"   return asc?r:-r;});rows.forEach(function(r){b.appendChild(r);});});});});})();\n";

static int esc(struct sonde_strbuf *sb, const char *s)
{
	return sonde_view__escape(sb, s ? s : "");
}

static int fact_text(struct sonde_strbuf *out, const char *name, const char *s)
{
	int rc = sonde_strbuf__adds(out, "<tr><th>");

	rc |= esc(out, name);
	rc |= sonde_strbuf__adds(out, "</th><td>");
	rc |= esc(out, s);
	return rc | sonde_strbuf__adds(out, "</td></tr>\n");
}

static int fact(struct sonde_strbuf *out, const char *name, json_t *v)
{
	char buf[64];
	const char *s = buf;

	if (json_is_string(v))
		s = json_string_value(v);
	else if (json_is_integer(v))
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, sizeof(buf), "%g", json_real_value(v));
	else if (json_is_boolean(v))
		s = json_is_true(v) ? "yes" : "no";
	else
		return 0; /* not recorded: not shown */
	return fact_text(out, name, s);
}

static int numcell(struct sonde_strbuf *out, double v, const char *unit)
{
	char buf[48];

	if (isnan(v))
		return sonde_strbuf__adds(out, "<td class=\"n\" data-v=\"0\">-</td>");
	sonde_format__value(v, unit, buf, sizeof(buf));
	return sonde_strbuf__addf(out, "<td class=\"n\" data-v=\"%.17g\">%s</td>", v, buf);
}

static int by_total(const void *a, const void *b)
{
	const struct sonde_table_row *x = a, *y = b;
	double tx = x->s.mean * (double)x->s.n, ty = y->s.mean * (double)y->s.n;

	return tx < ty ? 1 : tx > ty ? -1 : 0;
}

/* rows: the profile's, largest total first */
static int summary_table(struct sonde_strbuf *out, const struct sonde_table_row *rows, size_t n)
{
	size_t i;
	int rc = sonde_strbuf__adds(out,
				    "<h3>Summary</h3><table class=\"summary sortable\"><thead><tr>"
				    "<th>resource</th><th>n</th><th>mean</th><th>σ</th>"
				    "<th>median</th><th>min</th><th>max</th><th>outliers</th>"
				    "</tr></thead><tbody>\n");
	for (i = 0; i < n && i < TABLE_ROWS && !rc; i++) {
		const struct sonde_table_row *r = &rows[i];

		rc |= sonde_strbuf__adds(out, "<tr><td>");
		rc |= esc(out, r->label);
		rc |= sonde_strbuf__addf(out, "</td><td class=\"n\" data-v=\"%zu\">%zu</td>",
					 r->s.n, r->s.n);
		rc |= numcell(out, r->s.mean, r->unit);
		rc |= numcell(out, r->s.stddev, r->unit);
		rc |= numcell(out, r->s.median, r->unit);
		rc |= numcell(out, r->s.min, r->unit);
		rc |= numcell(out, r->s.max, r->unit);
		rc |= sonde_strbuf__addf(out, "<td class=\"n\" data-v=\"%zu\">%zu</td></tr>\n",
					 r->s.outliers, r->s.outliers);
	}
	rc |= sonde_strbuf__adds(out, "</tbody></table>\n");
	if (n > TABLE_ROWS)
		rc |= sonde_strbuf__addf(out,
					 "<p class=\"note\">The %d largest of %zu rows (by mean × "
					 "n); <code>sonde show PROFILE</code> lists all.</p>\n",
					 TABLE_ROWS, n);
	return rc;
}

static int facts(struct sonde_strbuf *out, const struct sonde_profile *p)
{
	json_t *h = sonde_profile__header(p), *m = sonde_profile__part(p, "machine"),
	       *md = sonde_profile__metadata(p), *st = sonde_profile__stats(p);
	int rc = sonde_strbuf__adds(out, "<h3>How it was measured</h3><table class=\"facts\">\n");

	rc |= fact(out, "command", json_object_get(h, "cmd"));
	rc |= fact(out, "type", json_object_get(h, "type"));
	rc |= fact(out, "collector", json_object_get(sonde_profile__collector_info(p), "name"));
	rc |= fact(out, "workload", json_object_get(h, "workload"));
	rc |= fact(out, "commit", sonde_profile__part(p, "origin"));
	rc |= fact(out, "uncommitted changes", json_object_get(md, "dirty"));
	rc |= fact(out, "date", json_object_get(md, "date"));
	rc |= fact(out, "sonde", json_object_get(md, "sonde_version"));
	rc |= fact(out, "runs", json_object_get(st, "runs"));
	rc |= fact(out, "failed runs", json_object_get(st, "failed_runs"));
	rc |= fact(out, "dropped events", json_object_get(st, "dropped_events"));
	rc |= fact(out, "host", json_object_get(m, "host"));
	rc |= fact(out, "cpu", json_object_get(m, "cpu"));
	rc |= fact(out, "cpus", json_object_get(m, "cpus"));
	rc |= fact(out, "system", json_object_get(m, "release"));
	if (json_is_integer(json_object_get(st, "duration_ns"))) {
		char buf[40];

		sonde_format__duration(
			(double)json_integer_value(json_object_get(st, "duration_ns")), buf,
			sizeof(buf));
		rc |= fact_text(out, "duration", buf);
	}
	return rc | sonde_strbuf__adds(out, "</table>\n");
}

static int warnings(struct sonde_strbuf *out, const struct sonde_profile *p)
{
	json_t *w = json_object_get(sonde_profile__stats(p), "warnings"), *x;
	size_t i;
	int rc = 0;

	json_array_foreach(w, i, x)
	{
		rc |= sonde_strbuf__adds(out, "<div class=\"warn\"><b>warning:</b> ");
		rc |= esc(out, json_string_value(json_object_get(x, "message")));
		rc |= sonde_strbuf__adds(out, "<br><b>fix:</b> ");
		rc |= esc(out, json_string_value(json_object_get(x, "fix")));
		rc |= sonde_strbuf__adds(out, "</div>\n");
	}
	return rc;
}

static int kv(struct sonde_strbuf *out, const char *name, const char *value)
{
	int rc = sonde_strbuf__adds(out, "<span class=\"kv\"><b>");

	rc |= esc(out, name);
	rc |= sonde_strbuf__adds(out, "</b>");
	rc |= esc(out, value);
	return rc | sonde_strbuf__adds(out, "</span>");
}

static int kv_num(struct sonde_strbuf *out, const char *name, json_t *v, const char *unit)
{
	char buf[48];

	if (!json_is_number(v))
		return 0; /* not recorded: not shown */
	sonde_format__value(json_number_value(v), unit, buf, sizeof(buf));
	return kv(out, name, buf);
}

/*
 * What the profile answers, before anything else: heaptrack's peak, leaks and
 * temporaries for memory; hyperfine's mean ± σ of the wall time for time; the
 * functions that took the most time for a trace; the largest rows otherwise.
 */
static int answer(struct sonde_strbuf *out, const struct sonde_profile *p,
		  const struct sonde_table_row *rows, size_t n)
{
	json_t *st = sonde_profile__stats(p), *mem = json_object_get(st, "memory");
	const char *coll =
		json_string_value(json_object_get(sonde_profile__collector_info(p), "name"));
	bool time = coll && !strcmp(coll, "time");
	size_t i, shown = 0;
	int rc = sonde_strbuf__adds(out, "<div class=\"answer\">");

	if (json_is_object(mem)) {
		rc |= kv_num(out, "peak heap", json_object_get(mem, "peak_heap_bytes"), "B");
		rc |= kv_num(out, "leaked", json_object_get(mem, "leaked_bytes"), "B");
		rc |= kv_num(out, "allocations", json_object_get(mem, "allocations"), "");
		rc |= kv_num(out, "temporary allocations",
			     json_object_get(mem, "temporary_allocations"), "");
		rc |= kv_num(out, "allocated in all", json_object_get(mem, "allocated_bytes"), "B");
		return rc | sonde_strbuf__adds(out, "</div>\n");
	}
	if (json_is_object(json_object_get(st, "trace"))) {
		/* every call counts (the rows are a sample): the functions' summaries */
		json_t *r, *top[3] = { 0 };
		size_t nres = sonde_profile__resource_count(p), at;
		double tot[3] = { -1, -1, -1 };
		int k;

		bool smp = json_object_get(json_object_get(st, "trace"), "samples") != NULL;
		const char *count = smp ? "samples" : "calls";

		rc |= kv_num(out, count, json_object_get(json_object_get(st, "trace"), count), "");
		for (at = 0; at < nres; at++) {
			double t;

			if (sonde_profile__resource_at(p, at, NULL, &r, NULL))
				break;
			t = json_number_value(
				json_object_get(json_object_get(r, "summary"), "total"));

			for (k = 0; k < 3; k++)
				if (t > tot[k]) {
					memmove(tot + k + 1, tot + k,
						(size_t)(2 - k) * sizeof(*tot));
					memmove(top + k + 1, top + k,
						(size_t)(2 - k) * sizeof(*top));
					tot[k] = t;
					top[k] = r;
					break;
				}
		}
		for (k = 0; k < 3 && top[k]; k++) {
			json_t *x = top[k], *sm = json_object_get(x, "summary");
			char a[40], v[96];
			long long calls = (long long)json_number_value(json_object_get(sm, count));

			sonde_format__duration(tot[k], a, sizeof(a));
			snprintf(v, sizeof(v), "%s in %lld %s%s", a, calls, smp ? "sample" : "call",
				 calls == 1 ? "" : "s");
			rc |= kv(out, json_string_value(json_object_get(x, "uid")), v);
		}
		return rc | sonde_strbuf__adds(out, "</div>\n");
	}
	for (i = 0; i < n && shown < 4; i++) {
		const struct sonde_table_row *r = &rows[i];
		char a[40], b[40], v[96], name[300];

		/* time: the wall time of each workload, as hyperfine reports */
		if (time && (!r->subtype || strcmp(r->subtype, "real")))
			continue;
		sonde_format__value(r->s.mean, r->unit, a, sizeof(a));
		sonde_format__value(r->s.stddev, r->unit, b, sizeof(b));
		if (r->s.n > 1) {
			snprintf(v, sizeof(v), "%s ± %s", a, b);
		} else {
			snprintf(v, sizeof(v), "%s", a);
		}
		if (time)
			snprintf(name, sizeof(name), "wall time%s%s", r->workload ? " @" : "",
				 r->workload ? r->workload : "");
		else
			snprintf(name, sizeof(name), "%s", r->label);
		rc |= kv(out, name, v);
		shown++;
	}
	return rc | sonde_strbuf__adds(out, "</div>\n");
}

/* The first resource's type (the charts draw one type: units do not mix). */
/* The type of the profile's first resource; NULL: none (*err: -ENOMEM when it
   could not be read, which is not a profile without charts). */
static const char *main_type(const struct sonde_profile *p, int *err)
{
	json_t *fixed = NULL, *cols = NULL;

	*err = 0;
	if (sonde_profile__resource_count(p) == 0)
		return NULL;
	if (sonde_profile__resource_at(p, 0, NULL, &fixed, &cols) || !fixed) {
		*err = -ENOMEM;
		return NULL;
	}
	return json_string_value(json_object_get(fixed, "type"));
}

/* Whether every resource is a timed region (a C or Python timer's profile); -ENOMEM. */
static int all_regions(const struct sonde_profile *p)
{
	size_t i, n = sonde_profile__resource_count(p);

	for (i = 0; i < n; i++) {
		json_t *fixed = NULL, *cols = NULL;
		const char *st;

		if (sonde_profile__resource_at(p, i, NULL, &fixed, &cols) || !fixed)
			return -ENOMEM;
		st = json_string_value(json_object_get(fixed, "subtype"));
		if (!st || strcmp(st, "region"))
			return 0;
	}
	return n > 0;
}

static int figure(struct sonde_strbuf *out, const char *id, struct sonde_strbuf *svg, int rc)
{
	int e = 0;

	if (rc == 0 && svg->len) {
		e |= sonde_strbuf__addf(out, "<figure id=\"%s\">\n", id);
		e |= sonde_strbuf__add(out, svg->buf, svg->len);
		e |= sonde_strbuf__adds(out, "</figure>\n");
	}
	sonde_strbuf__reset(svg);
	return e || rc == -ENOMEM ? -ENOMEM : 0;
}

/*
 * A profile's charts, each on its own (the report writes them at once):
 * 0 bars (per uid; collect time's: per measure), 1 the scatter with the
 * models where there is a size to plot against, 2 the flow (the amount over
 * time; memory: live bytes over snapshots; a timer's regions: each sample's
 * duration at its start), 3 the flame graph.
 */
enum { CHARTS = 4 };

static int chart(struct sonde_strbuf *out, const struct sonde_profile *p, size_t idx, int which)
{
	struct sonde_strbuf svg = SONDE_STRBUF_INIT;
	struct sonde_chart_opts o = { .of = "amount", .func = SONDE_AGG_SUM, .top = 20 };
	const char *type = sonde_profile__type(p), *of, *per, *unit;
	char id[48];
	int rc = 0, e;
	bool time = !strcmp(type, "time");
	int regions = all_regions(p);

	if (regions < 0)
		return regions;
	o.type = main_type(p, &e);
	if (!o.type)
		return e;
	switch (which) {
	case 0:
		/* collect time: a bar per measure (real, user, ...); a timer: a bar per region */
		o.per = time && !regions ? "subtype" : "uid";
		o.func = time ? SONDE_AGG_MEAN : SONDE_AGG_SUM;
		/* calls: each function's total as the table gives it (a recursive call
		   inside another of the same function is not counted again, and every
		   call counts where the rows are a sample), not the sum of its rows */
		if (json_is_object(json_object_get(sonde_profile__stats(p), "trace")))
			o.of = "summary.total";
		/* memory: bytes allocated per site, every allocation (not the sampled
		   rows), and not the frees, which are no allocation site */
		if (!strcmp(type, "memory")) {
			o.of = "summary.bytes";
			o.skip_subtypes = "free,delete,delete[],munmap,live";
		}
		snprintf(id, sizeof(id), "bars-%zu", idx);
		e = sonde_view__bars(p, &o, &svg);
		rc = figure(out, id, &svg, e);
		break;
	case 1:
		sonde_postprocess__defaults(type, &of, &per);
		o.of = of;
		o.per = per;
		snprintf(id, sizeof(id), "scatter-%zu", idx);
		e = sonde_view__scatter(p, &o, &svg);
		rc = figure(out, id, &svg, e);
		break;
	case 2:
		/* a timer's regions: each sample's duration at its start, a line per region */
		if (time && !regions)
			break;
		o.per = !strcmp(type, "memory") ? "snapshot" : "timestamp";
		o.by = "uid";
		o.stacked = !strcmp(type, "memory");
		snprintf(id, sizeof(id), "flow-%zu", idx);
		e = sonde_view__flow(p, &o, &svg);
		if (e == -EINVAL && !strcmp(type, "memory")) {
			o.per = "timestamp";
			o.stacked = false;
			e = sonde_view__flow(p, &o, &svg);
		}
		rc = figure(out, id, &svg, e);
		break;
	default: {
		struct sonde_strbuf folded = SONDE_STRBUF_INIT;
		const char *weight = sonde_view__flame_weight(p, &unit);

		if (!sonde_view__folded(p, weight, &folded) && folded.len) {
			rc |= sonde_strbuf__adds(out, "<h3>Flame graph</h3>\n");
			e = sonde_view__flame(folded.buf, NULL, weight, unit, &svg);
			snprintf(id, sizeof(id), "flame-%zu", idx);
			rc |= figure(out, id, &svg, e);
		}
		sonde_strbuf__release(&folded);
	}
	}
	sonde_strbuf__release(&svg);
	return rc;
}

static int verdict_rank(enum sonde_verdict v)
{
	static const int r[] = { 6, 4, 1, 0, 3, 2, 5, 5 };

	return r[v];
}

static int by_severity(const void *a, const void *b)
{
	const struct sonde_check_result *x = a, *y = b;
	double cx = isnan(x->change) ? 0 : fabs(x->change),
	       cy = isnan(y->change) ? 0 : fabs(y->change);

	if (verdict_rank(x->verdict) != verdict_rank(y->verdict))
		return verdict_rank(x->verdict) - verdict_rank(y->verdict);
	return cx < cy ? 1 : cx > cy ? -1 : 0;
}

static int comparison(struct sonde_strbuf *out, const struct sonde_profile *b,
		      const struct sonde_profile *t, const char *bname, const char *tname,
		      size_t idx)
{
	struct sonde_check_options o = { 0 };
	struct sonde_check_result *r;
	size_t n, i, counts[SONDE_VERDICT_COUNT] = { 0 };
	int rc = sonde_check__compare(b, t, &o, &r, &n), e;

	if (rc == -EXDEV) { /* profiles of different collectors: nothing to compare */
		rc = sonde_strbuf__addf(
			out, "<section id=\"comparison-%zu\" class=\"comparison\"><h2>", idx);
		rc |= esc(out, tname);
		rc |= sonde_strbuf__adds(out, " against ");
		rc |= esc(out, bname);
		rc |= sonde_strbuf__adds(out, "</h2><p>not compared: the profiles come from "
					      "different collectors</p></section>\n");
		return rc;
	}
	if (rc)
		return rc;
	qsort(r, n, sizeof(*r), by_severity);
	for (i = 0; i < n; i++)
		counts[r[i].verdict]++;
	rc = sonde_strbuf__addf(out, "<section id=\"comparison-%zu\" class=\"comparison\"><h2>",
				idx);
	rc |= esc(out, tname);
	rc |= sonde_strbuf__adds(out, " against ");
	rc |= esc(out, bname);
	rc |= sonde_strbuf__adds(out, "</h2><p>");
	for (i = 0; i < SONDE_VERDICT_COUNT; i++)
		if (counts[i])
			rc |= sonde_strbuf__addf(out, "<span class=\"v v-%s\">%zu %s</span> ",
						 sonde_verdict_names[i], counts[i],
						 sonde_verdict_names[i]);
	rc |= sonde_strbuf__adds(out,
				 "</p><table class=\"check sortable\"><thead><tr><th>uid</th>"
				 "<th>metric</th><th>verdict</th><th>baseline</th><th>target</th>"
				 "<th>change</th><th>95% CI of ratio</th><th>confidence</th>"
				 "<th>method</th></tr></thead><tbody>\n");
	for (i = 0; i < n && i < TABLE_ROWS && !rc; i++) {
		const struct sonde_check_result *x = &r[i];
		char ci[96], v1[40], v2[40];

		rc |= sonde_strbuf__adds(out, "<tr><td>");
		rc |= esc(out, x->uid);
		rc |= sonde_strbuf__adds(out, "</td><td>");
		rc |= esc(out, x->subtype ? x->subtype : x->type);
		rc |= sonde_strbuf__addf(out, "</td><td><span class=\"v v-");
		/* The class is the name with spaces as dashes. */
		for (const char *c = sonde_verdict_names[x->verdict]; *c; c++)
			rc |= sonde_strbuf__addch(out, *c == ' ' ? '-' : *c);
		rc |= sonde_strbuf__addf(out, "\">%s</span>", sonde_verdict_names[x->verdict]);
		if (x->detail) {
			rc |= sonde_strbuf__adds(out, " ");
			rc |= esc(out, x->detail);
		}
		rc |= sonde_strbuf__adds(out, "</td>");
		rc |= numcell(out, x->baseline, x->unit);
		rc |= numcell(out, x->target, x->unit);
		if (isnan(x->change))
			rc |= sonde_strbuf__adds(out, "<td class=\"n\" data-v=\"0\">-</td>");
		else
			rc |= sonde_strbuf__addf(out,
						 "<td class=\"n\" data-v=\"%.6g\">%+.1f%%</td>",
						 x->change, 100 * x->change);
		if (isnan(x->ratio_low)) {
			snprintf(ci, sizeof(ci), "-");
		} else {
			snprintf(v1, sizeof(v1), "%.3f", x->ratio_low);
			snprintf(v2, sizeof(v2), "%.3f", x->ratio_high);
			snprintf(ci, sizeof(ci), "[%s, %s]", v1, v2);
		}
		rc |= sonde_strbuf__addf(out, "<td>%s</td>", ci);
		if (isnan(x->confidence))
			rc |= sonde_strbuf__adds(out, "<td class=\"n\" data-v=\"0\">-</td>");
		else
			rc |= sonde_strbuf__addf(out, "<td class=\"n\" data-v=\"%.6g\">%.1f%%</td>",
						 x->confidence, 100 * x->confidence);
		rc |= sonde_strbuf__addf(out, "<td>%s</td></tr>\n", x->method);
	}
	rc |= sonde_strbuf__adds(out, "</tbody></table>\n");
	if (n > TABLE_ROWS)
		rc |= sonde_strbuf__addf(out,
					 "<p class=\"note\">The %d most severe of %zu resources; "
					 "<code>sonde check</code> lists all.</p>\n",
					 TABLE_ROWS, n);
	sonde_check__free(r, n);
	/* A differential flame graph when both have stacks of the same kind. */
	{
		struct sonde_strbuf fb = SONDE_STRBUF_INIT, ft = SONDE_STRBUF_INIT,
				    svg = SONDE_STRBUF_INIT;
		const char *unit, *weight = sonde_view__flame_weight(t, &unit);
		char id[48];

		if (!strcmp(sonde_profile__type(b), sonde_profile__type(t)) &&
		    !sonde_view__folded(b, weight, &fb) && !sonde_view__folded(t, weight, &ft) &&
		    fb.len && ft.len) {
			rc |= sonde_strbuf__adds(out, "<h3>Differential flame graph</h3><p "
						      "class=\"note\">Widths: the target; colours: "
						      "the change of each frame's share (red grew, "
						      "blue shrank).</p>\n");
			e = sonde_view__flame(ft.buf, fb.buf, "target against baseline", unit,
					      &svg);
			snprintf(id, sizeof(id), "diff-%zu", idx);
			rc |= figure(out, id, &svg, e);
		}
		sonde_strbuf__release(&fb);
		sonde_strbuf__release(&ft);
		sonde_strbuf__release(&svg);
	}
	return rc | sonde_strbuf__adds(out, "</section>\n");
}

/*
 * The baseline of profile i: the nearest earlier profile of the same collector
 * and command (like with like: a memory profile is never judged against a
 * trace), or -1 when there is none.
 */
static size_t baseline_of(struct sonde_profile *const *p, size_t i)
{
	const char *ci = json_string_value(
			   json_object_get(sonde_profile__collector_info(p[i]), "name")),
		   *cmd = json_string_value(json_object_get(sonde_profile__header(p[i]), "cmd"));
	size_t j;

	for (j = i; j-- > 0;) {
		const char *cj = json_string_value(
				   json_object_get(sonde_profile__collector_info(p[j]), "name")),
			   *cmdj = json_string_value(
				   json_object_get(sonde_profile__header(p[j]), "cmd"));

		if (ci && cj && cmd && cmdj && !strcmp(ci, cj) && !strcmp(cmd, cmdj))
			return j;
	}
	return (size_t)-1;
}

/* Each run among the profiles (one run id: several collectors on the same runs) on one timeline. */
static int timelines(struct sonde_strbuf *out, struct sonde_profile *const *p, size_t n)
{
	const struct sonde_profile **g = calloc(n + 1, sizeof(*g));
	struct sonde_strbuf svg = SONDE_STRBUF_INIT;
	size_t i, j, k;
	int rc = g ? 0 : -ENOMEM;

	for (i = 0; i < n && !rc; i++) {
		const char *id =
			json_string_value(json_object_get(sonde_profile__header(p[i]), "run_id"));
		int r;

		if (!id)
			continue;
		for (j = 0; j < i; j++) /* drawn with an earlier one of its run */
			if (json_equal(json_object_get(sonde_profile__header(p[j]), "run_id"),
				       json_object_get(sonde_profile__header(p[i]), "run_id")))
				break;
		if (j < i)
			continue;
		for (k = 0, j = i; j < n; j++)
			if (json_equal(json_object_get(sonde_profile__header(p[j]), "run_id"),
				       json_object_get(sonde_profile__header(p[i]), "run_id")))
				g[k++] = p[j];
		r = sonde_view__timeline_svg(g, k, &svg);
		if (r == -ENOMEM)
			rc = r;
		if (r || !svg.len)
			continue;
		rc |= sonde_strbuf__addf(out,
					 "<section id=\"timeline-%zu\" class=\"timeline\">"
					 "<h2>run %.12s: %zu profile%s on one timeline</h2>\n",
					 i, id, k, k == 1 ? "" : "s");
		rc |= sonde_strbuf__add(out, svg.buf, svg.len);
		rc |= sonde_strbuf__adds(out, "</section>\n");
		sonde_strbuf__reset(&svg);
	}
	sonde_strbuf__release(&svg);
	free(g);
	return rc ? -ENOMEM : 0;
}

/* One profile's section, up to its charts. */
static int profile_section(struct sonde_strbuf *out, const struct sonde_profile *p,
			   const char *name, size_t i)
{
	struct sonde_table_row *rows = NULL;
	size_t nrows = 0;
	int rc, e;

	rc = sonde_strbuf__addf(out, "<section id=\"profile-%zu\" class=\"profile\"><h2>", i);
	rc |= esc(out, name);
	rc |= sonde_strbuf__adds(out, "</h2>\n");
	/* the summary rows, largest total first: the answer and the table's */
	if (sonde_table__rows(p, &rows, &nrows))
		rc = -ENOMEM;
	else if (nrows)
		qsort(rows, nrows, sizeof(*rows), by_total);
	rc |= answer(out, p, rows, nrows);
	rc |= warnings(out, p);
	rc |= summary_table(out, rows, nrows);
	free(rows);
	if (main_type(p, &e))
		rc |= sonde_strbuf__adds(out, "<h3>Charts</h3>\n");
	rc |= e;
	return rc;
}

/*
 * The report's parts that depend on nothing but their profiles, each written
 * into its own buffer, on the machine's CPUs at once (the profiles are only
 * read), and joined in order. Profile i has PIECES parts from i * PIECES: its
 * section up to the charts, each chart, its facts and the section's end; part
 * n * PIECES + j is the comparison of profile j + 1 with its baseline.
 */
enum { PIECES = CHARTS + 2 };

struct parts {
	struct sonde_profile *const *p;
	const char *const *names;
	size_t n;
	struct sonde_strbuf *buf;
	int *rc;
};

static void write_part(void *ctx, size_t k)
{
	struct parts *w = ctx;
	struct sonde_strbuf *out = &w->buf[k];
	size_t i = k / PIECES, piece = k % PIECES, b;

	if (i < w->n) {
		if (piece == 0)
			w->rc[k] = profile_section(out, w->p[i], w->names[i], i);
		else if (piece <= CHARTS)
			w->rc[k] = chart(out, w->p[i], i, (int)piece - 1);
		else
			w->rc[k] = facts(out, w->p[i]) | sonde_strbuf__adds(out, "</section>\n");
		return;
	}
	i = k - w->n * PIECES + 1; /* profile i */
	b = baseline_of(w->p, i);
	if (b != (size_t)-1)
		w->rc[k] = comparison(out, w->p[b], w->p[i], w->names[b], w->names[i], i);
}

int sonde_view__report(struct sonde_profile *const *p, const char *const *names, size_t n,
		       struct sonde_strbuf *out)
{
	char date[64];
	time_t now = time(NULL);
	struct tm tm;
	struct parts w = { p, names, n, NULL, NULL };
	size_t i, nparts = n * PIECES + n - 1;
	int rc;

	if (!n)
		return -EINVAL;

	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %z", localtime_r(&now, &tm));
	rc = sonde_strbuf__adds(
		out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
		     "'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
		     "img-src data:\">\n<meta name=\"viewport\" "
		     "content=\"width=device-width\">\n<title>sonde report: ");
	rc |= esc(out, json_string_value(json_object_get(sonde_profile__header(p[0]), "cmd")));
	rc |= sonde_strbuf__addf(out,
				 "</title>\n<style>%s</style></head>\n<body>\n<header><h1>"
				 "sonde report</h1><p>",
				 report_css);
	rc |= sonde_strbuf__addf(out, "%zu profile%s, written %s by sonde %s</p><nav>", n,
				 n == 1 ? "" : "s", date, sonde_version());
	for (i = 0; i < n; i++) {
		rc |= sonde_strbuf__addf(out, "<a href=\"#profile-%zu\">", i);
		rc |= esc(out, names[i]);
		rc |= sonde_strbuf__adds(out, "</a>");
	}
	for (i = 1; i < n; i++)
		if (baseline_of(p, i) != (size_t)-1)
			rc |= sonde_strbuf__addf(
				out, "<a href=\"#comparison-%zu\">comparison %zu</a>", i, i);
	rc |= sonde_strbuf__adds(out, "</nav></header>\n");
	w.buf = calloc(nparts, sizeof(*w.buf));
	w.rc = calloc(nparts, sizeof(*w.rc));
	if (!w.buf || !w.rc) {
		free(w.buf);
		free(w.rc);
		return -ENOMEM;
	}
	for (i = 0; i < nparts; i++)
		sonde_strbuf__init(&w.buf[i]);
	if (!rc)
		sonde_parallel__for(nparts, 1, write_part, &w);
	for (i = 0; i < nparts; i++) {
		rc |= w.rc[i];
		if (!rc)
			rc |= sonde_strbuf__add(out, w.buf[i].buf, w.buf[i].len);
		sonde_strbuf__release(&w.buf[i]);
	}
	free(w.buf);
	free(w.rc);
	rc |= timelines(out, p, n);
	rc |= sonde_strbuf__addf(out, "<script>\n%s</script>\n</body></html>\n", report_js);
	return rc ? -ENOMEM : 0;
}
