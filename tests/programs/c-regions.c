/* c-regions R K: R executions of region "touch", each touching K fresh pages
 * (K page faults), inside one "outer" region; one thread runs "side" once. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sonde/counters.h>

static long pg;

static void touch(long k)
{
	volatile char *p = mmap(NULL, (size_t)(k * pg), PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long i;

	if (p == MAP_FAILED)
		exit(1);
	madvise((void *)p, (size_t)(k * pg), MADV_NOHUGEPAGE);
	sonde_region_begin("touch");
	for (i = 0; i < k; i++)
		p[i * pg] = 1;
	sonde_region_end();
	munmap((void *)p, (size_t)(k * pg));
}

static void *side(void *arg)
{
	(void)arg;
	sonde_region_begin("side");
	touch(3);
	sonde_region_end();
	return NULL;
}

int main(int argc, char **argv)
{
	long r = argc > 1 ? atol(argv[1]) : 5, k = argc > 2 ? atol(argv[2]) : 16, i;
	pthread_t t;

	pg = sysconf(_SC_PAGESIZE);
	sonde_region_begin("outer");
	for (i = 0; i < r; i++)
		touch(k);
	sonde_region_end();
	if (pthread_create(&t, NULL, side, NULL) || pthread_join(t, NULL))
		return 1;
	return 0;
}
