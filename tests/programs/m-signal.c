/* m-signal.c - a signal handler that allocates, interrupting a loop that does. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t ticks;

static void on_alarm(int sig)
{
	(void)sig;
	free(malloc(55)); /* HANDLER */
	ticks++;
}

int main(void)
{
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	struct sigaction sa;
	long i;

	/* glibc's malloc is not async-signal-safe: a handler that interrupts its
	   first call (tcache_init, under the arena lock) deadlocks, sonde or not.
	   Both sizes once first: then both calls take the thread cache, lock-free. */
	free(malloc(44));
	free(malloc(55));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < 200000 || ticks < 20; i++)
		free(malloc(44)); /* LOOP */
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	return 0;
}
