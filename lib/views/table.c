/*
 * table.c - the summary table of a profile (every resource's amount: mean ± σ,
 * median, min, max, 95 % CI, outliers) in text, JSON, CSV or Markdown, and the
 * profile's warnings.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include <sonde/table.h>
#include "views.h"

const char *const sonde_view__formats[] = { "text", "json", "csv", "markdown", NULL };

enum sonde_view_format sonde_view__format_of(const char *name)
{
	int i;

	for (i = 0; name && sonde_view__formats[i]; i++)
		if (!strcmp(name, sonde_view__formats[i]))
			return (enum sonde_view_format)i;
	return SONDE_VIEW_TEXT;
}

/* buf = a b c d e, cut to fit */
static void join(char *buf, size_t len, const char *a, const char *b, const char *c, const char *d,
		 const char *e)
{
	const char *part[] = { a, b, c, d, e };
	size_t i, at = 0;

	for (i = 0; i < 5; i++) {
		size_t n = strlen(part[i]);

		if (n > len - 1 - at)
			n = len - 1 - at;
		memcpy(buf + at, part[i], n);
		at += n;
	}
	buf[at] = 0;
}

/* Columns are counted in characters, not bytes ("µs"). */
static int cell(struct sonde_strbuf *out, const char *s, int w, bool left)
{
	/* a right-aligned value wider than its column still stands apart from the last */
	int err = !left && (int)strlen(s) >= w ? sonde_strbuf__addch(out, ' ') : 0;

	return err | sonde_strbuf__addf(out, "%*s", sonde_strbuf__cols(s, left ? -w : w), s);
}

int sonde_view__warnings(const struct sonde_profile *p, const char *prefix, bool notes,
			 struct sonde_strbuf *out)
{
	json_t *w = json_object_get(sonde_profile__stats(p), "warnings"), *x, *y;
	size_t i, k, n = json_array_size(w);
	bool *done = calloc(n ? n : 1, sizeof(*done));
	int err = 0;

	if (!done)
		return -ENOMEM;

	/* one line per kind of warning: a repeat names the other workloads it applies to */
	for (i = 0; i < n; i++) {
		const char *code, *fix;
		size_t more = 0;

		if (done[i])
			continue;
		x = json_array_get(w, i);
		code = json_string_value(json_object_get(x, "code"));
		fix = json_string_value(json_object_get(x, "fix"));
		err |= sonde_strbuf__addf(out, "%swarning: %s", prefix,
					  json_string_value(json_object_get(x, "message")));
		for (k = i + 1; k < n; k++) {
			const char *wl;

			y = json_array_get(w, k);
			if (done[k] || !code ||
			    strcmp(code, json_string_value(json_object_get(y, "code")) ?: "") ||
			    strcmp(fix ?: "", json_string_value(json_object_get(y, "fix")) ?: ""))
				continue;
			done[k] = true;
			wl = json_string_value(json_object_get(y, "workload"));
			if (more < 8)
				err |= sonde_strbuf__addf(out, "%s%s",
							  more ? ", " : "; also in workload ",
							  wl ? wl : "?");
			more++;
		}
		if (more > 8)
			err |= sonde_strbuf__addf(out, " and %zu more", more - 8);
		err |= sonde_strbuf__addf(out, "\n  fix: %s\n", fix ? fix : "");
	}
	free(done);
	w = notes ? json_object_get(sonde_profile__stats(p), "notes") : NULL;
	json_array_foreach(w, i, x) if (json_is_string(x)) err |=
		sonde_strbuf__addf(out, "%snote: %s\n", prefix, json_string_value(x));
	return err ? -ENOMEM : 0;
}

/*
 * A value in its unit; times in ns in the unit the time collector was asked for,
 * as a bare number (the unit column says which).
 */
static void show(double v, const char *unit, const char *time_unit, char *buf, size_t len)
{
	if (time_unit && unit && !strcmp(unit, "ns")) {
		char *sp;

		sonde_format__duration_in(v, time_unit, buf, len);
		if ((sp = strrchr(buf, ' ')))
			*sp = '\0';
	} else {
		sonde_format__value(v, unit, buf, len);
	}
}

/*
 * What the unit column says: the unit of the numbers beside it. Times and
 * sizes carry their own (1.714 ms, 2.4 KiB, scaled to fit each): there it
 * names the quantity; with --time-unit, the unit the times are printed in.
 */
