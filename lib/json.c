/*
 * json.c - JSON out, compact or indented, as jansson writes it (see json.h).
 *
 * jansson writes a real with snprintf("%.15g") (then ".0" when that looks
 * like an integer, and an exponent without '+' or leading zeros), 200-300 ns
 * a number. Where "%.15g" writes no exponent (10^-4 <= |v| < 10^15), its 15
 * significant digits are v * 10^(14 - e) rounded to an integer, e being v's
 * decade. The powers of ten up to 10^18 are exact doubles, so that product is
 * exactly m + err (m the rounded product, err what fma says it lost): unless
 * its fraction is within 10^-3 of a half, rounding it gives printf's digits,
 * written here in a few nanoseconds. Near-ties and exponents go through
 * snprintf.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sonde/strbuf.h>
#include "json.h"

/*
 * Every allocation jansson makes goes through here, and each one that fails is
 * counted: a document built with json_object_set_new() and friends, whose
 * failures are easy to leave unchecked, is written only when none failed while
 * it was built (sonde_profile__write), so that a member lost to an exhausted
 * heap never reads as a member that was not measured.
 */
static _Atomic unsigned long alloc_failures;

static void *json_alloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		atomic_fetch_add_explicit(&alloc_failures, 1, memory_order_relaxed);
	return p;
}

__attribute__((constructor)) static void json_alloc_hooks(void)
{
	json_set_alloc_funcs(json_alloc, free);
}

unsigned long sonde_json__alloc_failures(void)
{
	return atomic_load_explicit(&alloc_failures, memory_order_relaxed);
}

/* 10^-4 .. 10^14: where "%.15g" writes a number without an exponent */
static const double decades[] = { 1e-4, 1e-3, 1e-2, 1e-1, 1e0,	1e1,  1e2,  1e3,  1e4, 1e5,
				  1e6,	1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14 };

static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
			       "25262728293031323334353637383940414243444546474849"
			       "50515253545556575859606162636465666768697071727374"
			       "75767778798081828384858687888990919293949596979899";

/* The decimal digits of u, written backwards from end, two a step; returns the first. */
static char *digits(char *end, uint64_t u)
{
	uint32_t w;

	while (u > UINT32_MAX) {
		end -= 2;
		memcpy(end, pairs + 2 * (u % 100), 2);
		u /= 100;
	}
	/* the rest in 32 bits, where dividing by 100 is a cheaper multiply */
	for (w = (uint32_t)u; w >= 100; w /= 100) {
		end -= 2;
		memcpy(end, pairs + 2 * (w % 100), 2);
	}
	if (w >= 10) {
		end -= 2;
		memcpy(end, pairs + 2 * w, 2);
	} else {
		*--end = (char)('0' + w);
	}
	return end;
}

/* How many decimal digits u has (1 for 0). */
static unsigned ndigits(uint64_t u)
{
	static const uint64_t pow10[20] = { 1ull,
					    10ull,
					    100ull,
					    1000ull,
					    10000ull,
					    100000ull,
					    1000000ull,
					    10000000ull,
					    100000000ull,
					    1000000000ull,
					    10000000000ull,
					    100000000000ull,
					    1000000000000ull,
					    10000000000000ull,
					    100000000000000ull,
					    1000000000000000ull,
					    10000000000000000ull,
					    100000000000000000ull,
					    1000000000000000000ull,
					    10000000000000000000ull };
	/* u | 1 has as many digits (10^k - 1 is odd), and a bit for clz; its bits
	   times 1233/4096 (just above log10 2) is its digits less one, or one more */
	uint64_t v = u | 1;
	unsigned t = ((unsigned)(64 - __builtin_clzll(v)) * 1233) >> 12;

	return t + 1 - (v < pow10[t]);
}

/*
 * i written at o (at most 20 bytes); returns where it ends. The digits go in
 * their place, not through a buffer: a copy of a few bytes was a call into
 * libc's memcpy, a sixth of writing a trace profile's timeline.
 */
static char *put_integer(char *o, json_int_t i)
{
	uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
	char *end;

	if (i < 0)
		*o++ = '-';
	end = o + ndigits(u);
	digits(end, u);
	return end;
}

