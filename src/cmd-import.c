/*
 * cmd-import.c - `sonde import FILE [-o OUT]`: a profile another tool
 * recorded (pprof, `perf script` output) as a sonde profile, written where
 * `collect` writes its own (.sonde/jobs/, or OUT) and stamped with this work
 * tree's commit, so that show, report, check, add and log take it as any other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sonde/file.h>
#include <sonde/git.h>
#include <sonde/import.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde import FILE [-o OUT]\n"
	"\n"
	"Read a profile another tool recorded and write it as a sonde profile: a pprof\n"
	"file (go tool pprof, Pyroscope, Parca; gzipped or not) or the output of\n"
	"'perf script' for 'perf record -g -e cpu-clock' (or perf.data itself, read\n"
	"through perf script). Its stacks become a sampled\n"
	"trace profile (samples, self and total time per function and calling\n"
	"context), written to .sonde/jobs/ (or OUT) with this work tree's commit, as\n"
	"collect writes its own. docs/pprof.md says what maps to what.";

/*
 * perf.data, read by `perf script -i FILE` (its stdout: the samples as text,
 * what sonde reads; its stderr, warnings, left out) into *buf.
 */
static int perf_script(const char *path, char **buf, size_t *len)
{
	const char *tmp = getenv("TMPDIR");
	char out[4096];
	char *const argv[] = { "sh", "-c",	   "exec perf script -i \"$1\" 2>/dev/null",
			       "sh", (char *)path, NULL };
	int fd, rc;

	snprintf(out, sizeof(out), "%s/sonde-import-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(out);
	if (fd < 0) {
		cli_error("import", "cannot make a temporary file in '%s': %s",
			  tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return EXIT_FAILURE_;
	}
	close(fd);
	rc = cli_run(NULL, argv, out, NULL);
	if (rc == 127) {
		unlink(out);
		cli_error("import",
			  "'%s' is perf.data, which sonde reads through 'perf script': "
			  "perf is not installed (linux-perf)",
			  path);
		return EXIT_UNSUPPORTED;
	}
	if (rc) {
		unlink(out);
		cli_error("import", "perf script could not read '%s' (exit %d)", path, rc);
		return EXIT_USAGE;
	}
	rc = sonde_file__read(out, buf, len);
	unlink(out);
	if (rc) {
		cli_error("import", "cannot read perf script's output: %s", strerror(-rc));
		return EXIT_FAILURE_;
	}
	return EXIT_OK;
}

int cmd_import(int argc, char **argv)
{
	struct sonde_git_origin origin;
	const char *out_file = NULL;
	struct sonde_option opts[] = {
		{ SONDE_OPT_STRING, 'o', "output", &out_file, "FILE",
		  "write the profile to FILE (default: .sonde/jobs/FILE-import-DATE.json)" },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_profile *p = NULL;
	char *buf = NULL, *path = NULL, *used = NULL;
	size_t len = 0;
	int first, code = EXIT_OK, rc;

	first = cli_parse("import", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	argc -= 1 + first;
	if (argc != 1)
		return cli_usage("import", argc ? "one file at a time" : "which file?");
	rc = sonde_file__read(argv[0], &buf, &len);
	if (rc) {
		cli_error("import", "cannot read '%s': %s", argv[0], strerror(-rc));
		return EXIT_FAILURE_;
	}
	if (len >= 8 && !memcmp(buf, "PERFILE2", 8)) { /* perf.data: perf script reads it */
		free(buf);
		buf = NULL;
		code = perf_script(argv[0], &buf, &len);
		if (code != EXIT_OK)
			return code;
	}
	rc = sonde_import__load(buf, len, argv[0], &p, &err);
	free(buf);
	if (rc) {
		cli_error("import", "'%s': %s", argv[0], err.len ? err.buf : strerror(-rc));
		sonde_strbuf__release(&err);
		return rc == -ENOMEM	? EXIT_FAILURE_
		       : rc == -ENOTSUP ? EXIT_UNSUPPORTED
					: EXIT_USAGE;
	}
	sonde_strbuf__release(&err);
	/* where it was measured is unknown: no job, no clock of this host */
	sonde_git__origin_start(&origin, ".");
	sonde_git__origin_finish(&origin);
	if (sonde_profile__stamp_origin(p, &origin) ||
	    sonde_profile__set(sonde_profile__header(p), "cmd", json_string(argv[0]))) {
		cli_error("import", "out of memory");
		sonde_profile__free(p);
		return EXIT_FAILURE_;
	}
	path = out_file ? strdup(out_file) : cli_job_path(argv[0], "import", NULL);
	rc = path ? sonde_profile__write(p, path, out_file ? 0 : SONDE_FILE_NEW, &used) : -ENOMEM;
	if (rc) {
		cli_error("import", "cannot write '%s': %s", path ? path : "?", strerror(-rc));
		code = EXIT_FAILURE_;
	} else if (!cli_quiet()) {
		json_t *im = json_object_get(sonde_profile__metadata(p), "imported");

		fprintf(stderr, "%lld samples of %s imported; profile written to '%s'\n",
			(long long)json_integer_value(json_object_get(im, "samples")),
			json_string_value(json_object_get(im, "format")), used ? used : path);
	}
	free(path);
	free(used);
	sonde_profile__free(p);
	return code;
}
