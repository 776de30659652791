/*
 * cmd-pull.c - `sonde pull [REMOTE]`: register the git remote's profiles
 * (refs/sonde/profiles; lib/share.c) that the store does not have.
 */
#include <errno.h>
#include <string.h>
#include <sonde/share.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde pull [REMOTE]\n\n"
	"Register the profiles that REMOTE (default origin) holds under\n"
	"refs/sonde/profiles and this store does not have, each against its origin\n"
	"commit, as 'sonde add' would: 'sonde log', 'check' and 'report' then see\n"
	"them. A blob that is not a profile is left out and said (exit 1).";

int cmd_pull(int argc, char **argv)
{
	const struct sonde_option opts[] = { { .type = SONDE_OPT_END } };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_share_result r;
	struct sonde_store *s;
	const char *remote = "origin";
	int first, code, rc;

	first = cli_parse("pull", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (first < argc - 1)
		remote = argv[1 + first];
	if (first + 1 < argc - 1)
		return cli_usage("pull", "unexpected argument '%s'", argv[2 + first]);
	if (!*remote || remote[0] == '-')
		return cli_usage("pull", "'%s' is not a remote", remote);
	s = cli_open_store("pull");
	if (!s)
		return EXIT_FAILURE_;
	rc = sonde_share__pull(s, remote, &r, &err);
	code = EXIT_OK;
	if (rc) {
		cli_error("pull", "%s", err.len ? err.buf : strerror(-rc));
		code = EXIT_FAILURE_;
	} else {
		if (!cli_quiet()) {
			if (!r.remote)
				printf("%s has no sonde profiles\n", remote);
			else
				printf("registered %u profile%s from %s (%u there, %u here "
				       "already)\n",
				       r.taken, r.taken == 1 ? "" : "s", remote, r.remote, r.known);
		}
		if (r.refused) {
			cli_error("pull",
				  "%u of %s's blobs are not profiles sonde can register: %s",
				  r.refused, remote, err.buf);
			code = EXIT_FAILURE_;
		}
	}
	sonde_strbuf__release(&err);
	sonde_store__free(s);
	return code;
}
