/* m-threads.c - 4 threads, 1000 allocations of 777 B each, all freed. */
#include <pthread.h>
#include <stdlib.h>

static void *work(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 1000; i++)
		free(malloc(777)); /* THREAD-ALLOC */
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}
