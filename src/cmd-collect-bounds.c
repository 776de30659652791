/*
 * cmd-collect-bounds.c - `sonde collect bounds -s FILE.c | -d DIR`: the static
 * loop bounds of C sources (libsonde's bounds.h), written as a profile of
 * type "bound" with a table of the functions and loops on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sonde/bounds.h>
#include <sonde/file.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde collect bounds (-s FILE.c)... | -d DIR [--cflags FLAGS] [-o FILE]\n\n"
	"Bound every loop of C sources without running them: for each loop the\n"
	"iterations of one entry (local) and of one call of its function (total),\n"
	"as an expression over the function's variables, and the complexity class\n"
	"O(n^k); a loop it cannot bound is 'unbounded', with why, never guessed.\n"
	"libclang parses the sources (Debian libclang1-14, loaded at run time).\n"
	"Exit status: 0 the profile is written, 1 a source does not parse or cannot\n"
	"be read, 2 usage, 3 libclang cannot be loaded. What it bounds and how:\n"
	"bounds.md in /usr/local/share/doc/sonde.";

/* The .c files of dir and below (sorted as found; at most 10000). */
static int sources_in(const char *dir, struct sonde_strlist *out, char ***owned, size_t *nowned,
		      int depth)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort), i;

	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		size_t len = strlen(ents[i]->d_name);

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && !stat(path, &st)) {
			if (S_ISDIR(st.st_mode) && depth < 16) {
				sources_in(path, out, owned, nowned, depth + 1);
			} else if (S_ISREG(st.st_mode) && len > 2 &&
				   !strcmp(ents[i]->d_name + len - 2, ".c") && *nowned < 10000) {
				char **o = realloc(*owned, (*nowned + 1) * sizeof(*o));

				if (o) {
					*owned = o;
					o[*nowned] = strdup(path);
					if (o[*nowned])
						sonde_strlist__push(out, o[(*nowned)++]);
				}
			}
		}
		free(ents[i]);
	}
	free(ents);
	return 0;
}

/* The table: a function's class and bound, then its loops. */
static void print_table(struct sonde_profile *p)
{
	size_t n = sonde_profile__resource_count(p), i;

	fprintf(stderr, "%-40s %-9s %-10s %s\n", "function / loop (line:column)", "kind", "class",
		"bound (total: over one call)");
	for (i = 0; i < n; i++) {
		json_t *fixed;
		const char *st, *fn, *cls, *bound, *loop;
		char where[160];

		if (sonde_profile__resource_at(p, i, NULL, &fixed, NULL))
			continue;
		st = json_string_value(json_object_get(fixed, "subtype"));
		fn = json_string_value(json_object_get(fixed, "function"));
		cls = json_string_value(json_object_get(fixed, "class"));
		bound = json_string_value(json_object_get(fixed, "bound"));
		loop = json_string_value(json_object_get(fixed, "loop"));
		if (!st || !strcmp(st, "local"))
			continue;
		snprintf(where, sizeof(where), "%s%s:%lld:%lld", strcmp(st, "function") ? "  " : "",
			 fn ? fn : "?",
			 (long long)json_integer_value(json_object_get(fixed, "line")),
			 (long long)json_integer_value(json_object_get(fixed, "column")));
		fprintf(stderr, "%-40s %-9s %-10s %s\n", where,
			strcmp(st, "function") ? (loop ? loop : "loop") : "function",
			cls ? cls : "?", bound ? bound : "?");
	}
}

