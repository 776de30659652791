/*
 * cmd-log.c - `sonde log [-n N]`: the last commits with their profile counts.
 */
#include <errno.h>
#include <string.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde log [-n N]\n\n"
	"The last commits, newest first: the profiles registered for each and, for\n"
	"the commits 'sonde check head' or 'sonde check all' looked at, the\n"
	"degradations found.";

/* What `sonde check head|all` found for the commit, as a column (blank: not checked). */
static void checked(struct sonde_store *s, const char *commit)
{
	char path[4096], cell[32];
	json_t *o;
	long long d;

	snprintf(path, sizeof(path), "%s/checks/%s.json", sonde_store__root(s), commit);
	o = json_load_file(path, 0, NULL);
	if (!json_is_integer(json_object_get(o, "degradations"))) {
		printf("%-17s ", "");
		json_decref(o);
		return;
	}
	d = (long long)json_integer_value(json_object_get(o, "degradations"));
	if (!json_integer_value(json_object_get(o, "pairs"))) {
		printf("%-17s ", "no baseline");
		json_decref(o);
		return;
	}
	if (d)
		snprintf(cell, sizeof(cell), "%lld degradation%s", d, d == 1 ? "" : "s");
	else
		snprintf(cell, sizeof(cell), "no degradation");
	cli_paint(stdout, d ? CLI_RED : CLI_GREEN);
	printf("%-17s", cell);
	cli_paint(stdout, CLI_RESET);
	putchar(' ');
	json_decref(o);
}

int cmd_log(int argc, char **argv)
{
	long long max = 20;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_INT, 'n', "max-count", &max, "N", "show N commits (default 20)", 1,
		  1e9 },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct sonde_store *s;
	char *line, *save;
	int first, code, rc;

	first = cli_parse("log", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (first < argc - 1)
		return cli_usage("log", "unexpected argument '%s'", argv[1 + first]);
	s = cli_open_store("log");
	if (!s)
		return EXIT_FAILURE_;
	rc = sonde_git__log(sonde_store__worktree(s), (unsigned)max, &sb);
	if (rc) {
		cli_error("log", "'%s' is not a git work tree with commits",
			  sonde_store__worktree(s));
		sonde_store__free(s);
		return EXIT_FAILURE_;
	}
	for (line = strtok_r(sb.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		long n;

		if (!tab)
			continue;
		*tab = '\0';
		n = sonde_store__count(s, line);
		if (n < 0)
			printf("%.12s    ? profiles  ", line);
		else
			printf("%.12s  %3ld profile%s  ", line, n, n == 1 ? " " : "s");
		checked(s, line);
		printf("%s\n", tab + 1);
	}
	sonde_strbuf__release(&sb);
	sonde_store__free(s);
	return EXIT_OK;
}
