/*
 * file.c - whole-file reads and writes that never leave partial files.
 *
 * Writes go to an unnamed file in the target's directory (O_TMPFILE), are
 * fsync'ed, linked as "<dir>/.<name>.XXXXXX" and renamed over the target: a
 * process killed while it writes leaves nothing behind (file systems without
 * O_TMPFILE get a named temporary from the start). Any failure removes the
 * temporary file and leaves the target as it was.
 * Only regular files are replaced that way: a device or a FIFO is written through
 * (renaming over /dev/null would replace the machine's /dev/null).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <sonde/compress.h>
#include <sonde/file.h>
#include <sonde/strbuf.h>

int sonde_file__write_allv(int fd, const struct iovec *iov, size_t n)
{
	struct iovec cur = { 0 };

	while (n || cur.iov_len) {
		ssize_t w;

		if (!cur.iov_len) { /* the next piece (whole pieces go to writev together) */
			size_t k = n < IOV_MAX ? n : IOV_MAX;

			w = writev(fd, iov, (int)k);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			if (!w) { /* only empty pieces, or a file that takes nothing more */
				size_t e = 0;

				while (e < k && !iov[e].iov_len)
					e++;
				if (e < k)
					return -EIO;
				iov += k;
				n -= k;
				continue;
			}
			/* what was written: whole pieces, then part of one */
			while (n && (size_t)w >= iov->iov_len) {
				w -= (ssize_t)iov->iov_len;
				iov++;
				n--;
			}
			if (n && w) {
				cur.iov_base = (char *)iov->iov_base + w;
				cur.iov_len = iov->iov_len - (size_t)w;
				iov++;
				n--;
			}
			continue;
		}
		w = write(fd, cur.iov_base, cur.iov_len); /* the rest of a piece cut short */
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!w)
			return -EIO;
		cur.iov_base = (char *)cur.iov_base + w;
		cur.iov_len -= (size_t)w;
	}
	return 0;
}

int sonde_file__write_all(int fd, const void *buf, size_t len)
{
	struct iovec v = { (void *)buf, len };

	return sonde_file__write_allv(fd, &v, 1);
}

/* "<dir>/.<name>.XXXXXX" for path into tmp (the Xs to be replaced). */
static int temp_name(const char *path, struct sonde_strbuf *tmp)
{
	const char *slash = strrchr(path, '/');

	sonde_strbuf__reset(tmp);
	if (slash)
		return sonde_strbuf__addf(tmp, "%.*s.%s.XXXXXX", (int)(slash - path + 1), path,
					  slash + 1);
	return sonde_strbuf__addf(tmp, ".%s.XXXXXX", path);
}

int sonde_file__open_unnamed(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path + 1)) : strdup(".");
	int fd;

	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
	free(dir);
	return fd < 0 ? -errno : fd;
}

int sonde_file__scratch(const char *what)
{
	const char *dir = getenv("TMPDIR");
	char tmpl[PATH_MAX];
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	if ((size_t)snprintf(tmpl, sizeof(tmpl), "%s/sonde-%s-XXXXXX", dir, what) >= sizeof(tmpl))
		return -ENAMETOOLONG;
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(tmpl);
	return fd;
}

/* Link the unnamed file fd beside path under a fresh temporary name (into tmp). */
static int link_temp(int fd, const char *path, struct sonde_strbuf *tmp)
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char proc[32];
	int tries, err;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (tries = 0; tries < 100; tries++) {
		unsigned char r[6];
		size_t i;

		if ((err = temp_name(path, tmp)))
			return err;
		if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
			uint64_t t = (uint64_t)clock() * 2654435761u ^ (uint64_t)time(NULL) ^
				     (uint64_t)tries << 40;

			memcpy(r, &t, sizeof(r));
		}
		for (i = 0; i < 6; i++)
			tmp->buf[tmp->len - 6 + i] = abc[r[i] % (sizeof(abc) - 1)];
		if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp->buf, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int sonde_file__publish(int fd, const char *path)
{
	struct sonde_strbuf tmp = SONDE_STRBUF_INIT;
	int err = link_temp(fd, path, &tmp);

	if (!err && rename(tmp.buf, path) < 0) {
		err = -errno;
		unlink(tmp.buf);
	}
	sonde_strbuf__release(&tmp);
	return err;
}

