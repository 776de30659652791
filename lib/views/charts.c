/*
 * charts.c - bars, flow and scatter charts as standalone SVG.
 *
 * Charts aggregate before they draw, so that a profile of a million rows gives
 * a chart of a few hundred elements: bars keep the top categories and groups
 * (the rest is "other"), flow bins its x axis into at most 400 steps, and a
 * scatter of more than 4000 points becomes a density grid of 320 x 160 cells.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/postprocess.h>
#include "../grow.h"
#include "../strmap.h"
#include "views.h"

const char *const sonde_view__aggs[] = { "sum", "mean", "count", "min", "max", NULL };

#define CHART_W	       960
#define MAX_GROUPS     8
#define FLOW_BINS      400
#define SCATTER_POINTS 4000
#define GRID_X	       320
#define GRID_Y	       160

struct plot {
	int x, y, w, h;	       /* the plotting area in pixels */
	double x0, x1, y0, y1; /* the data range */
};

static double px(const struct plot *p, double v)
{
	return p->x + (p->x1 > p->x0 ? (v - p->x0) / (p->x1 - p->x0) : 0.5) * p->w;
}

static double py(const struct plot *p, double v)
{
	return p->y + p->h - (p->y1 > p->y0 ? (v - p->y0) / (p->y1 - p->y0) : 0.5) * p->h;
}

/* A round tick step giving about n ticks over [lo, hi]. */
static double tick_step(double lo, double hi, int n)
{
	double raw = (hi - lo) / n, mag, f;

	if (!(raw > 0))
		return 1;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

/* Widen a range to round ticks (a zero-width range gets some room). */
static void nice_range(double *lo, double *hi)
{
	double s;

	if (!(*hi > *lo)) {
		double d = fabs(*lo) > 0 ? fabs(*lo) * 0.1 : 1;

		*lo -= d;
		*hi += d;
	}
	s = tick_step(*lo, *hi, 6);
	*lo = floor(*lo / s) * s;
	*hi = ceil(*hi / s) * s;
}

static int svg_open(struct sonde_strbuf *out, int w, int h, const char *title, const char *cls)
{
	int rc = sonde_strbuf__addf(
		out,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"sonde-chart %s\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"Verdana,sans-serif\" font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
		"<text x=\"%d\" y=\"20\" font-size=\"14\" text-anchor=\"middle\">",
		cls, w, h, w, h, w / 2);

	rc |= sonde_view__escape(out, title);
	rc |= sonde_strbuf__adds(out, "</text>\n");
	return rc;
}

/* One axis with ticks; values printed in unit. */
static int axis(struct sonde_strbuf *out, const struct plot *p, bool xaxis, const char *unit,
		const char *label)
{
	double lo = xaxis ? p->x0 : p->y0, hi = xaxis ? p->x1 : p->y1, s = tick_step(lo, hi, 6), v;
	char buf[40];
	int rc = 0;

	if (xaxis)
		rc |= sonde_strbuf__addf(out,
					 "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
					 "stroke=\"#444\"/>\n",
					 p->x, p->y + p->h, p->x + p->w, p->y + p->h);
	else
		rc |= sonde_strbuf__addf(out,
					 "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
					 "stroke=\"#444\"/>\n",
					 p->x, p->y, p->x, p->y + p->h);
	for (v = ceil(lo / s - 1e-9) * s; v <= hi + s * 1e-9 && !rc; v += s) {
		sonde_format__value(fabs(v) < s * 1e-9 ? 0 : v, unit, buf, sizeof(buf));
		if (xaxis)
			rc |= sonde_strbuf__addf(
				out,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
				"stroke=\"#444\"/>"
				"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
				px(p, v), p->y + p->h, px(p, v), p->y + p->h + 4, px(p, v),
				p->y + p->h + 16, buf);
		else
			rc |= sonde_strbuf__addf(
				out,
				"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
				"stroke=\"#eee\"/>"
				"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
				p->x, py(p, v), p->x + p->w, py(p, v), p->x - 4, py(p, v) + 4, buf);
	}
	if (label) {
		if (xaxis)
			rc |= sonde_strbuf__addf(out,
						 "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
						 p->x + p->w / 2, p->y + p->h + 32);
		else
			rc |= sonde_strbuf__addf(out,
						 "<text transform=\"translate(14,%d) rotate(-90)\" "
						 "text-anchor=\"middle\">",
						 p->y + p->h / 2);
		rc |= sonde_view__escape(out, label);
		rc |= sonde_strbuf__adds(out, "</text>\n");
	}
	return rc;
}

static int legend(struct sonde_strbuf *out, int x, int y, const char *name, const char *color,
		  bool line)
{
	int rc;

	if (line)
		rc = sonde_strbuf__addf(out,
					"<g class=\"legend\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
					"y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>",
					x, y - 4, x + 14, y - 4, color);
	else
		rc = sonde_strbuf__addf(out,
					"<g class=\"legend\"><rect x=\"%d\" y=\"%d\" width=\"10\" "
					"height=\"10\" fill=\"%s\"/>",
					x, y - 9, color);
	rc |= sonde_strbuf__addf(out, "<text x=\"%d\" y=\"%d\">", x + 18, y);
	rc |= sonde_view__escape(out, name);
	return rc | sonde_strbuf__adds(out, "</text></g>\n");
}

/* ---- aggregation of one column per a category and a group ---- */

struct cell {
	char *cat, *group;
	double x; /* flow: the numeric category */
	double sum, min, max;
	size_t count;
};

struct agg {
	struct cell *c;
	size_t n, cap;
	struct sonde_strmap index; /* "category\x1fgroup" -> cell */
};

static double cell_value(const struct cell *c, enum sonde_view_agg f)
{
	switch (f) {
	case SONDE_AGG_SUM:
		return c->sum;
	case SONDE_AGG_MEAN:
		return c->count ? c->sum / (double)c->count : NAN;
	case SONDE_AGG_COUNT:
		return (double)c->count;
	case SONDE_AGG_MIN:
		return c->min;
	case SONDE_AGG_MAX:
		return c->max;
	}
	return NAN;
}

static void cell_merge(struct cell *into, const struct cell *c)
{
	if (!into->count) {
		into->min = c->min;
		into->max = c->max;
	} else if (c->count) {
		into->min = fmin(into->min, c->min);
		into->max = fmax(into->max, c->max);
	}
	into->sum += c->sum;
	into->count += c->count;
}

static struct cell *agg_cell(struct agg *a, const char *cat, const char *group, double x)
{
	struct sonde_strbuf k = SONDE_STRBUF_INIT;
	uint64_t *at;
	bool hit;
	struct cell *c = NULL;

	if (sonde_strbuf__adds(&k, cat) || sonde_strbuf__addch(&k, '\x1f') ||
	    sonde_strbuf__adds(&k, group))
		return NULL;
	at = sonde_strmap__upsert(&a->index, k.buf, k.len, &hit);
	if (at && hit) {
		c = &a->c[*at];
	} else if (at && !sonde_grow((void **)&a->c, &a->cap, a->n + 1, sizeof(*a->c))) {
		*at = a->n;
		c = &a->c[a->n++];
		c->cat = strdup(cat);
		c->group = strdup(group);
		c->x = x;
		if (!c->cat || !c->group)
			c = NULL;
	}
	sonde_strbuf__release(&k);
	return c;
}

static void agg_release(struct agg *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		free(a->c[i].cat);
		free(a->c[i].group);
	}
	free(a->c);
	sonde_strmap__release(&a->index);
}

