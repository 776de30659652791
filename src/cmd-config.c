/*
 * cmd-config.c - `sonde config get|set|edit|show`: the YAML configuration of
 * the store and of the user (config.h, docs/config.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sonde/config.h>
#include <sonde/file.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde config [--local|--user] get KEY\n"
	"       sonde config [--local|--user] set KEY VALUE\n"
	"       sonde config [--local|--user] edit\n"
	"       sonde config [--local|--user] show\n\n"
	"Read and write sonde's configuration: the store's .sonde/config.yaml\n"
	"(--local) and the user's ~/.config/sonde/config.yaml (--user; $SONDE_CONFIG\n"
	"names another). get and show read both, the store's first: its values win\n"
	"and lists are gathered; set and edit write the store's file unless --user.\n"
	"KEY has dots (execute.pre_run, collectors.0.name); VALUE is YAML (3, true,\n"
	"[a, b], text; text that is not YAML is taken as it is). edit opens $VISUAL or $EDITOR on "
	"a copy and keeps it only\n"
	"when it is valid YAML. Exit status: 1 a key that is not set, or no\n"
	"store; 2 a file that is not YAML (file:line:column said). The keys\n"
	"sonde reads: config.md in /usr/local/share/doc/sonde.";

static void print_value(json_t *v)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;

	if (json_is_string(v)) {
		printf("%s\n", json_string_value(v));
	} else if (json_is_object(v) || json_is_array(v)) {
		if (!sonde_config__dump(v, &sb))
			fputs(sb.buf, stdout);
	} else {
		char *t = json_dumps(v, JSON_ENCODE_ANY);

		printf("%s\n", t ? t : "null");
		free(t);
	}
	sonde_strbuf__release(&sb);
}

/* Open the editor on a copy of path; the copy replaces path only when it is valid YAML. */
static int edit(const char *path)
{
	const char *ed = getenv("VISUAL");
	char tmp[] = "/tmp/sonde-config-XXXXXX.yaml";
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	char *buf = NULL, *cmd = NULL;
	size_t len = 0;
	json_t *cfg = NULL;
	int fd, rc, status;

	if (!ed || !*ed)
		ed = getenv("EDITOR");
	if (!ed || !*ed)
		ed = "vi";
	fd = mkstemps(tmp, 5);
	if (fd < 0) {
		cli_error("config", "cannot make a copy to edit: %s", strerror(errno));
		return EXIT_FAILURE_;
	}
	rc = sonde_file__read(path, &buf, &len);
	if ((rc && rc != -ENOENT) || (len && write(fd, buf, len) != (ssize_t)len)) {
		cli_error("config", "cannot copy '%s': %s", path, strerror(rc ? -rc : errno));
		close(fd);
		unlink(tmp);
		free(buf);
		return EXIT_FAILURE_;
	}
	close(fd);
	free(buf);
	buf = NULL;
	/* the editor may carry arguments ("code -w"): the shell splits them */
	if (asprintf(&cmd, "%s \"$0\"", ed) < 0) {
		unlink(tmp);
		return EXIT_FAILURE_;
	}
	{
		char *const sh[] = { "/bin/sh", "-c", cmd, tmp, NULL };

		status = cli_run(NULL, sh, NULL, NULL);
	}
	free(cmd);
	if (status) {
		cli_error("config", "the editor (%s) failed; '%s' is unchanged, the copy is '%s'",
			  ed, path, tmp);
		return EXIT_FAILURE_;
	}
	rc = sonde_file__read(tmp, &buf, &len);
	if (!rc)
		rc = sonde_config__parse(buf, len, tmp, &cfg, &err);
	free(buf);
	if (rc) {
		cli_error("config", "%s; '%s' is unchanged, your edit is kept in '%s'",
			  err.len ? err.buf : strerror(-rc), path, tmp);
		sonde_strbuf__release(&err);
		return EXIT_FAILURE_;
	}
	json_decref(cfg);
	/* the text as written, comments included: it is valid */
	rc = sonde_file__read(tmp, &buf, &len);
	if (!rc)
		rc = sonde_config__write_text(path, buf, len);
	free(buf);
	if (rc) {
		cli_error("config", "cannot write '%s': %s (your edit is in '%s')", path,
			  strerror(-rc), tmp);
		return EXIT_FAILURE_;
	}
	unlink(tmp);
	return EXIT_OK;
}

