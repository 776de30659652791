/*
 * ring-log.c - draining an area of rings to a file, and reading the file back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/ring.h>

struct sonde_ring_drainer {
	struct sonde_ring_area *a;
	int fd;
	unsigned interval_us;
	pthread_t thread;
	pthread_mutex_t lock;
	int stop, error;
	uint64_t lost_bytes; /* taken from the rings but not written (the write failed) */
	uint64_t error_ns;   /* monotonic time of the first write error; 0: none */
	clockid_t cpu_clock;
	_Atomic uint64_t written; /* bytes of whole chunks written to fd */
	_Atomic uint64_t kicks;	  /* __kick calls */
	pthread_mutex_t wlock;	  /* for waiters on written (followers) */
	pthread_cond_t wcond;
};

static int write_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int to_file(void *ctx, const struct sonde_ring_chunk *c, const void *data)
{
	struct sonde_ring_drainer *d = ctx;
	struct iovec iov[2] = { { (void *)c, sizeof(*c) }, { (void *)data, c->bytes } };
	int rc = write_all(d->fd, iov, 2);

	if (rc)
		d->lost_bytes += c->bytes;
	else
		atomic_fetch_add_explicit(&d->written, sizeof(*c) + c->bytes, memory_order_release);
	return rc;
}

/* ns from now on clock, as the pthread timed waits take it. */
static struct timespec deadline(clockid_t clock, uint64_t ns)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec += (long)(ns % 1000000000u);
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

void sonde_ring_drainer__kick(struct sonde_ring_drainer *d)
{
	pthread_mutex_lock(&d->wlock);
	atomic_fetch_add(&d->kicks, 1);
	pthread_cond_broadcast(&d->wcond);
	pthread_mutex_unlock(&d->wlock);
}

uint64_t sonde_ring_drainer__kicks(struct sonde_ring_drainer *d)
{
	return atomic_load(&d->kicks);
}

uint64_t sonde_ring_drainer__written(struct sonde_ring_drainer *d)
{
	return atomic_load_explicit(&d->written, memory_order_acquire);
}

uint64_t sonde_ring_drainer__wait_written(struct sonde_ring_drainer *d, uint64_t seen,
					  uint64_t kicks, uint64_t timeout_ns)
{
	struct timespec ts = deadline(CLOCK_MONOTONIC, timeout_ns);
	uint64_t n;

	pthread_mutex_lock(&d->wlock);
	while ((n = sonde_ring_drainer__written(d)) <= seen && atomic_load(&d->kicks) == kicks &&
	       pthread_cond_timedwait(&d->wcond, &d->wlock, &ts) == 0)
		;
	pthread_mutex_unlock(&d->wlock);
	return sonde_ring_drainer__written(d);
}

long long sonde_ring_drainer__sync(struct sonde_ring_drainer *d)
{
	long long n;

	pthread_mutex_lock(&d->lock);
	/* once the log cannot be written, take nothing more from the rings, and
	   tell the writers to stop: the target goes on, unrecorded */
	n = d->error ? d->error : sonde_ring_area__drain(d->a, to_file, d);
	if (n < 0 && !d->error) {
		d->error = (int)n;
		d->error_ns = sonde_clock_ns();
		sonde_ring_area__close(d->a); /* the recording stops; the target goes on */
	}
	pthread_mutex_unlock(&d->lock);
	if (n > 0)
		sonde_ring_drainer__kick(d);
	return n;
}

/* Drain while much flows; else sleep until a writer wants the reader (at most 1 s). */
static void *drain_loop(void *arg)
{
	struct sonde_ring_drainer *d = arg;

	for (;;) {
		long long n;

		pthread_mutex_lock(&d->lock);
		if (d->stop) {
			pthread_mutex_unlock(&d->lock);
			break;
		}
		pthread_mutex_unlock(&d->lock);
		n = sonde_ring_drainer__sync(d);
		if (n < 0)
			break;
		if (n < 256 * 1024)
			sonde_ring_area__wait(d->a, (uint64_t)d->interval_us * 1000u);
	}
	return NULL;
}