/* A value as text: a string as it is, a number, true or false, else "(none)". */
static void scalar_text(const struct sonde_scalar *v, struct sonde_strbuf *buf)
{
	switch (v->type) {
	case JSON_STRING:
		sonde_strbuf__adds(buf, v->s);
		break;
	case JSON_INTEGER:
		sonde_strbuf__addf(buf, "%lld", v->i);
		break;
	case JSON_REAL:
		sonde_strbuf__addf(buf, "%g", v->d);
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		sonde_strbuf__adds(buf, v->type == JSON_TRUE ? "true" : "false");
		break;
	default:
		sonde_strbuf__adds(buf, "(none)");
	}
}

/* A field of a resource's row as text: a column value, else a fixed property. */
static const char *field(json_t *fixed, json_t *cols, const char *name, size_t row,
			 struct sonde_strbuf *buf, bool *per_row)
{
	json_t *col = json_object_get(cols, name), *v;

	sonde_strbuf__reset(buf);
	*per_row = col != NULL;
	if (!name)
		return "";
	v = col ? json_array_get(col, row) : json_object_get(fixed, name);
	if (!col && !strcmp(name, "uid")) {
		sonde_profile__uid_string(v, buf);
	} else {
		struct sonde_scalar s = { v ? (int)json_typeof(v) : -1, json_string_value(v),
					  json_is_integer(v) ? (long long)json_integer_value(v) : 0,
					  json_number_value(v) };

		scalar_text(&s, buf);
	}
	return buf->buf ? buf->buf : "";
}

/* field() for a fixed property, read without making the resource's tree. */
static const char *fixed_field(const struct sonde_profile *p, size_t i, const char *name,
			       struct sonde_strbuf *buf)
{
	struct sonde_scalar v;

	sonde_strbuf__reset(buf);
	if (!name)
		return "";
	if (!strcmp(name, "uid")) {
		sonde_profile__uid_text(p, i, buf);
	} else {
		sonde_profile__fixed_scalar(p, i, name, &v);
		scalar_text(&v, buf);
	}
	return buf->buf ? buf->buf : "";
}

/* Whether name is one of the comma-separated list. */
static bool listed(const char *list, const char *name)
{
	size_t len = name ? strlen(name) : 0;
	const char *at;

	for (at = list; name && at && *at;) {
		if (!strncmp(at, name, len) && (at[len] == ',' || !at[len]))
			return true;
		at = strchr(at, ',');
		if (at)
			at++;
	}
	return false;
}

/*
 * The values of `of` in resource i, into *ys: a column's, or, for
 * "summary.FIELD", the one number the resource's summary holds (a trace
 * function's total counts the outermost of its recursive calls only, and
 * every call, where its rows are a sample). How many, or -errno.
 */
static long of_values(const struct sonde_profile *p, size_t i, const char *of, double **ys,
		      size_t *cap)
{
	struct sonde_scalar v;

	if (strncmp(of, "summary.", 8))
		return sonde_profile__numbers(p, i, of, ys, cap);
	sonde_profile__fixed_member(p, i, "summary", of + 8, &v);
	if (v.type != JSON_INTEGER && v.type != JSON_REAL)
		return 0;
	if (*cap < 1) {
		double *n = realloc(*ys, sizeof(**ys));

		if (!n)
			return -ENOMEM;
		*ys = n;
		*cap = 1;
	}
	(*ys)[0] = v.d;
	return 1;
}

/*
 * Aggregate of over (per, by) for every row of every resource. The values
 * and fixed properties are read without making the resources' trees; a
 * resource whose category or group is one of its columns (other than a
 * numeric per) is read through its tree.
 */