static int add_integer(struct sonde_strbuf *sb, json_int_t i)
{
	char buf[24];

	return sonde_strbuf__add(sb, buf, (size_t)(put_integer(buf, i) - buf));
}

/* "%.15g" as jansson finishes it; the slow, general way. */
static int add_real_printf(struct sonde_strbuf *sb, double v)
{
	char buf[40], *e;
	int n = snprintf(buf, sizeof(buf) - 3, "%.15g", v);

	if (n < 0 || n >= (int)sizeof(buf) - 3)
		return -ENOMEM;
	if (!strchr(buf, '.') && !strchr(buf, 'e')) {
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	e = strchr(buf, 'e');
	if (e) {
		char *from = e + 1, *to = e + 1;

		if (*from == '-')
			from++, to++;
		else if (*from == '+')
			from++;
		while (*from == '0' && from[1])
			from++;
		memmove(to, from, strlen(from) + 1);
		n = (int)strlen(buf);
	}
	return sonde_strbuf__add(sb, buf, (size_t)n);
}

/* "00".."99" */

/* u < 10^15 as 15 digits at d, zeros in front: two halves side by side, two digits a step */
static void put15(char *d, uint64_t u)
{
	uint32_t hi = (uint32_t)(u / 100000000), lo = (uint32_t)(u % 100000000);
	int i;

	for (i = 0; i < 4; i++) {
		memcpy(d + 13 - 2 * i, pairs + 2 * (lo % 100), 2);
		lo /= 100;
		if (i < 3) {
			memcpy(d + 5 - 2 * i, pairs + 2 * (hi % 100), 2);
			hi /= 100;
		}
	}
	d[0] = (char)('0' + hi);
}

size_t sonde_json__real(double v, char *buf)
{
	static const double scale[] = { 1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8, 1e9,
					1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18 };
	char d[16], *p = buf;
	double a = fabs(v), m, err, f;
	uint64_t bits, u;
	int e, i, keep;

	if (!(a >= 1e-4 && a < 1e15))
		return 0;
	/* the decade: from the binary exponent (floor(e2 log10 2), or one less), then the table */
	memcpy(&bits, &a, sizeof(bits));
	e = (((int)(bits >> 52) - 1023) * 1233) >> 12;
	if (e < -4)
		e = -4;
	while (e < 14 && a >= decades[e + 5])
		e++;
	/* a * 10^(14 - e) exactly, as m + err (both products of exact doubles) */
	m = a * scale[14 - e];
	err = fma(a, scale[14 - e], -m);
	u = (uint64_t)m;
	f = (m - (double)u) + err; /* the exact product less u, in (-0.01, 1.01) */
	if (fabs(f - 0.5) < 1e-3)
		return 0; /* too near a tie to trust */
	u += f > 0.5;
	if (u >= 1000000000000000ull) { /* rounded up to the next decade */
		u /= 10;
		if (++e > 14)
			return 0;
	}
	put15(d, u);
	for (keep = 15; keep > 1 && d[keep - 1] == '0'; keep--)
		;
	if (v < 0)
		*p++ = '-';
	if (e >= 0) {
		memcpy(p, d, (size_t)e + 1);
		p += e + 1;
		*p++ = '.';
		if (keep > e + 1) {
			memcpy(p, d + e + 1, (size_t)(keep - e - 1));
			p += keep - e - 1;
		} else {
			*p++ = '0'; /* jansson's ".0" */
		}
	} else {
		*p++ = '0';
		*p++ = '.';
		for (i = 0; i < -e - 1; i++)
			*p++ = '0';
		memcpy(p, d, (size_t)keep);
		p += keep;
	}
	return (size_t)(p - buf);
}

static int add_real(struct sonde_strbuf *sb, double v)
{
	char buf[48];
	size_t n = sonde_json__real(v, buf);

	return n ? sonde_strbuf__add(sb, buf, n) : add_real_printf(sb, v);
}

/* A string as jansson escapes it (UTF-8 kept, '/' not escaped, \\u00XX in capitals). */
static int add_string(struct sonde_strbuf *sb, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	int err = sonde_strbuf__addch(sb, '"');
	size_t i, from = 0;

	for (i = 0; i < len && !err; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7] = { '\\', 0 };
		size_t n = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		switch (c) {
		case '"':
		case '\\':
			esc[1] = (char)c;
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		}
		err = sonde_strbuf__add(sb, s + from, i - from);
		err |= sonde_strbuf__add(sb, esc, n);
		from = i + 1;
	}
	err |= sonde_strbuf__add(sb, s + from, len - from);
	return err | sonde_strbuf__addch(sb, '"');
}

