/*
 * gpu.c - libsonde-gpu.so, the gpu collector's runtime inside a CUDA program.
 *
 * sonde names it in CUDA_INJECTION64_PATH: the NVIDIA driver loads it when the
 * program initialises CUDA (cuInit, which the runtime API calls for it) and
 * calls InitializeInjection, so a program that never uses CUDA never loads it
 * and nothing in the program needs changing. It loads CUPTI (the path sonde
 * found, SONDE_GPU_CUPTI), enables the activity kinds of the level asked for,
 * and hands CUPTI buffers; each completed buffer is read into sonde's records
 * (proto/gpu.h) in one ring: kernel, API and NVTX names once each, before
 * their first use; allocations and releases of device memory; NVTX marks and
 * ranges (sonde names CUPTI in NVTX_INJECTION64_PATH); and a reading of both clocks with every
 * buffer so that sonde maps CUPTI's timestamps onto its own. At exit it flushes what CUPTI holds
 * and says how many records CUPTI dropped. Where CUPTI refuses, the reason goes into the ring
 * (GPU_REC_STATUS) and the program runs on untouched.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sonde/ring.h>
#include "../common/rt.h"
#include "../../proto/gpu.h"

#define BUFFER_BYTES (4u << 20)
/* an API name's id: the top bit, the callback domain, the callback id */
#define API_NAME(domain, cbid) (0x80000000u | ((uint32_t)(domain) << 24) | (cbid))
#define CB_DOMAIN_DRIVER       1
#define CB_DOMAIN_RUNTIME      2

static struct {
	pthread_mutex_t lock;
	bool on;
	struct sonde_ring_area *area;
	struct sonde_ring_writer w;
	bool claimed;
	struct sonde_cupti_api_table api;
	int (*callback_name)(int domain, uint32_t cbid, const char **name);
	/* names already written: kernel name pointers and API name ids */
	uintptr_t *seen;
	uint32_t *seen_id;
	size_t nseen, capseen;
	uint32_t next_id;
	uint64_t unread; /* records of kinds sonde does not read */
} g = { .lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1 };

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ---- writing (under g.lock) --------------------------------------------------------------- */

static void put_status(int code, const char *what)
{
	const char *s = NULL;
	char text[512];
	size_t n;
	struct gpu_status *r;

	if (!g.claimed)
		return;
	if (code > 0 && g.api.get_result_string)
		g.api.get_result_string(code, &s);
	n = (size_t)snprintf(text, sizeof(text), "%s: %s", what,
			     s		? s
			     : code < 0 ? strerror(-code)
					: "unknown CUPTI error");
	if (n >= sizeof(text))
		n = sizeof(text) - 1;
	r = sonde_ring__reserve(&g.w, GPU_REC_STATUS, (uint32_t)rt_pad8(sizeof(*r) + n + 1));
	if (!r)
		return;
	r->code = code;
	memcpy(r->text, text, n);
	r->text[n] = 0;
	sonde_ring__commit(&g.w);
}

static void put_clock(void)
{
	uint64_t a = 0, b = 0, host;
	struct gpu_clock *r;

	if (!g.claimed || !g.api.get_timestamp || g.api.get_timestamp(&a))
		return;
	host = mono_ns();
	if (g.api.get_timestamp(&b))
		return;
	r = sonde_ring__reserve(&g.w, GPU_REC_CLOCK, sizeof(*r));
	if (!r)
		return;
	r->gpu_ns = a + (b - a) / 2;
	r->host_ns = host;
	r->spread_ns = b - a;
	sonde_ring__commit(&g.w);
}

/*
 * A name's id, its record written the first time (0: it could not be). The
 * key is a kernel name's address, or an API name's id with bit 63 set.
 */
static uint32_t name_id(uintptr_t key, const char *name)
{
	size_t i, n;
	struct gpu_name *r;

	for (i = 0; i < g.nseen; i++) /* a handful of kernels, most programs */
		if (g.seen[i] == key)
			return g.seen_id[i];
	if (g.nseen == g.capseen) {
		size_t cap = g.capseen ? 2 * g.capseen : 64;
		uintptr_t *s = realloc(g.seen, cap * sizeof(*s));
		uint32_t *d;

		if (!s)
			return 0;
		g.seen = s;
		d = realloc(g.seen_id, cap * sizeof(*d));
		if (!d)
			return 0;
		g.seen_id = d;
		g.capseen = cap;
	}
	n = strnlen(name ? name : "", 4096);
	r = sonde_ring__reserve(&g.w, GPU_REC_NAME, (uint32_t)rt_pad8(sizeof(*r) + n + 1));
	if (!r)
		return 0;
	r->id = key >> 63 ? (uint32_t)key : g.next_id++;
	memcpy(r->name, name ? name : "", n);
	r->name[n] = 0;
	sonde_ring__commit(&g.w);
	g.seen[g.nseen] = key;
	g.seen_id[g.nseen++] = r->id;
	return r->id;
}

