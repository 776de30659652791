/*
 * r-work [RANK] - a rank's known work: (RANK + 1) * 100 allocations of
 * 1000 B, each freed, and (RANK + 1) * 20 ms of CPU. RANK is the argument,
 * else the launcher's (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, RANK),
 * else 0: the same rank run alone and under a launcher does the same work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK" };

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *r = argc > 1 ? argv[1] : NULL;
	volatile unsigned long sink = 0;
	long rank, i;
	double until;

	for (i = 0; !r && i < 4; i++)
		r = getenv(vars[i]);
	rank = r ? atol(r) : 0;
	for (i = 0; i < (rank + 1) * 100; i++) {
		char *p = malloc(1000);

		if (!p)
			return 1;
		p[0] = (char)i;
		sink += (unsigned char)p[0];
		free(p);
	}
	until = cpu_s() + 0.02 * (double)(rank + 1);
	while (cpu_s() < until)
		sink++;
	printf("rank %ld\n", rank);
	return 0;
}
