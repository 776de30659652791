/*
 * calltrace.c - calls seen by another engine, rebuilt by the trace collector's
 * own analysis (a feed, as the eBPF engine's events are): one piece of code
 * decides what a call, its self time and its context are.
 */
#include <errno.h>
#include <stdlib.h>
#include <regex.h>
#include <stdbool.h>
#include <string.h>
#include <sonde/calltrace.h>
#include "calltree.h"

struct sonde_calltrace {
	struct tr_analysis a;
	struct tr_feed *feed;
	uint32_t pid, serial; /* the process events go to now */
	int err;	      /* the first error of the feed: later events are not fed */
	bool done;	      /* written: the feed is gone */
};

struct sonde_calltrace *sonde_calltrace__new(const char *engine, const char *exe, uint32_t pid,
					     uint64_t t0)
{
	struct sonde_calltrace *ct = calloc(1, sizeof(*ct));

	if (!ct)
		return NULL;
	tr_analysis__init(&ct->a);
	ct->a.engine = engine;
	ct->a.engine_stats = json_object();
	ct->pid = pid;
	ct->serial = 1;
	ct->feed = tr_feed__new(&ct->a, t0);
	if (!ct->a.sym || !ct->a.func_index || !ct->a.engine_stats || !ct->feed ||
	    tr_feed__process(ct->feed, 1, pid, 0, exe ? exe : "", exe ? strlen(exe) : 0)) {
		sonde_calltrace__free(ct);
		errno = ENOMEM;
		return NULL;
	}
	return ct;
}

void sonde_calltrace__free(struct sonde_calltrace *ct)
{
	if (!ct)
		return;
	if (ct->feed)
		tr_feed__end(ct->feed, -ECANCELED);
	tr_analysis__release(&ct->a);
	free(ct);
}

int sonde_calltrace__process(struct sonde_calltrace *ct, uint32_t pid, const char *exe)
{
	int rc;

	if (ct->err || ct->done)
		return ct->err ? ct->err : -EINVAL;
	rc = tr_feed__process(ct->feed, ct->serial + 1, pid, 0, exe ? exe : "",
			      exe ? strlen(exe) : 0);
	if (rc < 0)
		return ct->err = rc;
	ct->serial++;
	ct->pid = pid;
	return 0;
}

void sonde_calltrace__max_rows(struct sonde_calltrace *ct, uint64_t max_rows)
{
	ct->a.max_rows = max_rows;
}

void sonde_calltrace__limits(struct sonde_calltrace *ct, uint64_t max_slices, uint64_t min_time_ns)
{
	ct->a.max_slices = max_slices;
	ct->a.min_time_ns = min_time_ns;
}

static int set_regex(regex_t *re, bool *has, const char *s)
{
	if (!s)
		return 0;
	if (*has)
		regfree(re);
	*has = false;
	if (regcomp(re, s, REG_EXTENDED | REG_NOSUB))
		return -EINVAL;
	*has = true;
	return 0;
}

int sonde_calltrace__filter(struct sonde_calltrace *ct, const char *filter, const char *exclude)
{
	if (ct->a.nfuncs)
		return -EBUSY;
	if (set_regex(&ct->a.filter, &ct->a.has_filter, filter))
		return -EINVAL;
	return set_regex(&ct->a.exclude, &ct->a.has_exclude, exclude);
}

int sonde_calltrace__func(struct sonde_calltrace *ct, const char *module, uint64_t line,
			  const char *name, uint32_t *id)
{
	return tr_analysis__func(&ct->a, module ? module : "?", line, name ? name : "?", id);
}

static struct tr_thread *thread(struct sonde_calltrace *ct, uint32_t tid)
{
	struct tr_thread *t;

	if (ct->err || ct->done)
		return NULL;
	t = tr_feed__thread(ct->feed, ct->serial, ct->pid, tid);
	if (!t)
		ct->err = -ENOMEM;
	return t;
}

int sonde_calltrace__thread_name(struct sonde_calltrace *ct, uint32_t tid, const char *name)
{
	struct tr_thread *t = thread(ct, tid);

	if (t)
		tr_feed__name(t, name);
	return ct->err;
}

int sonde_calltrace__enter(struct sonde_calltrace *ct, uint32_t tid, uint32_t id, uint64_t ns)
{
	struct tr_thread *t = thread(ct, tid);
	int rc;

	if (!t)
		return ct->err ? ct->err : -EINVAL;
	if (id >= ct->a.nfuncs || ct->a.sampled)
		return -EINVAL;
	rc = tr_feed__enter(ct->feed, t, id, ns);
	if (rc < 0)
		ct->err = rc;
	return rc < 0 ? rc : 0;
}

int sonde_calltrace__exit(struct sonde_calltrace *ct, uint32_t tid, uint64_t ns)
{
	struct tr_thread *t = thread(ct, tid);
	int rc;

	if (!t)
		return ct->err ? ct->err : -EINVAL;
	rc = tr_feed__exit(ct->feed, t, ns);
	if (rc < 0)
		ct->err = rc;
	return rc < 0 ? rc : 0;
}

int sonde_calltrace__size(struct sonde_calltrace *ct, uint32_t tid, uint64_t size)
{
	struct tr_thread *t = thread(ct, tid);

	if (!t)
		return ct->err ? ct->err : -EINVAL;
	tr_feed__size(t, size);
	return 0;
}

int sonde_calltrace__sampling(struct sonde_calltrace *ct, json_t *how)
{
	if (ct->a.t.calls || ct->a.nnodes > 1) {
		json_decref(how);
		return -EBUSY;
	}
	ct->a.sampled = true;
	json_decref(ct->a.sampling);
	ct->a.sampling = how;
	return 0;
}

int sonde_calltrace__sample(struct sonde_calltrace *ct, uint32_t tid, uint64_t ns,
			    uint64_t weight_ns, const uint32_t *ids, size_t n)
{
	struct tr_thread *t = thread(ct, tid);
	size_t i;
	int rc;

	if (!t)
		return ct->err ? ct->err : -EINVAL;
	if (!ct->a.sampled)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (ids[i] >= ct->a.nfuncs)
			return -EINVAL;
	rc = tr_feed__sample(ct->feed, t, ns, weight_ns, ids, n);
	if (rc < 0)
		ct->err = rc;
	return rc < 0 ? rc : 0;
}

int sonde_calltrace__engine_stat(struct sonde_calltrace *ct, const char *key, json_t *v)
{
	return json_object_set_new(ct->a.engine_stats, key, v) ? -ENOMEM : 0;
}

int sonde_calltrace__write(struct sonde_calltrace *ct, struct sonde_profile *p)
{
	int rc;

	if (ct->done)
		return -EINVAL;
	ct->done = true;
	rc = tr_feed__end(ct->feed, ct->err);
	ct->feed = NULL;
	return rc < 0 ? rc : tr_analysis__write(&ct->a, p);
}
