/*
 * format.c - durations and sizes with human units, three significant digits or so.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include "format-fast.h"

/*
 * printf's "%.*f" rounds the exact value of the double to nearest, ties to
 * even. v * 10^d is exactly p + e (p the rounded product, e = fma's error:
 * 10^d is exact for d <= 22), so the rounding of the exact product is known
 * unless it is within a hair of a tie, which printf then decides.
 */
bool sonde_format__fixed_fast(double v, int decimals, const char *suffix, char *buf, size_t len)
{
	static const double pow10[] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9 };
	char digits[32], *q = digits + sizeof(digits);
	double a = fabs(v), p, e, ip, fr;
	size_t n = 0, slen = suffix ? strlen(suffix) : 0, need;
	uint64_t r;
	int d = decimals;

	if (d < 0 || d > 9 || !(a < 0x1p50 / pow10[d])) /* also NaN and infinities */
		return false;
	p = a * pow10[d];
	e = fma(a, pow10[d], -p);
	ip = floor(p);
	fr = (p - ip) + e; /* p - ip is exact */
	if (fr < 0) {
		ip -= 1;
		fr += 1;
	} else if (fr >= 1) {
		ip += 1;
		fr -= 1;
	}
	if (fabs(fr - 0.5) < 1e-6)
		return false;
	r = (uint64_t)ip + (fr > 0.5);
	do { /* at least d + 1 digits: "0.05" */
		*--q = (char)('0' + r % 10);
		r /= 10;
		n++;
	} while (r || n <= (size_t)d);
	need = (signbit(v) ? 1 : 0) + n + (d > 0) + slen + 1;
	if (need > len)
		return false;
	if (signbit(v))
		*buf++ = '-';
	memcpy(buf, q, n - (size_t)d);
	buf += n - (size_t)d;
	if (d) {
		*buf++ = '.';
		memcpy(buf, q + n - (size_t)d, (size_t)d);
		buf += d;
	}
	memcpy(buf, suffix ? suffix : "", slen + 1);
	return true;
}

char *sonde_format__fixed(double v, int decimals, const char *suffix, char *buf, size_t len)
{
	if (!sonde_format__fixed_fast(v, decimals, suffix, buf, len))
		snprintf(buf, len, "%.*f%s", decimals, v, suffix ? suffix : "");
	return buf;
}

char *sonde_format__duration(double ns, char *buf, size_t len)
{
	static const struct {
		double scale;
		const char *unit;
	} steps[] = { { 1e9, " s" }, { 1e6, " ms" }, { 1e3, " µs" } };
	size_t i;

	if (isnan(ns)) {
		snprintf(buf, len, "-");
		return buf;
	}
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (fabs(ns) >= steps[i].scale) {
			double v = ns / steps[i].scale;

			return sonde_format__fixed(v,
						   fabs(v) >= 100  ? 1
						   : fabs(v) >= 10 ? 2
								   : 3,
						   steps[i].unit, buf, len);
		}
	}
	return sonde_format__fixed(ns, 0, " ns", buf, len);
}

char *sonde_format__bytes(double bytes, char *buf, size_t len)
{
	static const char *const units[] = { " B", " KiB", " MiB", " GiB", " TiB" };
	size_t i = 0;

	if (isnan(bytes)) {
		snprintf(buf, len, "-");
		return buf;
	}
	while (fabs(bytes) >= 1024 && i + 1 < sizeof(units) / sizeof(units[0])) {
		bytes /= 1024;
		i++;
	}
	return sonde_format__fixed(bytes, i ? 1 : 0, units[i], buf, len);
}

/* Units of time and size that values come in (Perun's and external collectors'). */
static const struct {
	const char *unit;
	double scale; /* to ns, or to bytes */
	bool time;
} known_units[] = {
	{ "ns", 1, true },	{ "us", 1e3, true },	   { "µs", 1e3, true },
	{ "ms", 1e6, true },	{ "s", 1e9, true },	   { "B", 1, false },
	{ "KiB", 1024, false }, { "MiB", 1048576, false }, { "GiB", 1073741824, false },
};

char *sonde_format__value(double v, const char *unit, char *buf, size_t len)
{
	size_t i;

	for (i = 0; unit && i < sizeof(known_units) / sizeof(known_units[0]); i++)
		if (!strcmp(unit, known_units[i].unit))
			return known_units[i].time
				       ? sonde_format__duration(v * known_units[i].scale, buf, len)
				       : sonde_format__bytes(v * known_units[i].scale, buf, len);
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (v == floor(v) && fabs(v) < 1e15)
		sonde_format__fixed(v, 0, NULL, buf, len);
	else if (fabs(v) >= 1)
		sonde_format__fixed(v, fabs(v) >= 100 ? 1 : 2, NULL, buf, len);
	else
		snprintf(buf, len, "%.3g", v); /* three significant digits, never 0.00 */
	return buf;
}

char *sonde_format__duration_in(double ns, const char *unit, char *buf, size_t len)
{
	static const struct {
		const char *name, *shown;
		double scale;
		int decimals;
	} units[] = { { "ns", " ns", 1, 0 },
		      { "us", " µs", 1e3, 3 },
		      { "ms", " ms", 1e6, 3 },
		      { "s", " s", 1e9, 6 } };
	size_t i;

	for (i = 0; unit && i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(unit, units[i].name)) {
			if (isnan(ns))
				snprintf(buf, len, "-");
			else
				sonde_format__fixed(ns / units[i].scale, units[i].decimals,
						    units[i].shown, buf, len);
			return buf;
		}
	return sonde_format__duration(ns, buf, len);
}

int sonde_format__parse_duration(const char *s, double plain_s, double *seconds)
{
	static const struct {
		const char *suffix;
		double s;
	} units[] = { { "ns", 1e-9 }, { "us", 1e-6 }, { "µs", 1e-6 }, { "ms", 1e-3 },
		      { "s", 1 },     { "m", 60 },    { "min", 60 },  { "h", 3600 } };
	char *end;
	double v;
	size_t i;

	if (!s || ((*s < '0' || *s > '9') && *s != '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -EINVAL;
	if (!*end) {
		*seconds = v * (plain_s > 0 ? plain_s : 1);
		return 0;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].suffix)) {
			*seconds = v * units[i].s;
			return 0;
		}
	return -EINVAL;
}
