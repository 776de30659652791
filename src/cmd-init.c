/*
 * cmd-init.c - `sonde init [DIR]`: create DIR/.sonde (jobs/, objects/, index.db).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sonde/config.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde init [--template user|developer|master] [DIR]\n\n"
	"Create a store in DIR (default: the current directory). Profiles\n"
	"collected under DIR then go to DIR/.sonde/jobs/. --template writes a\n"
	"first configuration for 'sonde run matrix' (docs/config.md): the\n"
	"programs built in DIR as its commands and 'make' before the runs when\n"
	"there is a Makefile; user: the time collector; developer: time and\n"
	"memory, and the regression; master: that, and each profile registered\n"
	"after its run. A configuration already there is left as it is.";

static const char *const templates[] = { "user", "developer", "master", NULL };

/* Programs built in dir (ELF files with the execute bit), 3 levels down at most. */
static void find_programs(const char *dir, const char *rel, int depth, json_t *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)) && json_array_size(out) < 16) {
		char path[4096], relp[4096], magic[4];
		struct stat st;
		int fd;

		if (e->d_name[0] == '.')
			continue; /* .git, .sonde, hidden */
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(relp, sizeof(relp), "%s%s", rel, e->d_name);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode) && depth < 3) {
			char sub[4200];

			snprintf(sub, sizeof(sub), "%s/", relp);
			find_programs(path, sub, depth + 1, out);
		} else if (S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR) &&
			   (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			if (read(fd, magic, 4) == 4 && !memcmp(magic, "\177ELF", 4) &&
			    !strstr(e->d_name, ".so")) {
				char cmd[4200];

				snprintf(cmd, sizeof(cmd), "./%s", relp);
				json_array_append_new(out, json_string(cmd));
			}
			close(fd);
		}
	}
	if (d)
		closedir(d);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a),
		      json_string_value(*(json_t *const *)b));
}

/* A list of strings in order (readdir's order is the file system's). */
static void sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr), i;
	json_t **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return;
	for (i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(arr, i));
	qsort(v, n, sizeof(*v), by_string);
	json_array_clear(arr);
	for (i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
}

/* The template's configuration, unless the store has one. */
static int write_template(const char *dir, const char *t)
{
	char path[4096], probe[4096];
	json_t *cfg, *cmds;
	int rc;

	snprintf(path, sizeof(path), "%s/.sonde/config.yaml", dir);
	if (access(path, F_OK) == 0) {
		printf("'%s' is there already: left as it is\n", path);
		return 0;
	}
	cmds = json_array();
	if (!cmds)
		return -ENOMEM;
	find_programs(dir, "", 0, cmds);
	sort_strings(cmds);
	cfg = json_pack("{s:o, s:[{s:s, s:{s:i}}]}", "cmds", cmds, "collectors", "name", "time",
			"params", "repeat", 10);
	if (!cfg)
		return -ENOMEM;
	snprintf(probe, sizeof(probe), "%s/Makefile", dir);
	if (access(probe, F_OK) == 0)
		sonde_config__set(cfg, "execute.pre_run", json_pack("[s]", "make"));
	if (strcmp(t, "user")) {
		json_array_append_new(json_object_get(cfg, "collectors"),
				      json_pack("{s:s}", "name", "memory"));
		sonde_config__set(cfg, "postprocessors",
				  json_pack("[{s:s, s:{s:s}}]", "name", "regression", "params",
					    "per", "structure-unit-size"));
	}
	if (!strcmp(t, "master"))
		sonde_config__set(cfg, "profiles.register_after_run", json_true());
	rc = sonde_config__write(path, cfg);
	if (!rc) {
		printf("wrote '%s' (template %s): %zu program%s found", path, t,
		       json_array_size(cmds), json_array_size(cmds) == 1 ? "" : "s");
		if (!json_array_size(cmds))
			printf(": name yours with sonde config set cmds \"[./prog]\"");
		printf("\n");
	}
	json_decref(cfg);
	return rc;
}

int cmd_init(int argc, char **argv)
{
	const char *template = NULL;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_CHOICE, 0, "template", &template, NULL,
		  "write a first configuration: user, developer or master", 0, 0, templates },
		{ .type = SONDE_OPT_END }
	};
	const char *dir = ".";
	char head[41], probe[4096];
	bool existed = false;
	int first, code, rc;

	first = cli_parse("init", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (argc - 1 - first > 1)
		return cli_usage("init", "too many arguments");
	if (argc - 1 - first == 1)
		dir = argv[1 + first];
	if (snprintf(probe, sizeof(probe), "%s/.sonde/index.db", dir) < (int)sizeof(probe) &&
	    access(probe, F_OK) == 0)
		existed = true;
	rc = sonde_store__init(dir);
	if (rc) {
		cli_error("init", "cannot create '%s/.sonde': %s", dir, strerror(-rc));
		return cli_exit_code(rc);
	}
	if (cli_quiet())
		; /* -q: errors only */
	else if (existed)
		printf("a sonde store is already in '%s/.sonde': left as it is\n", dir);
	else
		printf("initialised a sonde store in '%s/.sonde'\n", dir);
	/* profiles are not sources: keep .sonde/ out of `git status`, without touching .gitignore
	 */
	rc = sonde_git__exclude(dir, ".sonde/");
	if (rc == 1 && !cli_quiet())
		printf("added '.sonde/' to the repository's info/exclude\n");
	else if (rc < 0 && rc != -ENOENT)
		cli_error("init", "cannot add '.sonde/' to the repository's info/exclude: %s",
			  strerror(-rc));
	if (template && (rc = write_template(dir, template))) {
		cli_error("init", "cannot write the configuration: %s", strerror(-rc));
		return cli_exit_code(rc);
	}
	if ((rc = sonde_git__resolve(dir, "HEAD", head)) && rc != -ENOENT) {
		cli_error("init", "cannot ask git for HEAD: %s", strerror(-rc));
		return cli_exit_code(rc);
	}
	if (rc && !cli_quiet())
		printf("note: '%s' is not a git work tree with commits: profiles will have no "
		       "origin and cannot be registered\n",
		       dir);
	return EXIT_OK;
}
