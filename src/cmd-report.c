/*
 * cmd-report.c - `sonde report PROFILE... [-o FILE.html]`: one self-contained
 * HTML report (answers, tables, charts, flame graphs, facts; each profile
 * compared with the nearest earlier one of the same collector and command).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde report BASELINE... TARGET [-o FILE.html]\n"
	"\n"
	"Write one HTML file with everything about the profiles: what each answers\n"
	"first (peak and leaks, mean wall time, the costliest functions), its warnings,\n"
	"the summary table, charts (with fitted models), the flame graph, and how it\n"
	"was measured. Each profile is compared with the nearest one before it of the\n"
	"same collector and command: the baseline comes first, as in 'sonde check\n"
	"BASELINE TARGET' and 'sonde show OLD diff NEW'. The file loads nothing from\n"
	"the network. A profile is a path, N@p or N@i.";

int cmd_report(int argc, char **argv)
{
	const char *out_file = NULL;
	struct sonde_option opts[] = {
		{ SONDE_OPT_STRING, 'o', "output", &out_file, "FILE",
		  "the HTML file (sonde-report.html, or -1, -2... beside an existing one; - for "
		  "stdout)" },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct sonde_profile **p;
	int first, code = EXIT_OK, rc, i, n;

	first = cli_parse("report", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	n = argc - 1 - first;
	if (n < 1)
		return cli_usage("report", "which profiles? give paths, N@p or N@i");
	p = calloc((size_t)n, sizeof(*p));
	if (!p) {
		cli_error("report", "out of memory");
		return EXIT_FAILURE_;
	}
	code = cli_load_profiles("report", (const char *const *)argv, (size_t)n, p);
	if (code == EXIT_OK) {
		char *used = NULL;

		rc = sonde_view__report(p, (const char *const *)argv, (size_t)n, &sb);
		if (!rc) /* cut short by memory: not written as if whole */
			rc = sonde_strbuf__error(&sb);
		/* the default name never replaces what is there (a planted link included) */
		if (!rc)
			rc = out_file ? cli_write_output(out_file, sb.buf, sb.len)
				      : cli_write_new("sonde-report.html", sb.buf, sb.len, &used);
		if (rc) {
			cli_error("report", "cannot write '%s': %s",
				  out_file ? out_file : "sonde-report.html", strerror(-rc));
			code = EXIT_FAILURE_;
		} else if (!out_file || strcmp(out_file, "-")) {
			printf("report: %s\n", out_file ? out_file : used);
		}
		free(used);
	}
	for (i = 0; i < n; i++)
		cli_drop_profile(p[i]);
	free(p);
	sonde_strbuf__release(&sb);
	return code;
}
