/*
 * strbuf.h - a growable string buffer (after git's strbuf).
 *
 * Invariants: buf is never NULL and always NUL-terminated; len excludes the NUL.
 * A buffer starts as SONDE_STRBUF_INIT and is released with sonde_strbuf__release().
 * Functions that grow the buffer return 0 or -ENOMEM; on -ENOMEM the contents are
 * unchanged, and the failure is kept (err): every later add fails too, so the
 * buffer is always a prefix of what was meant, never text with a hole in it.
 * Whoever writes a buffer out checks sonde_strbuf__error() first. Reset and
 * release clear it.
 */
#ifndef SONDE_STRBUF_H
#define SONDE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct sonde_strbuf {
	char *buf;
	size_t len;
	size_t alloc; /* 0 while buf points at the shared empty string */
	int err;      /* 0, or the first failure to grow (-ENOMEM): kept */
};

extern char sonde_strbuf__empty[];
#define SONDE_STRBUF_INIT                                                                          \
	{                                                                                          \
		sonde_strbuf__empty, 0, 0, 0                                                       \
	}

void sonde_strbuf__init(struct sonde_strbuf *sb);
/* Make room for extra more bytes plus the NUL. */
int sonde_strbuf__grow(struct sonde_strbuf *sb, size_t extra);
int sonde_strbuf__add(struct sonde_strbuf *sb, const void *data, size_t len);
int sonde_strbuf__adds(struct sonde_strbuf *sb, const char *s);
int sonde_strbuf__addch(struct sonde_strbuf *sb, char c);
/* One argument as the shell reads it back: as it is, else in single quotes. */
int sonde_strbuf__add_quoted(struct sonde_strbuf *sb, const char *arg);
int sonde_strbuf__addf(struct sonde_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int sonde_strbuf__vaddf(struct sonde_strbuf *sb, const char *fmt, va_list ap);
/* Truncate to len bytes (len <= sb->len). */
void sonde_strbuf__setlen(struct sonde_strbuf *sb, size_t len);
void sonde_strbuf__reset(struct sonde_strbuf *sb);
/* Hand the heap string to the caller (free() it); the buffer is left empty. NULL on ENOMEM. */
char *sonde_strbuf__detach(struct sonde_strbuf *sb, size_t *len);
void sonde_strbuf__release(struct sonde_strbuf *sb);
/* A piece of the text could not be made (out of memory): the buffer is cut short. */
static inline void sonde_strbuf__fail(struct sonde_strbuf *sb, int err)
{
	if (!sb->err)
		sb->err = err;
}
/* 0, or the failure that cut the buffer short (-ENOMEM). */
static inline int sonde_strbuf__error(const struct sonde_strbuf *sb)
{
	return sb->err;
}
/*
 * The printf field width that lays s out in w columns: w plus the UTF-8
 * continuation bytes of s, of the same sign ("%*s", right-aligned; negative:
 * left-aligned). printf counts bytes, and "µs" is one column of two bytes.
 */
int sonde_strbuf__cols(const char *s, int w);
/* The two arguments of "%*s" for s in w columns (s is read twice: pass a buffer). */
#define SONDE_COLS(s, w) sonde_strbuf__cols((s), (w)), (s)

#endif
