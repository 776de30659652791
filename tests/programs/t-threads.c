/* Trace collector target: t-threads [N [CALLS]]: N threads (4), each calling
 * work() CALLS times (1000), all of them alive at once (a barrier holds each
 * until the last has started). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned long sink;
static unsigned long calls = 1000;
static pthread_barrier_t all_up;
void work(unsigned long i)
{
	sink += i;
}
void *worker(void *arg)
{
	pthread_barrier_wait(&all_up);
	for (unsigned long i = 0; i < calls; i++)
		work(i);
	return arg;
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_attr_t attr;
	pthread_t *t;

	if (argc > 2)
		calls = strtoul(argv[2], NULL, 10);
	t = calloc((size_t)n, sizeof(*t));
	if (!t || n < 1 || pthread_barrier_init(&all_up, NULL, (unsigned)n))
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], &attr, worker, NULL)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
