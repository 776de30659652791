/*
 * tracefs.c - where the kernel's tracepoints are named (see tracefs.h).
 */
#include <errno.h>
#include <unistd.h>
#include <sys/mount.h>
#include "tracefs.h"

const char *sonde_tracefs_events(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing/events",
					    "/sys/kernel/debug/tracing/events", NULL };
	size_t i;
	int err = ENOENT;

	for (i = 0; dirs[i]; i++) {
		if (access(dirs[i], R_OK | X_OK) == 0)
			return dirs[i];
		if (errno == EACCES || errno == EPERM)
			err = EACCES;
	}
	if (err == EACCES) {
		errno = EACCES;
		return NULL;
	}
	if (access("/sys/kernel/tracing", F_OK) == 0 &&
	    mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
	    access(dirs[0], R_OK | X_OK) == 0)
		return dirs[0];
	return NULL;
}
