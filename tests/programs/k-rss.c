/* k-rss MB S: two threads, each on a CPU of its own where there are two, touch
 * MB mebibytes between them; once both are done the program prints its
 * resident size as the kernel sums it ("resident PAGES", from /proc/self/statm)
 * and sleeps S seconds, its memory unchanged (the threads wait in pause). */
#ifndef _GNU_SOURCE /* meson may define it */
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t done;
static size_t half;

static void *touch(void *arg)
{
	long cpu = (long)arg;
	cpu_set_t set;
	char *p;
	size_t i;

	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	if (sysconf(_SC_NPROCESSORS_ONLN) > cpu)
		sched_setaffinity(0, sizeof(set), &set);
	p = mmap(NULL, half, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	for (i = 0; i < half; i += 4096)
		p[i] = 1;
	pthread_barrier_wait(&done);
	for (;;)
		pause();
	return NULL;
}

/* the resident pages, into out as "resident PAGES\n"; its length, or -1 */
static int resident(char *out, size_t len)
{
	char buf[128];
	unsigned long size, res;
	ssize_t n;
	int fd;

	fd = open("/proc/self/statm", O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "%lu %lu", &size, &res) != 2)
		return -1;
	return snprintf(out, len, "resident %lu\n", res);
}

int main(int argc, char **argv)
{
	double s = argc > 2 ? atof(argv[2]) : 1;
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) }, none = { 0, 0 };
	char out[64];
	pthread_t t;
	long i;
	int n;

	half = (size_t)(argc > 1 ? atoi(argv[1]) : 8) << 19;
	/* everything done after the reading is done once before it, so that no
	   page of code or data is touched for the first time after it */
	if (resident(out, sizeof(out)) < 0 || write(1, out, 0) < 0)
		return 1;
	nanosleep(&none, NULL);
	pthread_barrier_init(&done, NULL, 3);
	for (i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, touch, (void *)i))
			return 1;
	pthread_barrier_wait(&done);
	n = resident(out, sizeof(out));
	if (n < 0 || write(1, out, (size_t)n) != n)
		return 1;
	nanosleep(&ts, NULL);
	return 0;
}
