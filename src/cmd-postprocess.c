/*
 * cmd-postprocess.c - `sonde postprocess PROFILE NAME [options]`: fit models to
 * a profile and store them in its `models` (the profile is rewritten
 * atomically, or written to -o FILE).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "cli.h"

static const char usage[] =
	"usage: sonde postprocess PROFILE NAME [options] [-o FILE]\n"
	"\n"
	"Model how a column depends on another, per uid, and store the models in the\n"
	"profile. NAME: regression, moving-average, regressogram, kernel-regression.\n"
	"PROFILE is a path, N@p or N@i; it is rewritten in place unless -o is given.\n"
	"Formulas and the stored form: analysis.md in " SONDE_DOCDIR ".";

static const char *const averages[] = { "sma", "smm", "ema", NULL };
static const char *const statistics[] = { "mean", "median", NULL };
static const char *const estimators[] = { "nadaraya-watson", "local-linear", NULL };

static int parse_models(const struct sonde_strlist *l, unsigned *mask)
{
	size_t i;

	*mask = 0;
	for (i = 0; i < l->n; i++) {
		char *copy = strdup(l->items[i]), *tok, *save = NULL;

		if (!copy)
			return -ENOMEM;
		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			int k = sonde_model__kind(tok);

			if (!strcmp(tok, "all")) {
				*mask |= SONDE_MODELS_ALL;
				continue;
			}
			if (k < 0) {
				cli_usage(
					"postprocess",
					"unknown model '%s' (models: constant, logarithmic, "
					"linear, linearithmic, quadratic, power, exponential, all)",
					tok);
				free(copy);
				return -EINVAL;
			}
			*mask |= 1u << k;
		}
		free(copy);
	}
	return 0;
}

static int parse_decay(const char *s, double *alpha)
{
	static const char *const forms[] = { "com", "span", "halflife", "alpha", NULL };
	const char *sep = s ? strpbrk(s, "=:") : NULL;
	char *end;
	double v;
	int i;

	if (!sep)
		return -EINVAL;
	for (i = 0; forms[i]; i++)
		if (strlen(forms[i]) == (size_t)(sep - s) &&
		    !strncmp(s, forms[i], (size_t)(sep - s)))
			break;
	if (!forms[i])
		return -EINVAL;
	v = strtod(sep + 1, &end);
	if (end == sep + 1 || *end)
		return -EINVAL;
	*alpha = sonde_decay__alpha((enum sonde_decay)i, v);
	return isnan(*alpha) ? -ERANGE : 0;
}

static void print_models(const struct sonde_profile *p, const char *name, size_t first)
{
	json_t *models = sonde_profile__part(p, "models"), *m;
	json_t *units = json_object_get(sonde_profile__header(p), "units");
	size_t i;

	for (i = first; i < json_array_size(models); i++) {
		const char *sub, *model, *per, *yu;
		char text[256];

		m = json_array_get(models, i);
		if (strcmp(json_string_value(json_object_get(m, "postprocessor")), name))
			continue;
		if (!strcmp(name, "regression") && !json_is_true(json_object_get(m, "best")))
			continue;
		sub = json_string_value(json_object_get(m, "subtype"));
		model = json_string_value(json_object_get(m, "model"));
		per = json_string_value(json_object_get(m, "per"));
		/* coefficients in the units of what is modelled (a trace's by its subtype)
		   and of x, as the scatter's legend gives them */
		yu = json_string_value(json_object_get(
			units, json_string_value(json_object_get(m, "type")) ?: ""));
		if (!yu)
			yu = json_string_value(json_object_get(units, sub ? sub : ""));
		sonde_view__model_text(m, yu,
				       json_string_value(json_object_get(units, per ? per : "")),
				       text, sizeof(text));
		printf("  %s%s%s: %s, over [%g, %g] (%s)",
		       json_string_value(json_object_get(m, "uid")), sub ? " " : "", sub ? sub : "",
		       text, json_number_value(json_object_get(m, "x_start")),
		       json_number_value(json_object_get(m, "x_end")),
		       json_string_value(json_object_get(m, "method"))
			       ? json_string_value(json_object_get(m, "method"))
			       : name);
		/* (a constant explains no variation by construction: not a fit to judge) */
		if (model && strcmp(model, "constant") && !strcmp(name, "regression") &&
		    json_number_value(json_object_get(m, "r_square")) < 0.5 &&
		    json_integer_value(json_object_get(m, "n")) > 2)
			printf(" (a poor fit: the best model explains under half the variation)");
		putchar('\n');
	}
}

