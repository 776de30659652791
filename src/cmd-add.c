/*
 * cmd-add.c - `sonde add PROFILE...`: register profiles against their origin.
 *
 * A profile whose origin is not HEAD is refused unless --force: registering it
 * would tie the numbers to a commit the user is not looking at. A pending
 * profile (in .sonde/jobs/) is removed once registered, unless --keep.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

static const char usage[] = "usage: sonde add [--force] [--keep] PROFILE...\n\n"
			    "PROFILE is a path or N@p (see 'sonde status').";

int cmd_add(int argc, char **argv)
{
	bool force = false, keep = false;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_FLAG, 0, "force", &force, NULL,
		  "register even when the origin is not HEAD" },
		{ SONDE_OPT_FLAG, 'k', "keep", &keep, NULL, "keep the pending profile in jobs/" },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_store *s;
	char head[41] = "";
	char **paths;
	int first, code = EXIT_OK, i, n, hrc;

	first = cli_parse("add", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	n = argc - 1 - first;
	if (n < 1)
		return cli_usage("add", "which profile?");
	s = cli_open_store("add");
	if (!s)
		return EXIT_FAILURE_;
	hrc = sonde_git__resolve(sonde_store__worktree(s), "HEAD", head);
	if (hrc && hrc != -ENOENT) {
		cli_error("add", "cannot ask git for HEAD: %s", strerror(-hrc));
		sonde_store__free(s);
		return EXIT_FAILURE_;
	}
	/* Resolve every name first: N@p numbers shift once a profile leaves jobs/. */
	paths = calloc((size_t)n, sizeof(*paths));
	for (i = 0; paths && i < n; i++)
		if (!(paths[i] = cli_profile_path("add", argv[i], NULL)))
			code = EXIT_FAILURE_;
	for (i = 0; paths && code == EXIT_OK && i < n; i++) {
		struct sonde_strbuf err = SONDE_STRBUF_INIT;
		struct sonde_profile *p = sonde_profile__load(paths[i], &err);
		const char *origin = p ? sonde_profile__origin(p) : NULL;
		char real[PATH_MAX], jobs[PATH_MAX];
		int rc;

		if (!p) {
			cli_error("add", "%s", cli_why(&err, -errno));
			code = errno == ENOTSUP ? EXIT_UNSUPPORTED : EXIT_FAILURE_;
		} else if (origin && !force && strcmp(origin, head)) {
			cli_error("add",
				  "'%s' was measured on %.12s, not on HEAD (%.12s); use --force to "
				  "register it anyway",
				  argv[i], origin, head[0] ? head : "none");
			code = EXIT_FAILURE_;
		} else if ((rc = sonde_store__add(s, paths[i], &err))) {
			cli_error("add", "%s", cli_why(&err, rc));
			code = cli_exit_code(rc);
		} else {
			printf("registered '%s' against %.12s\n", argv[i], origin);
			if (!keep && realpath(paths[i], real) &&
			    realpath(sonde_store__jobs(s), jobs) &&
			    !strncmp(real, jobs, strlen(jobs)) && real[strlen(jobs)] == '/')
				unlink(real);
		}
		sonde_profile__free(p);
		sonde_strbuf__release(&err);
	}
	for (i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
	sonde_store__free(s);
	return code;
}
