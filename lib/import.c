/*
 * import.c - pprof files and `perf script` output as sonde profiles.
 *
 * Both are sampled stacks: each becomes a sample of a sampling calltrace
 * (include/sonde/calltrace.h), the same engine `collect sample` feeds, so the
 * profile is a sampled trace profile whatever it came from.
 *
 * pprof: the sample type counted in samples (unit "count") and the one in
 * time (a unit of nanoseconds, microseconds, milliseconds or seconds); where
 * there is no time value, count × period when the period is a time. A stack's
 * locations are leaf first, a location's lines innermost first (inlined
 * frames): they are reversed. A sample of count c is c samples of the stack,
 * its time shared between them. Heap profiles (bytes) are refused: sonde's
 * memory profiles are made of allocations, which pprof does not keep.
 *
 * perf script: a sample is a header line (comm, pid[/tid], [cpu], time:,
 * period, event:) and its frames, one per line, leaf first ("addr sym+off
 * (dso)"), then a blank line. The event must count time (cpu-clock,
 * task-clock: the period is ns); others are refused with the reason.
 *
 * Neither keeps a timeline sonde can show (pprof has no times; perf's are
 * kept as the samples' order only): the profile has none, and says so.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/calltrace.h>
#include <sonde/compress.h>
#include <sonde/import.h>
#include "lib/pprof.pb-c.h"
#include "strmap.h"

#define MAX_DEPTH 4096

const char *sonde_import__format_name(enum sonde_import_format f)
{
	return f == SONDE_IMPORT_PPROF	       ? "pprof"
	       : f == SONDE_IMPORT_PERF_SCRIPT ? "perf script"
					       : "?";
}

/* A line of perf script's header: "... PID[/TID] [CPU] SECONDS.FRACTION: ..." */
static bool perf_header(const char *line, size_t len)
{
	size_t i;

	for (i = 0; i + 2 < len; i++)
		if (isdigit((unsigned char)line[i]) && line[i + 1] == '.') {
			size_t j = i + 2;

			while (j < len && isdigit((unsigned char)line[j]))
				j++;
			if (j < len && line[j] == ':' && j > i + 2)
				return true;
		}
	return false;
}

enum sonde_import_format sonde_import__detect(const void *buf, size_t len)
{
	const unsigned char *b = buf;
	size_t i, text = 0, n = len < 4096 ? len : 4096;

	if (!len)
		return SONDE_IMPORT_UNKNOWN;
	for (i = 0; i < n; i++)
		text += b[i] == '\n' || b[i] == '\t' || (b[i] >= 0x20 && b[i] < 0x7f) ||
			b[i] >= 0x80;
	if (text < n) /* binary: field 1 (sample_type), length-delimited, comes first */
		return b[0] == 0x0a ? SONDE_IMPORT_PPROF : SONDE_IMPORT_UNKNOWN;
	{
		const char *s = buf, *nl = memchr(s, '\n', n);
		size_t first = nl ? (size_t)(nl - s) : n;

		/* perf script begins with a sample's header (its "# ..." header, if any, first) */
		while (nl && first && s[0] == '#') {
			s = nl + 1;
			nl = memchr(s, '\n', n - (size_t)(s - (const char *)buf));
			first = nl ? (size_t)(nl - s) : 0;
		}
		if (first && !isspace((unsigned char)s[0]) && perf_header(s, first))
			return SONDE_IMPORT_PERF_SCRIPT;
	}
	return SONDE_IMPORT_UNKNOWN;
}

/* ---- a frame's function: the same (module, line, name) gives the same id ------------------- */

static int func_id(struct sonde_calltrace *ct, const char *module, uint64_t line, const char *name,
		   uint32_t *id)
{
	return sonde_calltrace__func(ct, module ? module : "", line, name && *name ? name : "?",
				     id);
}

/* Feed `count` samples of a stack (outermost first) sharing weight ns. */
/* What was fed: samples (their order is their time) and their summed weight. */
struct tally {
	uint64_t seq, weight;
};

static int feed(struct sonde_calltrace *ct, uint32_t tid, struct tally *t, uint64_t count,
		uint64_t weight, const uint32_t *ids, size_t n)
{
	uint64_t i, each = count ? weight / count : 0, rest = count ? weight % count : 0;
	int rc = 0;

	t->weight += weight;
	for (i = 0; i < count && !rc; i++)
		rc = sonde_calltrace__sample(ct, tid, t->seq++, each + (i < rest), ids, n);
	return rc;
}

