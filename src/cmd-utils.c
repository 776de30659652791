/*
 * cmd-utils.c - `sonde utils create collector NAME [--dir DIR]`: write a working
 * collector plugin (NAME.c, Makefile, README.md) to start from.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config.h"
#include "cli.h"

static const char usage[] = "usage: sonde utils create collector NAME [--dir DIR]\n\n"
			    "Write DIR/NAME/ (default DIR: .) with a collector plugin that builds\n"
			    "with 'make' and runs with 'sonde collect --plugin ./NAME.so -- CMD'.";

/* The template; @N@ is replaced by the collector's name. */
static const char template_c[] =
	"/*\n"
	" * @N@ - a sonde collector plugin.\n"
	" *\n"
	" * Build: make        Use: sonde collect --plugin ./@N@.so -- CMD [ARGS...]\n"
	" *\n"
	" * It records the wall time of every measured run (from the runner's clock)\n"
	" * and the user CPU time (from rusage), scaled by --scale. Change the hooks\n"
	" * to collect what you need; see sonde/collector.h for the interface.\n"
	" */\n"
	"#include <errno.h>\n"
	"#include <stdlib.h>\n"
	"#include <sonde/collector.h>\n"
	"\n"
	"struct @N@_state {\n"
	"\tlong long *wall, *user;\n"
	"\tsize_t n, cap;\n"
	"};\n"
	"\n"
	"static int @N@_before(struct sonde_collection *c)\n"
	"{\n"
	"\tstruct @N@_state *st = calloc(1, sizeof(*st));\n"
	"\n"
	"\tif (!st)\n"
	"\t\treturn -ENOMEM;\n"
	"\tsonde_collection__set_priv(c, st);\n"
	"\treturn 0;\n"
	"}\n"
	"\n"
	"static int @N@_stop(struct sonde_collection *c, const struct sonde_run_info *ri)\n"
	"{\n"
	"\tstruct @N@_state *st = sonde_collection__priv(c);\n"
	"\tlong long scale = sonde_collection__param_int(c, \"scale\", 1);\n"
	"\tconst struct rusage *ru = &ri->run->rusage;\n"
	"\n"
	"\tif (ri->warmup || ri->interrupted)\n"
	"\t\treturn 0;\n"
	"\tif (st->n == st->cap) {\n"
	"\t\tsize_t cap = st->cap ? 2 * st->cap : 16;\n"
	"\t\tlong long *w = realloc(st->wall, cap * sizeof(*w));\n"
	"\t\tlong long *u = w ? realloc(st->user, cap * sizeof(*u)) : NULL;\n"
	"\n"
	"\t\tif (w)\n"
	"\t\t\tst->wall = w;\n"
	"\t\tif (!u)\n"
	"\t\t\treturn -ENOMEM;\n"
	"\t\tst->user = u;\n"
	"\t\tst->cap = cap;\n"
	"\t}\n"
	"\tst->wall[st->n] = (long long)(ri->run->end_ns - ri->run->start_ns) * scale;\n"
	"\tst->user[st->n] = ((long long)ru->ru_utime.tv_sec * 1000000000LL +\n"
	"\t\t\t   ru->ru_utime.tv_usec * 1000LL) * scale;\n"
	"\tst->n++;\n"
	"\treturn 0;\n"
	"}\n"
	"\n"
	"static int @N@_after(struct sonde_collection *c, struct sonde_profile *p)\n"
	"{\n"
	"\tstruct @N@_state *st = sonde_collection__priv(c);\n"
	"\tlong wall = sonde_profile__resource(p, \"@N@\", \"time\", \"wall\", NULL);\n"
	"\tlong user = sonde_profile__resource(p, \"@N@\", \"time\", \"user\", NULL);\n"
	"\tsize_t i;\n"
	"\tint err = 0;\n"
	"\n"
	"\tif (wall < 0 || user < 0)\n"
	"\t\treturn -ENOMEM;\n"
	"\tfor (i = 0; i < st->n && !err; i++) {\n"
	"\t\terr |= sonde_profile__append(p, wall, \"amount\", json_integer(st->wall[i]));\n"
	"\t\terr |= sonde_profile__append(p, wall, \"order\", json_integer((json_int_t)i + 1));\n"
	"\t\terr |= sonde_profile__append(p, user, \"amount\", json_integer(st->user[i]));\n"
	"\t\terr |= sonde_profile__append(p, user, \"order\", json_integer((json_int_t)i + 1));\n"
	"\t}\n"
	"\treturn err;\n"
	"}\n"
	"\n"
	"static void @N@_cleanup(struct sonde_collection *c)\n"
	"{\n"
	"\tstruct @N@_state *st = sonde_collection__priv(c);\n"
	"\n"
	"\tif (st) {\n"
	"\t\tfree(st->wall);\n"
	"\t\tfree(st->user);\n"
	"\t}\n"
	"\tfree(st);\n"
	"}\n"
	"\n"
	"static const char *const @N@_units[] = { \"time\", \"ns\", NULL };\n"
	"\n"
	"static const struct sonde_option @N@_options[] = {\n"
	"\t{ SONDE_OPT_INT, 0, \"scale\", NULL, \"N\", \"multiply every value by N\", 1, 1e9 },\n"
	"\t{ .type = SONDE_OPT_END },\n"
	"};\n"
	"\n"
	"static const struct sonde_collector @N@_collector = {\n"
	"\t.abi = SONDE_COLLECTOR_ABI,\n"
	"\t.name = \"@N@\",\n"
	"\t.summary = \"wall and user time per run (a template)\",\n"
	"\t.profile_type = \"time\",\n"
	"\t.units = @N@_units,\n"
	"\t.options = @N@_options,\n"
	"\t.before = @N@_before,\n"
	"\t.stop = @N@_stop,\n"
	"\t.after = @N@_after,\n"
	"\t.cleanup = @N@_cleanup,\n"
	"};\n"
	"\n"
	"__attribute__((visibility(\"default\"))) const struct sonde_collector *\n"
	"sonde_collector_entry(unsigned abi)\n"
	"{\n"
	"\treturn abi == SONDE_COLLECTOR_ABI ? &@N@_collector : NULL;\n"
	"}\n";

