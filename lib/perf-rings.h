/*
 * perf-rings.h - perf_event rings: events opened per thread and CPU, one ring
 * per CPU, records read in place.
 *
 * The kernel maps no ring of an inherited event that follows one task on
 * every CPU, so, as perf record does, each event follows its task on one CPU
 * and every event of a CPU writes into that CPU's one ring
 * (PERF_EVENT_IOC_SET_OUTPUT). Inherited events write into their parent's
 * ring: threads and processes a thread starts later are recorded too. The
 * records of one thread are spread over the CPUs' rings.
 */
#ifndef SONDE_PERF_RINGS_H
#define SONDE_PERF_RINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

struct perf_rings;

/*
 * Open each of the nattr events for every thread in tids on every CPU, with
 * rings of ring_bytes (rounded to a power of two of pages) each. A thread
 * that ended meanwhile and an offline CPU are skipped. Returns 0 or -errno
 * (*failed: the index of the attr that could not be opened, -1 for a ring).
 */
int perf_rings__open(struct perf_rings **out, const struct perf_event_attr *attrs, size_t nattr,
		     const pid_t *tids, size_t ntid, size_t ring_bytes, int *failed);
void perf_rings__close(struct perf_rings *r);
int perf_rings__enable(struct perf_rings *r, bool on);
/* Which attr a sample's PERF_SAMPLE_IDENTIFIER names; -1 when none. */
int perf_rings__attr_of(const struct perf_rings *r, uint64_t id);
/* The ring file descriptors (one per CPU with a ring), for poll(). */
size_t perf_rings__fds(const struct perf_rings *r, int *fds, size_t cap);

/*
 * Call fn for every record waiting in the rings (contiguous, h->size bytes),
 * ring by ring, and free their space. A non-zero return of fn stops the read
 * and is returned; the record it was given is consumed.
 */
typedef int (*perf_record_fn)(void *ctx, const struct perf_event_header *h);
int perf_rings__read(struct perf_rings *r, perf_record_fn fn, void *ctx);

#endif
