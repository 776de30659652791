/*
 * sonde.c - the command table and main(): global options, then one command.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

static const struct cli_command commands[] = {
	{ "init", cmd_init, "create a .sonde store in a directory" },
	{ "collect", cmd_collect, "run a command under a collector and write its profile" },
	{ "status", cmd_status, "show the store: HEAD, pending and registered profiles" },
	{ "add", cmd_add, "register profiles against their origin commit" },
	{ "rm", cmd_rm, "remove registered or pending profiles" },
	{ "log", cmd_log, "list commits with the number of profiles of each" },
	{ "fsck", cmd_fsck, "rebuild the store's index from its stored profiles" },
	{ "show", cmd_show, "print or draw a profile (tables, charts, flame graphs)" },
	{ "export", cmd_export, "write a profile in another format (csv, json, folded, perfetto)" },
	{ "postprocess", cmd_postprocess, "fit models to a profile (regression, smoothing)" },
	{ "check", cmd_check, "compare two profiles or commits; exit 4 on a degradation" },
	{ "report", cmd_report, "write one self-contained HTML report of profiles" },
	{ "version", cmd_version, "print the version and the optional parts built in" },
	{ "counters", cmd_counters, "the counter catalog: list, info, and evaluate expressions" },
	{ "utils", cmd_utils, "helpers: create a collector plugin template" },
};

static const char usage[] = "usage: sonde [-v] [--debug=DOMAINS] COMMAND [ARGS...]";

static void print_help(void)
{
	size_t i;

	printf("%s\n\nsonde runs programs under collectors and keeps their profiles.\n\n"
	       "commands:\n",
	       usage);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		printf("  %-12s %s\n", commands[i].name, commands[i].summary);
	printf("\nglobal options:\n"
	       "  -v, --verbose         more messages (repeat for debug)\n"
	       "      --debug=DOMAINS   debug messages of domains (runner,store,... or all)\n"
	       "  -h, --help            show this help\n"
	       "\n'sonde COMMAND --help' describes a command. Exit codes: 0 ok, 1 failure,\n"
	       "2 usage, 3 unsupported or not permitted, 4 degradation found, 126/127 the\n"
	       "command cannot be executed / was not found, 130 interrupted.\n");
}

static void log_to_stderr(enum sonde_log_level level, const char *domain, const char *msg,
			  void *ctx)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	(void)ctx;
	fprintf(stderr, "sonde: %s%s%s: %s\n", names[level], domain ? " " : "",
		domain ? domain : "", msg);
}

int main(int argc, char **argv)
{
	int verbose = 0, i = 1;
	size_t k;

	cli_terminal_guard();
	sonde_log__set_callback(log_to_stderr, NULL);
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			verbose++;
		} else if (!strncmp(argv[i], "--debug=", 8)) {
			sonde_log__enable_domains(argv[i] + 8);
			verbose = 2;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			print_help();
			return EXIT_OK;
		} else if (!strcmp(argv[i], "--version")) {
			printf("sonde %s\n", sonde_version());
			return EXIT_OK;
		} else {
			fprintf(stderr, "sonde: unknown option '%s'\ntry 'sonde --help'\n",
				argv[i]);
			return EXIT_USAGE;
		}
	}
	sonde_log__set_level(verbose >= 2 ? SONDE_LOG_DEBUG
			     : verbose	  ? SONDE_LOG_INFO
					  : SONDE_LOG_WARN);
	if (i >= argc) {
		print_help();
		return EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		if (i + 1 < argc) {
			char *h[] = { argv[i + 1], "--help", NULL };

			for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
				if (!strcmp(commands[k].name, argv[i + 1]))
					return commands[k].fn(2, h);
		}
		print_help();
		return EXIT_OK;
	}
	for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(commands[k].name, argv[i]))
			return commands[k].fn(argc - i, argv + i);
	fprintf(stderr, "sonde: '%s' is not a sonde command\ntry 'sonde --help'\n", argv[i]);
	return EXIT_USAGE;
}
