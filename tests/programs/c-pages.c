/* c-pages N: map N fresh pages (no huge pages) and touch each once: N page
 * faults more than c-pages 0. */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, pg = sysconf(_SC_PAGESIZE), i;
	volatile char *p;

	if (n <= 0)
		return 0;
	p = mmap(NULL, (size_t)(n * pg), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED)
		return 1;
	madvise((void *)p, (size_t)(n * pg), MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[i * pg] = 1;
	return 0;
}
