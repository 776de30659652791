/*
 * cmd-show.c - `sonde show PROFILE [VIEW]`: print a profile. The table view
 * summarises every resource's amount (mean ± σ, median, min, max, 95 % CI,
 * outliers), in text, JSON, CSV or Markdown.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

const char *const cli_formats[] = { "text", "json", "csv", "markdown", NULL };

enum cli_format cli_format_of(const char *name)
{
	int i;

	for (i = 0; name && cli_formats[i]; i++)
		if (!strcmp(name, cli_formats[i]))
			return (enum cli_format)i;
	return FMT_TEXT;
}

static const char *label(const struct sonde_table_row *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", r->subtype ? r->subtype : (r->type ? r->type : "amount"),
		 r->workload ? " @" : "", r->workload ? r->workload : "");
	return buf;
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

static json_t *num(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static void print_warnings(const struct sonde_profile *p, FILE *out)
{
	json_t *w = json_object_get(sonde_profile__stats(p), "warnings"), *x;
	size_t i;

	json_array_foreach(w, i, x)
	{
		fprintf(out, "warning: %s\n", json_string_value(json_object_get(x, "message")));
		fprintf(out, "  fix: %s\n", json_string_value(json_object_get(x, "fix")));
	}
}

int cli_show_table(const struct sonde_profile *p, enum cli_format fmt, FILE *out)
{
	json_t *h = sonde_profile__header(p), *st = sonde_profile__stats(p);
	struct sonde_table_row *rows;
	size_t n, i;
	int rc = sonde_table__rows(p, &rows, &n);
	char a[40], b[40], c[40], d[40], e[40], f[40], g[40], lb[160];

	if (rc)
		return rc;
	switch (fmt) {
	case FMT_JSON: {
		json_t *doc = json_object(), *arr = json_array();

		for (i = 0; i < n; i++) {
			const struct sonde_table_row *r = &rows[i];
			json_t *o = json_object();

			json_object_set_new(o, "uid", json_string(r->uid ? r->uid : ""));
			json_object_set_new(o, "type",
					    r->type ? json_string(r->type) : json_null());
			json_object_set_new(o, "subtype",
					    r->subtype ? json_string(r->subtype) : json_null());
			json_object_set_new(o, "workload",
					    r->workload ? json_string(r->workload) : json_null());
			json_object_set_new(o, "unit",
					    r->unit ? json_string(r->unit) : json_null());
			json_object_set_new(o, "n", json_integer((json_int_t)r->s.n));
			json_object_set_new(o, "mean", num(r->s.mean));
			json_object_set_new(o, "stddev", num(r->s.stddev));
			json_object_set_new(o, "median", num(r->s.median));
			json_object_set_new(o, "min", num(r->s.min));
			json_object_set_new(o, "max", num(r->s.max));
			json_object_set_new(o, "ci95_low", num(r->s.ci_low));
			json_object_set_new(o, "ci95_high", num(r->s.ci_high));
			json_object_set_new(o, "mad", num(r->s.mad));
			json_object_set_new(o, "outliers", json_integer((json_int_t)r->s.outliers));
			json_array_append_new(arr, o);
		}
		json_object_set(doc, "cmd", json_object_get(h, "cmd"));
		json_object_set(doc, "type", json_object_get(h, "type"));
		json_object_set_new(doc, "rows", arr);
		json_object_set(doc, "warnings", json_object_get(st, "warnings"));
		json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		fputc('\n', out);
		json_decref(doc);
		break;
	}
	case FMT_CSV:
		fprintf(out, "uid,type,subtype,workload,unit,n,mean,stddev,median,min,max,ci95_low,"
			     "ci95_high,outliers\n");
		for (i = 0; i < n; i++) {
			const struct sonde_table_row *r = &rows[i];
			struct sonde_strbuf uid = SONDE_STRBUF_INIT;

			cli_csv_quote(&uid, r->uid);
			fprintf(out,
				"%s,%s,%s,%s,%s,%zu,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%"
				"zu\n",
				uid.buf ? uid.buf : "\"\"", r->type ? r->type : "",
				r->subtype ? r->subtype : "", r->workload ? r->workload : "",
				r->unit ? r->unit : "", r->s.n, r->s.mean, r->s.stddev, r->s.median,
				r->s.min, r->s.max, r->s.ci_low, r->s.ci_high, r->s.outliers);
			sonde_strbuf__release(&uid);
		}
		break;
	case FMT_MARKDOWN:
	case FMT_TEXT: {
		bool md = fmt == FMT_MARKDOWN;
		json_t *runs = json_object_get(st, "runs");

		if (!md) {
			fprintf(out, "%s  (%s", json_string_value(json_object_get(h, "cmd")),
				json_string_value(json_object_get(h, "type")));
			if (json_is_integer(runs))
				fprintf(out, ", %lld runs", (long long)json_integer_value(runs));
			fprintf(out, ")\n\n");
			fputs("  ", out);
			cell(out, "metric", 26, true);
			cell(out, "mean ± σ", 23, false);
			cell(out, "median", 12, false);
			cell(out, "min", 12, false);
			cell(out, "max", 12, false);
			fputs("   ", out);
			cell(out, "95% CI of mean", 26, true);
			fputs("outliers\n", out);
		} else {
			fprintf(out, "| metric | mean | σ | median | min | max | 95%% CI of mean | "
				     "outliers |\n|---|---:|---:|---:|---:|---:|---|---:|\n");
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
			label(r, lb, sizeof(lb));
			if (isnan(r->s.ci_low))
				snprintf(ci, sizeof(ci), "-");
			else
				snprintf(ci, sizeof(ci), "[%s, %s]", f, g);
			if (md) {
				fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %zu |\n", lb, a,
					b, c, d, e, ci, r->s.outliers);
				continue;
			}
			snprintf(ms, sizeof(ms), "%s ± %s", a, b);
			fputs("  ", out);
			cell(out, lb, 26, true);
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
			print_warnings(p, out);
		}
		break;
	}
	}
	free(rows);
	return 0;
}

static const char usage[] =
	"usage: sonde show PROFILE [VIEW] [--format text|json|csv|markdown]\n"
	"\n"
	"Show a profile. PROFILE is a path, N@p (the Nth pending profile, see\n"
	"'sonde status') or N@i (the Nth profile registered for HEAD).\n"
	"VIEW: table (default): summary statistics of every resource;\n"
	"      memory: totals, top sites, leaks with their stacks, sizes and the\n"
	"      heap over time (memory profiles);\n"
	"      report: per function calls, total, self, average, min and max time\n"
	"      (trace profiles; --sort KEY);\n"
	"      graph: the calling contexts with inclusive and exclusive time; as\n"
	"      json, csv or markdown the caller -> callee edges (trace profiles).";

int cmd_show(int argc, char **argv)
{
	const char *format = "text", *sort = "total";
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
	if (argc > 2)
		return cli_usage("show", "too many arguments");
	view = argc > 1 ? argv[1] : "table";
	if (strcmp(view, "table") && strcmp(view, "memory") && strcmp(view, "report") &&
	    strcmp(view, "graph") && strcmp(view, "counters"))
		return cli_usage(
			"show", "unknown view '%s' (views: table, memory, report, graph, counters)",
			view);
	p = cli_load_profile("show", argv[0], &code);
	if (!p)
		return code;
	if (!strcmp(view, "counters")) {
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
	} else if (cli_show_table(p, cli_format_of(format), stdout)) {
		cli_error("show", "out of memory");
		code = EXIT_FAILURE_;
	}
	sonde_profile__free(p);
	return code;
}
