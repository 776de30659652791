/* cf-recurse.c - direct and mutual recursion, a loop of leaf calls. */
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) int is_odd(int n);

__attribute__((noinline)) int is_even(int n)
{
	return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noinline)) int is_odd(int n)
{
	return n == 0 ? 0 : is_even(n - 1);
}

__attribute__((noinline)) void leaf(int i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 12, i;

	sink = fib(n);
	sink += is_even(n);
	for (i = 0; i < 100; i++)
		leaf(i);
	printf("%ld\n", (long)sink);
	return 0;
}
