/*
 * parallel.c - independent items on several threads (see parallel.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <sonde/parallel.h>

struct work {
	void (*fn)(void *ctx, size_t i);
	void *ctx;
	size_t n;
	atomic_size_t next;
};

static void *take(void *arg)
{
	struct work *w = arg;
	size_t i;

	while ((i = atomic_fetch_add(&w->next, 1)) < w->n)
		w->fn(w->ctx, i);
	return NULL;
}

void sonde_parallel__for(size_t n, size_t grain, void (*fn)(void *ctx, size_t i), void *ctx)
{
	struct work w = { .fn = fn, .ctx = ctx, .n = n };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t want = cpus > 1 ? (size_t)cpus - 1 : 0, chunks = n / (grain ? grain : 1), nt, i;
	pthread_t t[15];

	atomic_init(&w.next, 0);
	if (want > sizeof(t) / sizeof(t[0]))
		want = sizeof(t) / sizeof(t[0]);
	if (want + 1 > chunks) /* the calling thread takes one chunk */
		want = chunks ? chunks - 1 : 0;
	for (nt = 0; nt < want; nt++)
		if (pthread_create(&t[nt], NULL, take, &w))
			break;
	take(&w);
	for (i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
}
