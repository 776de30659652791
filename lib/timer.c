/*
 * timer.c - named region timers for C programs (include/sonde/timer.h).
 *
 * Each thread that records into a timer has a buffer of its own: its open
 * regions, its finished samples, and a map from the names it used to region
 * ids. A thread finds its buffer through a one-entry thread-local cache (the
 * timer's serial, never reused, and the buffer). The timer's lock is taken
 * when a thread first records into it, when a thread meets a name new to it,
 * and by readers; a buffer's own lock only guards its samples against a
 * reader, so it is never contended while nobody reads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include <sonde/clock.h>
#include <sonde/profile.h>
#include <sonde/strbuf.h>
#include <sonde/timer.h>
#include "strmap.h"

struct timer_sample {
	uint64_t start, end;
	uint32_t region;
	uint32_t depth;
};

struct open_region {
	uint64_t start;
	uint32_t region;
};

struct tbuf {
	struct tbuf *next;
	pid_t tid;
	pthread_mutex_t lock; /* samples against a reader */
	struct timer_sample *s;
	size_t ns, scap;
	struct open_region *open;
	size_t nopen, ocap;
	struct sonde_strmap names; /* this thread's name -> region id */
};

struct sonde_timer {
	uint64_t serial;
	pthread_mutex_t lock; /* threads, names, regions */
	struct tbuf *threads;
	struct sonde_strmap names; /* name -> region id */
	char **region;		   /* id -> name */
	size_t nregion, rcap;
	unsigned warmup;
	uint64_t t0;
	atomic_ulong lost; /* samples that could not be stored */
};

static atomic_ulong next_serial = 1;
static _Thread_local struct {
	uint64_t serial;
	struct tbuf *b;
} cache;

struct sonde_timer *sonde_timer__new(unsigned warmup)
{
	struct sonde_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->serial = atomic_fetch_add(&next_serial, 1);
	pthread_mutex_init(&t->lock, NULL);
	t->warmup = warmup;
	t->t0 = sonde_clock_ns();
	return t;
}

