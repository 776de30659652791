/* Half of its time on the CPU (burn), half asleep (nap): 50 rounds of 10 ms each. */
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void burn(double s)
{
	double end = now() + s;

	while (now() < end)
		__asm__ volatile("");
}

__attribute__((noinline)) void nap(double s)
{
	struct timespec t = { 0, (long)(s * 1e9) };

	nanosleep(&t, NULL);
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 50;

	for (int r = 0; r < rounds; r++) {
		burn(0.01);
		nap(0.01);
	}
	return 0;
}
