/*
 * cmd-rm.c - `sonde rm PROFILE...`: unregister N@i profiles (their stored copy is
 * deleted) or delete N@p pending profiles.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

static const char usage[] = "usage: sonde rm PROFILE...\n\n"
			    "PROFILE is N@i (registered for HEAD) or N@p (pending).";

int cmd_rm(int argc, char **argv)
{
	const struct sonde_option opts[] = { { .type = SONDE_OPT_END } };
	struct sonde_store *s;
	long long *ids;
	char **paths;
	int first, code = EXIT_OK, i, n;

	first = cli_parse("rm", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	n = argc - 1 - first;
	if (n < 1)
		return cli_usage("rm", "which profile?");
	s = cli_open_store("rm");
	if (!s)
		return EXIT_FAILURE_;
	paths = calloc((size_t)n, sizeof(*paths));
	ids = calloc((size_t)n, sizeof(*ids));
	for (i = 0; paths && ids && i < n; i++) {
		if (!strchr(argv[i], '@')) {
			cli_error("rm", "'%s': name profiles as N@i or N@p", argv[i]);
			code = EXIT_USAGE;
		} else if (!(paths[i] = cli_profile_path("rm", argv[i], &ids[i]))) {
			code = EXIT_FAILURE_;
		}
	}
	for (i = 0; paths && ids && code == EXIT_OK && i < n; i++) {
		int rc = ids[i] ? sonde_store__remove(s, ids[i])
				: (unlink(paths[i]) < 0 ? -errno : 0);

		if (rc) {
			cli_error("rm", "cannot remove '%s': %s", argv[i], strerror(-rc));
			code = EXIT_FAILURE_;
		} else {
			printf("removed '%s'\n", argv[i]);
		}
	}
	for (i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
	free(ids);
	sonde_store__free(s);
	return code;
}
