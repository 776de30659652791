/*
 * cmd-fsck.c - `sonde fsck`: rebuild the store's index from the profiles kept
 * in .sonde/objects/, when the index is damaged or lost. The old index stays
 * beside the new one (index.db.damaged-TIME).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const char usage[] = "usage: sonde fsck\n\n"
			    "Rebuild the index of the store here (.sonde/index.db) from the\n"
			    "profiles in .sonde/objects/: after 'the store's index is damaged'.\n"
			    "The old index is kept as .sonde/index.db.damaged-TIME.";

int cmd_fsck(int argc, char **argv)
{
	const struct sonde_option opts[] = { { .type = SONDE_OPT_END } };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_store *s;
	char *dir;
	unsigned n;
	int first, code, rc;

	first = cli_parse("fsck", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (first < argc - 1)
		return cli_usage("fsck", "unexpected argument '%s'", argv[1 + first]);
	/* the store is found by its directory: its index may not open */
	dir = sonde_store__find(".");
	if (!dir) {
		cli_error("fsck", "no .sonde store here or above (run 'sonde init')");
		return EXIT_FAILURE_;
	}
	rc = sonde_store__rebuild(dir, &n, &err);
	if (rc) {
		cli_error("fsck", "%s", cli_why(&err, rc));
		code = cli_exit_code(rc);
	} else {
		s = sonde_store__open(dir);
		printf("rebuilt the index of '%s/.sonde': %u profile%s registered\n", dir, n,
		       n == 1 ? "" : "s");
		sonde_store__free(s);
		code = EXIT_OK;
	}
	sonde_strbuf__release(&err);
	free(dir);
	return code;
}