static int aggregate(const struct sonde_profile *p, const struct sonde_chart_opts *o, bool numeric,
		     struct agg *a)
{
	size_t n = sonde_profile__resource_count(p), i, ycap = 0, xcap = 0;
	struct sonde_strbuf cb = SONDE_STRBUF_INIT, gb = SONDE_STRBUF_INIT;
	double *ys = NULL, *xs = NULL;
	int rc = 0;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < n && !rc; i++) {
		long ny = of_values(p, i, o->of, &ys, &ycap), nx = 0, j;
		json_t *fixed = NULL, *cols = NULL;
		struct cell *c = NULL;
		bool cat_row = false, grp_row = false, by_tree;
		const char *type;

		if (numeric && ny > 0)
			nx = sonde_profile__row_numbers(p, i, o->per, (size_t)ny, &xs, &xcap);
		if (ny == -ENOMEM || nx == -ENOMEM) {
			rc = -ENOMEM;
			break;
		}
		if (ny <= 0 || nx < 0)
			continue;
		type = o->type ? sonde_profile__fixed_string(p, i, "type") : NULL;
		if (o->type && (!type || strcmp(type, o->type)))
			continue;
		if (o->skip_subtypes &&
		    listed(o->skip_subtypes, sonde_profile__fixed_string(p, i, "subtype")))
			continue;
		/* a category or group from a column: per row, through the tree */
		by_tree = (!numeric && o->per &&
			   sonde_profile__numbers(p, i, o->per, NULL, NULL) >= 0) ||
			  (o->by && sonde_profile__numbers(p, i, o->by, NULL, NULL) >= 0);
		if (by_tree && sonde_profile__resource_at(p, i, NULL, &fixed, &cols)) {
			rc = -ENOMEM;
			break;
		}
		for (j = 0; j < ny; j++) {
			double v = ys[j], x = numeric && j < nx ? xs[j] : NAN;

			if (isnan(v) || (numeric && isnan(x)))
				continue;
			if (!c || cat_row || grp_row) {
				const char *cat, *grp;

				if (numeric) {
					sonde_strbuf__reset(&cb);
					sonde_strbuf__addf(&cb, "%.17g", x);
					cat = cb.buf;
					cat_row = true;
				} else {
					cat = by_tree ? field(fixed, cols, o->per, (size_t)j, &cb,
							      &cat_row)
						      : fixed_field(p, i, o->per, &cb);
				}
				grp = !o->by ? ""
				      : by_tree
					      ? field(fixed, cols, o->by, (size_t)j, &gb, &grp_row)
					      : fixed_field(p, i, o->by, &gb);
				/* a name cut short by memory would be another category */
				c = sonde_strbuf__error(&cb) || sonde_strbuf__error(&gb)
					    ? NULL
					    : agg_cell(a, cat, grp, numeric ? x : 0);
				if (!c) {
					rc = -ENOMEM;
					break;
				}
			}
			if (!c->count) {
				c->min = c->max = v;
			} else {
				c->min = fmin(c->min, v);
				c->max = fmax(c->max, v);
			}
			c->sum += v;
			c->count++;
		}
	}
	free(ys);
	free(xs);
	sonde_strbuf__release(&cb);
	sonde_strbuf__release(&gb);
	return rc;
}

/* Names ranked by their total (sum of |value|) over the cells, first max kept. */
struct ranked {
	const char *name;
	double weight;
	double x;
};

static int by_weight(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight < y->weight ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int by_x(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	return (x->x > y->x) - (x->x < y->x);
}

static struct ranked *rank(const struct agg *a, bool group, enum sonde_view_agg f, size_t *n)
{
	struct sonde_strmap seen = SONDE_STRMAP_INIT;
	struct ranked *r = calloc(a->n + 1, sizeof(*r));
	size_t i, k = 0;

	if (!r)
		return NULL;
	for (i = 0; i < a->n; i++) {
		const char *name = group ? a->c[i].group : a->c[i].cat;
		bool hit;
		uint64_t *at = sonde_strmap__upserts(&seen, name, &hit);
		double v = fabs(cell_value(&a->c[i], f));

		if (!at) {
			sonde_strmap__release(&seen);
			free(r);
			return NULL;
		}
		if (!hit) {
			*at = k++;
			r[*at].name = name;
			r[*at].x = a->c[i].x;
		}
		r[*at].weight += isnan(v) ? 0 : v;
	}
	sonde_strmap__release(&seen);
	qsort(r, k, sizeof(*r), by_weight);
	*n = k;
	return r;
}

/* The position of name among the first max of r, or max ("other"). */
static size_t slot(const struct ranked *r, size_t n, size_t max, const char *name)
{
	size_t i;

	for (i = 0; i < n && i < max; i++)
		if (!strcmp(r[i].name, name))
			return i;
	return max;
}

static const char *const palette[MAX_GROUPS + 1] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c9c9c",
};

static const char *unit_of(const struct sonde_profile *p, const char *of)
{
	json_t *units = json_object_get(sonde_profile__header(p), "units");
	const char *u = NULL, *k;
	json_t *v;
	size_t n = 0;

	if (strcmp(of, "amount"))
		return json_string_value(json_object_get(units, of));
	/* The amount's unit when every resource type shares one. */
	json_object_foreach(units, k, v)
	{
		if (!strcmp(k, "structure-unit-size"))
			continue;
		if (!u || strcmp(u, json_string_value(v) ? json_string_value(v) : ""))
			n++;
		u = json_string_value(v);
	}
	return n == 1 ? u : NULL;
}

/* The unit of the charted values: of the type drawn, when one is. */
static const char *value_unit(const struct sonde_profile *p, const struct sonde_chart_opts *o)
{
	json_t *units = json_object_get(sonde_profile__header(p), "units");

	if (!strcmp(o->of, "amount") && o->type && json_is_string(json_object_get(units, o->type)))
		return json_string_value(json_object_get(units, o->type));
	/* a summary's fields are in its amount's unit; a trace's resources are "mixed",
	   their amounts in the unit of their subtype (time) */
	if ((!strcmp(o->of, "amount") || !strncmp(o->of, "summary.", 8)) &&
	    sonde_profile__resource_count(p) && !unit_of(p, o->of)) {
		struct sonde_scalar st;

		if (o->type && json_is_string(json_object_get(units, o->type)))
			return json_string_value(json_object_get(units, o->type));
		sonde_profile__fixed_scalar(p, 0, "subtype", &st);
		if (st.type == JSON_STRING && json_is_string(json_object_get(units, st.s)))
			return json_string_value(json_object_get(units, st.s));
	}
	return unit_of(p, o->of);
}

