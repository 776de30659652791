/*
 * compress.h - gzip and zstd for whole buffers: profiles and exports named
 * *.gz or *.zst are written compressed, and compressed data is recognised by
 * its magic number when read, whatever its name.
 */
#ifndef SONDE_COMPRESS_H
#define SONDE_COMPRESS_H

#include <stddef.h>

enum sonde_compression {
	SONDE_COMPRESS_NONE,
	SONDE_COMPRESS_GZIP, /* RFC 1952, zlib; several members are read one after another */
	SONDE_COMPRESS_ZSTD, /* RFC 8878, libzstd; several frames likewise */
};

/* The compression a file name asks for: ".gz" gzip, ".zst" zstd, else none. */
enum sonde_compression sonde_compress__by_name(const char *path);

/* The compression len bytes start with (their magic number), else none. */
enum sonde_compression sonde_compress__by_magic(const void *buf, size_t len);

/*
 * Compress len bytes with c into a malloc'ed *out of *out_len bytes.
 * Returns 0 or -errno (-EINVAL for SONDE_COMPRESS_NONE).
 */
int sonde_compress__encode(enum sonde_compression c, const void *buf, size_t len, char **out,
			   size_t *out_len);

/*
 * Decompress len bytes whose magic says gzip or zstd into a malloc'ed,
 * NUL-terminated *out of *out_len bytes, at most max bytes. Returns 0 or -errno:
 * -EBADMSG for data that is truncated or corrupt, -EFBIG past max, -EINVAL for
 * data that is not compressed.
 */
int sonde_compress__decode(const void *buf, size_t len, size_t max, char **out, size_t *out_len);

#endif
