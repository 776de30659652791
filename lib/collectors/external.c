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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sonde/collector.h>
#include <sonde/file.h>
#include <sonde/runner.h>

struct external_state {
	int fd; /* EXE's stdout: an unlinked temporary file */
	json_t *records;
	json_t *units;
	char *type;
};

static int external_before(struct sonde_collection *c)
{
	struct external_state *st;

	if (!sonde_collection__param_str(c, "exe", NULL))
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	st->records = json_array();
	st->fd = sonde_file__scratch("external");
	if (st->fd < 0)
		return st->fd;
	return sonde_collection__set_stdout(c, st->fd);
}

/* Bytes of memory that loading JSON costs, per byte of it, at most: measured 15
   for rows of a few uids, 40 for millions of distinct uids (their resources). */
#define LOAD_FACTOR 40

/* The memory sonde may still take: MemAvailable of /proc/meminfo, or less
   where RLIMIT_AS leaves less room; 0: not known. */
static uint64_t mem_available(void)
{
	unsigned long long kb = 0, pages = 0;
	uint64_t avail, mapped;
	struct rlimit as;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
				break;
		fclose(f);
	}
	avail = (uint64_t)kb << 10;
	f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%llu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	mapped = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
	if (!getrlimit(RLIMIT_AS, &as) && as.rlim_cur != RLIM_INFINITY) {
		uint64_t room = as.rlim_cur > mapped ? as.rlim_cur - mapped : 1;

		if (!avail || room < avail)
			avail = room;
	}
	return avail;
}

static int external_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct external_state *st = sonde_collection__priv(c);
	json_error_t jerr;
	json_t *doc, *recs, *rec;
	uint64_t avail;
	struct stat sb;
	size_t i;

	if (fstat(st->fd, &sb) < 0 || lseek(st->fd, 0, SEEK_SET) < 0)
		return -errno;
	if (ri->warmup || ri->interrupted)
		goto next;
	if (ri->run && ri->run->timed_out) {
		sonde_collection__fail(c,
				       "collector 'external' failed: run %u: it ran past the time "
				       "limit (-t) and was killed: what it printed is not read",
				       ri->index + 1);
		return -ETIMEDOUT;
	}
	avail = mem_available();
	if (avail && (uint64_t)sb.st_size > avail / LOAD_FACTOR) {
		sonde_collection__fail(
			c,
			"collector 'external' failed: run %u: it printed %.1f MiB of JSON, which "
			"would take up to %.1f GiB to load (%d bytes a byte), more than the %.1f "
			"GiB available: have it print less (fewer rows, or aggregated)",
			ri->index + 1, (double)sb.st_size / (1 << 20),
			(double)sb.st_size * LOAD_FACTOR / (1 << 30), LOAD_FACTOR,
			(double)avail / (1 << 30));
		return -E2BIG;
	}
	/* parsed where it lies (mapped): no copy of the text in memory (jansson's
	   json_loadfd reads a byte a call: minutes for a few MiB) */
	if (sb.st_size > 0) {
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, st->fd, 0);

		if (m == MAP_FAILED)
			return -errno;
		doc = json_loadb(m, (size_t)sb.st_size, 0, &jerr);
		munmap(m, (size_t)sb.st_size);
	} else {
		doc = json_loadb("", 0, 0, &jerr);
	}
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
next:
	if (ftruncate(st->fd, 0) < 0 || lseek(st->fd, 0, SEEK_SET) < 0)
		return -errno;
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