static int add_indent(struct sonde_strbuf *sb, size_t spaces)
{
	int err = sonde_strbuf__grow(sb, spaces + 1);

	if (err)
		return err;
	sb->buf[sb->len++] = '\n';
	memset(sb->buf + sb->len, ' ', spaces);
	sb->len += spaces;
	sb->buf[sb->len] = '\0';
	return 0;
}

/*
 * A compact array: numbers are written straight into room reserved in sb (a
 * profile's columns and timeline are millions of them); anything else as dump
 * writes it.
 */
static int dump(struct sonde_strbuf *sb, const json_t *v, size_t indent, size_t depth, bool flat);

static int compact_array(struct sonde_strbuf *sb, const json_t *v)
{
	size_t i, n = json_array_size(v);
	int err = sonde_strbuf__addch(sb, '[');

	for (i = 0; i < n && !err; i++) {
		const json_t *e = json_array_get(v, i);
		char *o;

		if (json_is_integer(e) || json_is_real(e)) {
			if (sb->alloc - sb->len < 64) { /* ',' and a number: <= 50 bytes */
				err = sonde_strbuf__grow(sb, 24 * (n - i) + 64);
				if (err)
					break;
			}
			o = sb->buf + sb->len;
			if (i)
				*o++ = ',';
			if (json_is_integer(e)) {
				o = put_integer(o, json_integer_value(e));
			} else {
				size_t k = sonde_json__real(json_real_value(e), o);

				if (!k) { /* printf's way */
					sb->len = (size_t)(o - sb->buf);
					sb->buf[sb->len] = '\0';
					err = add_real_printf(sb, json_real_value(e));
					continue;
				}
				o += k;
			}
			sb->len = (size_t)(o - sb->buf);
			continue;
		}
		sb->buf[sb->len] = '\0';
		if (i)
			err = sonde_strbuf__addch(sb, ',');
		err |= dump(sb, e, 0, 0, false);
	}
	if (err)
		return err;
	sb->buf[sb->len] = '\0';
	return sonde_strbuf__addch(sb, ']');
}

static bool scalars(const json_t *v)
{
	json_t *e;
	size_t i;

	json_array_foreach(v, i, e)
	{
		if (json_is_object(e) || json_is_array(e))
			return false;
	}
	return true;
}

/*
 * The separators of an indented document: what comes before an object's
 * member (its key and ": " too) or an array's element, and the close.
 */
static int member(struct sonde_strbuf *sb, const char *key, size_t indent, size_t depth, bool first)
{
	int err = first ? 0 : sonde_strbuf__addch(sb, ',');

	if (indent)
		err |= add_indent(sb, indent * (depth + 1));
	err |= add_string(sb, key, strlen(key));
	return err | (indent ? sonde_strbuf__add(sb, ": ", 2) : sonde_strbuf__addch(sb, ':'));
}

static int element(struct sonde_strbuf *sb, size_t indent, size_t depth, size_t i)
{
	int err = i ? sonde_strbuf__addch(sb, ',') : 0;

	return err | (indent ? add_indent(sb, indent * (depth + 1)) : 0);
}

static int close_with(struct sonde_strbuf *sb, char c, bool any, size_t indent, size_t depth)
{
	int err = indent && any ? add_indent(sb, indent * depth) : 0;

	return err | sonde_strbuf__addch(sb, c);
}

/*
 * indent 0: compact; else JSON_INDENT(indent), at depth levels in, except,
 * with flat, that an array of scalars is written on one line.
 */
