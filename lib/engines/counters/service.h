/*
 * service.h - the service's internal types, shared by service.c (configs,
 * sets, buffers, contexts, process and agent counting), region.c (regions)
 * and collector.c (`sonde collect counters`).
 */
#ifndef SONDE_COUNTERS_SERVICE_H
#define SONDE_COUNTERS_SERVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include "counters.h"

#define CNT_MAX_REQUEST 256 /* counters asked for in one config */

struct sonde_counters_config {
	uint32_t id, agent;
	unsigned flags;
	size_t nreq;
	uint32_t *req;
	struct cnt_entry **reqe;
	/* the base counters the requested ones need, in a fixed order */
	size_t nin;
	uint32_t in[CNT_MAX_INPUTS];
	struct cnt_entry *ine[CNT_MAX_INPUTS];
	bool in_ok[CNT_MAX_INPUTS];
};

/* One counter as read. */
struct cnt_value {
	uint64_t raw, enabled, running;
	bool open;
	bool idle; /* a delta: the counter ran before, not in between: it counted 0 */
};

/* now - before; see service.c for a counter that did not run in between */
void cnt_value__delta(struct cnt_value *d, const struct cnt_value *now,
		      const struct cnt_value *before);

enum {
	CNT_INHERIT = 1u << 0,	      /* follow new threads and children */
	CNT_DISABLED = 1u << 1,	      /* open disabled */
	CNT_ENABLE_ON_EXEC = 1u << 2, /* enable at the target's exec */
	CNT_RDPMC = 1u << 3,	      /* read through rdpmc when possible */
};

/* A config's base counters on one target, per CPU when ncpu > 1. */
struct cnt_set {
	const struct sonde_counters_config *cfg;
	size_t ncpu;
	int *cpus;  /* -1: any CPU */
	int *fd;    /* [ncpu][nin], -1 when not open */
	size_t nfd; /* ncpu * nin: closing needs no config (it may be freed by then) */
	struct cnt_value *last;
	bool group, rdpmc; /* group: the hardware inputs are one perf group */
	uint64_t grouped;  /* bit k: input k is in that group (read with its leader) */
	struct perf_event_mmap_page **page;
};

/*
 * The base counters that the counters ids[] need, added to in[] (*nin of them,
 * CNT_MAX_INPUTS at most): -E2BIG, with err, where they are more.
 */
int cnt_request_inputs(const uint32_t *ids, size_t n, uint32_t *in, size_t *nin,
		       struct sonde_strbuf *err);

int cnt_set__open(struct cnt_set *s, const struct sonde_counters_config *cfg, pid_t pid,
		  const int *cpus, size_t ncpu, unsigned how, struct sonde_strbuf *err);
void cnt_set__close(struct cnt_set *s);
void cnt_set__enable(struct cnt_set *s, bool on);
void cnt_set__map_rdpmc(struct cnt_set *s);
/* Read every counter into out[ncpu * nin]. */
int cnt_set__read(struct cnt_set *s, struct cnt_value *out);
int cnt_set__read_at(struct cnt_set *s, struct cnt_value *out, uint64_t *at);

/* The value records of one reading, built in place. */
struct cnt_block {
	struct sonde_counters_value *values;
	size_t n, cap;
	uint64_t dispatch;
};
int cnt_block__fill(struct cnt_block *b, const struct sonde_counters_config *cfg,
		    const struct cnt_set *s, int agent_cpu, const struct cnt_value *delta,
		    size_t ninst, double duration_ns, struct expr_env *env);

struct sonde_counters_buffer {
	struct sonde_counters_buffer *next;
	pthread_mutex_t lock;
	uint8_t *data;
	size_t size, used, watermark;
	enum sonde_buffer_policy policy;
	sonde_buffer_fn fn;
	void *user;
	uint64_t dropped;
};
void cnt_buffer__put(struct sonde_counters_buffer *b, const void *hdr, size_t hlen,
		     const struct sonde_counters_value *v, size_t n);

struct cnt_agent {
	uint32_t agent;
	struct sonde_counters_buffer *buf;
	sonde_agent_profile_fn fn;
	void *user;
	const struct sonde_counters_config *cfg;
	struct cnt_set set;
	struct expr_env accum;
	uint64_t samples, t_last;
	struct cnt_value now[CNT_MAX_INPUTS]; /* the tick's reading, before it is recorded */
	uint64_t t_now;
};

struct sonde_counters_context {
	struct sonde_counters_buffer *buffers;
	struct sonde_counters_buffer *dispatch_buf;
	sonde_dispatch_fn dispatch_fn;
	void *dispatch_user;
	struct cnt_agent *agent;
	size_t nagent;
	_Atomic uint64_t next_dispatch;
	bool running;
};

/* The context regions count for (one per process), and its generation. */
extern struct sonde_counters_context *_Atomic cnt_active;
extern _Atomic unsigned cnt_generation;

/* What `sonde collect counters` tells a target that marks regions. */
#define CNT_ENV_RING   "SONDE_COUNTERS_RING"   /* the ring area's path */
#define CNT_ENV_EVENTS "SONDE_COUNTERS_EVENTS" /* counter names, comma-separated */
#define CNT_ENV_FLAGS  "SONDE_COUNTERS_FLAGS"  /* config flags, decimal */
#define CNT_REC_REGION 16		       /* ring record: a dispatch block */

#endif
