/*
 * sonde.c - the command table and main(): global options, then one command.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sonde/config.h>
#include <sonde/symbols.h>
#include "cli.h"

static const struct cli_command commands[] = {
	{ "init", cmd_init, "create a .sonde store in a directory" },
	{ "collect", cmd_collect, "run a command under a collector and write its profile" },
	{ "status", cmd_status, "show the store: HEAD, pending and registered profiles" },
	{ "add", cmd_add, "register profiles against their origin commit" },
	{ "rm", cmd_rm, "remove registered or pending profiles" },
	{ "log", cmd_log, "list commits with the number of profiles of each" },
	{ "fsck", cmd_fsck, "rebuild the store's index from its stored profiles" },
	{ "push", cmd_push, "send the registered profiles to a git remote (refs/sonde/profiles)" },
	{ "pull", cmd_pull, "register the profiles a git remote holds that the store lacks" },
	{ "show", cmd_show, "print or draw a profile (tables, charts, flame graphs)" },
	{ "export", cmd_export,
	  "write a profile in another format (csv, json, folded, perfetto, pprof)" },
	{ "import", cmd_import, "read a pprof profile or perf script's output as a sonde profile" },
	{ "postprocess", cmd_postprocess, "fit models to a profile (regression, smoothing)" },
	{ "run", cmd_run, "collect profiles in a batch: a job, or the configuration's matrix" },
	{ "check", cmd_check, "compare two profiles or commits; exit 4 on a degradation" },
	{ "report", cmd_report, "write one self-contained HTML report of profiles" },
	{ "version", cmd_version, "print the version and the optional parts built in" },
	{ "counters", cmd_counters, "the counter catalog: list, info, and evaluate expressions" },
	{ "config", cmd_config, "read and write the configuration (YAML) of the store and user" },
	{ "collector", cmd_collector, "register a plugin or external collector by name" },
	{ "utils", cmd_utils, "helpers: create a collector plugin template" },
};

static const size_t ncommands = sizeof(commands) / sizeof(commands[0]);

static const char usage[] =
	"usage: sonde [-v|-q] [--debug=DOMAINS] [--color=WHEN] COMMAND [ARGS...]";

static void print_help(FILE *out)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	size_t i;

	sonde_options__help(cli_global_options(), &sb);
	fprintf(out,
		"%s\n\nsonde runs programs under collectors and keeps their profiles.\n\n"
		"commands:\n",
		usage);
	for (i = 0; i < ncommands; i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"  %-12s %s\n\nglobal options (also accepted after the command):\n%s"
		"      --version               print the version\n"
		"\n'sonde COMMAND --help' describes a command; man pages: sonde(1), "
		"sonde-COMMAND(1).\nExit codes: 0 ok, 1 failure, 2 usage, 3 unsupported or not "
		"permitted, 4 degradation\nfound, 126/127 the command cannot be executed / was not "
		"found, 130 interrupted.\n",
		"help", "this help, a command's, or man pages and completion", sb.buf);
	sonde_strbuf__release(&sb);
}

const struct cli_command *cli_commands(size_t *n)
{
	*n = ncommands;
	return commands;
}

static void log_to_stderr(enum sonde_log_level level, const char *domain, const char *msg,
			  void *ctx)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	(void)ctx;
	/* the one format of warnings: "sonde: warning: [DOMAIN: ]message" */
	fprintf(stderr, "sonde: %s: %s%s%s\n", names[level], domain ? domain : "",
		domain ? ": " : "", msg);
}

/*
 * The symbol cache: $SONDE_CACHE_DIR (empty: none), else $XDG_CACHE_HOME/sonde,
 * else ~/.cache/sonde.
 */
static void symbol_cache(void)
{
	const char *env = getenv("SONDE_CACHE_DIR");
	char *dir;

	if (env) {
		if (env[0])
			sonde_symbols__set_cache_dir(env);
		return;
	}
	if (sonde_config__xdg_dir("XDG_CACHE_HOME", ".cache", &dir))
		return;
	sonde_symbols__set_cache_dir(dir);
	free(dir);
}

int main(int argc, char **argv)
{
	struct sonde_optparse st = { 0 };
	const char *names[sizeof(commands) / sizeof(commands[0]) + 2], *near;
	int i;
	size_t k;

	cli_terminal_guard();
	sonde_log__set_callback(log_to_stderr, NULL);
	symbol_cache();
	for (i = 1; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--version")) {
			printf("sonde %s\n", sonde_version());
			return EXIT_OK;
		}
	i = sonde_options__parse(cli_global_options(), argc - 1, argv + 1, &st);
	if (i == -ENOMEM || (i < 0 && sonde_strbuf__error(&st.err))) {
		cli_error(NULL, "%s", strerror(ENOMEM));
		sonde_optparse__release(&st);
		return EXIT_FAILURE_;
	}
	if (i < 0) {
		fprintf(stderr, "sonde: %s\ntry 'sonde --help'\n", cli_why(&st.err, i));
		sonde_optparse__release(&st);
		return EXIT_USAGE;
	}
	sonde_optparse__release(&st);
	cli_apply_globals();
	i++;
	if (st.help) {
		print_help(stdout);
		return EXIT_OK;
	}
	if (i >= argc) {
		print_help(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		if (argc - i == 1) {
			print_help(stdout);
			return EXIT_OK;
		}
		return cmd_help(argc - i, argv + i);
	}
	for (k = 0; k < ncommands; k++)
		if (!strcmp(commands[k].name, argv[i]))
			return commands[k].fn(argc - i, argv + i);
	for (k = 0; k < ncommands; k++)
		names[k] = commands[k].name;
	names[k++] = "help";
	names[k] = NULL;
	near = sonde_options__suggest(argv[i], names);
	if (near)
		fprintf(stderr, "sonde: '%s' is not a sonde command; did you mean '%s'?\n", argv[i],
			near);
	else
		fprintf(stderr, "sonde: '%s' is not a sonde command\ntry 'sonde --help'\n",
			argv[i]);
	return EXIT_USAGE;
}