/* Models fit the rows: say when the rows are a sample (the collector's warning). */
static void warn_sampled(const struct sonde_profile *p)
{
	json_t *w = json_object_get(sonde_profile__stats(p), "warnings"), *x;
	size_t i;

	if (cli_quiet())
		return;
	json_array_foreach(w, i, x)
	{
		if (strcmp(json_string_value(json_object_get(x, "code")) ?: "",
			   sonde_warning__info(SONDE_WARN_ROWS_SAMPLED)->code))
			continue;
		fprintf(stderr, "sonde: warning: %s\n  fix: %s\n",
			json_string_value(json_object_get(x, "message")),
			json_string_value(json_object_get(x, "fix")));
	}
}

int cmd_postprocess(int argc, char **argv)
{
	const char *of = NULL, *per = NULL, *method = "full", *average = "sma", *decay = NULL,
		   *statistic = "mean", *estimator = "nadaraya-watson", *bandwidth = "scott",
		   *out_file = NULL;
	long long steps = 3, window = 0, buckets = 0;
	struct sonde_strlist models = { 0 };
	struct sonde_option opts[] = {
		{ SONDE_OPT_STRING, 0, "of", &of, "COLUMN", "the modelled column (amount)" },
		{ SONDE_OPT_STRING, 0, "per", &per, "COLUMN",
		  "the column it depends on (structure-unit-size; memory: snapshot; counters: "
		  "timestamp)" },
		{ SONDE_OPT_STRING, 'o', "output", &out_file, "FILE",
		  "write the result to FILE instead of rewriting PROFILE" },
		{ SONDE_OPT_GROUP, 0, NULL, NULL, NULL, "regression" },
		{ SONDE_OPT_CHOICE, 'm', "method", &method, NULL, "computation method (full)", 0, 0,
		  sonde_regression_methods },
		{ SONDE_OPT_LIST, 'r', "models", &models, "LIST",
		  "models to fit, comma-separated (all): constant, logarithmic, linear, "
		  "linearithmic, quadratic, power, exponential" },
		{ SONDE_OPT_INT, 0, "steps", &steps, "N",
		  "chunks (iterative, initial_guess) or intervals (interval) (3)", 1, 1000 },
		{ SONDE_OPT_GROUP, 0, NULL, NULL, NULL, "moving-average" },
		{ SONDE_OPT_CHOICE, 0, "average", &average, NULL,
		  "sma (mean), smm (median) or ema (exponential)", 0, 0, averages },
		{ SONDE_OPT_INT, 0, "window", &window, "N",
		  "points in the window (a tenth of the points)", 1, 1e9 },
		{ SONDE_OPT_STRING, 0, "decay", &decay, "FORM=VALUE",
		  "ema smoothing: com=C, span=S, halflife=H or alpha=A (com=1)" },
		{ SONDE_OPT_GROUP, 0, NULL, NULL, NULL, "regressogram" },
		{ SONDE_OPT_INT, 0, "buckets", &buckets, "N",
		  "equal-width buckets (Sturges: ceil(log2 n) + 1)", 1, 1e6 },
		{ SONDE_OPT_CHOICE, 0, "statistic", &statistic, NULL, "mean or median of a bucket",
		  0, 0, statistics },
		{ SONDE_OPT_GROUP, 0, NULL, NULL, NULL, "kernel-regression" },
		{ SONDE_OPT_CHOICE, 0, "estimator", &estimator, NULL,
		  "nadaraya-watson or local-linear", 0, 0, estimators },
		{ SONDE_OPT_STRING, 0, "bandwidth", &bandwidth, "RULE|H",
		  "scott, silverman, or a bandwidth in x units (scott)" },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_postprocess_options o = { 0 };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p;
	char *path;
	const char *const *k;
	size_t added;
	int first, code = EXIT_OK, rc;

	first = cli_parse("postprocess", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE,
			  NULL, &code);
	if (first < 0)
		return code;
	rc = parse_models(&models, &o.models);
	sonde_strlist__release(&models); /* read into o.models */
	if (rc)
		return EXIT_USAGE;
	argv += 1 + first;
	argc -= 1 + first;
	if (argc != 2)
		return cli_usage("postprocess", argc < 2 ? "give a profile and a postprocessor"
							 : "too many arguments");
	for (k = sonde_postprocessors; *k && strcmp(*k, argv[1]); k++)
		;
	if (!*k)
		return cli_usage("postprocess",
				 "unknown postprocessor '%s' (regression, moving-average, "
				 "regressogram, kernel-regression)",
				 argv[1]);
	o.name = *k;
	for (rc = 0; sonde_regression_methods[rc] && strcmp(sonde_regression_methods[rc], method);
	     rc++)
		;
	o.method = (enum sonde_regression_method)rc;

	o.steps = (unsigned)steps;
	o.average = !strcmp(average, "sma")   ? SONDE_AVG_SMA
		    : !strcmp(average, "smm") ? SONDE_AVG_SMM
					      : SONDE_AVG_EMA;
	o.window = (size_t)window;
	o.alpha = 0.5;
	if (decay && (rc = parse_decay(decay, &o.alpha)))
		return cli_usage("postprocess",
				 rc == -ERANGE
					 ? "--decay '%s' is out of range (com >= 0, span >= 1, "
					   "halflife > 0, 0 < alpha <= 1)"
					 : "--decay '%s' is not FORM=VALUE with FORM com, span, "
					   "halflife or alpha",
				 decay);
	o.buckets = (size_t)buckets;
	o.median = !strcmp(statistic, "median");
	o.local_linear = !strcmp(estimator, "local-linear");
	if (!strcmp(bandwidth, "scott") || !strcmp(bandwidth, "silverman")) {
		o.bandwidth_rule =
			!strcmp(bandwidth, "scott") ? SONDE_BW_SCOTT : SONDE_BW_SILVERMAN;
	} else {
		char *end;

		o.bandwidth = strtod(bandwidth, &end);
		if (*end || !(o.bandwidth > 0))
			return cli_usage("postprocess",
					 "--bandwidth '%s' is not scott, silverman or a positive "
					 "number",
					 bandwidth);
	}
	path = cli_profile_path("postprocess", argv[0], NULL);
	if (!path)
		return EXIT_FAILURE_;
	p = sonde_profile__load(path, &err);
	if (!p) {
		cli_error("postprocess", "%s", cli_why(&err, -errno));
		free(path);
		sonde_strbuf__release(&err);
		return errno == ENOTSUP ? EXIT_UNSUPPORTED : EXIT_FAILURE_;
	}
	sonde_postprocess__defaults(sonde_profile__type(p), &o.of, &o.per);
	o.of = of ? of : o.of;
	o.per = per ? per : o.per;
	rc = sonde_postprocess__apply(p, &o, &added, &err);
	if (rc) {
		cli_error("postprocess", "%s", rc == -ENOMEM ? "out of memory" : err.buf);
		code = rc == -ENOMEM ? EXIT_FAILURE_ : EXIT_UNSUPPORTED;
	} else {
		const char *dest = out_file ? out_file : path;

		rc = sonde_profile__save(p, dest);
		if (rc) {
			cli_error("postprocess", "cannot write '%s': %s", dest, strerror(-rc));
			code = EXIT_FAILURE_;
		} else {
			json_t *all = sonde_profile__part(p, "models");

			printf("%s: %zu %s model%s of %s per %s written to %s\n", o.name, added,
			       o.name, added == 1 ? "" : "s", o.of, o.per, dest);
			/* An earlier run's models were replaced: the new ones end the array. */
			print_models(p, o.name, json_array_size(all) - added);
			warn_sampled(p);
		}
	}
	sonde_strbuf__release(&err);
	cli_drop_profile(p);
	free(path);
	return code;
}
