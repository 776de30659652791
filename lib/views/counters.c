/*
 * counters.c - the counters view, laid out like perf stat: a value, its
 * unit and the counter's name per line, "<not supported>" / "<not counted>"
 * where nothing was measured (never 0), the running fraction of multiplexed
 * counters, "± x%" over several runs (as perf stat: the standard deviation
 * of the mean over the mean); then the time series of -I and the
 * regions, one line per region and counter (mean per execution).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "views.h"

struct row {
	const char *name, *dispatch, *region, *unit, *why, *type;
	json_int_t cpu;
	json_t *amount, *ts, *dur, *frac;
	size_t res;
};

static void fmt_value(double v, const char *type, char *buf, size_t len)
{
	/* a count is whole, as perf stat prints it, also where it is a mean of
	   runs or scaled for multiplexing (98.333 page faults print as 98) */
	if (!strcmp(type, "metric") || fabs(v) >= 1e15) {
		snprintf(buf, len, fabs(v) >= 1e6 ? "%.4g" : "%.3f", v);
		return;
	}
	{
		char digits[32], *o = buf;
		long long x = llround(v);
		int n, i;

		n = snprintf(digits, sizeof(digits), "%lld", x < 0 ? -x : x);
		if (x < 0 && len > 1) {
			*o++ = '-';
			len--;
		}
		for (i = 0; i < n && len > 2; i++) {
			*o++ = digits[i];
			len--;
			if ((n - i - 1) % 3 == 0 && i + 1 < n) {
				*o++ = ',';
				len--;
			}
		}
		*o = '\0';
	}
}

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The rows of p's resources into *out; their number, or (size_t)-1 out of memory. */
static size_t load_rows(const struct sonde_profile *p, struct row **out)
{
	size_t n = sonde_profile__resource_count(p), i;
	struct row *r = calloc(n + 1, sizeof(*r));

	for (i = 0; r && i < n; i++) {
		json_t *fixed, *cols, *cpu;

		if (sonde_profile__resource_at(p, i, NULL, &fixed, &cols)) {
			free(r); /* a row left out would read as a counter not counted */
			r = NULL;
			break;
		}
		r[i].name = sget(fixed, "uid");
		r[i].type = sget(fixed, "type");
		r[i].dispatch = sget(fixed, "dispatch");
		r[i].region = sget(fixed, "region");
		r[i].unit = sget(fixed, "unit");
		r[i].why = sget(fixed, "why");
		cpu = json_object_get(fixed, "cpu");
		r[i].cpu = json_is_integer(cpu) ? json_integer_value(cpu) : -1;
		r[i].amount = json_object_get(cols, "amount");
		r[i].ts = json_object_get(cols, "timestamp");
		r[i].dur = json_object_get(cols, "duration");
		r[i].frac = json_object_get(cols, "running_fraction");
		r[i].res = i;
		if (!r[i].name || !r[i].type || !r[i].dispatch)
			r[i].name = NULL;
	}
	*out = r;
	return r ? n : (size_t)-1;
}

/* One line: the values of a row at positions [from, to) of its columns. */
static int line(struct sonde_strbuf *out, const struct row *r, size_t from, size_t to,
		const char *prefix, bool show_spread)
{
	double sum = 0, sq = 0, frac = 1;
	size_t k, n = 0;
	char v[64], note[128] = "";
	const char *unit = r->unit && *r->unit ? r->unit : "";

	for (k = from; k < to; k++) {
		json_t *a = json_array_get(r->amount, k), *f = json_array_get(r->frac, k);

		if (json_is_number(f) && json_number_value(f) < frac)
			frac = json_number_value(f);
		if (!json_is_number(a))
			continue;
		sum += json_number_value(a);
		sq += json_number_value(a) * json_number_value(a);
		n++;
	}
	if (!n) {
		return sonde_strbuf__addf(out, "%s%18s %-6s %-24s %s\n", prefix,
					  r->why ? "<not supported>" : "<not counted>", "", r->name,
					  r->why ? r->why : "");
	}
	if (!strcmp(unit, "ns") && strcmp(r->type, "metric")) {
		/* times read better in milliseconds, as perf prints them */
		snprintf(v, sizeof(v), "%.2f", sum / (double)n / 1e6);
		unit = "msec";
	} else {
		fmt_value(sum / (double)n, r->type, v, sizeof(v));
	}
	if (frac < 1)
		snprintf(note, sizeof(note), "(%.2f%% running, scaled)", 100 * frac);
	if (show_spread && n > 1) {
		double mean = sum / (double)n,
		       var = (sq - (double)n * mean * mean) / (double)(n - 1);

		/* perf stat's figure: the standard deviation of the mean (s / sqrt(n)),
		   relative to the mean */
		if (mean != 0)
			snprintf(note + strlen(note), sizeof(note) - strlen(note), "%s± %.2f%%",
				 *note ? " " : "",
				 100 * sqrt((var > 0 ? var : 0) / (double)n) / fabs(mean));
	}
	return sonde_strbuf__addf(out, "%s%*s %*s %-24s %s\n", prefix, SONDE_COLS(v, 18),
				  SONDE_COLS(unit, -6), r->name, note);
}

