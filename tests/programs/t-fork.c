/* Trace collector target: each child (one, or argv[1] of them) calls
   in_child() 10 times and then runs t-calls (fib 10, 7 leaves); the parent
   calls in_parent() 5 times once every child is started. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
void in_child(void)
{
	__asm__ volatile("");
}
void in_parent(void)
{
	__asm__ volatile("");
}
int main(int argc, char **argv)
{
	char path[4096];
	int i, k, st, n = argc > 1 ? atoi(argv[1]) : 1, bad = 0;

	snprintf(path, sizeof(path), "%s", argv[0]);
	strcpy(strrchr(path, '/') + 1, "t-calls");
	for (k = 0; k < n; k++) {
		if (fork() == 0) {
			for (i = 0; i < 10; i++)
				in_child();
			execl(path, path, "10", "7", (char *)NULL);
			_exit(127);
		}
	}
	for (i = 0; i < 5; i++)
		in_parent();
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	return bad;
}
