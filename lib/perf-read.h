/*
 * perf-read.h - reading a perf counter's fd. Internal to libsonde.
 *
 * sonde_perf_read() is read(2) again (up to 64 times, yielding the CPU
 * between) while the kernel answers ECHILD: a group read of inherited counters
 * fails so while a process of the tree is exiting and its copy of the group
 * is being taken apart, which takes microseconds, or longer where the exiting
 * task waits for a CPU (80 ms seen on this VM, under a reader polling every 2
 * ms). It returns what read(2) returns; a caller that still gets ECHILD keeps
 * its last reading.
 */
#ifndef SONDE_PERF_READ_H
#define SONDE_PERF_READ_H

#include <errno.h>
#include <sched.h>
#include <unistd.h>

static inline ssize_t sonde_perf_read(int fd, void *buf, size_t len)
{
	ssize_t n;
	int tries = 0;

	/* the exiting task may need the CPU to finish: yield it between tries */
	while ((n = read(fd, buf, len)) < 0 && errno == ECHILD && ++tries < 64)
		sched_yield();
	return n;
}

#endif
