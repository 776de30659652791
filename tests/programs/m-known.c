/* m-known.c - allocations with exactly known counts, sizes, lines and leaks. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void *early, *leak_a, *leak_b;

__attribute__((constructor)) static void before_main(void)
{
	early = calloc(4, 8); /* EARLY: 32 B, freed in main */
}

static void *make(size_t n)
{
	return malloc(n); /* MAKE */
}

int main(void)
{
	void *p;
	int i;

	for (i = 0; i < 7; i++)
		free(make(100)); /* LOOP: 7 temporaries of 100 B */
	leak_a = malloc(1000);	 /* LEAK-A */
	leak_b = calloc(10, 30); /* LEAK-B: 300 B */
	p = malloc(10);		 /* CHAIN-0 */
	p = realloc(p, 20);	 /* CHAIN-1 */
	p = realloc(p, 40);	 /* CHAIN-2 */
	free(p);
	if (posix_memalign(&p, 64, 64) == 0) /* MEMALIGN */
		free(p);
	free(aligned_alloc(32, 96)); /* ALIGNED */
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* MMAP */
	if (p != MAP_FAILED)
		munmap(p, 8192); /* MUNMAP */
	free(early);
	leak_a = leak_b = NULL; /* lose them */
	return 0;
}
