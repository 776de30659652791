/*
 * region.c - sonde_region_begin() / sonde_region_end(): region dispatches.
 *
 * Each thread counts its own regions on its own counter set (the calling
 * thread only, no inheritance), opened for the config the dispatch callback
 * picks at the thread's outermost region and kept while the config and the
 * running context stay the same. begin takes one reading, end another; the
 * difference, with the derived counters evaluated on it, goes to the
 * context's buffer as one dispatch.
 *
 * Under `sonde collect counters`, the first region of a process finds no
 * running context but the environment the collector set: it builds one whose
 * buffer hands every dispatch to a shared-memory ring the collector drains,
 * so a crash of the program loses no finished region.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/ring.h>
#include "service.h"

#define REGION_MAX_DEPTH 16

struct region_frame {
	struct sonde_counters_context *ctx;
	const struct sonde_counters_config *cfg;
	uint64_t id, t0;
	unsigned gen;
	char name[64];
	struct cnt_value v0[CNT_MAX_INPUTS];
};

struct region_thread {
	unsigned gen;
	const struct sonde_counters_config *cfg;
	struct cnt_set set;
	bool open;
	unsigned depth; /* may exceed REGION_MAX_DEPTH: deeper regions are not counted */
	pid_t pid, tid; /* cached: getpid() is a system call */
	/* the collector's ring, claimed by this thread */
	struct sonde_ring_writer ring;
	pid_t ring_pid;
	bool ring_claimed;
	struct region_frame f[REGION_MAX_DEPTH];
};

static __thread struct region_thread *tls;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void thread_gone(void *p)
{
	struct region_thread *t = p;

	if (t->open)
		cnt_set__close(&t->set);
	if (t->ring_claimed && t->ring_pid == getpid())
		sonde_ring__retire(&t->ring);
	free(t);
}

static void make_key(void)
{
	pthread_key_create(&tls_key, thread_gone);
}

static struct region_thread *thread_state(void)
{
	if (tls)
		return tls;
	pthread_once(&tls_once, make_key);
	tls = calloc(1, sizeof(*tls));
	if (tls) {
		tls->tid = gettid();
		tls->pid = getpid();
		pthread_setspecific(tls_key, tls);
	}
	return tls;
}

/* ---- the collector's side: a context built from the environment ------------------------ */

static struct {
	struct sonde_ring_area *area;
	struct sonde_counters_context *ctx;
	struct sonde_counters_config *cfg;
	uint32_t serial;
	pid_t pid;
} env_ctx;
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int env_state; /* 0: not tried, 1: tried */

static void env_dispatch(const struct sonde_dispatch_info *d,
			 const struct sonde_counters_config **cfg, void *user)
{
	(void)d;
	(void)user;
	*cfg = env_ctx.cfg;
}

/* Each dispatch block goes to the calling thread's ring as one record. */
static void env_deliver(struct sonde_counters_buffer *b,
			const struct sonde_counters_header *const *recs, size_t n, uint64_t dropped,
			void *user)
{
	struct region_thread *t = thread_state();
	size_t i = 0;

	(void)b;
	(void)dropped;
	(void)user;
	if (!t)
		return;
	if (!t->ring_claimed || t->ring_pid != getpid()) {
		if (t->ring_pid != getpid())
			t->ring_claimed = false;
		if (sonde_ring__claim(env_ctx.area, (uint32_t)getpid(), (uint32_t)gettid(),
				      env_ctx.serial, &t->ring)) {
			sonde_ring_area__lost(env_ctx.area, n);
			return;
		}
		t->ring_claimed = true;
		t->ring_pid = getpid();
	}
	while (i < n) {
		const struct sonde_counters_dispatch *h = (const void *)recs[i];
		size_t len =
			recs[i]->size + (size_t)h->nvalues * sizeof(struct sonde_counters_value);
		uint32_t *r = sonde_ring__reserve(&t->ring, CNT_REC_REGION,
						  (uint32_t)(8 + ((len + 7) & ~(size_t)7)));

		if (r) {
			memcpy(r + 2, h, len);
			sonde_ring__commit(&t->ring);
		}
		i += 1 + h->nvalues;
	}
}

static void env_init(void)
{
	const char *path = getenv(CNT_ENV_RING), *events = getenv(CNT_ENV_EVENTS);
	const char *flags = getenv(CNT_ENV_FLAGS);
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_counters_buffer *buf;
	uint32_t ids[CNT_MAX_REQUEST];
	size_t n = 0;
	char *list, *tok, *save;

	if (!path || !events)
		return;
	env_ctx.area = sonde_ring_area__attach(path);
	if (!env_ctx.area)
		return;
	env_ctx.serial = sonde_ring_area__next_serial(env_ctx.area);
	list = strdup(events);
	for (tok = list ? strtok_r(list, ",", &save) : NULL; tok && n < CNT_MAX_REQUEST;
	     tok = strtok_r(NULL, ",", &save))
		if (sonde_counters__find(tok, &ids[n]) == 0)
			n++;
	free(list);
	if (!n ||
	    sonde_counters_config__new(0, ids, n, flags ? (unsigned)atoi(flags) : 0, &err,
				       &env_ctx.cfg) ||
	    sonde_counters_context__new(&env_ctx.ctx) ||
	    sonde_counters_buffer__new(env_ctx.ctx, 64 << 10, 1, SONDE_BUFFER_LOSSLESS, env_deliver,
				       NULL, &buf) ||
	    sonde_counters__configure_dispatch(env_ctx.ctx, buf, env_dispatch, NULL) ||
	    sonde_counters_context__start(env_ctx.ctx, &err)) {
		sonde_ring_area__lost(env_ctx.area, 1);
		sonde_strbuf__release(&err);
		return;
	}
	env_ctx.pid = getpid();
	sonde_strbuf__release(&err);
}

