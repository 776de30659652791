/* Trace collector target: the child calls in_child() 10 times and then runs
   t-calls (fib 10, 7 leaves); the parent calls in_parent() 5 times. */
#include <stdio.h>
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
	pid_t pid;
	int i, st;

	snprintf(path, sizeof(path), "%s", argv[0]);
	strcpy(strrchr(path, '/') + 1, "t-calls");
	(void)argc;
	pid = fork();
	if (pid == 0) {
		for (i = 0; i < 10; i++)
			in_child();
		execl(path, path, "10", "7", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 5; i++)
		in_parent();
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
