/*
 * cmd-status.c - `sonde status`: HEAD, then pending (N@p) and registered (N@i)
 * profiles of the store.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "cli.h"

static const char usage[] = "usage: sonde status";

static void print_list(const char *title, const struct sonde_store_list *l, char kind)
{
	size_t i;

	printf("%s (%zu):\n", title, l->n);
	for (i = 0; i < l->n; i++) {
		const struct sonde_store_entry *e = &l->v[i];
		const char *base = strrchr(e->path, '/');
		char when[32];
		time_t t = (time_t)e->added;
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
		printf("  %zu@%c  %-8s %-10s %s  %s%s%s\n", i, kind,
		       e->collector ? e->collector : "?", e->type ? e->type : "?", when,
		       base ? base + 1 : e->path, e->workload && *e->workload ? "  workload " : "",
		       e->workload && *e->workload ? e->workload : "");
	}
}

int cmd_status(int argc, char **argv)
{
	const struct sonde_option opts[] = { { .type = SONDE_OPT_END } };
	struct sonde_store_list pend, reg;
	struct sonde_store *s;
	char head[41];
	int first, code, rc;

	first = cli_parse("status", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (first < argc - 1)
		return cli_usage("status", "unexpected argument '%s'", argv[1 + first]);
	s = cli_open_store("status");
	if (!s)
		return EXIT_FAILURE_;
	printf("store: %s\n", sonde_store__root(s));
	rc = sonde_git__resolve(sonde_store__worktree(s), "HEAD", head);
	if (rc && rc != -ENOENT) {
		cli_error("status", "cannot ask git for HEAD: %s", strerror(-rc));
		sonde_store__free(s);
		return EXIT_FAILURE_;
	}
	if (rc) {
		printf("HEAD: none (not a git work tree with commits)\n");
	} else {
		int dirty = sonde_git__dirty(sonde_store__worktree(s));

		if (dirty < 0 && dirty != -ENOENT) {
			cli_error("status", "cannot ask git for changes: %s", strerror(-dirty));
			sonde_store__free(s);
			return EXIT_FAILURE_;
		}
		printf("HEAD: %s%s\n", head, dirty == 1 ? " (uncommitted changes)" : "");
	}
	rc = sonde_store__pending(s, &pend);
	if (rc) {
		cli_error("status", "cannot list pending profiles: %s", strerror(-rc));
		sonde_store__free(s);
		return EXIT_FAILURE_;
	}
	printf("\n");
	print_list("pending profiles", &pend, 'p');
	sonde_store_list__release(&pend);
	if (head[0] && (rc = sonde_store__registered(s, head, &reg))) {
		cli_error("status", "cannot list the registered profiles: %s", strerror(-rc));
		sonde_store__free(s);
		return EXIT_FAILURE_;
	}
	if (head[0]) {
		printf("\n");
		print_list("registered profiles of HEAD", &reg, 'i');
		sonde_store_list__release(&reg);
	}
	sonde_store__free(s);
	return EXIT_OK;
}
