/*
 * memwork.c - the allocation-heavy workload of bench/memory-overhead.sh.
 *
 * Two threads; each makes ITER allocations of mixed sizes (16 B to 64 KiB, most
 * small) from call depths between 4 and 19, keeps a window of 256 live blocks
 * (each new block replaces a random old one, which is freed), and every fourth
 * block is freed at once (a temporary). Every block is freed by the end, so
 * the event count is exactly 2 * threads * ITER.
 * Usage: memwork [ITER]   (default 750000: 3 million events)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 256

struct worker {
	unsigned long iter;
	uint64_t seed;
	void *live[WINDOW];
	unsigned long checksum;
};

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t pick_size(uint64_t r)
{
	unsigned k = (unsigned)(r % 100);

	if (k < 70)
		return 16 + (r >> 8) % 240; /* small */
	if (k < 95)
		return 256 + (r >> 8) % 3840; /* medium */
	return 4096 + (r >> 8) % 61440;	      /* large */
}

static __attribute__((noinline)) void leaf(struct worker *w, uint64_t r)
{
	size_t n = pick_size(r);
	char *p = malloc(n);
	unsigned slot;

	if (!p)
		abort();
	p[0] = (char)r;
	w->checksum += (unsigned char)p[0];
	if ((r & 3) == 0) { /* a temporary */
		free(p);
		return;
	}
	slot = (unsigned)(r >> 40) % WINDOW;
	free(w->live[slot]);
	w->live[slot] = p;
}

static __attribute__((noinline)) void descend(struct worker *w, unsigned depth, uint64_t r)
{
	if (depth == 0) {
		leaf(w, r);
		return;
	}
	descend(w, depth - 1, r);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
}

static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned long i;

	for (i = 0; i < w->iter; i++) {
		uint64_t r = next(&w->seed);

		descend(w, 4 + (unsigned)(r >> 56) % 16, r);
	}
	for (i = 0; i < WINDOW; i++)
		free(w->live[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long iter = argc > 1 ? strtoul(argv[1], NULL, 10) : 750000;
	struct worker w[2];
	pthread_t t[2];
	int i;

	memset(w, 0, sizeof(w));
	for (i = 0; i < 2; i++) {
		w[i].iter = iter;
		w[i].seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
		if (pthread_create(&t[i], NULL, run, &w[i]))
			return 1;
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%lu\n", w[0].checksum + w[1].checksum);
	return 0;
}