static void put_copy(uint32_t type, const void *rec, size_t len)
{
	void *r = sonde_ring__reserve(&g.w, type, (uint32_t)rt_pad8(len));

	if (r) {
		memcpy((char *)r + 4, (const char *)rec + 4, len - 4);
		sonde_ring__commit(&g.w);
	}
}

static void put_record(const struct sonde_cupti_record *rec)
{
	union gpu_out o;
	struct gpu_act act;
	struct gpu_api api;
	void *r;
	int type = gpu_from_cupti(rec, &o);

	act = o.act;
	api = o.api;
	switch (type) {
	case GPU_REC_MARKER: {
		const struct sonde_cupti_marker *m = (const void *)rec;

		/* a range's end carries no name: its start had it */
		if (m->name && !(m->flags & SONDE_CUPTI_MARKER_END))
			o.marker.name = name_id((uintptr_t)m->name, m->name);
		put_copy(GPU_REC_MARKER, &o.marker, sizeof(o.marker));
		break;
	}
	case GPU_REC_MEMORY:
		put_copy(GPU_REC_MEMORY, &o.memory, sizeof(o.memory));
		break;
	case GPU_REC_ACT:
		if (act.kind == GPU_ACT_KERNEL) {
			const char *name =
				((const struct sonde_cupti_kernel *)(const void *)rec)->name;

			act.name = name_id((uintptr_t)name, name);
		}
		r = sonde_ring__reserve(&g.w, GPU_REC_ACT, (uint32_t)rt_pad8(sizeof(act)));
		if (r) {
			memcpy((char *)r + 4, (char *)&act + 4, sizeof(act) - 4);
			sonde_ring__commit(&g.w);
		}
		break;
	case GPU_REC_API: {
		int domain = api.driver ? CB_DOMAIN_DRIVER : CB_DOMAIN_RUNTIME;
		const char *name = NULL;
		uint32_t id = API_NAME(domain, api.cbid & 0xffffff);

		if (g.callback_name)
			g.callback_name(domain, api.cbid, &name);
		if (!name_id((1ull << 63) | id, name ? name : "?"))
			break;
		r = sonde_ring__reserve(&g.w, GPU_REC_API, (uint32_t)rt_pad8(sizeof(api)));
		if (r) {
			memcpy((char *)r + 4, (char *)&api + 4, sizeof(api) - 4);
			sonde_ring__commit(&g.w);
		}
		break;
	}
	default:
		g.unread++;
	}
}

/* ---- CUPTI's callbacks ---------------------------------------------------------------------- */

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	struct sonde_cupti_record *rec = NULL;

	(void)ctx, (void)stream, (void)size;
	pthread_mutex_lock(&g.lock);
	if (g.claimed && valid) {
		while (g.api.activity_get_next_record(buffer, valid, &rec) == SONDE_CUPTI_SUCCESS)
			put_record(rec);
		put_clock();
	}
	pthread_mutex_unlock(&g.lock);
	free(buffer);
}

static void at_exit(void)
{
	size_t dropped = 0;

	if (!g.on)
		return;
	g.api.activity_flush_all(SONDE_CUPTI_FLUSH_FORCED);
	pthread_mutex_lock(&g.lock);
	g.on = false;
	if (g.claimed) {
		struct gpu_dropped *r;

		put_clock();
		if (g.api.activity_get_num_dropped_records)
			g.api.activity_get_num_dropped_records(NULL, 0, &dropped);
		r = sonde_ring__reserve(&g.w, GPU_REC_DROPPED, sizeof(*r));
		if (r) {
			r->records = dropped;
			sonde_ring__commit(&g.w);
		}
		sonde_ring__retire(&g.w);
		g.claimed = false;
	}
	pthread_mutex_unlock(&g.lock);
}

/* ---- start ---------------------------------------------------------------------------------- */

