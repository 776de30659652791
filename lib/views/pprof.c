/*
 * pprof.c - a profile with stacks as pprof's format (profile.proto, gzipped),
 * which go tool pprof, speedscope, Pyroscope, Parca and Grafana read.
 *
 * The stacks are the profile's folded stacks (flame.c), taken once per value:
 * by count (calls, samples, allocations) and by amount (time, bytes), and a
 * memory profile's also by what was left allocated at the end (blocks, bytes)
 * and what each stack held at the peak; a stack is one pprof sample with all
 * its values, its frames one location each, leaf first.
 * A frame named "NAME (FILE:LINE)" (Python's, and where sonde knows the line)
 * becomes function NAME of FILE with its line. The profile's command, commit
 * and machine go into the comments; its date into time_nanos and its
 * duration into duration_nanos. Written with protobuf-c from pprof.proto,
 * gzipped with zlib.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sonde/compress.h>
#include "lib/pprof.pb-c.h"
#include "../grow.h"
#include "../strmap.h"
#include "views.h"

struct pp {
	struct sonde_strmap strings; /* string -> its index */
	char **str;
	size_t nstr, capstr;
	struct sonde_strmap funcs; /* frame -> function id (1-based) */
	SondePprof__Function **fn;
	SondePprof__Location **loc;
	size_t nfn, capfn, caploc;
	struct sonde_strmap stacks; /* folded stack -> sample index + 1 */
	SondePprof__Sample **smp;
	size_t nsmp, capsmp;
	size_t nvalue; /* values per sample */
};

static int64_t str_ix(struct pp *pp, const char *s)
{
	bool hit;
	uint64_t *at = sonde_strmap__upsert(&pp->strings, s, strlen(s), &hit);

	if (!at)
		return -1;
	if (hit)
		return (int64_t)*at;
	if (sonde_grow((void **)&pp->str, &pp->capstr, pp->nstr + 1, sizeof(char *)))
		return -1;
	pp->str[pp->nstr] = strdup(s);
	if (!pp->str[pp->nstr])
		return -1;
	*at = pp->nstr;
	return (int64_t)pp->nstr++;
}

/* A frame's function and location (one each, same id), made the first time. */
static long frame_id(struct pp *pp, const char *frame, size_t len)
{
	bool hit;
	uint64_t *at = sonde_strmap__upsert(&pp->funcs, frame, len, &hit);
	SondePprof__Function *f;
	SondePprof__Location *l;
	SondePprof__Line *ln;
	char *name, *open;
	long line = 0;

	if (!at)
		return -ENOMEM;
	if (hit)
		return (long)*at;
	if (sonde_grow((void **)&pp->fn, &pp->capfn, pp->nfn + 1, sizeof(*pp->fn)) ||
	    sonde_grow((void **)&pp->loc, &pp->caploc, pp->nfn + 1, sizeof(*pp->loc)))
		return -ENOMEM;
	f = calloc(1, sizeof(*f));
	l = calloc(1, sizeof(*l));
	ln = calloc(1, sizeof(*ln));
	name = strndup(frame, len);
	if (!l || !ln)
		free(l), l = NULL;
	pp->fn[pp->nfn] = f;
	pp->loc[pp->nfn] = l;
	if (!f || !l || !name) {
		free(ln);
		free(name);
		return -ENOMEM;
	}
	sonde_pprof__function__init(f);
	sonde_pprof__location__init(l);
	sonde_pprof__line__init(ln);
	f->id = l->id = ln->function_id = pp->nfn + 1;
	/* "NAME (FILE:LINE)": the function, its file and line */
	open = strrchr(name, '(');
	if (open && open > name && open[-1] == ' ' && name[len - 1] == ')') {
		char *colon = strrchr(open, ':');

		if (colon && sscanf(colon + 1, "%ld)", &line) == 1 && line > 0) {
			*colon = 0;
			f->filename = str_ix(pp, open + 1);
			open[-1] = 0;
			f->start_line = line;
			ln->line = line;
		}
	}
	f->name = f->system_name = str_ix(pp, name);
	free(name);
	l->line = malloc(sizeof(*l->line));
	if (!l->line || f->name < 0 || f->filename < 0) {
		free(ln);
		return -ENOMEM;
	}
	l->line[0] = ln;
	l->n_line = 1;
	*at = ++pp->nfn; /* the id */
	return (long)pp->nfn;
}

