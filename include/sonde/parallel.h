/*
 * parallel.h - the same work on many independent items, on the machine's CPUs.
 *
 * sonde_parallel__for() calls fn(ctx, i) once for every i in [0, n), on the
 * calling thread and up to one more thread per other online CPU (at most 15),
 * each taking the next i left; it returns when every call has. fn must be
 * safe to run for different i at once. A thread is started only for every
 * `grain` items (a few small items are not worth one), and where threads
 * cannot be started the calling thread does everything.
 */
#ifndef SONDE_PARALLEL_H
#define SONDE_PARALLEL_H

#include <stddef.h>

void sonde_parallel__for(size_t n, size_t grain, void (*fn)(void *ctx, size_t i), void *ctx);

#endif
