/*
 * perf-read.h - reading a perf counter's fd. Internal to libsonde.
 *
 * sonde_perf_read() is read(2) again while the kernel answers ECHILD: a group
 * read of inherited counters fails so while a process of the tree is exiting
 * and its copy of the group is being taken apart (the next read succeeds).
 * Taking such a failure as a failed reading made the system sampler alternate
 * between its counters and /proc's smaller counts, and count the difference
 * twice. It returns what read(2) returns.
 */
#ifndef SONDE_PERF_READ_H
#define SONDE_PERF_READ_H

#include <errno.h>
#include <unistd.h>

static inline ssize_t sonde_perf_read(int fd, void *buf, size_t len)
{
	ssize_t n;
	int tries = 0;

	while ((n = read(fd, buf, len)) < 0 && errno == ECHILD && ++tries < 16)
		;
	return n;
}

#endif