static const char *unit_shown(const char *unit, const char *time_unit)
{
	if (!unit || !*unit)
		return "-";
	if (!strcmp(unit, "ns"))
		return !time_unit ? "time" : !strcmp(time_unit, "us") ? "µs" : time_unit;
	if (!strcmp(unit, "B"))
		return "memory";
	return unit;
}

int sonde_view__table(const struct sonde_profile *p, enum sonde_view_format fmt,
		      struct sonde_strbuf *out)
{
	json_t *h = sonde_profile__header(p), *st = sonde_profile__stats(p);
	const char *tu = json_string_value(json_object_get(
		json_object_get(sonde_profile__collector_info(p), "params"), "time-unit"));
	struct sonde_table_row *rows;
	size_t n, i;
	int rc = sonde_table__rows(p, &rows, &n);
	char a[40], b[40], c[40], d[40], e[40], f[40], g[40];
	int w = 26; /* the metric column: as wide as the longest label, up to 64 */
	int err = 0;

	if (rc)
		return rc;
	switch (fmt) {
	case SONDE_VIEW_JSON: {
		json_t *doc = json_object(), *arr = json_array();

		for (i = 0; i < n; i++) {
			const struct sonde_table_row *r = &rows[i];
			json_t *o = json_object();

			json_object_set_new(o, "name", json_string(r->label));
			json_object_set_new(o, "uid", json_string(r->uid ? r->uid : ""));
			json_object_set_new(o, "type",
					    r->type ? json_string(r->type) : json_null());
			json_object_set_new(o, "subtype",
					    r->subtype ? json_string(r->subtype) : json_null());
			json_object_set_new(o, "region",
					    r->region ? json_string(r->region) : json_null());
			json_object_set_new(o, "workload",
					    r->workload ? json_string(r->workload) : json_null());
			json_object_set_new(o, "unit",
					    r->unit ? json_string(r->unit) : json_null());
			json_object_set_new(o, "n", json_integer((json_int_t)r->s.n));
			json_object_set_new(o, "mean", sonde_view__json_number(r->s.mean));
			json_object_set_new(o, "stddev", sonde_view__json_number(r->s.stddev));
			json_object_set_new(o, "median", sonde_view__json_number(r->s.median));
			json_object_set_new(o, "min", sonde_view__json_number(r->s.min));
			json_object_set_new(o, "max", sonde_view__json_number(r->s.max));
			json_object_set_new(o, "ci95_low", sonde_view__json_number(r->s.ci_low));
			json_object_set_new(o, "ci95_high", sonde_view__json_number(r->s.ci_high));
			json_object_set_new(o, "mad", sonde_view__json_number(r->s.mad));
			json_object_set_new(o, "outliers", json_integer((json_int_t)r->s.outliers));
			json_array_append_new(arr, o);
		}
		json_object_set(doc, "cmd", json_object_get(h, "cmd"));
		json_object_set(doc, "type", json_object_get(h, "type"));
		json_object_set_new(doc, "rows", arr);
		json_object_set(doc, "warnings", json_object_get(st, "warnings"));
		json_object_set(doc, "notes", json_object_get(st, "notes"));
		err |= sonde_view__json(out, doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		json_decref(doc);
		break;
	}
	case SONDE_VIEW_CSV:
		err |= sonde_strbuf__addf(
			out, "uid,type,subtype,region,workload,unit,n,mean,stddev,median,min,max,"
			     "ci95_low,ci95_high,outliers\n");
		for (i = 0; i < n; i++) {
			const struct sonde_table_row *r = &rows[i];
			struct sonde_strbuf uid = SONDE_STRBUF_INIT, reg = SONDE_STRBUF_INIT;

			sonde_view__csv_quote(&uid, r->uid);
			if (r->region)
				sonde_view__csv_quote(&reg, r->region);
			err |= sonde_strbuf__addf(
				out,
				"%s,%s,%s,%s,%s,%s,%zu,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%"
				"zu\n",
				uid.buf ? uid.buf : "\"\"", r->type ? r->type : "",
				r->subtype ? r->subtype : "", reg.buf ? reg.buf : "",
				r->workload ? r->workload : "", r->unit ? r->unit : "", r->s.n,
				r->s.mean, r->s.stddev, r->s.median, r->s.min, r->s.max,
				r->s.ci_low, r->s.ci_high, r->s.outliers);
			sonde_strbuf__release(&uid);
			sonde_strbuf__release(&reg);
		}
		break;
	case SONDE_VIEW_MARKDOWN:
	case SONDE_VIEW_TEXT: {
		bool md = fmt == SONDE_VIEW_MARKDOWN;
		json_t *runs = json_object_get(st, "runs");

		for (i = 0; i < n; i++) {
			int len = 0;

			for (const char *q = rows[i].label; *q; q++)
				len += ((unsigned char)*q & 0xC0) != 0x80;
			w = len > w ? (len > 64 ? 64 : len) : w;
		}
		if (!md) {
			/* rows without a uid of their own are the command's (uid = cmd) */
			err |= sonde_strbuf__addf(out, "uid %s  (%s",
						  json_string_value(json_object_get(h, "cmd")),
						  json_string_value(json_object_get(h, "type")));
			if (json_is_integer(runs))
				err |= sonde_strbuf__addf(out, ", %lld run%s",
							  (long long)json_integer_value(runs),
							  json_integer_value(runs) == 1 ? "" : "s");
			err |= sonde_strbuf__addf(out, ")\n\n");
			err |= sonde_strbuf__adds(out, "  ");
			err |= cell(out, "metric", w + 1, true);
			err |= cell(out, "unit", 9, true);
			err |= cell(out, "mean ± σ", 23, false);
			err |= cell(out, "median", 12, false);
			err |= cell(out, "min", 12, false);
			err |= cell(out, "max", 12, false);
			err |= sonde_strbuf__adds(out, "   ");
			err |= cell(out, "95% CI of mean", 26, true);
			err |= sonde_strbuf__adds(out, "outliers\n");
		} else {
			err |= sonde_strbuf__addf(
				out, "| metric | unit | mean | σ | median | min | max | 95%% CI of "
				     "mean | "
				     "outliers |\n|---|---|---:|---:|---:|---:|---:|---|---:|\n");
		}
		for (i = 0; i < n; i++) {
			const struct sonde_table_row *r = &rows[i];
			char ms[96], ci[96];

			show(r->s.mean, r->unit, tu, a, sizeof(a));
			show(r->s.stddev, r->unit, tu, b, sizeof(b));
			show(r->s.median, r->unit, tu, c, sizeof(c));
			show(r->s.min, r->unit, tu, d, sizeof(d));
			show(r->s.max, r->unit, tu, e, sizeof(e));
			show(r->s.ci_low, r->unit, tu, f, sizeof(f));
			show(r->s.ci_high, r->unit, tu, g, sizeof(g));
			if (isnan(r->s.ci_low))
				strcpy(ci, "-");
			else
				join(ci, sizeof(ci), "[", f, ", ", g, "]");
			if (md) {
				err |= sonde_strbuf__addf(
					out, "| %s | %s | %s | %s | %s | %s | %s | %s | %zu |\n",
					r->label, unit_shown(r->unit, tu), a, b, c, d, e, ci,
					r->s.outliers);
				continue;
			}
			join(ms, sizeof(ms), "", a, " ± ", b, "");
			err |= sonde_strbuf__adds(out, "  ");
			err |= cell(out, r->label, w, true);
			err |= sonde_strbuf__addch(
				out, ' '); /* the longest label still stands apart from its unit */
			err |= cell(out, unit_shown(r->unit, tu), 9, true);
			err |= cell(out, ms, 23, false);
			err |= cell(out, c, 12, false);
			err |= cell(out, d, 12, false);
			err |= cell(out, e, 12, false);
			err |= sonde_strbuf__adds(out, "   ");
			err |= cell(out, ci, 26, true);
			err |= sonde_strbuf__adds(out, sonde_format__fixed((double)r->s.outliers, 0,
									   "\n", ms, sizeof(ms)));
		}
		if (!md) {
			if (!n)
				err |= sonde_strbuf__addf(out, "  (no measured values)\n");
			err |= sonde_strbuf__addch(out, '\n');
		}
		break;
	}
	}
	free(rows);
	return err ? -ENOMEM : 0;
}

int sonde_view__csv_quote(struct sonde_strbuf *sb, const char *s)
{
	int err = sonde_strbuf__addch(sb, '"');

	for (; s && *s; s++)
		err |= *s == '"' ? sonde_strbuf__adds(sb, "\"\"") : sonde_strbuf__addch(sb, *s);
	return err | sonde_strbuf__addch(sb, '"');
}

json_t *sonde_view__json_number(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static int add_json(const char *buf, size_t size, void *data)
{
	return sonde_strbuf__add(data, buf, size) ? -1 : 0;
}

int sonde_view__json(struct sonde_strbuf *out, json_t *doc, size_t flags)
{
	if (json_dump_callback(doc, add_json, out, flags))
		return -ENOMEM;
	return sonde_strbuf__addch(out, '\n');
}
