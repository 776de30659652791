/*
 * syscalls.h - every system call of a process's threads, entry and exit, from
 * the kernel's raw_syscalls tracepoints through perf_event (one sample per
 * event, stamped with CLOCK_MONOTONIC), and syscall names (libseccomp).
 *
 * The events are opened on threads that exist and are inherited by the
 * threads (and processes) they create later; the samples go to one ring per
 * CPU, read at __read. Samples that found a ring full are counted
 * (__lost), never silently missing.
 *
 * Ownership: __open gives a recorder that __close releases.
 */
#ifndef SONDE_SYSCALLS_H
#define SONDE_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sonde/strbuf.h>

struct sonde_syscalls;

/*
 * Record the system calls of threads tids[0..n) and of those they create
 * later, into a ring of ring_bytes per CPU (a power of two of pages; 0: 4 MiB).
 * Disabled until __enable. Returns 0 or -errno with the reason in why, in one
 * line: -EACCES/-EPERM (perf_event_paranoid; not root), -ENOENT (tracefs is
 * not mounted), -ENOSYS (no perf_event).
 */
int sonde_syscalls__open(const pid_t *tids, size_t n, size_t ring_bytes,
			 struct sonde_syscalls **out, struct sonde_strbuf *why);
int sonde_syscalls__enable(struct sonde_syscalls *s, bool on);

typedef int (*sonde_syscall_fn)(void *ctx, uint32_t pid, uint32_t tid, uint64_t ns, bool enter,
				long nr);
/*
 * Hand every sample recorded so far to fn, stops at fn's error. A thread's
 * samples come in time order within each CPU's ring, not across them: sort
 * each thread's by time.
 */
int sonde_syscalls__read(struct sonde_syscalls *s, sonde_syscall_fn fn, void *ctx);
/* Samples the kernel could not write (a ring was full). */
uint64_t sonde_syscalls__lost(const struct sonde_syscalls *s);
void sonde_syscalls__close(struct sonde_syscalls *s);

/* The name of system call nr of this machine's architecture ("write"), or "syscall_NR". */
const char *sonde_syscall__name(long nr, char *buf, size_t len);

#endif
