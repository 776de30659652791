/*
 * cmd-show.c - `sonde show PROFILE [VIEW]`: print a profile. The table view
 * summarises every resource's amount (mean ± σ, median, min, max, 95 % CI,
 * outliers), in text, JSON, CSV or Markdown.
 */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

static const char *const flame_weights[] = { "bytes", "count", "time", "calls", "samples", NULL };

/* The drawn views; returns the exit code. */
static int drawn(struct sonde_profile *p, const char *view, const char *name, const char *other,
		 struct sonde_chart_opts *c, const char *weight, const char *out_file)
{
	struct sonde_strbuf svg = SONDE_STRBUF_INIT, fa = SONDE_STRBUF_INIT, fb = SONDE_STRBUF_INIT;
	const char *of, *per, *unit;
	int rc, code = EXIT_OK;

	sonde_postprocess__defaults(sonde_profile__type(p), &of, &per);
	if (!c->of)
		c->of = "amount";
	if (!strcmp(view, "bars")) {
		c->per = c->per ? c->per : "uid";
		rc = sonde_view__bars(p, c, &svg);
	} else if (!strcmp(view, "flow")) {
		c->per = c->per ? c->per : !strcmp(per, "structure-unit-size") ? "timestamp" : per;
		rc = sonde_view__flow(p, c, &svg);
	} else if (!strcmp(view, "scatter")) {
		c->per = c->per ? c->per : per;
		rc = sonde_view__scatter(p, c, &svg);
	} else {
		const char *def = sonde_view__flame_weight(p, &unit);

		weight = weight ? weight : def;
		if (!strcmp(weight, "count") || !strcmp(weight, "calls") ||
		    !strcmp(weight, "samples"))
			unit = "";
		rc = sonde_view__folded(p, weight, &fa);
		if (rc == -ENOTSUP) {
			char why[160];

			cli_error("show", "'%s' has no stacks to draw: %s", name,
				  cli_nothing_because(p, "stacks", why, sizeof(why)));
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
			rc = sonde_view__folded(q, weight, &fb);
			sonde_profile__free(q);
			if (rc == -ENOTSUP) {
				cli_error("show", "'%s' has no stacks to compare", other);
				code = EXIT_UNSUPPORTED;
				goto out;
			}
			if (!rc) {
				struct sonde_strbuf tab = SONDE_STRBUF_INIT;

				rc = sonde_view__diff_table(fa.buf, fb.buf, unit, c->top, &tab);
				rc = cli_emit(rc, &tab, stdout);
			}
			if (!rc && out_file)
				rc = sonde_view__flame(fb.buf ? fb.buf : "", fa.buf ? fa.buf : "",
						       weight, unit, &svg);
		} else if (!rc) {
			rc = sonde_view__flame(fa.buf ? fa.buf : "", NULL, weight, unit, &svg);
		}
	}
	if (!rc) /* a drawing cut short by memory is no drawing */
		rc = sonde_strbuf__error(&svg)	? sonde_strbuf__error(&svg)
		     : sonde_strbuf__error(&fa) ? sonde_strbuf__error(&fa)
						: sonde_strbuf__error(&fb);
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
		char *used = NULL;

