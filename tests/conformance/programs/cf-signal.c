/* cf-signal.c - a signal handler that calls functions, raised from inside a call. */
#include <signal.h>
#include <stdio.h>

volatile sig_atomic_t got;
volatile int sink;

__attribute__((noinline)) void in_handler(int sig)
{
	sink += sig;
}

__attribute__((noinline)) void handler(int sig)
{
	in_handler(sig);
	got++;
}

__attribute__((noinline)) void raiser(void)
{
	raise(SIGUSR1);
	sink++;
}

int main(void)
{
	int i;

	signal(SIGUSR1, handler);
	for (i = 0; i < 3; i++)
		raiser();
	return got == 3 ? 0 : 1;
}