static int by_ts(const void *a, const void *b)
{
	const double *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1];
}

int sonde_view__counters(const struct sonde_profile *p, enum sonde_view_format fmt, bool notes,
			 struct sonde_strbuf *out)
{
	json_t *hdr = sonde_profile__header(p), *st = sonde_profile__stats(p);
	json_t *cnt = json_object_get(st, "counters"), *args = json_object_get(hdr, "args");
	json_int_t runs = json_integer_value(json_object_get(st, "runs"));
	struct row *r;
	size_t n, i, k;
	bool any_interval = false, any_region = false;
	char prefix[64];
	int err = 0;

	if (strcmp(sonde_profile__type(p), "counters") || !cnt)
		return -EINVAL;
	if (fmt != SONDE_VIEW_TEXT)
		return sonde_view__table(p, fmt, out);
	n = load_rows(p, &r);
	if (n == (size_t)-1)
		return -ENOMEM;
	err |= sonde_strbuf__addf(out, "\n Counter stats for '");
	for (i = 0; i < json_array_size(args); i++)
		err |= sonde_strbuf__addf(out, "%s%s", i ? " " : "",
					  json_string_value(json_array_get(args, i)));
	if (!json_array_size(args))
		err |= sonde_strbuf__addf(out, "%s", sget(hdr, "cmd") ? sget(hdr, "cmd") : "?");
	err |= sonde_strbuf__addf(out, "'%s (%lld run%s):\n\n",
				  !strcmp(sget(cnt, "mode") ? sget(cnt, "mode") : "", "system-wide")
					  ? " system-wide"
					  : "",
				  (long long)runs, runs == 1 ? "" : "s");
	for (i = 0; i < n; i++) {
		if (!r[i].name)
			continue;
		any_interval |= !strcmp(r[i].dispatch, "interval");
		any_region |= !strcmp(r[i].dispatch, "region");
		if (strcmp(r[i].dispatch, "run"))
			continue;
		prefix[0] = 0;
		if (r[i].cpu >= 0)
			snprintf(prefix, sizeof(prefix), "CPU%-4lld", (long long)r[i].cpu);
		err |= line(out, &r[i], 0, json_array_size(r[i].amount), prefix, true);
	}
	if (any_interval) {
		/* (end time, row, index) triples in time order */
		size_t m = 0, cap = 0;
		double *t = NULL;

		for (i = 0; i < n; i++) {
			if (!r[i].name || strcmp(r[i].dispatch, "interval"))
				continue;
			for (k = 0; k < json_array_size(r[i].ts); k++) {
				if (m == cap) {
					double *g = realloc(t, (cap = cap ? 2 * cap : 256) * 3 *
								       sizeof(double));

					if (!g)
						break;
					t = g;
				}
				/* the interval's end, as perf stat -I prints it: when it was read
				 */
				t[3 * m] = json_number_value(json_array_get(r[i].ts, k)) +
					   json_number_value(json_array_get(r[i].dur, k));
				t[3 * m + 1] = (double)i;
				t[3 * m + 2] = (double)k;
				m++;
			}
		}
		if (m) /* qsort(NULL, 0) is undefined */
			qsort(t, m, 3 * sizeof(double), by_ts);
		err |= sonde_strbuf__addf(out, "%12s\n", "time (s)");
		for (k = 0; k < m; k++) {
			const struct row *x = &r[(size_t)t[3 * k + 1]];
			size_t at = (size_t)t[3 * k + 2];

			snprintf(prefix, sizeof(prefix), "%12.3f %s", t[3 * k] / 1e9,
				 x->cpu >= 0 ? "CPU" : "");
			if (x->cpu >= 0)
				snprintf(prefix + strlen(prefix), sizeof(prefix) - strlen(prefix),
					 "%-4lld", (long long)x->cpu);
			err |= line(out, x, at, at + 1, prefix, false);
		}
		free(t);
	}
	if (any_region) {
		const char *last = NULL;

		err |= sonde_strbuf__addf(out, "\n regions (mean per execution):\n\n");
		for (i = 0; i < n; i++) {
			if (!r[i].name || strcmp(r[i].dispatch, "region"))
				continue;
			if (!last || strcmp(last, r[i].region ? r[i].region : "")) {
				last = r[i].region ? r[i].region : "";
				err |= sonde_strbuf__addf(out, "  %s: %zu execution%s\n", last,
							  json_array_size(r[i].amount),
							  json_array_size(r[i].amount) == 1 ? ""
											    : "s");
			}
			err |= line(out, &r[i], 0, json_array_size(r[i].amount), "  ", false);
		}
	}
	err |= sonde_strbuf__addf(out, "\n");
	for (i = 0; notes && i < json_array_size(json_object_get(st, "notes")); i++)
		err |= sonde_strbuf__addf(
			out, " note: %s\n",
			json_string_value(json_array_get(json_object_get(st, "notes"), i)));
	if (json_integer_value(json_object_get(st, "dropped_events")))
		err |= sonde_strbuf__addf(
			out, " dropped: %lld region records\n",
			(long long)json_integer_value(json_object_get(st, "dropped_events")));
	free(r);
	return err ? -ENOMEM : 0;
}