void sonde_timer__free(struct sonde_timer *t)
{
	struct tbuf *b, *n;
	size_t i;

	if (!t)
		return;
	for (b = t->threads; b; b = n) {
		n = b->next;
		pthread_mutex_destroy(&b->lock);
		free(b->s);
		free(b->open);
		sonde_strmap__release(&b->names);
		free(b);
	}
	for (i = 0; i < t->nregion; i++)
		free(t->region[i]);
	free(t->region);
	sonde_strmap__release(&t->names);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct tbuf *tbuf_slow(struct sonde_timer *t)
{
	pid_t tid = gettid();
	struct tbuf *b;

	pthread_mutex_lock(&t->lock);
	for (b = t->threads; b && b->tid != tid; b = b->next)
		;
	if (!b && (b = calloc(1, sizeof(*b)))) {
		b->tid = tid;
		pthread_mutex_init(&b->lock, NULL);
		b->next = t->threads;
		t->threads = b;
	}
	pthread_mutex_unlock(&t->lock);
	if (b) {
		cache.serial = t->serial;
		cache.b = b;
	}
	return b;
}

static inline struct tbuf *tbuf_of(struct sonde_timer *t)
{
	return cache.serial == t->serial ? cache.b : tbuf_slow(t);
}

/* Grow *arr (*cap elements of sz bytes) to hold one more than n; 0 or -ENOMEM. */
static int room(void **arr, size_t *cap, size_t n, size_t sz)
{
	size_t c;
	void *p;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	p = realloc(*arr, c * sz);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

/* The id of name in the timer's table, added when new; the timer's lock held. */
static long intern_locked(struct sonde_timer *t, const char *name)
{
	bool existed;
	uint64_t *v = sonde_strmap__upserts(&t->names, name, &existed);
	char *copy;

	if (!v)
		return -ENOMEM;
	if (existed && *v != UINT64_MAX)
		return (long)*v;
	/* a key whose name could not be kept is marked, and tried again next time */
	if (room((void **)&t->region, &t->rcap, t->nregion, sizeof(*t->region)) ||
	    !(copy = strdup(name))) {
		*v = UINT64_MAX;
		return -ENOMEM;
	}
	t->region[t->nregion] = copy;
	*v = t->nregion;
	/* published last: __enter reads the count without the lock */
	__atomic_store_n(&t->nregion, t->nregion + 1, __ATOMIC_RELEASE);
	return (long)*v;
}

long sonde_timer__region(struct sonde_timer *t, const char *name)
{
	long id;

	if (!t || !name || !*name)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	id = intern_locked(t, name);
	pthread_mutex_unlock(&t->lock);
	return id;
}

/* The region id of name for the thread of b: its own map first, no lock. */
static long region_of(struct sonde_timer *t, struct tbuf *b, const char *name)
{
	uint64_t *v = sonde_strmap__gets(&b->names, name);
	long id;

	if (v)
		return (long)*v;
	id = sonde_timer__region(t, name);
	if (id < 0)
		return id;
	v = sonde_strmap__upserts(&b->names, name, NULL);
	if (!v)
		return -ENOMEM;
	*v = (uint64_t)id;
	return id;
}

static int enter(struct tbuf *b, uint32_t region)
{
	if (room((void **)&b->open, &b->ocap, b->nopen, sizeof(*b->open)))
		return -ENOMEM;
	b->open[b->nopen].region = region;
	b->open[b->nopen++].start = sonde_clock_ns(); /* last: the region's own work */
	return 0;
}

static int leave(struct sonde_timer *t, struct tbuf *b, uint32_t region, uint64_t end)
{
	size_t i;
	int err = 0;

	/* the innermost open region of that id */
	for (i = b->nopen; i > 0 && b->open[i - 1].region != region; i--)
		;
	if (!i)
		return -ENOENT;
	pthread_mutex_lock(&b->lock);
	if (room((void **)&b->s, &b->scap, b->ns, sizeof(*b->s))) {
		atomic_fetch_add(&t->lost, 1);
		err = -ENOMEM;
	} else {
		b->s[b->ns++] = (struct timer_sample){ .start = b->open[i - 1].start,
						       .end = end,
						       .region = region,
						       .depth = (uint32_t)(i - 1) };
	}
	pthread_mutex_unlock(&b->lock);
	memmove(&b->open[i - 1], &b->open[i], (b->nopen - i) * sizeof(*b->open));
	b->nopen--;
	return err;
}

static bool known(struct sonde_timer *t, long region)
{
	return region >= 0 && (size_t)region < __atomic_load_n(&t->nregion, __ATOMIC_ACQUIRE);
}

int sonde_timer__enter(struct sonde_timer *t, long region)
{
	struct tbuf *b;

	if (!t || !known(t, region))
		return -EINVAL;
	b = tbuf_of(t);
	return b ? enter(b, (uint32_t)region) : -ENOMEM;
}

int sonde_timer__leave(struct sonde_timer *t, long region)
{
	uint64_t end = sonde_clock_ns(); /* first */
	struct tbuf *b;

	if (!t || region < 0)
		return -EINVAL;
	b = tbuf_of(t);
	return b ? leave(t, b, (uint32_t)region, end) : -ENOMEM;
}

/* The id of a named region, or -ENOENT. */
static long find(struct sonde_timer *t, const char *name)
{
	uint64_t *v;
	long id = -ENOENT;

	pthread_mutex_lock(&t->lock);
	v = sonde_strmap__gets(&t->names, name);
	if (v && *v < t->nregion)
		id = (long)*v;
	pthread_mutex_unlock(&t->lock);
	return id;
}

int sonde_timer__begin(struct sonde_timer *t, const char *name)
{
	struct tbuf *b;
	long id;

	if (!t || !name || !*name)
		return -EINVAL;
	b = tbuf_of(t);
	if (!b)
		return -ENOMEM;
	id = region_of(t, b, name);
	return id < 0 ? (int)id : enter(b, (uint32_t)id);
}

int sonde_timer__end(struct sonde_timer *t, const char *name)
{
	uint64_t end = sonde_clock_ns(); /* first */
	struct tbuf *b;
	uint64_t *v;
	long id;

	if (!t || !name || !*name)
		return -EINVAL;
	b = tbuf_of(t);
	if (!b)
		return -ENOMEM;
	v = sonde_strmap__gets(&b->names, name);
	if (v)
		return leave(t, b, (uint32_t)*v, end);
	id = find(t, name); /* begun here by id (__enter), or never */
	return id < 0 ? (int)id : leave(t, b, (uint32_t)id, end);
}

size_t sonde_timer__count(const struct sonde_timer *t)
{
	size_t n;

	if (!t)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&t->lock);
	n = t->nregion;
	pthread_mutex_unlock((pthread_mutex_t *)&t->lock);
	return n;
}

const char *sonde_timer__name(const struct sonde_timer *t, size_t i)
{
	const char *s = NULL;

	if (!t)
		return NULL;
	pthread_mutex_lock((pthread_mutex_t *)&t->lock);
	if (i < t->nregion)
		s = t->region[i];
	pthread_mutex_unlock((pthread_mutex_t *)&t->lock);
	return s;
}

/* One region's samples with their threads, in order of their end; the first warm left out. */
struct kept {
	struct kept_sample {
		struct timer_sample s; /* first: by_end compares it */
		pid_t tid;
	} * k;
	size_t n, warm;
};

static int by_end(const void *a, const void *b)
{
	const struct timer_sample *x = a, *y = b;

	return x->end < y->end ? -1 : x->end > y->end;
}

/* Copy every thread's samples of region, each under its buffer's lock. */
static int gather(struct sonde_timer *t, uint32_t region, struct kept *out)
{
	size_t i, cap = 0;
	struct tbuf *b;
	int err = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&t->lock);
	for (b = t->threads; b && !err; b = b->next) {
		pthread_mutex_lock(&b->lock);
		for (i = 0; i < b->ns; i++) {
			if (b->s[i].region != region)
				continue;
			if (room((void **)&out->k, &cap, out->n, sizeof(*out->k))) {
				err = -ENOMEM;
				break;
			}
			out->k[out->n].s = b->s[i];
			out->k[out->n++].tid = b->tid;
		}
		pthread_mutex_unlock(&b->lock);
	}
	pthread_mutex_unlock(&t->lock);
	if (err) {
		free(out->k);
		memset(out, 0, sizeof(*out));
		return err;
	}
	qsort(out->k, out->n, sizeof(*out->k), by_end);
	out->warm = out->n < t->warmup ? out->n : t->warmup;
	return 0;
}