/* Units of the columns that are not in header.units but have one all the same. */
static const char *axis_unit(const struct sonde_profile *p, const char *field)
{
	const char *u = unit_of(p, field);

	if (!u && (!strcmp(field, "timestamp") || !strcmp(field, "duration")))
		return "ns";
	return u;
}

/* What a column or property is called on an axis and in a title. */
static const char *field_label(const struct sonde_profile *p, const char *field,
			       const struct sonde_chart_opts *o)
{
	const char *type = sonde_profile__type(p);
	json_t *param = json_object_get(sonde_profile__metadata(p), "parameter");

	if (!strcmp(field, "summary.total"))
		return "time (outermost calls)";
	if (!strcmp(field, "summary.bytes"))
		return "bytes allocated";
	if (!strcmp(field, "amount")) {
		const char *u = value_unit(p, o);

		/* a trace's amounts are "mixed" by type, and times by unit */
		return u && !strcmp(u, "ns")  ? "time"
		       : u && !strcmp(u, "B") ? "memory"
		       : o->type	      ? o->type
					      : "amount";
	}
	if (!strcmp(field, "structure-unit-size"))
		return json_is_string(param) ? json_string_value(param) : "size";
	if (!strcmp(field, "timestamp"))
		return "time since the start";
	if (!strcmp(field, "subtype"))
		return "metric";
	if (!strcmp(field, "uid") && !strcmp(type, "time")) {
		const char *by = json_string_value(
			json_object_get(sonde_profile__collector_info(p), "name"));

		/* a C or Python timer's resources are its regions */
		return by && (!strcmp(by, "timer") || !strcmp(by, "python")) ? "region" : "command";
	}
	if (!strcmp(field, "uid"))
		return !strcmp(type, "mixed")	   ? "function"
		       : !strcmp(type, "memory")   ? "allocation site"
		       : !strcmp(type, "counters") ? "counter"
		       : !strcmp(type, "time")	   ? "command"
						   : "resource";
	return field;
}

/* ns and B are printed in human units on every tick: the label need not say them */
static bool self_scaled(const char *unit)
{
	return !unit || !*unit || !strcmp(unit, "ns") || !strcmp(unit, "B");
}

/* An axis' label: what the field is, and its unit when the ticks do not show it. */
static const char *axis_label(char *buf, size_t len, const struct sonde_profile *p,
			      const char *field, const struct sonde_chart_opts *o, const char *unit)
{
	if (self_scaled(unit))
		unit = NULL;
	snprintf(buf, len, "%s%s%s%s", field_label(p, field, o), unit && *unit ? " (" : "",
		 unit && *unit ? unit : "", unit && *unit ? ")" : "");
	return buf;
}

/* "total time per function", "mean memory per allocation site by workload" */
static void chart_title(char *buf, size_t len, const struct sonde_profile *p,
			const struct sonde_chart_opts *o, const char *joint)
{
	static const char *const words[] = { "total", "mean", "number of", "least", "most" };
	const char *of = field_label(p, o->of, o), *u = value_unit(p, o);
	size_t k;

	k = (size_t)snprintf(buf, len, "%s%s%s %s", o->title ? o->title : "", o->title ? ": " : "",
			     words[o->func], o->func == SONDE_AGG_COUNT ? "rows" : of);
	if (k < len && !self_scaled(u) && o->func != SONDE_AGG_COUNT)
		k += (size_t)snprintf(buf + k, len - k, " (%s)", u);
	if (k < len)
		k += (size_t)snprintf(buf + k, len - k, " %s %s", joint, field_label(p, o->per, o));
	if (k < len && o->by)
		snprintf(buf + k, len - k, ", by %s", field_label(p, o->by, o));
}

int sonde_view__bars(const struct sonde_profile *p, const struct sonde_chart_opts *o,
		     struct sonde_strbuf *out)
{
	struct agg a;
	struct ranked *cats = NULL, *groups = NULL;
	size_t nc = 0, ng = 0, i, top = o->top ? o->top : 20, shown_c, shown_g;
	struct cell *grid = NULL;
	struct plot pl;
	int rc = aggregate(p, o, false, &a), bar_h, h;
	const char *unit = o->func == SONDE_AGG_COUNT ? "" : value_unit(p, o);
	char title[256], lab[160];

