/*
 * format.h - numbers for people: durations, sizes and counts with units.
 */
#ifndef SONDE_FORMAT_H
#define SONDE_FORMAT_H

#include <stddef.h>

/* "812 ns", "12.3 µs", "4.56 ms", "1.234 s". NaN prints "-". Returns buf. */
char *sonde_format__duration(double ns, char *buf, size_t len);
/*
 * A duration in one unit ("ns", "us", "ms", "s"): "4560.123 µs". Another
 * unit, or NULL: as sonde_format__duration. Returns buf.
 */
char *sonde_format__duration_in(double ns, const char *unit, char *buf, size_t len);
/* "512 B", "1.5 KiB", "12.0 MiB", ... Returns buf. */
char *sonde_format__bytes(double bytes, char *buf, size_t len);
/* A value in unit ("ns", "B", or anything else: a plain number). Returns buf. */
char *sonde_format__value(double v, const char *unit, char *buf, size_t len);
/*
 * v with `decimals` (0 to 9) digits after the point, then suffix (may be
 * NULL): what snprintf "%.*f%s" writes, byte for byte, without its cost where
 * the digits are certain. Returns buf.
 */
char *sonde_format__fixed(double v, int decimals, const char *suffix, char *buf, size_t len);

/*
 * A duration as the user writes it: a number with a unit suffix (ns, us, µs,
 * ms, s, m, min, h), or a plain number, taken in units of plain_s seconds
 * (0: seconds). Negative values, "inf" and "nan" are refused. 0 or -EINVAL.
 */
int sonde_format__parse_duration(const char *s, double plain_s, double *seconds);

#endif