int collect_bounds(int argc, char **argv)
{
	struct sonde_strlist files = { 0 };
	const char *dir = NULL, *cflags = NULL, *out_file = NULL;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_LIST, 's', "source", &files, "FILE.c", "a C source (repeatable)" },
		{ SONDE_OPT_STRING, 'd', "dir", &dir, "DIR", "every .c file under DIR" },
		{ SONDE_OPT_STRING, 0, "cflags", &cflags, "FLAGS",
		  "compiler arguments for parsing (-I, -D), one string" },
		{ SONDE_OPT_STRING, 'o', "output", &out_file, "FILE",
		  "the profile's path (default: the store's jobs/, or here)" },
		{ .type = SONDE_OPT_END }
	};
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p = NULL;
	char **owned = NULL, *path = NULL, *used = NULL, *buf;
	size_t nowned = 0, len, i;
	char **words = NULL;
	size_t nwords = 0;
	int first, code = EXIT_OK, rc;

	/* argv: sonde-collect bounds [options] */
	first = cli_parse("collect bounds", usage, opts, argc - 2, argv + 2, SONDE_OPTPARSE_PERMUTE,
			  NULL, &code);
	if (first < 0)
		goto out;
	if (first < argc - 2) {
		code = cli_usage("collect",
				 "bounds analyses sources: '%s' is not an option "
				 "(give -s FILE.c or -d DIR)",
				 argv[2 + first]);
		goto out;
	}
	if (dir && sources_in(dir, &files, &owned, &nowned, 0)) {
		cli_error("collect", "cannot read the directory '%s': %s", dir, strerror(errno));
		code = EXIT_FAILURE_;
		goto out;
	}
	if (!files.n) {
		code = cli_usage("collect",
				 dir ? "no .c file under '%s'"
				     : "bounds needs sources: -s FILE.c or -d DIR%s",
				 dir ? dir : "");
		goto out;
	}
	/* split as a shell splits (the shell expanded them once already): nothing substituted */
	if (cflags && *cflags && cli_split_words(cflags, &words, &nwords)) {
		code = cli_usage("collect",
				 "--cflags: '%s' cannot be split into words (a quote "
				 "left open?)",
				 cflags);
		goto out;
	}
	rc = sonde_bounds__analyse(files.items, files.n, (const char *const *)words, nwords, &p,
				   &err);
	if (rc) {
		cli_error("collect", "bounds: %s", cli_why(&err, rc));
		code = rc == -ENOTSUP ? EXIT_UNSUPPORTED : EXIT_FAILURE_;
		goto out;
	}
	{ /* what was analysed, as a command line */
		struct sonde_strbuf cmd = SONDE_STRBUF_INIT;
		json_t *args = json_array();

		rc = !args;
		for (i = 0; !rc && i < files.n; i++) {
			sonde_strbuf__addf(&cmd, "%s%s", i ? " " : "", files.items[i]);
			rc |= json_array_append_new(args, json_string(files.items[i]));
		}
		rc |= sonde_strbuf__error(&cmd) ||
		      sonde_profile__set(sonde_profile__header(p), "cmd", json_string(cmd.buf));
		rc |= sonde_profile__set(sonde_profile__header(p), "args", args);
		rc |= sonde_profile__set(sonde_profile__collector_info(p), "name",
					 json_string("bounds"));
		sonde_strbuf__release(&cmd);
	}
	if (rc || sonde_profile__stamp(p)) {
		cli_error("collect", "cannot build the profile: %s", strerror(ENOMEM));
		code = EXIT_FAILURE_;
		goto out;
	}
	if (out_file) {
		path = strdup(out_file);
	} else {
		struct sonde_store *s = sonde_store__open(".");
		char date[32], *base = strdup(files.items[0]);
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(date, sizeof(date), "%Y-%m-%d-%H-%M-%S", &tm);
		if (asprintf(&path, "%s%sbounds-%s-%s.json", s ? sonde_store__jobs(s) : "",
			     s ? "/" : "", base ? basename(base) : "src", date) < 0)
			path = NULL;
		free(base);
		sonde_store__free(s);
	}
	buf = path ? sonde_profile__dump(p, &len) : NULL;
	if (!buf) {
		cli_error("collect", "out of memory");
		code = EXIT_FAILURE_;
		goto out;
	}
	buf[len] = '\n';
	rc = sonde_file__write_data(path, buf, len + 1, out_file ? 0 : SONDE_FILE_NEW, &used);
	free(buf);
	if (rc) {
		cli_error("collect", "cannot write profile '%s': %s", path, strerror(-rc));
		code = EXIT_FAILURE_;
		goto out;
	}
	if (!cli_quiet()) {
		json_t *st = json_object_get(sonde_profile__stats(p), "bounds");

		print_table(p);
		fprintf(stderr, "\n%lld functions, %lld loops, %lld unbounded\n",
			(long long)json_integer_value(json_object_get(st, "functions")),
			(long long)json_integer_value(json_object_get(st, "loops")),
			(long long)json_integer_value(json_object_get(st, "unbounded")));
		fprintf(stderr, "profile written to '%s'\n", used ? used : path);
	}
out:
	cli_free_words(words, nwords);
	for (i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	free(path);
	free(used);
	sonde_profile__free(p);
	sonde_strbuf__release(&err);
	sonde_strlist__release(&files);
	return code;
}
