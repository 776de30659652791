/*
 * analysis.c - CUPTI's clock onto sonde's, and what GPU activity adds up to:
 * per kernel, per stream (busy and overlapped time), per copy direction.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../../u64map.h"
#include "gpu.h"

int sonde_gpu_clock__fit(const struct gpu_clock *p, size_t n, struct sonde_gpu_clock *out)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, worst = 0, spread = 0;
	size_t i;

	if (!n)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->gpu0 = p[0].gpu_ns, out->host0 = p[0].host_ns, out->rate = 1, out->pairs = n;
	/* in doubles relative to the first pair: exact to well below a ns over days */
	for (i = 0; i < n; i++) {
		double x = (double)(int64_t)(p[i].gpu_ns - out->gpu0);
		double y = (double)(int64_t)(p[i].host_ns - out->host0);

		sx += x, sy += y, sxx += x * x, sxy += x * y;
		if ((double)p[i].spread_ns > spread)
			spread = (double)p[i].spread_ns;
	}
	if (n > 1) {
		double d = (double)n * sxx - sx * sx;

		if (d > 0) {
			double rate = ((double)n * sxy - sx * sy) / d;
			double b = (sy - rate * sx) / (double)n;

			/* a rate far from 1 is not a clock: keep the offset alone */
			if (rate > 0.99 && rate < 1.01) {
				out->rate = rate;
				out->host0 += (uint64_t)(int64_t)llround(b);
			}
		}
	}
	if (out->rate == 1 && n > 1) {
		/* the mean offset */
		out->host0 = p[0].host_ns + (uint64_t)(int64_t)llround((sy - sx) / (double)n);
	}
	for (i = 0; i < n; i++) {
		double r = fabs(
			(double)(int64_t)(sonde_gpu_clock__map(out, p[i].gpu_ns) - p[i].host_ns));

		if (r > worst)
			worst = r;
	}
	out->uncertainty_ns = worst + spread;
	return 0;
}