static void kept_free(struct kept *k)
{
	free(k->k);
}

int sonde_timer__stats(struct sonde_timer *t, const char *name, struct sonde_summary *out)
{
	struct kept k;
	double *d;
	long id;
	size_t i;
	int err;

	if (!t || !name || !out)
		return -EINVAL;
	id = find(t, name);
	if (id < 0)
		return (int)id;
	err = gather(t, (uint32_t)id, &k);
	if (err)
		return err;
	if (k.n == k.warm) {
		kept_free(&k);
		return -ENOENT;
	}
	d = malloc((k.n - k.warm) * sizeof(*d));
	if (!d) {
		kept_free(&k);
		return -ENOMEM;
	}
	for (i = k.warm; i < k.n; i++)
		d[i - k.warm] = (double)(k.k[i].s.end - k.k[i].s.start);
	err = sonde_stats__summarize(d, k.n - k.warm, out);
	free(d);
	kept_free(&k);
	return err;
}

/* The columns of one region's samples after its warm-up, in order of their end. */
static int add_region(struct sonde_profile *p, const char *name, const struct kept *k)
{
	json_t *cols[5] = { json_array(), json_array(), json_array(), json_array(), json_array() };
	static const char *const names[5] = { "amount", "order", "timestamp", "depth", "thread" };
	long res = -ENOMEM;
	size_t i, c;
	int err = 0;

	for (c = 0; c < 5; c++)
		err |= !cols[c];
	for (i = k->warm; i < k->n && !err; i++) {
		const struct timer_sample *s = &k->k[i].s;

		err |= json_array_append_new(cols[0],
					     json_integer((json_int_t)(s->end - s->start)));
		err |= json_array_append_new(cols[1], json_integer((json_int_t)(i - k->warm + 1)));
		err |= json_array_append_new(cols[2], json_integer((json_int_t)s->start));
		err |= json_array_append_new(cols[3], json_integer(s->depth));
		err |= json_array_append_new(cols[4], json_integer(k->k[i].tid));
	}
	if (!err)
		res = sonde_profile__resource(p, name, "time", "region", NULL);
	for (c = 0; c < 5; c++) {
		size_t j;
		json_t *v;

		if (!err && res >= 0)
			json_array_foreach(cols[c], j, v)
			{
				err |= sonde_profile__append(p, res, names[c], json_incref(v));
			}
		json_decref(cols[c]);
	}
	return err || res < 0 ? -ENOMEM : 0;
}

