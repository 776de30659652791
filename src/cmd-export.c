/*
 * cmd-export.c - `sonde export PROFILE --format folded|csv|json|perfetto [-o FILE]`,
 * and `sonde export RUN|PROFILE... --format perfetto`: the profiles of one run
 * (several collectors on the same runs) on one timeline.
 *
 * folded: one line per stack, frames from the outermost to the innermost
 *         joined by ';', then a space and the weight (flamegraph.pl, speedscope,
 *         inferno read it). Memory profiles weigh by bytes or by count, trace
 *         profiles by exclusive time (ns) or by calls.
 * perfetto: a Chrome/Perfetto trace-event JSON of the profiles' timeline
 *         (ui.perfetto.dev and chrome://tracing open it). RUN is a run id (or
 *         its first 6 or more hex digits): every profile of that run found in
 *         the current directory and the store's pending profiles.
 * json:   the profile itself, as sonde stores it (a Perun profile comes out
 *         converted).
 * csv:    one line per value row of every resource: uid, type, subtype, then
 *         every column that any resource has (empty where a resource has none).
 * pprof:  the stacks in pprof's format, gzipped (go tool pprof, speedscope,
 *         Pyroscope, Parca read it): two values a stack, how many and how much.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/compress.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde export PROFILE --format folded|csv|json|perfetto|pprof [--weight W] [-o "
	"FILE]\n"
	"       sonde export RUN|PROFILE... --format perfetto [-o FILE]\n"
	"\n"
	"Write a profile in another format, to FILE or to stdout. With perfetto, the\n"
	"profiles of one run (sonde collect time+system+sched) go on one timeline: name\n"
	"them, or give the run id that 'sonde collect' printed (6 hex digits or more).";

static const char *const formats[] = { "folded", "csv", "json", "perfetto", "pprof", NULL };
static const char *const weights[] = { "bytes", "count", "leaked_bytes", "leaked", "peak_bytes",
				       "time",	"calls", "samples",	 NULL };

/*
 * The profiles named (paths, N@p, N@i) or of a run id, for the timeline.
 * Returns an exit code; *v and *n hold what was loaded.
 */
static int load_timeline(int argc, char **argv, struct sonde_profile ***v, size_t *n)
{
	int i, code = EXIT_OK;

	for (i = 0; i < argc; i++) {
		struct sonde_profile *p, **nv;

		if (cli_is_run_id(argv[i]) && access(argv[i], F_OK)) {
			code = cli_load_run("export", argv[i], v, n);
			if (code)
				return code;
			continue;
		}
		p = cli_load_profile("export", argv[i], &code);
		if (!p)
			return code;
		nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			sonde_profile__free(p);
			cli_error("export", "out of memory");
			return EXIT_FAILURE_;
		}
		*v = nv;
		(*v)[(*n)++] = p;
	}
	return code;
}

/* Write sb to out_file or stdout; an exit code. */
static int emit(const char *out_file, const struct sonde_strbuf *sb)
{
	int rc;

	if (sonde_strbuf__error(sb)) { /* cut short by memory: not written as if whole */
		cli_error("export", "out of memory");
		return EXIT_FAILURE_;
	}
	if (out_file) {
		rc = cli_write_output(out_file, sb->buf, sb->len);
		if (rc) {
			cli_error("export", "cannot write '%s': %s", out_file, strerror(-rc));
			return EXIT_FAILURE_;
		}
	} else if (sb->len && fwrite(sb->buf, 1, sb->len, stdout) != sb->len) {
		return EXIT_FAILURE_;
	}
	return EXIT_OK;
}

/*
 * What a timeline leaves out, said on stderr: a trace profile keeps the first
 * --max-slices calls for it (every call is in its totals), a sampled one a
 * bounded number of samples.
 */
static void say_cut(const struct sonde_profile *p)
{
	json_t *t = json_object_get(sonde_profile__stats(p), "trace");
	json_int_t calls = json_integer_value(json_object_get(t, "slices_dropped")),
		   samples = json_integer_value(json_object_get(t, "timeline_samples_dropped"));
	const char *cmd = json_string_value(json_object_get(sonde_profile__header(p), "cmd"));

	if (calls > 0)
		fprintf(stderr,
			"sonde: warning: export: %lld calls of '%s' are not on the timeline: the "
			"profile keeps the first calls only (collect --max-slices N keeps more)\n",
			(long long)calls, cmd ? cmd : "?");
	if (samples > 0)
		fprintf(stderr,
			"sonde: warning: export: %lld samples of '%s' are not on the timeline "
			"(the profile's timeline was full)\n",
			(long long)samples, cmd ? cmd : "?");
}

