/*
 * json.c - compact JSON out, as jansson writes it (see json.h).
 *
 * jansson writes a real with snprintf("%.15g") (then ".0" when that looks
 * like an integer, and an exponent without '+' or leading zeros), about 300 ns
 * a number. Most reals in a profile are measurements with a few decimals:
 * when v is exactly the double nearest to r / 10^k for an integer r of at
 * most 15 digits, "%.15g" prints r with the point k digits from the right
 * (v is within half an ulp of that decimal, far inside the rounding interval
 * of its fifteenth digit), so that is written directly. Every other real
 * (17 significant digits, exponents) still goes through snprintf.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sonde/strbuf.h>
#include "json.h"

static const double pow10s[] = { 1e0,  1e1,  1e2,  1e3,	 1e4,  1e5,  1e6,  1e7,	 1e8,  1e9,
				 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19 };

/* The decimal digits of u, written backwards from end; returns the first. */
static char *digits(char *end, uint64_t u)
{
	do {
		*--end = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	return end;
}

static int add_integer(struct sonde_strbuf *sb, json_int_t i)
{
	char buf[24], *s = digits(buf + sizeof(buf), i < 0 ? 0 - (uint64_t)i : (uint64_t)i);

	if (i < 0)
		*--s = '-';
	return sonde_strbuf__add(sb, s, (size_t)(buf + sizeof(buf) - s));
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

static int add_real(struct sonde_strbuf *sb, double v)
{
	double a = fabs(v);
	size_t k;

	if (!(a >= 1e-4 && a < 1e15))
		return add_real_printf(sb, v);
	for (k = 0; k < sizeof(pow10s) / sizeof(pow10s[0]); k++) {
		double m = a * pow10s[k], r;
		char buf[48], *end = buf + sizeof(buf), *s;
		uint64_t u;
		size_t i;

		if (m >= 1e15)
			break;
		r = nearbyint(m);
		if (r == 0 || r / pow10s[k] != a)
			continue;
		u = (uint64_t)r;
		if (k == 0) {
			*--end = '0';
			*--end = '.';
			s = digits(end, u);
		} else {
			for (i = 0; i < k; i++, u /= 10)
				*--end = (char)('0' + u % 10);
			*--end = '.';
			s = digits(end, u); /* "0" when nothing is left */
		}
		if (v < 0)
			*--s = '-';
		return sonde_strbuf__add(sb, s, (size_t)(buf + sizeof(buf) - s));
	}
	return add_real_printf(sb, v);
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

/* indent 0: compact; else JSON_INDENT(indent), at depth levels in. */
static int dump(struct sonde_strbuf *sb, const json_t *v, size_t indent, size_t depth)
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
			if (!first)
				err |= sonde_strbuf__addch(sb, ',');
			first = 0;
			if (indent)
				err |= add_indent(sb, indent * (depth + 1));
			err |= add_string(sb, key, strlen(key));
			err |= indent ? sonde_strbuf__add(sb, ": ", 2)
				      : sonde_strbuf__addch(sb, ':');
			err |= dump(sb, e, indent, depth + 1);
		}
		if (indent && !first)
			err |= add_indent(sb, indent * depth);
		return err | sonde_strbuf__addch(sb, '}');
	case JSON_ARRAY:
		err = sonde_strbuf__addch(sb, '[');
		json_array_foreach(v, i, e)
		{
			if (err)
				break;
			if (i)
				err |= sonde_strbuf__addch(sb, ',');
			if (indent)
				err |= add_indent(sb, indent * (depth + 1));
			err |= dump(sb, e, indent, depth + 1);
		}
		if (indent && json_array_size(v))
			err |= add_indent(sb, indent * depth);
		return err | sonde_strbuf__addch(sb, ']');
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

int sonde_json__dump_compact(struct sonde_strbuf *sb, const json_t *v)
{
	return dump(sb, v, 0, 0) ? -ENOMEM : 0;
}

int sonde_json__dump_indented(struct sonde_strbuf *sb, const json_t *v, size_t indent, size_t depth)
{
	return dump(sb, v, indent, depth) ? -ENOMEM : 0;
}

int sonde_json__dump_string(struct sonde_strbuf *sb, const char *s)
{
	return add_string(sb, s, strlen(s)) ? -ENOMEM : 0;
}
