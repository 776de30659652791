/*
 * cf-fork.c - a parent that calls, forks a child that calls and then execs
 * this program again with "child" (which calls in its new image), and waits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) void before(void)
{
	sink++;
}

__attribute__((noinline)) void in_child(void)
{
	sink += 2;
}

__attribute__((noinline)) void after_exec(void)
{
	sink += 3;
}

int main(int argc, char **argv)
{
	pid_t pid;
	int st;

	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		after_exec();
		return 0;
	}
	before();
	pid = fork();
	if (pid == 0) {
		in_child();
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	before();
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
