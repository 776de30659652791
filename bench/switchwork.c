/* switchwork [N]: a context-switch-heavy workload for bench/sched-overhead.sh:
 * a parent and a child pass a byte back and forth N times (default 200000)
 * through two pipes; prints its own elapsed time in ns. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000, i;
	int a[2], b[2];
	long long t0 = now();
	char c = 'x';
	pid_t pid;

	if (pipe(a) || pipe(b))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	for (i = 0; i < n; i++) {
		if (pid == 0) {
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		} else if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1) {
			return 1;
		}
	}
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	printf("%lld\n", now() - t0);
	return 0;
}
