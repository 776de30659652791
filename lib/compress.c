/*
 * compress.c - gzip (zlib) and zstd (libzstd) over whole buffers.
 *
 * Decoding grows one buffer as the stream produces, and stops at the caller's
 * limit: a small file that inflates to terabytes is refused, not swallowed.
 * Concatenated members (gzip) and frames (zstd) are all read, as gzip -d and
 * zstd -d do.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>
#include <sonde/compress.h>
#include <sonde/strbuf.h>
#include "grow.h"

/* The buffer holds n bytes now (written past its length by a codec). */
static void set_len(struct sonde_strbuf *sb, size_t n)
{
	sb->len = n;
	sb->buf[n] = '\0';
}

/* What zlib takes or gives in one call: its counts are 32-bit. */
#define ZCHUNK ((size_t)1 << 30)

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

enum sonde_compression sonde_compress__by_name(const char *path)
{
	if (!path)
		return SONDE_COMPRESS_NONE;
	if (ends_with(path, ".gz"))
		return SONDE_COMPRESS_GZIP;
	if (ends_with(path, ".zst"))
		return SONDE_COMPRESS_ZSTD;
	return SONDE_COMPRESS_NONE;
}

enum sonde_compression sonde_compress__by_magic(const void *buf, size_t len)
{
	const unsigned char *b = buf;

	if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b)
		return SONDE_COMPRESS_GZIP;
	if (len >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd)
		return SONDE_COMPRESS_ZSTD;
	return SONDE_COMPRESS_NONE;
}

static int gzip_encode(const void *buf, size_t len, struct sonde_strbuf *out)
{
	z_stream z;
	const unsigned char *in = buf;
	int zr = Z_OK, err = 0;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip header and trailer, not a bare zlib stream */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	while (zr != Z_STREAM_END) {
		size_t chunk = len < ZCHUNK ? len : ZCHUNK;

		err = sonde_strbuf__grow(out, 256 * 1024);
		if (err)
			break;
		z.next_in = (unsigned char *)in;
		z.avail_in = (uInt)chunk;
		z.next_out = (unsigned char *)out->buf + out->len;
		z.avail_out = (uInt)(out->alloc - out->len - 1 < ZCHUNK ? out->alloc - out->len - 1
									: ZCHUNK);
		zr = deflate(&z, chunk == len ? Z_FINISH : Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
			err = -EIO;
			break;
		}
		in += chunk - z.avail_in;
		len -= chunk - z.avail_in;
		set_len(out, (size_t)((char *)z.next_out - out->buf));
	}
	deflateEnd(&z);
	return err;
}

static int zstd_encode(const void *buf, size_t len, struct sonde_strbuf *out)
{
	size_t bound = ZSTD_compressBound(len), n;
	int err = sonde_strbuf__grow(out, bound);

	if (err)
		return err;
	n = ZSTD_compress(out->buf, bound, buf, len, 3);
	if (ZSTD_isError(n))
		return -EIO;
	set_len(out, n);
	return 0;
}

int sonde_compress__encode(enum sonde_compression c, const void *buf, size_t len, char **out,
			   size_t *out_len)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	int err = c == SONDE_COMPRESS_GZIP   ? gzip_encode(buf, len, &sb)
		  : c == SONDE_COMPRESS_ZSTD ? zstd_encode(buf, len, &sb)
					     : -EINVAL;

	if (err) {
		sonde_strbuf__release(&sb);
		return err;
	}
	*out = sonde_strbuf__detach(&sb, out_len);
	return *out ? 0 : -ENOMEM;
}

/*
 * Room for one more piece of output below max: *space bytes free at the
 * buffer's end (at most what max leaves). 0 or -errno (-EFBIG at max).
 */
