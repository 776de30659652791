/*
 * cmd-show.c - `sonde show PROFILE [VIEW]`: print a profile. The table view
 * summarises every resource's amount (mean ± σ, median, min, max, 95 % CI,
 * outliers), in text, JSON, CSV or Markdown.
 */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "view.h"

const char *const cli_formats[] = { "text", "json", "csv", "markdown", NULL };

enum cli_format cli_format_of(const char *name)
{
	int i;

	for (i = 0; name && cli_formats[i]; i++)
		if (!strcmp(name, cli_formats[i]))
			return (enum cli_format)i;
	return FMT_TEXT;
}

/* Columns are counted in characters, not bytes ("µs"). */
static void cell(FILE *out, const char *s, int w, bool left)
{
	int n = 0, pad;
	const char *q;

	for (q = s; *q; q++)
		n += ((unsigned char)*q & 0xC0) != 0x80;
	pad = w > n ? w - n : 0;
	if (!left)
		fprintf(out, "%*s", pad, "");
	fputs(s, out);
	if (left)
		fprintf(out, "%*s", pad, "");
}

void cli_print_warnings(const struct sonde_profile *p, FILE *out, bool notes)
{
	json_t *w = json_object_get(sonde_profile__stats(p), "warnings"), *x, *y;
	const char *prefix = out == stderr ? "sonde: " : "";
	size_t i, k, n = json_array_size(w);
	bool *done;

	if (out == stderr && cli_quiet())
		return; /* -q: errors only (the profile keeps its warnings) */
	done = calloc(n ? n : 1, sizeof(*done));

	/* one line per kind of warning: a repeat names the other workloads it applies to */
	for (i = 0; done && i < n; i++) {
		const char *code, *fix;
		size_t more = 0;

		if (done[i])
			continue;
		x = json_array_get(w, i);
		code = json_string_value(json_object_get(x, "code"));
		fix = json_string_value(json_object_get(x, "fix"));
		fprintf(out, "%swarning: %s", prefix,
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
				fprintf(out, "%s%s", more ? ", " : "; also in workload ",
					wl ? wl : "?");
			more++;
		}
		if (more > 8)
			fprintf(out, " and %zu more", more - 8);
		fprintf(out, "\n  fix: %s\n", fix ? fix : "");
	}
	free(done);
	w = notes ? json_object_get(sonde_profile__stats(p), "notes") : NULL;
	json_array_foreach(w, i, x) if (json_is_string(x))
		fprintf(out, "%snote: %s\n", prefix, json_string_value(x));
}