/* Add the folded stacks' weights as value k of their samples. */
static int add_folded(struct pp *pp, const char *folded, size_t k)
{
	const char *line = folded;

	while (line && *line) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *sp = end;
		SondePprof__Sample *s;
		uint64_t *at;
		bool hit;
		double w;

		while (sp > line && sp[-1] != ' ')
			sp--;
		if (sp <= line + 1 || sscanf(sp, "%lf", &w) != 1)
			goto next;
		at = sonde_strmap__upsert(&pp->stacks, line, (size_t)(sp - 1 - line), &hit);
		if (!at)
			return -ENOMEM;
		if (!hit) {
			const char *f = line, *stop = sp - 1;
			size_t depth = 1, i;

			for (; f < stop; f++)
				depth += *f == ';';
			if (sonde_grow((void **)&pp->smp, &pp->capsmp, pp->nsmp + 1,
				       sizeof(*pp->smp)))
				return -ENOMEM;
			s = pp->smp[pp->nsmp] = calloc(1, sizeof(*s));
			if (!s)
				return -ENOMEM;
			sonde_pprof__sample__init(s);
			s->location_id = calloc(depth, sizeof(uint64_t));
			s->value = calloc(pp->nvalue, sizeof(int64_t));
			if (!s->location_id || !s->value)
				return -ENOMEM;
			s->n_value = pp->nvalue;
			/* pprof wants the leaf first: the folded frames are root first */
			for (i = depth, f = line; i-- > 0;) {
				const char *semi = memchr(f, ';', (size_t)(stop - f));
				const char *fe = semi ? semi : stop;
				long id = frame_id(pp, f, (size_t)(fe - f));

				if (id < 0)
					return (int)id;
				s->location_id[i] = (uint64_t)id;
				f = fe + 1;
			}
			s->n_location_id = depth;
			*at = pp->nsmp++;
		}
		pp->smp[*at]->value[k] += (int64_t)(w + 0.5);
	next:
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

static void pp_free(struct pp *pp)
{
	size_t i;

	for (i = 0; i < pp->nstr; i++)
		free(pp->str[i]);
	free(pp->str);
	for (i = 0; i < pp->nfn; i++) {
		if (pp->loc[i]) {
			if (pp->loc[i]->n_line)
				free(pp->loc[i]->line[0]);
			free(pp->loc[i]->line);
		}
		free(pp->loc[i]);
		free(pp->fn[i]);
	}
	free(pp->fn);
	free(pp->loc);
	for (i = 0; i < pp->nsmp; i++) {
		free(pp->smp[i]->location_id);
		free(pp->smp[i]->value);
		free(pp->smp[i]);
	}
	free(pp->smp);
	sonde_strmap__release(&pp->strings);
	sonde_strmap__release(&pp->funcs);
	sonde_strmap__release(&pp->stacks);
}

/* What a profile's values are: by its collector, each a folded weight and
 * pprof's type and unit for it; the value of default is pprof's default. */
#define MAX_VALUES 5
struct value {
	const char *weight, *type, *unit;
};
struct kind {
	struct value v[MAX_VALUES];
	size_t n, dflt;
};

static const struct kind *kind_of(const struct sonde_profile *p)
{
	static const struct kind
		trace = { { { "calls", "calls", "count" }, { "time", "time", "nanoseconds" } },
			  2,
			  1 },
		sample = { { { "samples", "samples", "count" }, { "time", "cpu", "nanoseconds" } },
			   2,
			   1 },
		/* Go's heap profiles' names, so that go tool pprof's -inuse_space,
		 * -alloc_objects... pick them: in use = still allocated at the end */
		memory = { { { "count", "alloc_objects", "count" },
			     { "bytes", "alloc_space", "bytes" },
			     { "leaked", "inuse_objects", "count" },
			     { "leaked_bytes", "inuse_space", "bytes" },
			     { "peak_bytes", "peak_space", "bytes" } },
			   5,
			   1 };
	/* sampled stacks (collect sample, python's sampling mode, an import) count samples */
	const char *c =
		json_string_value(json_object_get(sonde_profile__part(p, "trace"), "count"));

	if (sonde_profile__part(p, "trace"))
		return c && !strcmp(c, "samples") ? &sample : &trace;
	return &memory;
}

static int comment(struct pp *pp, int64_t *ids, size_t *n, const char *what, const char *value)
{
	char buf[1024];
	int64_t ix;

	if (!value || !*value)
		return 0;
	snprintf(buf, sizeof(buf), "%s: %s", what, value);
	ix = str_ix(pp, buf);
	if (ix < 0)
		return -ENOMEM;
	ids[(*n)++] = ix;
	return 0;
}

int sonde_view__pprof(const struct sonde_profile *p, bool gzip, struct sonde_strbuf *out)
{
	const struct kind *k = kind_of(p);
	struct sonde_strbuf f[MAX_VALUES];
	struct pp pp;
	SondePprof__Profile prof = SONDE_PPROF__PROFILE__INIT;
	SondePprof__ValueType vt[MAX_VALUES];
	SondePprof__ValueType *vts[MAX_VALUES];
	SondePprof__ValueType period = SONDE_PPROF__VALUE_TYPE__INIT;
	json_t *h = sonde_profile__header(p), *m = sonde_profile__part(p, "machine");
	json_t *md = sonde_profile__metadata(p);
	int64_t comments[4];
	size_t nc = 0, len, i;
	uint8_t *buf = NULL;
	char *gz = NULL;
	size_t gzlen = 0;
	int rc = 0;

	memset(&pp, 0, sizeof(pp));
	pp.nvalue = k->n;
	for (i = 0; i < k->n; i++) {
		sonde_strbuf__init(&f[i]);
		sonde_pprof__value_type__init(&vt[i]);
		vts[i] = &vt[i];
	}
	/* the first two (count and amount) must have stacks; the others may
	 * have none of their weight (nothing leaked) */
	for (i = 0; i < k->n && !rc; i++) {
		rc = sonde_view__folded(p, k->v[i].weight, &f[i]);
		if (rc == -ENOTSUP && i >= 2)
			rc = 0;
	}
	if (rc)
		goto out;
	rc = -ENOMEM;
	if (str_ix(&pp, "") != 0) /* index 0 is the empty string */
		goto out;
	for (i = 0; i < k->n; i++) {
		vt[i].type = str_ix(&pp, k->v[i].type);
		vt[i].unit = str_ix(&pp, k->v[i].unit);
		if (vt[i].type < 0 || vt[i].unit < 0)
			goto out;
	}
	period = vt[k->dflt];
	for (i = 0; i < k->n; i++)
		if (add_folded(&pp, f[i].buf, i))
			goto out;
	if (comment(&pp, comments, &nc, "command", json_string_value(json_object_get(h, "cmd"))) ||
	    comment(&pp, comments, &nc, "commit",
		    json_string_value(sonde_profile__part(p, "origin"))) ||
	    comment(&pp, comments, &nc, "machine", json_string_value(json_object_get(m, "host"))) ||
	    comment(&pp, comments, &nc, "made by", "sonde"))
		goto out;
	{ /* when: the profile's date (metadata.date, ISO 8601 with its offset) */
		const char *date = json_string_value(json_object_get(md, "date"));
		struct tm tm;

		memset(&tm, 0, sizeof(tm));
		if (date && strptime(date, "%Y-%m-%dT%H:%M:%S%z", &tm)) {
			long off = tm.tm_gmtoff;
			time_t t = timegm(&tm) - off;

			prof.time_nanos = (int64_t)t * 1000000000;
		}
		prof.duration_nanos = (int64_t)json_integer_value(
			json_object_get(sonde_profile__stats(p), "duration_ns"));
	}
	prof.n_sample_type = k->n;
	prof.sample_type = vts;
	prof.default_sample_type = vt[k->dflt].type;
	prof.period_type = &period;
	prof.period = 1;
	prof.n_sample = pp.nsmp;
	prof.sample = pp.smp;
	prof.n_location = pp.nfn;
	prof.location = pp.loc;
	prof.n_function = pp.nfn;
	prof.function = pp.fn;
	prof.n_string_table = pp.nstr;
	prof.string_table = pp.str;
	prof.n_comment = nc;
	prof.comment = comments;
	len = sonde_pprof__profile__get_packed_size(&prof);
	buf = malloc(len ? len : 1);
	if (!buf)
		goto out;
	sonde_pprof__profile__pack(&prof, buf);
	if (!gzip) {
		rc = sonde_strbuf__add(out, buf, len);
		goto out;
	}
	rc = sonde_compress__encode(SONDE_COMPRESS_GZIP, buf, len, &gz, &gzlen);
	if (!rc)
		rc = sonde_strbuf__add(out, gz, gzlen);
out:
	free(buf);
	free(gz);
	pp_free(&pp);
	for (i = 0; i < k->n; i++)
		sonde_strbuf__release(&f[i]);
	return rc;
}