static bool load_cupti(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		put_status(-ENOENT, "CUPTI did not load in the program");
		return false;
	}
#define GET(field, name) *(void **)&g.api.field = dlsym(h, name)
	GET(activity_enable, "cuptiActivityEnable");
	GET(activity_disable, "cuptiActivityDisable");
	GET(activity_register_callbacks, "cuptiActivityRegisterCallbacks");
	GET(activity_get_next_record, "cuptiActivityGetNextRecord");
	GET(activity_flush_all, "cuptiActivityFlushAll");
	GET(activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
	GET(get_timestamp, "cuptiGetTimestamp");
	GET(get_result_string, "cuptiGetResultString");
#undef GET
	*(void **)&g.callback_name = dlsym(h, "cuptiGetCallbackName");
	if (!g.api.activity_enable || !g.api.activity_register_callbacks ||
	    !g.api.activity_get_next_record || !g.api.activity_flush_all) {
		put_status(-ENOSYS, "CUPTI lacks the activity API");
		return false;
	}
	return true;
}

static bool enable(uint32_t kind, const char *what)
{
	int rc = g.api.activity_enable(kind);
	char buf[96];

	if (rc == SONDE_CUPTI_SUCCESS)
		return true;
	snprintf(buf, sizeof(buf), "cuptiActivityEnable(%s)", what);
	put_status(rc, buf);
	return false;
}

/* A forked child has the parent's ring, not its own: it records nothing (CUDA
   is not usable in it either until it execs). */
static void after_fork_child(void)
{
	pthread_mutex_init(&g.lock, NULL);
	g.on = false;
	g.claimed = false;
}

/* Called by the NVIDIA driver (CUDA_INJECTION64_PATH) when the program initialises CUDA. */
RT_EXPORT int InitializeInjection(void);
RT_EXPORT int InitializeInjection(void)
{
	const char *path, *cupti;
	unsigned level;
	int rc;
	bool ok = true;

	pthread_mutex_lock(&g.lock);
	if (g.on || g.area) {
		pthread_mutex_unlock(&g.lock);
		return 1;
	}
	path = getenv(GPU_ENV_RING);
	cupti = getenv(GPU_ENV_CUPTI);
	level = (unsigned)strtoul(getenv(GPU_ENV_LEVEL) ? getenv(GPU_ENV_LEVEL) : "3", NULL, 10);
	if (!path || !(g.area = sonde_ring_area__attach(path)) ||
	    !rt_claim_ring(g.area, sonde_ring_area__next_serial(g.area), &g.w)) {
		pthread_mutex_unlock(&g.lock);
		return 1; /* not run by sonde, or its rings are gone: the program runs on */
	}
	g.claimed = true;
	rt_emit_proc(&g.w, 0, mono_ns());
	if (!load_cupti(cupti ? cupti : "libcupti.so")) {
		pthread_mutex_unlock(&g.lock);
		return 1;
	}
	rc = g.api.activity_register_callbacks(buffer_requested, buffer_completed);
	if (rc != SONDE_CUPTI_SUCCESS) {
		put_status(rc, "cuptiActivityRegisterCallbacks");
		pthread_mutex_unlock(&g.lock);
		return 1;
	}
	if (level & GPU_LEVEL_KERNEL) {
		ok = enable(SONDE_CUPTI_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL") &&
		     enable(SONDE_CUPTI_KIND_MEMCPY, "MEMCPY") &&
		     enable(SONDE_CUPTI_KIND_MEMSET, "MEMSET") &&
		     enable(SONDE_CUPTI_KIND_SYNCHRONIZATION, "SYNCHRONIZATION");
	}
	if (ok && (level & GPU_LEVEL_API))
		ok = enable(SONDE_CUPTI_KIND_RUNTIME, "RUNTIME") &&
		     enable(SONDE_CUPTI_KIND_DRIVER, "DRIVER");
	/* what an older CUPTI may not have: said, and the rest recorded */
	if (ok && (level & GPU_LEVEL_KERNEL))
		enable(SONDE_CUPTI_KIND_MEMORY2, "MEMORY2");
	if (ok)
		enable(SONDE_CUPTI_KIND_MARKER, "MARKER");
	if (ok) {
		put_clock();
		g.on = true;
		atexit(at_exit);
		pthread_atfork(NULL, NULL, after_fork_child);
	}
	pthread_mutex_unlock(&g.lock);
	return 1;
}