int cli_show_table(const struct sonde_profile *p, enum cli_format fmt, FILE *out, bool notes)
{
	json_t *h = sonde_profile__header(p), *st = sonde_profile__stats(p);
	struct sonde_table_row *rows;
	size_t n, i;
	int rc = sonde_table__rows(p, &rows, &n);
	char a[40], b[40], c[40], d[40], e[40], f[40], g[40];
	int w = 26; /* the metric column: as wide as the longest label, up to 64 */

	if (rc)
		return rc;
	switch (fmt) {
	case FMT_JSON: {
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
			json_object_set_new(o, "mean", cli_json_number(r->s.mean));
			json_object_set_new(o, "stddev", cli_json_number(r->s.stddev));
			json_object_set_new(o, "median", cli_json_number(r->s.median));
			json_object_set_new(o, "min", cli_json_number(r->s.min));
			json_object_set_new(o, "max", cli_json_number(r->s.max));
			json_object_set_new(o, "ci95_low", cli_json_number(r->s.ci_low));
			json_object_set_new(o, "ci95_high", cli_json_number(r->s.ci_high));
			json_object_set_new(o, "mad", cli_json_number(r->s.mad));
			json_object_set_new(o, "outliers", json_integer((json_int_t)r->s.outliers));
			json_array_append_new(arr, o);
		}
		json_object_set(doc, "cmd", json_object_get(h, "cmd"));
		json_object_set(doc, "type", json_object_get(h, "type"));
		json_object_set_new(doc, "rows", arr);
		json_object_set(doc, "warnings", json_object_get(st, "warnings"));
		json_object_set(doc, "notes", json_object_get(st, "notes"));
		json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		fputc('\n', out);
		json_decref(doc);
		break;
	}
	case FMT_CSV:
		fprintf(out, "uid,type,subtype,region,workload,unit,n,mean,stddev,median,min,max,"
			     "ci95_low,ci95_high,outliers\n");
		for (i = 0; i < n; i++) {
			const struct sonde_table_row *r = &rows[i];
			struct sonde_strbuf uid = SONDE_STRBUF_INIT, reg = SONDE_STRBUF_INIT;

			cli_csv_quote(&uid, r->uid);
			if (r->region)
				cli_csv_quote(&reg, r->region);
			fprintf(out,
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
	case FMT_MARKDOWN:
	case FMT_TEXT: {
		bool md = fmt == FMT_MARKDOWN;
		json_t *runs = json_object_get(st, "runs");

		for (i = 0; i < n; i++) {
			int len = 0;

			for (const char *q = rows[i].label; *q; q++)
				len += ((unsigned char)*q & 0xC0) != 0x80;
			w = len > w ? (len > 64 ? 64 : len) : w;
		}
		if (!md) {
			/* rows without a uid of their own are the command's (uid = cmd) */
			fprintf(out, "uid %s  (%s", json_string_value(json_object_get(h, "cmd")),
				json_string_value(json_object_get(h, "type")));
			if (json_is_integer(runs))
				fprintf(out, ", %lld run%s", (long long)json_integer_value(runs),
					json_integer_value(runs) == 1 ? "" : "s");
			fprintf(out, ")\n\n");
			fputs("  ", out);
			cell(out, "metric", w + 1, true);
			cell(out, "unit", 9, true);
			cell(out, "mean ± σ", 23, false);
			cell(out, "median", 12, false);
			cell(out, "min", 12, false);
			cell(out, "max", 12, false);
			fputs("   ", out);
			cell(out, "95% CI of mean", 26, true);
			fputs("outliers\n", out);
		} else {
			fprintf(out, "| metric | unit | mean | σ | median | min | max | 95%% CI of "
				     "mean | "
				     "outliers |\n|---|---|---:|---:|---:|---:|---:|---|---:|\n");
		}
		for (i = 0; i < n; i++) {
			const struct sonde_table_row *r = &rows[i];
			char ms[96], ci[96];

			sonde_format__value(r->s.mean, r->unit, a, sizeof(a));
			sonde_format__value(r->s.stddev, r->unit, b, sizeof(b));
			sonde_format__value(r->s.median, r->unit, c, sizeof(c));
			sonde_format__value(r->s.min, r->unit, d, sizeof(d));
			sonde_format__value(r->s.max, r->unit, e, sizeof(e));
			sonde_format__value(r->s.ci_low, r->unit, f, sizeof(f));
			sonde_format__value(r->s.ci_high, r->unit, g, sizeof(g));
			if (isnan(r->s.ci_low))
				snprintf(ci, sizeof(ci), "-");
			else
				snprintf(ci, sizeof(ci), "[%s, %s]", f, g);
			if (md) {
				fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s | %zu |\n",
					r->label, r->unit ? r->unit : "-", a, b, c, d, e, ci,
					r->s.outliers);
				continue;
			}
			snprintf(ms, sizeof(ms), "%s ± %s", a, b);
			fputs("  ", out);
			cell(out, r->label, w, true);
			fputc(' ', out); /* the longest label still stands apart from its unit */
			cell(out, r->unit && *r->unit ? r->unit : "-", 9, true);
			cell(out, ms, 23, false);
			cell(out, c, 12, false);
			cell(out, d, 12, false);
			cell(out, e, 12, false);
			fputs("   ", out);
			cell(out, ci, 26, true);
			fprintf(out, "%zu\n", r->s.outliers);
		}
		if (!md) {
			if (!n)
				fprintf(out, "  (no measured values)\n");
			fputc('\n', out);
			cli_print_warnings(p, out, notes);
		}
		break;
	}
	}
	free(rows);
	return 0;
}

static const char *const flame_weights[] = { "bytes", "count", "time", "calls", NULL };

static bool is_drawn(const char *view)
{
	return !strcmp(view, "bars") || !strcmp(view, "flow") || !strcmp(view, "scatter") ||
	       !strcmp(view, "flamegraph") || !strcmp(view, "diff");
}

