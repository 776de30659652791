/*
 * cmd-collector.c - `sonde collector add|rm|list`: collectors registered once
 * by name (a plugin, or an external executable), then used as `sonde collect
 * NAME`. The registry is the configuration's registered_collectors mapping,
 * in the store's file or the user's (--user).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sonde/collector.h>
#include <sonde/config.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde collector [--user] add NAME PATH.so\n"
	"       sonde collector [--user] add NAME --external EXE\n"
	"       sonde collector [--user] rm NAME\n"
	"       sonde collector list\n\n"
	"Register a collector by name: a plugin (a shared object exporting\n"
	"sonde_collector_entry) or an external executable. 'sonde collect NAME -- CMD'\n"
	"then runs it, and 'sonde collect --help' lists it. The registry is the\n"
	"store's configuration (registered_collectors), or the user's with --user;\n"
	"the store's entry wins. Exit status: 1 a name that is not registered, or a\n"
	"file that is not there; 2 a name a built-in collector has, or a plugin that\n"
	"does not load.";

/* The registry's entry of name in the merged configuration (borrowed from *cfg). */
json_t *cli_registered_collector(const char *name, json_t **cfg)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	json_t *e = NULL;

	*cfg = NULL;
	if (!sonde_config__load(SONDE_CONFIG_MERGED, ".", cfg, &err))
		e = json_object_get(json_object_get(*cfg, "registered_collectors"), name);
	sonde_strbuf__release(&err);
	return json_is_object(e) ? e : NULL;
}

static int list(void)
{
	json_t *cfg = NULL, *reg, *e;
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	const char *name;

	if (sonde_config__load(SONDE_CONFIG_MERGED, ".", &cfg, &err)) {
		cli_error("collector", "%s", cli_why(&err, 0));
		sonde_strbuf__release(&err);
		return EXIT_USAGE;
	}
	reg = json_object_get(cfg, "registered_collectors");
	json_object_foreach(reg, name, e)
	{
		const char *p = json_string_value(json_object_get(e, "plugin"));
		const char *x = json_string_value(json_object_get(e, "external"));

		printf("%-16s %s %s\n", name, p ? "plugin  " : "external", p ? p : x ? x : "?");
	}
	if (!json_object_size(reg))
		printf("no collector is registered (sonde collector add NAME PATH)\n");
	json_decref(cfg);
	return EXIT_OK;
}

/* Add or remove name in the scope's file. */
static int change(enum sonde_config_scope scope, const char *name, json_t *entry)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	json_t *cfg = NULL, *reg;
	char *path = NULL;
	int rc, code = EXIT_OK;

	rc = sonde_config__path(scope, ".", &path);
	if (!rc)
		rc = sonde_config__load(scope, ".", &cfg, &err);
	if (rc) {
		cli_error("collector", "%s",
			  err.len	  ? err.buf
			  : rc == -ENOENT ? "no .sonde store here or above (sonde init, or --user)"
					  : strerror(-rc));
		sonde_strbuf__release(&err);
		free(path);
		json_decref(entry);
		return rc == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_;
	}
	reg = json_object_get(cfg, "registered_collectors");
	if (!entry) {
		if (!json_object_get(reg, name)) {
			cli_error("collector", "'%s' is not registered in %s", name, path);
			code = EXIT_FAILURE_;
		} else {
			json_object_del(reg, name);
		}
	} else {
		if (!json_is_object(reg)) {
			reg = json_object();
			json_object_set_new(cfg, "registered_collectors", reg);
		}
		json_object_set_new(reg, name, entry);
	}
	if (code == EXIT_OK && (rc = sonde_config__write(path, cfg))) {
		cli_error("collector", "cannot write '%s': %s", path, strerror(-rc));
		code = EXIT_FAILURE_;
	}
	free(path);
	json_decref(cfg);
	return code;
}

static bool valid_name(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (i && ((s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))))
			return false;
	return i > 0 && i < 64;
}

static int add(enum sonde_config_scope scope, const char *name, const char *path, bool external)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	char real[PATH_MAX];

	if (!valid_name(name))
		return cli_usage("collector",
				 "'%s' is not a collector name (a letter, then letters, digits, "
				 "'-', '_')",
				 name);
	if (sonde_collector__find(name))
		return cli_usage("collector", "'%s' is a built-in collector: choose another name",
				 name);
	if (!realpath(path, real)) {
		cli_error("collector", "'%s': %s", path, strerror(errno));
		return EXIT_FAILURE_;
	}
	if (external && access(real, X_OK)) {
		cli_error("collector", "'%s' is not executable", real);
		return EXIT_FAILURE_;
	}
	if (!external) { /* it must load: an error now, not at every collect */
		const struct sonde_collector *c = sonde_collector__load_plugin(real, &err);

		if (!c) {
			cli_error("collector", "%s", cli_why(&err, 0));
			sonde_strbuf__release(&err);
			return EXIT_USAGE;
		}
	}
	return change(scope, name, json_pack("{s:s}", external ? "external" : "plugin", real));
}

int cmd_collector(int argc, char **argv)
{
	bool user = false;
	const char *external = NULL;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_FLAG, 0, "user", &user, NULL, "the user's configuration" },
		{ SONDE_OPT_STRING, 0, "external", &external, "EXE",
		  "add: an external executable (sonde collect --external's protocol)" },
		{ .type = SONDE_OPT_END },
	};
	enum sonde_config_scope scope;
	int first, code = EXIT_OK, n;

	first = cli_parse("collector", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE,
			  NULL, &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	n = argc - 1 - first;
	scope = user ? SONDE_CONFIG_USER : SONDE_CONFIG_LOCAL;
	if (n < 1)
		return cli_usage("collector", "add, rm or list?");
	if (!strcmp(argv[0], "list") && n == 1)
		return list();
	if (!strcmp(argv[0], "rm") && n == 2)
		return change(scope, argv[1], NULL);
	if (!strcmp(argv[0], "add") && n == (external ? 2 : 3))
		return add(scope, argv[1], external ? external : argv[2], external != NULL);
	if (strcmp(argv[0], "add") && strcmp(argv[0], "rm") && strcmp(argv[0], "list"))
		return cli_usage("collector", "'%s': add, rm or list", argv[0]);
	return cli_usage("collector", "%s",
			 !strcmp(argv[0], "add")  ? "add NAME PATH.so, or add NAME --external EXE"
			 : !strcmp(argv[0], "rm") ? "rm NAME"
						  : "list takes no argument");
}
