/*
 * m-threads.c [THREADS [N]] - THREADS threads (4), all live at once, each
 * making N allocations of 777 B (1000), every one freed.
 */
#include <pthread.h>
#include <stdlib.h>

static pthread_barrier_t all_live;
static int per_thread = 1000;

static void *work(void *arg)
{
	int i;

	(void)arg;
	pthread_barrier_wait(&all_live);
	for (i = 0; i < per_thread; i++)
		free(malloc(777)); /* THREAD-ALLOC */
	return NULL;
}

int main(int argc, char **argv)
{
	int i, n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t *t;

	if (argc > 2)
		per_thread = atoi(argv[2]);
	if (n < 1 || n > 4096 || per_thread < 0 || !(t = calloc((size_t)n, sizeof(*t))))
		return 2;
	pthread_barrier_init(&all_live, NULL, (unsigned)n);
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, work, NULL))
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
