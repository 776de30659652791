/*
 * cmd-counters.c - `sonde counters list|info|eval`: the counter catalog of
 * this machine, one counter's definition, and derived-metric expressions
 * evaluated on given values (to check a definition without running anything).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/counters.h>
#include "config.h"
#include "cli.h"

static const char usage[] =
	"usage: sonde counters list [--derived] [--tracepoints] [--groups] [--agent N] [--defs "
	"FILE]\n"
	"       sonde counters info NAME [--agent N] [--defs FILE] [--arch ARCH]\n"
	"       sonde counters eval EXPR... [--set NAME=V[,V...]]... [--defs FILE] [--arch ARCH]\n"
	"\n"
	"List the counters of an agent (a CPU), show one counter's definition, or evaluate\n"
	"an expression in the language of counter_defs.yaml (counters.md in " SONDE_DOCDIR
	").\nWith "
	"--set, several values are several dimension instances (one per CPU, say);\n"
	"--arch reads another architecture's definitions (a GPU's, say) to show or\n"
	"evaluate them here.";

static const char *const kind_names[] = { "", "software", "tracepoint", "hardware", "derived" };

struct list_ctx {
	uint32_t agent;
	bool derived;
	enum sonde_view_format fmt;
	json_t *json;
};

static int print_list(uint32_t agent, const uint32_t *ids, size_t n, void *user)
{
	struct list_ctx *lc = user;
	size_t i;

	if (lc->fmt == SONDE_VIEW_CSV)
		printf("name,kind,unit,supported,description\n");
	else if (!lc->json)
		printf("%-34s %-10s %-10s %-9s %s\n", "NAME", "KIND", "UNIT", "SUPPORTED",
		       "DESCRIPTION");
	for (i = 0; i < n; i++) {
		struct sonde_counter_info in;

		if (sonde_counters__info(agent, ids[i], &in))
			continue;
		if (lc->derived && in.kind != SONDE_COUNTER_DERIVED)
			continue;
		if (lc->json) {
			json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:s}", "name", in.name, "kind",
					      kind_names[in.kind], "unit", in.unit ? in.unit : "",
					      "supported", in.supported, "description",
					      in.description ? in.description : "");

			if (in.expression)
				json_object_set_new(o, "expression", json_string(in.expression));
			if (!in.supported && in.why)
				json_object_set_new(o, "why", json_string(in.why));
			json_array_append_new(lc->json, o);
			continue;
		}
		if (lc->fmt == SONDE_VIEW_CSV) {
			struct sonde_strbuf q = SONDE_STRBUF_INIT;

			sonde_view__csv_quote(&q, in.name);
			sonde_strbuf__addf(&q, ",%s,", kind_names[in.kind]);
			sonde_view__csv_quote(&q, in.unit ? in.unit : "");
			sonde_strbuf__addf(&q, ",%s,", in.supported ? "yes" : "no");
			sonde_view__csv_quote(&q, in.description ? in.description : "");
			printf("%s\n", q.buf);
			sonde_strbuf__release(&q);
			continue;
		}
		printf("%-34s %-10s %-10s %-9s %s\n", in.name, kind_names[in.kind],
		       in.unit ? in.unit : "", in.supported ? "yes" : "no",
		       in.description ? in.description : "");
	}
	return 0;
}

static int load_defs(const char *defs)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	const char *note;

	if (defs && sonde_counters__load_defs(defs, &err)) {
		cli_error("counters", "%s", cli_why(&err, 0));
		sonde_strbuf__release(&err);
		return EXIT_USAGE;
	}
	sonde_strbuf__release(&err);
	note = sonde_counters__note();
	if (note && strstr(note, ".yaml:")) {
		cli_error("counters", "%s", note);
		return EXIT_FAILURE_;
	}
	return EXIT_OK;
}

static int check_agent(long long agent)
{
	size_t na;

	if (!sonde_counters__agents(&na)) {
		cli_error("counters", "no CPU found in /sys/devices/system/cpu");
		return EXIT_FAILURE_;
	}
	if (agent < 0 || (size_t)agent >= na)
		return cli_usage("counters", "no agent %lld: this machine has agents 0 to %zu",
				 agent, na - 1);
	return EXIT_OK;
}

static int do_list(long long agent, bool derived, bool tracepoints, const char *format)
{
	struct list_ctx lc = { (uint32_t)agent, derived, sonde_view__format_of(format), NULL };
	const struct sonde_agent *a;
	const char *note = sonde_counters__note();
	size_t na;
	int rc;

	a = sonde_counters__agents(&na);
	if (lc.fmt == SONDE_VIEW_JSON)
		lc.json = json_array();
	else if (lc.fmt == SONDE_VIEW_TEXT)
		printf("agent %lld: %s (core %d, package %d, numa node %d), architecture %s\n\n",
		       agent, a[agent].name, a[agent].core, a[agent].package, a[agent].numa,
		       a[agent].arch);
	rc = sonde_counters__iterate((uint32_t)agent, tracepoints, print_list, &lc);
	if (rc) {
		json_decref(lc.json);
		cli_error("counters", "cannot list the counters: %s", strerror(-rc));
		return cli_exit_code(rc);
	}
	if (lc.json) {
		json_dumpf(lc.json, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(lc.json);
	} else if (lc.fmt == SONDE_VIEW_TEXT) {
		if (!tracepoints)
			printf("\ntracepoints (SYSTEM:NAME) are counters too: --tracepoints lists "
			       "them\n");
		else if (sonde_counters__tracepoint_error())
			printf("\nno tracepoints: %s\n", sonde_counters__tracepoint_error());
		if (note)
			printf("note: %s\n", note);
	}
	return EXIT_OK;
}

/*
 * The groups: each with its counters, and whether they can all be counted
 * here (yes), some (partly: the others print <not supported>), or none.
 */
