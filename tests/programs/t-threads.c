/* Trace collector target: 4 threads, each calling work() 1000 times. */
#include <pthread.h>
#include <stdio.h>
static volatile unsigned long sink;
void work(unsigned long i)
{
	sink += i;
}
void *worker(void *arg)
{
	for (unsigned long i = 0; i < 1000; i++)
		work(i);
	return arg;
}
int main(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}