const char *sonde_gpu__copy_name(unsigned kind)
{
	static const char *const names[] = { "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					     "AtoD",	"DtoA", "DtoD", "HtoH", "PtoP" };

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

void sonde_gpu_analysis__free(struct sonde_gpu_analysis *a)
{
	free(a->kernels);
	free(a->streams);
	free(a->copies);
	memset(a, 0, sizeof(*a));
}

static double dur(const struct gpu_act *a)
{
	return a->end > a->start ? (double)(a->end - a->start) : 0;
}

/* ---- per stream: a sweep over each device's work ----------------------------------------------
 */

struct edge {
	uint64_t t;
	uint32_t stream; /* index into the analysis's streams */
	int delta;	 /* +1 start, -1 end */
};

static int edge_cmp(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->delta - y->delta; /* ends before starts: touching is not overlapping */
}

static int stream_cmp(const void *a, const void *b)
{
	const struct sonde_gpu_stream_stats *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->context != y->context)
		return x->context < y->context ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return 0;
}

static int find_stream(const struct sonde_gpu_analysis *a, const struct gpu_act *x)
{
	struct sonde_gpu_stream_stats key = { .device = x->device,
					      .context = x->context,
					      .stream = x->stream };
	const struct sonde_gpu_stream_stats *s =
		bsearch(&key, a->streams, a->nstreams, sizeof(key), stream_cmp);

	return s ? (int)(s - a->streams) : -1;
}

/*
 * One pass over the edges of all devices' work (streams are sorted by device,
 * so a device's streams are a range): a stream's busy time is the union of its
 * work; its overlapped time, the part of that when another stream of its
 * device ran too, is read off a per-device clock that only runs while two or
 * more streams are busy.
 */
struct dev_state {
	unsigned nact;	 /* streams of the device with work running */
	uint64_t prev;	 /* the device's last edge */
	double cum_over; /* time so far with two or more streams busy */
};

static int sweep(struct sonde_gpu_analysis *a, const struct gpu_act *acts, size_t n)
{
	struct edge *e = malloc(2 * (n ? n : 1) * sizeof(*e));
	size_t ns = a->nstreams ? a->nstreams : 1;
	unsigned *active = calloc(ns, sizeof(*active));
	uint64_t *since = calloc(ns, sizeof(*since));
	double *since_over = calloc(ns, sizeof(*since_over));
	struct dev_state *dev = calloc(ns, sizeof(*dev)); /* by the device's first stream */
	size_t *first = calloc(ns, sizeof(*first));
	size_t ne = 0, i;
	int rc = -ENOMEM;

	if (!e || !active || !since || !since_over || !dev || !first)
		goto out;
	for (i = 0; i < a->nstreams; i++)
		first[i] = i && a->streams[i - 1].device == a->streams[i].device ? first[i - 1] : i;
	for (i = 0; i < n; i++) {
		int k;

		if (acts[i].kind == GPU_ACT_SYNC || acts[i].end <= acts[i].start)
			continue;
		k = find_stream(a, &acts[i]);
		if (k < 0)
			continue;
		e[ne++] = (struct edge){ acts[i].start, (uint32_t)k, +1 };
		e[ne++] = (struct edge){ acts[i].end, (uint32_t)k, -1 };
	}
	qsort(e, ne, sizeof(*e), edge_cmp);
	for (i = 0; i < ne; i++) {
		uint32_t k = e[i].stream;
		struct dev_state *d = &dev[first[k]];
		struct sonde_gpu_stream_stats *s = &a->streams[k];

		if (d->nact) {
			double dt = (double)(e[i].t - d->prev);

			a->busy_ns += dt;
			if (d->nact > 1) {
				a->concurrent_ns += dt;
				d->cum_over += dt;
			}
		}
		d->prev = e[i].t;
		if (e[i].delta > 0) {
			if (!active[k]++) {
				d->nact++;
				since[k] = e[i].t;
				since_over[k] = d->cum_over;
			}
		} else if (active[k] && !--active[k]) {
			d->nact--;
			s->busy_ns += (double)(e[i].t - since[k]);
			s->overlapped_ns += d->cum_over - since_over[k];
		}
	}
	rc = 0;
out:
	free(e);
	free(active);
	free(since);
	free(since_over);
	free(dev);
	free(first);
	return rc;
}

/* ---- the whole analysis ------------------------------------------------------------------------
 */

static int kernel_cmp(const void *a, const void *b)
{
	const struct sonde_gpu_kernel_stats *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

int sonde_gpu__analyse(const struct gpu_act *acts, size_t n, struct sonde_gpu_analysis *a)
{
	struct u64map names = { 0 }; /* kernel name id -> its row */
	size_t i, j;

	memset(a, 0, sizeof(*a));
	a->kernels = calloc(n ? n : 1, sizeof(*a->kernels));
	a->streams = calloc(n ? n : 1, sizeof(*a->streams));
	a->copies = calloc(SONDE_CUPTI_COPY_PTOP + 1, sizeof(*a->copies));
	if (!a->kernels || !a->streams || !a->copies)
		goto nomem;
	/* the streams: distinct (device, context, stream) of the work */
	for (i = 0; i < n; i++) {
		struct sonde_gpu_stream_stats key = { .device = acts[i].device,
						      .context = acts[i].context,
						      .stream = acts[i].stream };

		if (acts[i].kind == GPU_ACT_SYNC)
			continue;
		a->streams[a->nstreams++] = key;
	}
	qsort(a->streams, a->nstreams, sizeof(*a->streams), stream_cmp);
	for (i = j = 0; i < a->nstreams; i++)
		if (!j || stream_cmp(&a->streams[j - 1], &a->streams[i]))
			a->streams[j++] = a->streams[i];
	a->nstreams = j;
	for (i = 0; i < a->nstreams; i++)
		a->streams[i].first_ns = INFINITY, a->streams[i].last_ns = -INFINITY;

	for (i = 0; i < n; i++) {
		const struct gpu_act *x = &acts[i];
		double d = dur(x);
		int k;

		if (x->kind == GPU_ACT_SYNC) {
			a->syncs++;
			a->sync_ns += d;
			continue;
		}
		k = find_stream(a, x);
		if (k >= 0) {
			struct sonde_gpu_stream_stats *s = &a->streams[k];

			s->kernels += x->kind == GPU_ACT_KERNEL;
			s->copies += x->kind == GPU_ACT_MEMCPY;
			s->memsets += x->kind == GPU_ACT_MEMSET;
			if ((double)x->start < s->first_ns)
				s->first_ns = (double)x->start;
			if ((double)x->end > s->last_ns)
				s->last_ns = (double)x->end;
		}
		if (x->kind == GPU_ACT_MEMCPY) {
			unsigned c = x->sub <= SONDE_CUPTI_COPY_PTOP ? x->sub : 0;

			a->copies[c].kind = (uint8_t)c;
			a->copies[c].count++;
			a->copies[c].bytes += x->bytes;
			a->copies[c].total_ns += d;
		}
		if (x->kind == GPU_ACT_KERNEL) {
			struct sonde_gpu_kernel_stats *ks;
			bool seen;
			uint64_t *slot = u64map__upsert(&names, x->name, &seen);

			if (!slot)
				goto nomem;
			if (!seen) {
				*slot = a->nkernels;
				ks = &a->kernels[a->nkernels++];
				ks->name = x->name;
				ks->min_ns = INFINITY;
			}
			ks = &a->kernels[*slot];
			ks->count++;
			ks->total_ns += d;
			if (d < ks->min_ns)
				ks->min_ns = d;
			if (d > ks->max_ns)
				ks->max_ns = d;
		}
	}
	qsort(a->kernels, a->nkernels, sizeof(*a->kernels), kernel_cmp);
	/* the copy kinds that occurred, packed */
	for (i = j = 0; i <= SONDE_CUPTI_COPY_PTOP; i++)
		if (a->copies[i].count)
			a->copies[j++] = a->copies[i];
	a->ncopies = j;
	u64map__release(&names);
	if (sweep(a, acts, n))
		goto nomem;
	return 0;
nomem:
	u64map__release(&names);
	sonde_gpu_analysis__free(a);
	return -ENOMEM;
}

/* ---- NVTX ranges ------------------------------------------------------------------------------
 */

static int range_cmp(const void *a, const void *b)
{
	const struct sonde_gpu_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int sonde_gpu__ranges(const struct gpu_marker *m, size_t n, struct sonde_gpu_range **out,
		      size_t *nout, size_t *unpaired)
{
	struct u64map open = { 0 }; /* range id -> its start's index + 1 */
	struct sonde_gpu_range *r = calloc(n ? n : 1, sizeof(*r));
	size_t i, k = 0;

	*out = NULL, *nout = 0, *unpaired = 0;
	if (!r)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint64_t at;

		if (m[i].flags & SONDE_CUPTI_MARKER_INSTANTANEOUS) {
			r[k++] = (struct sonde_gpu_range){ m[i].pid, m[i].tid, m[i].name, m[i].ts,
							   m[i].ts };
		} else if (m[i].flags & SONDE_CUPTI_MARKER_START) {
			if (u64map__put(&open, m[i].id, i + 1))
				goto nomem;
		} else if ((m[i].flags & SONDE_CUPTI_MARKER_END) &&
			   u64map__take(&open, m[i].id, &at)) {
			const struct gpu_marker *s = &m[at - 1];

			r[k++] = (struct sonde_gpu_range){ s->pid, s->tid, s->name, s->ts,
							   m[i].ts > s->ts ? m[i].ts : s->ts };
		}
	}
	*unpaired = open.n;
	u64map__release(&open);
	qsort(r, k, sizeof(*r), range_cmp);
	*out = r, *nout = k;
	return 0;
nomem:
	u64map__release(&open);
	free(r);
	return -ENOMEM;
}

/* ---- device memory ----------------------------------------------------------------------------
 */

struct mem_step {
	uint64_t ts;
	size_t i;
};

static int step_cmp(const void *a, const void *b)
{
	const struct mem_step *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i; /* stable */
}

int sonde_gpu__memory(const struct gpu_memory *m, size_t n, struct sonde_gpu_memory_stats **out,
		      size_t *nout, uint64_t *live, size_t *order)
{
	struct mem_step *st = malloc((n ? n : 1) * sizeof(*st));
	struct sonde_gpu_memory_stats *d = calloc(n ? n : 1, sizeof(*d));
	uint64_t *cur = calloc(n ? n : 1, sizeof(*cur)); /* live bytes per device row */
	struct u64map sizes = { 0 };			 /* address -> bytes allocated */
	size_t nd = 0, i, j;

	*out = NULL, *nout = 0;
	if (!st || !d || !cur)
		goto nomem;
	for (i = 0; i < n; i++)
		st[i] = (struct mem_step){ m[i].ts, i };
	qsort(st, n, sizeof(*st), step_cmp);
	for (i = 0; i < n; i++) {
		const struct gpu_memory *x = &m[st[i].i];

		for (j = 0; j < nd && d[j].device != x->device; j++)
			;
		if (j == nd)
			d[nd++].device = x->device;
		if (!x->release) {
			d[j].allocations++;
			d[j].bytes_allocated += x->bytes;
			cur[j] += x->bytes;
			if (u64map__put(&sizes, x->address, x->bytes))
				goto nomem;
			if (cur[j] > d[j].peak)
				d[j].peak = cur[j];
		} else {
			uint64_t b = x->bytes;

			d[j].releases++;
			/* a release of memory allocated before recording began is not live */
			if (u64map__take(&sizes, x->address, &b))
				cur[j] -= b <= cur[j] ? b : cur[j];
		}
		if (live)
			live[i] = cur[j];
		if (order)
			order[i] = st[i].i;
	}
	for (j = 0; j < nd; j++)
		d[j].live_end = cur[j];
	u64map__release(&sizes);
	free(st);
	free(cur);
	*out = d, *nout = nd;
	return 0;
nomem:
	u64map__release(&sizes);
	free(st);
	free(cur);
	free(d);
	return -ENOMEM;
}
