/*
 * format-fast.h - the part of sonde_format__fixed() that needs no printf
 * (internal to libsonde; its tests check that it is the usual path).
 */
#ifndef SONDE_FORMAT_FAST_H
#define SONDE_FORMAT_FAST_H

#include <stdbool.h>
#include <stddef.h>

/* "%.*f%s" of v into buf, or false (buf unspecified) where printf must decide. */
bool sonde_format__fixed_fast(double v, int decimals, const char *suffix, char *buf, size_t len);

#endif