/* The table of a diff: inclusive weight per function, baseline and target. */
static int diff_table(const char *fb, const char *ft, const char *unit, unsigned top)
{
	json_t *w[2] = { json_object(), json_object() }, *v, *rows = json_array();
	const char *texts[2] = { fb, ft }, *k;
	size_t i;
	int s;

	for (s = 0; s < 2; s++) {
		char *copy = strdup(texts[s]), *line, *save = NULL;

		if (!copy)
			return -ENOMEM;
		for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char *sp = strrchr(line, ' '), *f, *fs = NULL;
			json_t *seen = json_object();
			double x;

			if (!sp)
				continue;
			*sp = 0;
			x = strtod(sp + 1, NULL);
			/* Inclusive: a function counts once per stack, however deep it recurses. */
			for (f = strtok_r(line, ";", &fs); f; f = strtok_r(NULL, ";", &fs)) {
				if (json_object_get(seen, f))
					continue;
				json_object_set_new(seen, f, json_true());
				v = json_object_get(w[s], f);
				json_object_set_new(w[s], f,
						    json_real((v ? json_real_value(v) : 0) + x));
			}
			json_decref(seen);
		}
		free(copy);
	}
	for (s = 0; s < 2; s++)
		json_object_foreach(w[s], k, v)
		{
			double b = json_real_value(json_object_get(w[0], k)),
			       t = json_real_value(json_object_get(w[1], k));

			if (s == 1 && json_object_get(w[0], k))
				continue;
			json_array_append_new(rows,
					      json_pack("{s:s, s:f, s:f, s:f, s:b, s:b}", "name", k,
							"b", b, "t", t, "d", fabs(t - b), "inb",
							json_object_get(w[0], k) != NULL, "int",
							json_object_get(w[1], k) != NULL));
		}
	/* Largest absolute change first (insertion sort on a small top list). */
	printf("  %-48s %12s %12s %9s\n", "function (inclusive)", "baseline", "target", "change");
	for (i = 0; i < (top ? top : 20) && json_array_size(rows); i++) {
		size_t j, best = 0;
		json_t *r;
		char a[40], b[40], ch[24] = "new";
		double bv, tv;

		for (j = 1; j < json_array_size(rows); j++)
			if (json_real_value(json_object_get(json_array_get(rows, j), "d")) >
			    json_real_value(json_object_get(json_array_get(rows, best), "d")))
				best = j;
		r = json_array_get(rows, best);
		bv = json_real_value(json_object_get(r, "b"));
		tv = json_real_value(json_object_get(r, "t"));
		sonde_format__value(bv, unit, a, sizeof(a));
		sonde_format__value(tv, unit, b, sizeof(b));
		if (!json_is_true(json_object_get(r, "int")))
			snprintf(ch, sizeof(ch), "gone");
		else if (json_is_true(json_object_get(r, "inb")) && bv != 0)
			snprintf(ch, sizeof(ch), "%+.1f%%", 100 * (tv - bv) / bv);
		printf("  %-48s %12s %12s %9s\n", json_string_value(json_object_get(r, "name")),
		       json_is_true(json_object_get(r, "inb")) ? a : "-",
		       json_is_true(json_object_get(r, "int")) ? b : "-", ch);
		json_array_remove(rows, best);
	}
	json_decref(rows);
	json_decref(w[0]);
	json_decref(w[1]);
	return 0;
}

/* The drawn views; returns the exit code. */
static int drawn(struct sonde_profile *p, const char *view, const char *name, const char *other,
		 struct chart_options *c, const char *weight, const char *out_file)
{
	struct sonde_strbuf svg = SONDE_STRBUF_INIT, fa = SONDE_STRBUF_INIT, fb = SONDE_STRBUF_INIT;
	const char *of, *per, *unit;
	int rc, code = EXIT_OK;