static int room(struct sonde_strbuf *sb, size_t max, size_t *space)
{
	/* the buffer never grows past max (and its NUL): doubling it from just
	   under max would take twice the memory max allows */
	size_t top = max < SIZE_MAX ? max + 1 : max;

	if (sb->len >= max)
		return -EFBIG;
	if (sb->alloc - sb->len <= 64 * 1024 && sb->alloc < top) {
		size_t cap = sb->alloc < 256 * 1024 ? 256 * 1024
			     : sb->alloc > top / 2  ? top
						    : sb->alloc * 2;
		char *nb;

		if (cap > top)
			cap = top;
		nb = realloc(sb->alloc ? sb->buf : NULL, cap);
		if (!nb)
			return -ENOMEM;
		if (cap >= SONDE_HUGE_FROM)
			sonde_hint_huge(nb, cap);
		if (!sb->alloc)
			nb[0] = '\0';
		sb->buf = nb;
		sb->alloc = cap;
	}
	*space = sb->alloc - sb->len - 1;
	if (*space > max - sb->len)
		*space = max - sb->len;
	return 0;
}

static int gzip_decode(const unsigned char *in, size_t len, size_t max, struct sonde_strbuf *out)
{
	z_stream z;
	int zr = Z_OK, err = 0;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return -ENOMEM;
	for (;;) {
		size_t chunk = len < ZCHUNK ? len : ZCHUNK, space;

		err = room(out, max, &space);
		if (err)
			break;
		z.next_in = (unsigned char *)in;
		z.avail_in = (uInt)chunk;
		z.next_out = (unsigned char *)out->buf + out->len;
		z.avail_out = (uInt)(space < ZCHUNK ? space : ZCHUNK);
		zr = inflate(&z, Z_NO_FLUSH);
		in += chunk - z.avail_in;
		len -= chunk - z.avail_in;
		set_len(out, (size_t)((char *)z.next_out - out->buf));
		if (zr == Z_STREAM_END) {
			if (!len)
				break;
			if (sonde_compress__by_magic(in, len) != SONDE_COMPRESS_GZIP) {
				err = -EBADMSG; /* trailing garbage after a member */
				break;
			}
			inflateReset(&z); /* the next member */
			continue;
		}
		if (zr == Z_BUF_ERROR && !len && z.avail_out) {
			err = -EBADMSG; /* the input ended inside a member */
			break;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			err = zr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
			break;
		}
	}
	inflateEnd(&z);
	return err;
}

static int zstd_decode(const void *in, size_t len, size_t max, struct sonde_strbuf *out)
{
	unsigned long long stated = ZSTD_getFrameContentSize(in, len);
	ZSTD_inBuffer ib = { in, len, 0 };
	ZSTD_DStream *z;
	size_t last = 0;
	int err = 0;

	/* a frame that says it holds more than max is refused before decoding */
	if (stated != ZSTD_CONTENTSIZE_UNKNOWN && stated != ZSTD_CONTENTSIZE_ERROR && stated > max)
		return -EFBIG;
	z = ZSTD_createDStream();
	if (!z)
		return -ENOMEM;
	while (ib.pos < ib.size) {
		ZSTD_outBuffer ob;
		size_t space;

		err = room(out, max, &space);
		if (err)
			break;
		ob.dst = out->buf + out->len;
		ob.size = space;
		ob.pos = 0;
		last = ZSTD_decompressStream(z, &ob, &ib);
		set_len(out, out->len + ob.pos);
		if (ZSTD_isError(last)) {
			err = ZSTD_getErrorCode(last) == ZSTD_error_memory_allocation ? -ENOMEM
										      : -EBADMSG;
			break;
		}
		if (!ob.pos && ib.pos == ib.size)
			break;
	}
	/* 0: the last frame was complete; else the input ended inside one */
	if (!err && last != 0)
		err = -EBADMSG;
	ZSTD_freeDStream(z);
	return err;
}

int sonde_compress__decode(const void *buf, size_t len, size_t max, char **out, size_t *out_len)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	enum sonde_compression c = sonde_compress__by_magic(buf, len);
	int err = c == SONDE_COMPRESS_GZIP   ? gzip_decode(buf, len, max, &sb)
		  : c == SONDE_COMPRESS_ZSTD ? zstd_decode(buf, len, max, &sb)
					     : -EINVAL;

	if (err) {
		sonde_strbuf__release(&sb);
		return err;
	}
	*out = sonde_strbuf__detach(&sb, out_len);
	return *out ? 0 : -ENOMEM;
}