struct sonde_profile *sonde_timer__profile(struct sonde_timer *t, const char *cmd)
{
	struct sonde_profile *p;
	json_t *warm = json_object(), *notes = json_array();
	size_t i, n = sonde_timer__count(t), nwarm = 0;
	unsigned long lost;
	int err = 0;

	if (!t) {
		errno = EINVAL;
		return NULL;
	}
	p = sonde_profile__new("time");
	if (!p || !warm || !notes) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n && !err; i++) {
		const char *name = sonde_timer__name(t, i);
		struct kept k;

		err = gather(t, (uint32_t)i, &k);
		if (err)
			break;
		if (k.warm) {
			err |= json_object_set_new(warm, name, json_integer((json_int_t)k.warm));
			nwarm += k.warm;
		}
		if (k.n > k.warm && !err)
			err = add_region(p, name, &k);
		kept_free(&k);
	}
	if (err)
		goto out;
	lost = atomic_load(&t->lost);
	if (nwarm) {
		struct sonde_strbuf sb = SONDE_STRBUF_INIT;
		const char *key;
		json_t *v;
		const char *sep = "";

		err |= sonde_strbuf__adds(&sb, "warm-up samples left out:");
		json_object_foreach(warm, key, v)
		{
			err |= sonde_strbuf__addf(&sb, "%s %s %lld", sep, key,
						  (long long)json_integer_value(v));
			sep = ",";
		}
		err |= json_array_append_new(notes, json_string(sb.buf));
		sonde_strbuf__release(&sb);
	}
	if (lost)
		err |= sonde_profile__add_warning(
			p, "samples_lost", "region samples were lost: no memory to keep them",
			"free memory, or end regions less often");
	if (!err) {
		json_t *h = sonde_profile__header(p), *ci = sonde_profile__collector_info(p),
		       *st = sonde_profile__stats(p), *units = json_object(),
		       *params = json_object();

		err |= !units || !params;
		err |= json_object_set_new(units, "time", json_string("ns"));
		err |= json_object_set_new(h, "units", units);
		err |= json_object_set_new(h, "cmd",
					   json_string(cmd ? cmd : program_invocation_short_name));
		err |= json_object_set_new(ci, "name", json_string("timer"));
		err |= json_object_set_new(params, "warmup", json_integer(t->warmup));
		err |= json_object_set_new(ci, "params", params);
		err |= json_object_set_new(st, "duration_ns",
					   json_integer((json_int_t)(sonde_clock_ns() - t->t0)));
		err |= json_object_set_new(st, "notes", json_incref(notes));
		err |= json_object_set_new(st, "samples_lost", json_integer((json_int_t)lost));
		err |= json_object_set_new(sonde_profile__metadata(p), "warmup_left_out",
					   json_incref(warm));
		err = err ? -ENOMEM : 0;
	}
out:
	json_decref(warm);
	json_decref(notes);
	if (err) {
		sonde_profile__free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

int sonde_timer__save(struct sonde_timer *t, const char *path)
{
	struct sonde_profile *p;
	int err;

	if (!t || !path)
		return -EINVAL;
	p = sonde_timer__profile(t, NULL);
	if (!p)
		return -errno;
	err = sonde_profile__stamp(p);
	if (!err)
		err = sonde_profile__save(p, path);
	sonde_profile__free(p);
	return err;
}
