/*
 * file.h - file helpers that never leave a partial file behind.
 */
#ifndef SONDE_FILE_H
#define SONDE_FILE_H

#include <stddef.h>
#include <sys/uio.h>

/*
 * Write len bytes to path. A regular file (or none yet) is written atomically:
 * a temporary file in the same directory is written, fsync'ed and renamed over
 * path; on any failure the temporary file is removed and path is untouched. A
 * symbolic link is followed: what it points to is written the same way (created
 * when it does not exist yet), and the link stays. A character device or a FIFO
 * is written through, never replaced ("-" is standard output). Returns 0 or
 * -errno: -EISDIR for a directory, -EINVAL for a block device or a socket.
 */
int sonde_file__write_atomic(const char *path, const void *buf, size_t len);

/*
 * Like sonde_file__write_atomic() but never replaces an existing file: when path
 * exists, "-1", "-2", ... is inserted before its extension. The name actually used is
 * stored in *used (malloc'ed; may be NULL). Returns 0 or -errno.
 */
int sonde_file__write_new(const char *path, const void *buf, size_t len, char **used);

/* The most sonde_file__read() takes: 4 GiB (a profile of a billion values fits). */
#define SONDE_FILE_MAX_READ (4ull << 30)

/*
 * Read a whole file into a NUL-terminated heap buffer. Returns 0 or -errno:
 * -ENODEV for a device (but a terminal), -EFBIG past SONDE_FILE_MAX_READ.
 */
int sonde_file__read(const char *path, char **buf, size_t *len);

/*
 * Like sonde_file__read(), and data that starts with gzip's or zstd's magic
 * number is decompressed (at most SONDE_FILE_MAX_READ bytes): a profile or an
 * export named *.json.gz reads as the JSON it holds. Returns 0 or -errno, and
 * -EBADMSG for compressed data that is truncated or corrupt.
 */
int sonde_file__read_data(const char *path, char **buf, size_t *len);

/* sonde_file__write_data(): never replace, as sonde_file__write_new() */
#define SONDE_FILE_NEW 1u

/*
 * Write len bytes to path as sonde_file__write_atomic() does (or, with
 * SONDE_FILE_NEW, sonde_file__write_new(), storing the name used in *used),
 * compressed when the name ends in ".gz" (gzip) or ".zst" (zstd).
 * Returns 0 or -errno.
 */
int sonde_file__write_data(const char *path, const void *buf, size_t len, unsigned flags,
			   char **used);
/* The same for the n pieces iov[] written one after the other (writev, no copy). */
int sonde_file__write_datav(const char *path, const struct iovec *iov, size_t n, unsigned flags,
			    char **used);

/*
 * An unnamed file (O_TMPFILE) in the directory of path, opened read-write, or
 * -errno (-EOPNOTSUPP: this file system has none). A process killed while it
 * writes there leaves nothing behind.
 */
int sonde_file__open_unnamed(const char *path);
/*
 * A scratch file, read-write, in $TMPDIR (or /tmp) with no name (O_TMPFILE;
 * where the file system has none, named and unlinked at once): nothing is left
 * behind whatever ends the process. what names it where a name is needed
 * ("sonde-WHAT-XXXXXX"). Returns the descriptor (close-on-exec) or -errno.
 */
int sonde_file__scratch(const char *what);
/*
 * Give the unnamed file fd (from __open_unnamed) the name path, replacing what
 * is there atomically: linked under a temporary name beside path, renamed.
 * Returns 0 or -errno.
 */
int sonde_file__publish(int fd, const char *path);

/* Write all len bytes to fd (retrying short writes and EINTR). Returns 0 or -errno. */
int sonde_file__write_all(int fd, const void *buf, size_t len);
/* The same for n pieces, IOV_MAX at a time. */
int sonde_file__write_allv(int fd, const struct iovec *iov, size_t n);

/* mkdir -p. Returns 0 or -errno. */
int sonde_file__mkdir_p(const char *path, unsigned mode);

/* Rename without replacing (renameat2 RENAME_NOREPLACE). Returns 0 or -errno. */
int sonde_file__rename_new(const char *from, const char *to);

#endif
