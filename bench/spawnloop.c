/*
 * spawnloop.c - the floor for bench/time-overhead.sh: N runs of a command with
 * posix_spawn + wait4 and nothing else. Prints the mean ns per run.
 *
 * usage: spawnloop N CMD [ARGS...]
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[1]) : 0, i;
	struct timespec a, b;
	struct rusage ru;
	int status;
	pid_t pid;

	if (n <= 0) {
		fprintf(stderr, "usage: spawnloop N CMD [ARGS...]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ))
			return 1;
		wait4(pid, &status, 0, &ru);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
