/*
 * tracefs.h - where the kernel's tracepoints are named. Internal to libsonde.
 */
#ifndef SONDE_TRACEFS_H
#define SONDE_TRACEFS_H

/*
 * The tracepoints' directory of tracefs (".../tracing/events"), or NULL with
 * errno set: EACCES when it is there but not readable (not root), else why it
 * is not mounted. An unmounted tracefs is mounted where the kernel provides
 * for it, as perf does (root).
 */
const char *sonde_tracefs_events(void);

#endif
