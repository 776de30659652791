/*
 * regions.c - energy per region (see regions.h).
 *
 * A power source is read every interval (100 ms by default), so a region
 * shorter than that gets the average power of the interval it falls in: an
 * attribution of what the whole machine (the domain) drew meanwhile, not a
 * reading of its own. The profile says so (stats.power.regions.method) and
 * keeps each execution's duration beside its energy.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "regions.h"

struct span {
	long long run;
	double ts, dur; /* ns since the collection began */
};

struct region {
	const char *name;
	struct span *s;
	size_t n;
};

struct interval {
	long long run;
	double ts, dur, w;
};

static double num_at(json_t *cols, const char *col, size_t i)
{
	json_t *v = json_array_get(json_object_get(cols, col), i);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static int by_run_ts(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	if (x->run != y->run)
		return x->run < y->run ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Each region's executions: the rows of its resource with the most rows (every
   counter of a region has a row per execution; one of them is enough). */
static int region_spans(const struct sonde_profile *spans, struct region **out, size_t *nout)
{
	size_t i, j, n = sonde_profile__resource_count(spans), nr = 0;
	struct region *r = NULL;

	for (i = 0; i < n; i++) {
		json_t *fixed, *cols;
		const char *name, *dispatch;
		size_t rows;

		if (sonde_profile__resource_at(spans, i, NULL, &fixed, &cols))
			goto oom;
		dispatch = json_string_value(json_object_get(fixed, "dispatch"));
		name = json_string_value(json_object_get(fixed, "region"));
		if (!dispatch || strcmp(dispatch, "region") || !name)
			continue;
		rows = sonde_profile__column_len(cols, "timestamp");
		for (j = 0; j < nr && strcmp(r[j].name, name); j++)
			;
		if (j < nr && r[j].n >= rows)
			continue;
		if (j == nr) {
			struct region *g = realloc(r, (nr + 1) * sizeof(*r));

			if (!g)
				goto oom;
			r = g;
			r[nr++] = (struct region){ name, NULL, 0 };
		}
		free(r[j].s);
		r[j].s = calloc(rows ? rows : 1, sizeof(struct span));
		r[j].n = 0;
		if (!r[j].s)
			goto oom;
		for (size_t k = 0; k < rows; k++) {
			struct span sp = { (long long)num_at(cols, "order", k),
					   num_at(cols, "timestamp", k),
					   num_at(cols, "duration", k) };

			if (!isnan(sp.ts) && !isnan(sp.dur))
				r[j].s[r[j].n++] = sp;
		}
	}
	*out = r;
	*nout = nr;
	return 0;
oom:
	for (j = 0; j < nr; j++)
		free(r[j].s);
	free(r);
	return -ENOMEM;
}

/* The energy (J) of [a, a + d) of run `run`, from intervals sorted by (run, ts);
   NAN when no interval covers any of it. */
static double energy_of(const struct interval *iv, size_t n, long long run, double a, double d)
{
	size_t lo = 0, hi = n, i;
	double e = 0, covered = 0, b = a + d;

	while (lo < hi) { /* the first interval of the run that ends after a */
		size_t mid = lo + (hi - lo) / 2;

		if (iv[mid].run < run || (iv[mid].run == run && iv[mid].ts + iv[mid].dur <= a))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < n && iv[i].run == run && iv[i].ts < b; i++) {
		double s = iv[i].ts > a ? iv[i].ts : a;
		double t = iv[i].ts + iv[i].dur < b ? iv[i].ts + iv[i].dur : b;

		if (t > s) {
			e += iv[i].w * (t - s) / 1e9;
			covered += t - s;
		}
	}
	if (covered <= 0)
		return d <= 0 && i > lo ? 0 : NAN;
	return e * (d / covered);
}

long power_regions__attribute(struct sonde_profile *power, const struct sonde_profile *spans)
{
	size_t i, k, n = sonde_profile__resource_count(power), nr = 0;
	struct region *r = NULL;
	long done = 0;
	int rc = region_spans(spans, &r, &nr);

	if (rc)
		return rc;
	for (i = 0; i < n && nr && rc == 0; i++) {
		json_t *fixed, *cols;
		const char *uid, *sub, *source;
		struct interval *iv;
		size_t m, rows;

		if ((rc = sonde_profile__resource_at(power, i, NULL, &fixed, &cols)))
			break;
		sub = json_string_value(json_object_get(fixed, "subtype"));
		uid = json_string_value(json_object_get(fixed, "uid"));
		source = json_string_value(json_object_get(fixed, "source"));
		if (!sub || strcmp(sub, "watts") || !uid)
			continue;
		rows = sonde_profile__column_len(cols, "amount");
		iv = calloc(rows ? rows : 1, sizeof(*iv));
		if (!iv) {
			rc = -ENOMEM;
			break;
		}
		for (m = 0, k = 0; k < rows; k++) {
			struct interval x = { (long long)num_at(cols, "order", k),
					      num_at(cols, "timestamp", k),
					      num_at(cols, "duration", k),
					      num_at(cols, "amount", k) };

			if (!isnan(x.ts) && !isnan(x.dur) && !isnan(x.w))
				iv[m++] = x;
		}
		qsort(iv, m, sizeof(*iv), by_run_ts);
		/* the uid stays a string of the profile's: copied before resources are added */
		char *dom = strdup(uid), *src = source ? strdup(source) : NULL;

		for (k = 0; dom && k < nr && rc == 0; k++) {
			static const char *const sub_of[2] = { "energy", "average" };
			static const char *const unit_of[2] = { "J", "W" };
			long res[2];
			int q;

			for (q = 0; q < 2; q++) {
				json_t *x =
					json_pack("{s:s, s:s, s:s}", "unit", unit_of[q], "region",
						  r[k].name, "source", src ? src : "");

				res[q] = x ? sonde_profile__resource(power, dom, "power", sub_of[q],
								     x)
					   : -ENOMEM;
				json_decref(x);
				if (res[q] < 0)
					rc = (int)res[q];
			}
			for (size_t e = 0; e < r[k].n && rc == 0; e++) {
				const struct span *sp = &r[k].s[e];
				double j = energy_of(iv, m, sp->run, sp->ts, sp->dur);
				double w = sp->dur > 0 ? j / (sp->dur / 1e9) : NAN;

				for (q = 0; q < 2 && rc == 0; q++) {
					double v = q ? w : j;

					rc = sonde_profile__append(power, res[q], "amount",
								   isnan(v) ? json_null()
									    : json_real(v)) |
					     sonde_profile__append(power, res[q], "order",
								   json_integer(sp->run)) |
					     sonde_profile__append(
						     power, res[q], "timestamp",
						     json_integer((json_int_t)sp->ts)) |
					     sonde_profile__append(
						     power, res[q], "duration",
						     json_integer((json_int_t)sp->dur));
				}
				done += !isnan(j);
			}
		}
		if (!dom)
			rc = -ENOMEM;
		free(dom);
		free(src);
		free(iv);
	}
	for (k = 0; k < nr; k++)
		free(r[k].s);
	free(r);
	return rc ? (rc < 0 ? rc : -ENOMEM) : done;
}

int power_regions__join(struct sonde_profile *power, const struct sonde_profile *counters)
{
	long n = power_regions__attribute(power, counters);
	json_t *pw = json_object_get(sonde_profile__stats(power), "power");

	if (n <= 0)
		return (int)n;
	return sonde_profile__set(
		pw, "regions",
		json_pack("{s:s, s:I, s:s}", "from", "counters", "executions", (json_int_t)n,
			  "method",
			  "each execution's share of the intervals it overlaps, at their average "
			  "power: a region shorter than the interval gets the interval's average"));
}