/* ---- pprof ------------------------------------------------------------------------------------
 */

static const char *pstr(const SondePprof__Profile *pr, int64_t i)
{
	return i >= 0 && (size_t)i < pr->n_string_table ? pr->string_table[i] : NULL;
}

/* ns in one unit of a time unit; 0: not a time */
static double ns_per(const char *unit)
{
	if (!unit)
		return 0;
	if (!strcmp(unit, "nanoseconds") || !strcmp(unit, "ns"))
		return 1;
	if (!strcmp(unit, "microseconds") || !strcmp(unit, "us"))
		return 1e3;
	if (!strcmp(unit, "milliseconds") || !strcmp(unit, "ms"))
		return 1e6;
	if (!strcmp(unit, "seconds") || !strcmp(unit, "s"))
		return 1e9;
	return 0;
}

static int from_pprof(const void *buf, size_t len, struct sonde_calltrace *ct, json_t *meta,
		      struct sonde_strbuf *err)
{
	SondePprof__Profile *pr = sonde_pprof__profile__unpack(NULL, len, buf);
	long cnt = -1, tim = -1;
	double scale = 0, period_ns = 0;
	uint32_t *ids = NULL;
	struct tally tl = { 0, 0 };
	size_t i, j, k;
	int rc = 0;

	if (!pr) {
		sonde_strbuf__adds(err, "not a pprof profile (its protobuf does not parse)");
		return -EINVAL;
	}
	if (!pr->n_string_table || pr->string_table[0][0] || !pr->n_sample_type) {
		sonde_strbuf__adds(err, "a malformed pprof profile (no string table, or no "
					"sample types)");
		rc = -EINVAL;
		goto out;
	}
	for (i = 0; i < pr->n_sample_type; i++) {
		const char *unit = pstr(pr, pr->sample_type[i]->unit);

		if (cnt < 0 && unit && !strcmp(unit, "count"))
			cnt = (long)i;
		if (tim < 0 && ns_per(unit) > 0)
			tim = (long)i, scale = ns_per(unit);
	}
	if (pr->period_type)
		period_ns = ns_per(pstr(pr, pr->period_type->unit)) * (double)pr->period;
	if (tim < 0 && (cnt < 0 || period_ns <= 0)) {
		const char *t = pstr(pr, pr->sample_type[0]->type);
		const char *u = pstr(pr, pr->sample_type[0]->unit);

		sonde_strbuf__addf(err,
				   "a pprof profile of %s (%s): sonde imports profiles of time "
				   "(CPU or wall: a value in nanoseconds, or samples with a period "
				   "of time)",
				   t ? t : "?", u ? u : "?");
		rc = -ENOTSUP;
		goto out;
	}
	ids = malloc(MAX_DEPTH * sizeof(*ids));
	if (!ids) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; !rc && i < pr->n_sample; i++) {
		const SondePprof__Sample *s = pr->sample[i];
		uint64_t count = 1, weight;
		uint32_t tid = 1;
		size_t n = 0;

		if ((cnt >= 0 && (size_t)cnt >= s->n_value) ||
		    (tim >= 0 && (size_t)tim >= s->n_value)) {
			sonde_strbuf__addf(err,
					   "a malformed pprof profile: sample %zu has %zu values "
					   "for %zu types",
					   i, s->n_value, pr->n_sample_type);
			rc = -EINVAL;
			break;
		}
		if (cnt >= 0)
			count = s->value[cnt] > 0 ? (uint64_t)s->value[cnt] : 0;
		weight = tim >= 0 ? (uint64_t)((double)(s->value[tim] > 0 ? s->value[tim] : 0) *
					       scale)
				  : (uint64_t)((double)count * period_ns);
		if (tim >= 0 && cnt < 0)
			count = 1;
		if (!count)
			continue;
		for (k = 0; k < s->n_label; k++) { /* a thread, where the producer says which */
			const char *key = pstr(pr, s->label[k]->key);

			if (key &&
			    (!strcmp(key, "thread_id") || !strcmp(key, "tid") ||
			     !strcmp(key, "thread")) &&
			    s->label[k]->num > 0)
				tid = (uint32_t)s->label[k]->num;
		}
		/* outermost first: the locations reversed, each one's lines reversed */
		for (j = s->n_location_id; !rc && j-- > 0;) {
			const SondePprof__Location *l = NULL;
			size_t a;

			/* ids are usually 1..n in order */
			if (s->location_id[j] >= 1 && s->location_id[j] <= pr->n_location &&
			    pr->location[s->location_id[j] - 1]->id == s->location_id[j])
				l = pr->location[s->location_id[j] - 1];
			for (a = 0; !l && a < pr->n_location; a++)
				if (pr->location[a]->id == s->location_id[j])
					l = pr->location[a];
			if (!l) {
				sonde_strbuf__addf(err,
						   "a malformed pprof profile: sample %zu names "
						   "location %llu, which is not there",
						   i, (unsigned long long)s->location_id[j]);
				rc = -EINVAL;
				break;
			}
			for (a = l->n_line; !rc && a-- > 0;) {
				const SondePprof__Function *f = NULL;
				size_t b;

				for (b = 0; b < pr->n_function; b++)
					if (pr->function[b]->id == l->line[a]->function_id) {
						f = pr->function[b];
						break;
					}
				if (!f)
					continue;
				if (n == MAX_DEPTH) {
					sonde_strbuf__addf(err,
							   "sample %zu is deeper than %d frames", i,
							   MAX_DEPTH);
					rc = -EINVAL;
					break;
				}
				rc = func_id(ct, pstr(pr, f->filename),
					     (uint64_t)(f->start_line > 0 ? f->start_line : 0),
					     pstr(pr, f->name), &ids[n++]);
			}
			if (!rc && !l->n_line) { /* an address only: named by it */
				char name[64];

				if (n == MAX_DEPTH) {
					rc = -EINVAL;
					break;
				}
				snprintf(name, sizeof(name), "0x%llx",
					 (unsigned long long)l->address);
				rc = func_id(ct, "", 0, name, &ids[n++]);
			}
		}
		if (!rc)
			rc = feed(ct, tid, &tl, count, weight, ids, n);
	}
	if (!rc) {
		json_t *c = json_array();

		for (i = 0; c && i < pr->n_comment; i++)
			json_array_append_new(c, json_string(pstr(pr, pr->comment[i]) ?: ""));
		json_object_set_new(meta, "comments", c);
		json_object_set_new(meta, "samples", json_integer((json_int_t)tl.seq));
		json_object_set_new(meta, "weight_ns", json_integer((json_int_t)tl.weight));
		if (pr->time_nanos)
			json_object_set_new(meta, "time_nanos", json_integer(pr->time_nanos));
		if (pr->duration_nanos)
			json_object_set_new(meta, "duration_nanos",
					    json_integer(pr->duration_nanos));
		json_object_set_new(meta, "value",
				    json_string(tim >= 0 ? pstr(pr, pr->sample_type[tim]->type)
							 : "samples × period"));
	}
