/*
 * cmd-push.c - `sonde push [REMOTE]`: the registered profiles to the git
 * remote (refs/sonde/profiles; lib/share.c).
 */
#include <errno.h>
#include <string.h>
#include <sonde/share.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde push [REMOTE]\n\n"
	"Send the store's registered profiles to REMOTE (default origin: a remote\n"
	"name or URL git knows), as blobs under its refs/sonde/profiles. Only what\n"
	"the remote lacks is sent; a push that another clone's overtook is made\n"
	"again on top of theirs. 'sonde pull' takes them on another clone.";

int cmd_push(int argc, char **argv)
{
	const struct sonde_option opts[] = { { .type = SONDE_OPT_END } };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_share_result r;
	struct sonde_store *s;
	const char *remote = "origin";
	int first, code, rc;

	first = cli_parse("push", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (first < argc - 1)
		remote = argv[1 + first];
	if (first + 1 < argc - 1)
		return cli_usage("push", "unexpected argument '%s'", argv[2 + first]);
	if (!*remote || remote[0] == '-')
		return cli_usage("push", "'%s' is not a remote", remote);
	s = cli_open_store("push");
	if (!s)
		return EXIT_FAILURE_;
	rc = sonde_share__push(s, remote, &r, &err);
	if (rc) {
		cli_error("push", "%s", err.len ? err.buf : strerror(-rc));
		code = EXIT_FAILURE_;
	} else {
		code = EXIT_OK;
		if (!cli_quiet()) {
			if (r.sent)
				printf("pushed %u profile%s to %s (%u there now", r.sent,
				       r.sent == 1 ? "" : "s", remote, r.remote);
			else
				printf("%s has every registered profile (%u there", remote,
				       r.remote);
			if (r.attempts > 1)
				printf("; made again %u time%s on top of other pushes",
				       r.attempts - 1, r.attempts == 2 ? "" : "s");
			printf(")\n");
		}
	}
	sonde_strbuf__release(&err);
	sonde_store__free(s);
	return code;
}
