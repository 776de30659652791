/*
 * h-scribble [ROUNDS]: a hostile target. It finds the ring areas sonde shares
 * with it (the "sonde-rings" memfd in /proc/self/maps) and writes over them
 * while it makes events: all ones, pseudo-random bytes, then geometry fields
 * set to values that would send a trusting reader outside its buffers. Built
 * with -finstrument-functions, so trace and memory both record it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile unsigned long sink;

__attribute__((noinline)) void work(int i)
{
	char *p = malloc((size_t)(i % 512) + 1);

	p[0] = (char)i;
	sink += (unsigned long)p[0];
	free(p);
}

static void scribble(int round)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)round;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		uint64_t *w;
		size_t i, n;

		if (!strstr(line, "sonde-rings") || sscanf(line, "%lx-%lx", &lo, &hi) != 2 ||
		    !strstr(line, "rw"))
			continue;
		w = (uint64_t *)lo;
		n = (hi - lo) / 8;
		if (n > (4u << 20) / 8) /* the header, the descriptors, the first rings */
			n = (4u << 20) / 8;
		for (i = 0; i < n; i++) {
			if (round % 3 == 0) {
				w[i] = ~0ull;
			} else {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				w[i] = round % 3 == 1 ? x : (i < 16 ? (uint64_t)1 << 40 : w[i]);
			}
		}
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 6, r, i;

	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 2000; i++)
			work(i);
		scribble(r);
	}
	puts("scribbled");
	return 0;
}