int cmd_config(int argc, char **argv)
{
	bool local = false, user = false;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_FLAG, 0, "local", &local, NULL, "the store's file only" },
		{ SONDE_OPT_FLAG, 0, "user", &user, NULL, "the user's file only" },
		{ .type = SONDE_OPT_END }
	};
	enum sonde_config_scope scope;
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	const char *verb;
	json_t *cfg = NULL, *v;
	char *path = NULL;
	int first, code = EXIT_OK, n, rc;

	first = cli_parse("config", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	n = argc - 1 - first;
	if (local && user)
		return cli_usage("config", "--local or --user, not both");
	if (n < 1)
		return cli_usage("config", "get, set, edit or show?");
	verb = argv[0];
	if (!strcmp(verb, "get") || !strcmp(verb, "show")) {
		if (n != (!strcmp(verb, "get") ? 2 : 1))
			return cli_usage("config", "%s", !strcmp(verb, "get") ? "get KEY" : "show");
		scope = local ? SONDE_CONFIG_LOCAL : user ? SONDE_CONFIG_USER : SONDE_CONFIG_MERGED;
	} else if (!strcmp(verb, "set") || !strcmp(verb, "edit")) {
		if (n != (!strcmp(verb, "set") ? 3 : 1))
			return cli_usage("config", "%s",
					 !strcmp(verb, "set") ? "set KEY VALUE" : "edit");
		scope = user ? SONDE_CONFIG_USER : SONDE_CONFIG_LOCAL;
	} else {
		return cli_usage("config", "'%s': get, set, edit or show", verb);
	}
	rc = sonde_config__load(scope, ".", &cfg, &err);
	if (rc) {
		cli_error("config", "%s", cli_why(&err, rc));
		sonde_strbuf__release(&err);
		return rc == -ENOENT   ? EXIT_FAILURE_
		       : rc == -EINVAL ? EXIT_USAGE
				       : cli_exit_code(rc);
	}
	if (!strcmp(verb, "show")) {
		print_value(cfg);
	} else if (!strcmp(verb, "get")) {
		v = sonde_config__get(cfg, argv[1]);
		if (!v) {
			cli_error("config", "'%s' is not set", argv[1]);
			code = EXIT_FAILURE_;
		} else {
			print_value(v);
		}
	} else {
		rc = sonde_config__path(scope, ".", &path);
		if (rc) {
			cli_error("config", "no file to write: %s", strerror(-rc));
			code = EXIT_FAILURE_;
		} else if (!strcmp(verb, "edit")) {
			code = edit(path);
		} else if ((rc = sonde_config__value(argv[2], &v, &err))) {
			cli_error("config", "%s", cli_why(&err, rc));
			code = EXIT_USAGE;
		} else if ((rc = sonde_config__set(cfg, argv[1], v))) {
			cli_error("config", "cannot set '%s': %s", argv[1],
				  rc == -EINVAL ? "a part is empty, a value is on the way, or an "
						  "index is past the list's end"
						: strerror(-rc));
			code = rc == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_;
		} else if ((rc = sonde_config__write(path, cfg))) {
			cli_error("config", "cannot write '%s': %s", path, strerror(-rc));
			code = EXIT_FAILURE_;
		} else {
			/* the key just set, if sonde does not read it */
			json_t *one = json_object();

			if (one && !sonde_config__set(one, argv[1], json_null()))
				cli_config_warnings("config", one);
			json_decref(one);
		}
	}
	free(path);
	json_decref(cfg);
	sonde_strbuf__release(&err);
	return code;
}
