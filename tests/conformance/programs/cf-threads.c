/*
 * cf-threads.c - N threads (argv[1], default 8) alive at once, each making
 * argv[2] (default 10) calls that allocate and free one block.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int calls = 10;
static pthread_barrier_t all_started;
volatile long sink;

__attribute__((noinline)) void step(int i)
{
	char *p = malloc(64 + (size_t)i);

	p[0] = (char)i;
	sink += p[0];
	free(p);
}

__attribute__((noinline)) void *worker(void *arg)
{
	int i;

	(void)arg;
	step(0);
	pthread_barrier_wait(&all_started); /* every thread is alive here */
	for (i = 1; i < calls; i++)
		step(i);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, i;
	pthread_t *t;

	if (argc > 2)
		calls = atoi(argv[2]);
	t = malloc(sizeof(*t) * (size_t)n);
	pthread_barrier_init(&all_started, NULL, (unsigned)n);
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, NULL)) {
			perror("pthread_create");
			return 1;
		}
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&all_started);
	free(t);
	return 0;
}