	if (!rc && a.n == 0)
		rc = -EINVAL;
	if (!rc) {
		cats = rank(&a, false, o->func, &nc);
		groups = rank(&a, true, o->func, &ng);
		if (!cats || !groups)
			rc = -ENOMEM;
	}
	if (rc)
		goto out;
	shown_c = nc > top ? top + 1 : nc;
	shown_g = ng > MAX_GROUPS ? MAX_GROUPS + 1 : ng;
	grid = calloc(shown_c * shown_g, sizeof(*grid));
	if (!grid) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < a.n; i++)
		cell_merge(&grid[slot(cats, nc, top, a.c[i].cat) * shown_g +
				 slot(groups, ng, MAX_GROUPS, a.c[i].group)],
			   &a.c[i]);
	/* The value axis: stacked bars add up their groups. */
	pl.x0 = 0;
	pl.x1 = 0;
	for (i = 0; i < shown_c; i++) {
		double sum = 0, g;
		size_t k;

		for (k = 0; k < shown_g; k++) {
			g = grid[i * shown_g + k].count
				    ? cell_value(&grid[i * shown_g + k], o->func)
				    : 0;
			sum += o->stacked ? g : 0;
			pl.x0 = fmin(pl.x0, g);
			pl.x1 = fmax(pl.x1, o->stacked ? sum : g);
		}
	}
	nice_range(&pl.x0, &pl.x1);
	bar_h = o->stacked || shown_g == 1 ? 18 : (int)shown_g * 8 + 6;
	pl.x = 280;
	pl.y = 40 + (shown_g > 1 ? 18 : 0);
	pl.w = CHART_W - pl.x - 30;
	pl.h = (int)shown_c * (bar_h + 6);
	h = pl.y + pl.h + 50;
	chart_title(title, sizeof(title), p, o, "per");
	rc |= svg_open(out, CHART_W, h, title, "bars");
	for (i = 0; i < shown_g && shown_g > 1; i++)
		rc |= legend(out, pl.x + (int)i * 80, 50, i < MAX_GROUPS ? groups[i].name : "other",
			     palette[i < MAX_GROUPS ? i : MAX_GROUPS], false);
	for (i = 0; i < shown_c && !rc; i++) {
		const char *cname = i < top ? cats[i].name : "other";
		double y = pl.y + (double)i * (bar_h + 6) + 3, acc = 0;
		char cut[48];
		size_t k, m = strlen(cname);

		rc |= sonde_strbuf__addf(out, "<g class=\"bar\"><title>");
		rc |= sonde_view__escape(out, cname);
		rc |= sonde_strbuf__addf(out,
					 "</title><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
					 pl.x - 6, y + bar_h / 2.0 + 4);
		if (m > 40) {
			m = 38;
			while (m && ((unsigned char)cname[m] & 0xC0) == 0x80)
				m--;
			memcpy(cut, cname, m);
			memcpy(cut + m, "..", 3);
			rc |= sonde_view__escape(out, cut);
		} else {
			rc |= sonde_view__escape(out, cname);
		}
		rc |= sonde_strbuf__adds(out, "</text>");
		for (k = 0; k < shown_g; k++) {
			const struct cell *c = &grid[i * shown_g + k];
			double v = c->count ? cell_value(c, o->func) : 0, x0, x1, yy, hh;
			char vb[40];

			if (!c->count)
				continue;
			x0 = o->stacked ? px(&pl, acc) : px(&pl, fmin(0, v));
			x1 = o->stacked ? px(&pl, acc + v) : px(&pl, fmax(0, v));
			acc += o->stacked ? v : 0;
			yy = o->stacked || shown_g == 1 ? y : y + (double)k * 8;
			hh = o->stacked || shown_g == 1 ? bar_h : 7;
			sonde_format__value(v, unit, vb, sizeof(vb));
			rc |= sonde_strbuf__addf(out,
						 "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
						 "height=\"%.1f\" fill=\"%s\"><title>",
						 x0, yy, fmax(0.5, x1 - x0), hh,
						 palette[k < MAX_GROUPS ? k : MAX_GROUPS]);
			rc |= sonde_view__escape(out, cname);
			if (shown_g > 1) {
				rc |= sonde_strbuf__adds(out, " / ");
				rc |= sonde_view__escape(out,
							 k < MAX_GROUPS ? groups[k].name : "other");
			}
			rc |= sonde_strbuf__addf(out, ": %s (%zu %s)</title></rect>", vb, c->count,
						 strncmp(o->of, "summary.", 8) ? "rows"
									       : "summaries");
		}
		rc |= sonde_strbuf__adds(out, "</g>\n");
	}
	pl.y0 = pl.y1 = 0;
	rc |= axis(out, &pl, true, unit, axis_label(lab, sizeof(lab), p, o->of, o, unit));
	rc |= sonde_strbuf__adds(out, "</svg>\n");
out:
	free(grid);
	free(cats);
	free(groups);
	agg_release(&a);
	return rc < 0 ? rc : rc ? -ENOMEM : 0;
}

int sonde_view__flow(const struct sonde_profile *p, const struct sonde_chart_opts *o,
		     struct sonde_strbuf *out)
{
	struct agg a;
	struct ranked *xs = NULL, *groups = NULL;
	size_t nx = 0, ng = 0, i, k, bins, shown_g;
	struct cell *grid = NULL;
	struct plot pl = { .x = 80, .y = 50, .w = CHART_W - 110, .h = 300 };
	const char *unit = o->func == SONDE_AGG_COUNT ? "" : value_unit(p, o);
	double lo = INFINITY, hi = -INFINITY, *acc = NULL;
	char title[256], lab[160];
	int rc = aggregate(p, o, true, &a);

