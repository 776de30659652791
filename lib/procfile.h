/*
 * procfile.h - /proc and /sys files read whole, again and again, by the
 * samplers (system, sched's /proc fallback). Internal to libsonde.
 *
 * sonde_procfile__read() reads a file through a descriptor kept open (*fd:
 * fd + 1, 0 when closed; fd NULL: opened and closed each time): a pread from 0
 * makes the kernel write it afresh, at a third of the cost of opening it
 * again. Without a descriptor to spare it opens and closes the file. path is
 * read only when no descriptor is open, so callers may format it only then.
 * It returns the length read (buf NUL-terminated, at most size - 1 bytes) or
 * -errno; a descriptor that fails (its process gone) is closed.
 *
 * sonde_procfile__read_all() reads a list that may be long (a task's
 * children): into small when it fits, else into a buffer from the heap, grown
 * as needed, that the caller frees when it is not small. NULL when the file
 * is empty or cannot be read (errno 0), or without memory (errno ENOMEM).
 */
#ifndef SONDE_PROCFILE_H
#define SONDE_PROCFILE_H

#include <stddef.h>
#include <sys/types.h>

ssize_t sonde_procfile__read(int *fd, const char *path, char *buf, size_t size);
char *sonde_procfile__read_all(int *fd, const char *path, char *small, size_t size);
void sonde_procfile__close(int *fd);

#endif