static int do_groups(long long agent, const char *format)
{
	enum sonde_view_format fmt = sonde_view__format_of(format);
	const struct sonde_counter_group *const *g;
	json_t *all = fmt == SONDE_VIEW_JSON ? json_array() : NULL;
	const char *note = sonde_counters__note();
	size_t n, i, k;
	int rc = sonde_counters__groups(&g, &n);

	if (rc) {
		json_decref(all);
		cli_error("counters", "cannot list the groups: %s", strerror(-rc));
		return cli_exit_code(rc);
	}
	if (fmt == SONDE_VIEW_CSV)
		printf("group,supported,counters,description\n");
	else if (!all)
		printf("%-10s %-10s %s\n", "GROUP", "SUPPORTED", "DESCRIPTION / COUNTERS");
	for (i = 0; i < n; i++) {
		struct sonde_strbuf names = SONDE_STRBUF_INIT;
		json_t *members = json_array();
		size_t ok = 0;
		const char *sup;

		for (k = 0; k < g[i]->n; k++) {
			struct sonde_counter_info in;
			uint32_t id;
			bool yes = !sonde_counters__find(g[i]->counters[k], &id) &&
				   !sonde_counters__info((uint32_t)agent, id, &in) && in.supported;

			ok += yes;
			sonde_strbuf__addf(&names, "%s%s",
					   k ? (fmt == SONDE_VIEW_CSV ? " " : ", ") : "",
					   g[i]->counters[k]);
			json_array_append_new(members,
					      json_pack("{s:s, s:b}", "name", g[i]->counters[k],
							"supported", yes));
		}
		sup = ok == g[i]->n ? "yes" : ok ? "partly" : "no";
		if (all)
			json_array_append_new(all,
					      json_pack("{s:s, s:s, s:s, s:o}", "name", g[i]->name,
							"supported", sup, "description",
							g[i]->description, "counters", members));
		else
			json_decref(members);
		if (fmt == SONDE_VIEW_CSV)
			printf("%s,%s,%s,\"%s\"\n", g[i]->name, sup, names.buf, g[i]->description);
		else if (!all)
			printf("%-10s %-10s %s\n%-21s %s\n", g[i]->name, sup, g[i]->description, "",
			       names.buf);
		sonde_strbuf__release(&names);
	}
	if (all) {
		json_dumpf(all, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(all);
	} else if (fmt == SONDE_VIEW_TEXT) {
		printf("\ncount one: sonde collect counters -g GROUP -- CMD\n");
		if (note)
			printf("note: %s\n", note);
	}
	return EXIT_OK;
}

static int do_info(const char *name, long long agent)
{
	struct sonde_counter_info in;
	uint32_t id;
	int d;

	if (sonde_counters__find(name, &id) || sonde_counters__info((uint32_t)agent, id, &in)) {
		cli_error("counters", "unknown counter '%s' (see 'sonde counters list')", name);
		return EXIT_USAGE; /* 127 is for a command to profile that is not found */
	}
	printf("name:        %s\n", in.name);
	printf("id:          %u\n", in.id);
	printf("kind:        %s\n", kind_names[in.kind]);
	printf("description: %s\n", in.description ? in.description : "");
	if (in.unit && *in.unit)
		printf("unit:        %s\n", in.unit);
	if (in.block)
		printf("block:       %s\nevent:       %s\n", in.block, in.event);
	if (in.expression)
		printf("expression:  %s\n", in.expression);
	if (in.arch)
		printf("defined for: %s\n", in.arch);
	printf("supported:   %s", in.supported ? "yes" : "no");
	if (!in.supported)
		printf(" (%s)", in.why && *in.why ? in.why : "no reason was found");
	printf("\ndimensions: ");
	for (d = 0; d < SONDE_DIM__COUNT; d++)
		printf(" %s[%zu]", sonde_dimension__name(d), sonde_dimension__size(d));
	printf("\n");
	return EXIT_OK;
}

/* --set NAME=V[,V...] */
struct setting {
	char *name;
	double *v;
	size_t n;
};

struct settings {
	struct setting *s;
	size_t n;
};

static int lookup_set(void *user, const char *name, const double **v, size_t *n)
{
	struct settings *ss = user;
	size_t i, j;

	for (i = 0; i < ss->n; i++) {
		const char *a = ss->s[i].name;

		for (j = 0; a[j] && name[j]; j++)
			if (a[j] != name[j] &&
			    !((a[j] == '-' || a[j] == '_') && (name[j] == '-' || name[j] == '_')))
				break;
		if (!a[j] && !name[j]) {
			*v = ss->s[i].v;
			*n = ss->s[i].n;
			return 0;
		}
	}
	return -ENOENT;
}

static int parse_setting(const char *arg, struct setting *s)
{
	const char *eq = strchr(arg, '=');
	char *list, *tok, *save, *end;

	if (!eq || eq == arg || !eq[1])
		return -EINVAL;
	s->name = strndup(arg, (size_t)(eq - arg));
	list = strdup(eq + 1);
	s->v = calloc(strlen(eq + 1) / 2 + 1, sizeof(double));
	if (!s->name || !list || !s->v) {
		free(list);
		return -ENOMEM;
	}
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		double v = strtod(tok, &end);

		if (end == tok || *end || !isfinite(v)) {
			free(list);
			return -EINVAL;
		}
		s->v[s->n++] = v;
	}
	free(list);
	return s->n ? 0 : -EINVAL;
}