/* Write the pieces into a fresh temporary file beside path; its name goes to tmp. */
static int write_temp(const char *path, const struct iovec *iov, size_t n, struct sonde_strbuf *tmp)
{
	int fd = sonde_file__open_unnamed(path), err;
	bool named = fd < 0, linked = false;

	if (named) { /* no O_TMPFILE here: a named temporary from the start */
		if ((err = temp_name(path, tmp)))
			return err;
		fd = mkostemp(tmp->buf, O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	err = sonde_file__write_allv(fd, iov, n);
	if (!err && fchmod(fd, 0644) < 0)
		err = -errno;
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (!err && !named) {
		err = link_temp(fd, path, tmp);
		linked = !err;
	}
	if (close(fd) < 0 && !err)
		err = -errno;
	if (err && (named || linked))
		unlink(tmp->buf);
	return err;
}

/* Write through to a device or FIFO that exists (no create, no rename). */
static int write_through(const char *path, const struct iovec *iov, size_t n)
{
	int fd = strcmp(path, "-") ? open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC) : 1, err;
	struct stat st;

	if (fd < 0)
		return -errno;
	/* what was opened must still be what was looked at */
	if (fd != 1 && (fstat(fd, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))) {
		close(fd);
		return -EINVAL;
	}
	err = sonde_file__write_allv(fd, iov, n);
	if (fd != 1 && close(fd) < 0 && !err)
		err = -errno;
	return err;
}

/* What the symbolic link path names, relative to the link's directory. */
static char *link_target(const char *path)
{
	char to[4096], *out = NULL;
	const char *slash = strrchr(path, '/');
	ssize_t n = readlink(path, to, sizeof(to) - 1);

	if (n < 0)
		return NULL;
	to[n] = 0;
	if (to[0] == '/' || !slash)
		out = strdup(to);
	else if (asprintf(&out, "%.*s%s", (int)(slash - path + 1), path, to) < 0)
		out = NULL;
	if (!out)
		errno = ENOMEM;
	return out;
}

/*
 * The kernel's rule for links in sticky world-writable directories (/tmp),
 * whatever fs.protected_symlinks says: a link there is followed only when its
 * owner is the follower or the directory's owner. Otherwise another user could
 * plant a link where sonde writes and have it replace a file of the caller's
 * (root's) choosing.
 */
static bool may_follow(const char *link, const struct stat *st)
{
	const char *slash = strrchr(link, '/');
	char *dir = slash ? strndup(link, (size_t)(slash - link + 1)) : strdup(".");
	struct stat ds;
	bool ok = true;

	if (!dir)
		return false;
	if (stat(dir, &ds) == 0 && (ds.st_mode & S_ISVTX) && (ds.st_mode & S_IWOTH) &&
	    st->st_uid != ds.st_uid && st->st_uid != geteuid())
		ok = false;
	free(dir);
	return ok;
}

static int write_atomicv(const char *path, const struct iovec *iov, size_t n)
{
	struct sonde_strbuf tmp = SONDE_STRBUF_INIT;
	char *real = NULL;
	struct stat st;
	bool have;
	int err, hops;

	if (!strcmp(path, "-"))
		return write_through(path, iov, n);
	have = lstat(path, &st) == 0;
	if (!have && errno != ENOENT)
		return -errno;
	/* follow a link on purpose: write what it points to, keep the link (a
	   dangling link: create what it names, as a shell's '>' does); each link
	   of a chain by the rule of may_follow */
	for (hops = 0; have && S_ISLNK(st.st_mode); hops++) {
		char *next;

		if (hops == 40 || !may_follow(path, &st)) {
			free(real);
			return hops == 40 ? -ELOOP : -EACCES;
		}
		next = link_target(path);
		if (!next) {
			err = -errno;
			free(real);
			return err;
		}
		free(real);
		path = real = next;
		have = lstat(path, &st) == 0;
		if (!have && errno != ENOENT) {
			err = -errno;
			free(real);
			return err;
		}
	}
	if (have && !S_ISREG(st.st_mode)) {
		err = S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) ? write_through(path, iov, n)
		      : S_ISDIR(st.st_mode)			  ? -EISDIR
								  : -EINVAL;
		free(real);
		return err;
	}
	err = write_temp(path, iov, n, &tmp);
	if (!err && rename(tmp.buf, path) < 0) {
		err = -errno;
		unlink(tmp.buf);
	}
	sonde_strbuf__release(&tmp);
	free(real);
	return err;
}

int sonde_file__write_atomic(const char *path, const void *buf, size_t len)
{
	struct iovec v = { (void *)buf, len };

	return write_atomicv(path, &v, 1);
}

int sonde_file__rename_new(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* File systems without RENAME_NOREPLACE: link() refuses to replace too. */
	if (link(from, to) < 0)
		return -errno;
	unlink(from);
	return 0;
}

