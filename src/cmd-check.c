/*
 * cmd-check.c - `sonde check BASELINE TARGET`: a verdict per resource, exit 4
 * when anything got worse. Each side is a profile (path, N@p, N@i) or a git
 * revision whose registered profiles are paired with the other side's by
 * collector, command, workload and type.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "cli.h"

static const char usage[] =
	"usage: sonde check BASELINE TARGET [--method M] [--strict] [--format text|json]\n"
	"\n"
	"Compare TARGET with BASELINE, resource by resource: no change, maybe,\n"
	"(severe) degradation, (severe) optimization, not in baseline, not in target,\n"
	"not enough data, each with the relative change, the 95% confidence interval\n"
	"of the ratio and a confidence. BASELINE and TARGET are profiles (a path, N@p,\n"
	"N@i) or git revisions with registered profiles (HEAD~1, a branch, a hash).\n"
	"Exit status: 0 no degradation, 4 a degradation was found (or, with --strict,\n"
	"a result that could not be judged), 2 profiles of different collectors.\n"
	"Methods and thresholds: analysis.md in " SONDE_DOCDIR ".";

static const char *const formats[] = { "text", "json", NULL };

struct side {
	struct sonde_store_list l; /* registered profiles of a commit */
	char *single;		   /* or one profile path */
	char commit[41];
};

static bool is_profile_name(const char *s)
{
	return access(s, F_OK) == 0 || cli_is_store_name(s);
}

static const char *collector_name(const struct sonde_profile *p)
{
	const char *n =
		json_string_value(json_object_get(sonde_profile__collector_info(p), "name"));

	return n ? n : "?";
}

static int resolve(const char *name, struct side *s)
{
	struct sonde_store *st;
	int rc;

	memset(s, 0, sizeof(*s));
	if (is_profile_name(name)) {
		s->single = cli_profile_path("check", name, NULL);
		return s->single ? EXIT_OK : EXIT_FAILURE_;
	}
	st = sonde_store__open(".");
	if (!st && errno != ENOENT) { /* a store whose index does not open: say why */
		cli_open_store("check");
		return EXIT_FAILURE_;
	}
	if (!st) {
		cli_error("check",
			  "'%s' is not a profile, and there is no .sonde store here to "
			  "look it up as a commit",
			  name);
		return EXIT_FAILURE_;
	}
	if (sonde_git__resolve(sonde_store__worktree(st), name, s->commit)) {
		cli_error("check", "'%s' is neither a profile nor a git revision", name);
		sonde_store__free(st);
		return EXIT_FAILURE_;
	}
	rc = sonde_store__registered(st, s->commit, &s->l);
	sonde_store__free(st);
	if (rc) {
		cli_error("check", "cannot list the store: %s", strerror(-rc));
		return EXIT_FAILURE_;
	}
	if (!s->l.n) {
		cli_error("check", "commit %.12s ('%s') has no registered profiles (sonde add)",
			  s->commit, name);
		sonde_store_list__release(&s->l);
		return EXIT_FAILURE_;
	}
	return EXIT_OK;
}