	if (!rc && a.n == 0)
		rc = -EINVAL;
	if (!rc) {
		groups = rank(&a, true, o->func, &ng);
		xs = rank(&a, false, SONDE_AGG_COUNT, &nx);
		if (!groups || !xs)
			rc = -ENOMEM;
	}
	if (rc)
		goto out;
	for (i = 0; i < a.n; i++) {
		lo = fmin(lo, a.c[i].x);
		hi = fmax(hi, a.c[i].x);
	}
	bins = nx < FLOW_BINS ? nx : FLOW_BINS;
	shown_g = ng > MAX_GROUPS ? MAX_GROUPS + 1 : ng;
	qsort(xs, nx, sizeof(*xs), by_x);
	grid = calloc(bins * shown_g, sizeof(*grid));
	acc = calloc(bins, sizeof(*acc));
	if (!grid || !acc) {
		rc = -ENOMEM;
		goto out;
	}
	/* Exact x values when few, else equal-width bins (x: the bin's centre). */
	for (i = 0; i < bins; i++)
		grid[i * shown_g].x = nx <= FLOW_BINS
					      ? xs[i].x
					      : lo + (hi - lo) * ((double)i + 0.5) / (double)bins;
	for (i = 0; i < a.n; i++) {
		size_t b;

		if (nx <= FLOW_BINS) {
			size_t l = 0, r = nx;

			while (r - l > 1) { /* binary search of the exact x */
				size_t m = (l + r) / 2;

				if (xs[m].x <= a.c[i].x)
					l = m;
				else
					r = m;
			}
			b = l;
		} else {
			b = hi > lo ? (size_t)((a.c[i].x - lo) / (hi - lo) * (double)bins) : 0;
			b = b >= bins ? bins - 1 : b;
		}
		cell_merge(&grid[b * shown_g + slot(groups, ng, MAX_GROUPS, a.c[i].group)],
			   &a.c[i]);
	}
	pl.x0 = lo;
	pl.x1 = hi;
	pl.y0 = 0;
	pl.y1 = 0;
	for (i = 0; i < bins; i++) {
		double s = 0;

		for (k = 0; k < shown_g; k++) {
			double v = grid[i * shown_g + k].count
					   ? cell_value(&grid[i * shown_g + k], o->func)
					   : 0;

			s += v;
			pl.y0 = fmin(pl.y0, v);
			pl.y1 = fmax(pl.y1, o->stacked ? s : v);
		}
	}
	nice_range(&pl.y0, &pl.y1);
	if (!(pl.x1 > pl.x0))
		nice_range(&pl.x0, &pl.x1);
	chart_title(title, sizeof(title), p, o, "over");
	rc |= svg_open(out, CHART_W, pl.y + pl.h + 60, title, "flow");
	rc |= axis(out, &pl, false, unit, axis_label(lab, sizeof(lab), p, o->of, o, unit));
	rc |= axis(out, &pl, true, axis_unit(p, o->per),
		   axis_label(lab, sizeof(lab), p, o->per, o, axis_unit(p, o->per)));
	for (k = 0; k < shown_g && !rc; k++) {
		const char *name = k < MAX_GROUPS ? groups[k].name : "other";
		bool first = true;

		rc |= sonde_strbuf__adds(out, "<g class=\"series\"><title>");
		rc |= sonde_view__escape(out, name[0] ? name : o->of);
		rc |= sonde_strbuf__addf(
			out,
			"</title><path fill=\"%s\" fill-opacity=\"%s\" "
			"stroke=\"%s\" stroke-width=\"1.5\" d=\"",
			o->stacked ? palette[k < MAX_GROUPS ? k : MAX_GROUPS] : "none",
			o->stacked ? "0.7" : "0", palette[k < MAX_GROUPS ? k : MAX_GROUPS]);
		/* Stacked: the upper edge left to right, then the lower edge back. */
		for (i = 0; i < bins; i++) {
			const struct cell *c = &grid[i * shown_g + k];
			double v = c->count ? cell_value(c, o->func) : 0;

			if (!o->stacked && !c->count)
				continue;
			rc |= sonde_strbuf__addf(out, "%s%.1f,%.1f ", first ? "M" : "L",
						 px(&pl, grid[i * shown_g].x),
						 py(&pl, (o->stacked ? acc[i] : 0) + v));
			first = false;
		}
		if (o->stacked) {
			for (i = bins; i-- > 0;)
				rc |= sonde_strbuf__addf(out, "L%.1f,%.1f ",
							 px(&pl, grid[i * shown_g].x),
							 py(&pl, acc[i]));
			rc |= sonde_strbuf__adds(out, "Z");
			for (i = 0; i < bins; i++) {
				const struct cell *c = &grid[i * shown_g + k];

				acc[i] += c->count ? cell_value(c, o->func) : 0;
			}
		}
		rc |= sonde_strbuf__adds(out, "\"/></g>\n");
		if (shown_g > 1)
			rc |= legend(out, pl.x + (int)k * 100, 40, name,
				     palette[k < MAX_GROUPS ? k : MAX_GROUPS], true);
	}
	rc |= sonde_strbuf__adds(out, "</svg>\n");
out:
	free(grid);
	free(acc);
	free(xs);
	free(groups);
	agg_release(&a);
	return rc < 0 ? rc : rc ? -ENOMEM : 0;
}

static bool model_of(json_t *m, const struct sonde_points *g, const char *of, const char *per)
{
	const char *s = json_string_value(json_object_get(m, "subtype"));
	const char *u = json_string_value(json_object_get(m, "uid"));
	const char *mo = json_string_value(json_object_get(m, "of"));
	const char *mp = json_string_value(json_object_get(m, "per"));

	return u && !strcmp(u, g->uid) && (!s) == (!g->subtype) && (!s || !strcmp(s, g->subtype)) &&
	       (!mo || !strcmp(mo, of)) && (!mp || !strcmp(mp, per));
}

static int by_points(const void *a, const void *b)
{
	const struct sonde_points *x = a, *y = b;

	return x->n < y->n ? 1 : x->n > y->n ? -1 : strcmp(x->uid, y->uid);
}