/*
 * One expression: its values on stdout (JSON: into *json), a note on a
 * division by zero. With several expressions each line is "EXPR: values".
 */
static int eval_one(const char *expr, struct settings *ss, bool named, json_t *json)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	double out[4096];
	size_t n = 0, i;
	int div0 = 0, rc = sonde_counters__eval(expr, lookup_set, ss, out, 4096, &n, &div0, &err),
	    code = EXIT_OK;

	if (rc) {
		if (named)
			cli_error("counters", "%s: %s", expr, cli_why(&err, rc));
		else
			cli_error("counters", "%s", cli_why(&err, rc));
		code = rc == -EINVAL ? EXIT_USAGE : cli_exit_code(rc);
		if (json)
			json_array_append_new(json, json_pack("{s:s, s:s}", "expression", expr,
							      "error", err.buf));
	} else if (json) {
		json_t *o = json_object(), *a = json_array();

		for (i = 0; i < n; i++)
			json_array_append_new(a,
					      isfinite(out[i]) ? json_real(out[i]) : json_null());
		if (named)
			json_object_set_new(o, "expression", json_string(expr));
		json_object_set_new(o, "values", a);
		if (div0)
			json_object_set_new(o, "division_by_zero_column", json_integer(div0));
		json_array_append_new(json, o);
	} else {
		if (named)
			printf("%s: ", expr);
		for (i = 0; i < n; i++)
			printf("%s%.10g", i ? " " : "", out[i]);
		putchar('\n');
	}
	if (!rc && div0)
		fprintf(stderr,
			"sonde: counters: note: %s%sdivision by zero at column %d gives NaN\n",
			named ? expr : "", named ? ": " : "", div0);
	sonde_strbuf__release(&err);
	return code;
}