		if (base && (dot = strstr(base, ".json")) != NULL)
			*dot = '\0';
		if (!base || asprintf(&file, "%s-%s.svg", base, view) < 0) {
			cli_error("show", "out of memory");
			code = EXIT_FAILURE_;
		} else if ((rc = cli_write_new(file, svg.buf, svg.len, &used))) {
			/* a name of sonde's own choice never replaces what is there */
			cli_error("show", "cannot write '%s': %s", file, strerror(-rc));
			code = EXIT_FAILURE_;
		} else {
			fprintf(stderr,
				"%s written (an SVG: open it in a browser; -o names the file)\n",
				used);
		}
		free(used);
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

static const char usage_head[] =
	"usage: sonde show PROFILE... [VIEW [OTHER]] [options]\n"
	"       sonde show RUN [-f FORMAT]\n"
	"\n"
	"Show a profile. PROFILE is a path, N@p (the Nth pending profile, see\n"
	"'sonde status') or N@i (the Nth profile registered for HEAD); several\n"
	"(a shell glob) are shown in turn, each under its name. RUN (a run id or\n"
	"its first 6+ hex digits): the ranks of a distributed job side by side\n"
	"(min, mean, max, max/mean, the highest rank), else the run's profiles.\n"
	"Views (the drawn ones write a standalone SVG to -o FILE, default stdout;\n"
	"diff takes OTHER, the profile compared with PROFILE):";

/* The usage, its list of views from the registry (a static buffer: made once). */
static const char *usage(void)
{
	static char text[4096];
	size_t nv, k, len;
	const struct sonde_view_info *v = sonde_view__list(&nv);

	if (text[0])
		return text;
	len = (size_t)snprintf(text, sizeof(text), "%s", usage_head);
	for (k = 0; k < nv && len < sizeof(text); k++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "\n  %-11s%s\n  %-11s(%s)",
					v[k].name, v[k].summary, "", v[k].reads);
	return text;
}

/* Show one profile in a view (NULL: its own); returns the exit code. */
static int show_one(const char *path, const char *view, const struct sonde_view_info *vi,
		    struct sonde_chart_opts *c0, const char *func, long long top,
		    const char *format, const char *sort, const char *time_unit, const char *weight,
		    const char *out_file, const char *other)
{
	struct sonde_chart_opts c = *c0;
	struct sonde_profile *p;
	int code = EXIT_OK;

	p = cli_load_profile("show", path, &code);
	if (!p)
		return code;
	if (time_unit) { /* the view reads it where collect time --time-unit put it */
		json_t *ci = sonde_profile__collector_info(p);

		if (!json_is_object(json_object_get(ci, "params")))
			json_object_set_new(ci, "params", json_object());
		json_object_set_new(json_object_get(ci, "params"), "time-unit",
				    json_string(time_unit));
	}
	if (vi && (vi->flags & SONDE_VIEW_DRAWN)) {
		for (c.func = 0; strcmp(sonde_view__aggs[c.func], func); c.func++)
			;
		c.top = (unsigned)top;
		code = drawn(p, view, path, other, &c, weight, out_file);
	} else {
		const struct sonde_view_args a = { .sz = sizeof(a),
						   .fmt = sonde_view__format_of(format),
						   .top = (unsigned)top,
						   .sort = sort,
						   .notes = true,
						   .warnings = !vi || !strcmp(view, "table") };
		struct sonde_strbuf sb = SONDE_STRBUF_INIT;
		const char *needs = vi && vi->collector ? vi->collector : "trace";
		int rc = cli_emit(sonde_view__show(p, view, &a, &sb), &sb, stdout);

		if (rc == -EINVAL) {
			cli_error("show",
				  "'%s' is a %s profile: the %s view needs a %s profile "
				  "(sonde collect %s)",
				  path, sonde_profile__type(p), view ? view : "default", needs,
				  needs);
			code = EXIT_UNSUPPORTED;
		} else if (rc) {
			cli_error("show", "%s", rc == -ENOMEM ? "out of memory" : strerror(-rc));
			code = EXIT_FAILURE_;
		}
	}
	cli_drop_profile(p);
	return code;
}

/* sonde show RUN: the ranks of its job, or each of its profiles in its own view. */
static int show_run(const char *run, const char *view, const char *format)
{
	struct sonde_profile **v = NULL;
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	size_t n = 0, i;
	int code = cli_load_run("show", run, &v, &n), rc;

	if (code)
		goto out;
	if (view) {
		code = cli_usage("show",
				 "a run shows its ranks or its profiles: give a profile "
				 "for the %s view",
				 view);
		goto out;
	}
	rc = sonde_view__ranks((const struct sonde_profile *const *)v, n,
			       sonde_view__format_of(format), &sb);
	if (rc == -EINVAL) { /* not a job's ranks: each profile as show prints it */
		const struct sonde_view_args a = { .sz = sizeof(a),
						   .fmt = sonde_view__format_of(format),
						   .top = 20,
						   .notes = true,
						   .warnings = true };

		for (i = 0, rc = 0; i < n && !rc; i++) {
			if (n > 1)
				sonde_strbuf__addf(&sb, "%s== %s (%s)\n", i ? "\n" : "",
						   json_string_value(json_object_get(
							   sonde_profile__header(v[i]), "cmd")),
						   sonde_profile__type(v[i]));
			rc = sonde_view__show(v[i], NULL, &a, &sb);
		}
	}
	if (cli_emit(rc, &sb, stdout)) {
		cli_error("show", "%s", rc == -ENOMEM ? "out of memory" : strerror(-rc));
		code = EXIT_FAILURE_;
	}
out:
	for (i = 0; i < n; i++)
		sonde_profile__free(v[i]);
	free(v);
	return code;
}

int cmd_show(int argc, char **argv)
{
	static const char *const time_units[] = { "ns", "us", "ms", "s", NULL };
	const char *format = "text", *sort = "total", *out_file = NULL, *func = "sum",
		   *weight = NULL, *time_unit = NULL;
	struct sonde_chart_opts c = { 0 };
	long long top = 20;
	struct sonde_option opts[] = {
		{ SONDE_OPT_CHOICE, 'f', "format", &format, NULL, "output format", 0, 0,
		  sonde_view__formats },
		{ SONDE_OPT_INT, 'n', "top", &top, "N",
		  "memory: N sites and leaks; report: N functions; graph: N callees per "
		  "context (20; 0: all)",
		  0, 1e9 },
		{ SONDE_OPT_CHOICE, 's', "sort", &sort, "KEY",
		  "report: sort by total, self, calls, avg, min, max or name", 0, 0,
		  sonde_view__trace_sort_keys },
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
		  0, 0, sonde_view__aggs },
		{ SONDE_OPT_FLAG, 0, "stacked", &c.stacked, NULL, "charts: stack the groups" },
		{ SONDE_OPT_CHOICE, 0, "weight", &weight, NULL,
		  "flame graphs: bytes or count (memory), time or calls (trace), time or samples "
		  "(sampled)",
		  0, 0, flame_weights },
		{ SONDE_OPT_CHOICE, 0, "time-unit", &time_unit, "UNIT",
		  "table: print times in ns, us, ms or s (default: the unit the profile was "
		  "collected with, else one that fits each)",
		  0, 0, time_units },
		{ .type = SONDE_OPT_END },
	};
	const struct sonde_view_info *vi;
	const char *view;
	char **profiles;
	int first, nprof, k, code = EXIT_OK;