out:
	free(ids);
	sonde_pprof__profile__free_unpacked(pr, NULL);
	return rc;
}

/* ---- perf script ------------------------------------------------------------------------------
 */

/*
 * A header: "comm pid[/tid] [cpu] secs.frac: period event:" (fields perf
 * script prints by default for perf record -g). The event and its period,
 * the thread; false where the line is not one.
 */
static bool parse_header(char *line, uint32_t *tid, uint64_t *period, char *event, size_t evlen)
{
	char *tok[64], *save = NULL, *t;
	int n = 0, i, ti = -1;

	for (t = strtok_r(line, " \t", &save); t && n < 64; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	for (i = 0; i < n && ti < 0; i++) {
		size_t l = strlen(tok[i]);

		if (l > 2 && tok[i][l - 1] == ':' && strchr(tok[i], '.') &&
		    isdigit((unsigned char)tok[i][0]))
			ti = i;
	}
	if (ti < 1)
		return false;
	/* the pid[/tid] is before the time, or before a [cpu] */
	for (i = ti - 1; i >= 0; i--)
		if (isdigit((unsigned char)tok[i][0])) {
			char *slash = strchr(tok[i], '/');

			*tid = (uint32_t)strtoul(slash ? slash + 1 : tok[i], NULL, 10);
			break;
		}
	*period = 1;
	i = ti + 1;
	if (i < n && isdigit((unsigned char)tok[i][0]))
		*period = strtoull(tok[i++], NULL, 10);
	snprintf(event, evlen, "%s", i < n ? tok[i] : "?");
	/* "cpu-clock:ppp:" -> "cpu-clock" */
	event[strcspn(event, ":")] = 0;
	return true;
}

/* A frame: "addr sym+0xoff (dso)"; the name (offset cut) and the dso, in place. */
static void parse_frame(char *line, const char **name, const char **dso)
{
	char *p = line, *sp, *open, *plus;

	while (isspace((unsigned char)*p))
		p++;
	sp = strpbrk(p, " \t"); /* after the address */
	p = sp ? sp : p + strlen(p);
	while (isspace((unsigned char)*p))
		p++;
	open = strrchr(p, '(');
	*dso = "";
	if (open && open > p) {
		char *close = strrchr(open, ')');

		if (close)
			*close = 0;
		*dso = open + 1;
		open[-1] = 0;
	}
	plus = strstr(p, "+0x");
	if (plus)
		*plus = 0;
	*name = p;
}

static int from_perf_script(const char *buf, size_t len, struct sonde_calltrace *ct, json_t *meta,
			    struct sonde_strbuf *err)
{
	const char *p = buf, *end = buf + len;
	char *line = NULL, event[64] = "", first_event[64] = "";
	const char *names[MAX_DEPTH], *dsos[MAX_DEPTH];
	char *copies[MAX_DEPTH];
	uint32_t ids[MAX_DEPTH], tid = 0;
	uint64_t period = 0, lineno = 0;
	struct tally tl = { 0, 0 };
	size_t depth = 0, cap = 0, i;
	bool in_sample = false;
	int rc = 0;

	for (; !rc && p <= end; lineno++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		bool blank = true;

		for (i = 0; i < l; i++)
			blank &= isspace((unsigned char)p[i]) != 0;
		if (l + 1 > cap) {
			char *m = realloc(line, l + 1);

			if (!m) {
				rc = -ENOMEM;
				break;
			}
			line = m, cap = l + 1;
		}
		memcpy(line, p, l);
		line[l] = 0;
		if ((blank || p == end) && in_sample) {
			/* the sample ends: its frames, leaf first, fed outermost first; one
			 * without frames is perf report's [unknown]: its time is not lost */
			for (i = 0; !rc && i < depth; i++)
				rc = func_id(ct, dsos[depth - 1 - i], 0, names[depth - 1 - i],
					     &ids[i]);
			if (!rc && !depth)
				rc = func_id(ct, "[unknown]", 0, "[unknown]", &ids[0]);
			if (!rc)
				rc = feed(ct, tid, &tl, 1, period, ids, depth ? depth : 1);
			for (i = 0; i < depth; i++)
				free(copies[i]);
			depth = 0;
			in_sample = false;
		} else if (!blank && line[0] != '#') {
			if (!isspace((unsigned char)line[0])) {
				if (in_sample) { /* a sample without frames, or one that ran on */
					for (i = 0; i < depth; i++)
						free(copies[i]);
					if (!rc)
						rc = func_id(ct, "[unknown]", 0, "[unknown]",
							     &ids[0]);
					if (!rc)
						rc = feed(ct, tid, &tl, 1, period, ids, 1);
					depth = 0;
				}
				if (!parse_header(line, &tid, &period, event, sizeof(event))) {
					sonde_strbuf__addf(err,
							   "line %llu is not a sample of perf "
							   "script's output",
							   (unsigned long long)lineno + 1);
					rc = -EINVAL;
					break;
				}
				if (!first_event[0])
					snprintf(first_event, sizeof(first_event), "%s", event);
				if (strcmp(event, "cpu-clock") && strcmp(event, "task-clock")) {
					sonde_strbuf__addf(
						err,
						"perf script of event '%s' (line %llu): sonde "
						"imports samples of time (perf record -e "
						"cpu-clock or -e task-clock, whose period is ns)",
						event, (unsigned long long)lineno + 1);
					rc = -ENOTSUP;
					break;
				}
				in_sample = true;
			} else if (in_sample) {
				const char *name, *dso;

				if (depth == MAX_DEPTH) {
					sonde_strbuf__addf(
						err, "line %llu: a stack deeper than %d frames",
						(unsigned long long)lineno + 1, MAX_DEPTH);
					rc = -EINVAL;
					break;
				}
				copies[depth] = strdup(line);
				if (!copies[depth]) {
					rc = -ENOMEM;
					break;
				}
				parse_frame(copies[depth], &name, &dso);
				names[depth] = name;
				dsos[depth++] = dso;
			}
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	for (i = 0; i < depth; i++)
		free(copies[i]);
	free(line);
	if (!rc && !tl.seq) {
		sonde_strbuf__adds(err, "perf script's output holds no sample");
		rc = -EINVAL;
	}
	if (!rc) {
		json_object_set_new(meta, "event", json_string(first_event));
		json_object_set_new(meta, "samples", json_integer((json_int_t)tl.seq));
		json_object_set_new(meta, "weight_ns", json_integer((json_int_t)tl.weight));
	}
	return rc;
}

/* ---- the profile --------------------------------------------------------------------------------
 */

int sonde_import__load(const void *buf, size_t len, const char *name, struct sonde_profile **out,
		       struct sonde_strbuf *err)
{
	char *plain = NULL;
	size_t plen = 0;
	enum sonde_import_format f;
	struct sonde_calltrace *ct = NULL;
	struct sonde_profile *p = NULL;
	json_t *meta = json_object(), *how;
	int rc;

	*out = NULL;
	if (!meta)
		return -ENOMEM;
	if (sonde_compress__by_magic(buf, len) != SONDE_COMPRESS_NONE) {
		rc = sonde_compress__decode(buf, len, (size_t)1 << 32, &plain, &plen);
		if (rc) {
			sonde_strbuf__addf(err, "its compressed data is truncated or corrupt");
			json_decref(meta);
			return rc == -ENOMEM ? -ENOMEM : -EINVAL;
		}
		buf = plain, len = plen;
	}
	f = sonde_import__detect(buf, len);
	if (f == SONDE_IMPORT_UNKNOWN) {
		sonde_strbuf__adds(err, "neither a pprof profile nor perf script's output");
		rc = -EINVAL;
		goto out;
	}
	ct = sonde_calltrace__new(f == SONDE_IMPORT_PPROF ? "pprof" : "perf script", name, 0, 0);
	/* how the samples were taken (stats.trace.sampling, which the views read),
	   completed once they are read: the calltrace holds it, this a reference */
	how = json_pack("{s:s, s:s}", "timer", sonde_import__format_name(f), "weight", "cpu");
	rc = !ct || !how ? -ENOMEM : 0;
	if (!rc) {
		/* no timeline: neither input has times sonde can show */
		sonde_calltrace__limits(ct, 0, 0);
		rc = sonde_calltrace__sampling(ct, json_incref(how));
	}
	if (!rc)
		rc = f == SONDE_IMPORT_PPROF ? from_pprof(buf, len, ct, meta, err)
					     : from_perf_script(buf, len, ct, meta, err);
	if (!rc) {
		json_int_t n = json_integer_value(json_object_get(meta, "samples"));
		const char *v = json_string_value(json_object_get(meta, "value"));

		/* a wall-time profile (py-spy's, pprof's "wall") says so */
		if (v && strstr(v, "wall"))
			json_object_set_new(how, "weight", json_string("wall"));
		json_object_set_new(how, "event",
				    json_string(json_string_value(json_object_get(meta, "event"))
							?: (v ? v : "?")));
		if (n > 0)
			json_object_set_new(how, "interval_ns",
					    json_real((double)json_integer_value(
							      json_object_get(meta, "weight_ns")) /
						      (double)n));
	}
	json_decref(how);
	if (!rc) {
		json_object_set_new(meta, "format", json_string(sonde_import__format_name(f)));
		json_object_set_new(meta, "file", json_string(name ? name : ""));
		rc = sonde_calltrace__engine_stat(ct, "imported", json_incref(meta));
	}
	if (!rc) {
		p = sonde_profile__new("trace");
		rc = p ? sonde_calltrace__write(ct, p) : -ENOMEM;
	}
	if (!rc)
		rc = sonde_profile__set(sonde_profile__metadata(p), "imported", json_incref(meta));
	if (rc && p) {
		sonde_profile__free(p);
		p = NULL;
	}
	if (rc == -ENOMEM && !err->len)
		sonde_strbuf__adds(err, "out of memory");
	*out = p;
out:
	sonde_calltrace__free(ct);
	json_decref(meta);
	free(plain);
	return rc;
}
