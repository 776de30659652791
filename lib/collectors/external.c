/*
 * external.c - the external collector: any executable, in any language.
 *
 * sonde runs `EXE CMD ARGS...` for every run; EXE runs the command as it likes
 * and prints on stdout one JSON document: an array of resource records, or an
 * object {"type": ..., "units": {...}, "resources": [records]}. A record is an
 * object with uid, type, subtype and numeric fields (amount, ...). sonde adds an
 * "order" column (the 1-based run number). The command's own output must not go
 * to EXE's stdout (send it to stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sonde/collector.h>
#include <sonde/file.h>

struct external_state {
	int fd; /* EXE's stdout: an unlinked temporary file */
	json_t *records;
	json_t *units;
	char *type;
};

static int external_before(struct sonde_collection *c)
{
	struct external_state *st;
	char tmpl[] = "/tmp/sonde-external-XXXXXX";

	if (!sonde_collection__param_str(c, "exe", NULL))
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	st->records = json_array();
	st->fd = mkostemp(tmpl, O_CLOEXEC);
	if (st->fd < 0)
		return -errno;
	unlink(tmpl);
	return sonde_collection__set_stdout(c, st->fd);
}

static int external_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct external_state *st = sonde_collection__priv(c);
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	json_error_t jerr;
	json_t *doc, *recs, *rec;
	char buf[65536];
	ssize_t n;
	size_t i;
	off_t off = 0;

	while ((n = pread(st->fd, buf, sizeof(buf), off)) > 0) {
		sonde_strbuf__add(&sb, buf, (size_t)n);
		off += n;
	}
	if (ftruncate(st->fd, 0) < 0 || lseek(st->fd, 0, SEEK_SET) < 0) {
		sonde_strbuf__release(&sb);
		return -errno;
	}
	if (ri->warmup || ri->interrupted) {
		sonde_strbuf__release(&sb);
		return 0;
	}
	doc = json_loadb(sb.buf, sb.len, 0, &jerr);
	sonde_strbuf__release(&sb);
	if (!doc) {
		sonde_collection__fail(
			c,
			"collector 'external' failed: run %u: it printed invalid JSON: line %d, "
			"column %d: %s",
			ri->index + 1, jerr.line, jerr.column, jerr.text);
		return -EBADMSG;
	}
	recs = json_is_array(doc) ? doc : json_object_get(doc, "resources");
	if (!json_is_array(recs)) {
		sonde_collection__fail(c,
				       "collector 'external' failed: run %u: its output has no "
				       "resources list",
				       ri->index + 1);
		json_decref(doc);
		return -EBADMSG;
	}
	if (json_is_object(doc)) {
		if (json_is_object(json_object_get(doc, "units")) && !st->units)
			st->units = json_incref(json_object_get(doc, "units"));
		if (json_is_string(json_object_get(doc, "type")) && !st->type)
			st->type = strdup(json_string_value(json_object_get(doc, "type")));
	}
	json_array_foreach(recs, i, rec)
	{
		if (!json_is_object(rec))
			continue;
		json_object_set_new(rec, "order", json_integer(ri->index + 1));
		if (ri->has_size)
			json_object_set_new(rec, "structure-unit-size", json_real(ri->size));
		json_array_append(st->records, rec);
	}
	json_decref(doc);
	return 0;
}

static int external_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct external_state *st = sonde_collection__priv(c);
	json_t *h = sonde_profile__header(p);

	if (st->type)
		sonde_profile__set(h, "type", json_string(st->type));
	if (st->units)
		json_object_update(json_object_get(h, "units"), st->units);
	return sonde_profile__add_records(p, st->records);
}

static void external_cleanup(struct sonde_collection *c)
{
	struct external_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	if (st->fd >= 0)
		close(st->fd);
	json_decref(st->records);
	json_decref(st->units);
	free(st->type);
	free(st);
}

static const struct sonde_option external_options[] = {
	{ SONDE_OPT_STRING, 0, "exe", NULL, "EXE",
	  "the collector executable, run as `EXE CMD ARGS...`" },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_external = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "external",
	.summary = "any executable that runs the command and prints resources as JSON",
	.profile_type = "custom",
	.options = external_options,
	.flags = SONDE_COLLECTOR_WRAPS_TARGET,
	.before = external_before,
	.stop = external_stop,
	.after = external_after,
	.cleanup = external_cleanup,
};