	first = cli_parse("show", usage(), opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	argc -= 1 + first;
	if (argc < 1)
		return cli_usage("show", "which profile? give a path, N@p or N@i");
	/* PROFILE... [VIEW [OTHER]]: the leading arguments that name no view are profiles */
	for (nprof = 1; nprof < argc && !sonde_view__find(argv[nprof]); nprof++)
		;
	if (nprof > 1 && nprof == argc) { /* no view named: is the last a mistyped one? */
		const char *last = argv[argc - 1];

		if (access(last, F_OK) && !strchr(last, '@') && !strchr(last, '/') &&
		    !strstr(last, ".json"))
			nprof--;
	}
	if (nprof > 1 && nprof < argc && !strcmp(argv[nprof], "diff"))
		return cli_usage("show", "diff compares one profile with one other");
	if (nprof > 1 && out_file)
		return cli_usage("show", "-o names one file: show one profile at a time");
	if (nprof > 1 && (!strcmp(format, "json") || !strcmp(format, "csv")))
		return cli_usage("show", "-f %s makes one document: show one profile at a time",
				 format);
	profiles = argv;
	argv += nprof - 1; /* the view after the last profile */
	argc -= nprof - 1;
	/* no view named: the profile's own, as collect showed it (the table where it has none) */
	view = argc > 1 ? argv[1] : NULL;
	if (argc > (view && !strcmp(view, "diff") ? 3 : 2))
		return cli_usage("show", "too many arguments");
	if (view && !strcmp(view, "diff") && argc < 3)
		return cli_usage("show", "diff: which profile to compare with PROFILE?");
	vi = NULL;
	if (view && !(vi = sonde_view__find(view))) {
		struct sonde_strbuf names = SONDE_STRBUF_INIT;
		size_t nv, j;
		const struct sonde_view_info *all = sonde_view__list(&nv);

		for (j = 0; j < nv; j++)
			sonde_strbuf__addf(&names, "%s%s", j ? ", " : "", all[j].name);
		code = cli_usage("show", "unknown view '%s' (views: %s)", view, cli_why(&names, 0));
		sonde_strbuf__release(&names);
		return code;
	}
	/* a run id: the ranks of a distributed job side by side, else each of its profiles */
	if (nprof == 1 && cli_is_run_id(profiles[0]) && access(profiles[0], F_OK))
		return show_run(profiles[0], view, format);
	/* several profiles (a shell glob): each in turn, under its name */
	for (k = 0; k < nprof; k++) {
		int rc;

		if (nprof > 1)
			printf("%s== %s\n", k ? "\n" : "", profiles[k]);
		fflush(stdout);
		rc = show_one(profiles[k], view, vi, &c, func, top, format, sort, time_unit, weight,
			      out_file, argc > 2 ? argv[2] : NULL);
		if (rc && code == EXIT_OK)
			code = rc;
	}
	return code;
}
