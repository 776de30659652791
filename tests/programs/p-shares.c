/* Two functions burning known shares of the CPU: hot 70 %, warm 30 % (the same
   loop, 7 and 3 million turns a round). Arguments: rounds (200), and the
   millions of turns of warm (3). */
#include <stdlib.h>

__attribute__((noinline)) void hot(long n)
{
	for (long i = 0; i < n * 7; i++)
		__asm__ volatile("");
}

static long warm_turns = 3;

__attribute__((noinline)) void warm(long n)
{
	for (long i = 0; i < n * warm_turns; i++)
		__asm__ volatile("");
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200;

	if (argc > 2)
		warm_turns = atol(argv[2]);

	for (long r = 0; r < rounds; r++) {
		hot(1000000);
		warm(1000000);
	}
	return 0;
}
