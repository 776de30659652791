/*
 * _pymem.c - sampled allocations of the Python allocator (see _pymem.h).
 *
 * The hook runs inside every allocation of the two domains, holding the GIL
 * (their contract), so its state is one global guarded by the GIL. What it
 * does for a sample (name the function, read nodes, hand the event over) may
 * allocate itself: a thread-local flag keeps those allocations out of it.
 * Sampled blocks are remembered (address -> size) until their free; every
 * other free costs one lookup in that small map.
 */
#include "_pymem.h"
#include <errno.h>
#include <math.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "u64map.h"

static struct {
	bool on, numa;
	bool chained[2]; /* ours is in the domain's chain (left there under another hook) */
	PyMemAllocatorEx old[2], mine[2]; /* PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ */
	double interval, left;
	uint64_t rng;
	uintptr_t page_mask;
	py_mem_here_fn here;
	py_mem_event_fn event;
	void *ctx;
	struct u64map blocks; /* sampled and live: address -> size */
	struct py_mem_stats st;
} g;

static __thread bool busy; /* in the hook's own work: its allocations are not the program's */

static const PyMemAllocatorDomain domains[2] = { PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ };

/* The next gap (bytes): exponential with mean interval (xorshift64*). */
static double gap(void)
{
	double u;

	g.rng ^= g.rng >> 12;
	g.rng ^= g.rng << 25;
	g.rng ^= g.rng >> 27;
	u = (double)((g.rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0; /* [0, 1) */
	return -g.interval * log(1.0 - u);
}

static int32_t page_node(const void *p)
{
	void *page = (void *)((uintptr_t)p & g.page_mask);
	int status = -1;

	if (!g.numa || numa_move_pages(0, 1, &page, NULL, &status, 0) || status < 0)
		return -1;
	return status;
}

static void seen(void *p, size_t n)
{
	uint32_t func = UINT32_MAX;
	double w;
	int cpu;

	g.st.allocations++;
	g.st.bytes += n;
	g.left -= (double)n;
	if (g.left > 0 || busy)
		return;
	busy = true;
	g.left = gap();
	/* sampled with probability 1 - exp(-n / interval): it stands for n over that */
	w = (double)n / -expm1(-(double)n / g.interval);
	if (g.here(g.ctx, &func))
		func = UINT32_MAX;
	if (!u64map__put(&g.blocks, (uint64_t)(uintptr_t)p, n)) {
		cpu = g.numa ? sched_getcpu() : -1;
		g.st.sampled++;
		g.event(g.ctx, SONDE_MEMSAMPLE_ALLOC, func, (uint64_t)(uintptr_t)p, n, w,
			page_node(p), cpu >= 0 ? numa_node_of_cpu(cpu) : -1);
	}
	busy = false;
}

static void gone(void *p)
{
	uint64_t size;

	if (!u64map__take(&g.blocks, (uint64_t)(uintptr_t)p, &size))
		return;
	g.st.frees++;
	g.event(g.ctx, SONDE_MEMSAMPLE_FREE, UINT32_MAX, (uint64_t)(uintptr_t)p, size, 0,
		page_node(p), -1);
}

static void *w_malloc(void *ctx, size_t n)
{
	PyMemAllocatorEx *o = ctx;
	void *p = o->malloc(o->ctx, n);

	if (p && g.on)
		seen(p, n);
	return p;
}

static void *w_calloc(void *ctx, size_t k, size_t n)
{
	PyMemAllocatorEx *o = ctx;
	void *p = o->calloc(o->ctx, k, n);

	if (p && g.on)
		seen(p, k * n);
	return p;
}

static void *w_realloc(void *ctx, void *p, size_t n)
{
	PyMemAllocatorEx *o = ctx;
	void *q = o->realloc(o->ctx, p, n);

	if (q && g.on) { /* the old block is gone (its free first), a new one is there */
		if (p && g.blocks.n)
			gone(p);
		seen(q, n);
	}
	return q;
}

static void w_free(void *ctx, void *p)
{
	PyMemAllocatorEx *o = ctx;

	if (p && g.on && g.blocks.n && !busy)
		gone(p);
	o->free(o->ctx, p);
}

json_t *py_mem__numa(void)
{
	json_t *nodes;
	int n, max;

	if (numa_available() < 0)
		return json_pack("{s:s}", "not_supported",
				 "libnuma: the kernel has no NUMA support (get_mempolicy failed)");
	nodes = json_array();
	max = numa_max_node();
	for (n = 0; nodes && n <= max; n++)
		if (numa_bitmask_isbitset(numa_nodes_ptr, (unsigned)n))
			json_array_append_new(nodes, json_integer(n));
	return json_pack("{s:o, s:s}", "nodes", nodes, "source",
			 "libnuma: move_pages (a page's node), numa_node_of_cpu");
}

int py_mem__start(uint64_t interval, bool numa, py_mem_here_fn here, py_mem_event_fn event,
		  void *ctx, char *why, size_t whylen)
{
	int d;

	if (g.on)
		return -EBUSY;
	if (why && whylen)
		why[0] = 0;
	u64map__release(&g.blocks);
	memset(&g.st, 0, sizeof(g.st));
	g.interval = (double)(interval ? interval : PY_MEM_INTERVAL);
	{ /* a seed of its own each time: runs are independent samples */
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		g.rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^
			(uint64_t)t.tv_sec * 1000000000u ^ (uint64_t)t.tv_nsec;
		g.rng = g.rng ? g.rng : 1;
	}
	g.left = gap();
	g.page_mask = ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
	g.here = here;
	g.event = event;
	g.ctx = ctx;
	g.numa = numa && numa_available() >= 0;
	if (numa && !g.numa && why)
		snprintf(why, whylen, "libnuma: the kernel has no NUMA support");
	for (d = 0; d < 2; d++) {
		if (g.chained[d]) /* still under another hook since the last stop: on again */
			continue;
		PyMem_GetAllocator(domains[d], &g.old[d]);
		g.mine[d] = (PyMemAllocatorEx){ &g.old[d], w_malloc, w_calloc, w_realloc, w_free };
	}
	g.on = true;
	for (d = 0; d < 2; d++)
		if (!g.chained[d]) {
			PyMem_SetAllocator(domains[d], &g.mine[d]);
			g.chained[d] = true;
		}
	return 0;
}

bool py_mem__busy(void)
{
	return g.on;
}

static bool ours(PyMemAllocatorDomain dom, int d)
{
	PyMemAllocatorEx cur;

	PyMem_GetAllocator(dom, &cur);
	return cur.malloc == w_malloc && cur.ctx == &g.old[d];
}

void py_mem__stop(struct py_mem_stats *st)
{
	size_t i;
	int d;

	if (!g.on)
		return;
	/* blocks still live: their node now */
	busy = true;
	for (i = 0; i < g.blocks.cap; i++)
		if (g.blocks.k[i] != U64MAP_EMPTY)
			g.event(g.ctx, SONDE_MEMSAMPLE_LIVE, UINT32_MAX, g.blocks.k[i],
				g.blocks.v[i], 0, page_node((void *)(uintptr_t)g.blocks.k[i]), -1);
	busy = false;
	g.on = false;
	/* put the allocators back, unless another hook (tracemalloc) went on over ours:
	   then ours stays, forwarding only */
	for (d = 0; d < 2; d++)
		if (ours(domains[d], d)) {
			PyMem_SetAllocator(domains[d], &g.old[d]);
			g.chained[d] = false;
		}
	u64map__release(&g.blocks);
	if (st)
		*st = g.st;
}