static int dump(struct sonde_strbuf *sb, const json_t *v, size_t indent, size_t depth, bool flat)
{
	const char *key;
	json_t *e;
	size_t i;
	int err = 0, first = 1;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		err = sonde_strbuf__addch(sb, '{');
		json_object_foreach((json_t *)v, key, e)
		{
			if (err)
				break;
			err |= member(sb, key, indent, depth, first);
			first = 0;
			err |= dump(sb, e, indent, depth + 1, flat);
		}
		return err | close_with(sb, '}', !first, indent, depth);
	case JSON_ARRAY:
		if (indent && flat && scalars(v))
			indent = 0;
		if (!indent)
			return compact_array(sb, v);
		err = sonde_strbuf__addch(sb, '[');
		json_array_foreach(v, i, e)
		{
			if (err)
				break;
			err |= element(sb, indent, depth, i);
			err |= dump(sb, e, indent, depth + 1, flat);
		}
		return err | close_with(sb, ']', json_array_size(v), indent, depth);
	case JSON_STRING:
		return add_string(sb, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return add_integer(sb, json_integer_value(v));
	case JSON_REAL:
		return add_real(sb, json_real_value(v));
	case JSON_TRUE:
		return sonde_strbuf__adds(sb, "true");
	case JSON_FALSE:
		return sonde_strbuf__adds(sb, "false");
	case JSON_NULL:
		return sonde_strbuf__adds(sb, "null");
	}
	return -EINVAL;
}

json_t *sonde_json__int(struct sonde_json_ints *k, json_int_t n)
{
	if (n < 0 || n >= SONDE_JSON_SMALL_INTS)
		return json_integer(n);
	if (!k->v[n] && !(k->v[n] = json_integer(n)))
		return NULL;
	return json_incref(k->v[n]);
}

void sonde_json__ints_release(struct sonde_json_ints *k)
{
	size_t i;

	for (i = 0; i < SONDE_JSON_SMALL_INTS; i++) {
		json_decref(k->v[i]);
		k->v[i] = NULL;
	}
}

int sonde_json__dump_compact(struct sonde_strbuf *sb, const json_t *v)
{
	return dump(sb, v, 0, 0, false) ? -ENOMEM : 0;
}

int sonde_json__dump_indented(struct sonde_strbuf *sb, const json_t *v, size_t indent, size_t depth)
{
	return dump(sb, v, indent, depth, false) ? -ENOMEM : 0;
}

int sonde_json__dump_layout(struct sonde_strbuf *sb, const json_t *v, size_t indent, size_t depth)
{
	return dump(sb, v, indent, depth, true) ? -ENOMEM : 0;
}

int sonde_json__dump_string(struct sonde_strbuf *sb, const char *s)
{
	return add_string(sb, s, strlen(s)) ? -ENOMEM : 0;
}

int sonde_json__put_string(struct sonde_strbuf *sb, const char *s, size_t len)
{
	return add_string(sb, s, len) ? -ENOMEM : 0;
}

int sonde_json__put_integer(struct sonde_strbuf *sb, json_int_t i)
{
	return add_integer(sb, i) ? -ENOMEM : 0;
}

int sonde_json__put_real(struct sonde_strbuf *sb, double v)
{
	return add_real(sb, v) ? -ENOMEM : 0;
}

int sonde_json__put_indent(struct sonde_strbuf *sb, size_t spaces)
{
	return add_indent(sb, spaces) ? -ENOMEM : 0;
}

int sonde_json__put_member(struct sonde_strbuf *sb, const char *key, size_t indent, size_t depth,
			   bool first)
{
	return member(sb, key, indent, depth, first) ? -ENOMEM : 0;
}

int sonde_json__put_row(struct sonde_strbuf *sb, const json_int_t *v, size_t n, size_t indent,
			size_t depth, size_t i)
{
	char *o;
	size_t k;

	if (element(sb, indent, depth, i) || sonde_strbuf__grow(sb, 2 + 21 * n))
		return -ENOMEM;
	o = sb->buf + sb->len;
	*o++ = '[';
	for (k = 0; k < n; k++) {
		if (k)
			*o++ = ',';
		o = put_integer(o, v[k]);
	}
	*o++ = ']';
	*o = '\0';
	sb->len = (size_t)(o - sb->buf);
	return 0;
}

int sonde_json__put_close(struct sonde_strbuf *sb, char c, size_t n, size_t indent, size_t depth)
{
	return close_with(sb, c, n != 0, indent, depth) ? -ENOMEM : 0;
}
