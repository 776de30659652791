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

/*
 * sonde_parallel__pipe() runs a sequence through two stages: produce(pctx, buf,
 * cap) writes up to cap items of item_size bytes into buf and returns how many
 * (0: the sequence is over); consume(cctx, buf, n) takes them, in order, on the
 * calling thread, and returns 0 or an error that ends the sequence. Where
 * `expected` items are worth it and a second CPU is online, produce runs on a
 * thread of its own a few batches ahead of consume; otherwise the two take
 * turns on the calling thread. Either way each stage sees the same batches in
 * the same order. Returns consume's error, -ENOMEM, or 0.
 */
int sonde_parallel__pipe(size_t item_size, size_t batch, size_t expected,
			 size_t (*produce)(void *pctx, void *buf, size_t cap), void *pctx,
			 int (*consume)(void *cctx, const void *buf, size_t n), void *cctx);

#endif
