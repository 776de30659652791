/*
 * strbuf.c - growable strings. Invariants in strbuf.h: buf is never NULL and
 * always NUL-terminated; alloc == 0 means buf is the shared empty string.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/strbuf.h>
#include "grow.h"

char sonde_strbuf__empty[1];

void sonde_strbuf__init(struct sonde_strbuf *sb)
{
	sb->buf = sonde_strbuf__empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->err = 0;
}

int sonde_strbuf__grow(struct sonde_strbuf *sb, size_t extra)
{
	size_t need, cap;
	char *nb;

	if (sb->err)
		return sb->err; /* cut short already: nothing after the hole */
	if (extra > SIZE_MAX - sb->len - 1)
		return sb->err = -ENOMEM;
	need = sb->len + extra + 1;
	if (need <= sb->alloc)
		return 0;
	cap = sb->alloc ? sb->alloc : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	nb = realloc(sb->alloc ? sb->buf : NULL, cap);
	if (!nb)
		return sb->err = -ENOMEM;
	if (cap >= SONDE_HUGE_FROM)
		sonde_hint_huge(nb, cap);
	if (!sb->alloc)
		nb[0] = '\0';
	sb->buf = nb;
	sb->alloc = cap;
	return 0;
}

int sonde_strbuf__add(struct sonde_strbuf *sb, const void *data, size_t len)
{
	int err = sonde_strbuf__grow(sb, len);

	if (err)
		return err;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int sonde_strbuf__adds(struct sonde_strbuf *sb, const char *s)
{
	return sonde_strbuf__add(sb, s, strlen(s));
}

int sonde_strbuf__addch(struct sonde_strbuf *sb, char c)
{
	return sonde_strbuf__add(sb, &c, 1);
}

int sonde_strbuf__cols(const char *s, int w)
{
	int extra = 0;

	for (; s && *s; s++)
		extra += ((unsigned char)*s & 0xC0) == 0x80;
	return w < 0 ? w - extra : w + extra;
}

int sonde_strbuf__vaddf(struct sonde_strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n, err;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	err = sonde_strbuf__grow(sb, (size_t)n);
	if (err)
		return err;
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
	return 0;
}

int sonde_strbuf__addf(struct sonde_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = sonde_strbuf__vaddf(sb, fmt, ap);
	va_end(ap);
	return err;
}

void sonde_strbuf__setlen(struct sonde_strbuf *sb, size_t len)
{
	if (len > sb->len)
		return;
	sb->len = len;
	if (sb->alloc)
		sb->buf[len] = '\0';
}

void sonde_strbuf__reset(struct sonde_strbuf *sb)
{
	sonde_strbuf__setlen(sb, 0);
	sb->err = 0;
}

char *sonde_strbuf__detach(struct sonde_strbuf *sb, size_t *len)
{
	char *s;

	if (sb->err || (!sb->alloc && sonde_strbuf__grow(sb, 0)))
		return NULL;
	s = sb->buf;
	if (len)
		*len = sb->len;
	sonde_strbuf__init(sb);
	return s;
}

void sonde_strbuf__release(struct sonde_strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	sonde_strbuf__init(sb);
}

int sonde_strbuf__add_quoted(struct sonde_strbuf *sb, const char *a)
{
	if (*a && !a[strcspn(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!")])
		return sonde_strbuf__adds(sb, a);
	sonde_strbuf__addch(sb, '\'');
	for (; *a; a++)
		if (*a == '\'')
			sonde_strbuf__adds(sb, "'\\''");
		else
			sonde_strbuf__addch(sb, *a);
	return sonde_strbuf__addch(sb, '\'');
}
