/*
 * cmd-init.c - `sonde init [DIR]`: create DIR/.sonde (jobs/, objects/, index.db).
 */
#include <errno.h>
#include <string.h>
#include "cli.h"

static const char usage[] = "usage: sonde init [DIR]\n\n"
			    "Create a store in DIR (default: the current directory). Profiles\n"
			    "collected under DIR then go to DIR/.sonde/jobs/.";

int cmd_init(int argc, char **argv)
{
	const struct sonde_option opts[] = { { .type = SONDE_OPT_END } };
	const char *dir = ".";
	char head[41];
	int first, code, rc;

	first = cli_parse("init", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (argc - 1 - first > 1)
		return cli_usage("init", "too many arguments");
	if (argc - 1 - first == 1)
		dir = argv[1 + first];
	rc = sonde_store__init(dir);
	if (rc) {
		cli_error("init", "cannot create '%s/.sonde': %s", dir, strerror(-rc));
		return cli_exit_code(rc);
	}
	printf("initialised a sonde store in '%s/.sonde'\n", dir);
	if (sonde_git__resolve(dir, "HEAD", head))
		printf("note: '%s' is not a git work tree with commits: profiles will have no "
		       "origin and cannot be registered\n",
		       dir);
	return EXIT_OK;
}