static int write_newv(const char *path, const struct iovec *iov, size_t n, char **used)
{
	struct sonde_strbuf tmp = SONDE_STRBUF_INIT, name = SONDE_STRBUF_INIT;
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path, *dot = strrchr(base, '.');
	size_t stem;
	int err, i;

	/* "a.json.gz" is followed by "a-1.json.gz": a compressed name has two extensions */
	if (dot && dot != base && sonde_compress__by_name(path) != SONDE_COMPRESS_NONE) {
		const char *inner = dot - 1;

		while (inner > base && *inner != '.')
			inner--;
		if (inner > base)
			dot = inner;
	}
	stem = dot && dot != base ? (size_t)(dot - path) : strlen(path);
	err = write_temp(path, iov, n, &tmp);
	if (err) {
		sonde_strbuf__release(&tmp);
		return err;
	}

	for (i = 0; i < 1000; i++) {
		sonde_strbuf__reset(&name);
		if (i == 0)
			err = sonde_strbuf__adds(&name, path);
		else
			err = sonde_strbuf__addf(&name, "%.*s-%d%s", (int)stem, path, i,
						 path + stem);
		if (err)
			break;
		err = sonde_file__rename_new(tmp.buf, name.buf);
		if (err != -EEXIST)
			break;
	}
	if (err) {
		unlink(tmp.buf);
	} else if (used) {
		*used = sonde_strbuf__detach(&name, NULL);
		if (!*used)
			err = -ENOMEM;
	}
	sonde_strbuf__release(&tmp);
	sonde_strbuf__release(&name);
	return err;
}

int sonde_file__write_new(const char *path, const void *buf, size_t len, char **used)
{
	struct iovec v = { (void *)buf, len };

	return write_newv(path, &v, 1, used);
}

int sonde_file__read(const char *path, char **buf, size_t *len)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	/* a device is no file to read whole (/dev/zero never ends); a pipe is */
	if (fstat(fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && !isatty(fd)) {
		close(fd);
		return -ENODEV;
	}
	for (;;) {
		ssize_t n;

		err = sonde_strbuf__grow(&sb, 65536);
		if (err)
			break;
		n = read(fd, sb.buf + sb.len, sb.alloc - sb.len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		sb.len += (size_t)n;
		sb.buf[sb.len] = '\0';
		if (sb.len > SONDE_FILE_MAX_READ) { /* /dev/zero, a runaway pipe */
			err = -EFBIG;
			break;
		}
	}
	close(fd);
	if (err) {
		sonde_strbuf__release(&sb);
		return err;
	}
	*buf = sonde_strbuf__detach(&sb, len);
	return *buf ? 0 : -ENOMEM;
}

int sonde_file__read_data(const char *path, char **buf, size_t *len)
{
	char *raw, *plain;
	size_t n;
	int err = sonde_file__read(path, &raw, &n);

	if (err || sonde_compress__by_magic(raw, n) == SONDE_COMPRESS_NONE) {
		if (!err) {
			*buf = raw;
			*len = n;
		}
		return err;
	}
	err = sonde_compress__decode(raw, n, SONDE_FILE_MAX_READ, &plain, len);
	free(raw);
	if (!err)
		*buf = plain;
	return err;
}

int sonde_file__write_data(const char *path, const void *buf, size_t len, unsigned flags,
			   char **used)
{
	enum sonde_compression c = sonde_compress__by_name(path);
	char *packed = NULL;
	struct iovec v;
	int err;

	if (used)
		*used = NULL;
	if (c != SONDE_COMPRESS_NONE && strcmp(path, "-")) {
		err = sonde_compress__encode(c, buf, len, &packed, &len);
		if (err)
			return err;
		buf = packed;
	}
	v = (struct iovec){ (void *)buf, len };
	err = flags & SONDE_FILE_NEW ? write_newv(path, &v, 1, used) : write_atomicv(path, &v, 1);
	free(packed);
	return err;
}

int sonde_file__write_datav(const char *path, const struct iovec *iov, size_t n, unsigned flags,
			    char **used)
{
	size_t len = 0, i;
	char *all;
	int err;

	if (sonde_compress__by_name(path) == SONDE_COMPRESS_NONE || !strcmp(path, "-")) {
		if (used)
			*used = NULL;
		return flags & SONDE_FILE_NEW ? write_newv(path, iov, n, used)
					      : write_atomicv(path, iov, n);
	}
	/* compressed: one piece for the compressor */
	for (i = 0; i < n; i++)
		len += iov[i].iov_len;
	all = malloc(len ? len : 1);
	if (!all)
		return -ENOMEM;
	for (i = 0, len = 0; i < n; i++) {
		memcpy(all + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	err = sonde_file__write_data(path, all, len, flags, used);
	free(all);
	return err;
}

int sonde_file__mkdir_p(const char *path, unsigned mode)
{
	char *p = strdup(path), *s;
	int err = 0;

	if (!p)
		return -ENOMEM;
	for (s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;

		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			err = -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return err;
}