int sonde_ring_drainer__start(struct sonde_ring_area *a, int fd, unsigned interval_us,
			      struct sonde_ring_drainer **out)
{
	struct sonde_ring_drainer *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	d->a = a;
	d->fd = fd;
	d->interval_us = interval_us ? interval_us : 1000000;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->wlock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&d->wcond, &ca);
		pthread_condattr_destroy(&ca);
	}
	rc = pthread_create(&d->thread, NULL, drain_loop, d);
	if (rc) {
		pthread_mutex_destroy(&d->lock);
		pthread_mutex_destroy(&d->wlock);
		pthread_cond_destroy(&d->wcond);
		free(d);
		return -rc;
	}
	if (pthread_getcpuclockid(d->thread, &d->cpu_clock))
		d->cpu_clock = (clockid_t)-1;
	*out = d;
	return 0;
}

uint64_t sonde_ring_drainer__lost_bytes(struct sonde_ring_drainer *d, uint64_t *error_ns)
{
	uint64_t n;

	pthread_mutex_lock(&d->lock);
	n = d->lost_bytes;
	if (error_ns)
		*error_ns = d->error_ns;
	pthread_mutex_unlock(&d->lock);
	return n;
}

uint64_t sonde_ring_drainer__cpu_ns(struct sonde_ring_drainer *d)
{
	struct timespec ts;

	if (d->cpu_clock == (clockid_t)-1 || clock_gettime(d->cpu_clock, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sonde_ring_drainer__stop(struct sonde_ring_drainer *d)
{
	int err;

	if (!d)
		return 0;
	pthread_mutex_lock(&d->lock);
	d->stop = 1;
	pthread_mutex_unlock(&d->lock);
	/* wake it until it has gone: a wake that comes just before it goes to sleep
	   would otherwise leave it asleep for its whole interval */
	for (;;) {
		struct timespec ts;

		sonde_ring_area__wake(d->a);
		ts = deadline(CLOCK_REALTIME, 10000000);
		if (pthread_timedjoin_np(d->thread, NULL, &ts) != ETIMEDOUT)
			break;
	}
	sonde_ring_drainer__sync(d);
	err = d->error;
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->wlock);
	pthread_cond_destroy(&d->wcond);
	free(d);
	return err;
}

int sonde_ring_log__walk_records(const void *data, size_t bytes, const struct sonde_ring_chunk *c,
				 sonde_ring_record_fn cb, void *ctx)
{
	const uint8_t *r = data, *cend = r + bytes;

	if (((uintptr_t)r & 7) || (bytes & 7))
		return -EINVAL; /* records are whole multiples of 8 bytes */
	while (r + 4 <= cend) {
		uint32_t h, l;
		int rc;

		memcpy(&h, r, 4);
		l = SONDE_RING_REC_LEN(h);
		if (l < 8 || (l & 7) || r + l > cend)
			return -EBADMSG; /* the lengths frame the records: the rest is unreadable */
		if (SONDE_RING_REC_TYPE(h) != SONDE_RING_PAD) {
			rc = cb(ctx, c, (const uint32_t *)(const void *)r);
			if (rc)
				return rc;
		}
		r += l;
	}
	return 0;
}

int sonde_ring_log__walk(const void *buf, size_t len, sonde_ring_record_fn cb, void *ctx)
{
	const uint8_t *p = buf, *end = p + len;

	if ((uintptr_t)p & 7)
		return -EINVAL;
	while ((size_t)(end - p) >= sizeof(struct sonde_ring_chunk)) {
		const struct sonde_ring_chunk *c = (const void *)p;
		int rc;

		p += sizeof(*c);
		if (c->bytes > (size_t)(end - p))
			return 0; /* a chunk cut short by a crash of sonde: stop there */
		rc = sonde_ring_log__walk_records(p, c->bytes, c, cb, ctx);
		if (rc == -EBADMSG) /* a target wrote over its ring: said, and the next chunk */
			rc = cb(ctx, c, NULL);
		if (rc)
			return rc;
		p += c->bytes;
	}
	return 0;
}
