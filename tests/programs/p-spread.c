/* Work in a thread (spin_b), in the main thread (spin_a) and in a forked child (in_child). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) void spin_a(long n)
{
	for (long i = 0; i < n; i++)
		__asm__ volatile("");
}

__attribute__((noinline)) void spin_b(long n)
{
	for (long i = 0; i < n; i++)
		__asm__ volatile("");
}

__attribute__((noinline)) void in_child(long n)
{
	for (long i = 0; i < n; i++)
		__asm__ volatile("");
}

static void *worker(void *arg)
{
	(void)arg;
	spin_b(200000000);
	return NULL;
}

int main(void)
{
	pthread_t t;
	pid_t c = fork();

	if (c == 0) {
		in_child(200000000);
		_exit(0);
	}
	pthread_create(&t, NULL, worker, NULL);
	spin_a(200000000);
	pthread_join(t, NULL);
	waitpid(c, NULL, 0);
	return 0;
}