/* A child forked from a process that counted regions counts its own. */
static void after_fork(void)
{
	struct sonde_counters_context *c = atomic_load(&cnt_active);

	if (c && c == env_ctx.ctx) {
		env_ctx.serial = sonde_ring_area__next_serial(env_ctx.area);
		env_ctx.pid = getpid();
	}
	atomic_fetch_add(&cnt_generation, 1); /* every set must be opened again */
	if (tls) {
		tls->depth = 0;
		tls->tid = gettid();
		tls->pid = getpid();
		if (tls->open) {
			cnt_set__close(&tls->set);
			tls->open = false;
		}
	}
}

static struct sonde_counters_context *active_context(void)
{
	struct sonde_counters_context *c = atomic_load_explicit(&cnt_active, memory_order_acquire);

	if (c || atomic_load_explicit(&env_state, memory_order_relaxed))
		return c;
	pthread_mutex_lock(&env_lock);
	if (!atomic_load(&env_state)) {
		env_init();
		pthread_atfork(NULL, NULL, after_fork);
		atomic_store(&env_state, 1);
	}
	pthread_mutex_unlock(&env_lock);
	return atomic_load(&cnt_active);
}

/* ---- begin / end ---------------------------------------------------------------------- */

void sonde_region_begin(const char *name)
{
	struct sonde_counters_context *ctx = active_context();
	struct sonde_dispatch_info info = { 0 };
	const struct sonde_counters_config *cfg = NULL;
	struct region_thread *t;
	struct region_frame *f;
	unsigned gen;

	if (!ctx)
		return;
	t = thread_state();
	if (!t)
		return;
	if (t->depth++ >= REGION_MAX_DEPTH)
		return;
	f = &t->f[t->depth - 1];
	f->cfg = NULL;
	f->ctx = ctx;
	f->id = atomic_fetch_add(&ctx->next_dispatch, 1);
	info.dispatch_id = f->id;
	info.name = name ? name : "";
	info.pid = t->pid;
	info.tid = t->tid;
	info.depth = t->depth - 1;
	info.is_region = true;
	ctx->dispatch_fn(&info, &cfg, ctx->dispatch_user);
	if (!cfg)
		return;
	gen = atomic_load(&cnt_generation);
	if (!t->open || t->gen != gen || t->cfg != cfg) {
		struct sonde_strbuf err = SONDE_STRBUF_INIT;
		unsigned i;

		for (i = 0; i + 1 < t->depth; i++)
			if (t->f[i].cfg && t->f[i].gen == t->gen && t->open)
				return; /* an outer region counts with another set */
		if (t->open)
			cnt_set__close(&t->set);
		t->open = cnt_set__open(&t->set, cfg, 0, NULL, 0, CNT_RDPMC, &err) == 0;
		sonde_strbuf__release(&err);
		if (!t->open)
			return;
		t->gen = gen;
		t->cfg = cfg;
	}
	f->cfg = cfg;
	f->gen = gen;
	snprintf(f->name, sizeof(f->name), "%s", name ? name : "");
	f->t0 = sonde_clock_ns();
	if (cnt_set__read(&t->set, f->v0))
		f->cfg = NULL;
}

void sonde_region_end(void)
{
	struct region_thread *t = tls;
	struct cnt_value now[CNT_MAX_INPUTS], delta[CNT_MAX_INPUTS];
	struct sonde_counters_value vals[CNT_MAX_REQUEST];
	struct sonde_counters_dispatch h;
	struct cnt_block blk = { vals, 0, CNT_MAX_REQUEST, 0 };
	struct expr_env env = { 0 };
	const struct sonde_counters_config *cfg;
	struct region_frame *f;
	uint64_t t1;
	size_t k;

	if (!t || !t->depth)
		return;
	if (t->depth-- > REGION_MAX_DEPTH)
		return;
	f = &t->f[t->depth];
	cfg = f->cfg;
	if (!cfg || !t->open || f->gen != t->gen || f->gen != atomic_load(&cnt_generation) ||
	    atomic_load(&cnt_active) != f->ctx)
		return;
	if (cnt_set__read(&t->set, now))
		return;
	t1 = sonde_clock_ns();
	for (k = 0; k < cfg->nin; k++) {
		cnt_value__delta(&delta[k], &now[k], &f->v0[k]);
	}
	blk.dispatch = f->id;
	cnt_block__fill(&blk, cfg, NULL, -1, delta, 1, (double)(t1 - f->t0), &env);
	memset(&h, 0, sizeof(h));
	h.h.kind = SONDE_RECORD_DISPATCH;
	h.h.size = sizeof(h);
	h.dispatch_id = f->id;
	h.config_id = cfg->id;
	h.agent = cfg->agent;
	h.pid = (uint32_t)t->pid;
	h.tid = (uint32_t)t->tid;
	h.start_ns = f->t0;
	h.end_ns = t1;
	h.nvalues = (uint32_t)blk.n;
	h.depth = t->depth;
	memcpy(h.name, f->name, sizeof(h.name));
	cnt_buffer__put(f->ctx->dispatch_buf, &h, sizeof(h), vals, blk.n);
}
