/*
 * memory.c - the memory view: what heaptrack's summary answers, from a
 * memory profile. Totals (allocations, temporaries, peak and when, leaks), the
 * sites that allocated most (per uid, over all their stacks), every leaking
 * stack with its frames, the size histogram and the heap over time.
 * Everything comes from the profile's summaries and stats.memory, which count
 * every event even when the per-allocation rows were sampled.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include "../strmap.h"
#include "views.h"

struct site_sum {
	const char *uid;
	json_t *top; /* the first frame */
	json_int_t count, bytes, peak, leaked, leaked_bytes, temporary;
};

static json_int_t sget(json_t *summary, const char *k)
{
	return json_integer_value(json_object_get(summary, k));
}

static int by_bytes(const void *a, const void *b)
{
	const struct site_sum *x = a, *y = b;

	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : strcmp(x->uid, y->uid);
}

struct leak {
	json_t *fixed;
	json_int_t blocks, bytes;
};

static int by_leaked(const void *a, const void *b)
{
	const struct leak *x = a, *y = b;

	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

static bool is_alloc(const char *subtype)
{
	static const char *const frees[] = { "free", "delete", "delete[]", "munmap", "live", NULL };
	size_t i;

	for (i = 0; frees[i]; i++)
		if (subtype && !strcmp(subtype, frees[i]))
			return false;
	return subtype != NULL;
}

static const char *where(json_t *frame, char *buf, size_t len)
{
	const char *fn = json_string_value(json_object_get(frame, "function"));
	const char *src = json_string_value(json_object_get(frame, "source"));
	const char *base = src ? strrchr(src, '/') : NULL;
	json_int_t line = json_integer_value(json_object_get(frame, "line"));

	base = base ? base + 1 : src;
	if (base && *base)
		snprintf(buf, len, "%s (%s:%lld)", fn ? fn : "?", base, (long long)line);
	else
		snprintf(buf, len, "%s", fn ? fn : "?");
	return buf;
}

/* Per uid sums of the allocating resources. */
static struct site_sum *collect_sites(const struct sonde_profile *p, size_t *n, struct leak **leaks,
				      size_t *nleaks)
{
	size_t nres = sonde_profile__resource_count(p), i, j, k = 0, nl = 0;
	struct site_sum *s = calloc(nres + 1, sizeof(*s));
	struct leak *l = calloc(nres + 1, sizeof(*l));
	struct sonde_strmap index = SONDE_STRMAP_INIT; /* uid -> its sum */

	if (!s || !l) {
		free(s);
		free(l);
		return NULL;
	}
	for (i = 0; i < nres; i++) {
		json_t *fixed, *cols, *sum;
		const char *uid;
		uint64_t *at;
		bool hit;

		if (sonde_profile__resource_at(p, i, NULL, &fixed, &cols)) {
			/* a site left out would read as one that allocated nothing */
			sonde_strmap__release(&index);
			free(s);
			free(l);
			return NULL;
		}
		if (!is_alloc(json_string_value(json_object_get(fixed, "subtype"))))
			continue;
		sum = json_object_get(fixed, "summary");
		uid = json_string_value(json_object_get(fixed, "uid"));
		if (!uid || !sum)
			continue;
		at = sonde_strmap__upserts(&index, uid, &hit);
		if (!at) {
			sonde_strmap__release(&index);
			free(s);
			free(l);
			return NULL;
		}
		if (hit) {
			j = (size_t)*at;
		} else {
			j = k++;
			*at = j;
			s[j].uid = uid;
			s[j].top = json_array_get(json_object_get(fixed, "trace"), 0);
		}
		s[j].count += sget(sum, "count");
		s[j].bytes += sget(sum, "bytes");
		s[j].peak += sget(sum, "peak_bytes");
		s[j].leaked += sget(sum, "leaked");
		s[j].leaked_bytes += sget(sum, "leaked_bytes");
		s[j].temporary += sget(sum, "temporary");
		if (sget(sum, "leaked")) {
			l[nl].fixed = fixed;
			l[nl].blocks = sget(sum, "leaked");
			l[nl].bytes = sget(sum, "leaked_bytes");
			nl++;
		}
	}
	sonde_strmap__release(&index);
	qsort(s, k, sizeof(*s), by_bytes);
	qsort(l, nl, sizeof(*l), by_leaked);
	*n = k;
	*leaks = l;
	*nleaks = nl;
	return s;
}

static json_t *site_json(const struct site_sum *s)
{
	return json_pack("{s:s, s:O, s:I, s:I, s:I, s:I, s:I, s:I}", "uid", s->uid, "frame",
			 s->top ? s->top : json_null(), "count", s->count, "bytes", s->bytes,
			 "peak_bytes", s->peak, "leaked", s->leaked, "leaked_bytes",
			 s->leaked_bytes, "temporary", s->temporary);
}

int sonde_view__memory(const struct sonde_profile *p, enum sonde_view_format fmt, unsigned top,
		       struct sonde_strbuf *out)
{
	json_t *m = json_object_get(sonde_profile__stats(p), "memory");
	json_t *h = sonde_profile__header(p), *x;
	struct site_sum *s;
	struct leak *l;
	size_t n, nl, i, j;
	char a[32], b[32], c[32], d[32], w[512];
	int err = 0;

	if (!json_is_object(m))
		return -EINVAL;
	if (!top)
		top = UINT_MAX; /* 0: all */
	s = collect_sites(p, &n, &l, &nl);
	if (!s)
		return -ENOMEM;
	if (fmt == SONDE_VIEW_JSON) {
		json_t *doc = json_pack("{s:O, s:[], s:[]}", "totals", m, "sites", "leaks");

		for (i = 0; doc && i < n && i < top; i++)
			json_array_append_new(json_object_get(doc, "sites"), site_json(&s[i]));
		for (i = 0; doc && i < nl && i < top; i++)
			json_array_append_new(json_object_get(doc, "leaks"),
					      json_pack("{s:O, s:I, s:I, s:O}", "uid",
							json_object_get(l[i].fixed, "uid"),
							"blocks", l[i].blocks, "bytes", l[i].bytes,
							"trace",
							json_object_get(l[i].fixed, "trace")));
		err |= sonde_view__json(out, doc, JSON_INDENT(2));
		json_decref(doc);
	} else if (fmt == SONDE_VIEW_CSV || fmt == SONDE_VIEW_MARKDOWN) {
		bool md = fmt == SONDE_VIEW_MARKDOWN;

		err |= sonde_strbuf__addf(
			out,
			md ? "| site | allocations | bytes | peak bytes | leaked | leaked bytes | "
			     "temporary |\n|---|---:|---:|---:|---:|---:|---:|\n"
			   : "site,allocations,bytes,peak_bytes,leaked,leaked_bytes,temporary\n");
		for (i = 0; i < n && i < top; i++) {
			if (md)
				err |= sonde_strbuf__addf(
					out, "| `%s` | %lld | %lld | %lld | %lld | %lld | %lld |\n",
					s[i].uid, (long long)s[i].count, (long long)s[i].bytes,
					(long long)s[i].peak, (long long)s[i].leaked,
					(long long)s[i].leaked_bytes, (long long)s[i].temporary);
			else {
				struct sonde_strbuf uid = SONDE_STRBUF_INIT;

				err |= sonde_view__csv_quote(&uid, s[i].uid);
				err |= sonde_strbuf__addf(
					out, "%s,%lld,%lld,%lld,%lld,%lld,%lld\n",
					uid.buf ? uid.buf : "\"\"", (long long)s[i].count,
					(long long)s[i].bytes, (long long)s[i].peak,
					(long long)s[i].leaked, (long long)s[i].leaked_bytes,
					(long long)s[i].temporary);
				sonde_strbuf__release(&uid);
			}
		}
	} else {
		json_int_t allocs = sget(m, "allocations"), tmp = sget(m, "temporary_allocations");

		err |= sonde_strbuf__addf(out, "%s  (memory)\n\n",
					  json_string_value(json_object_get(h, "cmd")) ?: "?");
		err |= sonde_strbuf__addf(
			out, "  allocations   %lld (%s)   frees %lld\n", (long long)allocs,
			sonde_format__bytes((double)sget(m, "allocated_bytes"), a, sizeof(a)),
			(long long)sget(m, "frees"));
		err |= sonde_strbuf__addf(out, "  temporary     %lld (%.1f %% of allocations)\n",
					  (long long)tmp,
					  allocs ? 100.0 * (double)tmp / (double)allocs : 0.0);
		if (allocs)
			err |= sonde_strbuf__addf(
				out, "  peak heap     %s at %s (pid %lld)\n",
				sonde_format__bytes((double)sget(m, "peak_heap_bytes"), a,
						    sizeof(a)),
				sonde_format__duration((double)sget(m, "peak_heap_time_ns"), b,
						       sizeof(b)),
				(long long)sget(m, "peak_heap_pid"));
		else
			err |= sonde_strbuf__adds(out,
						  "  peak heap     - (nothing was allocated)\n");
		err |= sonde_strbuf__addf(
			out, "  leaked        %lld block%s, %s\n",
			(long long)sget(m, "leaked_blocks"),
			sget(m, "leaked_blocks") == 1 ? "" : "s",
			sonde_format__bytes((double)sget(m, "leaked_bytes"), a, sizeof(a)));
		err |= sonde_strbuf__addf(
			out,
			"  processes     %lld   threads %lld   stacks %lld   dropped events %lld",
			(long long)sget(m, "processes"), (long long)sget(m, "threads"),
			(long long)sget(m, "stacks"),
			(long long)json_integer_value(
				json_object_get(sonde_profile__stats(p), "dropped_events")));
		if (sget(m, "missed_events"))
			err |= sonde_strbuf__addf(out, "   missed %lld",
						  (long long)sget(m, "missed_events"));
		err |= sonde_strbuf__adds(out, "\n\n");
		err |= sonde_strbuf__addf(out, "  %-11s %11s %11s %11s %11s  %s\n", "allocated",
					  "count", "peak", "leaked", "temporary", "site");
		for (i = 0; i < n && i < top; i++)
			err |= sonde_strbuf__addf(
				out, "  %-11s %11lld %11s %11s %11lld  %s\n",
				sonde_format__bytes((double)s[i].bytes, a, sizeof(a)),
				(long long)s[i].count,
				sonde_format__bytes((double)s[i].peak, b, sizeof(b)),
				sonde_format__bytes((double)s[i].leaked_bytes, c, sizeof(c)),
				(long long)s[i].temporary, where(s[i].top, w, sizeof(w)));
		if (n > top)
			err |= sonde_strbuf__addf(out, "  ... %zu more sites\n", n - top);
		if (nl) {
			err |= sonde_strbuf__adds(
				out, "\nleaks (still allocated when the process ended)\n");
			for (i = 0; i < nl && i < top; i++) {
				json_t *tr = json_object_get(l[i].fixed, "trace");

				err |= sonde_strbuf__addf(
					out, "  %s in %lld block%s\n",
					sonde_format__bytes((double)l[i].bytes, a, sizeof(a)),
					(long long)l[i].blocks, l[i].blocks == 1 ? "" : "s");
				json_array_foreach(tr, j, x)
				{
					if (j >= 12) {
						err |= sonde_strbuf__addf(
							out, "      ... %zu more frames\n",
							json_array_size(tr) - j);
						break;
					}
					err |= sonde_strbuf__addf(out, "      %s\n",
								  where(x, w, sizeof(w)));
				}
			}
		}
		x = json_object_get(m, "size_histogram");
		if (json_array_size(x)) {
			json_int_t most = 1;
			json_t *bk;

			err |= sonde_strbuf__adds(out, "\nsizes\n");
			json_array_foreach(x, i, bk) if (sget(bk, "count") > most) most =
				sget(bk, "count");
			json_array_foreach(x, i, bk)
			{
				json_t *mx = json_object_get(bk, "max_bytes");
				int bar = (int)(40 * sget(bk, "count") / most);

				snprintf(d, sizeof(d), "%s %s", json_is_null(mx) ? ">" : "<=",
					 sonde_format__bytes(
						 json_is_null(mx) ? 4194304.0
								  : (double)json_integer_value(mx),
						 a, sizeof(a)));
				err |= sonde_strbuf__addf(
					out, "  %-12s %11lld  %.*s\n", d,
					(long long)sget(bk, "count"), bar ? bar * 3 : 3,
					bar ? "████████████████████████████████████████████████████"
					      "████████████████████████████████████████████████████"
					      "███████████████████"
					    : "▏");
			}
		}
		/* each column the slice's highest (profiles before it: its end) */
		x = json_object_get(json_object_get(m, "timeline"), "heap_peak");
		if (!json_array_size(x))
			x = json_object_get(json_object_get(m, "timeline"), "heap");
		if (json_array_size(x)) {
			static const char *const bars[] = { " ", "▁", "▂", "▃", "▄",
							    "▅", "▆", "▇", "█" };
			json_int_t most = 1;
			json_t *v;

			json_array_foreach(x, i, v) if (json_integer_value(v) > most) most =
				json_integer_value(v);
			err |= sonde_strbuf__addf(
				out, "\nheap over time (%s per column, peak %s)\n  ",
				sonde_format__duration(
					(double)sget(json_object_get(m, "timeline"), "slice_ns"), a,
					sizeof(a)),
				sonde_format__bytes((double)most, b, sizeof(b)));
			json_array_foreach(x, i, v) err |= sonde_strbuf__adds(
				out, bars[(8 * json_integer_value(v) + most - 1) / most]);
			err |= sonde_strbuf__addch(out, '\n');
		}
		err |= sonde_strbuf__addch(out, '\n');
	}
	free(s);
	free(l);
	return err ? -ENOMEM : 0;
}
