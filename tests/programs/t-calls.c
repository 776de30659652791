/* Trace collector target: exactly known calls. fib(N) makes 2*fib(N+1)-1 calls;
   is_even/is_odd recurse mutually 2*M+... times; leaf() is called K times;
   sized(n) reports its size through sonde_trace_size(). */
#include <stdio.h>
#include <stdlib.h>
#include <sonde/trace.h>

int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
int is_odd(unsigned n);
int is_even(unsigned n)
{
	return n == 0 ? 1 : is_odd(n - 1);
}
int is_odd(unsigned n)
{
	return n == 0 ? 0 : is_even(n - 1);
}
void leaf(void)
{
	__asm__ volatile("");
}
unsigned long sized(unsigned n)
{
	unsigned long s = 0;
	sonde_trace_size(n);
	for (unsigned i = 0; i < n * 100; i++)
		s += i;
	return s;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 15, k = argc > 2 ? atoi(argv[2]) : 100, i;
	unsigned long s = 0;

	printf("%d %d\n", fib(n), is_even(10));
	for (i = 0; i < k; i++)
		leaf();
	for (i = 1; i <= 5; i++)
		s += sized((unsigned)i * 10);
	return s == 0;
}