static int export_timeline(int argc, char **argv, const char *out_file)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct sonde_profile **v = NULL;
	size_t n = 0, i;
	int code = load_timeline(argc, argv, &v, &n), rc;

	if (code == EXIT_OK) {
		rc = sonde_view__timeline((const struct sonde_profile *const *)v, n, &sb);
		char why[320];

		for (i = 0; rc == 0 && i < n; i++)
			say_cut(v[i]);
		if (rc == 0 && !cli_quiet() &&
		    sonde_view__timeline_alignment((const struct sonde_profile *const *)v, n, why,
						   sizeof(why)) > 0)
			fprintf(stderr, "sonde: export: %s\n", why);
		if (rc == -EXDEV) {
			cli_error("export",
				  "these profiles come from different runs (their run ids "
				  "differ): their clocks do not line up");
			code = EXIT_USAGE;
		} else if (rc == -EINVAL) {
			cli_error("export", "none of these %zu profiles has a timeline", n);
			code = EXIT_UNSUPPORTED;
		} else if (rc) {
			cli_error("export", "out of memory");
			code = EXIT_FAILURE_;
		} else {
			code = emit(out_file, &sb);
		}
	}
	for (i = 0; i < n; i++)
		sonde_profile__free(v[i]);
	free(v);
	sonde_strbuf__release(&sb);
	return code;
}

int cmd_export(int argc, char **argv)
{
	const char *format = NULL, *weight = "bytes", *out_file = NULL;
	struct sonde_option opts[] = {
		{ SONDE_OPT_CHOICE, 'f', "format", &format, NULL, "what to write", 0, 0, formats },
		{ SONDE_OPT_CHOICE, 0, "weight", &weight, NULL,
		  "folded stacks: memory by bytes (default) or count; trace by time (default, "
		  "exclusive ns) or calls; sampled by time or samples",
		  0, 0, weights },
		{ SONDE_OPT_STRING, 'o', "output", &out_file, "FILE",
		  "write to FILE (default: stdout)" },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct sonde_profile *p;
	int first, code = EXIT_OK, rc;

	first = cli_parse("export", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	argc -= 1 + first;
	if (!argc)
		return cli_usage("export", "which profile?");
	if (!format)
		return cli_usage("export", "which format? --format folded|csv|json|perfetto|pprof");
	if (!strcmp(format, "pprof") && out_file &&
	    sonde_compress__by_name(out_file) == SONDE_COMPRESS_ZSTD)
		return cli_usage("export", "pprof is gzipped: name the file .pb.gz, or .pb "
					   "(gzipped all the same, as pprof's readers expect)");
	if (!strcmp(format, "perfetto") &&
	    (argc > 1 || (cli_is_run_id(argv[0]) && access(argv[0], F_OK))))
		return export_timeline(argc, argv, out_file);
	if (argc != 1)
		return cli_usage("export", "one profile at a time (several: --format perfetto, "
					   "the profiles of one run)");
	p = cli_load_profile("export", argv[0], &code);
	if (!p)
		return code;
	if (!strcmp(format, "perfetto")) {
		rc = sonde_view__perfetto(p, &sb);
		if (rc == 0)
			say_cut(p);
		if (rc == -EINVAL) {
			char why[160];

			cli_error("export", "'%s' has no timeline: %s", argv[0],
				  cli_nothing_because(p, "timeline", why, sizeof(why)));
			sonde_strbuf__release(&sb); /* what the view began */
			sonde_profile__free(p);
			return EXIT_UNSUPPORTED;
		}
	} else if (!strcmp(format, "folded")) {
		rc = sonde_view__folded(p, weight, &sb);
	} else if (!strcmp(format, "pprof")) {
		/* a FILE.gz is compressed by the writer: the protobuf goes to it bare */
		rc = sonde_view__pprof(
			p, !out_file || sonde_compress__by_name(out_file) != SONDE_COMPRESS_GZIP,
			&sb);
	} else if (!strcmp(format, "json")) {
		size_t len;
		char *doc = sonde_profile__dump(p, &len);

		rc = doc ? sonde_strbuf__add(&sb, doc, len) : -ENOMEM;
		free(doc);
	} else {
		rc = sonde_view__csv(p, &sb);
	}
	if (rc == -ENOTSUP) {
		char why[160];

		cli_error("export", "'%s' has no stacks %s: %s", argv[0],
			  !strcmp(format, "pprof") ? "for pprof" : "to fold",
			  cli_nothing_because(p, "stacks", why, sizeof(why)));
		code = EXIT_UNSUPPORTED;
	} else if (rc) {
		cli_error("export", "out of memory");
		code = EXIT_FAILURE_;
	} else {
		code = emit(out_file, &sb);
	}
	sonde_strbuf__release(&sb);
	sonde_profile__free(p);
	return code;
}