	sonde_postprocess__defaults(sonde_profile__type(p), &of, &per);
	if (!c->of)
		c->of = "amount";
	if (!strcmp(view, "bars")) {
		c->per = c->per ? c->per : "uid";
		rc = view_bars(p, c, &svg);
	} else if (!strcmp(view, "flow")) {
		c->per = c->per ? c->per : !strcmp(per, "structure-unit-size") ? "timestamp" : per;
		rc = view_flow(p, c, &svg);
	} else if (!strcmp(view, "scatter")) {
		c->per = c->per ? c->per : per;
		rc = view_scatter(p, c, &svg);
	} else {
		const char *def = cli_flame_weight(p, &unit);

		weight = weight ? weight : def;
		if (!strcmp(weight, "count") || !strcmp(weight, "calls"))
			unit = "";
		rc = cli_folded(p, weight, &fa);
		if (rc == -ENOTSUP) {
			cli_error("show",
				  "'%s' has no stacks to draw (a %s profile; flame graphs "
				  "need a memory or trace profile)",
				  name, sonde_profile__type(p));
			code = EXIT_UNSUPPORTED;
			goto out;
		}
		if (!rc && other) {
			int oc = EXIT_OK;
			struct sonde_profile *q = cli_load_profile("show", other, &oc);

			if (!q) {
				code = oc;
				goto out;
			}
			rc = cli_folded(q, weight, &fb);
			sonde_profile__free(q);
			if (rc == -ENOTSUP) {
				cli_error("show", "'%s' has no stacks to compare", other);
				code = EXIT_UNSUPPORTED;
				goto out;
			}
			if (!rc)
				rc = diff_table(fa.buf ? fa.buf : "", fb.buf ? fb.buf : "", unit,
						c->top);
			if (!rc && out_file)
				rc = view_flame(fb.buf ? fb.buf : "", fa.buf ? fa.buf : "", weight,
						unit, &svg);
		} else if (!rc) {
			rc = view_flame(fa.buf ? fa.buf : "", NULL, weight, unit, &svg);
		}
	}
	if (rc == -EINVAL) {
		cli_error("show",
			  "'%s': nothing to draw: no resource has numeric '%s' values%s%s%s "
			  "(choose with --of, --per, --type)",
			  name, c->of, c->per ? " and a '" : "", c->per ? c->per : "",
			  c->per ? "' field" : "");
		code = EXIT_UNSUPPORTED;
	} else if (rc) {
		cli_error("show", "out of memory");
		code = EXIT_FAILURE_;
	} else if (svg.len && !out_file && isatty(1)) {
		/* SVG is no text for a terminal: a file named after the profile and the view */
		char *copy = strdup(name), *base = copy ? basename(copy) : NULL, *dot, *file = NULL;

		if (base && (dot = strstr(base, ".json")) != NULL)
			*dot = '\0';
		if (!base || asprintf(&file, "%s-%s.svg", base, view) < 0) {
			cli_error("show", "out of memory");
			code = EXIT_FAILURE_;
		} else if ((rc = cli_write_output(file, svg.buf, svg.len))) {
			cli_error("show", "cannot write '%s': %s", file, strerror(-rc));
			code = EXIT_FAILURE_;
		} else {
			fprintf(stderr,
				"%s written (an SVG: open it in a browser; -o names the file)\n",
				file);
		}
		free(file);
		free(copy);
	} else if (svg.len && (rc = cli_write_output(out_file, svg.buf, svg.len))) {
		cli_error("show", "cannot write '%s': %s", out_file, strerror(-rc));
		code = EXIT_FAILURE_;
	}
out:
	sonde_strbuf__release(&svg);
	sonde_strbuf__release(&fa);
	sonde_strbuf__release(&fb);
	return code;
}

static const char usage[] =
	"usage: sonde show PROFILE [VIEW [OTHER]] [options]\n"
	"\n"
	"Show a profile. PROFILE is a path, N@p (the Nth pending profile, see\n"
	"'sonde status') or N@i (the Nth profile registered for HEAD).\n"
	"VIEW: table (default): summary statistics of every resource;\n"
	"      memory: totals, top sites, leaks with their stacks, sizes and the\n"
	"      heap over time (memory profiles);\n"
	"      report: per function calls, total, self, average, min and max time\n"
	"      (trace profiles; --sort KEY);\n"
	"      graph: the calling contexts with inclusive and exclusive time; as\n"
	"      json, csv or markdown the caller -> callee edges (trace profiles).\n"
	"Drawn views write a standalone SVG to -o FILE (default: stdout):\n"
	"      bars: --func of --of per --per, grouped (or --stacked) --by a field;\n"
	"      flow: the same over a numeric --per (snapshot, timestamp, size);\n"
	"      scatter: --of against --per per uid, with every fitted model;\n"
	"      flamegraph: the stacks of a memory (bytes or count) or trace (time or\n"
	"      calls) profile: click to zoom, search, tooltips;\n"
	"      diff OTHER: OTHER against PROFILE: a differential flame graph (-o) and a\n"
	"      table of the functions that changed most.";

