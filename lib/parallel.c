/*
 * parallel.c - independent items on several threads, and a sequence through
 * two stages on two (see parallel.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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

/* ---- two stages, one batch after another ---------------------------------------------------- */

#define PIPE_SLOTS 4 /* batches the producer may be ahead */

struct pipe {
	size_t (*produce)(void *ctx, void *buf, size_t cap);
	void *ctx;
	char *buf;
	size_t item_size, batch;
	size_t len[PIPE_SLOTS];
	uint64_t produced, consumed; /* batches, ever */
	bool stop;		     /* consume failed: produce no more */
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void *producer(void *arg)
{
	struct pipe *p = arg;
	uint64_t k;

	for (k = 0;; k++) {
		size_t slot = k % PIPE_SLOTS, n;
		bool stop;

		pthread_mutex_lock(&p->lock);
		while (k - p->consumed >= PIPE_SLOTS && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		stop = p->stop;
		pthread_mutex_unlock(&p->lock);
		n = stop ? 0
			 : p->produce(p->ctx, p->buf + slot * p->batch * p->item_size, p->batch);
		pthread_mutex_lock(&p->lock);
		p->len[slot] = n;
		p->produced = k + 1;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		if (!n)
			return NULL;
	}
}

int sonde_parallel__pipe(size_t item_size, size_t batch, size_t expected,
			 size_t (*produce)(void *pctx, void *buf, size_t cap), void *pctx,
			 int (*consume)(void *cctx, const void *buf, size_t n), void *cctx)
{
	struct pipe p = { .produce = produce, .ctx = pctx, .item_size = item_size, .batch = batch };
	bool threaded = expected >= 4 * batch && sysconf(_SC_NPROCESSORS_ONLN) > 1;
	pthread_t t;
	uint64_t k;
	int rc = 0;

	p.buf = malloc((threaded ? PIPE_SLOTS : 1) * batch * item_size);
	if (!p.buf)
		return -ENOMEM;
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	if (threaded && pthread_create(&t, NULL, producer, &p))
		threaded = false;
	for (k = 0; !rc; k++) {
		size_t slot = k % PIPE_SLOTS, n;

		if (!threaded) {
			n = produce(pctx, p.buf, batch);
			if (!n)
				break;
			rc = consume(cctx, p.buf, n);
			continue;
		}
		pthread_mutex_lock(&p.lock);
		while (p.produced <= k)
			pthread_cond_wait(&p.cond, &p.lock);
		n = p.len[slot];
		pthread_mutex_unlock(&p.lock);
		if (!n)
			break;
		rc = consume(cctx, p.buf + slot * batch * item_size, n);
		pthread_mutex_lock(&p.lock);
		p.consumed = k + 1;
		p.stop = rc != 0;
		pthread_cond_broadcast(&p.cond);
		pthread_mutex_unlock(&p.lock);
	}
	if (threaded)
		pthread_join(t, NULL);
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	free(p.buf);
	return rc;
}