static int do_eval(char **exprs, int nexpr, const struct sonde_strlist *sets, const char *format)
{
	struct settings ss = { calloc(sets->n + 1, sizeof(struct setting)), 0 };
	bool json = sonde_view__format_of(format) == SONDE_VIEW_JSON;
	json_t *all = json ? json_array() : NULL;
	size_t i;
	int rc, code = EXIT_OK, k;

	if (!ss.s)
		return EXIT_FAILURE_;
	for (i = 0; i < sets->n; i++) {
		rc = parse_setting(sets->items[i], &ss.s[ss.n]);
		ss.n++;
		if (rc) {
			code = cli_usage("counters",
					 "invalid value '%s' for '--set': expected NAME=V[,V...] "
					 "with numbers",
					 sets->items[i]);
			goto out;
		}
	}
	for (k = 0; k < nexpr; k++) {
		rc = eval_one(exprs[k], &ss, nexpr > 1, all);
		code = code == EXIT_OK ? rc : code;
	}
	if (all && (nexpr > 1 || json_array_size(all) == 1)) {
		json_t *doc = nexpr > 1 ? json_pack("{s:O}", "results", all)
					: json_incref(json_array_get(all, 0));

		if (nexpr > 1 || !json_object_get(doc, "error")) {
			json_dumpf(doc, stdout, JSON_INDENT(2));
			putchar('\n');
		}
		json_decref(doc);
	}
out:
	json_decref(all);
	for (i = 0; i < ss.n; i++) {
		free(ss.s[i].name);
		free(ss.s[i].v);
	}
	free(ss.s);
	return code;
}

int cmd_counters(int argc, char **argv)
{
	bool derived = false, tracepoints = false, groups = false;
	long long agent = 0;
	const char *defs = NULL, *format = "text", *arch = NULL;
	struct sonde_strlist sets = { 0 };
	const struct sonde_option opts[] = {
		{ SONDE_OPT_FLAG, 0, "derived", &derived, NULL, "list: only derived metrics" },
		{ SONDE_OPT_FLAG, 0, "tracepoints", &tracepoints, NULL,
		  "list: tracepoints too (from tracefs)" },
		{ SONDE_OPT_FLAG, 0, "groups", &groups, NULL,
		  "list: the groups of counters (collect counters -g GROUP) instead" },
		{ SONDE_OPT_INT, 0, "agent", &agent, "N", "the agent (CPU) to ask (default 0)", 0,
		  1e6 },
		{ SONDE_OPT_LIST, 0, "set", &sets, "NAME=V[,V...]",
		  "eval: the values of a name (one per dimension instance)" },
		{ SONDE_OPT_STRING, 0, "defs", &defs, "FILE",
		  "load more counter definitions (counter_defs.yaml format)" },
		{ SONDE_OPT_STRING, 0, "arch", &arch, "ARCH",
		  "read the definitions of architecture ARCH (gfx90a, say) instead of this "
		  "machine's" },
		{ SONDE_OPT_CHOICE, 0, "format", &format, NULL, "output format", 0, 0,
		  sonde_view__formats },
		{ .type = SONDE_OPT_END },
	};
	const char *sub;
	int first, code;

	first = cli_parse("counters", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0) {
		sonde_strlist__release(&sets);
		return code;
	}
	argv += 1 + first;
	argc -= 1 + first;
	if (argc < 1) {
		sonde_strlist__release(&sets);
		return cli_usage("counters", "which subcommand? (list, info, eval)");
	}
	sub = argv[0];
	if (arch && sonde_counters__use_arch(arch)) {
		sonde_strlist__release(&sets);
		return cli_usage("counters", "invalid architecture '%s'", arch);
	}
	code = load_defs(defs);
	if (code == EXIT_OK)
		code = check_agent(agent);
	if (code != EXIT_OK) {
		sonde_strlist__release(&sets);
		return code;
	}
	if (!strcmp(sub, "list") && argc == 1 && groups)
		code = do_groups(agent, format);
	else if (!strcmp(sub, "list") && argc == 1)
		code = do_list(agent, derived, tracepoints, format);
	else if (!strcmp(sub, "info") && argc == 2)
		code = do_info(argv[1], agent);
	else if (!strcmp(sub, "eval") && argc >= 2)
		code = do_eval(argv + 1, argc - 1, &sets, format);
	else if (strcmp(sub, "list") && strcmp(sub, "info") && strcmp(sub, "eval"))
		code = cli_usage("counters", "unknown subcommand '%s' (list, info, eval)", sub);
	else
		code = cli_usage("counters", "'%s' takes %s", sub,
				 !strcmp(sub, "list")	? "no argument"
				 : !strcmp(sub, "info") ? "one argument"
							: "one expression or more");
	sonde_strlist__release(&sets);
	return code;
}
