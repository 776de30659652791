/*
 * cmd-export.c - `sonde export PROFILE --format folded|csv|json|perfetto [-o FILE]`.
 *
 * folded: one line per stack, frames from the outermost to the innermost
 *         joined by ';', then a space and the weight (flamegraph.pl, speedscope,
 *         inferno read it). Memory profiles weigh by bytes or by count, trace
 *         profiles by exclusive time (ns) or by calls.
 * perfetto: a Chrome/Perfetto trace-event JSON of a trace profile's timeline
 *         (ui.perfetto.dev and chrome://tracing open it).
 * json:   the profile itself, as sonde stores it (a Perun profile comes out
 *         converted).
 * csv:    one line per value row of every resource: uid, type, subtype, then
 *         every column that any resource has (empty where a resource has none).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde export PROFILE --format folded|csv|json|perfetto [--weight W] [-o FILE]\n"
	"\n"
	"Write a profile in another format, to FILE or to stdout.";

static const char *const formats[] = { "folded", "csv", "json", "perfetto", NULL };
static const char *const weights[] = { "bytes", "count", "time", "calls", NULL };

static void csv_field(struct sonde_strbuf *sb, json_t *v)
{
	if (json_is_string(v)) {
		sonde_view__csv_quote(sb, json_string_value(v));
	} else if (v && !json_is_null(v)) {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));

		sonde_strbuf__adds(sb, s ? s : "");
		free(s);
	}
}

static int csv(const struct sonde_profile *p, struct sonde_strbuf *out)
{
	size_t n = sonde_profile__resource_count(p), i, r, k, rows;
	json_t *names = json_array(), *seen = json_object();
	const char *key;
	json_t *v, *fixed, *cols;
	int err = !names || !seen;

	for (i = 0; i < n && !err; i++) {
		sonde_profile__resource_at(p, i, NULL, &fixed, &cols);
		json_object_foreach(cols, key, v)
		{
			if (!json_object_get(seen, key)) {
				err |= json_object_set_new(seen, key, json_true());
				err |= json_array_append_new(names, json_string(key));
			}
		}
	}
	sonde_strbuf__adds(out, "uid,type,subtype");
	json_array_foreach(names, k, v) sonde_strbuf__addf(out, ",%s", json_string_value(v));
	sonde_strbuf__addch(out, '\n');
	for (i = 0; i < n && !err; i++) {
		sonde_profile__resource_at(p, i, NULL, &fixed, &cols);
		rows = 0;
		json_object_foreach(cols, key, v) if (json_array_size(v) > rows) rows =
			json_array_size(v);
		for (r = 0; r < rows; r++) {
			csv_field(out, json_object_get(fixed, "uid"));
			sonde_strbuf__addch(out, ',');
			csv_field(out, json_object_get(fixed, "type"));
			sonde_strbuf__addch(out, ',');
			csv_field(out, json_object_get(fixed, "subtype"));
			json_array_foreach(names, k, v)
			{
				sonde_strbuf__addch(out, ',');
				csv_field(out,
					  json_array_get(
						  json_object_get(cols, json_string_value(v)), r));
			}
			err |= sonde_strbuf__addch(out, '\n');
		}
	}
	json_decref(names);
	json_decref(seen);
	return err ? -ENOMEM : 0;
}

int cmd_export(int argc, char **argv)
{
	const char *format = NULL, *weight = "bytes", *out_file = NULL;
	struct sonde_option opts[] = {
		{ SONDE_OPT_CHOICE, 'f', "format", &format, NULL, "what to write", 0, 0, formats },
		{ SONDE_OPT_CHOICE, 0, "weight", &weight, NULL,
		  "folded stacks: memory by bytes (default) or count; trace by time (default, "
		  "exclusive ns) or calls",
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
	if (argc != 1)
		return cli_usage("export", argc ? "one profile at a time" : "which profile?");
	if (!format)
		return cli_usage("export", "which format? --format folded|csv|json|perfetto");
	p = cli_load_profile("export", argv[0], &code);
	if (!p)
		return code;
	if (!strcmp(format, "perfetto")) {
		rc = sonde_view__perfetto(p, &sb);
		if (rc == -EINVAL) {
			cli_error("export",
				  "'%s' has no timeline (a %s profile; perfetto needs a "
				  "trace profile)",
				  argv[0], sonde_profile__type(p));
			sonde_profile__free(p);
			return EXIT_UNSUPPORTED;
		}
	} else if (!strcmp(format, "folded")) {
		rc = sonde_view__folded(p, weight, &sb);
	} else if (!strcmp(format, "json")) {
		size_t len;
		char *doc = sonde_profile__dump(p, &len);

		rc = doc ? sonde_strbuf__add(&sb, doc, len) : -ENOMEM;
		free(doc);
	} else {
		rc = csv(p, &sb);
	}
	if (rc == -ENOTSUP) {
		cli_error("export", "'%s' has no stacks to fold (a %s profile)", argv[0],
			  sonde_profile__type(p));
		code = EXIT_UNSUPPORTED;
	} else if (rc) {
		cli_error("export", "out of memory");
		code = EXIT_FAILURE_;
	} else if (out_file) {
		rc = cli_write_output(out_file, sb.buf, sb.len);
		if (rc) {
			cli_error("export", "cannot write '%s': %s", out_file, strerror(-rc));
			code = EXIT_FAILURE_;
		}
	} else if (sb.len && fwrite(sb.buf, 1, sb.len, stdout) != sb.len) {
		code = EXIT_FAILURE_;
	}
	sonde_strbuf__release(&sb);
	sonde_profile__free(p);
	return code;
}