/* The formula of a fitted model, and its coefficients with their units. */
static void model_text(char *buf, size_t len, json_t *m, const struct sonde_fit *f, bool fitted,
		       const char *yu, const char *xu)
{
	static const char *const formulas[SONDE_MODEL_COUNT] = {
		"y = b0",
		"y = b0 + b1·ln x",
		"y = b0 + b1·x",
		"y = b0 + b1·x·ln x",
		"y = b0 + b1·x + b2·x²",
		"y = b0·x^b1",
		"y = b0·b1^x",
	};
	const char *name = json_string_value(json_object_get(m, "model"));
	char b0[40], b1[40], per[48];

	/* "per element": the x unit in the singular */
	snprintf(per, sizeof(per), "%s", xu && *xu ? xu : "x");
	if (strlen(per) > 2 && per[strlen(per) - 1] == 's')
		per[strlen(per) - 1] = '\0';

	if (!fitted || f->kind >= SONDE_MODEL_COUNT) {
		/* smoothing: a curve, no formula */
		snprintf(buf, len, "%s (%s)", name ? name : "?",
			 json_string_value(json_object_get(m, "postprocessor"))
				 ? json_string_value(json_object_get(m, "postprocessor"))
				 : "smoothing");
		return;
	}
	sonde_format__value(f->b[0], yu, b0, sizeof(b0));
	switch (f->kind) {
	case SONDE_MODEL_CONSTANT:
		snprintf(buf, len, "%s: %s, b0 = %s, R² = %.4f", name, formulas[f->kind], b0,
			 f->r_square);
		return;
	case SONDE_MODEL_POWER:
	case SONDE_MODEL_EXPONENTIAL:
		snprintf(b1, sizeof(b1), "%.4g", f->b[1]);
		break;
	default:
		/* a slope can be far below the unit's smallest step: significant digits */
		if (fabs(f->b[1]) < 1 && f->b[1] != 0)
			snprintf(b1, sizeof(b1), "%.3g%s%s", f->b[1], yu && *yu ? " " : "",
				 yu ? yu : "");
		else
			sonde_format__value(f->b[1], yu, b1, sizeof(b1));
		break;
	}
	if (f->kind == SONDE_MODEL_QUADRATIC) {
		char b2[40];

		if (fabs(f->b[2]) < 1 && f->b[2] != 0)
			snprintf(b2, sizeof(b2), "%.3g%s%s", f->b[2], yu && *yu ? " " : "",
				 yu ? yu : "");
		else
			sonde_format__value(f->b[2], yu, b2, sizeof(b2));
		snprintf(buf, len, "%s: %s, b0 = %s, b1 = %s per %s, b2 = %s per %s², R² = %.4f",
			 name, formulas[f->kind], b0, b1, per, b2, per, f->r_square);
	} else {
		/* a slope in x or x·ln x is per unit of x */
		bool per_x = f->kind == SONDE_MODEL_LINEAR || f->kind == SONDE_MODEL_LINEARITHMIC;

		snprintf(buf, len, "%s: %s, b0 = %s, b1 = %s%s%s, R² = %.4f", name,
			 formulas[f->kind], b0, b1, per_x ? " per " : "", per_x ? per : "",
			 f->r_square);
	}
}

void sonde_view__model_text(json_t *model, const char *y_unit, const char *x_unit, char *buf,
			    size_t len)
{
	struct sonde_fit f;
	bool fitted = !sonde_fit__from_json(model, &f);

	model_text(buf, len, model, &f, fitted, y_unit, x_unit);
}

#define MAX_PANELS 6
#define PANEL_H	   240

/* One group's points, its models and their legend, in a panel from y = top. */
static int scatter_panel(struct sonde_strbuf *out, const struct sonde_profile *p,
			 const struct sonde_chart_opts *o, const struct sonde_points *g,
			 json_t *models, const char *color, int top, int *bottom)
{
	struct plot pl = { .x = 80, .y = top + 24, .w = CHART_W - 110, .h = PANEL_H };
	const char *unit = value_unit(p, o), *xu = axis_unit(p, o->per);
	char label[512], lab[160];
	size_t j, k;
	json_t *m;
	int rc = 0, ly;

	pl.x0 = pl.y0 = INFINITY;
	pl.x1 = pl.y1 = -INFINITY;
	for (j = 0; j < g->n; j++) {
		pl.x0 = fmin(pl.x0, g->x[j]);
		pl.x1 = fmax(pl.x1, g->x[j]);
		pl.y0 = fmin(pl.y0, g->y[j]);
		pl.y1 = fmax(pl.y1, g->y[j]);
	}
	pl.y0 = fmin(pl.y0, 0);
	nice_range(&pl.x0, &pl.x1);
	nice_range(&pl.y0, &pl.y1);
	/* the panel's heading: which resource and metric, how many points */
	snprintf(label, sizeof(label), "%s%s%s (%zu points)", g->uid, g->subtype ? " — " : "",
		 g->subtype ? g->subtype : "", g->n);
	rc |= sonde_strbuf__addf(out,
				 "<g class=\"panel\"><text x=\"%d\" y=\"%d\" "
				 "font-weight=\"bold\">",
				 pl.x, top + 14);
	rc |= sonde_view__escape(out, label);
	rc |= sonde_strbuf__adds(out, "</text>\n");
	rc |= axis(out, &pl, false, unit, axis_label(lab, sizeof(lab), p, o->of, o, unit));
	rc |= axis(out, &pl, true, xu, axis_label(lab, sizeof(lab), p, o->per, o, xu));
	if (g->n <= SCATTER_POINTS) {
		rc |= sonde_strbuf__addf(out, "<g class=\"points\" fill=\"%s\">", color);
		for (j = 0; j < g->n; j++)
			rc |= sonde_strbuf__addf(out,
						 "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" "
						 "fill-opacity=\"0.6\"/>",
						 px(&pl, g->x[j]), py(&pl, g->y[j]));
		rc |= sonde_strbuf__adds(out, "</g>\n");
	} else {
		/* a density grid: each cell once, darker for more points */
		size_t cells = (size_t)GRID_X * GRID_Y, c, maxc = 1;
		unsigned *count = calloc(cells, sizeof(*count));

		if (!count)
			return -ENOMEM;
		for (j = 0; j < g->n; j++) {
			double fx = (px(&pl, g->x[j]) - pl.x) / pl.w,
			       fy = (py(&pl, g->y[j]) - pl.y) / pl.h;
			size_t cx = (size_t)fmin(GRID_X - 1, fmax(0, fx * GRID_X)),
			       cy = (size_t)fmin(GRID_Y - 1, fmax(0, fy * GRID_Y));

			c = cy * GRID_X + cx;
			count[c]++;
			maxc = count[c] > maxc ? count[c] : maxc;
		}
		rc |= sonde_strbuf__addf(
			out,
			"<g class=\"density\" fill=\"%s\"><title>%zu points, drawn as "
			"a density grid</title>",
			color, g->n);
		for (c = 0; c < cells && !rc; c++)
			if (count[c])
				rc |= sonde_strbuf__addf(
					out,
					"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" "
					"height=\"%.2f\" "
					"fill-opacity=\"%.2f\"/>",
					pl.x + (double)(c % GRID_X) * pl.w / GRID_X,
					pl.y + (double)(c / GRID_X) * pl.h / GRID_Y,
					(double)pl.w / GRID_X, (double)pl.h / GRID_Y,
					0.25 + 0.75 * log1p(count[c]) / log1p((double)maxc));
		rc |= sonde_strbuf__adds(out, "</g>\n");
		free(count);
	}
	/* every model fitted to these points: a curve, and a legend line with its formula */
	ly = pl.y + pl.h + 52;
	json_array_foreach(models, k, m)
	{
		struct sonde_fit f;
		json_t *mx = json_object_get(m, "x"), *my = json_object_get(m, "y");
		bool best = json_is_true(json_object_get(m, "best")), fitted;
		size_t q;

		if (!model_of(m, g, o->of, o->per))
			continue;
		fitted = !sonde_fit__from_json(m, &f);
		model_text(label, sizeof(label), m, &f, fitted, unit, xu);
		rc |= sonde_strbuf__addf(out,
					 "<g class=\"model%s\"><path fill=\"none\" stroke=\"%s\" "
					 "stroke-width=\"%s\" stroke-dasharray=\"%s\" d=\"",
					 best ? " best" : "", color, best ? "2.5" : "1.2",
					 best ? "none" : "4 3");
		if (fitted) {
			for (q = 0; q <= 100; q++) {
				double x = f.x_start + (f.x_end - f.x_start) * (double)q / 100,
				       y = sonde_fit__eval(&f, x);

				if (isfinite(y))
					rc |= sonde_strbuf__addf(
						out, "%s%.1f,%.1f ", q ? "L" : "M", px(&pl, x),
						py(&pl, fmax(pl.y0, fmin(pl.y1, y))));
			}
		} else {
			for (q = 0; q < json_array_size(mx) && q < json_array_size(my); q++)
				rc |= sonde_strbuf__addf(
					out, "%s%.1f,%.1f ", q ? "L" : "M",
					px(&pl, json_number_value(json_array_get(mx, q))),
					py(&pl, json_number_value(json_array_get(my, q))));
		}
		rc |= sonde_strbuf__addf(
			out,
			"\"/><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			"stroke=\"%s\" stroke-width=\"%s\" stroke-dasharray=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\"%s>%s",
			pl.x, ly - 4, pl.x + 22, ly - 4, color, best ? "2.5" : "1.2",
			best ? "none" : "4 3", pl.x + 28, ly, best ? " font-weight=\"bold\"" : "",
			best ? "best, " : "");
		rc |= sonde_view__escape(out, label);
		rc |= sonde_strbuf__adds(out, "</text></g>\n");
		ly += 16;
	}
	rc |= sonde_strbuf__adds(out, "</g>\n");
	*bottom = ly + 8;
	return rc;
}