static bool eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static json_t *results_json(const struct sonde_check_result *r, size_t n)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++) {
		const struct sonde_check_result *x = &r[i];
		json_t *o = json_object(), *ci = json_array();

		json_object_set_new(o, "uid", json_string(x->uid ? x->uid : ""));
		json_object_set_new(o, "type", x->type ? json_string(x->type) : json_null());
		json_object_set_new(o, "subtype",
				    x->subtype ? json_string(x->subtype) : json_null());
		json_object_set_new(o, "workload",
				    x->workload ? json_string(x->workload) : json_null());
		json_object_set_new(o, "unit", x->unit ? json_string(x->unit) : json_null());
		json_object_set_new(o, "verdict", json_string(sonde_verdict_names[x->verdict]));
		json_object_set_new(o, "method", json_string(x->method ? x->method : "none"));
		json_object_set_new(o, "n_baseline", json_integer((json_int_t)x->n_baseline));
		json_object_set_new(o, "n_target", json_integer((json_int_t)x->n_target));
		json_object_set_new(o, "baseline", sonde_view__json_number(x->baseline));
		json_object_set_new(o, "target", sonde_view__json_number(x->target));
		json_object_set_new(o, "change", sonde_view__json_number(x->change));
		json_array_append_new(ci, sonde_view__json_number(x->ratio_low));
		json_array_append_new(ci, sonde_view__json_number(x->ratio_high));
		json_object_set_new(o, "ratio_ci95", ci);
		json_object_set_new(o, "confidence", sonde_view__json_number(x->confidence));
		json_object_set_new(o, "p_value", sonde_view__json_number(x->p));
		json_object_set_new(o, "effect_size", sonde_view__json_number(x->effect));
		json_object_set_new(o, "detail", x->detail ? json_string(x->detail) : json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

static void print_text(const struct sonde_check_result *r, size_t n)
{
	size_t i;

	printf("  %-32s %-20s %-19s %12s %12s %9s  %-18s %6s  %s\n", "uid", "metric", "verdict",
	       "baseline", "target", "change", "95% CI of ratio", "conf.", "method");
	for (i = 0; i < n; i++) {
		const struct sonde_check_result *x = &r[i];
		char b[40] = "-", t[40] = "-", ch[24] = "-", ci[48] = "-", cf[16] = "-", metric[80];

		if (!isnan(x->baseline))
			sonde_format__value(x->baseline, x->unit, b, sizeof(b));
		if (!isnan(x->target))
			sonde_format__value(x->target, x->unit, t, sizeof(t));
		if (!isnan(x->change))
			snprintf(ch, sizeof(ch), "%+.1f%%", 100 * x->change);
		if (!isnan(x->ratio_low))
			snprintf(ci, sizeof(ci), "[%.3f, %.3f]", x->ratio_low, x->ratio_high);
		if (!isnan(x->confidence))
			snprintf(cf, sizeof(cf), "%.1f%%", 100 * x->confidence);
		snprintf(metric, sizeof(metric), "%s%s%s", x->subtype ? x->subtype : "",
			 x->workload && *x->workload ? " @" : "",
			 x->workload && *x->workload ? x->workload : "");
		printf("  %-32s %-20s ", x->uid, metric);
		/* verdicts coloured: red a degradation, green an optimization, yellow maybe */
		cli_paint(stdout, sonde_verdict__is_degradation(x->verdict) ? CLI_RED
				  : x->verdict == SONDE_OPTIMIZATION ||
						  x->verdict == SONDE_SEVERE_OPTIMIZATION
					  ? CLI_GREEN
				  : x->verdict == SONDE_MAYBE || x->verdict == SONDE_NOT_ENOUGH_DATA
					  ? CLI_YELLOW
					  : "");
		printf("%-19s", sonde_verdict_names[x->verdict]);
		if (x->verdict != SONDE_NO_CHANGE && x->verdict != SONDE_NOT_IN_BASELINE &&
		    x->verdict != SONDE_NOT_IN_TARGET)
			cli_paint(stdout, CLI_RESET);
		printf(" %12s %12s %9s  %-18s %6s  %s%s%s\n", b, t, ch, ci, cf,
		       x->method ? x->method : "none", x->detail ? ": " : "",
		       x->detail ? x->detail : "");
	}
}

int cmd_check(int argc, char **argv)
{
	const char *method = "auto", *format = "text";
	double alpha = 0.05, threshold = 0.05, severe = 0.25;
	bool strict = false;
	struct sonde_option opts[] = {
		{ SONDE_OPT_CHOICE, 'm', "method", &method, NULL,
		  "auto (a test where both sides have samples, else models, else averages), "
		  "welch, mann-whitney, average-amount, best-model-order, integral",
		  0, 0, sonde_check_methods },
		{ SONDE_OPT_DOUBLE, 0, "threshold", &threshold, "X",
		  "smallest relative change that counts (0.05)", 1e-9, 1e9 },
		{ SONDE_OPT_DOUBLE, 0, "severe", &severe, "X",
		  "relative change that is severe (0.25)", 1e-9, 1e9 },
		{ SONDE_OPT_DOUBLE, 0, "alpha", &alpha, "P",
		  "significance level of the tests (0.05)", 1e-12, 0.5 },
		{ SONDE_OPT_CHOICE, 'f', "format", &format, NULL, "text or json", 0, 0, formats },
		{ SONDE_OPT_FLAG, 0, "strict", &strict, NULL,
		  "fail (exit 4) when a resource cannot be judged (not enough data), as on a "
		  "degradation" },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_check_options o;
	struct side sb, st;
	json_t *doc = json_object(), *pairs = json_array();
	size_t degradations = 0, unjudged = 0, i, j, npairs = 0;
	int first, code = EXIT_OK;

	first = cli_parse("check", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		goto done;
	argv += 1 + first;
	argc -= 1 + first;
	if (argc != 2) {
		code = cli_usage("check",
				 argc < 2 ? "give a baseline and a target" : "too many arguments");
		goto done;
	}
	if (severe < threshold) {
		code = cli_usage("check", "--severe (%g) is below --threshold (%g)", severe,
				 threshold);
		goto done;
	}
	for (i = 0; sonde_check_methods[i] && strcmp(sonde_check_methods[i], method); i++)
		;
	o = (struct sonde_check_options){ (enum sonde_check_method)i, alpha, threshold, severe };
	if ((code = resolve(argv[0], &sb)) != EXIT_OK)
		goto done;
	if ((code = resolve(argv[1], &st)) != EXIT_OK) {
		free(sb.single);
		sonde_store_list__release(&sb.l);
		goto done;
	}
	for (i = 0; i < (st.single ? 1 : st.l.n) && code == EXIT_OK; i++) {
		const struct sonde_store_entry *te = st.single ? NULL : &st.l.v[i], *be = NULL;
		const char *tpath = te ? te->path : st.single, *bpath = sb.single;
		struct sonde_profile *pb, *pt;
		struct sonde_check_result *r;
		size_t n;
		int rc;

		if (!bpath) {
			/* The latest baseline profile of the same collector, command, workload,
			 * type. */
			for (j = sb.l.n; j-- > 0 && !be;)
				if (!te || (eq(sb.l.v[j].collector, te->collector) &&
					    eq(sb.l.v[j].cmd, te->cmd) &&
					    eq(sb.l.v[j].workload, te->workload) &&
					    eq(sb.l.v[j].type, te->type)))
					be = &sb.l.v[j];
			if (!be) {
				fprintf(stderr,
					"sonde: check: %s: no baseline profile of the same "
					"command and collector; skipped\n",
					tpath);
				continue;
			}
			bpath = be->path;
		}
		pb = cli_load_profile("check", bpath, &code);
		pt = pb ? cli_load_profile("check", tpath, &code) : NULL;
		if (!pt) {
			sonde_profile__free(pb);
			break;
		}
		rc = sonde_check__compare(pb, pt, &o, &r, &n);
		if (rc == -EXDEV) {
			cli_error("check",
				  "cannot compare '%s' (a %s profile) with '%s' (a %s profile)",
				  bpath, collector_name(pb), tpath, collector_name(pt));
			code = EXIT_USAGE;
		} else if (rc) {
			cli_error("check", "out of memory");
			code = EXIT_FAILURE_;
		} else {
			json_t *pair = json_object();

			for (j = 0; j < n; j++) {
				degradations += sonde_verdict__is_degradation(r[j].verdict);
				unjudged += r[j].verdict == SONDE_NOT_ENOUGH_DATA;
			}
			if (!strcmp(format, "text")) {
				printf("%sbaseline: %s\ntarget:   %s\n", npairs ? "\n" : "", bpath,
				       tpath);
				print_text(r, n);
			}
			json_object_set_new(pair, "baseline", json_string(bpath));
			json_object_set_new(pair, "target", json_string(tpath));
			json_object_set_new(pair, "results", results_json(r, n));
			json_array_append_new(pairs, pair);
			npairs++;
			sonde_check__free(r, n);
		}
		sonde_profile__free(pb);
		sonde_profile__free(pt);
	}
	free(sb.single);
	free(st.single);
	sonde_store_list__release(&sb.l);
	sonde_store_list__release(&st.l);
	if (code != EXIT_OK)
		goto done;
	if (!npairs) {
		cli_error("check", "no pair of profiles to compare");
		code = EXIT_FAILURE_;
		goto done;
	}
	if (!strcmp(format, "json")) {
		json_object_set_new(doc, "pairs", pairs);
		pairs = NULL;
		json_object_set_new(doc, "degradations", json_integer((json_int_t)degradations));
		json_object_set_new(doc, "not_enough_data", json_integer((json_int_t)unjudged));
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		putchar('\n');
	} else {
		putchar('\n');
		cli_paint(stdout, degradations ? CLI_RED CLI_BOLD : CLI_GREEN);
		printf("%zu degradation%s found", degradations, degradations == 1 ? "" : "s");
		cli_paint(stdout, CLI_RESET);
		if (unjudged)
			printf("; %zu result%s could not be judged (not enough data%s)", unjudged,
			       unjudged == 1 ? "" : "s",
			       strict ? ", --strict: a failure" : "; --strict fails on them");
		putchar('\n');
	}
	code = degradations || (strict && unjudged) ? EXIT_DEGRADATION : EXIT_OK;
done:
	json_decref(pairs);
	json_decref(doc);
	return code;
}
