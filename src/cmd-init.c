/*
 * cmd-init.c - `sonde init [DIR]`: create DIR/.sonde (jobs/, objects/, index.db).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

static const char usage[] = "usage: sonde init [DIR]\n\n"
			    "Create a store in DIR (default: the current directory). Profiles\n"
			    "collected under DIR then go to DIR/.sonde/jobs/.";

int cmd_init(int argc, char **argv)
{
	const struct sonde_option opts[] = { { .type = SONDE_OPT_END } };
	const char *dir = ".";
	char head[41], probe[4096];
	bool existed = false;
	int first, code, rc;

	first = cli_parse("init", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (argc - 1 - first > 1)
		return cli_usage("init", "too many arguments");
	if (argc - 1 - first == 1)
		dir = argv[1 + first];
	if (snprintf(probe, sizeof(probe), "%s/.sonde/index.db", dir) < (int)sizeof(probe) &&
	    access(probe, F_OK) == 0)
		existed = true;
	rc = sonde_store__init(dir);
	if (rc) {
		cli_error("init", "cannot create '%s/.sonde': %s", dir, strerror(-rc));
		return cli_exit_code(rc);
	}
	if (existed)
		printf("a sonde store is already in '%s/.sonde': left as it is\n", dir);
	else
		printf("initialised a sonde store in '%s/.sonde'\n", dir);
	/* profiles are not sources: keep .sonde/ out of `git status`, without touching .gitignore
	 */
	if (sonde_git__exclude(dir, ".sonde/") == 1)
		printf("added '.sonde/' to the repository's info/exclude\n");
	if (sonde_git__resolve(dir, "HEAD", head))
		printf("note: '%s' is not a git work tree with commits: profiles will have no "
		       "origin and cannot be registered\n",
		       dir);
	return EXIT_OK;
}
