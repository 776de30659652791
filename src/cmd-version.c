/*
 * cmd-version.c - `sonde version [--features]`.
 *
 * --features prints one line per part: "NAME yes" or "NAME no (install PACKAGE)",
 * so tests and users can tell what this build contains.
 */
#include <string.h>
#include "config.h"
#include "cli.h"

static const char usage[] = "usage: sonde version [--features]";

int cmd_version(int argc, char **argv)
{
	bool features = false;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_FLAG, 0, "features", &features, NULL,
		  "list the parts built in and those left out" },
		{ .type = SONDE_OPT_END },
	};
	const struct sonde_collector *const *b;
	int first, code;
	size_t n, i;

	first = cli_parse("version", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (first < argc - 1)
		return cli_usage("version", "unexpected argument '%s'", argv[1 + first]);
	printf("sonde %s\n", sonde_version());
	if (!features)
		return EXIT_OK;
	b = sonde_collector__builtins(&n);
	for (i = 0; i < n; i++) {
		/* The GPU backends are built and tested without a GPU; say so
		 * until tests/gpu/device.sh has passed on one. */
		if (strcmp(b[i]->name, "gpu") == 0)
			printf("collector:gpu yes (not yet run on a GPU: built and tested "
			       "without one; tests/gpu/device.sh validates it)\n");
		else
			printf("collector:%s yes\n", b[i]->name);
	}
	printf("plugins yes\nstore yes\n");
	{
		char list[] = SONDE_OPTIONAL_FEATURES, *save, *tok;

		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *c1 = strchr(tok, ':'), *c2;

			if (!c1)
				continue;
			*c1 = '\0';
			c2 = strchr(c1 + 1, ':');
			if (c2) {
				*c2 = '\0';
				printf("%s no (install %s)\n", tok, c2 + 1);
			} else {
				printf("%s %s\n", tok, c1 + 1);
			}
		}
	}
	return EXIT_OK;
}