int cmd_show(int argc, char **argv)
{
	const char *format = "text", *sort = "total", *out_file = NULL, *func = "sum",
		   *weight = NULL;
	struct chart_options c = { 0 };
	long long top = 20;
	struct sonde_option opts[] = {
		{ SONDE_OPT_CHOICE, 'f', "format", &format, NULL, "output format", 0, 0,
		  cli_formats },
		{ SONDE_OPT_INT, 'n', "top", &top, "N",
		  "memory: N sites and leaks; report: N functions; graph: N callees per "
		  "context (20; 0: all)",
		  0, 1e9 },
		{ SONDE_OPT_CHOICE, 's', "sort", &sort, "KEY",
		  "report: sort by total, self, calls, avg, min, max or name", 0, 0,
		  cli_trace_sort_keys },
		{ SONDE_OPT_STRING, 'o', "output", &out_file, "FILE",
		  "drawn views: write the SVG to FILE" },
		{ SONDE_OPT_STRING, 0, "of", &c.of, "COLUMN", "charts: the value drawn (amount)" },
		{ SONDE_OPT_STRING, 0, "per", &c.per, "FIELD",
		  "charts: the category or x axis (bars: uid; flow: snapshot or timestamp; "
		  "scatter: structure-unit-size)" },
		{ SONDE_OPT_STRING, 0, "by", &c.by, "FIELD", "charts: group by this field" },
		{ SONDE_OPT_STRING, 0, "type", &c.type, "TYPE",
		  "charts: only resources of this type (units do not mix)" },
		{ SONDE_OPT_CHOICE, 0, "func", &func, NULL, "charts: sum, mean, count, min or max",
		  0, 0, view_aggs },
		{ SONDE_OPT_FLAG, 0, "stacked", &c.stacked, NULL, "charts: stack the groups" },
		{ SONDE_OPT_CHOICE, 'w', "weight", &weight, NULL,
		  "flame graphs: bytes or count (memory), time or calls (trace)", 0, 0,
		  flame_weights },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_profile *p;
	const char *view;
	int first, code = EXIT_OK;

	first = cli_parse("show", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	argc -= 1 + first;
	if (argc < 1)
		return cli_usage("show", "which profile? give a path, N@p or N@i");
	view = argc > 1 ? argv[1] : "table";
	if (argc > (strcmp(view, "diff") ? 2 : 3))
		return cli_usage("show", "too many arguments");
	if (!strcmp(view, "diff") && argc < 3)
		return cli_usage("show", "diff: which profile to compare with PROFILE?");
	if (strcmp(view, "table") && strcmp(view, "memory") && strcmp(view, "report") &&
	    strcmp(view, "graph") && strcmp(view, "counters") && !is_drawn(view))
		return cli_usage("show",
				 "unknown view '%s' (views: table, memory, report, graph, "
				 "counters, bars, flow, scatter, flamegraph, diff)",
				 view);
	p = cli_load_profile("show", argv[0], &code);
	if (!p)
		return code;
	if (is_drawn(view)) {
		for (c.func = 0; strcmp(view_aggs[c.func], func); c.func++)
			;
		c.top = (unsigned)top;
		code = drawn(p, view, argv[0], argc > 2 ? argv[2] : NULL, &c, weight, out_file);
	} else if (!strcmp(view, "counters")) {
		if (cli_show_counters(p, cli_format_of(format), stdout) == -EINVAL) {
			cli_error(
				"show",
				"'%s' is a %s profile: the counters view needs a counters profile "
				"(sonde collect counters)",
				argv[0], sonde_profile__type(p));
			code = EXIT_UNSUPPORTED;
		}
	} else if (strcmp(view, "table")) {
		bool mem = !strcmp(view, "memory");
		int rc = mem ? cli_show_memory(p, cli_format_of(format), (unsigned)top, stdout)
			 : !strcmp(view, "report")
				 ? cli_show_report(p, cli_format_of(format), sort, (unsigned)top,
						   stdout)
				 : cli_show_graph(p, cli_format_of(format), (unsigned)top, stdout);

		if (rc == -EINVAL) {
			cli_error("show",
				  "'%s' is a %s profile: the %s view needs a %s profile "
				  "(sonde collect %s)",
				  argv[0], sonde_profile__type(p), view, mem ? "memory" : "trace",
				  mem ? "memory" : "trace");
			code = EXIT_UNSUPPORTED;
		} else if (rc) {
			cli_error("show", "out of memory");
			code = EXIT_FAILURE_;
		}
	} else if (cli_show_table(p, cli_format_of(format), stdout, true)) {
		cli_error("show", "out of memory");
		code = EXIT_FAILURE_;
	}
	sonde_profile__free(p);
	return code;
}