int sonde_view__scatter(const struct sonde_profile *p, const struct sonde_chart_opts *o,
			struct sonde_strbuf *out)
{
	struct sonde_points *g;
	size_t ng, i, total = 0, shown;
	json_t *models = sonde_profile__part(p, "models");
	const char *unit = value_unit(p, o);
	struct sonde_strbuf body = SONDE_STRBUF_INIT;
	char title[256];
	int rc = sonde_points__collect(p, o->of, o->per, &g, &ng), y = 40, bottom = 0;

	if (rc)
		return rc;
	if (o->type) { /* keep the groups of that type */
		size_t kept = 0;

		for (i = 0; i < ng; i++) {
			if (g[i].type && !strcmp(g[i].type, o->type)) {
				struct sonde_points t = g[kept];

				g[kept++] = g[i];
				g[i] = t;
			}
		}
		for (i = kept; i < ng; i++) {
			free(g[i].uid);
			free(g[i].type);
			free(g[i].subtype);
			free(g[i].x);
			free(g[i].y);
		}
		ng = kept;
	}
	if (ng) /* qsort(NULL, 0) is undefined */
		qsort(g, ng, sizeof(*g), by_points);
	for (i = 0; i < ng; i++)
		total += g[i].n;
	if (!total) {
		sonde_points__free(g, ng);
		return -EINVAL;
	}
	/* one panel per resource and metric: their units and scales differ */
	shown = ng > MAX_PANELS ? MAX_PANELS : ng;
	for (i = 0; i < shown && !rc; i++) {
		if (!g[i].n)
			continue;
		rc |= scatter_panel(&body, p, o, &g[i], models, palette[i % MAX_GROUPS], y,
				    &bottom);
		y = bottom + 12;
	}
	if (ng > shown && !rc) {
		rc |= sonde_strbuf__addf(&body,
					 "<text x=\"80\" y=\"%d\">%zu more resources not drawn "
					 "(choose one with --type or sonde show ... scatter on a "
					 "profile of fewer)</text>\n",
					 y + 4, ng - shown);
		y += 20;
	}
	snprintf(title, sizeof(title), "%s%s%s%s%s%s against %s", o->title ? o->title : "",
		 o->title ? ": " : "", field_label(p, o->of, o), self_scaled(unit) ? "" : " (",
		 self_scaled(unit) ? "" : unit, self_scaled(unit) ? "" : ")",
		 field_label(p, o->per, o));
	rc |= svg_open(out, CHART_W, y + 10, title, "scatter");
	rc |= sonde_strbuf__add(out, body.buf ? body.buf : "", body.len);
	rc |= sonde_strbuf__adds(out, "</svg>\n");
	sonde_strbuf__release(&body);
	sonde_points__free(g, ng);
	return rc < 0 ? rc : rc ? -ENOMEM : 0;
}