static const char template_make[] =
	"# Build the @N@ collector plugin. SONDE_INCLUDE: where sonde's headers are.\n"
	"SONDE_INCLUDE ?= @I@\n"
	"CFLAGS ?= -O2 -g -Wall -Wextra\n"
	"\n"
	"@N@.so: @N@.c\n"
	"\t$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden -I$(SONDE_INCLUDE) \\\n"
	"\t\t$$(pkg-config --cflags jansson) -o $@ $<\n"
	"\n"
	"clean:\n"
	"\trm -f @N@.so\n";

static const char template_readme[] =
	"# @N@\n"
	"\n"
	"A sonde collector plugin.\n"
	"\n"
	"    make\n"
	"    sonde collect --plugin ./@N@.so -r 5 -- CMD [ARGS...]\n"
	"    sonde collect --plugin ./@N@.so --help   # its options, e.g. --scale N\n"
	"\n"
	"The plugin exports `sonde_collector_entry()`, which returns its collector\n"
	"table (name, profile type, units, options and the before/start/stop/after\n"
	"hooks). The libsonde functions it calls are resolved from the sonde program\n"
	"that loads it.\n";

static int write_template(const char *path, const char *tmpl, const char *name, const char *incdir)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	const char *p;
	int rc;

	for (p = tmpl; *p; p++) {
		if (!strncmp(p, "@N@", 3)) {
			sonde_strbuf__adds(&sb, name);
			p += 2;
		} else if (!strncmp(p, "@I@", 3)) {
			sonde_strbuf__adds(&sb, incdir);
			p += 2;
		} else {
			sonde_strbuf__addch(&sb, *p);
		}
	}
	rc = sonde_file__write_atomic(path, sb.buf, sb.len);
	sonde_strbuf__release(&sb);
	return rc;
}

int cmd_utils(int argc, char **argv)
{
	const char *dir = ".";
	const struct sonde_option opts[] = {
		{ SONDE_OPT_STRING, 'd', "dir", &dir, "DIR", "where to create NAME/" },
		{ .type = SONDE_OPT_END },
	};
	const char *name, *incdir;
	char path[4096];
	int first, code, rc;
	size_t i;
	struct stat st;

	first = cli_parse("utils", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	argc -= 1 + first;
	if (argc != 3 || strcmp(argv[0], "create") || strcmp(argv[1], "collector"))
		return cli_usage("utils", "expected 'create collector NAME'");
	name = argv[2];
	for (i = 0; name[i]; i++)
		if (!(name[i] == '_' || (name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= 'A' && name[i] <= 'Z') ||
		      (i && name[i] >= '0' && name[i] <= '9')))
			break;
	if (!*name || name[i])
		return cli_usage("utils", "invalid collector name '%s': use a C identifier", name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st) == 0) {
		cli_error("utils", "'%s' exists; not overwriting it", path);
		return EXIT_FAILURE_;
	}
	rc = sonde_file__mkdir_p(path, 0755);
	incdir = access(SONDE_INCLUDEDIR "/sonde/collector.h", R_OK) == 0 ? SONDE_INCLUDEDIR
									  : SONDE_SOURCE_INCLUDEDIR;
	if (!rc) {
		snprintf(path, sizeof(path), "%s/%s/%s.c", dir, name, name);
		rc = write_template(path, template_c, name, incdir);
	}
	if (!rc) {
		snprintf(path, sizeof(path), "%s/%s/Makefile", dir, name);
		rc = write_template(path, template_make, name, incdir);
	}
	if (!rc) {
		snprintf(path, sizeof(path), "%s/%s/README.md", dir, name);
		rc = write_template(path, template_readme, name, incdir);
	}
	if (rc) {
		cli_error("utils", "cannot write '%s': %s", path, strerror(-rc));
		return EXIT_FAILURE_;
	}
	printf("created '%s/%s/': build it with 'make -C %s/%s', then run\n"
	       "  sonde collect --plugin %s/%s/%s.so -- CMD\n",
	       dir, name, dir, name, dir, name, name);
	return EXIT_OK;
}
