/*
 * procfile.c - /proc and /sys files read whole, again and again (procfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "procfile.h"

/* Open, read whole, close. */
static ssize_t once(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)got < size - 1 && (n = read(fd, buf + got, size - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	return got;
}

ssize_t sonde_procfile__read(int *fd, const char *path, char *buf, size_t size)
{
	ssize_t n;

	if (!fd)
		return once(path, buf, size);
	if (!*fd) {
		int f = open(path, O_RDONLY | O_CLOEXEC);

		if (f < 0)
			return errno == EMFILE || errno == ENFILE ? once(path, buf, size) : -errno;
		*fd = f + 1;
	}
	n = pread(*fd - 1, buf, size - 1, 0);
	if (n < 0) { /* the process or thread has gone */
		n = -errno;
		close(*fd - 1);
		*fd = 0;
		return n;
	}
	buf[n] = 0;
	return n;
}

char *sonde_procfile__read_all(int *fd, const char *path, char *small, size_t size)
{
	char *buf = small;
	ssize_t n;

	/* a long list does not fit: read it again into twice the room */
	while ((n = sonde_procfile__read(fd, path, buf, size)) == (ssize_t)size - 1) {
		char *big = malloc(size * 2);

		if (buf != small)
			free(buf);
		if (!big) {
			errno = ENOMEM;
			return NULL;
		}
		buf = big;
		size *= 2;
	}
	if (n <= 0) {
		if (buf != small)
			free(buf);
		errno = 0;
		return NULL;
	}
	return buf;
}

void sonde_procfile__close(int *fd)
{
	if (*fd)
		close(*fd - 1);
	*fd = 0;
}
